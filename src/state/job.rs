//! The record of what the run wrote outside itself, typed: the `side_effects` list of the state.
//!
//! The Action job remembers across jobs which comments it has read, how many jobs in a row got
//! nowhere, which sha it pushed, the branch the pull request goes to, the pull request, the
//! status comment, every job's run and every round's uploaded evidence; the phases remember their
//! commits, the PR body and a rubric restart. All of it must survive a checkpoint, so it lives in
//! the state, and a re-run reads it to update what exists instead of duplicating it.
//!
//! On disk it is the list it always was — `[{"key": "push", "id": "<sha>"}, …]`, in the order
//! the entries were first recorded, each `id` written exactly as before (docs/state.md,
//! "side_effects") — so files written by older builds load unchanged and the document is
//! byte-compatible. In memory each key has its type: [`Effect`]. A known key whose `id` has the
//! wrong shape is a corrupted file (reported with the key), never read as "not recorded"; a key
//! this build does not know (`dispatch`, written by early builds) is kept as it was.
//!
//! The key stays `side_effects` and the shape a `{key, id}` list, although the field is this
//! typed record: the checkpoints of a running chain are read by jobs of older and newer builds,
//! and a renamed field would need a schema version that refuses the older ones, for nothing the
//! typed reading does not already give (docs/state.md, "Why the key is still `side_effects`").
//! Migrating an old state is this reading: the bag of older builds is the format.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::types::Phase;
use crate::types::ids::{CommentId, PrNumber, RunId, Sha};
use crate::types::kinds::{JobOutcome, PhaseOutcome};

/// One recorded write, typed by its key.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Effect {
    /// `status-comment`: the id of the status comment.
    StatusComment(CommentId),
    /// `push`: the sha last pushed to the work branch on `origin` (the next job's lease).
    Push(Sha),
    /// `base-branch`: the branch the pull request goes to (the repository's default at intake).
    BaseBranch(String),
    /// `pull-request`: the number of the pull request on GitHub.
    PullRequest(PrNumber),
    /// `budget-idle`: how many jobs in a row reached their time budget with no progress.
    BudgetIdle(u64),
    /// `comments-seen`: the id of the newest issue comment the chain processed.
    CommentsSeen(CommentId),
    /// `reviews-taken`: the id of the newest pull request review a review round took.
    ReviewsTaken(u64),
    /// `run:<id>`: one job of the chain, as the status comment lists it.
    Run(JobRun),
    /// `evidence:<round>`: where a round's evidence was uploaded.
    Evidence(EvidenceLinks),
    /// `pr`: the path of the PR body written locally.
    PrBody(String),
    /// `restart`: the sha a rubric restart reset the branch to.
    Restart(Sha),
    /// `commit:<what>`: a commit the run made (`commit:spec`, `commit:T001`).
    Commit {
        /// `spec`, or the task id.
        what: String,
        sha: Sha,
    },
    /// `improve:<proposal>`: an improvement branch the retrospective created.
    Improvement {
        proposal: String,
        /// The branch and its commit.
        branch: ImprovementBranch,
    },
    /// A key this build does not know, kept byte for byte.
    Other { key: String, id: serde_json::Value },
}

/// One job of the Action chain: the status comment lists these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct JobRun {
    pub run_id: RunId,
    pub attempt: u32,
    pub phase: Phase,
    /// How it ended (`ok`, `send_back`, `waiting`, `stopped`, `continued (job time budget)`, …).
    pub outcome: JobOutcome,
    pub url: String,
    /// Its checkpoint artifact.
    pub checkpoint: String,
    /// The phases the job ran before `phase`, with their outcomes, when phases that call no
    /// agent rode along (`github.jobs: per_agent_phase`); omitted when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<EarlierPhase>,
}

/// A phase a job ran before its last one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct EarlierPhase {
    pub phase: Phase,
    pub outcome: PhaseOutcome,
}

/// One uploaded evidence file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct UploadedFile {
    pub id: u64,
    pub name: String,
    /// Where a browser shows it.
    pub url: String,
}

