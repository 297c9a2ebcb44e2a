//! implement: tasks in dependency order, each by the implementer of its kind, each diff reviewed
//! by the opposite agent, one commit per task.
//!
//! Resuming is the normal path: a task found `in_progress` (the process died mid-task) is first
//! matched against history (its commit may have landed before the state did), otherwise its
//! partial changes are discarded and the task starts over, so no commit is ever duplicated.

use std::collections::BTreeSet;

pub mod legs;
mod prompt;
use prompt::{implementer_prompt, reviewer_prompt};
pub mod tree;
mod waves;

use super::lane::{self, Hold};
use super::{Call, Ctx};
use crate::agents::TaskInfo;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::git::Git;
use crate::prompts::Template;
use crate::review::dispute;
use crate::spec::tasks::{self, Task};
use crate::state::{DisputeRecord, Mode, State, TaskState, TaskStatus, Waiting};
use crate::types::ids::{AgentName, Sha};
use crate::types::kinds::{
    Answer, BlockerCategory, CallRole, DisputeEnd, Ruling, TaskKind, WaitKind,
};
use crate::types::{Finding, Outcome, Phase};
use crate::util;

/// The orchestrator's own records live under `.specs/`; discarding an agent's partial work must
/// never delete them.
const KEEP: [&str; 1] = [".specs/"];

/// Runs implement: the tasks in waves (see [`waves`]), each wave the ready tasks that share no
/// target file, at most `limits.parallel_tasks` of them.
pub fn run(ctx: &mut Ctx) -> Result<Outcome> {
    if ctx.state.implement_base.is_none() {
        // The approved spec's commit: where a rubric restart throws the implementation back to.
        ctx.state.implement_base = ctx.forge.git().head();
    }
    // After a review round's spec revision: the tasks that changed run again (only those).
    super::revise::replan(ctx)?;
    // After the spec loop had disputed cases: did it change them?
    settle_disputes(ctx);
    let tasks_path = ctx.feature_dir().join("tasks.md");
    let text = util::read_to_string_max(&tasks_path, crate::fsx::Limit::SpecDoc)?;
    let parsed = tasks::parse(&text);
    let mut ordered = tasks::order(&parsed).map_err(|cycle| Error::Input {
        path: tasks_path.clone(),
        problem: format!(
            "task dependencies form a cycle through {}",
            cycle.join(", ")
        ),
    })?;
    // Fix tasks built from the failed acceptance cases of the last evaluate round, and the fix
    // task of a person's review round after the pull request (`phases::revise`): each comes
    // after every task of tasks.md.
    let extra = [fix_task(ctx), super::revise::task(ctx)];
    for mut t in extra.into_iter().flatten() {
        t.depends = ordered.iter().map(|o| o.id.clone()).collect();
        ordered.push(t);
    }
    record_tasks(ctx, &ordered);
    ctx.save()?;
    // Trees a run killed mid-wave left behind (this run holds the checkout lock).
    tree::sweep(&ctx.forge.git().clone())?;
    let limit = ctx.config.limits.parallel_tasks.max(1) as usize;
    match ctx.waves.clone() {
        legs::Waves::Leg(id) => return legs::run_leg(ctx, &ordered, &id).map(|()| Outcome::Ok),
        legs::Waves::Join(dir) => legs::land(ctx, &ordered, &dir)?,
        // A wave handed out before and never joined (its run cancelled or failed) is handed
        // out afresh below.
        legs::Waves::Jobs => ctx.state.fanout = None,
        legs::Waves::Here => {}
    }
    loop {
        let done: BTreeSet<String> = ctx
            .state
            .tasks
            .iter()
            .filter(|s| s.status == TaskStatus::Done)
            .map(|s| s.id.clone())
            .collect();
        let wave: Vec<Task> = tasks::next_wave(&ordered, &done, limit)
            .into_iter()
            .cloned()
            .collect();
        if wave.is_empty() && !dispute::waiting(&ctx.state).is_empty() {
            return Ok(confirmed_disputes(ctx));
        } else if wave.is_empty() {
            return Ok(Outcome::Ok);
        }
        let blocked = |t: &Task| waves::status(ctx, &t.id) == TaskStatus::Blocked;
        let finished = !wave.iter().any(blocked)
            && match wave.as_slice() {
                [_, _, ..] if ctx.waves != legs::Waves::Here => legs::hand_out(ctx, &wave)?,
                _ => waves::run(ctx, &wave)?,
            };
        if !finished {
            return Ok(Outcome::Blocked);
        }
    }
}

