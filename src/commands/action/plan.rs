//! The job planned as data: which steps a job takes, decided from the event, the status
//! comment's marker, the restored state and the runner's facts, with no forge, process or disk.
//!
//! Every decision of the job that can be made without doing anything lives here and is
//! table-tested (`plan/tests.rs`); the executor (`exec.rs`) only carries the steps out.

use std::time::Duration;

use super::env::ActionEnv;
use crate::commands::Exit;
use crate::config::JobsMode;
use crate::error::ErrorKind;
use crate::forge::github::Permission;
use crate::forge::github::event::{self, Actor, Trigger};
use crate::state::State;
use crate::state::job::{EarlierPhase, JobRun};
use crate::store;
use crate::types::ids::{CommentId, IssueNumber, PrNumber, RunId};
use crate::types::kinds::{JobOutcome, PhaseOutcome, WaitKind};
use crate::types::{Outcome, Phase};

/// How the phase process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PhaseEnd {
    /// It exited with this code: 0 paused/waiting/done, 1 draft, 2 and up an error whose kind
    /// the code names (see `ErrorKind::exit_code`).
    Exited(i32),
    /// It was stopped at the job's time budget; the phase resumes in the next job.
    Budget,
    /// It died from a signal.
    Killed(i32),
}

/// What happens after this job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum AfterJob {
    Dispatch,
    /// A person must answer; the message says how.
    Wait(String),
    Done,
    /// A budget or spend-cap stop (`state.stop`): a draft was landed, a person must act.
    OverBudget(String),
    /// A wave of `implement` was handed out (`state.fanout`): these tasks go to the workflow's
    /// matrix legs, one runner each, and the run's join continues the chain; nothing is
    /// dispatched.
    HandOut(Vec<String>),
}

/// Which checkpoint a job continues, or why it does nothing; decided from the event and the
/// status comment alone, before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Resume {
    /// Go on from this run's checkpoint; `None` starts a fresh run.
    From(Option<RunId>),
    /// End the job quietly, saying why.
    Nothing(String),
    /// Reply on the issue and end the job.
    Refuse(String),
}

/// What this job's phase step did, for the publishing and reporting steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Ran {
    pub(super) issue: IssueNumber,
    /// The phases that ran and ended before `phase` (phases that call no agent riding along
    /// with the one that does), with their outcomes; empty with `github.jobs: per_phase`.
    pub(super) earlier: Vec<EarlierPhase>,
    /// The last phase that ran (or was due, when a command halted the chain).
    pub(super) phase: Phase,
    pub(super) end: PhaseEnd,
    /// A command's message when it halted the chain: nothing ran, nothing is dispatched.
    pub(super) halt: Option<String>,
    /// The status comment to edit, if the issue has one.
    pub(super) comment_id: Option<CommentId>,
    /// The pull request was already published during the phase steps.
    pub(super) pr_published: bool,
}

impl Ran {
    /// Every phase the job ran, in order.
    pub(super) fn phases(&self) -> Vec<Phase> {
        self.earlier
            .iter()
            .map(|e| e.phase)
            .chain([self.phase])
            .collect()
    }

    /// The phases as the headline names them: `spec_review → approval`.
    pub(super) fn label(&self) -> String {
        let names: Vec<&str> = self.phases().iter().map(|p| p.as_str()).collect();
        names.join(" → ")
    }
}

/// The login of the workflow's own `GITHUB_TOKEN` (GitHub docs, "GITHUB_TOKEN": a GitHub App
/// installation token of the GitHub Actions app), on github.com and Enterprise Server alike.
pub const ACTIONS_BOT: &str = "github-actions[bot]";

/// Why CI will not run on the pull request, when the token is the workflow's `GITHUB_TOKEN`:
/// "events triggered by the GITHUB_TOKEN, with the exception of workflow_dispatch and
/// repository_dispatch, will not create a new workflow run" (GitHub docs, "Triggering a workflow
/// from a workflow"), so neither opening the pull request nor pushing to its branch starts the
/// repository's CI. A GitHub App installation token or a personal access token does.
pub(super) fn ci_note(identity: Option<&str>) -> Option<String> {
    (identity == Some(ACTIONS_BOT)).then(|| {
        "CI will not run on this pull request on its own: spec-orchestrate opens and pushes it with the workflow's GITHUB_TOKEN, and GitHub starts no workflow for events that token causes. To run CI now, close and reopen the pull request, or push a commit to its branch, yourself. To have CI run on every pull request of spec-orchestrate, pass a GitHub App installation token or a fine-grained personal access token as `github_token` (the workflow .github/workflows/spec-orchestrate.yml has a commented `actions/create-github-app-token` step for it).".to_string()
    })
}