/// Where a round's evidence was uploaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct EvidenceLinks {
    pub round: u32,
    /// Workflow run that holds the artifacts.
    pub run_id: RunId,
    /// Evidence path (relative to the feature directory) → its artifact.
    pub files: BTreeMap<String, UploadedFile>,
}

/// An improvement branch of the retrospective.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct ImprovementBranch {
    pub branch: String,
    pub commit: Sha,
}

impl Effect {
    /// The key the entry is written under.
    pub fn key(&self) -> String {
        match self {
            Effect::StatusComment(_) => "status-comment".into(),
            Effect::Push(_) => "push".into(),
            Effect::BaseBranch(_) => "base-branch".into(),
            Effect::PullRequest(_) => "pull-request".into(),
            Effect::BudgetIdle(_) => "budget-idle".into(),
            Effect::CommentsSeen(_) => "comments-seen".into(),
            Effect::ReviewsTaken(_) => "reviews-taken".into(),
            Effect::Run(r) => format!("run:{}", r.run_id),
            Effect::Evidence(l) => format!("evidence:{}", l.round),
            Effect::PrBody(_) => "pr".into(),
            Effect::Restart(_) => "restart".into(),
            Effect::Commit { what, .. } => format!("commit:{what}"),
            Effect::Improvement { proposal, .. } => format!("improve:{proposal}"),
            Effect::Other { key, .. } => key.clone(),
        }
    }

    /// The entry's `id` as the file holds it. Through a `serde_json::Value`, as older builds
    /// wrote it, so an object's keys keep the order they always had on disk.
    fn id(&self) -> serde_json::Result<serde_json::Value> {
        use serde_json::{Value, to_value};
        Ok(match self {
            Effect::PullRequest(n) => Value::from(n.get()),
            Effect::BudgetIdle(n) | Effect::ReviewsTaken(n) => Value::from(*n),
            Effect::StatusComment(id) | Effect::CommentsSeen(id) => Value::from(id.get()),
            Effect::BaseBranch(s) | Effect::PrBody(s) => Value::String(s.clone()),
            Effect::Push(sha) | Effect::Restart(sha) | Effect::Commit { sha, .. } => {
                Value::String(sha.to_string())
            }
            Effect::Run(r) => to_value(r)?,
            Effect::Evidence(l) => to_value(l)?,
            Effect::Improvement { branch, .. } => to_value(branch)?,
            Effect::Other { id, .. } => id.clone(),
        })
    }

    /// The entry recorded under `key` with `id`; an `id` that is not what the key records is an
    /// error naming both.
    fn read(key: String, id: serde_json::Value) -> Result<Effect, String> {
        use serde_json::from_value;
        let wrong = |e: serde_json::Error| format!("side effect `{key}`: {e}");
        let number = |id: &serde_json::Value| {
            id.as_u64()
                .ok_or_else(|| format!("side effect `{key}`: expected a number, found {id}"))
        };
        let text = |id: serde_json::Value| match id {
            serde_json::Value::String(s) => Ok(s),
            other => Err(format!(
                "side effect `{key}`: expected a string, found {other}"
            )),
        };
        Ok(match key.as_str() {
            "status-comment" => Effect::StatusComment(number(&id)?.into()),
            "pull-request" => Effect::PullRequest(number(&id)?.into()),
            "budget-idle" => Effect::BudgetIdle(number(&id)?),
            "comments-seen" => Effect::CommentsSeen(number(&id)?.into()),
            "reviews-taken" => Effect::ReviewsTaken(number(&id)?),
            "push" => Effect::Push(text(id)?.into()),
            "base-branch" => Effect::BaseBranch(text(id)?),
            "pr" => Effect::PrBody(text(id)?),
            "restart" => Effect::Restart(text(id)?.into()),
            k if k.starts_with("run:") => Effect::Run(from_value(id).map_err(wrong)?),
            k if k.starts_with("evidence:") => Effect::Evidence(from_value(id).map_err(wrong)?),
            k if k.starts_with("commit:") => Effect::Commit {
                what: k["commit:".len()..].to_string(),
                sha: text(id)?.into(),
            },
            k if k.starts_with("improve:") => Effect::Improvement {
                proposal: k["improve:".len()..].to_string(),
                branch: from_value(id).map_err(wrong)?,
            },
            _ => Effect::Other { key, id },
        })
    }
}