/// Records every task of `ordered` not yet in the state: pending (done when ticked), with the
/// implementer of its kind and the opposite agent as its reviewer.
fn record_tasks(ctx: &mut Ctx, ordered: &[Task]) {
    for t in ordered {
        if task_state(ctx, &t.id).is_none() {
            // A task without exactly one valid kind is an inspect warning; it is implemented as
            // backend work, the implementer that can do anything.
            let kind = t.kind().unwrap_or(TaskKind::Backend);
            let mut state = new_task(&ctx.state, &ctx.config, (&t.id, &t.title), kind, false);
            if t.done {
                state.status = TaskStatus::Done;
            }
            ctx.state.tasks.push(state);
        }
    }
}

/// Task `id` of kind `kind` as the state records it before its first attempt: implemented by
/// the agent playing the kind's role (`swapped`: by the opposite one), reviewed by the other.
pub fn new_task(
    state: &State,
    config: &Config,
    (id, title): (&str, &str),
    kind: TaskKind,
    swapped: bool,
) -> TaskState {
    let normal = super::agent_for(state, config, kind.role());
    let other = config
        .opposite_of(&normal)
        .unwrap_or_else(|| normal.clone());
    let (implementer, reviewer) = if swapped {
        (other, normal)
    } else {
        (normal, other)
    };
    TaskState {
        id: id.into(),
        kind,
        implementer: implementer.into(),
        reviewer: reviewer.into(),
        attempts: 0,
        status: TaskStatus::Pending,
        commit: None,
        blocker: None,
        title: title.into(),
    }
}

/// The disputes the spec loop had (end `spec`) are settled against `test.md` as it is now:
/// revised or unchanged.
fn settle_disputes(ctx: &mut Ctx) {
    if !ctx.state.disputes.iter().any(|d| d.end == DisputeEnd::Spec) {
        return;
    }
    let test_md = ctx.doc("test.md").unwrap_or_default();
    for d in ctx
        .state
        .disputes
        .iter_mut()
        .filter(|d| d.end == DisputeEnd::Spec)
    {
        d.end = dispute::settled(d, &test_md);
    }
}

/// The task reviewer confirmed disputes of the fix task: the cases, not the code, go back.
/// Auto mode sends them to the spec author as open findings (`send_back`, which the machine
/// takes to `spec_generate`); manual mode waits for a person, like an arbitration.
fn confirmed_disputes(ctx: &mut Ctx) -> Outcome {
    let waiting = dispute::waiting(&ctx.state);
    let cases: Vec<String> = waiting
        .iter()
        .map(|i| ctx.state.disputes[*i].case.clone())
        .collect();
    if ctx.state.mode == Mode::Manual {
        let message = format!(
            "the task reviewer confirmed the implementer's dispute of {}: the case cannot pass on a correct build. Answer with `spec-orchestrate arbitrate approve --feature {f}` (the case goes back to the spec), `continue` (the case stands, the fix loop goes on) or `draft`",
            cases.join(", "),
            f = ctx.state.feature
        );
        let choices = vec![Answer::Approve, Answer::Continue, Answer::Draft];
        ctx.state.waiting = Some(Waiting {
            phase: Some(Phase::Implement),
            ..super::waiting(WaitKind::Dispute, message, choices)
        });
        return Outcome::Waiting;
    }
    let findings = dispute::findings_for_spec(&ctx.state);
    for i in waiting {
        ctx.state.disputes[i].end = DisputeEnd::Spec;
    }
    ctx.state.open_findings = findings;
    crate::events::emit(crate::events::Event::Note {
        message: format!(
            "the task reviewer confirmed the dispute of {}: the case goes back to the spec author",
            cases.join(", ")
        ),
    });
    Outcome::SendBack
}