/// The title of every run of issue `issue`: the written workflow's `run-name` evaluates to it
/// (`run-name: "spec-orchestrate: issue #${{ github.event.issue.number || inputs.issue }}"`),
/// so a dispatched run can be told apart by its `display_title` where GitHub does not return
/// the run of a dispatch (GitHub Enterprise Server 3.20 and older).
pub fn run_title(issue: IssueNumber) -> String {
    format!("spec-orchestrate: issue #{issue}")
}

/// What follows a phase that ended as `end` and left `state`.
pub(super) fn next_of(state: &State, end: PhaseEnd) -> AfterJob {
    if end == PhaseEnd::Budget {
        return AfterJob::Dispatch;
    }
    if state.phase() == Phase::Done {
        return AfterJob::Done;
    }
    if let Some(w) = &state.waiting {
        return AfterJob::Wait(w.message.clone());
    }
    if let Some(stop) = &state.stop {
        return AfterJob::OverBudget(stop.message.clone());
    }
    match &state.fanout {
        Some(f) if f.run.is_none() => AfterJob::HandOut(f.tasks.clone()),
        _ => AfterJob::Dispatch,
    }
}

/// What follows a job that can hand a wave to the matrix (`fan_out`: the chain's job of a
/// workflow with legs and a join) or cannot (a join, whose run has no legs after it: the next
/// run's job hands the wave out again).
pub(super) fn hand_out_or_dispatch(next: AfterJob, fan_out: bool) -> AfterJob {
    match next {
        AfterJob::HandOut(_) if !fan_out => AfterJob::Dispatch,
        other => other,
    }
}

/// Why a matrix leg or the join of run `run_id` does nothing although its run handed a wave
/// out: the status comment's head is no longer this run (a command or another run took the
/// chain over), or this run's join already recorded the chain's next run (`next=`): a join run
/// again lands nothing twice and dispatches no second successor.
pub(super) fn wave_ending(
    issue: IssueNumber,
    head: Option<RunId>,
    next: Option<RunId>,
    run_id: RunId,
    attempt: u32,
) -> Option<Ending> {
    if head != Some(run_id) {
        return Some(Ending::Nothing(format!(
            "superseded: the newest checkpoint of issue #{issue} is {}, not run {run_id}'s; its wave is not landed",
            head.map_or("none".to_string(), |h| format!("run {h}'s"))
        )));
    }
    let next = next.filter(|n| *n != run_id)?;
    Some(Ending::NotNext(format!(
        "this run's wave was landed and run {next} continues the chain of issue #{issue}; attempt {attempt} lands nothing twice and dispatches no second successor"
    )))
}

/// Why the matrix leg of `task` has nothing to do in `state` (the checkpoint it restored), if
/// it has not: the run handed out no wave with that task, or the task is done already (landed
/// by the run's join: a leg run again after the join commits nothing).
pub(super) fn leg_ending(state: &State, run_id: RunId, task: &str) -> Option<Ending> {
    let in_wave = state
        .fanout
        .as_ref()
        .is_some_and(|f| f.run == Some(run_id) && f.tasks.iter().any(|t| t == task));
    if !in_wave {
        return Some(Ending::Nothing(format!(
            "run {run_id} handed out no wave with task {task}"
        )));
    }
    let done = state
        .tasks
        .iter()
        .any(|t| t.id == task && t.status == crate::state::TaskStatus::Done);
    done.then(|| {
        Ending::Nothing(format!(
            "{task} is done already; the leg commits nothing twice"
        ))
    })
}

/// The run whose matrix legs work on the wave `state` handed out, while that run may still
/// land it (`running`: GitHub says the run is not completed): a chain job then leaves its
/// command to that run's join, which reads the comments posted since the last job. A wave
/// whose run completed without landing it (cancelled, failed and not re-run) is stale, and
/// `implement` hands it out afresh.
pub(super) fn wave_in_flight(state: &State, running: impl FnOnce(RunId) -> bool) -> Option<RunId> {
    let run = state.fanout.as_ref()?.run?;
    running(run).then_some(run)
}

