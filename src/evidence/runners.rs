//! Case runners: `command`, `file-check` and `playwright`.
//!
//! [`run_all`] runs a round's cases in order, in a disposable tree of the commit under test
//! ([`super::isolation`]). The app under test is started lazily, when a playwright case that can
//! run is reached — afresh for every such case with `app.isolation: case`, once per round with
//! `round` — and stopped with its process group before the next case (`case`) or before
//! `run_all` returns, whatever happened in between, so that the evidence directory is complete
//! and no longer written to when the manifest is built.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::CaseResult;
use super::app::{self, AppPlan, RunningApp};
use super::browser::{self, DriverOutcome, Harness};
use super::isolation::RoundTree;
use super::steps::{self, StepsFile};
use crate::config::{AppConfig, Config, Isolation};
use crate::process::paths::resolve_inside;
use crate::process::tree::GroupStamp;
use crate::process::{self, env};
use crate::secrets::Redactor;
use crate::spec::cases::{Case, Method};
use crate::types::kinds::Verdict;

/// Where a runner works.
#[derive(Debug, Clone, Copy)]
pub struct RunDirs<'a> {
    /// The checkout given to [`run_all`] (whose `HEAD` the round's tree holds); inside, the
    /// round's tree, where the cases run.
    pub repo: &'a Path,
    /// `.specs/<feature>` (absolute).
    pub feature_dir: &'a Path,
    /// `evidence/<round>` (absolute).
    pub round_dir: &'a Path,
}

/// Records the app's process group (`Some`, before the app may serve) and its end (`None`), so
/// that a killed orchestrator's app can be found and stopped later (the caller saves the state).
pub type AppRecorder<'r> = &'r mut dyn FnMut(Option<GroupStamp>) -> Result<(), String>;

/// The browser side of a round: the harness, the app, and why either is unusable.
struct BrowserSession<'r> {
    harness: Option<Result<Harness, String>>,
    app: Option<Result<RunningApp, (String, String)>>,
    record: AppRecorder<'r>,
}

/// Runs every case of a round; the app (if any was started) is stopped before this returns.
/// `on_result` sees each result as soon as it is known (progress output); `on_app` records the
/// app's process group while it runs (see [`AppRecorder`]).
///
/// The cases run in a disposable tree of the checkout's `HEAD` ([`RoundTree`]), never in the
/// checkout itself: what the app and the cases write is gone with the tree. With
/// `app.isolation: case` (the default) every case starts from the committed state, with its own
/// `{case_dir}`, and a browser case gets an app started for it alone; with `round` the app and
/// the tree's files last the whole round. Evidence is written to `dirs.round_dir`, in the
/// checkout.
///
/// The checkout and the tree are lent to the agents' identity for the round
/// ([`process::identity::lend_for`]): test commands, the app and the browser driver (which
/// writes the screenshots into the round's evidence directory) run as that uid when the
/// orchestrator is root, and must be able to write where they work whoever calls this.
pub fn run_all(
    dirs: RunDirs,
    cases: &[Case],
    config: &Config,
    steps_file: Result<Option<&StepsFile>, String>,
    redactor: &Redactor,
    mut on_result: impl FnMut(&CaseResult),
    on_app: AppRecorder,
) -> Vec<CaseResult> {
    let _loan = process::identity::lend_for(dirs.repo);
    let app_config = config.app.as_ref();
    let tree = match RoundTree::create(dirs.repo, &AppConfig::dependencies_of(app_config)) {
        Ok(tree) => tree,
        Err(e) => {
            let detail = "the round's tree of the commit under test could not be made";
            return cases
                .iter()
                .map(|case| {
                    let r = blocked(case, detail, &e.to_string(), redactor);
                    on_result(&r);
                    r
                })
                .collect();
        }
    };
    let isolation = AppConfig::isolation_of(app_config);
    let inner = RunDirs {
        repo: tree.path(),
        ..dirs
    };
    let mut session = BrowserSession {
        harness: None,
        app: None,
        record: on_app,
    };
    let mut out = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        let r = match prepare(&tree, isolation, index, case, config, redactor) {
            Err(blocked) => *blocked,
            Ok(scratch) => match case.method() {
                Some(Method::Playwright) if case.missing_fields().is_empty() => run_playwright(
                    inner,
                    case,
                    config,
                    steps_file.as_ref().map(|f| *f),
                    redactor,
                    &mut session,
                    &scratch,
                ),
                _ => run_case(inner, case, config, redactor, &scratch),
            },
        };
        if isolation == Isolation::Case {
            stop_app(&mut session);
        }
        on_result(&r);
        out.push(r);
    }
    stop_app(&mut session);
    out
}

