//! The playwright runner: hands a case's structured steps to the Node driver shipped in
//! `driver/` (Playwright driving a real Chromium) and turns its per-step report into a verdict
//! with the screenshots and a step log as evidence.
//!
//! What is found where, so the same binary works from a checkout, in the Docker image and in
//! tests:
//! - the driver directory: `SPEC_ORCHESTRATE_DRIVER`, else `driver/` beside the executable or
//!   in `../share/spec-orchestrate/`, else the `driver/` of the source tree this was built from;
//! - the browser: `SPEC_ORCHESTRATE_BROWSER`, else `evaluate.browser`, else `/usr/bin/chromium`
//!   when it exists, else Playwright's own browser (`bundled`), as in the Docker image;
//! - `node` on PATH (`SPEC_ORCHESTRATE_NODE` overrides).
//!
//! A driver that is not installed, a browser that is missing or does not start, make the case
//! BLOCKED (configuration, not the implementation, is at fault); a step that fails makes it FAIL.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::steps::Step;
use crate::secrets::Redactor;
use crate::types::BUNDLED_BROWSER;

/// Default browser path on Debian-based machines.
pub const DEFAULT_BROWSER: &str = "/usr/bin/chromium";

/// Where the driver and the browser are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Harness {
    /// `node` executable.
    pub node: PathBuf,
    /// Directory holding `run.js` and `node_modules/playwright-core`.
    pub driver_dir: PathBuf,
    /// Browser executable; `None` = Playwright's own.
    pub browser: Option<PathBuf>,
}

/// Why the browser harness cannot run here; such cases are BLOCKED.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HarnessError(pub String);

fn driver_candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(d) = std::env::var("SPEC_ORCHESTRATE_DRIVER") {
        out.push(PathBuf::from(d));
        return out;
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        out.push(dir.join("driver"));
        out.push(dir.join("../share/spec-orchestrate/driver"));
    }
    out.push(PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/driver"
    )));
    out
}

/// The driver directory (the one holding `run.js`), whether or not its packages are installed.
pub fn driver_dir() -> Option<PathBuf> {
    driver_candidates()
        .into_iter()
        .find(|d| d.join("run.js").is_file())
}

/// Finds the driver, node and the browser; `configured` is `evaluate.browser`.
pub fn locate(configured: Option<&str>) -> Result<Harness, HarnessError> {
    let candidates = driver_candidates();
    let driver_dir = candidates
        .iter()
        .find(|d| d.join("run.js").is_file())
        .cloned()
        .ok_or_else(|| {
            HarnessError(format!(
                "the browser driver (run.js) was not found in {}; set SPEC_ORCHESTRATE_DRIVER to the driver/ directory of spec-orchestrate",
                candidates
                    .iter()
                    .map(|c| c.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    if !driver_dir
        .join("node_modules/playwright-core/package.json")
        .is_file()
    {
        return Err(HarnessError(format!(
            "playwright-core is not installed in {0}; run `npm ci --prefix {0}` (the versions are pinned by its package-lock.json)",
            driver_dir.display()
        )));
    }
    let node_name = std::env::var("SPEC_ORCHESTRATE_NODE").unwrap_or_else(|_| "node".into());
    let node = crate::process::find_confined_executable(&node_name, Path::new("."))
        .ok_or_else(|| {
            HarnessError(format!(
                "`{node_name}` (Node.js 20 or later) is not on PATH; the browser driver needs it (apt-get install nodejs)"
            ))
        })?;
    let choice = std::env::var("SPEC_ORCHESTRATE_BROWSER")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .or_else(|| configured.map(str::to_string));
    let browser = match choice.as_deref().map(str::trim) {
        Some(BUNDLED_BROWSER) => None,
        Some(path) => {
            let p = PathBuf::from(path);
            if !p.is_file() {
                return Err(HarnessError(format!(
                    "no browser at {path} (from SPEC_ORCHESTRATE_BROWSER or evaluate.browser): install Chromium there (`apt-get install chromium`) or point the setting at a Chromium executable, or use `{BUNDLED_BROWSER}` for Playwright's own"
                )));
            }
            Some(p)
        }
        None if Path::new(DEFAULT_BROWSER).is_file() => Some(PathBuf::from(DEFAULT_BROWSER)),
        None => None,
    };
    Ok(Harness {
        node,
        driver_dir,
        browser,
    })
}

/// What the driver reports about one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepReport {
    /// 1-based step number.
    pub index: u32,
    /// Action name.
    pub action: String,
    /// Selector, URL, key or text the step acted on.
    #[serde(default)]
    pub target: String,
    /// The step held.
    pub ok: bool,
    /// Milliseconds it took.
    #[serde(default)]
    pub ms: u64,
    /// Why it failed.
    pub error: Option<String>,
    /// Screenshot it took (file name in the round directory).
    pub screenshot: Option<String>,
    /// The step failed and its selector matched no element at that moment (the case may have
    /// been converted against a design the built app does not follow).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_match: bool,
    /// With `no_match`: what the page held at that moment (its accessibility tree, roles and
    /// accessible names, cut by the driver), so that the case can be converted again against
    /// the page that was built rather than the design.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// The dialogs that opened during the step, and how each was answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dialogs: Vec<DialogRecord>,
}

/// A dialog the page opened, as the driver answered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DialogRecord {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its message (cut to 300 characters).
    #[serde(default)]
    pub message: String,
    /// `accepted` or `dismissed`.
    pub handled: String,
    /// An accept or dismiss step had armed the answer (otherwise it was dismissed and the step
    /// failed).
    #[serde(default)]
    pub expected: bool,
    /// Text typed into a `prompt()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_text: Option<String>,
}

/// A request the page sent, as the driver saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Step during which it was sent.
    pub step: u32,
    /// HTTP method.
    pub method: String,
    /// Full URL (cut to 500 characters).
    pub url: String,
    /// Response status, when one came.
    pub status: Option<u16>,
}

/// The driver's whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriverReport {
    /// Every step held.
    pub ok: bool,
    /// The run could not start (bad request, browser did not launch).
    pub setup_error: Option<String>,
    /// Browser version, when it started.
    pub browser_version: Option<String>,
    /// Per-step results, up to the first failure.
    #[serde(default)]
    pub steps: Vec<StepReport>,
    /// Screenshots written, file names in the round directory.
    #[serde(default)]
    pub screenshots: Vec<String>,
    /// Console errors and page errors.
    #[serde(default)]
    pub console: Vec<String>,
    /// The value `{{run_id}}` stood for in this run.
    pub run_id: Option<String>,
    /// Requests the page sent (up to 2000).
    #[serde(default)]
    pub requests: Vec<RequestRecord>,
}

/// How the driver run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum DriverOutcome {
    /// The driver ran and reported (steps may have failed).
    Report(DriverReport),
    /// It could not run or report: BLOCKED with this reason.
    Blocked(String),
}