fn fix_task(ctx: &Ctx) -> Option<Task> {
    let last = ctx.state.rounds.evaluate.last()?;
    if last.gate == crate::types::kinds::Gate::Pass || ctx.state.open_findings.is_empty() {
        return None;
    }
    let id = format!("FIX{}", last.round);
    let findings = serde_json::to_string_pretty(&ctx.state.open_findings).unwrap_or_default();
    let restructure = match &ctx.state.evaluate_restructure {
        Some(case) => format!(
            "\nThe acceptance case {case} keeps failing, in a different way each round: do not patch it again. Rework the implementation behind {case} from scratch (restructure it), then make every case pass.\n"
        ),
        None => String::new(),
    };
    Some(Task {
        id: id.clone(),
        title: format!("Fix the failing acceptance cases of round {}", last.round),
        kinds: vec![TaskKind::Backend.as_str().into()],
        text: format!(
            "- [ ] {id}: make the failing acceptance cases pass\n```json\n{findings}\n```{restructure}{}",
            dispute::instructions()
        ),
        ..Task::default()
    })
}

/// The failed cases of the last evaluate round when `task` is its fix task (the cases its
/// implementer may dispute), else `None`.
fn failed_cases(ctx: &Ctx, task: &str) -> Option<Vec<String>> {
    let last = ctx.state.rounds.evaluate.last()?;
    (task == format!("FIX{}", last.round)).then(|| {
        ctx.state
            .open_findings
            .iter()
            .filter(|f| f.file == "test.md")
            .map(|f| f.id.clone())
            .collect()
    })
}

/// Records each dispute of this attempt with the reviewer's ruling on it (none given: rejected,
/// the case stands); a dispute of the same task and case raised again replaces the earlier one.
fn record_rulings(
    ctx: &mut Ctx,
    task: &Task,
    (by, reviewer): (&AgentName, &AgentName),
    disputes: &[dispute::Dispute],
    rulings: &[dispute::RulingOf],
) {
    if disputes.is_empty() {
        return;
    }
    let test_md = ctx.doc("test.md").unwrap_or_default();
    let after_round = ctx.state.rounds.evaluate.last().map_or(0, |r| r.round);
    for d in disputes {
        let ruled = rulings
            .iter()
            .find(|r| r.case.eq_ignore_ascii_case(&d.case));
        let (ruling, answer) = match ruled {
            Some(r) => (r.ruling, r.argument.clone()),
            None => (
                Ruling::Rejected,
                "(the reviewer gave no ruling)".to_string(),
            ),
        };
        crate::events::emit(crate::events::Event::Note {
            message: format!("{}: dispute of {} {ruling} by {reviewer}", task.id, d.case),
        });
        let record = DisputeRecord {
            case: d.case.clone(),
            task: task.id.clone(),
            after_round,
            by: by.clone(),
            argument: d.argument.clone(),
            evidence: d.evidence.clone(),
            reviewer: reviewer.clone(),
            ruling,
            answer,
            case_hash: dispute::case_hash(&test_md, &d.case).unwrap_or_default(),
            end: match ruling {
                Ruling::Confirmed => DisputeEnd::Waiting,
                Ruling::Rejected => DisputeEnd::FixLoop,
            },
            decided_by: None,
        };
        ctx.state
            .disputes
            .retain(|r| !(r.task == record.task && r.case == record.case));
        ctx.state.disputes.push(record);
    }
}

