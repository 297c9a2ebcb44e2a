//! Case runners: `command` and `file-check` run here; `playwright` arrives with the browser
//! harness and is BLOCKED until then.

use std::path::Path;
use std::time::Duration;

use super::paths::resolve_inside;
use super::{CaseResult, Verdict};
use crate::agents::{env, process};
use crate::config::{AgentConfig, AgentKind, Config};
use crate::secrets::Redactor;
use crate::spec::cases::{Case, Method};

/// Where a runner works.
#[derive(Debug, Clone, Copy)]
pub struct RunDirs<'a> {
    /// Repository root.
    pub repo: &'a Path,
    /// `.specs/<feature>` (absolute).
    pub feature_dir: &'a Path,
    /// `evidence/<round>` (absolute).
    pub round_dir: &'a Path,
}

/// Runs one case.
pub fn run_case(dirs: RunDirs, case: &Case, config: &Config, redactor: &Redactor) -> CaseResult {
    let mut result = CaseResult {
        id: case.id.clone(),
        requirement: case.requirement(),
        method: case.method(),
        verdict: Verdict::Blocked,
        evidence: Vec::new(),
        detail: String::new(),
    };
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
                "the browser harness is not available in this version".into()
            } else {
                "app.start and app.url are not configured in .specs/pipeline.yml".into()
            };
        }
        Some(Method::Command) => run_command(dirs, case, redactor, &mut result),
        Some(Method::FileCheck) => run_file_check(dirs, case, redactor, &mut result),
    }
    result
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
    if std::fs::create_dir_all(dirs.round_dir).is_err() || std::fs::write(&path, text).is_err() {
        result.verdict = Verdict::Blocked;
        result.detail = format!("could not write evidence {}", path.display());
        return false;
    }
    result.evidence.push(evidence_rel(dirs, name));
    true
}

fn run_command(dirs: RunDirs, case: &Case, redactor: &Redactor, result: &mut CaseResult) {
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
    let shell_env = env::scrubbed(&AgentConfig::of_kind(AgentKind::Command), std::env::vars());
    let out = process::run(
        Path::new("/bin/sh"),
        &["-c".to_string(), command.clone()],
        dirs.repo,
        &shell_env,
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
    if out.timed_out {
        result.verdict = Verdict::Fail;
        result.detail = format!("timed out after {timeout} s");
    } else if code != Some(expected) {
        result.verdict = Verdict::Fail;
        result.detail = format!("exit {code:?}, expected {expected}");
    } else if !marker_ok {
        result.verdict = Verdict::Fail;
        result.detail = format!(
            "output lacks `{}`",
            case.output_contains.as_deref().unwrap_or_default()
        );
    } else {
        result.verdict = Verdict::Pass;
        result.detail = format!("exit {expected}");
    }
}

fn run_file_check(dirs: RunDirs, case: &Case, redactor: &Redactor, result: &mut CaseResult) {
    let rel = case.file.clone().unwrap_or_default();
    let marker = case.contains.clone().unwrap_or_default();
    let path = match resolve_inside(dirs.repo, &rel) {
        Ok(p) => p,
        Err(e) => {
            result.verdict = Verdict::Fail;
            result.detail = format!("refused: {e}");
            return;
        }
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            result.verdict = Verdict::Fail;
            result.detail = format!("`{rel}` cannot be read: {e}");
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
    if hits.is_empty() && !text.contains(&marker) {
        result.verdict = Verdict::Fail;
        result.detail = format!("`{rel}` does not contain `{marker}`");
    } else {
        result.verdict = Verdict::Pass;
        result.detail = format!("`{rel}` contains the marker");
    }
}
