//! What the runner tells a Docker action, read once and validated.
//!
//! Inputs arrive as `INPUT_<NAME>` variables (the names in `action.yml` use underscores, so
//! `github_token` is `INPUT_GITHUB_TOKEN`); they are read here as data and never pass through a
//! shell. Everything that locates a service comes from the environment so that the same binary
//! works on github.com, on GitHub Enterprise Server and against a local simulation.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::process;
use crate::secrets::Secret;
use crate::state::Mode;
use crate::types::ids::RunId;

/// The runner sets the GITHUB_* variables itself; a bad value means a workflow overrode one.
const RUNNER_SETS_IT: &str =
    "the runner sets this variable; remove any override of it from the workflow's `env:`";

/// Default `job_budget_minutes`: ten minutes under the example workflow's `timeout-minutes: 60`.
pub const DEFAULT_BUDGET_MINUTES: f64 = 50.0;

/// The largest `job_budget_minutes`: 7 days, the bound of every duration (GitHub ends a job
/// long before); larger would only overflow the deadline arithmetic.
pub const MAX_BUDGET_MINUTES: f64 = (7 * 24 * 60) as f64;

/// The runner's environment, validated.
#[derive(Debug, Clone)]
pub struct ActionEnv {
    /// `GITHUB_EVENT_NAME`.
    pub event_name: String,
    /// `GITHUB_EVENT_PATH`.
    pub event_path: PathBuf,
    /// `GITHUB_REPOSITORY` (`owner/name`).
    pub repository: String,
    /// `GITHUB_RUN_ID`.
    pub run_id: RunId,
    /// `GITHUB_RUN_ATTEMPT`.
    pub run_attempt: u32,
    /// Workflow file to re-dispatch, from `GITHUB_WORKFLOW_REF`.
    pub workflow_file: Option<String>,
    /// Git ref the workflow runs on, from `GITHUB_WORKFLOW_REF`.
    pub workflow_ref: Option<String>,
    /// `GITHUB_API_URL`.
    pub api_url: String,
    /// `GITHUB_GRAPHQL_URL`.
    pub graphql_url: String,
    /// `GITHUB_SERVER_URL`, for links to runs.
    pub server_url: String,
    /// `GITHUB_OUTPUT`.
    pub output: Option<PathBuf>,
    /// `GITHUB_STEP_SUMMARY`.
    pub summary: Option<PathBuf>,
    /// `GITHUB_WORKSPACE` (else the current directory).
    pub workspace: PathBuf,
    /// `INPUT_GITHUB_TOKEN` (else `GITHUB_TOKEN`).
    pub github_token: Option<Secret>,
    /// `ACTIONS_RUNTIME_TOKEN`.
    pub runtime_token: Option<Secret>,
    /// `ACTIONS_RESULTS_URL`.
    pub results_url: Option<String>,
    /// `INPUT_ANTHROPIC_API_KEY`.
    pub anthropic_key: Option<Secret>,
    /// `INPUT_OPENAI_API_KEY`.
    pub openai_key: Option<Secret>,
    /// `INPUT_CONFIG`: configuration file relative to the workspace.
    pub config: Option<String>,
    /// `INPUT_MODE`.
    pub mode: Mode,
    /// `INPUT_JOB_BUDGET_MINUTES`.
    pub job_budget: Duration,
    /// `SPEC_ORCHESTRATE_CHECKPOINT_DIR`: keep checkpoints in a directory instead of artifacts.
    pub checkpoint_dir: Option<PathBuf>,
    /// Which job of the workflow this is: `INPUT_PART`, `INPUT_TASK`, `INPUT_FAN_OUT`.
    pub part: Part,
}