/// The one-line status of the chain after this job, for the comment, the summary and the log;
/// `ran` names the phases the job ran.
pub(super) fn headline(state: &State, ran: &str, outcome: JobOutcome, next: &AfterJob) -> String {
    match next {
        AfterJob::Dispatch if outcome.continues() => format!(
            "{ran} ran out of this job's time; it continues in a new run from the checkpoint"
        ),
        AfterJob::Dispatch => format!("{ran}: {outcome}. Next: {}, in a new run.", state.phase()),
        AfterJob::Done => {
            if state.pr.as_ref().is_some_and(|p| p.draft) {
                "Done: the pull request is a draft (see why in its body).".into()
            } else {
                "Done: the pull request is ready for review.".into()
            }
        }
        AfterJob::OverBudget(why) => format!(
            "Stopped, with a draft pull request: {why} Then comment `/spec-orchestrate continue`."
        ),
        AfterJob::HandOut(tasks) => format!(
            "{ran}: the wave {} runs on {} runners, one task each; this run's join lands it and continues the chain.",
            tasks.join(", "),
            tasks.len()
        ),
        AfterJob::Wait(message) => match state.waiting.as_ref().map(|w| w.kind) {
            Some(WaitKind::Approval) => format!(
                "Waiting for approval: the spec on branch `{}` passed review. Read it, then comment `/spec-orchestrate approve`.",
                state
                    .branch
                    .as_ref()
                    .map(|b| b.name.as_str())
                    .unwrap_or("-")
            ),
            Some(WaitKind::Arbitration) => format!(
                "Waiting for a decision: {message}. Comment `/spec-orchestrate continue`, `swap`, `draft` or `approve`."
            ),
            _ => format!("Waiting: {message}"),
        },
    }
}

/// The person or bot whose permission decides whether the job acts. A dispatch is the chain's
/// own (or came from someone who could run the workflow), so it is not checked again.
pub(super) fn actor_of(trigger: &Trigger) -> Option<&Actor> {
    match trigger {
        Trigger::Labeled { actor, .. } | Trigger::Command { actor, .. } => Some(actor),
        _ => None,
    }
}

/// Why a bot may not drive a run: it is not listed in `github.allowed_bots`.
pub(super) fn bot_refusal(allowed_bots: &[String], actor: &Actor) -> Option<String> {
    (!allowed_bots.contains(&actor.login)).then(|| {
        format!(
            "@{} is a bot that is not listed in `github.allowed_bots` of .specs/pipeline.yml",
            actor.login
        )
    })
}

/// Why a person may not drive a run: less than write access.
pub(super) fn permission_refusal(actor: &Actor, p: &Permission) -> Option<String> {
    (!p.can_write()).then(|| {
        format!(
            "@{} has `{}` access to this repository; starting or steering spec-orchestrate needs write, maintain or admin",
            actor.login,
            p.level()
        )
    })
}

/// The reply to `/spec-orchestrate <word>` when the word is not a command.
pub(super) fn unknown_command(trigger: &Trigger) -> Option<String> {
    let Trigger::Command {
        command: Err(word), ..
    } = trigger
    else {
        return None;
    };
    let names: Vec<&str> = event::Command::ALL.iter().map(|c| c.as_str()).collect();
    Some(format!(
        "`/spec-orchestrate {word}` is not a command; use one of: {}",
        names.join(", ")
    ))
}

/// Whether a run's workflow `path` (`.github/workflows/x.yml`, maybe with `@ref`) is the file
/// this job runs (`workflow_file`, when the runner named it).
pub(super) fn is_this_workflow(path: Option<&str>, workflow_file: Option<&str>) -> bool {
    let Some(path) = path else {
        return false;
    };
    let path = path.split('@').next().unwrap_or_default();
    workflow_file.is_none_or(|f| path.strip_prefix(".github/workflows/") == Some(f))
}

