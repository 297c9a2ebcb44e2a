//! A wave on the Action's runners: handed out to the workflow's matrix legs, one task per leg,
//! and landed by the join from what the legs brought back.
//!
//! Which part a phase process plays is its [`Waves`] (the `step` options the Action's job
//! passes): the job that reaches a wave of more than one task hands it out ([`hand_out`]:
//! the wave's budget checked for every task before any starts, as for a local wave, and each
//! leg given its share of what is left), the phase stopping there; a leg runs its one task
//! ([`run_leg`]) in its own checkout, never spending more than its share; the join lands the
//! legs' results ([`land`]) in task id order exactly as a local wave lands its trees (the
//! leg's commit cherry-picked, `tasks.md` ticked, a change that no longer applies run again
//! on top), then goes on as `implement` does. A task already done is never landed again, so a
//! leg or a join run twice commits nothing twice.

use std::path::{Path, PathBuf};

use super::{Task, reserve_budget, run_task};
use crate::error::{Error, Result};
use crate::events::{self, Event};
use crate::phases::Ctx;
use crate::phases::lane::Solo;
use crate::spec::tasks;
use crate::state::TaskStatus;
use crate::state::leg::{Fanout, LegResult};
use crate::types::ids::TaskId;
use crate::types::kinds::WaveTaskState;

/// The file of a leg's result beside its task's commit (`LEG_BUNDLE`) in a leg's directory.
pub const LEG_RESULT: &str = "leg.json";

/// The git bundle of a leg's task commit (absent when the task did not end done).
pub const LEG_BUNDLE: &str = "task.bundle";

/// Where the waves of `implement` run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Waves {
    /// On this machine: one task in the checkout, more at once in worktrees.
    #[default]
    Here,
    /// A wave of more than one task is handed to the Action's matrix legs and the phase stops.
    Jobs,
    /// The matrix leg of this task of the handed-out wave: that task only, then the phase stops.
    Leg(String),
    /// The join: the handed-out wave lands from the legs' results in this directory (one
    /// subdirectory per task), then waves are handed out as with `Jobs`.
    Join(PathBuf),
}

/// The error that ends the phase where a wave leaves this process (handed out, or a leg's task
/// ended); the driver keeps the phase due and stops (`machine::drive`).
fn handed(message: String) -> Error {
    events::emit(Event::Note {
        message: message.clone(),
    });
    Error::HandedOut(message)
}

/// Hands `wave` to the matrix legs: every task of it must fit what is left of the budget, each
/// leg may spend its share of that, and the wave is recorded in the state (`fanout`) for the
/// job to hand out; the phase stops.
pub(super) fn hand_out(ctx: &mut Ctx, wave: &[Task]) -> Result<bool> {
    if matches!(ctx.waves, Waves::Join(_)) {
        // A run's matrix is fixed when its first job ends: the join's run has no legs left, so
        // the next run's job hands this wave out (and records it then, once).
        let ids: Vec<&str> = wave.iter().map(|t| t.id.as_str()).collect();
        return Err(handed(format!(
            "the next wave {} goes to the next run's legs",
            ids.join(", ")
        )));
    }
    let todo: Vec<&Task> = wave.iter().collect();
    reserve_budget(ctx, &todo)?;
    let mut ids: Vec<String> = wave.iter().map(|t| t.id.clone()).collect();
    ids.sort_by_key(|id| tasks::id_order(id));
    let share_usd = ctx
        .config
        .limits
        .budget_usd
        .map(|b| (b - ctx.state.total_usd()).max(0.0) / ids.len() as f64);
    let message = format!(
        "the wave {} is handed to {} runners, one task each",
        ids.join(", "),
        ids.len()
    );
    let task_ids: Vec<TaskId> = ids.iter().map(|id| TaskId::from(id.as_str())).collect();
    let wave = ctx.state.open_wave(&task_ids, crate::util::now());
    ctx.state.fanout = Some(Fanout {
        tasks: ids,
        run: None,
        share_usd,
        wave,
    });
    ctx.save()?;
    Err(handed(message))
}

/// The leg of `id`: that task of the handed-out wave run to its end in this checkout (its
/// commit stays here for the leg's job to bundle), spending at most the leg's share; the phase
/// stops.
pub(super) fn run_leg(ctx: &mut Ctx, ordered: &[Task], id: &str) -> Result<()> {
    let Some(fanout) = ctx
        .state
        .fanout
        .clone()
        .filter(|f| f.tasks.iter().any(|t| t == id))
    else {
        return Err(Error::usage(format!(
            "task {id} is not in the wave this checkpoint handed out; the leg has nothing to do"
        )));
    };
    let Some(task) = ordered.iter().find(|t| t.id == id) else {
        return Err(Error::usage(format!("tasks.md has no task {id}")));
    };
    if let Some(share) = fanout.share_usd {
        // The leg sees only its own spending: it may reach what was spent when the wave was
        // handed out plus its share, and a call that could pass that stops the task as the
        // budget stops a run.
        ctx.config.limits.budget_usd = Some(ctx.state.total_usd() + share);
    }
    let done = run_task(&Solo::new(ctx), task)?;
    Err(handed(format!(
        "{id}: the leg's task ended {}",
        if done { "done" } else { "blocked" }
    )))
}