/// Stops the session's app, if one runs, and records that it is gone.
fn stop_app(session: &mut BrowserSession<'_>) {
    if let Some(Ok(mut running)) = session.app.take() {
        running.stop();
        // The group is gone: nothing for a later command to stop. A failed save leaves the old
        // stamp, which no longer matches any group and is cleared by the next command.
        let _ = (session.record)(None);
    }
    // An app that could not start is tried again by the next case that needs one.
    session.app = None;
}

/// The environments a case runs with: the command's (and the reset command's) and the app's.
struct Scratch {
    /// Scrubbed environment plus `app.env`, `{case_dir}` and `{round_dir}` replaced.
    env: BTreeMap<String, String>,
    /// The app's: the same, but `{case_dir}` is the round's in `round` mode (one app serves
    /// every case); `{port}` is replaced when the app starts.
    app_env: BTreeMap<String, String>,
}

/// Before a case: the tree back to the commit (`case` mode, from the second case on), its
/// `{case_dir}`, its environment, and `app.reset` (before every case in `case` mode, before
/// the first in `round` mode). A step that fails blocks the case (`Err`).
fn prepare(
    tree: &RoundTree,
    isolation: Isolation,
    index: usize,
    case: &Case,
    config: &Config,
    redactor: &Redactor,
) -> Result<Scratch, Box<CaseResult>> {
    let blocked = |detail: &str, notes: String| Box::new(blocked(case, detail, &notes, redactor));
    if isolation == Isolation::Case && index > 0 {
        tree.reset()
            .map_err(|e| blocked("the round's tree could not be reset", e.to_string()))?;
    }
    let case_dir = tree.case_dir(&case.id).map_err(|e| {
        blocked(
            "the case's scratch directory could not be made",
            e.to_string(),
        )
    })?;
    let round_dir = tree.round_dir();
    let vars = config.app.as_ref().map(|a| &a.env);
    let fill = |case_dir: &Path| {
        let mut env = env::base(std::env::vars());
        for (k, v) in vars.into_iter().flatten() {
            let v = v
                .replace(CASE_DIR, &case_dir.to_string_lossy())
                .replace(ROUND_DIR, &round_dir.to_string_lossy());
            env.insert(k.clone(), v);
        }
        env
    };
    let scratch = Scratch {
        env: fill(&case_dir),
        app_env: match isolation {
            Isolation::Case => fill(&case_dir),
            Isolation::Round => fill(round_dir),
        },
    };
    let reset = config.app.as_ref().and_then(|a| a.reset.as_deref());
    if let Some(command) = reset
        && (isolation == Isolation::Case || index == 0)
    {
        let out = process::run(
            Path::new("/bin/sh"),
            &["-c".to_string(), command.to_string()],
            tree.path(),
            &scratch.env,
            b"",
            Duration::from_secs(RESET_TIMEOUT_S),
        )
        .map_err(|e| blocked("app.reset could not be started", e.to_string()))?;
        if out.timed_out || out.code() != Some(0) {
            return Err(blocked(
                &format!("app.reset failed ({})", out.ended()),
                format!("$ {command}\n{}{}", out.stdout, out.stderr),
            ));
        }
    }
    Ok(scratch)
}