/// Which job of the written workflow runs (docs/action-mode.md, "Waves on runners").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// The chain's job (`part: chain`, the default): one agent phase and the phases around
    /// it. With `fan_out` (the workflow has the matrix legs and the join) a wave of more than
    /// one task is handed to the legs as the job output `wave`.
    Chain {
        /// The workflow runs the legs and the join after this job.
        fan_out: bool,
    },
    /// A matrix leg (`part: leg`): one task of the wave this run handed out.
    Leg(String),
    /// The join (`part: join`): lands the legs' results and continues the chain.
    Join,
}

/// The `part`, `task` and `fan_out` inputs.
fn part_input(part: Option<&str>, task: Option<&str>, fan_out: Option<&str>) -> Result<Part> {
    let fan_out = match fan_out.map(str::trim) {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(Error::usage(format!(
                "input `fan_out` must be true or false, got `{other}`"
            )));
        }
    };
    match part.map(str::trim) {
        None | Some("chain") => Ok(Part::Chain { fan_out }),
        Some("join") => Ok(Part::Join),
        Some("leg") => match task.map(str::trim) {
            Some(t) if !t.is_empty() && t.len() <= 32 && t.chars().all(|c| c.is_ascii_alphanumeric()) => {
                Ok(Part::Leg(t.to_string()))
            }
            other => Err(Error::usage(format!(
                "input `task` must name the leg's task (letters and digits, such as T003), got `{}`",
                other.unwrap_or_default()
            ))
            .with_help("the written workflow passes `task: ${{ matrix.task }}` to each leg")),
        },
        Some(other) => Err(Error::usage(format!(
            "input `part` must be chain, leg or join, got `{other}`"
        ))),
    }
}

/// `(workflow file, ref)` from `owner/repo/.github/workflows/<file>@<ref>`.
pub fn parse_workflow_ref(value: &str) -> Option<(String, String)> {
    let (path, git_ref) = value.rsplit_once('@')?;
    let file = path.split_once(".github/workflows/")?.1;
    (!file.is_empty() && !git_ref.is_empty()).then(|| (file.to_string(), git_ref.to_string()))
}

impl ActionEnv {
    /// From the process environment.
    pub fn from_env() -> Result<ActionEnv> {
        ActionEnv::from_vars(|k| std::env::var(k).ok())
    }

