//! A wave of tasks run at once, each in its own worktree, landed in order.
//!
//! The ready tasks of a wave (their dependencies committed, no target file in common, at most
//! `limits.parallel_tasks`) each get a [`TaskTree`] at the work branch's HEAD and a thread. A
//! task runs there exactly as in the checkout ([`super::run_task`] through a
//! [`Shared`](crate::phases::lane::Shared) hold): its implementer, its opposite-agent review,
//! its attempts; its calls record and save the run's state under one lock. When every task of
//! the wave has ended, the accepted ones land on the work branch in task id order (their
//! dependencies landed in earlier waves): the tree's commit is cherry-picked, `tasks.md` ticked,
//! and committed as in the checkout. A task whose change no longer applies on top of the ones
//! landed before it is run again once, in the checkout, on top of them. The trees go when the
//! wave ends, whatever happened.
//!
//! While the wave works, no agent may change the checkout itself: what changed there is undone
//! and recorded as a `sandbox_violation` of the wave's implementers (the change cannot be
//! told apart among agents working at once).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::tree::{self, TaskTree};
use super::{KEEP, Task, commit_task, landed_commit, run_task, task_mut, task_state};
use crate::agents::rooms::{self, Room};
use crate::error::{Error, Result};
use crate::events::{self, Event};
use crate::git::Git;
use crate::phases::Ctx;
use crate::phases::lane::{Shared, Solo};
use crate::spec::tasks;
use crate::state::TaskStatus;
use crate::state::waves::Wave;
use crate::types::Phase;
use crate::types::ids::{Sha, TaskId};
use crate::types::kinds::{BlockerCategory, WaveTaskState};

/// Runs `wave` (one task or more) and records it in the state's `waves`: each task's state,
/// its wall time and its commit, and the wave's wall time. True when every task is done.
pub(super) fn run(ctx: &mut Ctx, wave: &[Task]) -> Result<bool> {
    let ids: Vec<TaskId> = wave.iter().map(|t| TaskId::from(t.id.as_str())).collect();
    let number = ctx.state.open_wave(&ids, crate::util::now());
    ctx.save()?;
    let clock = Instant::now();
    let result = match wave {
        // A wave of one task: it runs in the checkout, as before waves.
        [one] => in_checkout(ctx, number, one, Duration::ZERO),
        _ => run_many(ctx, number, wave),
    };
    if let Some(w) = ctx.state.wave_mut(number) {
        w.close(crate::util::now(), clock.elapsed());
    }
    let saved = ctx.save();
    let done = result?;
    saved?;
    Ok(done)
}

/// Changes wave `number` of the record (saved with the next save).
fn mark(ctx: &mut Ctx, number: u32, f: impl FnOnce(&mut Wave)) {
    if let Some(w) = ctx.state.wave_mut(number) {
        f(w);
    }
}

/// How a task's run ended, as its wave records it: done is landed (in the checkout; a task's
/// tree is landed by [`land`]), blocked is failed, an error stopped it.
fn ended(result: &Result<bool>) -> WaveTaskState {
    match result {
        Ok(true) => WaveTaskState::Landed,
        Ok(false) => WaveTaskState::Failed,
        Err(_) => WaveTaskState::Stopped,
    }
}

pub(super) fn commit_of(ctx: &Ctx, id: &str) -> Option<Sha> {
    task_state(ctx, id).and_then(|s| s.commit.clone())
}

/// Makes `task` pending again, with its attempts counted afresh, before it runs once more on
/// top of the tasks landed before it (a change that no longer applied): said as a
/// `TaskRerun` event and saved, so a crash during the re-run resumes it.
pub(super) fn ready_to_rerun(ctx: &mut Ctx, task: &Task) -> Result<()> {
    events::emit(Event::TaskRerun {
        task: task.id.clone(),
    });
    if let Some(t) = task_mut(ctx, &task.id) {
        t.attempts = 0;
        t.status = TaskStatus::Pending;
    }
    ctx.save()
}

/// Runs `task` in the checkout, as wave `number`'s, after `before` of earlier work on it (a
/// re-run's first go), and records how it ended.
fn in_checkout(ctx: &mut Ctx, number: u32, task: &Task, before: Duration) -> Result<bool> {
    mark(ctx, number, |w| w.start_task(&task.id, None));
    let clock = Instant::now();
    let result = run_task(&Solo::new(ctx), task);
    let commit = commit_of(ctx, &task.id).filter(|_| matches!(result, Ok(true)));
    let state = ended(&result);
    let wall = before + clock.elapsed();
    mark(ctx, number, |w| w.end_task(&task.id, state, wall, commit));
    result
}