/// The placeholder in `app.env` for the case's own empty directory.
pub const CASE_DIR: &str = "{case_dir}";
/// The placeholder in `app.env` for the round's empty directory.
pub const ROUND_DIR: &str = "{round_dir}";
/// How long `app.reset` may take.
const RESET_TIMEOUT_S: u64 = 300;

/// A BLOCKED result of `case` saying why, with the redacted `notes`.
fn blocked(case: &Case, detail: &str, notes: &str, redactor: &Redactor) -> CaseResult {
    CaseResult {
        detail: detail.to_string(),
        notes: Some(redactor.redact(notes)),
        ..blank(case)
    }
}

fn blank(case: &Case) -> CaseResult {
    CaseResult {
        id: case.id.clone(),
        requirement: case.requirement(),
        method: case.method(),
        verdict: Verdict::Blocked,
        evidence: Vec::new(),
        detail: String::new(),
        notes: None,
        steps: Vec::new(),
        console: Vec::new(),
        reconversion: None,
    }
}

/// Runs one `command` or `file-check` case in the round's tree (`dirs.repo`; a playwright case
/// given here is BLOCKED: browser cases need the round's app and harness, see [`run_all`]).
fn run_case(
    dirs: RunDirs,
    case: &Case,
    config: &Config,
    redactor: &Redactor,
    scratch: &Scratch,
) -> CaseResult {
    let mut result = blank(case);
    let missing = case.missing_fields();
    if !missing.is_empty() {
        result.detail = format!("the case lacks {}", missing.join(", "));
        return result;
    }
    match case.method() {
        None => {
            result.detail = format!(
                "`Verify: {}` is not a method (use playwright, command or file-check)",
                case.verify.as_deref().unwrap_or("")
            );
        }
        Some(Method::Playwright) => {
            let configured = config
                .app
                .as_ref()
                .is_some_and(|a| a.start.is_some() && a.url.is_some());
            result.detail = if configured {
                "browser cases run through run_all".into()
            } else {
                "app.start and app.url are not configured in .specs/pipeline.yml".into()
            };
        }
        Some(Method::Command) => run_command(dirs, case, redactor, &scratch.env, &mut result),
        Some(Method::FileCheck) => run_file_check(dirs, case, redactor, &mut result),
    }
    result
}

/// Runs one browser case: its structured steps against the app, in the shared harness. The
/// harness is located and the app started once per round (kept in `session`).
fn run_playwright(
    dirs: RunDirs,
    case: &Case,
    config: &Config,
    steps_file: Result<Option<&StepsFile>, &String>,
    redactor: &Redactor,
    session: &mut BrowserSession<'_>,
    scratch: &Scratch,
) -> CaseResult {
    let mut result = blank(case);
    let Some(entry) = case_steps(case, steps_file, &mut result) else {
        return result;
    };
    let Some(harness) = session_harness(session, config, &mut result) else {
        return result;
    };
    let Some(running) = session_app(session, dirs, config, redactor, scratch, &mut result) else {
        return result;
    };
    let log_rel = evidence_rel(dirs, app::STARTUP_LOG);
    let step_timeout = Duration::from_secs(config.evaluate.step_timeout_s);
    // A re-converted version's files are named apart (`T-A05.v2-…`), so the evidence of the
    // version it replaced in the same round stays as it was.
    let version = steps_file
        .ok()
        .flatten()
        .map_or(1, |f| f.version_of(&case.id));
    let stem = if version > 1 {
        format!("{}.v{version}", case.id)
    } else {
        case.id.clone()
    };
    let outcome = browser::run_steps(
        &harness,
        &stem,
        &entry.steps,
        &running.plan.url,
        dirs.round_dir,
        step_timeout,
        redactor,
    );
    let report = match outcome {
        DriverOutcome::Blocked(reason) => {
            result.detail = "the browser could not run the steps".into();
            result.notes = Some(reason);
            return result;
        }
        DriverOutcome::Report(r) => r,
    };
    for shot in &report.screenshots {
        if dirs.round_dir.join(shot).is_file() {
            result.evidence.push(evidence_rel(dirs, shot));
        }
    }
    result.steps = report.steps.clone();
    result.console = report.console.clone();
    let log = step_log(case, &running.plan.url, &report, &harness);
    if !write_evidence(
        dirs,
        &format!("{stem}.steps.log"),
        &redactor.redact(&log),
        &mut result,
    ) {
        return result;
    }
    result.evidence.push(log_rel);
    judge_steps(&report, &mut result);
    result
}

