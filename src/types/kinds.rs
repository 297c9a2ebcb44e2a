//! The closed sets of words `pipeline-state.json` records, as types (and the configuration's
//! review words, `Strategy` and `Persona`, which the state records too).
//!
//! Each type is spelled in the file exactly as the string it replaced, so a state written before
//! it existed loads unchanged and a state written now is byte-identical. Each also refuses a word
//! outside its set: the state is written only by this program, so an unknown word means a
//! corrupted or hand-edited file, and guessing a default would act on something nobody decided.
//! The loader reports the refusal with the file and the key (`is corrupted at
//! `arbitrations[0].signal`: unknown variant …`).

use std::str::FromStr;

use serde::{Deserialize, Serialize};
use strum::{Display, IntoStaticStr, VariantArray};

use crate::types::{Outcome, Role, StopKind};

/// Why an agent call or a task failed: the blocker categories of `docs/state.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, Display)]
#[strum(serialize_all = "snake_case")]
pub enum BlockerCategory {
    /// Output could not be parsed.
    MalformedOutput,
    /// The program or service is not there.
    ToolUnavailable,
    /// Took longer than its timeout.
    Timeout,
    /// A reviewer changed files.
    SandboxViolation,
    /// The environment is not usable (spawn failed, I/O).
    EnvError,
    /// The reviewer kept rejecting the work.
    ReviewRejected,
    /// The backend reported an error (non-zero exit, `is_error`, `turn.failed`).
    AgentError,
    /// The answer was cut at the output token limit (`stop_reason: max_tokens`, `incomplete`
    /// with `max_output_tokens`).
    MaxTokens,
    /// The model refused (`stop_reason: refusal`, a refusal part, the content filter).
    Refusal,
    /// The model stopped before a final answer for another reason (`pause_turn`, `incomplete`).
    Incomplete,
    /// Still rate limited or overloaded (429/529) after every retry.
    RateLimited,
    /// A spend cap, exhausted quota or empty credit balance: never retried, stops the run.
    QuotaExhausted,
    /// The CLI stopped itself, or the model API proxy refused or cut it, at the spend limit the
    /// pipeline gave it (what was left of `limits.budget_usd`): stops the run like the budget
    /// check does.
    BudgetExhausted,
}

impl BlockerCategory {
    /// Every category, in declaration order.
    pub const ALL: [BlockerCategory; 13] = [
        BlockerCategory::MalformedOutput,
        BlockerCategory::ToolUnavailable,
        BlockerCategory::Timeout,
        BlockerCategory::SandboxViolation,
        BlockerCategory::EnvError,
        BlockerCategory::ReviewRejected,
        BlockerCategory::AgentError,
        BlockerCategory::MaxTokens,
        BlockerCategory::Refusal,
        BlockerCategory::Incomplete,
        BlockerCategory::RateLimited,
        BlockerCategory::QuotaExhausted,
        BlockerCategory::BudgetExhausted,
    ];

    /// Spend caps and an exhausted budget: never retried, they stop the run.
    pub fn stops_the_run(self) -> bool {
        matches!(
            self,
            BlockerCategory::QuotaExhausted | BlockerCategory::BudgetExhausted
        )
    }
}

/// What an arbitration decided (or, for `ask`, that it handed the decision to a person).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, Display, VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Decision {
    /// Manual mode: the run waits for a person's answer.
    Ask,
    /// The stalled role went to the opposite agent.
    Swap,
    /// The loop ends and the PR lands as a draft.
    Draft,
    /// A person chose to keep going with the same agents.
    Continue,
    /// A person accepted the work as it is.
    Approve,
    /// The rubric plateaued: the implementation was thrown away and redone from the spec.
    Restart,
    /// S4's first firing in a window: the author was ordered to restructure a section (the
    /// stall window does not restart after it).
    Restructure,
}

impl From<Answer> for Decision {
    fn from(a: Answer) -> Decision {
        match a {
            Answer::Continue => Decision::Continue,
            Answer::Swap => Decision::Swap,
            Answer::Draft => Decision::Draft,
            Answer::Approve => Decision::Approve,
        }
    }
}

/// A person's answer to a waiting run (the choices a wait offers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, Display)]
#[strum(serialize_all = "snake_case")]
pub enum Answer {
    /// Keep going with the same agents; the stall window restarts.
    Continue,
    /// Give the stalled role to the opposite agent, then keep going.
    Swap,
    /// Stop here and land a draft listing every unresolved finding.
    Draft,
    /// Accept the work as it is (spec loop: the spec is approved; evaluate loop: go to the PR).
    Approve,
}

