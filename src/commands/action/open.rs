//! Opening the run: the parent's checkpoint restored (or a new run started), and the commands
//! posted since the chain last looked applied to it in memory.

use std::path::{Path, PathBuf};

use super::answer::{self, AfterCommand};
use super::exec::{Flow, Stop};
use super::plan::{Ending, Source};
use super::say;
use super::{Job, catch_up};
use crate::error::{Error, Result};
use crate::forge::github::event::Trigger;
use crate::git::Git;
use crate::state::job::Effect;
use crate::state::store::StateStore;
use crate::state::{IssueRef, State};
use crate::store::{self, Store, archive};
use crate::types::ids::{CommentId, IssueNumber, RunId};
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
    pub(super) dir: PathBuf,
    /// The run, as the steps change it in memory.
    pub(super) state: State,
    pub(super) lease: Lease,
    /// The run whose checkpoint was restored; `None` for a new run.
    pub(super) restored: Option<RunId>,
    /// The state store, held from the opening until the phase process takes it over: one store
    /// for every step before the phase, so no step reloads the run from disk.
    pub(super) store: StateStore,
    /// The newest comment id processed.
    pub(super) seen: CommentId,
    /// A command's message when it halted the chain (a `stop` among the comments not resumed
    /// by a later `continue`, or the command that started the job): nothing runs, nothing is
    /// dispatched.
    pub(super) halt: Option<String>,
}

/// The run once the commands posted since the chain last looked are applied: what the job's
/// own trigger steers next. Only [`Job::catch_up`] makes one.
pub(super) struct CaughtUp(Opened);

/// The run as the job's trigger steered it: ready for its phases. Only a [`CaughtUp`] run
/// becomes one.
pub(super) struct Steered(Opened);

impl CaughtUp {
    /// Nothing more steers the run: the chain goes on.
    pub(super) fn go_on(self) -> Steered {
        Steered(self.0)
    }

    /// The run steered by `step`, which changes it in memory or ends the job.
    pub(super) fn steer(self, step: impl FnOnce(&mut Opened) -> Flow<()>) -> Flow<Steered> {
        let mut run = self.0;
        step(&mut run)?;
        Ok(Steered(run))
    }
}

impl Steered {
    /// The run as steered, to read before the phase step.
    pub(super) fn run(&self) -> &Opened {
        &self.0
    }

    pub(super) fn into_run(self) -> Opened {
        self.0
    }
}