fn task_state<'a>(ctx: &'a Ctx, id: &str) -> Option<&'a TaskState> {
    ctx.state.tasks.iter().find(|s| s.id == id)
}

fn task_mut<'a>(ctx: &'a mut Ctx, id: &str) -> Option<&'a mut TaskState> {
    ctx.state.tasks.iter_mut().find(|s| s.id == id)
}

/// The commit that already holds `task`, when it landed before the state recorded it (killed
/// between the two): found on `git`'s branch since the run's base by its subject.
fn landed_commit<H: Hold>(h: &H, git: &Git, task: &Task) -> Result<Option<Sha>> {
    let base = h.with(|c| {
        super::revise::adoption_base(c, &task.id)
            .or_else(|| c.state.base_commit.clone().map(String::from))
    });
    git.find_commit(base.as_deref(), &format!("{}: ", task.id))
}

/// Runs one task to done (true) or blocked (false), in `h`'s checkout: the run's own (the
/// task's commit lands on the work branch) or the task's worktree (the commit stays on the
/// tree's branch until [`waves`] lands it).
fn run_task<H: Hold>(h: &H, task: &Task) -> Result<bool> {
    let git = h.git().clone();
    if let Some(sha) = landed_commit(h, &git, task)? {
        h.with(|c| {
            finish(c, &task.id, sha);
            c.save()
        })?;
        return Ok(true);
    }
    let Some(state) = h.with(|c| task_state(c, &task.id).cloned()) else {
        return Ok(false);
    };
    if state.status == TaskStatus::InProgress {
        crate::events::emit(crate::events::Event::TaskResumed {
            task: task.id.clone(),
        });
        git.discard_changes(&KEEP)?;
    }
    let max = h.with(|c| c.config.limits.task_attempts);
    let mut findings: Vec<Finding> = Vec::new();
    // Every path the task's implementer changed in its room, over all attempts: what the
    // task's commit holds.
    let mut paths: BTreeSet<String> = BTreeSet::new();
    let mut attempt = state.attempts;
    while attempt < max {
        attempt += 1;
        h.with(|c| -> Result<()> {
            reserve_budget(c, &[task])?;
            if let Some(t) = task_mut(c, &task.id) {
                t.attempts = attempt;
                t.status = TaskStatus::InProgress;
            }
            c.save()
        })?;
        match attempt_task(h, &git, task, &state, (attempt, &mut paths), &findings)? {
            Attempted::Settled(done) => return Ok(done),
            Attempted::Fixes(required) => findings = required,
        }
    }
    h.with(|c| block(c, &git, &task.id, BlockerCategory::ReviewRejected))
}

/// How one attempt at a task ended.
enum Attempted {
    /// `run_task` is decided: committed (true) or blocked (false, already recorded).
    Settled(bool),
    /// The reviewer requires these fixes; the next attempt is given them.
    Fixes(Vec<Finding>),
}

/// A task is two calls (implementation, then its review): the budget is checked for both, for
/// every task of `tasks` at once (a wave's), before the first, so that a stop never strands
/// paid work without its review.
fn reserve_budget(ctx: &Ctx, tasks: &[&Task]) -> Result<()> {
    let mut calls: Vec<(AgentName, &str)> = Vec::new();
    for task in tasks {
        if let Some(s) = task_state(ctx, &task.id) {
            calls.push((s.implementer.clone(), task.text.as_str()));
            calls.push((s.reviewer.clone(), ""));
        }
    }
    let planned: Vec<(&str, &str)> = calls.iter().map(|(a, p)| (a.as_str(), *p)).collect();
    if planned.is_empty() {
        return Ok(());
    }
    ctx.ensure_budget(Phase::Implement, &planned)
}

