//! `pipeline-state.json`: the run's only source of truth.
//!
//! One writer at a time (an OS file lock beside the state, released by the kernel when the
//! holder dies, so a killed run never leaves a stale lock), atomic saves (temp + fsync + rename),
//! and a versioned schema: older versions are migrated, newer ones refused, a corrupted file is
//! reported with its path and never silently replaced. Every command starts by loading this file,
//! which is what makes resume the normal path rather than a special one.

pub mod validate;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::types::ids::{AgentName, Sha, TaskId};
use crate::types::ids::{IssueNumber, PrNumber};
use crate::types::kinds::{
    Answer, BlockerCategory, CallRole, Decision, DisputeEnd, Gate, PhaseOutcome, Ruling, Strategy,
    TaskKind, WaitKind,
};
use crate::types::{Phase, Role, RunStop, Signal};
use crate::util;

pub mod job;
pub mod leg;
pub mod pr_review;
pub mod store;
#[cfg(test)]
pub(crate) mod tests;
pub mod waves;

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = 2;
/// File name of the state inside `.specs/<feature>/`.
pub const STATE_FILE: &str = "pipeline-state.json";
/// File name of the writer lock.
pub const LOCK_FILE: &str = "pipeline-state.lock";

/// Files the orchestrator itself writes under `.specs/<feature>/` while an agent runs (state,
/// lock, temp files, evidence, agent logs): never an agent's doing, so neither the reviewer
/// sandbox nor a writer's room judges them. Here, below both, so that `review` and `agents`
/// share it without importing each other.
pub fn is_orchestrator_record(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name == STATE_FILE
        || name == LOCK_FILE
        || name.starts_with(".pipeline-state.json.tmp")
        || path.contains("/evidence/")
        || path.contains(&format!("/{}/", crate::types::AGENT_LOG_DIR))
}

/// Interactive or unattended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Decisions are taken by the pipeline (arbitration swaps, approval passes).
    #[default]
    Auto,
    /// A person approves the spec and answers arbitrations.
    Manual,
}

/// The whole state document. Field names are a contract (documented in `docs/state.md`): add,
/// never rename. `Default` is only the empty base [`State::new`] fills (schema version 0).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct State {
    pub schema_version: u32,
    /// Kebab-case feature name, also the directory name under `.specs/`.
    pub feature: String,
    /// Unique id of this run (start time + random suffix).
    pub run_id: String,
    pub mode: Mode,
    pub issue: IssueRef,
    /// The phase to run next (or `done`). Private: read through [`State::phase`]; only the
    /// machine moves the run ([`State::move_to`], docs/architecture.md).
    phase: Phase,
    /// Phases finished at least once, in first-completion order.
    pub completed_phases: Vec<Phase>,
    pub phase_log: Vec<PhaseLogEntry>,
    /// Role → agent actually used (after overrides); written in role-name order.
    #[serde(serialize_with = "roles_by_name")]
    pub roles: BTreeMap<Role, AgentName>,
    pub role_overrides: Vec<RoleOverride>,
    pub inspect: Option<InspectSummary>,
    pub rounds: Rounds,
    pub arbitrations: Vec<Arbitration>,
    pub tasks: Vec<TaskState>,
    pub branch: Option<BranchRef>,
    /// The pull request (or local equivalent).
    pub pr: Option<PrRef>,
    pub usage: BTreeMap<AgentName, Usage>,
    /// External writes, so that re-runs update instead of duplicating: the `side_effects` list
    /// of the file, typed by key (`job`).
    #[serde(rename = "side_effects")]
    pub job: job::JobRecord,
    #[serde(with = "crate::types::time")]
    pub ts_updated: DateTime<Utc>,
    pub approval: Option<Approval>,
    pub waiting: Option<Waiting>,
    /// Reasons the PR must be a draft (blocked task, unresolved stall, agent failure, budget).
    #[serde(default)]
    pub draft_reasons: Vec<String>,
    #[serde(default)]
    pub agent_failures: Vec<AgentFailure>,
    /// Commit the work branch started from.
    pub base_commit: Option<Sha>,
    /// Open findings handed to the next spec revision or fix round.
    #[serde(default, deserialize_with = "findings_with_fingerprints")]
    pub open_findings: Vec<crate::types::Finding>,
    /// Set when a stall signal fired and the author was ordered to restructure a section.
    pub restructure: Option<String>,
    /// Fingerprints of consecutive failed inspections (cleared on a pass), to stop an author
    /// that cannot fix the same mechanical finding.
    #[serde(default)]
    pub inspect_history: Vec<Vec<String>>,
    /// The `--config` file the run was started with, so that `resume` uses the same one.
    pub config_path: Option<String>,
    /// HEAD when `implement` first started (the approved spec's commit): a rubric restart
    /// resets the work branch here, throwing the implementation away but keeping the spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implement_base: Option<Sha>,
    /// Why the run stopped before its end (budget, spend cap), while it is stopped; `resume`
    /// moves it to `stops` and continues at `phase`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<RunStop>,
    /// Earlier stops the run was resumed from, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stops: Vec<RunStop>,
    /// Every agent call with its tokens and cost, oldest first (the per-agent totals are in
    /// `usage`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallRecord>,
    /// The issue's classification (type, risk, scope) by the `classifier` role, made once for
    /// `review.panel: auto` and reused every round so the panel does not change under the author.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classification: Option<crate::types::Classification>,
    /// Set when S4 fired for the first time in the evaluate loop: the next fix task is told to
    /// rework the failing case's implementation instead of patching it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluate_restructure: Option<String>,
    /// The app under test while an evaluate round runs it: its process group and the leader's
    /// start time, saved before the app may serve, so that the next command on this feature
    /// stops a group a killed orchestrator left behind (and only that group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_process: Option<crate::process::tree::GroupStamp>,
    /// The last failed spec review, as the next round's reviewers are shown it: its
    /// fix-required findings (ids made unique) and a hash of every section the reviewers read.
    /// Kept here, not in `reviews/`, because the author can write there; cleared when a review
    /// passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_review: Option<PreviousReview>,
    /// Every dispute of a failed acceptance case a fix task raised, with the task reviewer's
    /// ruling and how it ended, oldest first (docs/phases.md#disputed-cases).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disputes: Vec<DisputeRecord>,
    /// `implement`'s waves: the tasks run at once, where each ran (a local thread or a matrix
    /// leg), how each ended and the wall times, oldest first ([`waves`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waves: Vec<waves::Wave>,
    /// The wave of `implement` handed to the Action's matrix legs, until its join lands it
    /// (`leg::Fanout`; docs/action-mode.md, "Waves on runners").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fanout: Option<leg::Fanout>,
}

