//! The closed sets of words `pipeline-state.json` records, as types (and the configuration's
//! review words, `Strategy` and `Persona`, which the state records too).
//!
//! Each type is spelled in the file exactly as the string it replaced, so a state written before
//! it existed loads unchanged and a state written now is byte-identical. Each also refuses a word
//! outside its set: the state is written only by this program, so an unknown word means a
//! corrupted or hand-edited file, and guessing a default would act on something nobody decided.
//! The loader reports the refusal with the file and the key (`is corrupted at
//! `arbitrations[0].signal`: unknown variant …`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::types::{Outcome, Role, StopKind};

/// Why an agent call or a task failed: the blocker categories of `docs/state.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            BlockerCategory::MalformedOutput => "malformed_output",
            BlockerCategory::ToolUnavailable => "tool_unavailable",
            BlockerCategory::Timeout => "timeout",
            BlockerCategory::SandboxViolation => "sandbox_violation",
            BlockerCategory::EnvError => "env_error",
            BlockerCategory::ReviewRejected => "review_rejected",
            BlockerCategory::AgentError => "agent_error",
            BlockerCategory::MaxTokens => "max_tokens",
            BlockerCategory::Refusal => "refusal",
            BlockerCategory::Incomplete => "incomplete",
            BlockerCategory::RateLimited => "rate_limited",
            BlockerCategory::QuotaExhausted => "quota_exhausted",
            BlockerCategory::BudgetExhausted => "budget_exhausted",
        }
    }

    /// Spend caps and an exhausted budget: never retried, they stop the run.
    pub fn stops_the_run(self) -> bool {
        matches!(
            self,
            BlockerCategory::QuotaExhausted | BlockerCategory::BudgetExhausted
        )
    }
}

impl fmt::Display for BlockerCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an arbitration decided (or, for `ask`, that it handed the decision to a person).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

impl Decision {
    /// The word recorded in state.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Ask => "ask",
            Decision::Swap => "swap",
            Decision::Draft => "draft",
            Decision::Continue => "continue",
            Decision::Approve => "approve",
            Decision::Restart => "restart",
            Decision::Restructure => "restructure",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
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

    /// The word used on the command line and in state.
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Continue => "continue",
            Answer::Swap => "swap",
            Answer::Draft => "draft",
            Answer::Approve => "approve",
        }
    }

    /// Parses the command-line word.
    pub fn parse(s: &str) -> Option<Answer> {
        Answer::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a waiting run waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

impl WaitKind {
    /// The word recorded in state.
    pub fn as_str(self) -> &'static str {
        match self {
            WaitKind::Approval => "approval",
            WaitKind::Arbitration => "arbitration",
            WaitKind::Stopped => "stopped",
            WaitKind::PrPermission => "pr_permission",
            WaitKind::Dispute => "dispute",
        }
    }
}

impl fmt::Display for WaitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The task reviewer's ruling on an implementer's dispute of a failed acceptance case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ruling {
    /// The case is wrong: no correct build can pass it; it goes back to the spec.
    Confirmed,
    /// The code is wrong (or the reviewer gave no ruling): the fix loop goes on.
    Rejected,
}

impl Ruling {
    /// The word recorded in state.
    pub fn as_str(self) -> &'static str {
        match self {
            Ruling::Confirmed => "confirmed",
            Ruling::Rejected => "rejected",
        }
    }
}

impl fmt::Display for Ruling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a dispute of a failed acceptance case ended (so far).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
    /// The word recorded in state.
    pub fn as_str(self) -> &'static str {
        match self {
            DisputeEnd::FixLoop => "fix_loop",
            DisputeEnd::Waiting => "waiting",
            DisputeEnd::Spec => "spec",
            DisputeEnd::Revised => "revised",
            DisputeEnd::Unchanged => "unchanged",
            DisputeEnd::Stalled => "stalled",
            DisputeEnd::Draft => "draft",
        }
    }

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

impl fmt::Display for DisputeEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of a task of `tasks.md`, which picks the implementing role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

    /// The word used in `tasks.md` and in state.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::Ui => "ui",
            TaskKind::Backend => "backend",
            TaskKind::Test => "test",
        }
    }

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

impl fmt::Display for TaskKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where one task of an implement wave is: the state the status comment shows for each leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
    /// The word recorded in state.
    pub fn as_str(self) -> &'static str {
        match self {
            WaveTaskState::Queued => "queued",
            WaveTaskState::Running => "running",
            WaveTaskState::Landed => "landed",
            WaveTaskState::Rerun => "rerun",
            WaveTaskState::Failed => "failed",
            WaveTaskState::Stopped => "stopped",
        }
    }

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

impl fmt::Display for WaveTaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The role an agent call plays: a configured [`Role`], or one of the critics the spec
/// reviewer's agent plays (a panel persona, a debater, the classifier) or the implementer's
/// reviewer. Written as one word (`spec_reviewer`, `debater`, `task_reviewer`) or, for a panel
/// persona, `panel:<persona>`; this is also the `role` of the agent request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallRole {
    /// A configured role (the debate judge is [`Role::Judge`], the contract reviewer
    /// [`Role::E2eRunner`]).
    Role(Role),
    /// One persona of a review panel.
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

