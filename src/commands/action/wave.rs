//! The matrix legs and the join of a wave handed out by the chain's job (docs/action-mode.md,
//! "Waves on runners").
//!
//! A leg restores its run's newest checkpoint, runs its one task in a phase process (`step
//! --leg`) on its own runner, and uploads what it did: the task's commit as a git bundle and
//! its part of the state ([`LegResult`]) as the artifact `spec-orchestrate-leg-<issue>-<task>-
//! a<attempt>`; it pushes nothing, edits no comment and dispatches nothing. The join restores
//! the same checkpoint, reads the commands posted since the chain last looked, takes the
//! newest result of every task of the wave (over all attempts of the run, so "Re-run failed
//! jobs" fills in the lost ones), and runs `implement` on them (`step --legs`): the results
//! land in task id order and the chain goes on from there, published, checkpointed and
//! dispatched as any chain job's. A task a leg left no result for fails the join before
//! anything is published, so the re-run of the lost legs and then the join lands every task
//! once.

use std::path::{Path, PathBuf};

use super::Job;
use super::chain::Head;
use super::exec::{Flow, Stop};
use super::plan::{
    Ending, PhaseEnd, PhaseFailure, Source, child_error, leg_ending, wave_ending, wave_in_flight,
};
use super::say;
use crate::commands::Exit;
use crate::error::{Error, ErrorKind, Result};
use crate::forge::github::event::{Command, Trigger};
use crate::git::Git;
use crate::phases::implement::legs::{LEG_BUNDLE, LEG_RESULT, Waves};
use crate::state::leg::LegResult;
use crate::state::waves::Leg;
use crate::state::{State, TaskStatus};
use crate::store::{self, Store, archive};
use crate::types::Phase;
use crate::types::ids::{CommentId, IssueNumber};

use super::env::Part;

/// Where the join puts the legs' results for its phase process: beside the task trees, in the
/// repository's git directory (never in the working tree, so nothing of them is committed or
/// checkpointed).
pub(super) fn legs_dir(repo: &Path) -> PathBuf {
    Git::new(repo)
        .common_dir()
        .unwrap_or_else(|_| repo.join(".git"))
        .join("spec-orchestrate/legs")
}

/// Where `implement` runs its waves in a job playing `part`.
pub(super) fn waves_of(part: &Part, repo: &Path) -> Waves {
    match part {
        Part::Chain { fan_out: false } => Waves::Here,
        Part::Chain { fan_out: true } => Waves::Jobs,
        Part::Leg(task) => Waves::Leg(task.clone()),
        Part::Join => Waves::Join(legs_dir(repo)),
    }
}

/// The path of a leg's `file` inside its result's zip.
fn entry_of(task: &str, file: &str) -> String {
    format!(".specs/legs/{task}/{file}")
}

