//! Where a run's checkpoint is kept between jobs: a local directory, or a GitHub workflow
//! artifact.
//!
//! In Action mode every job starts from a fresh checkout, so whatever git does not carry — the
//! state file and the evidence, both kept out of history on purpose — travels as a checkpoint:
//! one zip per job, named `spec-orchestrate-<issue>-<phase>-a<attempt>`. A job reads the
//! checkpoint of its *parent* run (finished, hence immutable) rather than of an earlier attempt of
//! its own run, whose artifacts GitHub does not reliably list; the attempt in the name keeps a
//! re-run's upload from colliding with what a failed attempt may have left.
//!
//! The two stores are a closed enum, not a trait object: there are exactly two places a
//! checkpoint can live, and the local one is real (files on disk), not a stand-in.

pub mod archive;
pub mod artifact;
pub mod local;

use crate::error::Result;
use crate::store::artifact::ArtifactStore;
use crate::store::local::LocalStore;
use crate::types::Phase;

/// Every checkpoint artifact name starts with this.
pub const PREFIX: &str = "spec-orchestrate-";

/// `spec-orchestrate-<issue>-<phase>-a<attempt>`.
pub fn artifact_name(issue: u64, phase: Phase, attempt: u32) -> String {
    format!("{PREFIX}{issue}-{phase}-a{attempt}")
}

/// The name a checkpoint takes on its `n`-th creation (`n` ≥ 2) when the artifact service's
/// answer to the first was lost after it made the artifact: that answer held the only URL the
/// bytes could go to, and a name is taken once per run. `<name>.<n>` still reads as the same
/// issue, phase and attempt ([`parse_artifact_name`]), later than `<name>`.
pub fn retry_name(name: &str, n: u32) -> String {
    format!("{name}.{n}")
}

/// The parts of a checkpoint name, or `None` for any other artifact.
pub fn parse_artifact_name(name: &str) -> Option<(u64, Phase, u32)> {
    parse_with_retry(name).map(|(issue, phase, attempt, _)| (issue, phase, attempt))
}

/// [`parse_artifact_name`] with the creation number of [`retry_name`] (1 for the plain name).
fn parse_with_retry(name: &str) -> Option<(u64, Phase, u32, u32)> {
    let rest = name.strip_prefix(PREFIX)?;
    let (issue, rest) = rest.split_once('-')?;
    let (phase, attempt) = rest.rsplit_once("-a")?;
    let (attempt, n) = match attempt.split_once('.') {
        Some((a, n)) => (a, n.parse().ok().filter(|n| *n >= 2)?),
        None => (attempt, 1),
    };
    Some((
        issue.parse().ok()?,
        Phase::parse(phase)?,
        attempt.parse().ok()?,
        n,
    ))
}

/// A checkpoint that was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// Artifact (or file) name.
    pub name: String,
    /// Artifact id on GitHub; `None` locally.
    pub id: Option<u64>,
    /// Bytes of the zip.
    pub size: u64,
    /// `sha256:<hex>` of the zip.
    pub digest: String,
}

/// A checkpoint that was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its name.
    pub name: String,
    /// The zip.
    pub zip: Vec<u8>,
}

/// The checkpoint store of this job.
#[derive(Debug)]
pub enum Store {
    /// A directory (self-hosted runners without the artifact service, local debugging).
    Local(LocalStore),
    /// GitHub workflow artifacts.
    Artifact(Box<ArtifactStore>),
}

impl Store {
    /// Saves `zip` as the checkpoint `name` of run `run_id`.
    pub fn save(&self, run_id: u64, name: &str, zip: &[u8]) -> Result<Saved> {
        match self {
            Store::Local(s) => s.save(run_id, name, zip),
            Store::Artifact(s) => s.save(name, zip),
        }
    }

    /// The newest checkpoint of `issue` written by run `run_id` (the highest attempt), if any.
    pub fn load_latest(&self, run_id: u64, issue: u64) -> Result<Option<Found>> {
        match self {
            Store::Local(s) => s.load_latest(run_id, issue),
            Store::Artifact(s) => s.load_latest(run_id, issue),
        }
    }
}

/// Of several checkpoint names, the one a child run must read: this issue's, highest attempt
/// (a re-run's checkpoint supersedes what a failed attempt may have uploaded), and of one
/// attempt the latest creation ([`retry_name`]).
pub fn pick_latest<'a>(issue: u64, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names
        .into_iter()
        .filter_map(|n| parse_with_retry(n).map(|(i, _, a, r)| (n, i, (a, r))))
        .filter(|(_, i, _)| *i == issue)
        .max_by_key(|(_, _, order)| *order)
        .map(|(n, _, _)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_highest_attempt_wins() {
        let n = artifact_name(42, Phase::SpecReview, 3);
        assert_eq!(n, "spec-orchestrate-42-spec_review-a3");
        assert_eq!(parse_artifact_name(&n), Some((42, Phase::SpecReview, 3)));
        assert_eq!(parse_artifact_name("evidence"), None);
        assert_eq!(parse_artifact_name("spec-orchestrate-x-pr-a1"), None);
        let names = [
            "spec-orchestrate-42-implement-a1",
            "spec-orchestrate-42-implement-a2",
            "spec-orchestrate-7-implement-a9",
            "playwright-report",
        ];
        assert_eq!(
            pick_latest(42, names),
            Some("spec-orchestrate-42-implement-a2")
        );
        assert_eq!(pick_latest(8, names), None);
        let again = retry_name("spec-orchestrate-42-implement-a2", 2);
        assert_eq!(parse_artifact_name(&again), Some((42, Phase::Implement, 2)));
        assert_eq!(
            parse_artifact_name("spec-orchestrate-42-implement-a2.x"),
            None
        );
        assert_eq!(
            parse_artifact_name("spec-orchestrate-42-implement-a2.1"),
            None
        );
        let with_retry = [names[0], names[1], again.as_str(), names[2]];
        assert_eq!(pick_latest(42, with_retry), Some(again.as_str()));
    }
}