/// Lands the handed-out wave from the legs' results under `dir` (`<dir>/<task>/`), in task id
/// order: each result's part of the state applied, its commit landed on the work branch; a task
/// whose change no longer applies runs again in the checkout on top of the landed ones. A task
/// already done (landed by an earlier join) is skipped. A leg stopped at its share of the
/// budget stops the run once every result is in.
pub(super) fn land(ctx: &mut Ctx, ordered: &[Task], dir: &Path) -> Result<()> {
    let Some(fanout) = ctx.state.fanout.clone() else {
        return Ok(());
    };
    let mut again: Vec<&Task> = Vec::new();
    let mut stop = None;
    for id in &fanout.tasks {
        let Some(task) = ordered.iter().find(|t| &t.id == id) else {
            continue;
        };
        if super::waves::status(ctx, id) == TaskStatus::Done {
            continue;
        }
        let leg = dir.join(id);
        let checked = read_result(&leg, id).and_then(|r| Ok((r, checked_tip(ctx, &leg, id)?)));
        let (result, tip) = match checked {
            Ok(checked) => checked,
            Err(why) => {
                refuse(ctx, fanout.wave, id, &why);
                again.push(task);
                continue;
            }
        };
        result.apply(&mut ctx.state);
        if stop.is_none() {
            stop = result.stop.clone();
        }
        let mut ended = match result.task.status {
            TaskStatus::Done => WaveTaskState::Landed,
            TaskStatus::Blocked => WaveTaskState::Failed,
            _ => WaveTaskState::Stopped,
        };
        let landed = match &tip {
            Some(sha) => super::waves::land_sha(ctx, task, &format!("{sha}^"), sha)?,
            None => false,
        };
        if ended == WaveTaskState::Landed && !landed {
            ended = WaveTaskState::Rerun;
            again.push(task);
        }
        record_leg(ctx, fanout.wave, &result, ended);
        ctx.save()?;
    }
    ctx.state.fanout = None;
    ctx.save()?;
    rerun_on_top(ctx, &again)?;
    let landed: Vec<(String, Option<crate::types::ids::Sha>)> = again
        .iter()
        .map(|t| {
            let done = super::waves::status(ctx, &t.id) == TaskStatus::Done;
            (
                t.id.clone(),
                super::waves::commit_of(ctx, &t.id).filter(|_| done),
            )
        })
        .collect();
    if let Some(w) = ctx.state.wave_mut(fanout.wave) {
        for (id, commit) in landed {
            let wall = std::time::Duration::from_millis(
                w.task_mut(&id).and_then(|t| t.wall_ms).unwrap_or_default(),
            );
            let ended = if commit.is_some() {
                WaveTaskState::Landed
            } else {
                WaveTaskState::Failed
            };
            w.end_task(&id, ended, wall, commit);
        }
        // The wave's wall time: from its hand-out to its landing, the legs' runners included.
        let now = crate::util::now();
        let wall = (now - w.started).to_std().unwrap_or_default();
        w.close(now, wall);
    }
    ctx.save()?;
    if let Some(mut stop) = stop {
        // The leg saw only its share as its budget; the run's stop speaks of the whole.
        stop.spent_usd = ctx.state.total_usd();
        stop.budget_usd = ctx.config.limits.budget_usd;
        stop.message = format!(
            "stopped: a leg of the wave {} reached its share of limits.budget_usd ({:.4} USD spent of {:.4} USD, every leg's usage summed) before its task was done. The landed tasks stay; raise `limits.budget_usd` and continue (`spec-orchestrate resume`, or comment `/spec-orchestrate continue`).",
            fanout.tasks.join(", "),
            stop.spent_usd,
            stop.budget_usd.unwrap_or_default()
        );
        return Err(Error::Stopped(Box::new(stop)));
    }
    Ok(())
}

/// Writes how the leg of `result`'s task ended into wave `number` of the state's record: the
/// leg's job, its state there, its wall time and the landed commit.
fn record_leg(ctx: &mut Ctx, number: u32, result: &LegResult, ended: WaveTaskState) {
    let id = result.task.id.clone();
    let commit = super::waves::commit_of(ctx, &id).filter(|_| ended == WaveTaskState::Landed);
    let wall = std::time::Duration::from_millis(result.wall_ms.unwrap_or_default());
    if let Some(w) = ctx.state.wave_mut(number) {
        w.start_task(&id, result.leg.clone());
        w.end_task(&id, ended, wall, commit);
    }
}