/// The value `$pat` binds in the first entry it matches.
macro_rules! first {
    ($self:ident, $($pat:pat_param)|+ $(if $guard:expr)? => $value:expr) => {
        $self.0.iter().find_map(|e| match e {
            $($pat)|+ $(if $guard)? => Some($value),
            _ => None,
        })
    };
}

/// Every recorded write, in the order each key was first recorded (a later write of the same
/// key replaces the entry in place).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobRecord(Vec<Effect>);

impl JobRecord {
    /// Records `effect`, replacing an earlier entry with the same key where it stood.
    pub fn record(&mut self, effect: Effect) {
        let key = effect.key();
        match self.0.iter_mut().find(|e| e.key() == key) {
            Some(slot) => *slot = effect,
            None => self.0.push(effect),
        }
    }

    /// Every entry, in order.
    pub fn entries(&self) -> &[Effect] {
        &self.0
    }

    /// Removes every entry `drop` selects.
    pub fn forget(&mut self, mut drop: impl FnMut(&Effect) -> bool) {
        self.0.retain(|e| !drop(e));
    }

    /// The newest comment the chain processed; `None` before the first job read any.
    pub fn comments_seen(&self) -> Option<CommentId> {
        first!(self, Effect::CommentsSeen(n) => *n)
    }

    /// The newest pull request review a review round took (0 before the first).
    pub fn reviews_taken(&self) -> u64 {
        first!(self, Effect::ReviewsTaken(n) => *n).unwrap_or(0)
    }

    /// How many jobs in a row reached their time budget with no progress (0 when unrecorded).
    pub fn idle_jobs(&self) -> u64 {
        first!(self, Effect::BudgetIdle(n) => *n).unwrap_or(0)
    }

    /// The sha last pushed to the work branch.
    pub fn pushed(&self) -> Option<&str> {
        first!(self, Effect::Push(s) => s.as_str())
    }

    /// The branch the pull request goes to.
    pub fn base_branch(&self) -> Option<&str> {
        first!(self, Effect::BaseBranch(s) => s.as_str())
    }

    /// The pull request's number on GitHub.
    pub fn pull_request(&self) -> Option<PrNumber> {
        first!(self, Effect::PullRequest(n) => *n)
    }

    /// The status comment's id.
    pub fn status_comment(&self) -> Option<CommentId> {
        first!(self, Effect::StatusComment(n) => *n)
    }

    /// The jobs of the chain, in the order they were first recorded.
    pub fn runs(&self) -> impl Iterator<Item = &JobRun> {
        self.0.iter().filter_map(|e| match e {
            Effect::Run(r) => Some(r),
            _ => None,
        })
    }

    /// Where round `round`'s evidence was uploaded, if it was.
    pub fn evidence(&self, round: u32) -> Option<&EvidenceLinks> {
        first!(self, Effect::Evidence(l) if l.round == round => l)
    }
}

/// An entry as the file holds it.
#[derive(Serialize, Deserialize)]
struct Raw {
    key: String,
    id: serde_json::Value,
}

