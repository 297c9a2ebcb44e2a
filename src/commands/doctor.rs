//! `doctor`: everything a run needs, checked before a run needs it, one line per check.
//!
//! A first run should not find out after ten minutes and two agent calls that a key, a CLI or a
//! repository setting is missing. Each check reads and never writes (no label is created, no
//! setting changed), says `ok`, `warning` (a run can go on, but something is worse than it could
//! be) or `error` (a run would stop), and, unless it is `ok`, what to do. The exit code is 0 when
//! no check is an error.
//!
//! Local checks ([`local`]): git and its version, a clean tree, the configuration (the same
//! validation as `run`), each configured agent (its CLI found and answering `--version`, or its
//! key variable), Node and the browser driver, Chromium, the shape of `app.start`/`app.url`, and
//! the budget. With `--github` ([`github`]): the repository and what the token may do there,
//! the workflow file on the default branch, the labels, the repository's Actions settings
//! ("Allow GitHub Actions to create and approve pull requests", default workflow permissions),
//! and whether the Action's image can be pulled. The Action runs the local checks at the start
//! of a chain ([`action_preflight`]), so a missing key is reported before any agent runs.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Result;

use super::Exit;

pub mod github;
pub mod local;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Level {
    /// Nothing to do.
    Ok,
    /// A run can go on, but something is worse than it could be.
    Warning,
    /// A run would stop (or not start) on this.
    Error,
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked (`git`, `agent claude`, `label spec-orchestrate`, …).
    pub name: String,
    /// How it came out.
    pub status: Level,
    /// What was found.
    pub detail: String,
    /// What to do about it; absent when it is `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    /// A check that passed.
    pub fn ok(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            status: Level::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    /// A check that would stop a run, with what to do about it.
    pub fn error(
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        let fix = Some(fix.into());
        Check {
            status: Level::Error,
            fix,
            ..Check::ok(name, detail)
        }
    }

    /// A check that a run survives, with what to do about it.
    pub fn warning(
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            status: Level::Warning,
            ..Check::error(name, detail, fix)
        }
    }

    /// The check as one line: `error    agent claude: … — fix: …`.
    pub fn line(&self) -> String {
        let word: &str = self.status.into();
        let mut line = format!("{word:<8} {}: {}", self.name, self.detail);
        if let Some(fix) = &self.fix {
            line.push_str(" — fix: ");
            line.push_str(fix);
        }
        // One line per check, whatever a version string or an error message held.
        line.replace(['\n', '\r'], " ")
    }
}

/// Where the checks run: by hand, or in the Action before a chain's first phase. A CLI agent
/// without a key variable is a warning by hand (the CLI's own login may serve) and an error in
/// the Action (a runner has no login).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    /// `spec-orchestrate doctor` on someone's machine.
    Local,
    /// A GitHub Actions job; `provided` names the key variables the job gives the phase
    /// process from its inputs (`anthropic_api_key` → `ANTHROPIC_API_KEY`, …).
    Action {
        /// Variables set for the phase process besides the job's own environment.
        provided: Vec<String>,
    },
}

/// Arguments of `doctor`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DoctorRequest {
    /// Repository (default: the current directory).
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// Configuration file instead of .specs/pipeline.yml.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Print the checks as one JSON document: {"ok": bool, "checks": [{"name", "status", "detail", "fix"}]}.
    #[arg(long)]
    pub json: bool,
    /// Also check what GitHub must allow (reads only; needs GITHUB_TOKEN or GH_TOKEN).
    #[arg(long)]
    pub github: bool,
    /// `owner/name` on GitHub (default: GITHUB_REPOSITORY, else the `origin` remote).
    #[arg(long, requires = "github")]
    pub repository: Option<String>,
}

/// The document `--json` prints.
#[derive(Debug, Serialize)]
pub struct Report {
    /// No check is an error: nothing would stop a run.
    pub ok: bool,
    /// Every check, in the order they ran.
    pub checks: Vec<Check>,
}

/// Whether none of `checks` would stop a run.
pub fn passes(checks: &[Check]) -> bool {
    checks.iter().all(|c| c.status != Level::Error)
}

/// Runs the checks and prints them.
pub fn doctor(req: &DoctorRequest) -> Result<Exit> {
    let dir = match &req.repo {
        Some(d) => d.clone(),
        None => std::env::current_dir().map_err(|e| crate::error::Error::io(".", e))?,
    };
    let (mut checks, config) = local::checks(&dir, req.config.as_deref(), &Setting::Local);
    if req.github {
        checks.extend(github::checks(
            &dir,
            req.repository.as_deref(),
            config.as_ref(),
        ));
    }
    let ok = passes(&checks);
    if req.json {
        let report = Report { ok, checks };
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| crate::error::Error::usage(format!("doctor: {e}")))?;
        crate::output::print_line(&text)?;
    } else {
        for c in &checks {
            crate::output::print_line(&c.line())?;
        }
        crate::output::print_line(&summary(&checks))?;
    }
    Ok(if ok { Exit::Ok } else { Exit::Failed })
}

/// The last line: counts, and whether a run would start.
fn summary(checks: &[Check]) -> String {
    let count = |l: Level| checks.iter().filter(|c| c.status == l).count();
    let (errors, warnings) = (count(Level::Error), count(Level::Warning));
    let verdict = if errors == 0 {
        "nothing would stop a run"
    } else {
        "a run would stop: fix the errors above"
    };
    format!(
        "{} checks: {} ok, {warnings} warning(s), {errors} error(s); {verdict}",
        checks.len(),
        count(Level::Ok)
    )
}

/// The Action's check before a chain's first phase: the local checks as a runner sees them
/// (`config` is the `config` input, if any; `provided` the key variables the job sets for the
/// phase from its inputs). Returns the notice for the status comment when a check would stop
/// the run, so that a missing key is reported before any agent runs.
pub fn action_preflight(
    checkout: &Path,
    config: Option<&Path>,
    provided: &[&str],
) -> Option<String> {
    let setting = Setting::Action {
        provided: provided.iter().map(|s| (*s).to_string()).collect(),
    };
    let (checks, _) = local::checks(checkout, config, &setting);
    let errors: Vec<String> = checks
        .iter()
        .filter(|c| c.status == Level::Error)
        .map(Check::line)
        .collect();
    (!errors.is_empty()).then(|| {
        format!(
            "`spec-orchestrate doctor` found what would stop this run before any agent ran: {}",
            errors.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_is_one_line_with_its_fix_and_the_json_omits_an_absent_fix() {
        let c = Check::error("agent claude", "no `claude`\non PATH", "install it");
        assert_eq!(
            c.line(),
            "error    agent claude: no `claude` on PATH — fix: install it"
        );
        let ok = serde_json::to_value(Check::ok("git", "git version 2.47.3")).unwrap();
        assert_eq!(
            ok,
            serde_json::json!({"name": "git", "status": "ok", "detail": "git version 2.47.3"})
        );
        assert!(passes(&[Check::warning("budget", "none", "set one")]));
        assert!(!passes(&[c]));
    }
}