/// The case's structured steps, fresh against test.md; otherwise `result` says why not.
fn case_steps<'f>(
    case: &Case,
    steps_file: Result<Option<&'f StepsFile>, &String>,
    result: &mut CaseResult,
) -> Option<&'f steps::CaseSteps> {
    let file = match steps_file {
        Ok(f) => f,
        Err(e) => {
            result.detail = format!("{} {e}", crate::types::STEPS_FILE);
            return None;
        }
    };
    if let Some(problem) = steps::needs_conversion(file, case) {
        result.detail = format!(
            "{problem}; the e2e_runner converts the prose in spec_generate, so re-run the spec phases"
        );
        return None;
    }
    // A case the converter could not express is never run on what was left of it: it would
    // pass without checking the part that matters.
    if let Some(problem) = steps::staleness(file, case) {
        result.detail = problem;
        return None;
    }
    let Some(entry) = file.and_then(|f| f.cases.get(&case.id)) else {
        result.detail = format!("{} has no structured steps", case.id);
        return None;
    };
    Some(entry)
}

/// The browser harness, located once per round; otherwise `result` says why not.
fn session_harness(
    session: &mut BrowserSession<'_>,
    config: &Config,
    result: &mut CaseResult,
) -> Option<Harness> {
    let harness = session
        .harness
        .get_or_insert_with(|| {
            browser::locate(config.evaluate.browser.as_deref()).map_err(|e| e.to_string())
        })
        .clone();
    match harness {
        Ok(h) => Some(h),
        Err(e) => {
            result.detail = "the browser harness is not available".into();
            result.notes = Some(e);
            None
        }
    }
}

/// The app, started once per round; otherwise `result` says why not, with its startup log.
fn session_app<'s>(
    session: &'s mut BrowserSession<'_>,
    dirs: RunDirs,
    config: &Config,
    redactor: &Redactor,
    scratch: &Scratch,
    result: &mut CaseResult,
) -> Option<&'s RunningApp> {
    let app = session.app.get_or_insert_with(|| {
        let plan =
            AppPlan::from_config(config.app.as_ref()).map_err(|e| (e.summary(), e.to_string()))?;
        let port = plan.port.to_string();
        let app_env: BTreeMap<String, String> = scratch
            .app_env
            .iter()
            .map(|(k, v)| (k.clone(), v.replace(app::PORT_PLACEHOLDER, &port)))
            .collect();
        crate::events::emit(crate::events::Event::AppStarting {
            command: plan.start.clone(),
            url: plan.url.clone(),
        });
        let record = &mut *session.record;
        app::start(
            plan,
            dirs.repo,
            &dirs.round_dir.join(app::STARTUP_LOG),
            app_env,
            redactor,
            &mut |stamp| record(Some(stamp)),
        )
        .map_err(|e| (e.summary(), e.to_string()))
    });
    let log_rel = evidence_rel(dirs, app::STARTUP_LOG);
    match app {
        Ok(a) => Some(a),
        Err((summary, full)) => {
            result.detail = summary.clone();
            result.notes = Some(redactor.redact(full));
            if dirs.round_dir.join(app::STARTUP_LOG).is_file() {
                result.evidence.push(log_rel);
            }
            None
        }
    }
}