/// Runs `again` (tasks whose change no longer applied) once more each, in the checkout on top
/// of the landed ones; true when every one ends done.
pub(super) fn rerun_on_top(ctx: &mut Ctx, again: &[&Task]) -> Result<bool> {
    let mut all_done = true;
    for task in again {
        super::waves::ready_to_rerun(ctx, task)?;
        all_done &= run_task(&Solo::new(ctx), task)?;
    }
    Ok(all_done)
}

/// A leg's result, as its job wrote it, if it can be the result of task `id`'s leg: the join
/// restores it from an artifact of the run (downloaded data, written on another runner where
/// an agent worked), so a record that names another task, spends less than nothing or carries
/// calls and disputes of other tasks is refused (`Err`: why) rather than summed into the run.
fn read_result(leg: &Path, id: &str) -> std::result::Result<LegResult, String> {
    let path = leg.join(LEG_RESULT);
    let text = crate::util::read_to_string_max(&path, crate::fsx::Limit::SpecDoc)
        .map_err(|e| e.to_string())?;
    let result: LegResult = serde_json::from_str(&text)
        .map_err(|e| format!("{LEG_RESULT} is not a leg's result: {e}"))?;
    let cost = |usd: f64| usd.is_finite() && usd >= 0.0;
    let why = if result.task.id != id {
        format!("its record is of task {}", result.task.id)
    } else if !result
        .usage
        .values()
        .all(|u| cost(u.usd) && cost(u.max_call_usd))
        || !result.calls.iter().all(|c| cost(c.usd))
    {
        "its usage has a cost below zero".to_string()
    } else if result
        .calls
        .iter()
        .any(|c| c.task.as_ref().is_some_and(|t| t.as_str() != id))
        || result.disputes.iter().any(|d| d.task != id)
    {
        "it carries calls or disputes of other tasks".to_string()
    } else {
        return Ok(result);
    };
    Err(why)
}

/// The tip of the commit `leg` bundled for task `id` (its objects taken into the checkout's
/// repository; none without a bundle), when it changes only what this binary commits for the
/// task: its implementer's room (the working tree but `.specs/` and `.git`) and `tasks.md` with
/// the task's box ticked. The rooms undo any other change on the leg, so a commit touching the
/// spec, the acceptance cases or other tasks was not made there by this binary and must not
/// land as reviewed work (`Err`: why).
fn checked_tip(ctx: &Ctx, leg: &Path, id: &str) -> std::result::Result<Option<String>, String> {
    let text = |e: Error| e.to_string();
    let Some(sha) = unbundle(ctx, leg).map_err(text)? else {
        return Ok(None);
    };
    let main = ctx.forge.git();
    let parent = format!("{sha}^");
    let tasks_md = format!("{}/tasks.md", ctx.spec_rel());
    let ticked = || -> Result<bool> {
        let before = main.run(&["show", &format!("{parent}:{tasks_md}")])?;
        let after = main.run(&["show", &format!("{sha}:{tasks_md}")])?;
        Ok(after == tasks::tick(&before, id))
    };
    let room = crate::agents::rooms::Room::WorkTree;
    for path in super::waves::changed_files(main, &parent, &sha).map_err(text)? {
        let allowed = room.contains(&path) || (path == tasks_md && ticked().map_err(text)?);
        if !allowed {
            return Err(format!(
                "its commit changes {path}, outside what a task's commit may change"
            ));
        }
    }
    Ok(Some(sha))
}

/// Refuses the result of task `id`'s leg in wave `number`: nothing of it is applied, the task
/// runs again in the join on top of the landed ones, and the run becomes a draft that says so
/// (a leg's runner that sends such a result needs a person's look).
fn refuse(ctx: &mut Ctx, number: u32, id: &str, why: &str) {
    let message = format!(
        "the result of the leg of {id} was refused ({why}); the task ran again in the join"
    );
    events::emit(Event::Note {
        message: message.clone(),
    });
    ctx.state.draft_reasons.push(message);
    if let Some(w) = ctx.state.wave_mut(number) {
        w.start_task(id, None);
    }
}

/// The tip of the bundle in `leg`, its objects taken into the checkout's repository (none
/// without a bundle, or when it names no commit).
fn unbundle(ctx: &Ctx, leg: &Path) -> Result<Option<String>> {
    let bundle = leg.join(LEG_BUNDLE);
    if !bundle.is_file() {
        return Ok(None);
    }
    let main = ctx.forge.git();
    let bundle_arg = bundle.display().to_string();
    main.run(&["bundle", "verify", "--quiet", &bundle_arg])?;
    let heads = main.run(&["bundle", "unbundle", &bundle_arg])?;
    Ok(heads.split_whitespace().next().map(str::to_string))
}