/// Runs `wave` (two tasks or more) at once; true when every task is done.
fn run_many(ctx: &mut Ctx, number: u32, wave: &[Task]) -> Result<bool> {
    let main = ctx.forge.git().clone();
    let mut todo: Vec<&Task> = Vec::new();
    let mut all_done = true;
    for task in wave {
        // A task whose commit landed before the state recorded it is adopted, not run again.
        if landed_commit(&Solo::new(ctx), &main, task)?.is_some() {
            all_done &= in_checkout(ctx, number, task, Duration::ZERO)?;
        } else {
            todo.push(task);
        }
    }
    // Every task of the wave, implementation and review, must fit what is left of the budget
    // before any of them starts: the tasks run at once and cannot stop each other.
    super::reserve_budget(ctx, &todo)?;
    let interrupted = todo
        .iter()
        .any(|t| status(ctx, &t.id) == TaskStatus::InProgress);
    if interrupted {
        // A task interrupted in the checkout left its partial changes there.
        main.discard_changes(&KEEP)?;
    }
    let trees = make_trees(ctx, &main, &todo)?;
    for (task, tree) in todo.iter().zip(&trees) {
        events::emit(Event::TaskInTree {
            task: task.id.clone(),
            tree: tree.path().display().to_string(),
        });
        mark(ctx, number, |w| w.start_task(&task.id, None));
    }
    ctx.save()?;
    let results = in_parallel(ctx, &todo, &trees)?;
    let landed = land_all(ctx, number, (&todo, &trees), results);
    drop(trees);
    let (done, again) = landed?;
    all_done &= done;
    for (task, before) in again {
        ready_to_rerun(ctx, task)?;
        all_done &= in_checkout(ctx, number, task, before)?;
    }
    Ok(all_done)
}

/// The trees of `todo`, each at the work branch's HEAD with the checkout's dependency
/// directories linked; on a large checkout each holds only its task's directories and the spec
/// unless `limits.task_trees` is `full` (docs/phases.md#tasks-in-parallel).
fn make_trees(ctx: &Ctx, main: &Git, todo: &[&Task]) -> Result<Vec<TaskTree>> {
    let dependencies = crate::config::AppConfig::dependencies_of(ctx.config.app.as_ref());
    let keep = [ctx.spec_rel()];
    let sparse = tree::sparse_trees(main, ctx.config.limits.task_trees)?;
    let is_dir = |p: &str| {
        main.dir()
            .join(p)
            .symlink_metadata()
            .is_ok_and(|m| m.is_dir())
    };
    todo.iter()
        .map(|t| {
            let shape = tree::Shape {
                cone: sparse
                    .then(|| tree::cone(&t.files, &keep, is_dir))
                    .flatten(),
                dependencies: dependencies.clone(),
            };
            TaskTree::create(main, &t.id, &shape)
        })
        .collect()
}