/// The verdict of a driver report: a failing step (with the browser console), a failure
/// without a step, no screenshot, or every step held.
fn judge_steps(report: &browser::DriverReport, result: &mut CaseResult) {
    let Some(step) = report.steps.iter().find(|s| !s.ok) else {
        (result.verdict, result.detail) = if !report.ok {
            let detail = "the driver reported a failure without a failing step";
            (Verdict::Fail, detail.into())
        } else if report.screenshots.is_empty() {
            let detail = "every step held but no screenshot was saved";
            (Verdict::Fail, detail.into())
        } else {
            let (steps, shots) = (report.steps.len(), report.screenshots.len());
            let detail = format!("{steps} steps held in Chromium, {shots} screenshot(s)");
            (Verdict::Pass, detail)
        };
        return;
    };
    result.verdict = Verdict::Fail;
    // The detail stays one stable line (it is the finding's gist, hence its fingerprint); what
    // the driver learnt about the selector goes into the notes, which become the finding's
    // argument.
    result.detail = format!(
        "step {} ({} {}) failed",
        step.index, step.action, step.target
    );
    let mut notes = String::new();
    if step.no_match {
        notes.push_str("its selector matches no element of the built page\n");
    }
    notes.push_str(step.error.as_deref().unwrap_or_default());
    if !report.console.is_empty() {
        notes.push_str("\nbrowser console:\n");
        notes.push_str(&report.console.join("\n"));
    }
    result.notes = Some(notes);
}

fn step_log(case: &Case, url: &str, report: &browser::DriverReport, harness: &Harness) -> String {
    use std::fmt::Write as _;
    let mut s = format!(
        "case: {}\napp: {url}\nbrowser: {} ({})\n",
        case.id,
        report.browser_version.as_deref().unwrap_or("?"),
        harness
            .browser
            .as_ref()
            .map(|b| b.display().to_string())
            .unwrap_or_else(|| crate::types::BUNDLED_BROWSER.into())
    );
    if let Some(run_id) = &report.run_id {
        let _ = writeln!(s, "run_id: {run_id}");
    }
    for st in &report.steps {
        let _ = writeln!(
            s,
            "{:>2}. {} {} {} ({} ms){}{}",
            st.index,
            if st.ok { "ok  " } else { "FAIL" },
            st.action,
            st.target,
            st.ms,
            st.screenshot
                .as_deref()
                .map(|f| format!(" -> {f}"))
                .unwrap_or_default(),
            st.error
                .as_deref()
                .map(|e| format!("\n      {e}"))
                .unwrap_or_default()
        );
        for d in &st.dialogs {
            let _ = writeln!(
                s,
                "      dialog: {} {:?} {}{}{}",
                d.kind,
                d.message,
                d.handled,
                d.prompt_text
                    .as_deref()
                    .map(|t| format!(" with {t:?}"))
                    .unwrap_or_default(),
                if d.expected { "" } else { " (unexpected)" }
            );
        }
    }
    let sent: Vec<String> = report
        .requests
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| {
            format!(
                "  step {}: {} {} -> {}",
                r.step,
                r.method,
                r.url,
                r.status.map_or("no answer".into(), |c| c.to_string())
            )
        })
        .collect();
    if !sent.is_empty() {
        let _ = writeln!(s, "requests other than GET:\n{}", sent.join("\n"));
    }
    let _ = writeln!(s, "screenshots: {}", report.screenshots.join(", "));
    if !report.console.is_empty() {
        let _ = writeln!(s, "console:\n{}", report.console.join("\n"));
    }
    s
}

fn evidence_rel(dirs: RunDirs, name: &str) -> String {
    dirs.round_dir
        .join(name)
        .strip_prefix(dirs.feature_dir)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| name.to_string())
}