/// What the job knows before it writes anything: the event, who caused it, what the status
/// comment says, and the runner's facts.
#[derive(Debug, Clone)]
pub(super) struct Facts<'a> {
    pub(super) trigger: &'a Trigger,
    pub(super) issue: IssueNumber,
    /// Why whoever caused the event may not drive a run, or why their command is none.
    pub(super) refusal: Option<String>,
    /// The run holding the chain's newest finalized checkpoint, as the status comment's marker
    /// names it (only a run of this workflow counts).
    pub(super) head: Option<RunId>,
    /// The run the marker recorded as the chain's next (`next=`).
    pub(super) next: Option<RunId>,
    pub(super) run_id: RunId,
    /// This job's attempt (`GITHUB_RUN_ATTEMPT`): 2 and up is a re-run.
    pub(super) attempt: u32,
    /// The label that starts a run (`github.trigger_label`).
    pub(super) trigger_label: &'a str,
}

/// Where the run of a job comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Source {
    /// Runs whose newest checkpoint is restored: the first of them that has one.
    pub(super) runs: Vec<RunId>,
    /// Start a new run when none of `runs` has a checkpoint (always so when `runs` is empty).
    pub(super) or_fresh: bool,
}

/// How a job ends without opening the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ending {
    /// End quietly, saying why.
    Nothing(String),
    /// Reply on the issue (once per run) and end.
    Refuse(String),
    /// This run is not the one the chain recorded as next: end without agent calls, the job
    /// summary says why, so a second dispatch of the same step never forks the chain.
    NotNext(String),
}

/// What steers the run between catching up on the comments and its phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Steer {
    /// Nothing more: the chain goes on.
    Chain,
    /// The command of the comment that started this job.
    Command,
    /// The review round of this pull request: its unresolved threads and the review bodies not
    /// yet taken, through `machine::answer::take_round`.
    Review(PrNumber),
}

/// What a job of the chain does, decided before it writes anything. The executor (`exec.rs`)
/// carries a chain job out as one straight line, each step taking what the one before it
/// returned: open the run from `source`, catch up on the comments, apply `steer`, run the
/// phases that are due and publish what they left, then checkpoint, point the status comment
/// at it, dispatch the next job and report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Plan {
    /// End at once, opening nothing.
    End(Ending),
    /// Continue (or start) the run.
    Chain { source: Source, steer: Steer },
}

impl Plan {
    /// The plan's steps by name, for the log.
    pub(super) fn describe(&self) -> String {
        match self {
            Plan::End(Ending::Nothing(_)) => "nothing".into(),
            Plan::End(Ending::Refuse(_)) => "refuse".into(),
            Plan::End(Ending::NotNext(_)) => "not-next".into(),
            Plan::Chain { steer, .. } => {
                let steer = match steer {
                    Steer::Chain => "",
                    Steer::Command => " → command",
                    Steer::Review(_) => " → take-review",
                };
                format!("open → catch-up{steer} → phases → report")
            }
        }
    }
}

/// The plan of a job, decided from what it knows before it writes anything.
pub(super) fn plan(f: &Facts) -> Plan {
    if let Some(reason) = &f.refusal {
        return Plan::End(Ending::Refuse(reason.clone()));
    }
    let parent = match resume_from(f.trigger, f.issue, f.head, f.run_id, f.trigger_label) {
        // The head's job recorded this dispatched run as its next (`next=`): it continues the
        // head, whatever parent its inputs name. A re-run adopts the run an earlier attempt
        // dispatched by its title (runs do not show their inputs), so the adopted run may
        // name an older parent; it must not end the chain as superseded.
        _ if matches!(f.trigger, Trigger::Dispatch { .. })
            && f.next == Some(f.run_id)
            && f.head.is_some() =>
        {
            f.head
        }
        Resume::From(parent) => parent,
        Resume::Nothing(why) => return Plan::End(Ending::Nothing(why)),
        Resume::Refuse(reason) => return Plan::End(Ending::Refuse(reason)),
    };
    if let Some(why) = not_next(f) {
        return Plan::End(Ending::NotNext(why));
    }
    let steer = match f.trigger {
        Trigger::Command { .. } => Steer::Command,
        Trigger::Dispatch {
            review: Some(pr), ..
        } => Steer::Review(*pr),
        _ => Steer::Chain,
    };
    Plan::Chain {
        source: source_of(f, parent),
        steer,
    }
}