impl Answer {
    /// Every answer, in the order they are offered.
    pub const ALL: [Answer; 4] = [
        Answer::Continue,
        Answer::Swap,
        Answer::Draft,
        Answer::Approve,
    ];

    /// Parses the command-line word.
    pub fn parse(s: &str) -> Option<Answer> {
        Answer::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

/// What a waiting run waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, Display, VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum WaitKind {
    /// Manual mode: the spec passed review and waits for `approve`.
    Approval,
    /// Manual mode: a loop stalled and a person chooses how to go on.
    Arbitration,
    /// Action mode: someone commented `stop`; `continue` resumes.
    Stopped,
    /// Action mode: GitHub refused to open the pull request (the repository setting that lets
    /// Actions open pull requests is off); `continue` runs the `pr` phase again.
    PrPermission,
    /// Manual mode: the task reviewer confirmed an implementer's dispute of a failed acceptance
    /// case; a person chooses whether the case goes back to the spec (`approve`), the fix loop
    /// goes on (`continue`) or a draft lands (`draft`).
    Dispute,
}

/// The task reviewer's ruling on an implementer's dispute of a failed acceptance case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, Display, VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Ruling {
    /// The case is wrong: no correct build can pass it; it goes back to the spec.
    Confirmed,
    /// The code is wrong (or the reviewer gave no ruling): the fix loop goes on.
    Rejected,
}

/// How a dispute of a failed acceptance case ended (so far).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, Display, VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum DisputeEnd {
    /// Rejected (by the task reviewer or a person): the case stands and the fix loop goes on.
    FixLoop,
    /// Confirmed in manual mode: a person decides.
    Waiting,
    /// Confirmed: the case went back to the spec author as an open finding.
    Spec,
    /// The spec loop revised the case.
    Revised,
    /// The spec loop left the case as it was.
    Unchanged,
    /// Confirmed again with the case unchanged since the last confirmed dispute: a stall of the
    /// spec loop, arbitrated.
    Stalled,
    /// A person chose to land a draft.
    Draft,
}

impl DisputeEnd {
    /// The case went back to the spec loop (whatever the loop then did with it).
    pub fn went_to_spec(self) -> bool {
        matches!(
            self,
            DisputeEnd::Spec | DisputeEnd::Revised | DisputeEnd::Unchanged | DisputeEnd::Stalled
        )
    }

    /// How it reads in reports.
    pub fn describe(self) -> &'static str {
        match self {
            DisputeEnd::FixLoop => "the case stood; the fix loop went on",
            DisputeEnd::Waiting => "waiting for a person",
            DisputeEnd::Spec => "sent back to the spec author",
            DisputeEnd::Revised => "the spec author revised the case",
            DisputeEnd::Unchanged => "the spec author kept the case as it was",
            DisputeEnd::Stalled => "confirmed again with the case unchanged: spec loop stalled",
            DisputeEnd::Draft => "a person chose a draft",
        }
    }
}

/// The kind of a task of `tasks.md`, which picks the implementing role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, Display)]
#[strum(serialize_all = "snake_case")]
pub enum TaskKind {
    /// User interface work (`impl_ui`).
    Ui,
    /// Server or library work (`impl_backend`).
    Backend,
    /// Tests (`impl_test`).
    Test,
}

impl TaskKind {
    /// Every kind `tasks.md` accepts.
    pub const ALL: [TaskKind; 3] = [TaskKind::Ui, TaskKind::Backend, TaskKind::Test];

    /// Parses the `kind:` word of `tasks.md`.
    pub fn parse(s: &str) -> Option<TaskKind> {
        TaskKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The configured role that implements a task of this kind.
    pub fn role(self) -> Role {
        match self {
            TaskKind::Ui => Role::ImplUi,
            TaskKind::Backend => Role::ImplBackend,
            TaskKind::Test => Role::ImplTest,
        }
    }
}

/// Where one task of an implement wave is: the state the status comment shows for each leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, Display, VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum WaveTaskState {
    /// In the wave, not started yet (a matrix leg not yet scheduled).
    Queued,
    /// Its implementer or reviewer is at work.
    Running,
    /// Its commit is on the work branch.
    Landed,
    /// Its change no longer applied on top of the tasks landed before it: run again, once, on
    /// top of them.
    Rerun,
    /// It ended blocked (its reviewer kept rejecting it, its agent failed).
    Failed,
    /// The run stopped while it worked (budget, spend cap, a person's `stop`, a killed process).
    Stopped,
}