/// One attempt: the implementer works on the task (given the fixes the previous review
/// required), then a reviewer reads the diff git measured of the paths the implementer changed
/// in its room (`paths`, over every attempt so far). Accepted work is committed.
fn attempt_task<H: Hold>(
    h: &H,
    git: &Git,
    task: &Task,
    state: &TaskState,
    (attempt, paths): (u32, &mut BTreeSet<String>),
    findings: &[Finding],
) -> Result<Attempted> {
    let info = TaskInfo {
        id: task.id.clone(),
        kind: state.kind.into(),
        title: task.title.clone(),
    };
    let (spec_dir, prompt, [implementer, reviewer]) = h.with(|c| {
        let spec_dir = c.spec_rel();
        let prompt = implementer_prompt(c, task, state, (&spec_dir, git.is_sparse()), findings);
        let agents = task_state(c, &task.id)
            .map(|s| [s.implementer.to_string(), s.reviewer.to_string()])
            .unwrap_or_default();
        (spec_dir, prompt, agents)
    });
    let call = Call {
        writes: true,
        task: Some(info.clone()),
        ..Call::new(state.kind.role(), &implementer, attempt, prompt)
    };
    let (reply, changed) = lane::call_in_room(h, &call, Phase::Implement)?;
    paths.extend(changed);
    let reply = match reply {
        Ok(r) => r,
        Err(e) => {
            return h
                .with(|c| block(c, git, &task.id, e.category))
                .map(Attempted::Settled);
        }
    };
    if reply.status == crate::agents::ReplyStatus::Blocked {
        return h
            .with(|c| block(c, git, &task.id, BlockerCategory::ReviewRejected))
            .map(Attempted::Settled);
    }
    // What changed is measured by git, not taken from the agent's word.
    let work = work_paths(git, paths);
    let diff = if work.is_empty() {
        String::new()
    } else {
        git.diff_worktree(&as_strs(&work))?
    };
    let answer = reply.summary.clone().unwrap_or_else(|| reply.text.clone());
    let disputes = match h.with(|c| failed_cases(c, &task.id)) {
        Some(failed) => dispute::parse(&answer, &failed),
        None => Vec::new(),
    };
    let review_prompt = h.with(|c| {
        reviewer_prompt(
            c,
            task,
            (&spec_dir, git.is_sparse()),
            &diff,
            (findings, &answer, &dispute::review_block(&disputes)),
        )
    });
    let review = Call {
        task: Some(info),
        ..Call::new(CallRole::TaskReviewer, &reviewer, attempt, review_prompt)
    };
    let parse = &dispute::parse_review;
    let reviewed = match lane::read_only(h, &review, Phase::Implement, parse, |_| {})? {
        Ok(r) => r,
        Err(failure) => {
            return h
                .with(|c| block(c, git, &task.id, failure.category))
                .map(Attempted::Settled);
        }
    };
    h.with(|c| {
        record_rulings(
            c,
            task,
            (&implementer.as_str().into(), &reviewer.as_str().into()),
            &disputes,
            &reviewed.rulings,
        )
    });
    let findings: Vec<Finding> = reviewed
        .envelope
        .findings
        .into_iter()
        .filter(|f| f.severity.fix_required())
        .collect();
    accept_or_send_back(h, git, task, (&work, &answer), (reviewer, findings))
}

/// The review's outcome: with no fix required the work is committed (in the checkout, or on
/// the task's branch in its worktree) and the task is settled; otherwise the findings go back
/// to the implementer for the next attempt.
fn accept_or_send_back<H: Hold>(
    h: &H,
    git: &Git,
    task: &Task,
    (work, answer): (&[String], &str),
    (reviewer, findings): (String, Vec<Finding>),
) -> Result<Attempted> {
    if findings.is_empty() {
        h.with(|c| super::revise::answered(c, &task.id, answer));
        if h.in_checkout() {
            h.with(|c| commit_task(c, task, work))?;
        } else {
            // In a task's worktree: committed on its branch, landed by the wave.
            let message = commit_message(h.with(|c| c.state.issue.number), &task.id, &task.title);
            git.commit_paths_or_empty(&message, &as_strs(work))?;
        }
        return Ok(Attempted::Settled(true));
    }
    crate::events::emit(crate::events::Event::TaskFixesRequired {
        task: task.id.clone(),
        reviewer: reviewer.into(),
        count: findings.len(),
    });
    Ok(Attempted::Fixes(findings))
}