impl Job<'_> {
    /// Step: the run restored from the newest checkpoint of the first of `source.runs` that has
    /// one, or started when none has and `source.or_fresh` allows it; its state store is taken
    /// and held for the steps before the phase.
    pub(super) fn open_run(
        &self,
        store: &Store,
        trigger: &Trigger,
        issue: IssueNumber,
        source: &Source,
    ) -> Result<Opened> {
        let mut restored = None;
        let mut opened = None;
        for run in &source.runs {
            if let Some(found) = store.load_latest(run.get(), issue.get())? {
                opened = Some(self.restore(found, *run)?);
                restored = Some(*run);
                break;
            }
            say(format!("run {run} left no checkpoint for issue #{issue}"));
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
            store: state_store,
            seen: CommentId::default(),
            halt: None,
        })
    }

    /// Step: the authorised commands posted since the chain last looked, applied in order to the
    /// run in memory (`catch_up.rs`); a fresh run starts reading after the newest comment. Ends
    /// the job when its own command (`own`, the comment that started it) was applied by an
    /// earlier job.
    pub(super) fn catch_up(
        &self,
        own: Option<CommentId>,
        issue: IssueNumber,
        mut run: Opened,
    ) -> Flow<CaughtUp> {
        let comments = self.chain.forge.list_comments(issue)?;
        let Some(seen) = run.state.job.comments_seen() else {
            let newest = catch_up::newest(&comments);
            run.state.job.record(Effect::CommentsSeen(newest));
            run.seen = newest;
            return Ok(CaughtUp(run));
        };
        if let Some(id) = own.filter(|id| *id <= seen) {
            return Err(Stop::End(Ending::Nothing(format!(
                "comment {id} was already applied by an earlier job of this run"
            ))));
        }
        run.seen = seen;
        let path = run.dir.join(crate::state::STATE_FILE);
        for p in catch_up::pending(&comments, seen, own) {
            run.seen = p.id;
            if let Some(reason) = self.chain.refusal(&p.actor)? {
                say(format!("ignored comment {}: {reason}", p.id));
                continue;
            }
            say(format!(
                "@{} said {} (comment {}) since the last job",
                p.actor.login,
                p.command.as_str(),
                p.id
            ));
            match answer::apply_to(
                &mut run.state,
                self.config,
                p.command,
                &p.actor.login,
                &path,
            )? {
                AfterCommand::Run => run.halt = None,
                AfterCommand::Halt(message) => run.halt = Some(message),
                AfterCommand::Reject(message) => {
                    say(format!("comment {} not applied: {message}", p.id));
                }
            }
        }
        run.state.job.record(Effect::CommentsSeen(run.seen));
        Ok(CaughtUp(run))
    }

    /// Step: the command of the comment that started the job applied to the run in memory,
    /// and the comments seen so far recorded; a rejected command is answered and ends the job.
    pub(super) fn command(&self, trigger: &Trigger, caught: CaughtUp) -> Flow<Steered> {
        let CaughtUp(mut run) = caught;
        let Trigger::Command {
            command,
            actor,
            comment_id,
            ..
        } = trigger
        else {
            return Ok(Steered(run));
        };
        if let Ok(cmd) = command {
            say(format!("@{} says {}", actor.login, cmd.as_str()));
            let path = run.dir.join(crate::state::STATE_FILE);
            run.halt =
                match answer::apply_to(&mut run.state, self.config, *cmd, &actor.login, &path)? {
                    AfterCommand::Run => None,
                    AfterCommand::Halt(message) => Some(message),
                    AfterCommand::Reject(message) => {
                        return Err(Stop::End(Ending::Refuse(message)));
                    }
                };
        }
        let seen_id = run.seen.max(*comment_id);
        run.state.job.record(Effect::CommentsSeen(seen_id));
        Ok(Steered(run))
    }

    /// A new run for the labelled (or dispatched) issue.
    pub(super) fn fresh(
        &self,
        trigger: &Trigger,
        issue: IssueNumber,
    ) -> Result<(PathBuf, State, Lease)> {
        let (issue_ref, base): (IssueRef, Option<String>) = match trigger {
            Trigger::Labeled {
                issue,
                default_branch,
                ..
            } => (issue.clone(), default_branch.clone()),
            _ => (self.chain.forge.read_issue(issue)?, None),
        };
        let mut feature = util::kebab(&issue_ref.title);
        if feature.is_empty() {
            feature = format!("issue-{issue}");
        }
        let dir = crate::spec::spec_dir(self.repo, &feature);
        let base = match base {
            Some(b) => b,
            None => Git::new(self.repo).current_branch()?,
        };
        let mut state = State::new(&feature, issue_ref, self.env.mode);
        state.config_path = self.env.config.clone();
        state.job.record(Effect::BaseBranch(base));
        ensure_gitignore(&dir)?;
        if let Some(message) =
            crate::commands::import::from_issue(self.repo, &feature, &state.issue.body)?
        {
            say(message);
        }
        say(format!(
            "new run {} for issue #{issue} (`{feature}`)",
            state.run_id
        ));
        Ok((dir, state, Lease::Unknown))
    }

    /// The run as its parent's checkpoint left it: state and evidence restored, the work branch
    /// checked out at the sha that checkpoint recorded. Returns the branch's sha on origin as
    /// seen now (the push lease).
    pub(super) fn restore(
        &self,
        found: store::Found,
        parent: RunId,
    ) -> Result<(PathBuf, State, Lease)> {
        say(format!(
            "restoring checkpoint {} of run {parent}",
            found.name
        ));
        let (state_rel, state) = archive::state_of(&found.zip)?;
        let dir = self.repo.join(
            Path::new(&state_rel)
                .parent()
                .unwrap_or_else(|| Path::new(".specs")),
        );
        let mut lease = Lease::Unknown;
        if let Some(branch) = &state.branch {
            let origin_sha = self.publisher.remote.fetch_branch(&branch.name)?;
            let want = state
                .job
                .pushed()
                .map(str::to_string)
                .or_else(|| branch.head.clone().map(String::from))
                .or(origin_sha.clone())
                .ok_or_else(|| {
                    Error::repo(
                        self.repo,
                        format!(
                            "the checkpoint of run {parent} names branch {} but no commit, and origin has no such branch",
                            branch.name
                        ),
                    )
                    .with_help("the work branch was deleted; delete the status comment to start the issue over")
                })?;
            let git = Git::new(self.repo);
            if git
                .run(&["cat-file", "-e", &format!("{want}^{{commit}}")])
                .is_err()
            {
                return Err(Error::repo(
                    self.repo,
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
        archive::extract(&found.zip, self.repo)?;
        ensure_gitignore(&dir)?;
        Ok((dir, state, lease))
    }
}

/// The error when the run a job continues left no checkpoint.
fn no_checkpoint(parent: RunId, issue: IssueNumber) -> Error {
    Error::State {
        path: format!("run {parent}").into(),
        problem: format!(
            "left no checkpoint for issue #{issue} (no artifact named {}{issue}-…); it may have failed before saving one or its artifacts expired",
            store::PREFIX
        ),
        help: "re-run that run, or comment `/spec-orchestrate continue` to resume from the newest checkpoint".into(),
    }
}
