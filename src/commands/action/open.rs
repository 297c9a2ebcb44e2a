//! Opening the run: the parent's checkpoint restored (or a new run started), and the commands
//! posted since the chain last looked applied to it in memory.

use std::path::{Path, PathBuf};

use super::answer::{self, AfterCommand};
use super::plan::Source;
use super::{Job, catch_up};
use crate::error::{Error, Result};
use crate::forge::github::event::Trigger;
use crate::git::Git;
use crate::state::job::Effect;
use crate::state::store::StateStore;
use crate::state::{IssueRef, State};
use crate::store::{self, Store, archive};
use crate::util;

/// The push lease: what this job knows of the work branch on `origin`, so that a push never
/// overwrites a commit it has not seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Lease {
    /// Not looked at yet (a fresh run): asked of `origin` right before the push.
    Unknown,
    /// `origin` has no such branch: the push creates it.
    Absent,
    /// `origin` has the branch at this sha.
    At(String),
}

/// What the catch-up step found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CaughtUp {
    /// The newest comment id processed.
    pub(super) seen: u64,
    /// The message of a `stop` among the comments (not resumed by a later `continue`).
    pub(super) halt: Option<String>,
    /// Why the job does nothing: its own command was applied by an earlier job.
    pub(super) done_already: Option<String>,
}

/// The feature's `.gitignore` keeps the state and evidence out of every commit; a checkpoint
/// restored into a fresh checkout must never be committed by accident.
pub(super) fn ensure_gitignore(dir: &Path) -> Result<()> {
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        util::write_text(&ignore, crate::commands::run::FEATURE_GITIGNORE)?;
    }
    Ok(())
}

/// The run as the opening step left it, for the steps after it.
pub(super) struct Opened {
    /// The feature's state directory.
    pub(super) dir: PathBuf,
    /// The run, as the steps change it in memory.
    pub(super) state: State,
    /// The push lease.
    pub(super) lease: Lease,
    /// The run whose checkpoint was restored; `None` for a new run.
    pub(super) restored: Option<u64>,
    /// The state store, held from the opening until the phase process takes it over: one store
    /// for every step before the phase, so no step reloads the run from disk.
    pub(super) store: Option<StateStore>,
    /// The newest comment id processed.
    pub(super) seen: u64,
    /// A command's message when it halted the chain: nothing runs, nothing is dispatched.
    pub(super) halt: Option<String>,
}