impl Job<'_> {
    /// What a leg and the join both start from: the run's event, its issue and the status
    /// comment's head; or the ending of a job whose event names no issue, or whose run is no
    /// longer the chain's head (`wave_ending`: a leg or a join run again after the chain moved
    /// on does nothing).
    fn wave_start(&self) -> Result<std::result::Result<(Trigger, IssueNumber, Head), Exit>> {
        let trigger = self.read_trigger()?;
        let Some(issue) = trigger.issue_number() else {
            let ending = Ending::Nothing("the event names no issue".into());
            return self.end(IssueNumber::default(), ending).map(Err);
        };
        let head = self.chain.status_head(issue)?;
        let (run, attempt) = (self.env.run_id, self.env.run_attempt);
        if let Some(ending) = wave_ending(issue, head.checkpoint, head.next, run, attempt) {
            return self.end(issue, ending).map(Err);
        }
        Ok(Ok((trigger, issue, head)))
    }

    /// The run's checkpoint opened for a leg or the join: this run's newest (the job that handed
    /// the wave out saved it), unless the chain moved on.
    fn wave_source(&self) -> Source {
        Source {
            runs: vec![self.env.run_id],
            or_fresh: false,
        }
    }

    /// A matrix leg: task `task` of the wave this run handed out, on this runner; its result
    /// uploaded for the join.
    pub(super) fn leg_job(&self, task: &str) -> Result<Exit> {
        let (trigger, issue, _head) = match self.wave_start()? {
            Ok(found) => found,
            Err(exit) => return Ok(exit),
        };
        let (run, attempt) = (self.env.run_id, self.env.run_attempt);
        let store = self.store()?;
        let opened = self.open_run(&store, &trigger, issue, &self.wave_source())?;
        if let Some(ending) = leg_ending(&opened.state, run, task) {
            return self.end(issue, ending);
        }
        let super::open::Opened {
            dir,
            mut state,
            store: state_store,
            ..
        } = opened;
        let base = state.clone();
        let base_sha = Git::new(self.repo).head();
        state_store.save(&mut state)?;
        drop(state_store);
        let clock = std::time::Instant::now();
        let (end, state_store, after) = self.phase_step(&dir, &state.feature, false)?;
        let wall = clock.elapsed();
        drop(state_store);
        let failure = match end {
            PhaseEnd::Budget => Some("the leg ran out of job_budget_minutes".to_string()),
            _ => child_error(end).map(|f| f.why),
        };
        if let Some(why) = failure {
            // No result: the join fails on the missing leg, and "Re-run failed jobs" runs it.
            return Err(Error::PhaseFailed {
                kind: ErrorKind::Forge,
                message: format!("the leg of {task} in run {run} (attempt {attempt}): {why}"),
            });
        }
        let mut result = LegResult::between(&base, &after, task)
            .ok_or_else(|| Error::usage(format!("the leg's state has no task {task}")))?;
        // GitHub names a matrix job by its `name:` and its matrix value.
        result.leg = Some(Leg {
            job: format!("implement ({task})"),
            run_id: run,
            attempt,
        });
        result.wall_ms = Some(crate::state::waves::millis(wall));
        let zip = self.leg_zip(task, &result, base_sha.as_deref())?;
        let name = store::leg_name(issue.get(), task, attempt);
        let saved = store.save(run.get(), &name, &zip)?;
        let calls: u64 = result.usage.values().map(|u| u.calls).sum();
        let usd: f64 = result.usage.values().map(|u| u.usd).sum();
        let line = format!(
            "Leg {task} of run {run} (attempt {attempt}): {}, {calls} agent calls, {usd:.4} USD. Its result {} ({} bytes) waits for the join.",
            if result.task.status == TaskStatus::Done {
                "done"
            } else {
                "not done"
            },
            saved.name,
            saved.size
        );
        say(line.clone());
        super::outputs(self.env, Phase::Implement.as_str(), "", "", "")?;
        super::runner::add_summary(
            self.env.summary.as_deref(),
            &self
                .redactor
                .redact(&format!("## spec-orchestrate\n\n{line}\n")),
        )?;
        Ok(Exit::Ok)
    }

    /// The zip of a leg's result: its part of the state and, when its task ended done, the
    /// task's commit as a git bundle of `base..HEAD`.
    fn leg_zip(&self, task: &str, result: &LegResult, base: Option<&str>) -> Result<Vec<u8>> {
        let json = serde_json::to_vec_pretty(result)
            .map_err(|e| Error::usage(format!("the leg's result cannot be written: {e}")))?;
        let mut files = vec![(entry_of(task, LEG_RESULT), json)];
        if result.task.status == TaskStatus::Done
            && let Some(base) = base
        {
            let git = Git::new(self.repo);
            let range = format!("{base}..HEAD");
            if git.run(&["rev-list", "--count", &range])?.trim() != "0" {
                let tmp = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
                let path = tmp.path().join(LEG_BUNDLE);
                let arg = path.display().to_string();
                git.run(&["bundle", "create", "--quiet", &arg, &range])?;
                let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
                files.push((entry_of(task, LEG_BUNDLE), bytes));
            }
        }
        archive::pack(&files)
    }

    /// A chain job whose checkpoint has a wave in flight on another run's legs ends, leaving
    /// its command to that run's join (which reads the comments posted since the chain last
    /// looked): one job of an issue at a time, the legs aside. A `stop` first cancels that run,
    /// so its legs stop; the join runs all the same (`if: always()`) and records the stop.
    pub(super) fn wave_guard(&self, trigger: &Trigger, state: &State) -> Flow<()> {
        let Some(run) = state
            .fanout
            .as_ref()
            .and_then(|f| f.run)
            .filter(|r| *r != self.env.run_id)
        else {
            return Ok(());
        };
        let running = self
            .chain
            .forge
            .workflow_run(run)?
            .is_some_and(|r| r.status != "completed");
        let Some(run) = wave_in_flight(state, |_| running) else {
            return Ok(());
        };
        let stop = matches!(
            trigger,
            Trigger::Command {
                command: Ok(Command::Stop),
                ..
            }
        );
        if stop {
            self.chain.forge.cancel_run(run)?;
        }
        Err(Stop::End(Ending::Nothing(format!(
            "run {run}'s wave of implement is on its runners; its join applies the commands posted since the chain last looked{}",
            if stop {
                format!("; run {run} was cancelled, so its legs stop and its join records the stop")
            } else {
                String::new()
            }
        ))))
    }

    /// The join of this run's wave: the legs' results landed, the chain continued.
    pub(super) fn join_job(&self) -> Result<Exit> {
        let (trigger, issue, head) = match self.wave_start()? {
            Ok(found) => found,
            Err(exit) => return Ok(exit),
        };
        let comment_id = head.comment.as_ref().map(|c| c.id);
        self.settle(issue, self.join_flow(&trigger, issue, comment_id))
    }

    /// The join's steps: the checkpoint opened, the comments caught up, the legs' results
    /// fetched (unless a command halted the chain), the phases run and the job reported.
    fn join_flow(
        &self,
        trigger: &Trigger,
        issue: IssueNumber,
        comment_id: Option<CommentId>,
    ) -> Flow<Exit> {
        let store = self.store()?;
        let opened = self.open_run(&store, trigger, issue, &self.wave_source())?;
        let run = self.env.run_id;
        if opened.state.fanout.as_ref().and_then(|f| f.run) != Some(run) {
            return Err(Stop::End(Ending::Nothing(format!(
                "run {run} has no wave to land"
            ))));
        }
        // The run's own command (if a comment started it) was applied by the job that handed
        // the wave out; only what was posted since counts.
        let steered = self.catch_up(None, issue, opened)?.go_on();
        if steered.run().halt.is_none() {
            self.fetch_legs(&store, issue, &steered.run().state, comment_id)?;
        }
        let phased = self.phases(&store, trigger, issue, steered, comment_id)?;
        let exit = self.report_job(&store, phased)?;
        let _ = std::fs::remove_dir_all(legs_dir(self.repo));
        Ok(exit)
    }

    /// The newest result of every task of `state`'s wave not done yet, written for the phase
    /// process under [`legs_dir`]; a task with none fails the job (its leg was lost or
    /// failed), saying so on the status comment, before anything is published.
    fn fetch_legs(
        &self,
        store: &Store,
        issue: IssueNumber,
        state: &State,
        comment_id: Option<CommentId>,
    ) -> Result<()> {
        let run = self.env.run_id;
        let legs = store.load_legs(run.get(), issue.get())?;
        let tasks: Vec<String> = state
            .fanout
            .as_ref()
            .map(|f| f.tasks.clone())
            .unwrap_or_default();
        let open = |id: &String| {
            state
                .tasks
                .iter()
                .any(|t| &t.id == id && t.status != TaskStatus::Done)
        };
        let missing: Vec<&String> = tasks
            .iter()
            .filter(|id| open(id) && legs.iter().all(|(t, _)| t != *id))
            .collect();
        if !missing.is_empty() {
            let why = format!(
                "the legs of {} left no result (a runner lost, or the leg failed); “Re-run failed jobs” runs them again and then this join, which lands every task once",
                missing
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let failure = PhaseFailure {
                kind: ErrorKind::Forge,
                why,
            };
            return Err(self.failed(
                issue,
                state,
                comment_id,
                Some(run),
                Phase::Implement,
                failure,
            ));
        }
        let dir = legs_dir(self.repo);
        let _ = std::fs::remove_dir_all(&dir);
        for (task, found) in legs.iter().filter(|(t, _)| tasks.contains(t)) {
            for (path, bytes) in archive::entries(&found.zip)? {
                for file in [LEG_RESULT, LEG_BUNDLE] {
                    if path == entry_of(task, file) {
                        crate::fsx::write_atomic(&dir.join(task).join(file), &bytes)?;
                    }
                }
            }
            say(format!("{task}: the result {} of its leg", found.name));
        }
        Ok(())
    }
}