/// An implementer's dispute of a failed acceptance case ("this case cannot pass on a correct
/// build"), the task reviewer's ruling on it, and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct DisputeRecord {
    /// The disputed case (`T-A02`).
    pub case: String,
    /// The fix task that raised it (`FIX3`).
    pub task: String,
    /// The evaluate round whose failure it disputes.
    pub after_round: u32,
    pub by: AgentName,
    /// Its argument (untrusted, bounded).
    pub argument: String,
    /// Its evidence: the reproduction, the command it ran and what that printed (untrusted,
    /// bounded).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub evidence: String,
    pub reviewer: AgentName,
    pub ruling: Ruling,
    /// Its own argument for the ruling (untrusted, bounded).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub answer: String,
    /// SHA-256 of the case's text in `test.md` when it was disputed: two confirmed disputes
    /// with the same hash had no change in between.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub case_hash: String,
    pub end: DisputeEnd,
    /// Who decided the end when a person did (manual mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
}

/// One agent call, as billed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct CallRecord {
    pub agent: AgentName,
    pub role: CallRole,
    pub phase: Phase,
    /// 1 for the first try, 2 for the retry.
    pub attempt: u32,
    /// Input tokens (cached ones included).
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub usd: f64,
    pub ok: bool,
    /// Backend session or response id, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The task the call worked on (implement: its implementer and its reviewer), so that the
    /// calls of tasks running at once with the same agent each name their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    #[serde(with = "crate::types::time")]
    pub ts: DateTime<Utc>,
}

/// The issue as read at intake.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct IssueRef {
    /// GitHub number; `null` for an issue read from a file.
    pub number: Option<IssueNumber>,
    /// First heading / GitHub title.
    pub title: String,
    /// Where it came from (URL or file path).
    pub url: Option<String>,
    /// The issue text, kept so that later phases never re-read a changed issue.
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub labels: Vec<String>,
}

/// One phase execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct PhaseLogEntry {
    pub phase: Phase,
    #[serde(with = "crate::types::time")]
    pub started: DateTime<Utc>,
    #[serde(with = "crate::types::time")]
    pub ended: DateTime<Utc>,
    /// How it ended (`ok`, `send_back`, `stall:S1`, `stopped:budget`, …).
    pub outcome: PhaseOutcome,
    /// 1 for the first execution of this phase, 2 for the second, …
    pub attempt: u32,
}

/// A role reassignment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct RoleOverride {
    pub role: Role,
    pub from: AgentName,
    pub to: AgentName,
    pub reason: String,
    #[serde(with = "crate::types::time")]
    pub ts: DateTime<Utc>,
}