impl WaveTaskState {
    /// Whether the task is over (landed, failed or stopped): nothing more happens to it in its
    /// wave.
    pub fn is_over(self) -> bool {
        matches!(
            self,
            WaveTaskState::Landed | WaveTaskState::Failed | WaveTaskState::Stopped
        )
    }

    /// How it reads in reports.
    pub fn describe(self) -> &'static str {
        match self {
            WaveTaskState::Queued => "queued",
            WaveTaskState::Running => "running",
            WaveTaskState::Landed => "landed",
            WaveTaskState::Rerun => "re-running on top",
            WaveTaskState::Failed => "failed",
            WaveTaskState::Stopped => "stopped",
        }
    }
}

/// The role an agent call plays: a configured [`Role`], or one of the critics the spec
/// reviewer's agent plays (a panel persona, a debater, the classifier) or the implementer's
/// reviewer. Written as one word (`spec_reviewer`, `debater`, `task_reviewer`) or, for a panel
/// persona, `panel:<persona>`; this is also the `role` of the agent request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Display)]
#[strum(serialize_all = "snake_case")]
pub enum CallRole {
    /// A configured role (the debate judge is [`Role::Judge`], the contract reviewer
    /// [`Role::E2eRunner`]).
    #[strum(to_string = "{0}")]
    Role(Role),
    /// One persona of a review panel.
    #[strum(to_string = "panel:{0}")]
    Panel(Persona),
    /// One of the two anonymous debaters.
    Debater,
    /// The issue classifier that picks the panel for `review.panel: auto`.
    Classifier,
    /// The reviewer of one implemented task.
    TaskReviewer,
}

impl CallRole {
    /// The configured role whose agent plays this one: panel personas, the classifier and the
    /// debaters are played by the spec reviewer's agent, so swapping that role swaps them. The
    /// task reviewer is the task's own pairing, not a configured role.
    pub fn config_role(self) -> Option<Role> {
        match self {
            CallRole::Role(r) => Some(r),
            CallRole::Panel(_) | CallRole::Debater | CallRole::Classifier => {
                Some(Role::SpecReviewer)
            }
            CallRole::TaskReviewer => None,
        }
    }
}

impl FromStr for CallRole {
    type Err = String;

    fn from_str(s: &str) -> Result<CallRole, String> {
        if let Some(name) = s.strip_prefix("panel:") {
            return Persona::ALL
                .into_iter()
                .find(|p| p.as_str() == name)
                .map(CallRole::Panel)
                .ok_or_else(|| format!("unknown panel persona `{name}` in role `{s}`"));
        }
        match s {
            "debater" => Ok(CallRole::Debater),
            "classifier" => Ok(CallRole::Classifier),
            "task_reviewer" => Ok(CallRole::TaskReviewer),
            _ => Role::ALL
                .into_iter()
                .find(|r| r.as_str() == s)
                .map(CallRole::Role)
                .ok_or_else(|| {
                    format!(
                        "unknown role `{s}`, expected a configured role ({}), panel:<persona>, debater, classifier or task_reviewer",
                        Role::ALL.map(Role::as_str).join(", ")
                    )
                }),
        }
    }
}

/// How a phase execution ended, as recorded in the phase log: `ok`, `send_back`,
/// `stall:<signal>`, `agent_failure`, `blocked`, `waiting`, or `stopped:<budget|quota>` for a
/// run stopped by a limit.
///
/// What a phase reports is an [`Outcome`]; a stop is not a phase's report but an error that ends
/// the drive (the transition table has no row for it), so it is the one variant added here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Display)]
pub enum PhaseOutcome {
    /// The phase ended and reported this to the machine.
    #[strum(to_string = "{0}")]
    Ended(Outcome),
    /// A limit stopped the run during the phase.
    #[strum(to_string = "stopped:{0}")]
    Stopped(StopKind),
}

impl FromStr for PhaseOutcome {
    type Err = String;

    fn from_str(s: &str) -> Result<PhaseOutcome, String> {
        let unknown = || {
            format!(
                "unknown phase outcome `{s}`, expected ok, send_back, stall:<signal>, agent_failure, blocked, waiting, stopped:budget or stopped:quota"
            )
        };
        if let Some(signal) = s.strip_prefix("stall:") {
            return serde_json::from_value(serde_json::Value::String(signal.to_string()))
                .map(|signal| PhaseOutcome::Ended(Outcome::Stall(signal)))
                .map_err(|_| unknown());
        }
        Ok(match s {
            "ok" => PhaseOutcome::Ended(Outcome::Ok),
            "send_back" => PhaseOutcome::Ended(Outcome::SendBack),
            "agent_failure" => PhaseOutcome::Ended(Outcome::AgentFailure),
            "blocked" => PhaseOutcome::Ended(Outcome::Blocked),
            "waiting" => PhaseOutcome::Ended(Outcome::Waiting),
            "stopped:budget" => PhaseOutcome::Stopped(StopKind::Budget),
            "stopped:quota" => PhaseOutcome::Stopped(StopKind::Quota),
            _ => return Err(unknown()),
        })
    }
}

