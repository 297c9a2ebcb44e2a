//! Shared vocabulary: the small closed types and file names that records, services and the
//! orchestration all speak about.
//!
//! This is the bottom layer of the crate (see `docs/architecture.md`): it imports nothing from
//! the crate, so any module may use it without creating an import cycle. A type belongs here when
//! a low module (state, store, report, error) needs it but its natural owner sits higher up;
//! every module imports it from here (no re-exports at the owners' old paths).

pub mod ids;
pub mod kinds;
pub mod time;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};
use strum::{Display, IntoStaticStr, VariantArray};

use kinds::{Answer, BlockerCategory, Decision, DisputeEnd, Persona, Ruling, Strategy};
use kinds::{TaskKind, WaitKind, WaveTaskState};

/// `as_str()` of the closed sets whose words strum derives (`IntoStaticStr`, under the same
/// case rule as the type's serde `rename_all`, so the text is the word in the files).
macro_rules! as_str {
    ($($t:ty),+ $(,)?) => {$(
        impl $t {
            /// The word the state, the configuration, the command line and the reports spell it
            /// as: its serde name (for a persona also its `panel:<persona>` role and the prompt
            /// file `panel_<persona>.md`; for a severity the form that enters the fingerprint).
            pub fn as_str(self) -> &'static str {
                self.into()
            }
        }
    )+};
}

as_str!(
    Phase,
    Severity,
    StopKind,
    Role,
    Answer,
    BlockerCategory,
    Decision,
    DisputeEnd
);
as_str!(Persona, Ruling, Strategy, TaskKind, WaitKind, WaveTaskState);

/// The nine phases plus the terminal `done`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, Display)]
#[strum(serialize_all = "snake_case")]
pub enum Phase {
    /// Read the issue, derive the feature, create the work branch (where a run starts).
    #[default]
    Intake,
    /// The spec author writes or revises the four documents.
    SpecGenerate,
    /// Mechanical checks, no model.
    Inspect,
    /// Adversarial review of the spec.
    SpecReview,
    /// Manual approval gate (auto mode passes).
    Approval,
    /// Tasks implemented and cross-reviewed.
    Implement,
    /// Acceptance cases run by the harness.
    Evaluate,
    /// Pull request (or local branch + body).
    Pr,
    /// Run record.
    Retrospective,
    /// Nothing left to do.
    Done,
}

impl Phase {
    /// Every phase, in pipeline order.
    pub const ALL: [Phase; 10] = [
        Phase::Intake,
        Phase::SpecGenerate,
        Phase::Inspect,
        Phase::SpecReview,
        Phase::Approval,
        Phase::Implement,
        Phase::Evaluate,
        Phase::Pr,
        Phase::Retrospective,
        Phase::Done,
    ];

    /// The nine working phases (everything but `done`, which ends [`Phase::ALL`]): derived, so
    /// the two lists cannot disagree.
    pub const WORKING: &'static [Phase] = match Phase::ALL.split_last() {
        Some((_, working)) => working,
        None => &[],
    };

    /// Whether the phase calls agents (slow and paid). The others — intake, inspect, approval,
    /// pr, retrospective — are deterministic bookkeeping that takes about a second, which is
    /// why an Action job lets them ride along with the agent phase next to them.
    pub const fn calls_agents(self) -> bool {
        matches!(
            self,
            Phase::SpecGenerate | Phase::SpecReview | Phase::Implement | Phase::Evaluate
        )
    }

    /// Parses a phase name as given on the command line.
    pub fn parse(s: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// How serious a finding is; critical and improvement are fix-required.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[derive(IntoStaticStr, VariantArray, strum::EnumString)]
#[strum(serialize_all = "lowercase", ascii_case_insensitive)]
pub enum Severity {
    /// Must be fixed.
    Critical,
    /// Should be fixed; still fix-required.
    Improvement,
    /// Noted, not gating.
    Minor,
}

impl Severity {
    /// Whether this severity counts towards `fix_required`.
    pub fn fix_required(self) -> bool {
        !matches!(self, Severity::Minor)
    }

    /// Case-insensitive parse.
    pub fn parse(s: &str) -> Option<Severity> {
        s.trim().parse().ok()
    }
}

impl<'de> Deserialize<'de> for Severity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Severity::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown severity \"{s}\", expected critical, improvement or minor"
            ))
        })
    }
}