/// Counts of one inspection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct InspectSummary {
    pub critical: u32,
    pub warning: u32,
    pub info: u32,
    pub gate: Gate,
    #[serde(default)]
    pub runs: u32,
}

/// Round histories of the two loops, and the review rounds after the pull request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Rounds {
    pub spec_review: Vec<ReviewRound>,
    pub evaluate: Vec<EvaluateRound>,
    /// A person's review rounds of the pull request, oldest first (schema 2; a schema 1 run
    /// kept them in `review-rounds.json`, which the loader reads once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pr_review: Vec<pr_review::PrReviewRound>,
}

impl Rounds {
    /// The review round in flight (the newest one still running), if any: the one a run works
    /// on, and the only one a pull request may have.
    pub fn review_running(&self) -> Option<&pr_review::PrReviewRound> {
        self.pr_review
            .iter()
            .rev()
            .find(|r| r.status == pr_review::RoundStatus::Running)
    }

    /// The review round in flight, to change.
    pub fn review_running_mut(&mut self) -> Option<&mut pr_review::PrReviewRound> {
        self.pr_review
            .iter_mut()
            .rev()
            .find(|r| r.status == pr_review::RoundStatus::Running)
    }

    /// The number the next review round takes.
    pub fn next_review(&self) -> u32 {
        self.pr_review.last().map_or(1, |r| r.round + 1)
    }
}

/// One spec review round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct ReviewRound {
    pub round: u32,
    pub reviewer: AgentName,
    pub critical: u32,
    pub improvement: u32,
    pub minor: u32,
    pub fix_required: u32,
    pub fingerprints: Vec<String>,
    pub class_keys: Vec<String>,
    /// PASS iff fix_required == 0 and the round did not fail.
    pub gate: Gate,
    /// Set when the reviewer's output could not be used (the round counts as failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// How the round was reviewed; `single` for rounds recorded before strategies existed.
    #[serde(default = "default_strategy")]
    pub strategy: Strategy,
    /// Who answered, by role (`spec_reviewer`, `panel:architect`, `debater:A`, `e2e_runner`…),
    /// so the history shows which critics actually took part.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    /// Reviewers that failed and were skipped, with the reason (a panel goes on without them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// What a spec review round leaves for the next one (docs/reviews.md#from-round-2).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct PreviousReview {
    pub round: u32,
    /// Its fix-required findings, with unique ids and the fingerprints the gate used.
    #[serde(default, deserialize_with = "findings_with_fingerprints")]
    pub findings: Vec<crate::types::Finding>,
    /// `file#heading` → SHA-256 of that section's text as the round reviewed it.
    #[serde(default)]
    pub sections: BTreeMap<String, String>,
}

/// Rounds recorded before the field existed were all reviewed by a single reviewer.
fn default_strategy() -> Strategy {
    Strategy::Single
}

/// One acceptance round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct EvaluateRound {
    pub round: u32,
    /// Cases that passed (after verification).
    pub pass: u32,
    pub fail: u32,
    pub blocked: u32,
    pub fingerprints: Vec<String>,
    /// Class keys of the failure findings (one per failing case), for S4.
    #[serde(default)]
    pub class_keys: Vec<String>,
    /// PASS iff every case passed.
    pub gate: Gate,
    /// Weighted rubric score of the round's screenshots, when `evaluate.rubric` is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric_score: Option<f64>,
}

/// One arbitration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Arbitration {
    pub phase: Phase,
    /// What stopped the loop (`S1`…`S4`, `AGENT_FAILURE`, `BLOCKED`, `RUBRIC_PLATEAU`), or
    /// `MANUAL` when a person asked for the decision without a signal.
    pub signal: Signal,
    pub decision: Decision,
    pub from: Option<AgentName>,
    pub to: Option<AgentName>,
    pub note: String,
    #[serde(with = "crate::types::time")]
    pub ts: DateTime<Utc>,
    /// Round after which it happened (the stall window restarts after it).
    #[serde(default)]
    pub after_round: u32,
}

/// Progress of one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct TaskState {
    /// T001…
    pub id: String,
    pub kind: TaskKind,
    pub implementer: AgentName,
    pub reviewer: AgentName,
    pub attempts: u32,
    pub status: TaskStatus,
    pub commit: Option<Sha>,
    pub blocker: Option<BlockerCategory>,
    #[serde(default)]
    pub title: String,
}

/// Status of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Not started.
    Pending,
    /// An attempt is under way (or was, when the process died).
    InProgress,
    /// Committed.
    Done,
    /// Gave up after the last attempt.
    Blocked,
}

/// The work branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct BranchRef {
    pub name: String,
    pub head: Option<Sha>,
}