fn write_evidence(dirs: RunDirs, name: &str, text: &str, result: &mut CaseResult) -> bool {
    let path = dirs.round_dir.join(name);
    // A test command of an earlier case may have planted a link or FIFO at this name: the write
    // refuses it (the case is blocked) instead of writing through it or hanging on it.
    if let Err(e) = crate::fsx::write_atomic(&path, text.as_bytes()) {
        result.verdict = Verdict::Blocked;
        result.detail = format!("could not write evidence: {e}");
        return false;
    }
    result.evidence.push(evidence_rel(dirs, name));
    true
}

fn run_command(
    dirs: RunDirs,
    case: &Case,
    redactor: &Redactor,
    shell_env: &BTreeMap<String, String>,
    result: &mut CaseResult,
) {
    let command = case.command.clone().unwrap_or_default();
    let expected: i32 = match case.exit.as_deref().map(str::trim) {
        None => 0,
        Some(s) => match s.parse() {
            Ok(n) => n,
            Err(_) => {
                result.detail = format!("`Exit: {s}` is not a number");
                return;
            }
        },
    };
    let timeout = case
        .timeout
        .as_deref()
        .and_then(|t| t.trim().trim_end_matches('s').parse::<u64>().ok())
        .unwrap_or(120);
    let out = process::run(
        Path::new("/bin/sh"),
        &["-c".to_string(), command.clone()],
        dirs.repo,
        shell_env,
        b"",
        Duration::from_secs(timeout),
    );
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            result.detail = format!("could not start /bin/sh: {e}");
            return;
        }
    };
    let code = out.code();
    let log = redactor.redact(&format!(
        "$ {command}\n# exit: {}\n# timed out: {}\n--- stdout ---\n{}\n--- stderr ---\n{}\n",
        code.map(|c| c.to_string())
            .unwrap_or_else(|| "killed".into()),
        out.timed_out,
        out.stdout,
        out.stderr
    ));
    if !write_evidence(dirs, &format!("{}.log", case.id), &log, result) {
        return;
    }
    let combined = format!("{}{}", out.stdout, out.stderr);
    let marker_ok = case
        .output_contains
        .as_deref()
        .is_none_or(|m| combined.contains(m));
    (result.verdict, result.detail) = if out.timed_out {
        (Verdict::Fail, format!("timed out after {timeout} s"))
    } else if code != Some(expected) {
        (
            Verdict::Fail,
            format!("{}, expected {expected}", out.ended()),
        )
    } else if !marker_ok {
        let marker = case.output_contains.as_deref().unwrap_or_default();
        (Verdict::Fail, format!("output lacks `{marker}`"))
    } else {
        (Verdict::Pass, format!("exit {expected}"))
    };
}

fn run_file_check(dirs: RunDirs, case: &Case, redactor: &Redactor, result: &mut CaseResult) {
    let rel = case.file.clone().unwrap_or_default();
    let marker = case.contains.clone().unwrap_or_default();
    let text = match resolve_inside(dirs.repo, &rel) {
        Err(e) => Err(format!("refused: {e}")),
        Ok(path) => crate::util::read_to_string_max(&path, crate::fsx::Limit::Evidence)
            .map_err(|e| format!("`{rel}` cannot be read: {e}")),
    };
    let text = match text {
        Ok(t) => t,
        Err(detail) => {
            (result.verdict, result.detail) = (Verdict::Fail, detail);
            return;
        }
    };
    let hits: Vec<String> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(&marker))
        .map(|(i, l)| format!("{}:{}: {}", rel, i + 1, l))
        .collect();
    let excerpt = redactor.redact(&format!(
        "file: {rel}\nmarker: {marker}\nmatches: {}\n{}\n",
        hits.len(),
        hits.join("\n")
    ));
    if !write_evidence(dirs, &format!("{}.txt", case.id), &excerpt, result) {
        return;
    }
    (result.verdict, result.detail) = if hits.is_empty() && !text.contains(&marker) {
        (
            Verdict::Fail,
            format!("`{rel}` does not contain `{marker}`"),
        )
    } else {
        (Verdict::Pass, format!("`{rel}` contains the marker"))
    };
}