    /// From any variable source (tests pass a map).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<ActionEnv> {
        let var = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let need = |k: &str| {
            var(k).ok_or_else(|| {
                Error::usage(format!(
                    "{k} is not set: `spec-orchestrate action` runs inside GitHub Actions (as the spec-orchestrate action); to try a run locally use `spec-orchestrate run --issue ISSUE.md`"
                ))
            })
        };
        let event_name = need("GITHUB_EVENT_NAME")?;
        let event_path = PathBuf::from(need("GITHUB_EVENT_PATH")?);
        let repository = need("GITHUB_REPOSITORY")?;
        if !repository.contains('/') {
            return Err(Error::usage(format!(
                "GITHUB_REPOSITORY must be owner/name, got `{repository}`"
            ))
            .with_help(RUNNER_SETS_IT));
        }
        let run_id = need("GITHUB_RUN_ID")?
            .trim()
            .parse::<u64>()
            .map(RunId::from)
            .map_err(|_| Error::usage("GITHUB_RUN_ID is not a number").with_help(RUNNER_SETS_IT))?;
        let run_attempt = var("GITHUB_RUN_ATTEMPT")
            .map(|v| v.trim().parse::<u32>())
            .transpose()
            .map_err(|_| {
                Error::usage("GITHUB_RUN_ATTEMPT is not a number").with_help(RUNNER_SETS_IT)
            })?
            .unwrap_or(1);
        let (workflow_file, workflow_ref) = match var("GITHUB_WORKFLOW_REF") {
            Some(v) => {
                let (f, r) = parse_workflow_ref(&v).ok_or_else(|| {
                    Error::usage(format!(
                        "GITHUB_WORKFLOW_REF `{v}` is not owner/repo/.github/workflows/<file>@<ref>"
                    ))
                    .with_help(RUNNER_SETS_IT)
                })?;
                (Some(f), Some(r))
            }
            None => (None, None),
        };
        let api_url = var("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into());
        let graphql_url = var("GITHUB_GRAPHQL_URL")
            .unwrap_or_else(|| crate::forge::github::graphql_url_for(&api_url));
        let server_url = var("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into());
        let workspace = match var("GITHUB_WORKSPACE") {
            Some(w) => PathBuf::from(w),
            None => std::env::current_dir().map_err(|e| Error::io(".", e))?,
        };
        let mode = mode_input(var("INPUT_MODE").as_deref())?;
        let minutes = budget_input(var("INPUT_JOB_BUDGET_MINUTES").as_deref())?;
        Ok(ActionEnv {
            event_name,
            event_path,
            repository,
            run_id,
            run_attempt,
            workflow_file,
            workflow_ref,
            api_url,
            graphql_url,
            server_url,
            output: var("GITHUB_OUTPUT").map(PathBuf::from),
            summary: var("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            workspace,
            github_token: var("INPUT_GITHUB_TOKEN")
                .or_else(|| var("GITHUB_TOKEN"))
                .and_then(Secret::new),
            runtime_token: var("ACTIONS_RUNTIME_TOKEN").and_then(Secret::new),
            results_url: var("ACTIONS_RESULTS_URL"),
            anthropic_key: var("INPUT_ANTHROPIC_API_KEY").and_then(Secret::new),
            openai_key: var("INPUT_OPENAI_API_KEY").and_then(Secret::new),
            config: var("INPUT_CONFIG").map(|c| c.trim().to_string()),
            mode,
            job_budget: Duration::try_from_secs_f64(minutes * 60.0).unwrap_or(process::MAX_WAIT),
            checkpoint_dir: var("SPEC_ORCHESTRATE_CHECKPOINT_DIR").map(PathBuf::from),
            part: part_input(
                var("INPUT_PART").as_deref(),
                var("INPUT_TASK").as_deref(),
                var("INPUT_FAN_OUT").as_deref(),
            )?,
        })
    }

    /// Link to run `run_id`.
    pub fn run_url(&self, run_id: RunId) -> String {
        format!(
            "{}/{}/actions/runs/{run_id}",
            self.server_url.trim_end_matches('/'),
            self.repository
        )
    }

    /// Every secret this job holds, for masking and redaction.
    pub fn secrets(&self) -> Vec<&Secret> {
        [
            &self.github_token,
            &self.runtime_token,
            &self.anthropic_key,
            &self.openai_key,
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// The `mode` input: auto (the default) or manual.
fn mode_input(value: Option<&str>) -> Result<Mode> {
    match value.map(str::trim) {
        None | Some("auto") => Ok(Mode::Auto),
        Some("manual") => Ok(Mode::Manual),
        Some(other) => Err(Error::usage(format!(
            "input `mode` must be auto or manual, got `{other}`"
        ))
        .with_help("set the step's `with: mode:` to auto or manual, or leave it out (auto)")),
    }
}

/// The `job_budget_minutes` input: a positive number of minutes up to seven days.
fn budget_input(value: Option<&str>) -> Result<f64> {
    let Some(v) = value else {
        return Ok(DEFAULT_BUDGET_MINUTES);
    };
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|m| m.is_finite() && *m > 0.0 && *m <= MAX_BUDGET_MINUTES)
        .ok_or_else(|| {
            Error::usage(format!(
                "input `job_budget_minutes` must be a positive number of minutes, at most {MAX_BUDGET_MINUTES} (7 days), got `{v}`"
            ))
            .with_help(format!("set the step's `with: job_budget_minutes:` to a number such as 50, or leave it out ({DEFAULT_BUDGET_MINUTES} minutes)"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(extra: &[(&str, &str)]) -> Result<ActionEnv> {
        let mut m: HashMap<String, String> = [
            ("GITHUB_EVENT_NAME", "issues"),
            ("GITHUB_EVENT_PATH", "/github/workflow/event.json"),
            ("GITHUB_REPOSITORY", "octo-org/octo-repo"),
            ("GITHUB_RUN_ID", "1001"),
            ("GITHUB_WORKSPACE", "/github/workspace"),
            (
                "GITHUB_WORKFLOW_REF",
                "octo-org/octo-repo/.github/workflows/spec-orchestrate.yml@refs/heads/main",
            ),
            ("INPUT_GITHUB_TOKEN", "ghs_x123456"),
            ("INPUT_ANTHROPIC_API_KEY", ""),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (k, v) in extra {
            m.insert(k.to_string(), v.to_string());
        }
        ActionEnv::from_vars(|k| m.get(k).cloned())
    }

    #[test]
    fn reads_the_runner_environment() {
        let e = env(&[
            ("INPUT_JOB_BUDGET_MINUTES", "0.5"),
            ("INPUT_MODE", "manual"),
        ])
        .unwrap();
        assert_eq!(e.run_id, 1001);
        assert_eq!(e.run_attempt, 1);
        assert_eq!(e.workflow_file.as_deref(), Some("spec-orchestrate.yml"));
        assert_eq!(e.workflow_ref.as_deref(), Some("refs/heads/main"));
        assert_eq!(e.job_budget, Duration::from_secs(30));
        assert_eq!(e.mode, Mode::Manual);
        assert!(e.anthropic_key.is_none(), "an empty input is no key");
        assert_eq!(e.secrets().len(), 1);
        assert_eq!(
            e.run_url(7.into()),
            "https://github.com/octo-org/octo-repo/actions/runs/7"
        );
        assert_eq!(e.graphql_url, "https://api.github.com/graphql");
    }

    #[test]
    fn bad_inputs_name_the_input() {
        let e = env(&[("INPUT_MODE", "yolo")]).unwrap_err().to_string();
        assert!(e.contains("`mode`"), "{e}");
        let e = env(&[("INPUT_JOB_BUDGET_MINUTES", "-3")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("job_budget_minutes"), "{e}");
        // Over 7 days: refused, not a panic in `Duration::from_secs_f64`.
        for huge in ["1e300", "10081"] {
            let e = env(&[("INPUT_JOB_BUDGET_MINUTES", huge)])
                .unwrap_err()
                .to_string();
            assert!(e.contains("at most 10080"), "{e}");
        }
        let e = env(&[("GITHUB_WORKFLOW_REF", "nonsense")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("GITHUB_WORKFLOW_REF"), "{e}");
        let e = ActionEnv::from_vars(|_| None).unwrap_err().to_string();
        assert!(
            e.contains("GITHUB_EVENT_NAME") && e.contains("run --issue"),
            "{e}"
        );
    }

    #[test]
    fn the_part_names_the_workflow_job() {
        assert_eq!(env(&[]).unwrap().part, Part::Chain { fan_out: false });
        let e = env(&[("INPUT_FAN_OUT", "true")]).unwrap();
        assert_eq!(e.part, Part::Chain { fan_out: true });
        let e = env(&[("INPUT_PART", "leg"), ("INPUT_TASK", "T003")]).unwrap();
        assert_eq!(e.part, Part::Leg("T003".into()));
        assert_eq!(env(&[("INPUT_PART", "join")]).unwrap().part, Part::Join);
        for bad in ["", "T0/3", "../x", "T 1"] {
            let e = env(&[("INPUT_PART", "leg"), ("INPUT_TASK", bad)]).unwrap_err();
            assert!(e.to_string().contains("`task`"), "{e}");
        }
        let e = env(&[("INPUT_PART", "other")]).unwrap_err().to_string();
        assert!(e.contains("`part`"), "{e}");
        let e = env(&[("INPUT_FAN_OUT", "yes")]).unwrap_err().to_string();
        assert!(e.contains("`fan_out`"), "{e}");
    }
}
