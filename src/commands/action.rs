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
//! comment's marker, the state and the runner's facts in, the steps and what follows out),
//! `exec.rs` carries the steps out in order, `open.rs` restores or starts the run and applies the
//! comments, `phases.rs` runs the phase processes, and `publish.rs` pushes, opens the pull
//! request, checkpoints, reports and dispatches.

pub mod answer;
pub mod catch_up;
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

use std::path::PathBuf;
use std::time::Instant;

use self::env::ActionEnv;
use self::plan::{actor_of, bot_refusal, is_this_workflow, permission_refusal, unknown_command};
use super::Exit;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::forge::github::event::{self, Actor, Trigger};
use crate::forge::github::{GithubForge, GithubTarget};
use crate::forge::remote::Remote;
use crate::report::status;
use crate::secrets::Redactor;
use crate::store::Store;
use crate::store::local::LocalStore;
use crate::util;

/// What the issue's status comment says of the chain.
#[derive(Debug, Default)]
struct Head {
    /// The comment, if the issue has one this token wrote.
    comment: Option<crate::forge::github::Comment>,
    /// The run holding the chain's newest checkpoint (a run of this workflow).
    checkpoint: Option<u64>,
    /// The run the chain recorded as next.
    next: Option<u64>,
}

/// Runs the job described by the process environment.
pub fn action() -> Result<Exit> {
    let env = ActionEnv::from_env()?;
    for s in env.secrets() {
        runner::mask(s.expose());
    }
    let job = Job::start(&env)?;
    let exit = job.run();
    // What the job cost GitHub, whatever it ended in (docs/action-mode.md, "bad minutes").
    let calls = format!("\nGitHub API calls this job: {}.\n", job.forge.calls());
    runner::add_summary(env.summary.as_deref(), &calls)?;
    exit
}

struct Job<'a> {
    env: &'a ActionEnv,
    repo: PathBuf,
    config: Config,
    forge: GithubForge,
    remote: Remote,
    started: Instant,
    redactor: Redactor,
}

impl<'a> Job<'a> {
    fn start(env: &'a ActionEnv) -> Result<Job<'a>> {
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
        Ok(Job {
            env,
            remote: Remote::new(&repo, Some(token)),
            repo,
            config,
            forge,
            started,
            redactor,
        })
    }

    fn outputs(&self, phase: &str, gate: &str, pr_url: &str, next_run: &str) -> Result<()> {
        let out = self.env.output.as_deref();
        runner::set_output(out, "phase", phase)?;
        runner::set_output(out, "gate", gate)?;
        runner::set_output(out, "pr_url", pr_url)?;
        runner::set_output(out, "next_run", next_run)
    }

    /// Ends the job without running anything, saying why.
    fn nothing(&self, why: &str) -> Result<Exit> {
        crate::events::emit(crate::events::Event::Job {
            message: format!("nothing to do: {why}"),
        });
        self.outputs("", "", "", "")?;
        runner::add_summary(
            self.env.summary.as_deref(),
            &format!("## spec-orchestrate\n\nNothing to do: {why}\n"),
        )?;
        Ok(Exit::Ok)
    }

    /// Why `actor` may not drive a run, if they may not.
    /// Bots are decided by the configuration alone; people by their access to the repository.
    fn refusal(&self, actor: &Actor) -> Result<Option<String>> {
        if actor.is_bot {
            return Ok(bot_refusal(&self.config.github.allowed_bots, actor));
        }
        let p = self.forge.permission(&actor.login)?;
        Ok(permission_refusal(actor, &p))
    }

    /// Replies once (per run) and stops.
    fn refuse(&self, issue: u64, reason: &str) -> Result<Exit> {
        let marker = format!("{} run={} -->", status::REFUSAL_MARKER, self.env.run_id);
        if self.forge.find_comment(issue, &marker)?.is_none() {
            self.forge.create_comment(
                issue,
                &format!("{marker}\nspec-orchestrate did not act: {reason}."),
            )?;
        }
        crate::events::emit(crate::events::Event::Job {
            message: format!("refused: {reason}"),
        });
        self.outputs("", "", "", "")?;
        runner::add_summary(
            self.env.summary.as_deref(),
            &format!("## spec-orchestrate\n\nRefused: {reason}.\n"),
        )?;
        Ok(Exit::Ok)
    }

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

    /// Step: who may drive a run (write, maintain or admin; bots only when listed), and
    /// whether their command exists. Returns the reason to refuse, if any.
    fn authorise(&self, trigger: &Trigger) -> Result<Option<String>> {
        if let Some(actor) = actor_of(trigger)
            && let Some(reason) = self.refusal(actor)?
        {
            return Ok(Some(reason));
        }
        Ok(unknown_command(trigger))
    }

    /// Step: the issue's status comment (only one this token wrote counts) and the checkpoint
    /// it names — kept only if that run is a run of this workflow in this repository, so a
    /// marker copied or forged elsewhere steers nothing.
    fn status_head(&self, issue: u64) -> Result<Head> {
        let comment = self.forge.find_comment(issue, status::MARKER)?;
        let Some(head) = comment
            .as_ref()
            .and_then(|c| status::parse_marker(&c.body))
            .and_then(|m| m.checkpoint)
        else {
            return Ok(Head {
                comment,
                ..Head::default()
            });
        };
        // This run is a run of this workflow; any other is asked of GitHub.
        if head != self.env.run_id {
            let path = self.forge.run_workflow_path(head)?;
            if !is_this_workflow(path.as_deref(), self.env.workflow_file.as_deref()) {
                crate::events::emit(crate::events::Event::Job {
                    message: format!(
                        "the status comment names run {head}, which is not a run of this workflow; ignoring it"
                    ),
                });
                return Ok(Head {
                    comment,
                    ..Head::default()
                });
            }
        }
        let next = comment.as_ref().and_then(|c| status::parse_next(&c.body));
        Ok(Head {
            comment,
            checkpoint: Some(head),
            next,
        })
    }

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