/// The pull request or its local stand-in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct PrRef {
    /// PR number (GitHub only).
    pub number: Option<PrNumber>,
    /// PR URL, or the path of `pr-body.md` locally.
    pub url: String,
    pub draft: bool,
}

/// Token and cost totals of one agent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub usd: f64,
    pub calls: u64,
    /// The most expensive single call so far: the estimate of this agent's next call when the
    /// budget is checked.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_call_usd: f64,
}

impl Usage {
    /// Adds one call: its tokens and cost, and the new most expensive call if it is one.
    pub fn add(&mut self, input_tokens: u64, output_tokens: u64, usd: f64) {
        self.calls += 1;
        self.input_tokens += input_tokens;
        self.output_tokens += output_tokens;
        self.usd += usd;
        self.max_call_usd = self.max_call_usd.max(usd);
    }
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// A manual approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Approval {
    /// Who approved (user name or `local`).
    pub by: String,
    #[serde(with = "crate::types::time")]
    pub ts: DateTime<Utc>,
}

/// Why a run is waiting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Waiting {
    pub kind: WaitKind,
    pub message: String,
    #[serde(default)]
    pub choices: Vec<Answer>,
    /// For an arbitration: the phase that stalled, so the answer knows which loop to resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// For an arbitration: the signal that stopped the loop (`S1`…`S4`, `AGENT_FAILURE`,
    /// `BLOCKED`). Required to answer one: without it the loop to resume is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<Signal>,
}

/// A failed agent call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct AgentFailure {
    pub phase: Phase,
    pub role: CallRole,
    pub agent: AgentName,
    pub category: BlockerCategory,
    /// Short, secret-free detail.
    pub detail: String,
    /// For a `sandbox_violation`: the repository-relative paths changed outside the role's
    /// room (all undone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The task whose call failed or stepped outside (implement), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    #[serde(with = "crate::types::time")]
    pub ts: DateTime<Utc>,
}

impl State {
    /// A fresh state for `feature`, at `intake`.
    pub fn new(feature: &str, issue: IssueRef, mode: Mode) -> State {
        State {
            schema_version: SCHEMA_VERSION,
            feature: feature.to_string(),
            run_id: new_run_id(),
            mode,
            issue,
            ts_updated: util::now(),
            ..State::default()
        }
    }

    /// The phase to run next (or `done`).
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Moves the run to `phase`. Only the machine calls it (`machine::drive` after a phase,
    /// `machine::answer` after a person's decision or a review round); `tests/cli/layers.rs`
    /// refuses a call anywhere else in `src/` outside test modules, since Rust's visibility
    /// cannot name a sibling module.
    pub fn move_to(&mut self, phase: Phase) {
        self.phase = phase;
    }

    /// Marks `phase` completed (once).
    pub fn mark_completed(&mut self, phase: Phase) {
        if !self.completed_phases.contains(&phase) {
            self.completed_phases.push(phase);
        }
    }

    /// Total recorded cost.
    pub fn total_usd(&self) -> f64 {
        self.usage.values().map(|u| u.usd).sum()
    }

    /// The agent currently playing `role` (after overrides).
    pub fn agent_for(&self, role: Role) -> Option<&str> {
        self.roles.get(&role).map(AgentName::as_str)
    }
}

/// Writes the role map ordered by role name, as it was written when its keys were strings (the
/// enum's own order is the configuration's), so the file stays byte-identical.
fn roles_by_name<S: serde::Serializer>(
    roles: &BTreeMap<Role, AgentName>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let by_name: BTreeMap<&str, &AgentName> = roles.iter().map(|(r, a)| (r.as_str(), a)).collect();
    by_name.serialize(s)
}

/// `Finding` never takes a fingerprint or class key from reviewer input, but the ones stored in
/// the state were computed by the orchestrator and must survive a save and load (the PR body
/// lists them after a resume).
fn findings_with_fingerprints<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<crate::types::Finding>, D::Error> {
    #[derive(Deserialize)]
    struct Stored {
        #[serde(flatten)]
        finding: crate::types::Finding,
        fingerprint: Option<String>,
        class_key: Option<String>,
    }
    let stored = Vec::<Stored>::deserialize(d)?;
    Ok(stored
        .into_iter()
        .map(|s| crate::types::Finding {
            fingerprint: s.fingerprint,
            class_key: s.class_key,
            ..s.finding
        })
        .collect())
}

fn new_run_id() -> String {
    use sha2::{Digest, Sha256};
    let seed = format!(
        "{}-{}-{:?}",
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default(),
        std::thread::current().id()
    );
    let digest = Sha256::digest(seed.as_bytes());
    format!(
        "{}-{}",
        crate::types::time::format(&util::now()),
        &hex::encode(digest)[..8]
    )
}
