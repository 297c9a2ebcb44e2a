//! `spec-orchestrate action`: one GitHub Actions job of the chain (`docs/action-mode.md`).
//!
//! A job reads its event, checks who caused it, restores the run from its parent's checkpoint
//! (or starts one), runs one phase that calls agents (or one loop round) together with the
//! phases around it that call none — or exactly one phase with `github.jobs: per_phase` — and
//! then publishes: commit and push of the work
//! branch, the pull request when the `pr` phase ran, the one status comment, a checkpoint
//! artifact, step outputs and the job summary — and dispatches the next job unless the run waits
//! for a person, is done, or is over its cost budget.
//!
//! The phase runs in a child process (`spec-orchestrate step`) for two reasons. The child never
//! holds the GitHub token or the runtime token — only the agents' API keys — so nothing an agent
//! does can reach them. And the job can stop it cleanly before `job_budget_minutes` runs out:
//! the state is saved after every agent call, so a stopped phase resumes in the next job exactly
//! as a killed local run resumes, and the job checkpoints and dispatches a continuation instead of
//! being killed by the runner.
//!
//! Every write is idempotent so that "Re-run failed jobs" (same run id, same inputs, next
//! attempt) is safe: the parent checkpoint is immutable, the branch is reset to the sha that
//! checkpoint recorded and pushed with a lease, the comment is edited, the pull request is found
//! by its head branch, and the artifact name carries the attempt.
//!
//! The job is split by what each part may do: `plan.rs` decides (pure: the event, the status
//! comment's marker, the state and the runner's facts in, the plan and what follows out),
//! `exec.rs` carries a plan out as one straight line whose every step takes the value the one
//! before it returned, `open.rs` restores or starts the run and applies the comments,
//! `phases.rs` runs the phase processes. The forge is used through two capabilities: the
//! [`chain::Chain`] (who may drive a run, the status comment's head, the dispatches, the
//! sweep) and the [`publish::Publisher`] (the work branch committed and pushed, the pull
//! request, the checkpoint).

pub mod answer;
pub mod catch_up;
mod chain;
pub mod env;
pub mod evidence;
mod exec;
mod open;
mod phases;
pub(crate) mod plan;
mod publish;
pub mod review_answers;
mod review_round;
pub mod runner;
pub mod sweep;
mod wave;

use std::path::{Path, PathBuf};
use std::time::Instant;

use self::env::ActionEnv;
use super::Exit;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::forge::github::event::{self, Trigger};
use crate::forge::github::{GithubForge, GithubTarget};
use crate::forge::remote::Remote;
use crate::secrets::Redactor;
use crate::store::Store;
use crate::store::local::LocalStore;
use crate::util;

/// Runs the job described by the process environment.
pub fn action() -> Result<Exit> {
    let env = ActionEnv::from_env()?;
    for s in env.secrets() {
        runner::mask(s.expose());
    }
    let setup = Setup::open(&env)?;
    let exit = setup.job(&env).run();
    // What the job cost GitHub, whatever it ended in (docs/action-mode.md, "bad minutes").
    let calls = format!("\nGitHub API calls this job: {}.\n", setup.forge.calls());
    runner::add_summary(env.summary.as_deref(), &calls)?;
    exit
}

/// What a job opens before it does anything: the checkout and its configuration, the forge
/// client (its identity learnt), the remote and the redactor of every secret it knows.
struct Setup {
    repo: PathBuf,
    config: Config,
    forge: GithubForge,
    remote: Remote,
    redactor: Redactor,
    started: Instant,
}

impl Setup {
    fn open(env: &ActionEnv) -> Result<Setup> {
        let started = Instant::now();
        let repo = super::repo_root(Some(&env.workspace))?;
        let config_path = env.config.as_ref().map(|c| repo.join(c));
        let super::Opened {
            config,
            mut redactor,
        } = super::open_config(&repo, config_path.as_deref())?;
        let Some(token) = env.github_token.clone() else {
            return Err(Error::usage(
                "no GitHub token: the `github_token` input is empty (it defaults to ${{ github.token }}; pass it explicitly if your workflow overrides it)",
            ));
        };
        let (owner, name) = env
            .repository
            .split_once('/')
            .map(|(o, n)| (o.to_string(), n.to_string()))
            .unwrap_or_default();
        let mut forge = GithubForge::new(
            GithubTarget {
                api_url: env.api_url.clone(),
                graphql_url: env.graphql_url.clone(),
                owner,
                repo: name,
            },
            token.expose(),
        )?;
        // The status comment and replies are found among the comments this identity wrote.
        forge.learn_identity()?;
        for s in env.secrets() {
            redactor.add(s.expose());
        }
        Ok(Setup {
            remote: Remote::new(&repo, Some(token)),
            repo,
            config,
            forge,
            started,
            redactor,
        })
    }