/// How one Action job ended, as its run record in the status comment says: the phase log's word
/// on the phase it ran, or one of the two endings a job has that a phase does not (a person's
/// `stop` halted it; the job's time budget ran out and the phase goes on in the next job).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Display)]
pub enum JobOutcome {
    /// The phase ended as the phase log records.
    #[strum(to_string = "{0}")]
    Phase(PhaseOutcome),
    /// A `/spec-orchestrate stop` comment halted the job before its phase ran.
    #[strum(to_string = "stopped")]
    Stopped,
    /// The job's time budget (`job_budget_minutes`) ended the phase; the next job resumes it.
    #[strum(to_string = "continued (job time budget)")]
    ContinuedAfterJobBudget,
}

impl JobOutcome {
    /// Whether the phase goes on in the next job (the headline says "continues").
    pub fn continues(self) -> bool {
        self == JobOutcome::ContinuedAfterJobBudget
    }
}

impl FromStr for JobOutcome {
    type Err = String;

    fn from_str(s: &str) -> Result<JobOutcome, String> {
        match s {
            "stopped" => Ok(JobOutcome::Stopped),
            "continued (job time budget)" => Ok(JobOutcome::ContinuedAfterJobBudget),
            _ => s.parse().map(JobOutcome::Phase).map_err(|_| {
                format!(
                    "unknown job outcome `{s}`, expected a phase outcome (ok, send_back, stall:<signal>, …), stopped or `continued (job time budget)`"
                )
            }),
        }
    }
}

/// `From` for the kinds that wrap another: a configured role is a call role, what a phase
/// reports is a phase-log outcome, and a phase-log outcome is a job's.
macro_rules! wraps {
    ($($outer:ident::$variant:ident($inner:ty)),+) => {$(
        impl From<$inner> for $outer {
            fn from(v: $inner) -> $outer {
                $outer::$variant(v)
            }
        }
    )+};
}

wraps!(
    CallRole::Role(Role),
    PhaseOutcome::Ended(Outcome),
    JobOutcome::Phase(PhaseOutcome)
);

/// Serialises each type as its `Display` text and reads it back through its `FromStr`, so the
/// refusal names the word and what was expected. These are the kinds that carry a value
/// (`panel:<persona>`, `stall:<signal>`), which serde's derive cannot spell as one word.
macro_rules! serde_as_text {
    ($($t:ty),+) => {$(
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    )+};
}

serde_as_text!(CallRole, PhaseOutcome, JobOutcome);

/// Review strategies (`docs/reviews.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, Display, VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Strategy {
    /// One reviewer agent.
    Single,
    /// Several personas in parallel.
    Panel,
    /// Two anonymous debaters and a judge.
    Debate,
}

/// Panel personas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, Display)]
#[strum(serialize_all = "snake_case")]
pub enum Persona {
    /// Structure and boundaries.
    Architect,
    /// Security and failure modes.
    Paranoid,
    /// Running it in production.
    Operator,
    /// Less is more.
    Simplifier,
    /// The person using it.
    UserAdvocate,
    /// Whether it is worth building.
    ProductStrategist,
}

impl Persona {
    /// All six, in the order the panel reports them.
    pub const ALL: [Persona; 6] = [
        Persona::Architect,
        Persona::Paranoid,
        Persona::Operator,
        Persona::Simplifier,
        Persona::UserAdvocate,
        Persona::ProductStrategist,
    ];
}

/// A loop's gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
#[derive(Display, VariantArray)]
#[strum(serialize_all = "UPPERCASE")]
pub enum Gate {
    /// Nothing fix-required.
    Pass,
    /// Something fix-required, or the round failed.
    Fail,
}

/// An acceptance case's verdict, as `evaluate-result.json` and the case's progress event write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
#[derive(Display, VariantArray)]
#[strum(serialize_all = "UPPERCASE")]
pub enum Verdict {
    /// Held, with evidence.
    Pass,
    /// Did not hold, or its evidence did not survive verification.
    Fail,
    /// Could not run as configured.
    Blocked,
}

#[cfg(test)]
mod tests;
