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

use super::tree::TaskTree;
use super::{KEEP, Task, commit_task, landed_commit, run_task, task_mut};
use crate::agents::rooms::{self, Room};
use crate::error::{Error, Result};
use crate::events::{self, Event};
use crate::git::Git;
use crate::phases::Ctx;
use crate::phases::lane::{Shared, Solo};
use crate::spec::tasks;
use crate::state::{AgentFailure, TaskStatus};
use crate::types::Phase;
use crate::types::kinds::{BlockerCategory, CallRole};

/// Runs `wave` (two tasks or more) at once; true when every task is done.
pub(super) fn run(ctx: &mut Ctx, wave: &[Task]) -> Result<bool> {
    let main = ctx.forge.git().clone();
    let mut todo: Vec<&Task> = Vec::new();
    for task in wave {
        // A task whose commit landed before the state recorded it is adopted, not run again.
        if landed_commit(&Solo::new(ctx), &main, task)?.is_some() {
            run_task(&Solo::new(ctx), task)?;
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
    let trees = todo
        .iter()
        .map(|t| TaskTree::create(&main, &t.id))
        .collect::<Result<Vec<TaskTree>>>()?;
    for (task, tree) in todo.iter().zip(&trees) {
        events::emit(Event::TaskInTree {
            task: task.id.clone(),
            tree: tree.path().display().to_string(),
        });
    }
    let results = in_parallel(ctx, &todo, &trees)?;
    let mut order: Vec<usize> = (0..todo.len()).collect();
    order.sort_by_key(|&i| tasks::id_order(&todo[i].id));
    let mut all_done = true;
    let mut again: Vec<&Task> = Vec::new();
    let mut failed: Option<Error> = None;
    for i in order {
        match &results[i] {
            Ok(true) => {
                if !land(ctx, todo[i], &trees[i])? {
                    again.push(todo[i]);
                }
            }
            Ok(false) => all_done = false,
            Err(_) => {}
        }
    }
    for r in results {
        if let Err(e) = r {
            failed.get_or_insert(e);
        }
    }
    drop(trees);
    if let Some(e) = failed {
        return Err(e);
    }
    for task in again {
        events::emit(Event::TaskRerun {
            task: task.id.clone(),
        });
        if let Some(t) = task_mut(ctx, &task.id) {
            t.attempts = 0;
            t.status = TaskStatus::Pending;
        }
        ctx.save()?;
        all_done &= run_task(&Solo::new(ctx), task)?;
    }
    Ok(all_done)
}

/// The status the state records for task `id`.
fn status(ctx: &Ctx, id: &str) -> TaskStatus {
    ctx.state
        .tasks
        .iter()
        .find(|s| s.id == id)
        .map_or(TaskStatus::Pending, |s| s.status)
}

/// Runs each task of `todo` in its tree on a thread of its own; the result of each, in order.
/// The checkout is guarded meanwhile (see the module's text).
fn in_parallel(ctx: &mut Ctx, todo: &[&Task], trees: &[TaskTree]) -> Result<Vec<Result<bool>>> {
    let main = ctx.forge.git().clone();
    let spec_rel = ctx.spec_rel();
    let guard = rooms::before(&main, Room::Nothing, &spec_rel)?;
    let config = ctx.config.clone();
    let redactor = ctx.redactor.clone();
    let results: Vec<Result<bool>> = {
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
                    s.spawn(move || run_task(&lane, task))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::repo(
                            main.dir(),
                            "a task of the wave ended in a panic; its work is discarded and the task runs again on resume",
                        ))
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
        outside
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    ));
    events::emit(Event::SandboxViolation {
        detail: detail.clone(),
    });
    for task in todo {
        let Some(state) = ctx.state.tasks.iter().find(|s| s.id == task.id) else {
            continue;
        };
        let failure = AgentFailure {
            phase: Phase::Implement,
            role: CallRole::Role(state.kind.role()),
            agent: state.implementer.clone(),
            category: BlockerCategory::SandboxViolation,
            detail: detail.clone(),
            paths: outside.iter().map(|p| ctx.redactor.redact(p)).collect(),
            ts: crate::util::now(),
        };
        ctx.state.agent_failures.push(failure);
    }
}

/// Lands `task`'s commit from its `tree` on the work branch: cherry-picked without committing,
/// then committed with the ticked `tasks.md` as in the checkout. False when it no longer
/// applies (the checkout is left as it was).
fn land(ctx: &mut Ctx, task: &Task, tree: &TaskTree) -> Result<bool> {
    let main = ctx.forge.git().clone();
    let Some(sha) = tree.git().head() else {
        return Ok(false);
    };
    let work = changed_paths(tree.git(), tree.base(), sha.as_str())?;
    if main
        .run(&["cherry-pick", "--no-commit", "--allow-empty", sha.as_str()])
        .is_err()
    {
        // Undo the half-applied pick: the index and the files it touched, nothing else.
        main.run(&["reset", "--quiet", "--merge"])?;
        return Ok(false);
    }
    commit_task(ctx, task, &work)?;
    Ok(true)
}

/// The literal pathspecs of the paths `sha` changed since `base` (renames as a deletion and
/// an addition).
fn changed_paths(git: &Git, base: &str, sha: &str) -> Result<Vec<String>> {
    let listing = git.run(&["diff", "--name-only", "--no-renames", "-z", base, sha])?;
    Ok(listing
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(|p| format!(":(literal){p}"))
        .collect())
}