/// One reviewer claim. Missing text fields are empty strings (they still fingerprint).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Finding {
    /// Reviewer's own id (F1…).
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub requirement_id: String,
    pub severity: Severity,
    #[serde(default)]
    pub file: String,
    #[serde(default)]
    pub section: String,
    /// One-line claim.
    #[serde(default)]
    pub gist: String,
    #[serde(default)]
    pub argument: String,
    #[serde(default)]
    pub suggestion: String,
    /// Computed by the orchestrator: envelope extraction drops whatever a reviewer put here, and
    /// `Envelope::with_fingerprints` recomputes it. It is kept when the orchestrator reloads its
    /// own records (state, review files), so a resumed run still shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Computed by the orchestrator, like `fingerprint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_key: Option<String>,
    /// The id of an earlier round's finding this one re-raises (`"F1"`), as the reviewer names
    /// it: the named finding's fingerprint is carried over, so a re-raise in new words still
    /// recurs (docs/reviews.md#recurrence). Empty when the finding is new.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub still_open: String,
    /// In a debate, the id of the other side's finding this entry argues against (`"B.F2"`): a
    /// counter-argument, not a finding of its own, so it never gates (docs/reviews.md#debate).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub disputes: String,
}

impl Finding {
    /// A finding of `severity` with every text empty and nothing computed yet (no fingerprint,
    /// no re-raise, no dispute): the base the orchestrator's own findings are written on.
    pub fn new(severity: Severity) -> Finding {
        Finding {
            id: String::new(),
            requirement_id: String::new(),
            severity,
            file: String::new(),
            section: String::new(),
            gist: String::new(),
            argument: String::new(),
            suggestion: String::new(),
            fingerprint: None,
            class_key: None,
            still_open: String::new(),
            disputes: String::new(),
        }
    }
}

/// Why a loop is handed to arbitration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(Display, VariantArray)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum Signal {
    /// The same finding in three consecutive rounds.
    S1,
    /// The fix-required count has not gone down for three rounds.
    S2,
    /// Oscillation: round N repeats round N-2 and differs from N-1.
    S3,
    /// Findings keep landing in the same section.
    S4,
    /// An agent failed after its retry.
    AgentFailure,
    /// A case or task cannot run as configured.
    Blocked,
    /// The rubric score has not improved for `evaluate.rubric_plateau_rounds` rounds.
    RubricPlateau,
    /// No signal fired: a person asked for the decision (a `/spec-orchestrate draft` comment
    /// while nothing waited). Recorded on the arbitration it led to; never detected.
    Manual,
}

/// What a phase reports back to the machine: the input of `machine::transition`. The phase log
/// records it inside `state::PhaseOutcome`, which adds the one ending a phase never reports (a
/// limit stopped the run), so that the transition table stays exhaustive over what phases can
/// say while the log names every way a phase ended.
///
/// It prints as the phase log's word (`ok`, `send_back`, `stall:<signal>`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Display)]
#[strum(serialize_all = "snake_case")]
pub enum Outcome {
    /// The phase did its job (gate passed, approval given, all tasks done).
    Ok,
    /// The work goes back to its author (gate failed with fix-required findings).
    SendBack,
    /// A stall signal fired in a loop.
    #[strum(to_string = "stall:{0}")]
    Stall(Signal),
    /// An agent still failed after its retry.
    AgentFailure,
    /// Work cannot proceed as it is (blocked task, blocked acceptance case).
    Blocked,
    /// A person must act first.
    Waiting,
}

/// Why a run stopped early, for the person who has to unblock it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct RunStop {
    pub kind: StopKind,
    /// The phase that was running (and runs again on resume).
    pub phase: Phase,
    /// The agent whose call was not made (budget) or was refused (quota).
    pub agent: ids::AgentName,
    /// The full explanation, including what to do.
    pub message: String,
    /// Recorded cost when it stopped.
    pub spent_usd: f64,
    pub budget_usd: Option<f64>,
    /// Estimated cost of the call that was not made (budget stops).
    pub next_call_usd: Option<f64>,
    #[serde(with = "crate::types::time")]
    pub ts: chrono::DateTime<chrono::Utc>,
}