/// Why this run must not continue the chain although its checkpoint is the chain's head: the
/// chain recorded another run as next. Either this is a re-run of a job whose successor was
/// dispatched (that run goes on), or it is a second successor of the same job (a dispatch
/// whose answer was lost and sent again). A hand-made dispatch (no `parent_run`) and a
/// command are a person's decision and are not checked.
fn not_next(f: &Facts) -> Option<String> {
    let next = f.next.filter(|n| *n != f.run_id)?;
    if f.head == Some(f.run_id) {
        return Some(format!(
            "run {next} continues the chain of issue #{} from this run's checkpoint; attempt {} of run {} does not run it twice",
            f.issue, f.attempt, f.run_id
        ));
    }
    match f.trigger {
        Trigger::Dispatch {
            parent_run: Some(p),
            ..
        } if f.head == Some(*p) => Some(format!(
            "duplicate successor: run {p} recorded run {next} as the next run of issue #{}, not this run {}; this run does no work, so the chain does not fork",
            f.issue, f.run_id
        )),
        _ => None,
    }
}

/// Where the run comes from: the checkpoint [`resume_from`] chose, preceded by this run's own
/// when the marker names this run (a re-run after its first attempt finalized a checkpoint:
/// the newest of the chain). A label's job starts over when no checkpoint exists.
fn source_of(f: &Facts, parent: Option<RunId>) -> Source {
    let mut runs = Vec::new();
    if f.head == Some(f.run_id) {
        runs.push(f.run_id);
    }
    runs.extend(parent.filter(|p| *p != f.run_id));
    Source {
        or_fresh: runs.is_empty() || matches!(f.trigger, Trigger::Labeled { .. }),
        runs,
    }
}

/// Which checkpoint the job continues: a label starts a run only on an issue without one, a
/// command steers the newest, and a dispatch continues its parent unless a newer run (a command,
/// or another chain) took over. `head` is the checkpoint the status comment names, `run_id` this
/// job's run.
pub(super) fn resume_from(
    trigger: &Trigger,
    issue: IssueNumber,
    head: Option<RunId>,
    run_id: RunId,
    trigger_label: &str,
) -> Resume {
    match trigger {
        Trigger::Labeled { .. } => {
            // A re-run of the label's job whose first attempt finalized a checkpoint (the
            // marker names a checkpoint only once it exists): it goes on from there.
            if head == Some(run_id) {
                return Resume::From(head);
            }
            if let Some(h) = head {
                return Resume::Nothing(format!(
                    "issue #{issue} already has a run (checkpoint in run {h}); comment `/spec-orchestrate continue` to resume it"
                ));
            }
            Resume::From(None)
        }
        Trigger::Command { .. } => match head {
            Some(h) => Resume::From(Some(h)),
            None => Resume::Refuse(format!(
                "there is no run on this issue to steer yet; add the `{}` label to start one",
                trigger_label
            )),
        },
        Trigger::Dispatch { parent_run, .. } => {
            if let (Some(p), Some(h)) = (parent_run, head)
                && *p != h
                && h != run_id
            {
                return Resume::Nothing(format!(
                    "superseded: this run continues run {p}, but the newest checkpoint of issue #{issue} is run {h} (a command or another run took over)"
                ));
            }
            Resume::From(parent_run.or(head))
        }
        Trigger::Review { pr, .. } => Resume::Nothing(format!(
            "a review of pull request #{pr} is routed to the issue's chain, never run in its own job"
        )),
        Trigger::Ignored(_) => Resume::From(None),
    }
}

/// The plan of a job a review started, apart from the chain's: end at once, or dispatch the
/// round's first job into the issue's chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Route {
    /// End without a round, replying on the pull request when the ending is a refusal.
    End(Ending),
    /// Dispatch the round's first job into the issue's concurrency group (inputs `issue` and
    /// `review`) and end.
    Into {
        /// The issue whose run opened the pull request.
        issue: IssueNumber,
        pr: PrNumber,
    },
}