    /// The job over what was opened, its two forge capabilities sharing the one client.
    fn job<'a>(&'a self, env: &'a ActionEnv) -> Job<'a> {
        Job {
            env,
            repo: &self.repo,
            config: &self.config,
            redactor: &self.redactor,
            process: phases::PhaseProcess {
                env,
                repo: &self.repo,
                config: &self.config,
                started: self.started,
                waves: wave::waves_of(&env.part, &self.repo),
            },
            chain: chain::Chain {
                env,
                github: &self.config.github,
                forge: &self.forge,
            },
            publisher: publish::Publisher {
                env,
                repo: &self.repo,
                forge: &self.forge,
                remote: &self.remote,
                redactor: &self.redactor,
            },
        }
    }
}

/// One job of the chain: the executor (`exec.rs`) over the opened setup.
struct Job<'a> {
    env: &'a ActionEnv,
    repo: &'a Path,
    config: &'a Config,
    redactor: &'a Redactor,
    /// The phase process, without the tokens, stopped at the job's time budget.
    process: phases::PhaseProcess<'a>,
    /// The chain on the forge: who may drive it, its status comment, its dispatches.
    chain: chain::Chain<'a>,
    /// What a job leaves: the work branch committed and pushed, the pull request, the
    /// checkpoint.
    publisher: publish::Publisher<'a>,
}

/// A line of the job's log.
fn say(message: impl Into<String>) {
    crate::events::emit(crate::events::Event::Job {
        message: message.into(),
    });
}

/// The step outputs of a job.
fn outputs(env: &ActionEnv, phase: &str, gate: &str, pr_url: &str, next_run: &str) -> Result<()> {
    let out = env.output.as_deref();
    runner::set_output(out, "phase", phase)?;
    runner::set_output(out, "gate", gate)?;
    runner::set_output(out, "pr_url", pr_url)?;
    runner::set_output(out, "next_run", next_run)
}

/// The end of a job that ran no phase: empty step outputs but `next_run`, and `markdown` as the
/// job's summary.
fn finish(env: &ActionEnv, next_run: &str, markdown: &str) -> Result<Exit> {
    outputs(env, "", "", "", next_run)?;
    runner::add_summary(env.summary.as_deref(), markdown)?;
    Ok(Exit::Ok)
}

impl Job<'_> {
    /// Step: the event payload the runner wrote, interpreted.
    fn read_trigger(&self) -> Result<Trigger> {
        let payload_text = util::read_to_string(&self.env.event_path)?;
        let payload: serde_json::Value =
            serde_json::from_str(&payload_text).map_err(|e| Error::Input {
                path: self.env.event_path.clone(),
                problem: format!("the event payload is not JSON: {e}"),
            })?;
        event::read(
            &self.env.event_name,
            &payload,
            &self.config.github.trigger_label,
            &self.config.github.approve_label,
        )
        .map_err(|e| Error::Input {
            path: self.env.event_path.clone(),
            problem: e,
        })
    }

    /// Where checkpoints are kept: a directory when the runner names one, else the run's
    /// artifacts.
    fn store(&self) -> Result<Store> {
        if let Some(dir) = &self.env.checkpoint_dir {
            return Ok(Store::Local(LocalStore::new(dir)));
        }
        match (
            &self.env.results_url,
            &self.env.runtime_token,
            &self.env.github_token,
        ) {
            (Some(url), Some(rt), Some(gt)) => Ok(Store::Artifact(Box::new(
                crate::store::artifact::ArtifactStore::new(
                    url,
                    rt.clone(),
                    &self.env.api_url,
                    &self.env.repository,
                    gt.clone(),
                )?,
            ))),
            _ => Err(Error::usage(
                "no checkpoint store: ACTIONS_RUNTIME_TOKEN and ACTIONS_RESULTS_URL are not set (the runner sets them for Docker actions); set SPEC_ORCHESTRATE_CHECKPOINT_DIR to keep checkpoints in a directory instead",
            )),
        }
    }
}
