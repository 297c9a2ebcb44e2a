//! Acceptance evidence: the runners that execute cases, the manifest of what they left behind,
//! and the verification that turns any PASS without an intact file behind it into a FAIL.
//!
//! An agent's claim of PASS is never trusted: only the harness runs cases, and only files under
//! `evidence/<round>/`, hashed into the manifest, back a verdict.

pub mod app;
pub mod browser;
pub mod isolation;
pub mod manifest;
pub mod runners;
pub mod steps;

use serde::{Deserialize, Serialize};

use crate::spec::cases::Method;
use crate::types::Finding;
use crate::types::kinds::{Gate, Verdict};

/// The result of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// T-A01…
    pub id: String,
    /// First requirement id.
    pub requirement: String,
    /// Verification method (`null` when the case has none valid).
    pub method: Option<Method>,
    /// Verdict after verification.
    pub verdict: Verdict,
    /// Evidence files, relative to the feature directory.
    pub evidence: Vec<String>,
    /// What happened, secret-free, on one line (stable across runs, so findings built from it
    /// keep their fingerprint).
    pub detail: String,
    /// Longer diagnostics: the failing step's error, the app log's tail, console errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// The browser steps as the driver reported them (playwright cases), for the HTML report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<browser::StepReport>,
    /// Browser console errors and page errors (playwright cases), redacted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub console: Vec<String>,
    /// A playwright case whose selector matched nothing of the built page and whose steps were
    /// converted again in this round: both versions, and how the first one ended. The verdict,
    /// detail and steps above are then those of the version that ran last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconversion: Option<Reconversion>,
}

/// The record of one re-conversion (see `phases::evaluate`): the version that matched nothing,
/// why, and the version made against the built app (or why none could run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reconversion {
    /// Version number of the steps that ran first (1: converted from the design).
    pub from_version: u32,
    /// The steps that ran first.
    pub previous: Vec<steps::Step>,
    /// How the first run ended (its one-line detail).
    pub previous_detail: String,
    /// The first run's evidence (step log, failure screenshot), relative to the feature
    /// directory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous_evidence: Vec<String>,
    /// The step of the first run whose selector matched nothing.
    pub no_match_step: u32,
    /// Its selector.
    pub selector: String,
    /// Agent asked to convert the case again.
    pub converted_by: String,
    /// The new version (`from_version + 1`) that ran; empty when none could run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<steps::Step>,
    /// Why no new version ran: the converter failed, or its answer did not pass review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// One manifest row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestRow {
    /// Path relative to the feature directory.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Lower-hex sha256.
    pub sha256: String,
}

/// `evaluate-<round>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluateResult {
    /// Round number.
    pub round: u32,
    /// Every case.
    pub cases: Vec<CaseResult>,
    /// Findings for failed or blocked cases.
    pub findings: Vec<Finding>,
    /// Evidence manifest of this round.
    pub manifest: Vec<ManifestRow>,
    /// PASS iff every case passed (and the rubric score, when configured, reached its pass mark).
    pub gate: Gate,
    /// The e2e_runner's rubric score of this round's screenshots, when a rubric is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric: Option<RubricScore>,
    /// How far apart the cases ran (`app.isolation`); absent in rounds recorded before it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<crate::config::Isolation>,
}

/// A rubric score given by the e2e_runner to one round's screenshots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RubricScore {
    /// Criterion → score on a 0–10 scale.
    pub scores: std::collections::BTreeMap<String, f64>,
    /// Weighted mean of the scores by the configured weights.
    pub weighted: f64,
    /// The configured pass mark.
    pub pass: f64,
    /// Agent that scored.
    pub scored_by: String,
    /// Screenshots that were scored (paths relative to the feature directory).
    pub screenshots: Vec<String>,
    /// Criterion → what the scorer cited having seen (required for a low score).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub evidence: std::collections::BTreeMap<String, String>,
    /// Criterion → its own threshold, for each criterion scored below it (the round fails on
    /// these whatever the weighted mean).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub below: std::collections::BTreeMap<String, f64>,
}

impl RubricScore {
    /// Whether the score passes: the weighted mean reaches the pass mark and no criterion is
    /// below its own threshold.
    pub fn passed(&self) -> bool {
        self.weighted >= self.pass && self.below.is_empty()
    }
}