/// The route of a job a review started, once the guards are known: `issue` is the issue the
/// head branch names (or why the pull request is not ours, `plan::review::issue_of`),
/// `refusal` why its author may not drive a run, `chain` the checkpoint the issue's status
/// comment names. A pull request that is not ours, or an issue without a chain, starts
/// nothing quietly; a refused author gets one reply on the pull request.
pub(super) fn route(
    pr: PrNumber,
    issue: Result<IssueNumber, String>,
    refusal: Option<String>,
    chain: Option<RunId>,
) -> Route {
    let issue = match issue {
        Ok(n) => n,
        Err(why) => return Route::End(Ending::Nothing(why)),
    };
    if let Some(reason) = refusal {
        return Route::End(Ending::Refuse(reason));
    }
    match chain {
        Some(_) => Route::Into { issue, pr },
        None => Route::End(Ending::Nothing(format!(
            "issue #{issue} has no spec-orchestrate run (no status comment of this workflow names a checkpoint), so pull request #{pr} is not one it opened"
        ))),
    }
}

/// Why the job runs no phase although the run was restored: it is done, or a dispatch found it
/// waiting for a person. A command that halted the chain is still published.
pub(super) fn skip_reason(
    state: &State,
    halted: bool,
    trigger: &Trigger,
    issue: IssueNumber,
) -> Option<String> {
    if state.phase() == Phase::Done && !halted {
        return Some(format!("the run of issue #{issue} is done"));
    }
    if !halted
        && let Some(w) = &state.waiting
        && matches!(trigger, Trigger::Dispatch { .. })
    {
        return Some(format!("the run waits for a person: {}", w.message));
    }
    None
}

/// One commit per phase execution, numbered like the phase log, so that a loop's second pass is
/// told apart from its first (and a duplicate would show).
pub(super) fn commit_message(state: &State, ran: Phase) -> String {
    let pass = state
        .phase_log
        .iter()
        .filter(|e| e.phase == ran)
        .count()
        .max(1);
    let issue_ref = state
        .issue
        .number
        .map(|n| format!(", #{n}"))
        .unwrap_or_default();
    format!("spec-orchestrate: {ran} (pass {pass}{issue_ref})")
}

/// How many jobs in a row (this one included) reached their time budget before the phase made
/// any progress; `before` is the progress when this job's phase started.
pub(super) fn idle_jobs(state: &State, end: PhaseEnd, before: Progress) -> u64 {
    if end == PhaseEnd::Budget && progress(state) == before {
        state.job.idle_jobs() + 1
    } else {
        0
    }
}

/// What happens after this job: a halting command waits, three idle jobs in a row wait for a
/// larger `budget`, otherwise the phase's end and the state decide.
pub(super) fn decide_next(state: &State, job: &Ran, idle: u64, budget: Duration) -> AfterJob {
    let ran = job.phase;
    match &job.halt {
        Some(m) => AfterJob::Wait(m.clone()),
        None if idle >= 3 => AfterJob::Wait(format!(
            "{idle} jobs in a row reached job_budget_minutes ({} min) before {ran} made any progress; raise the input, then comment `/spec-orchestrate continue`",
            budget.as_secs_f64() / 60.0
        )),
        None => next_of(state, job.end),
    }
}

/// The job's outcome for its run record: the phase log's last word on the phase it ran.
pub(super) fn outcome_of(state: &State, job: &Ran) -> JobOutcome {
    match (&job.halt, job.end) {
        (Some(_), _) => JobOutcome::Stopped,
        (None, PhaseEnd::Budget) => JobOutcome::ContinuedAfterJobBudget,
        _ => last_outcome(state, job.phase).into(),
    }
}

/// The phase log's last word on `phase`.
pub(super) fn last_outcome(state: &State, phase: Phase) -> PhaseOutcome {
    state
        .phase_log
        .iter()
        .rev()
        .find(|e| e.phase == phase)
        .map(|e| e.outcome)
        .unwrap_or(PhaseOutcome::Ended(Outcome::Ok))
}

/// Whether the job goes on with the phase `state` is due at, after a phase that ended well:
/// only in the default `github.jobs` mode, while the job has time, when the run neither
/// finished nor waits nor was stopped, and unless that phase calls agents while one that calls
/// agents already ran in this job (`agents_ran`). So a job runs at most one agent phase, or one
/// round of a loop, with the phases that call no agent before and after it.
pub(super) fn rides_along(
    mode: JobsMode,
    state: &State,
    agents_ran: bool,
    time_left: bool,
) -> bool {
    mode == JobsMode::PerAgentPhase
        && time_left
        && state.phase() != Phase::Done
        && state.waiting.is_none()
        && state.stop.is_none()
        && !(agents_ran && state.phase().calls_agents())
}