impl Job<'_> {
    /// Step: the run restored from the newest checkpoint of the first of `source.runs` that has
    /// one, or started when none has and `source.or_fresh` allows it; its state store is taken
    /// and held for the steps before the phase.
    pub(super) fn open_run(
        &self,
        store: &Store,
        trigger: &Trigger,
        issue: u64,
        source: &Source,
    ) -> Result<Opened> {
        let mut restored = None;
        let mut opened = None;
        for run in &source.runs {
            if let Some(found) = store.load_latest(*run, issue)? {
                opened = Some(self.restore(found, *run)?);
                restored = Some(*run);
                break;
            }
            crate::events::emit(crate::events::Event::Job {
                message: format!("run {run} left no checkpoint for issue #{issue}"),
            });
        }
        let (dir, state, lease) = match opened {
            Some(o) => o,
            None if source.or_fresh => self.fresh(trigger, issue)?,
            None => {
                return Err(no_checkpoint(
                    source.runs.last().copied().unwrap_or_default(),
                    issue,
                ));
            }
        };
        let state_store = StateStore::open(&dir)?;
        Ok(Opened {
            dir,
            state,
            lease,
            restored,
            store: Some(state_store),
            seen: 0,
            halt: None,
        })
    }

    /// Step: the authorised commands posted since the chain last looked, applied in order to the
    /// run in memory (`catch_up.rs`); a fresh run starts reading after the newest comment.
    pub(super) fn catch_up(
        &self,
        trigger: &Trigger,
        issue: u64,
        run: &mut Opened,
    ) -> Result<CaughtUp> {
        let state = &mut run.state;
        let comments = self.forge.list_comments(issue)?;
        let own = match trigger {
            Trigger::Command { comment_id, .. } if *comment_id != 0 => Some(*comment_id),
            _ => None,
        };
        let Some(seen) = state.job.comments_seen().map(u64::from) else {
            let newest = catch_up::newest(&comments);
            state.job.record(Effect::CommentsSeen(newest.into()));
            return Ok(CaughtUp {
                seen: newest,
                halt: None,
                done_already: None,
            });
        };
        if let Some(id) = own.filter(|id| *id <= seen) {
            return Ok(CaughtUp {
                seen,
                halt: None,
                done_already: Some(format!(
                    "comment {id} was already applied by an earlier job of this run"
                )),
            });
        }
        let mut caught = CaughtUp {
            seen,
            halt: None,
            done_already: None,
        };
        let path = run.dir.join(crate::state::STATE_FILE);
        for p in catch_up::pending(&comments, seen, own) {
            caught.seen = p.id;
            if let Some(reason) = self.refusal(&p.actor)? {
                crate::events::emit(crate::events::Event::Job {
                    message: format!("ignored comment {}: {reason}", p.id),
                });
                continue;
            }
            crate::events::emit(crate::events::Event::Job {
                message: format!(
                    "@{} said {} (comment {}) since the last job",
                    p.actor.login,
                    p.command.as_str(),
                    p.id
                ),
            });
            match answer::apply_to(state, &self.config, p.command, &p.actor.login, &path)? {
                AfterCommand::Run => caught.halt = None,
                AfterCommand::Halt(message) => caught.halt = Some(message),
                AfterCommand::Reject(message) => {
                    crate::events::emit(crate::events::Event::Job {
                        message: format!("comment {} not applied: {message}", p.id),
                    });
                }
            }
        }
        state.job.record(Effect::CommentsSeen(caught.seen.into()));
        Ok(caught)
    }

    /// Step: a `/spec-orchestrate` command applied to the run in memory; any other trigger just
    /// runs.
    pub(super) fn apply_command(
        &self,
        trigger: &Trigger,
        run: &mut Opened,
    ) -> Result<AfterCommand> {
        let Trigger::Command {
            command: Ok(cmd),
            actor,
            ..
        } = trigger
        else {
            return Ok(AfterCommand::Run);
        };
        crate::events::emit(crate::events::Event::Job {
            message: format!("@{} says {}", actor.login, cmd.as_str()),
        });
        let path = run.dir.join(crate::state::STATE_FILE);
        answer::apply_to(&mut run.state, &self.config, *cmd, &actor.login, &path)
    }

    /// A new run for the labelled (or dispatched) issue.
    pub(super) fn fresh(&self, trigger: &Trigger, issue: u64) -> Result<(PathBuf, State, Lease)> {
        let (issue_ref, base): (IssueRef, Option<String>) = match trigger {
            Trigger::Labeled {
                issue,
                default_branch,
                ..
            } => (issue.clone(), default_branch.clone()),
            _ => (self.forge.read_issue(issue)?, None),
        };
        let mut feature = util::kebab(&issue_ref.title);
        if feature.is_empty() {
            feature = format!("issue-{issue}");
        }
        let dir = crate::spec::spec_dir(&self.repo, &feature);
        let base = match base {
            Some(b) => b,
            None => Git::new(&self.repo).current_branch()?,
        };
        let mut state = State::new(&feature, issue_ref, self.env.mode);
        state.config_path = self.env.config.clone();
        state.job.record(Effect::BaseBranch(base));
        ensure_gitignore(&dir)?;
        if let Some(message) =
            crate::commands::import::from_issue(&self.repo, &feature, &state.issue.body)?
        {
            crate::events::emit(crate::events::Event::Job { message });
        }
        crate::events::emit(crate::events::Event::Job {
            message: format!("new run {} for issue #{issue} (`{feature}`)", state.run_id),
        });
        Ok((dir, state, Lease::Unknown))
    }

    /// The run as its parent's checkpoint left it: state and evidence restored, the work branch
    /// checked out at the sha that checkpoint recorded. Returns the branch's sha on origin as
    /// seen now (the push lease).
    pub(super) fn restore(
        &self,
        found: store::Found,
        parent: u64,
    ) -> Result<(PathBuf, State, Lease)> {
        crate::events::emit(crate::events::Event::Job {
            message: format!("restoring checkpoint {} of run {parent}", found.name),
        });
        let (state_rel, state) = archive::state_of(&found.zip)?;
        let dir = self.repo.join(
            Path::new(&state_rel)
                .parent()
                .unwrap_or_else(|| Path::new(".specs")),
        );
        let mut lease = Lease::Unknown;
        if let Some(branch) = &state.branch {
            let origin_sha = self.remote.fetch_branch(&branch.name)?;
            let want = state
                .job
                .pushed()
                .map(str::to_string)
                .or_else(|| branch.head.clone().map(String::from))
                .or(origin_sha.clone())
                .ok_or_else(|| {
                    Error::repo(
                        &self.repo,
                        format!(
                            "the checkpoint of run {parent} names branch {} but no commit, and origin has no such branch",
                            branch.name
                        ),
                    )
                    .with_help("the work branch was deleted; delete the status comment to start the issue over")
                })?;
            let git = Git::new(&self.repo);
            if git
                .run(&["cat-file", "-e", &format!("{want}^{{commit}}")])
                .is_err()
            {
                return Err(Error::repo(
                    &self.repo,
                    format!(
                        "commit {want} of the work branch {} (recorded by run {parent}) is not on origin any more; someone rewrote the branch. Restore it, or delete the branch and the status comment to start over",
                        branch.name
                    ),
                ));
            }
            git.run(&["checkout", "--quiet", "-B", &branch.name, &want])?;
            lease = match origin_sha {
                Some(sha) => Lease::At(sha),
                None => Lease::Absent,
            };
        }
        archive::extract(&found.zip, &self.repo)?;
        ensure_gitignore(&dir)?;
        Ok((dir, state, lease))
    }
}

/// The error when the run a job continues left no checkpoint.
fn no_checkpoint(parent: u64, issue: u64) -> Error {
    Error::State {
        path: format!("run {parent}").into(),
        problem: format!(
            "left no checkpoint for issue #{issue} (no artifact named {}{issue}-…); it may have failed before saving one or its artifacts expired",
            store::PREFIX
        ),
        help: "re-run that run, or comment `/spec-orchestrate continue` to resume from the newest checkpoint".into(),
    }
}