impl From<Role> for CallRole {
    fn from(r: Role) -> CallRole {
        CallRole::Role(r)
    }
}

impl fmt::Display for CallRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallRole::Role(r) => f.write_str(r.as_str()),
            CallRole::Panel(p) => write!(f, "panel:{}", p.as_str()),
            CallRole::Debater => f.write_str("debater"),
            CallRole::Classifier => f.write_str("classifier"),
            CallRole::TaskReviewer => f.write_str("task_reviewer"),
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

impl Serialize for CallRole {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CallRole {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CallRole, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// How a phase execution ended, as recorded in the phase log: `ok`, `send_back`,
/// `stall:<signal>`, `agent_failure`, `blocked`, `waiting`, or `stopped:<budget|quota>` for a
/// run stopped by a limit.
///
/// What a phase reports is an [`Outcome`]; a stop is not a phase's report but an error that ends
/// the drive (the transition table has no row for it), so it is the one variant added here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseOutcome {
    /// The phase ended and reported this to the machine.
    Ended(Outcome),
    /// A limit stopped the run during the phase.
    Stopped(StopKind),
}

impl From<Outcome> for PhaseOutcome {
    fn from(o: Outcome) -> PhaseOutcome {
        PhaseOutcome::Ended(o)
    }
}

impl fmt::Display for PhaseOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PhaseOutcome::Ended(Outcome::Ok) => f.write_str("ok"),
            PhaseOutcome::Ended(Outcome::SendBack) => f.write_str("send_back"),
            PhaseOutcome::Ended(Outcome::Stall(s)) => write!(f, "stall:{s}"),
            PhaseOutcome::Ended(Outcome::AgentFailure) => f.write_str("agent_failure"),
            PhaseOutcome::Ended(Outcome::Blocked) => f.write_str("blocked"),
            PhaseOutcome::Ended(Outcome::Waiting) => f.write_str("waiting"),
            PhaseOutcome::Stopped(k) => write!(f, "stopped:{}", k.as_str()),
        }
    }
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

impl Serialize for PhaseOutcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PhaseOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PhaseOutcome, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// How one Action job ended, as its run record in the status comment says: the phase log's word
/// on the phase it ran, or one of the two endings a job has that a phase does not (a person's
/// `stop` halted it; the job's time budget ran out and the phase goes on in the next job).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobOutcome {
    /// The phase ended as the phase log records.
    Phase(PhaseOutcome),
    /// A `/spec-orchestrate stop` comment halted the job before its phase ran.
    Stopped,
    /// The job's time budget (`job_budget_minutes`) ended the phase; the next job resumes it.
    ContinuedAfterJobBudget,
}

impl JobOutcome {
    /// Whether the phase goes on in the next job (the headline says "continues").
    pub fn continues(self) -> bool {
        self == JobOutcome::ContinuedAfterJobBudget
    }
}

impl From<PhaseOutcome> for JobOutcome {
    fn from(o: PhaseOutcome) -> JobOutcome {
        JobOutcome::Phase(o)
    }
}

impl fmt::Display for JobOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobOutcome::Phase(o) => o.fmt(f),
            JobOutcome::Stopped => f.write_str("stopped"),
            JobOutcome::ContinuedAfterJobBudget => f.write_str("continued (job time budget)"),
        }
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

impl Serialize for JobOutcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for JobOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<JobOutcome, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Review strategies (`docs/reviews.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// One reviewer agent.
    Single,
    /// Several personas in parallel.
    Panel,
    /// Two anonymous debaters and a judge.
    Debate,
}

impl Strategy {
    /// The word used in the configuration, on the command line and in state.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Single => "single",
            Strategy::Panel => "panel",
            Strategy::Debate => "debate",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Panel personas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

    /// The snake_case name used in the configuration, in the `panel:<persona>` role and in
    /// prompt file names (`panel_<persona>.md`).
    pub fn as_str(self) -> &'static str {
        match self {
            Persona::Architect => "architect",
            Persona::Paranoid => "paranoid",
            Persona::Operator => "operator",
            Persona::Simplifier => "simplifier",
            Persona::UserAdvocate => "user_advocate",
            Persona::ProductStrategist => "product_strategist",
        }
    }
}

impl fmt::Display for Persona {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A loop's gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Gate {
    /// Nothing fix-required.
    Pass,
    /// Something fix-required, or the round failed.
    Fail,
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Gate::Pass => "PASS",
            Gate::Fail => "FAIL",
        })
    }
}

/// An acceptance case's verdict, as `evaluate-result.json` and the case's progress event write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    /// Held, with evidence.
    Pass,
    /// Did not hold, or its evidence did not survive verification.
    Fail,
    /// Could not run as configured.
    Blocked,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Blocked => "BLOCKED",
        })
    }
}

#[cfg(test)]
mod tests;
