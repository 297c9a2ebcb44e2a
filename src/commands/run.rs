//! `run`, `step` and `resume`: start or continue a run and drive its phases.

use std::path::{Path, PathBuf};

use super::{Exit, drive_and_report, repo_root};
use crate::error::{Error, Result};
use crate::forge::{github, local};
use crate::machine::StopAt;
use crate::state::store::StateStore;
use crate::state::{Mode, State};
use crate::types::Phase;
use crate::util;

/// Arguments of `run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunRequest {
    /// Issue as a Markdown file (first `# ` heading = title).
    #[arg(long)]
    pub issue: String,
    /// auto: the pipeline decides; manual: a person approves the spec and answers arbitrations.
    #[arg(long, value_enum, default_value = "auto")]
    pub mode: Mode,
    /// Configuration file (default: .specs/pipeline.yml, else built-in defaults).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Repository (default: the current directory).
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// Stop after this phase completes (intake, spec_generate, inspect, spec_review, approval, implement, evaluate, pr, retrospective).
    #[arg(long, value_parser = parse_phase)]
    pub until: Option<Phase>,
}

fn parse_phase(s: &str) -> std::result::Result<Phase, String> {
    Phase::parse(s)
        .filter(|p| *p != Phase::Done)
        .ok_or_else(|| {
            let names: Vec<&str> = Phase::WORKING.iter().map(|p| p.as_str()).collect();
            format!("`{s}` is not a phase; use one of: {}", names.join(", "))
        })
}

/// What `.gitignore` inside a feature directory keeps out of history: the orchestrator's working
/// records and the evidence, which is published as an artifact and never committed.
pub const FEATURE_GITIGNORE: &str = "pipeline-state.json\npipeline-state.lock\n.pipeline-state.json.tmp-*\nevidence/\npr-body.md\nretrospective.md\nevaluate-*.json\nevaluate-*.md\nreview-rounds.json\nreview-round-*.md\n";

/// `run`: creates the run if needed, then drives it.
pub fn run(req: &RunRequest) -> Result<Exit> {
    let repo = repo_root(req.repo.as_deref())?;
    let config_path = req.config.as_ref().map(|p| absolute(p));
    let opened = super::open_config(&repo, config_path.as_deref())?;
    let issue = match req.issue.trim_start_matches('#').parse::<u64>() {
        Ok(number) if !Path::new(&req.issue).exists() => {
            let Some(token) = github::token_from_env() else {
                return Err(Error::usage(format!(
                    "--issue {}: reading an issue from GitHub needs a token in GITHUB_TOKEN (or GH_TOKEN); or save the issue as a Markdown file (first line `# Title`) and pass its path",
                    req.issue
                )));
            };
            let target = github::GithubTarget::from_env(&repo)?;
            github::GithubForge::new(target, &token)?.read_issue(number.into())?
        }
        _ => local::read_issue_file(&absolute(Path::new(&req.issue)))?,
    };
    let mut feature = util::kebab(&issue.title);
    if feature.is_empty() {
        feature = format!("issue-{}", issue.number.unwrap_or_default());
    }
    let dir = crate::spec::spec_dir(&repo, &feature);
    let store = StateStore::open(&dir)?;
    let state = match store.load()? {
        Some(s) => {
            crate::events::emit(crate::events::Event::RunResumed {
                run_id: s.run_id.clone(),
                feature: feature.clone(),
                phase: s.phase(),
            });
            s
        }
        None => {
            let mut s = State::new(&feature, issue, req.mode);
            s.config_path = config_path.as_ref().map(|p| p.display().to_string());
            let ignore = dir.join(".gitignore");
            if !ignore.exists() {
                util::write_text(&ignore, FEATURE_GITIGNORE)?;
            }
            if let Some(message) = super::import::from_issue(&repo, &feature, &s.issue.body)? {
                crate::events::emit(crate::events::Event::Detail { message });
            }
            crate::events::emit(crate::events::Event::RunStarted {
                run_id: s.run_id.clone(),
                feature: feature.clone(),
                dir: dir.display().to_string(),
            });
            s
        }
    };
    let mut ctx = super::local_ctx(&repo, opened, state, store);
    ctx.save()?;
    let stop = req.until.map(StopAt::After).unwrap_or(StopAt::End);
    drive_and_report(&mut ctx, stop)
}

/// `step` (one phase) and `resume` (to the end).
pub fn continue_run(
    at: &super::Target,
    one: bool,
    waves: crate::phases::implement::legs::Waves,
) -> Result<Exit> {
    let mut ctx = at.open()?;
    ctx.waves = waves;
    let stop = if one { StopAt::OnePhase } else { StopAt::End };
    drive_and_report(&mut ctx, stop)
}

pub(super) fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}