/// Runs `steps` of `case_id` against `base_url`; screenshots land in `round_dir`. The driver runs
/// as the agents' identity when the orchestrator is root, so `round_dir` must lie in a checkout
/// lent to it: only [`super::runners::run_all`], which lends it, calls this.
pub(crate) fn run_steps(
    harness: &Harness,
    case_id: &str,
    steps: &[Step],
    base_url: &str,
    round_dir: &Path,
    step_timeout: Duration,
    redactor: &Redactor,
) -> DriverOutcome {
    if let Err(e) = std::fs::create_dir_all(round_dir) {
        return DriverOutcome::Blocked(format!("{}: {e}", round_dir.display()));
    }
    let request = serde_json::json!({
        "case_id": case_id,
        "base_url": base_url,
        "out_dir": round_dir,
        "browser": harness.browser,
        "step_timeout_ms": step_timeout.as_millis() as u64,
        "steps": steps,
    });
    let mut env: BTreeMap<String, String> = crate::process::env::base(std::env::vars());
    for (k, v) in std::env::vars() {
        if k.starts_with("PLAYWRIGHT_") {
            env.insert(k, v);
        }
    }
    // Launch (up to 60 s) plus every step's timeout (its own or the default) plus slack for
    // screenshots and the final one.
    let budget = steps
        .iter()
        .map(|s| {
            s.timeout_ms
                .map_or(step_timeout, Duration::from_millis)
                .max(step_timeout)
        })
        .fold(
            Duration::from_secs(90).saturating_add(step_timeout),
            Duration::saturating_add,
        );
    let out = crate::process::run(
        &harness.node,
        &[harness.driver_dir.join("run.js").display().to_string()],
        &harness.driver_dir,
        &env,
        request.to_string().as_bytes(),
        budget,
    );
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            return DriverOutcome::Blocked(format!(
                "could not start {}: {e}",
                harness.node.display()
            ));
        }
    };
    if out.timed_out {
        return DriverOutcome::Blocked(format!(
            "the browser driver did not finish within {} s and was killed with its browser",
            budget.as_secs()
        ));
    }
    let line = out
        .stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .unwrap_or_default();
    match serde_json::from_str::<DriverReport>(line) {
        Ok(mut report) => {
            report.setup_error = report.setup_error.map(|e| redactor.redact(&e));
            for s in &mut report.steps {
                s.error = s.error.as_ref().map(|e| redactor.redact(e));
                s.target = redactor.redact(&s.target);
                s.page = s.page.as_ref().map(|p| redactor.redact(p));
                for d in &mut s.dialogs {
                    d.message = redactor.redact(&d.message);
                }
            }
            for r in &mut report.requests {
                r.url = redactor.redact(&r.url);
            }
            report.console = report.console.iter().map(|c| redactor.redact(c)).collect();
            match &report.setup_error {
                Some(e) => DriverOutcome::Blocked(e.clone()),
                None => DriverOutcome::Report(report),
            }
        }
        Err(_) => DriverOutcome::Blocked(format!(
            "the browser driver ended ({}) without a report: {}",
            out.ended(),
            redactor.redact(&crate::util::tail(&out.stderr, 600))
        )),
    }
}