/// The closed set of reasons a run stops early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, Display, VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum StopKind {
    /// The next call could exceed `limits.budget_usd`.
    Budget,
    /// A vendor refused for spend cap or quota reasons.
    Quota,
}

impl StopKind {
    /// The limit as a person reads it: `budget` or `spend-cap`.
    pub fn limit(self) -> &'static str {
        match self {
            StopKind::Budget => "budget",
            StopKind::Quota => "spend-cap",
        }
    }
}

/// The configurable roles, as a closed set so that state and overrides can name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, Display)]
#[strum(serialize_all = "snake_case")]
pub enum Role {
    /// Writes the four spec documents.
    SpecAuthor,
    /// Attacks them.
    SpecReviewer,
    /// Implements `kind: ui` tasks.
    ImplUi,
    /// Implements `kind: backend` tasks.
    ImplBackend,
    /// Implements `kind: test` tasks.
    ImplTest,
    /// Turns prose steps into browser steps and scores screenshots.
    E2eRunner,
    /// Synthesises a debate.
    Judge,
}

impl Role {
    /// Every role, in the order the configuration lists them.
    pub const ALL: [Role; 7] = [
        Role::SpecAuthor,
        Role::SpecReviewer,
        Role::ImplUi,
        Role::ImplBackend,
        Role::ImplTest,
        Role::E2eRunner,
        Role::Judge,
    ];

    /// Whether the role edits files (and so runs with write permissions).
    pub fn writes(self) -> bool {
        matches!(
            self,
            Role::SpecAuthor | Role::ImplUi | Role::ImplBackend | Role::ImplTest
        )
    }
}

/// What kind of change the issue asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, VariantArray, Display)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum IssueType {
    /// Something is broken.
    BugFix,
    /// A contained addition.
    SmallFeature,
    /// A feature spanning several parts.
    LargeFeature,
    /// Behaviour kept, structure changed.
    Refactor,
    /// Build, deploy, CI, hosting.
    Infrastructure,
    /// A change to an interface others depend on.
    ApiChange,
}

/// How bad it is if the change is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Display)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Risk {
    /// Easy to notice and undo.
    Low,
    /// Visible to users or hard to undo.
    Medium,
    /// Security, data loss, money.
    High,
}

/// How much the change touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Display)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Scope {
    /// A line or two.
    Trivial,
    /// One component.
    Small,
    /// Several components.
    Medium,
    /// Much of the system.
    Large,
}

/// The classifier's answer, as recorded in state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Classification {
    #[serde(rename = "type")]
    pub kind: IssueType,
    pub risk: Risk,
    pub scope: Scope,
    /// The agent that classified, or `fallback` when none could.
    #[serde(default)]
    pub by: String,
    /// Why the fallback was used, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Classification {
    /// The deep-review fallback used when no classification could be obtained.
    pub fn fallback(reason: &str) -> Classification {
        Classification {
            kind: IssueType::LargeFeature,
            risk: Risk::High,
            scope: Scope::Large,
            by: "fallback".into(),
            note: Some(format!(
                "the classifier's answer could not be used ({reason}); deep review with all six personas"
            )),
        }
    }

    /// One line for reports: `small-feature, risk low, scope small`.
    pub fn summary(&self) -> String {
        format!("{}, risk {}, scope {}", self.kind, self.risk, self.scope)
    }
}

/// File name of the structured browser steps inside `.specs/<feature>/`.
pub const STEPS_FILE: &str = "test.steps.json";

/// A byte count for messages: `33554432` is `32 MiB`, `1073741824` is `1024 MiB`.
pub fn human_bytes(n: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= MIB {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    } else {
        format!("{n} bytes")
    }
}

/// Directory inside `.specs/<feature>/` holding the whole output of agent calls whose output
/// was too big to keep in memory; never committed (it holds its own `.gitignore`) and never
/// read back by the orchestrator.
pub const AGENT_LOG_DIR: &str = "agent-log";

/// The `evaluate.browser` value that selects Playwright's own browser instead of a Chromium
/// executable.
pub const BUNDLED_BROWSER: &str = "bundled";

/// Path of `evaluate-<round>.json` (one acceptance round's result) in a feature directory.
pub fn evaluate_result_path(feature_dir: &Path, round: u32) -> PathBuf {
    feature_dir.join(format!("evaluate-{round}.json"))
}

#[cfg(test)]
pub(crate) mod tests;