/// This job as the status comment lists it, under the checkpoint artifact it saves.
pub(super) fn run_record(
    env: &ActionEnv,
    issue: IssueNumber,
    ran: Phase,
    outcome: JobOutcome,
) -> JobRun {
    // The join saves in the run whose job saved the plain name already.
    let checkpoint = match env.part {
        super::env::Part::Join => store::join_artifact_name(issue.get(), ran, env.run_attempt),
        _ => store::artifact_name(issue.get(), ran, env.run_attempt),
    };
    JobRun {
        run_id: env.run_id,
        attempt: env.run_attempt,
        phase: ran,
        outcome,
        url: env.run_url(env.run_id),
        checkpoint,
        earlier: Vec::new(),
    }
}

/// The pull request's address once it exists on the forge.
pub(super) fn pr_url_of(state: &State) -> Option<String> {
    state
        .pr
        .as_ref()
        .filter(|p| p.number.is_some())
        .map(|p| p.url.clone())
}

/// The `phase` and `gate` step outputs: the last phase the job ran and the gate of the last
/// gated phase it ran (a review that approval followed still reports its gate); empty when a
/// command halted the chain.
pub(super) fn step_outputs(state: &State, job: &Ran) -> (&'static str, String) {
    match job.halt {
        Some(_) => ("", String::new()),
        None => (
            job.phase.as_str(),
            job.phases()
                .into_iter()
                .rev()
                .map(|p| gate_of(state, p))
                .find(|g| !g.is_empty())
                .unwrap_or_default(),
        ),
    }
}

/// The job's exit: a phase that landed a draft fails the job (so it shows), all else succeeds.
pub(super) fn exit_of(end: PhaseEnd) -> Exit {
    match end {
        PhaseEnd::Exited(1) => Exit::Failed,
        _ => Exit::Ok,
    }
}

/// Why a phase failed: the kind of its error and what the status comment says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PhaseFailure {
    /// The error's kind (the job exits with its code).
    pub(super) kind: ErrorKind,
    pub(super) why: String,
}

/// Whether the phase process failed, with the kind of its error (from its exit code) and why.
/// Any code from 2 up is an error; a code this binary never uses (a panic exits 101) and a
/// signal count as `io`: the process could not run to its end.
pub(super) fn child_error(end: PhaseEnd) -> Option<PhaseFailure> {
    let (kind, why) = match end {
        PhaseEnd::Killed(sig) => (
            ErrorKind::Io,
            format!("the phase process was killed by signal {sig}"),
        ),
        PhaseEnd::Exited(code) if code >= 2 => (
            ErrorKind::from_exit_code(code).unwrap_or(ErrorKind::Io),
            "the phase ended with an error (see the log above)".to_string(),
        ),
        PhaseEnd::Exited(_) | PhaseEnd::Budget => return None,
    };
    Some(PhaseFailure { kind, why })
}

/// What changes when a phase gets anywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Progress {
    calls: u64,
    phases: usize,
    failures: usize,
    /// Tasks settled (done or blocked).
    settled: usize,
}

/// How far the run has got, to tell a job that made progress from one that did not.
pub(super) fn progress(state: &State) -> Progress {
    Progress {
        calls: state.usage.values().map(|u| u.calls).sum(),
        phases: state.phase_log.len(),
        failures: state.agent_failures.len(),
        settled: state
            .tasks
            .iter()
            .filter(|t| {
                matches!(
                    t.status,
                    crate::state::TaskStatus::Done | crate::state::TaskStatus::Blocked
                )
            })
            .count(),
    }
}

/// The gate the phase `ran` produced, for the `gate` output.
pub(super) fn gate_of(state: &State, ran: Phase) -> String {
    match ran {
        Phase::Inspect => state.inspect.as_ref().map(|i| i.gate.to_string()),
        Phase::SpecReview => state.rounds.spec_review.last().map(|r| r.gate.to_string()),
        Phase::Evaluate => state.rounds.evaluate.last().map(|r| r.gate.to_string()),
        _ => None,
    }
    .unwrap_or_default()
}

pub(super) mod review;

#[cfg(test)]
mod tests;