impl Serialize for JobRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeSeq};
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for e in &self.0 {
            let id = e.id().map_err(S::Error::custom)?;
            seq.serialize_element(&Raw { key: e.key(), id })?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for JobRecord {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let raw = Vec::<Raw>::deserialize(d)?;
        raw.into_iter()
            .map(|r| Effect::read(r.key, r.id).map_err(D::Error::custom))
            .collect::<Result<Vec<_>, _>>()
            .map(JobRecord)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A list as an older build wrote it, every key it ever used, read and written back.
    fn old_list() -> serde_json::Value {
        json!([
            {"key": "base-branch", "id": "main"},
            {"key": "comments-seen", "id": 40},
            {"key": "status-comment", "id": 9102},
            {"key": "push", "id": "2b0a05bd450e15d55171b7abc0f01c5391bcb5f5"},
            {"key": "commit:spec", "id": "152690e8d085e48d3011cda8cd7b28c4552153e3"},
            {"key": "commit:T001", "id": "0123456789abcdef0123456789abcdef01234567"},
            {"key": "run:8101", "id": {"attempt": 1, "checkpoint": "spec-orchestrate-57-intake-a1",
                "outcome": "ok", "phase": "intake", "run_id": 8101,
                "url": "https://github.com/acme/notes/actions/runs/8101"}},
            {"key": "budget-idle", "id": 2},
            {"key": "evidence:4", "id": {"files": {"evidence/4/report.html": {"id": 9301,
                "name": "n", "url": "u"}}, "round": 4, "run_id": 8116}},
            {"key": "pr", "id": ".specs/f/pr-body.md"},
            {"key": "pull-request", "id": 9},
            {"key": "restart", "id": "fedcba9876543210fedcba9876543210fedcba98"},
            {"key": "improve:P1", "id": {"branch": "spec-orchestrate/improve-p1", "commit": "abc"}},
            {"key": "reviews-taken", "id": 7702},
            {"key": "dispatch", "id": {"anything": [1, 2]}}
        ])
    }

    #[test]
    fn an_older_list_loads_typed_and_writes_back_unchanged() {
        let record: JobRecord = serde_json::from_value(old_list()).expect("loads");
        assert_eq!(record.base_branch(), Some("main"));
        assert_eq!(record.comments_seen().map(u64::from), Some(40));
        assert_eq!(record.status_comment().map(u64::from), Some(9102));
        assert_eq!(
            record.pushed(),
            Some("2b0a05bd450e15d55171b7abc0f01c5391bcb5f5")
        );
        assert_eq!(record.idle_jobs(), 2);
        assert_eq!(record.pull_request(), Some(9.into()));
        assert_eq!(record.reviews_taken(), 7702);
        assert_eq!(JobRecord::default().reviews_taken(), 0);
        let runs: Vec<u64> = record.runs().map(|r| r.run_id.get()).collect();
        assert_eq!(runs, [8101]);
        assert!(record.runs().all(|r| r.earlier.is_empty()));
        assert_eq!(record.evidence(4).map(|l| l.files.len()), Some(1));
        assert!(record.evidence(3).is_none());
        assert!(matches!(
            record.entries().last(),
            Some(Effect::Other { key, .. }) if key == "dispatch"
        ));
        // Byte for byte what the untyped list (`{key, id}` entries) of older builds wrote.
        let untyped: Vec<Raw> = serde_json::from_value(old_list()).unwrap();
        assert_eq!(
            serde_json::to_string(&record).unwrap(),
            serde_json::to_string(&untyped).unwrap()
        );
    }

    #[test]
    fn a_write_replaces_its_key_where_it_stood() {
        let mut record = JobRecord::default();
        record.record(Effect::Push("a".into()));
        record.record(Effect::BudgetIdle(1));
        record.record(Effect::Push("b".into()));
        let keys: Vec<String> = record.entries().iter().map(Effect::key).collect();
        assert_eq!(keys, ["push", "budget-idle"]);
        assert_eq!(record.pushed(), Some("b"));
        assert_eq!(record.idle_jobs(), 1);
        assert_eq!(JobRecord::default().idle_jobs(), 0);
    }

    /// A known key with the wrong kind of id is refused naming the key: a run record that does
    /// not parse used to be skipped without a word.
    #[test]
    fn a_known_key_with_the_wrong_id_is_refused_naming_it() {
        for (entry, key) in [
            (json!({"key": "push", "id": 7}), "push"),
            (json!({"key": "comments-seen", "id": "x"}), "comments-seen"),
            (json!({"key": "reviews-taken", "id": "x"}), "reviews-taken"),
            (json!({"key": "run:5", "id": {"run_id": 5}}), "run:5"),
        ] {
            let err = serde_json::from_value::<JobRecord>(json!([entry]))
                .expect_err(key)
                .to_string();
            assert!(err.contains(&format!("`{key}`")), "{err}");
        }
    }
}