/// The subject of a commit of the run: `<what>: <title> (#<issue>)`.
pub(super) fn commit_message(
    issue: Option<crate::types::ids::IssueNumber>,
    what: &str,
    title: &str,
) -> String {
    match issue {
        Some(n) => format!("{what}: {title} (#{n})"),
        None => format!("{what}: {title}"),
    }
}

/// Commits the task: its implementer's `work` (pathspecs of [`work_paths`]) and the ticked
/// `tasks.md`, nothing else — not what another role or a test command left in the tree.
fn commit_task(ctx: &mut Ctx, task: &Task, work: &[String]) -> Result<()> {
    if let Some(text) = ctx.doc("tasks.md") {
        let ticked = tasks::tick(&text, &task.id);
        if ticked != text {
            util::write_text(&ctx.feature_dir().join("tasks.md"), &ticked)?;
        }
    }
    let message = commit_message(ctx.state.issue.number, &task.id, &task.title);
    let git = ctx.forge.git().clone();
    let mut pathspecs = vec![format!(":(literal){}/tasks.md", ctx.spec_rel())];
    pathspecs.extend(work.iter().cloned());
    let sha = git.commit_paths_or_empty(&message, &as_strs(&pathspecs))?;
    crate::events::emit(crate::events::Event::TaskCommitted {
        task: task.id.clone(),
        commit: sha.chars().take(10).collect(),
    });
    finish(ctx, &task.id, sha);
    ctx.save()
}

/// The literal pathspecs of the implementer's changed `paths` that git can stage: a file
/// that exists, or one HEAD has (its deletion). A file made and removed again within the task
/// is left out (git would refuse a pathspec matching nothing).
fn work_paths(git: &Git, paths: &BTreeSet<String>) -> Vec<String> {
    paths
        .iter()
        .filter(|p| {
            git.dir().join(p).symlink_metadata().is_ok()
                || git.run(&["cat-file", "-e", &format!("HEAD:{p}")]).is_ok()
        })
        .map(|p| format!(":(literal){p}"))
        .collect()
}

fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Records commit `sha` of `what` (the spec, a task) as the work branch's head.
pub(super) fn committed(ctx: &mut Ctx, what: &str, sha: Sha) {
    let (what, commit) = (what.to_string(), sha.clone());
    ctx.state
        .job
        .record(crate::state::job::Effect::Commit { what, sha: commit });
    if let Some(b) = ctx.state.branch.as_mut() {
        b.head = Some(sha);
    }
}

fn finish(ctx: &mut Ctx, id: &str, sha: Sha) {
    committed(ctx, id, sha.clone());
    if let Some(t) = task_mut(ctx, id) {
        t.status = TaskStatus::Done;
        t.commit = Some(sha);
        t.blocker = None;
    }
}

/// Blocks task `id` for `category`: its partial work in `git`'s checkout is discarded, the
/// run's draft says why.
fn block(ctx: &mut Ctx, git: &Git, id: &str, category: BlockerCategory) -> Result<bool> {
    crate::events::emit(crate::events::Event::TaskBlocked {
        task: id.to_string(),
        category,
    });
    git.discard_changes(&KEEP)?;
    if let Some(t) = task_mut(ctx, id) {
        t.status = TaskStatus::Blocked;
        t.blocker = Some(category);
    }
    ctx.state
        .draft_reasons
        .push(format!("task {id} blocked: {category}"));
    ctx.save()?;
    Ok(false)
}

#[cfg(test)]
mod tests;