/// Lands the tasks of `todo` done in their `trees`, in task id order, and records how each
/// ended. Returns whether every task was done, and the tasks to run again on top of the landed
/// ones with the time they took so far; the first error of a task, if any, after recording.
fn land_all<'t>(
    ctx: &mut Ctx,
    number: u32,
    (todo, trees): (&[&'t Task], &[TaskTree]),
    results: Vec<(Result<bool>, Duration)>,
) -> Result<(bool, Vec<(&'t Task, Duration)>)> {
    let mut order: Vec<usize> = (0..todo.len()).collect();
    order.sort_by_key(|&i| tasks::id_order(&todo[i].id));
    let mut all_done = true;
    let mut again = Vec::new();
    for i in order {
        let (result, wall) = &results[i];
        let mut state = ended(result);
        if let Ok(true) = result
            && !land(ctx, todo[i], &trees[i])?
        {
            state = WaveTaskState::Rerun;
            again.push((todo[i], *wall));
        }
        all_done &= !matches!(result, Ok(false));
        let commit = commit_of(ctx, &todo[i].id).filter(|_| state == WaveTaskState::Landed);
        mark(ctx, number, |w| {
            w.end_task(&todo[i].id, state, *wall, commit)
        });
    }
    let failed = results.into_iter().find_map(|(r, _)| r.err());
    match failed {
        Some(e) => Err(e),
        None => Ok((all_done, again)),
    }
}

pub(super) fn status(ctx: &Ctx, id: &str) -> TaskStatus {
    task_state(ctx, id).map_or(TaskStatus::Pending, |s| s.status)
}

/// Runs each task of `todo` in its tree on a thread of its own; the result of each, in order.
/// The checkout is guarded meanwhile (see the module's text).
fn in_parallel(
    ctx: &mut Ctx,
    todo: &[&Task],
    trees: &[TaskTree],
) -> Result<Vec<(Result<bool>, Duration)>> {
    let main = ctx.forge.git().clone();
    let spec_rel = ctx.spec_rel();
    let guard = rooms::before(&main, Room::Nothing, &spec_rel)?;
    let config = ctx.config.clone();
    let redactor = ctx.redactor.clone();
    let clock = Instant::now();
    let results: Vec<(Result<bool>, Duration)> = {
        let shared = Mutex::new(&mut *ctx);
        std::thread::scope(|s| {
            let handles: Vec<_> = todo
                .iter()
                .zip(trees)
                .map(|(task, tree)| {
                    let lane = Shared {
                        ctx: &shared,
                        config: &config,
                        redactor: &redactor,
                        git: tree.git().clone(),
                        width: todo.len(),
                    };
                    s.spawn(move || {
                        let started = Instant::now();
                        let result = run_task(&lane, task);
                        (result, started.elapsed())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        let error = Error::repo(
                            main.dir(),
                            "a task of the wave ended in a panic; its work is discarded and the task runs again on resume",
                        );
                        (Err(error), clock.elapsed())
                    })
                })
                .collect()
        })
    };
    let settled = rooms::settle(&main, &guard)?;
    record_outside(ctx, todo, &settled.outside);
    ctx.save()?;
    Ok(results)
}

/// Records the checkout's paths a wave's agents changed (already undone) as a
/// `sandbox_violation` of each implementer of the wave.
fn record_outside(ctx: &mut Ctx, todo: &[&Task], outside: &[String]) {
    if outside.is_empty() {
        return;
    }
    let ids: Vec<&str> = todo.iter().map(|t| t.id.as_str()).collect();
    let detail = ctx.redactor.redact(&format!(
        "an agent of the wave {} changed the checkout outside its task's worktree, undone: {}",
        ids.join(", "),
        outside[..outside.len().min(5)].join(", ")
    ));
    events::emit(Event::SandboxViolation {
        detail: detail.clone(),
    });
    for task in todo {
        let Some(state) = task_state(ctx, &task.id).cloned() else {
            continue;
        };
        let who = (
            state.kind.role().into(),
            state.implementer.as_str(),
            Some(task.id.as_str().into()),
        );
        ctx.fail(
            Phase::Implement,
            who,
            BlockerCategory::SandboxViolation,
            &detail,
            outside,
        );
    }
}

/// Lands `task`'s commit from its `tree` on the work branch: cherry-picked without committing,
/// then committed with the ticked `tasks.md` as in the checkout. False when it no longer
/// applies (the checkout is left as it was).
fn land(ctx: &mut Ctx, task: &Task, tree: &TaskTree) -> Result<bool> {
    let Some(sha) = tree.git().head() else {
        return Ok(false);
    };
    land_sha(ctx, task, tree.base(), sha.as_str())
}

/// Lands commit `sha` (its objects in the checkout's repository) of `task` on the work branch:
/// what it changed since `base` cherry-picked without committing, then committed with the
/// ticked `tasks.md` as in the checkout. False when it no longer applies (the checkout is left
/// as it was). A wave's tree and a matrix leg's bundle land through here alike.
pub(super) fn land_sha(ctx: &mut Ctx, task: &Task, base: &str, sha: &str) -> Result<bool> {
    let main = ctx.forge.git().clone();
    let work = changed_paths(&main, base, sha)?;
    if main
        .run(&["cherry-pick", "--no-commit", "--allow-empty", sha])
        .is_err()
    {
        // Undo the half-applied pick: the index and the files it touched, nothing else.
        main.run(&["reset", "--quiet", "--merge"])?;
        return Ok(false);
    }
    commit_task(ctx, task, &work)?;
    Ok(true)
}

/// The literal pathspecs of the paths `sha` changed since `base`.
fn changed_paths(git: &Git, base: &str, sha: &str) -> Result<Vec<String>> {
    Ok(changed_files(git, base, sha)?
        .iter()
        .map(|p| format!(":(literal){p}"))
        .collect())
}

/// The repository-relative paths `sha` changed since `base` (renames as a deletion and an
/// addition).
pub(super) fn changed_files(git: &Git, base: &str, sha: &str) -> Result<Vec<String>> {
    let listing = git.run(&["diff", "--name-only", "--no-renames", "-z", base, sha])?;
    Ok(listing
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect())
}
