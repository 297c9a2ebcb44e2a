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

/// The checkpoint of a wave's join job, `spec-orchestrate-<issue>-<phase>-a<attempt>+join`: the
/// join runs in the same workflow run as the job that handed the wave out, whose checkpoint
/// took the plain name (a name is taken once per run), and of one attempt it is the later.
pub fn join_artifact_name(issue: u64, phase: Phase, attempt: u32) -> String {
    format!("{}{JOIN_SUFFIX}", artifact_name(issue, phase, attempt))
}

/// What ends a join's checkpoint name (before a [`retry_name`] number).
const JOIN_SUFFIX: &str = "+join";

/// Every leg result's name starts with this; it never parses as a checkpoint.
pub const LEG_PREFIX: &str = "spec-orchestrate-leg-";

/// `spec-orchestrate-leg-<issue>-<task>-a<attempt>`: what the matrix leg of `task` uploads
/// (docs/action-mode.md, "Waves on runners").
pub fn leg_name(issue: u64, task: &str, attempt: u32) -> String {
    format!("{LEG_PREFIX}{issue}-{task}-a{attempt}")
}

/// The issue, task and attempt of a leg result's name (with the creation number of
/// [`retry_name`], 1 for the plain name), or `None` for any other artifact.
pub fn parse_leg_name(name: &str) -> Option<(u64, String, u32, u32)> {
    let (issue, task, attempt, n) = split_name(name, LEG_PREFIX)?;
    let task_ok = !task.is_empty() && task.chars().all(|c| c.is_ascii_alphanumeric());
    task_ok.then_some(())?;
    Some((
        issue.parse().ok()?,
        task.to_string(),
        attempt.parse().ok()?,
        n,
    ))
}

/// Of several artifact names, the newest leg result of each task of `issue`: the highest
/// attempt (a re-run leg's result replaces a lost or earlier one), of one attempt the latest
/// creation; `(task, name)` in task order.
pub fn pick_legs<'a>(
    issue: u64,
    names: impl IntoIterator<Item = &'a str>,
) -> Vec<(String, &'a str)> {
    let mut best: std::collections::BTreeMap<String, ((u32, u32), &'a str)> = Default::default();
    for name in names {
        let Some((i, task, attempt, n)) = parse_leg_name(name) else {
            continue;
        };
        if i != issue {
            continue;
        }
        let entry = best.entry(task).or_insert(((attempt, n), name));
        if (attempt, n) > entry.0 {
            *entry = ((attempt, n), name);
        }
    }
    best.into_iter()
        .map(|(task, (_, name))| (task, name))
        .collect()
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

/// [`parse_artifact_name`] with the order of the name within its attempt: the join's checkpoint
/// ([`join_artifact_name`]) after the plain one, then the creation number of [`retry_name`]
/// (1 for the plain name).
fn parse_with_retry(name: &str) -> Option<(u64, Phase, u32, (u32, u32))> {
    let (issue, phase, attempt, n) = split_name(name, PREFIX)?;
    let (attempt, join) = match attempt.strip_suffix(JOIN_SUFFIX) {
        Some(a) => (a, 1),
        None => (attempt, 0),
    };
    Some((
        issue.parse().ok()?,
        Phase::parse(phase)?,
        attempt.parse().ok()?,
        (join, n),
    ))
}

/// `<prefix><issue>-<middle>-a<attempt>[.<n>]` in its parts, `n` (the creation number of
/// [`retry_name`], at least 2 when written) 1 for the plain name.
fn split_name<'a>(name: &'a str, prefix: &str) -> Option<(&'a str, &'a str, &'a str, u32)> {
    let (issue, rest) = name.strip_prefix(prefix)?.split_once('-')?;
    let (middle, attempt) = rest.rsplit_once("-a")?;
    match attempt.split_once('.') {
        Some((a, n)) => Some((issue, middle, a, n.parse().ok().filter(|n| *n >= 2)?)),
        None => Some((issue, middle, attempt, 1)),
    }
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
#[allow(missing_docs)]
pub struct Found {
    pub name: String,
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

    /// The newest leg result of each task of `issue` that run `run_id` holds, over all its
    /// attempts ([`pick_legs`]): `(task, result)` in task order.
    pub fn load_legs(&self, run_id: u64, issue: u64) -> Result<Vec<(String, Found)>> {
        match self {
            Store::Local(s) => s.load_legs(run_id, issue),
            Store::Artifact(s) => s.load_legs(run_id, issue),
        }
    }
}

/// Of several checkpoint names, the one a child run must read: this issue's, highest attempt
/// (a re-run's checkpoint supersedes what a failed attempt may have uploaded), and of one
/// attempt the latest creation ([`retry_name`]).
pub fn pick_latest<'a>(issue: u64, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names
        .into_iter()
        .filter_map(|n| parse_with_retry(n).map(|(i, _, a, (j, r))| (n, i, (a, j, r))))
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

    #[test]
    fn a_join_checkpoint_follows_the_plain_one_of_its_attempt_and_precedes_a_later_attempt() {
        let join = join_artifact_name(42, Phase::Implement, 1);
        assert_eq!(join, "spec-orchestrate-42-implement-a1+join");
        assert_eq!(parse_artifact_name(&join), Some((42, Phase::Implement, 1)));
        let plain = artifact_name(42, Phase::Implement, 1);
        assert_eq!(
            pick_latest(42, [join.as_str(), plain.as_str()]),
            Some(join.as_str())
        );
        let retried = retry_name(&join, 2);
        assert_eq!(
            pick_latest(42, [retried.as_str(), join.as_str(), plain.as_str()]),
            Some(retried.as_str())
        );
        let later = artifact_name(42, Phase::Implement, 2);
        assert_eq!(
            pick_latest(42, [join.as_str(), later.as_str()]),
            Some(later.as_str())
        );
        assert_eq!(
            parse_artifact_name("spec-orchestrate-42-implement-a1+other"),
            None
        );
    }

    #[test]
    fn legs_are_no_checkpoints_and_the_newest_attempt_of_each_task_wins() {
        let names = [
            leg_name(42, "T001", 1),
            leg_name(42, "T002", 1),
            leg_name(42, "T002", 2),
            retry_name(&leg_name(42, "T003", 1), 2),
            leg_name(42, "T003", 1),
            leg_name(7, "T001", 3),
            artifact_name(42, Phase::Implement, 1),
        ];
        assert_eq!(names[0], "spec-orchestrate-leg-42-T001-a1");
        assert!(
            names
                .iter()
                .take(6)
                .all(|n| parse_artifact_name(n).is_none())
        );
        assert_eq!(
            pick_latest(42, names.iter().map(String::as_str)),
            Some(names[6].as_str())
        );
        let legs = pick_legs(42, names.iter().map(String::as_str));
        let picked: Vec<(&str, &str)> = legs.iter().map(|(t, n)| (t.as_str(), *n)).collect();
        assert_eq!(
            picked,
            [
                ("T001", names[0].as_str()),
                ("T002", names[2].as_str()),
                ("T003", names[3].as_str())
            ]
        );
        assert_eq!(parse_leg_name("spec-orchestrate-leg-42-T0/1-a1"), None);
        assert_eq!(parse_leg_name("spec-orchestrate-leg-42--a1"), None);
    }
}
