//! The metrics ledger: one JSON line per run, append-only, versioned.
//!
//! A re-run of the retrospective appends a record with the same `run_id` and a higher `seq`
//! (superseding, never editing), and readers keep the last record per run. Appends take an
//! exclusive lock and write the whole line at once, so concurrent runs never interleave.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::state::{State, TaskStatus};
use crate::types::kinds::Gate;

/// Ledger location inside a repository.
pub const LEDGER_PATH: &str = ".specs/pipeline-metrics.jsonl";
/// Version of the record format.
pub const LEDGER_VERSION: u32 = 1;

/// A failure seen in a run: a blocker category or a stall signal, in a phase.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FailureKey {
    /// `category` or `signal`.
    pub kind: String,
    /// e.g. `malformed_output`, `S1`.
    pub name: String,
    /// The phase it happened in.
    pub phase: String,
}

impl FailureKey {
    fn new(kind: &str, name: impl ToString, phase: &str) -> FailureKey {
        let (kind, name, phase) = (kind.into(), name.to_string(), phase.into());
        FailureKey { kind, name, phase }
    }
}

impl std::fmt::Display for FailureKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} `{}` in {}", self.kind, self.name, self.phase)
    }
}

/// One run's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct RunRecord {
    /// [`LEDGER_VERSION`].
    pub ledger_version: u32,
    pub run_id: String,
    /// Supersedes earlier records of the same run when higher.
    pub seq: u32,
    pub feature: String,
    pub issue: Option<u64>,
    #[serde(with = "crate::types::time")]
    pub ts: chrono::DateTime<chrono::Utc>,
    /// `ready` or `draft`.
    pub outcome: String,
    pub rounds: BTreeMap<String, u32>,
    /// Failures (categories and signals) with the phase they happened in.
    pub failures: Vec<FailureKey>,
    pub arbitrations: u32,
    pub overrides: u32,
    pub usd: f64,
    pub durations: BTreeMap<String, i64>,
    /// Ids of pipeline improvements active (present in the prompt files) during this run.
    #[serde(default)]
    pub active_changes: Vec<String>,
}

impl RunRecord {
    /// Builds the record of a finished run.
    pub fn from_state(state: &State, active_changes: Vec<String>) -> RunRecord {
        let blocked = state
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Blocked)
            .filter_map(|t| t.blocker.as_ref());
        let mut failures: Vec<FailureKey> = state
            .agent_failures
            .iter()
            .map(|f| FailureKey::new("category", f.category, f.phase.as_str()))
            .chain(blocked.map(|b| FailureKey::new("category", b, "implement")))
            .chain(
                state
                    .arbitrations
                    .iter()
                    .map(|a| FailureKey::new("signal", a.signal, a.phase.as_str())),
            )
            .collect();
        failures.sort();
        failures.dedup();
        let mut durations = BTreeMap::new();
        for e in &state.phase_log {
            let secs = (e.ended - e.started).num_seconds();
            *durations.entry(e.phase.as_str().to_string()).or_insert(0) += secs;
        }
        let ready = state.pr.as_ref().is_some_and(|p| !p.draft)
            && state
                .rounds
                .evaluate
                .last()
                .is_some_and(|r| r.gate == Gate::Pass);
        RunRecord {
            ledger_version: LEDGER_VERSION,
            run_id: state.run_id.clone(),
            seq: 1,
            feature: state.feature.clone(),
            issue: state.issue.number.map(u64::from),
            ts: crate::util::now(),
            outcome: if ready { "ready" } else { "draft" }.into(),
            rounds: BTreeMap::from([
                (
                    "spec_review".to_string(),
                    state.rounds.spec_review.len() as u32,
                ),
                ("evaluate".to_string(), state.rounds.evaluate.len() as u32),
            ]),
            failures,
            arbitrations: state.arbitrations.len() as u32,
            overrides: state.role_overrides.len() as u32,
            usd: state.total_usd(),
            durations,
            active_changes,
        }
    }
}

/// The ledger file of a repository.
#[derive(Debug, Clone)]
pub struct Ledger {
    path: PathBuf,
}

impl Ledger {
    /// The ledger of `repo`.
    pub fn of(repo: &Path) -> Ledger {
        Ledger {
            path: repo.join(LEDGER_PATH),
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every record as written (superseded ones included), skipping lines that do not parse
    /// (each reported as a warning event, never fatal: one bad line must not hide the others).
    pub fn raw(&self) -> Result<Vec<RunRecord>> {
        if std::fs::symlink_metadata(&self.path).is_err() {
            return Ok(Vec::new());
        }
        let bytes = crate::fsx::read_max(&self.path, crate::fsx::Limit::Ledger)?;
        let text = String::from_utf8_lossy(&bytes);
        let mut out = Vec::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let why = match serde_json::from_str::<RunRecord>(line) {
                Ok(r) if r.ledger_version <= LEDGER_VERSION => {
                    out.push(r);
                    continue;
                }
                Ok(r) => format!(
                    "ledger_version {} is newer than this build",
                    r.ledger_version
                ),
                Err(e) => format!("not a run record ({e})"),
            };
            let message = format!("{}:{}: {why}; line skipped", self.path.display(), i + 1);
            crate::events::emit(crate::events::Event::Warning { message });
        }
        Ok(out)
    }

    /// The current record of every run (the last one per `run_id`), in first-seen order.
    pub fn runs(&self) -> Result<Vec<RunRecord>> {
        let mut order: Vec<String> = Vec::new();
        let mut latest: BTreeMap<String, RunRecord> = BTreeMap::new();
        for r in self.raw()? {
            if !latest.contains_key(&r.run_id) {
                order.push(r.run_id.clone());
            }
            let replace = latest.get(&r.run_id).is_none_or(|old| r.seq >= old.seq);
            if replace {
                latest.insert(r.run_id.clone(), r);
            }
        }
        Ok(order
            .into_iter()
            .filter_map(|id| latest.remove(&id))
            .collect())
    }

    /// Appends `record`, superseding an earlier record of the same run (its `seq` is set here).
    pub fn append(&self, mut record: RunRecord) -> Result<RunRecord> {
        // The ledger lives in the working tree: a planted link or FIFO is refused, not followed.
        let mut file = crate::fsx::open_append(&self.path)?;
        // Exclusive while we read the last seq and append, so concurrent runs neither
        // interleave bytes nor pick the same seq.
        file.lock().map_err(|e| Error::io(&self.path, e))?;
        let previous = self
            .raw()?
            .iter()
            .filter(|r| r.run_id == record.run_id)
            .map(|r| r.seq)
            .max();
        record.seq = previous.map(|s| s + 1).unwrap_or(1);
        let mut line = serde_json::to_vec(&record).map_err(|e| Error::Input {
            path: self.path.clone(),
            problem: format!("record not serialisable: {e}"),
        })?;
        line.push(b'\n');
        file.write_all(&line)
            .map_err(|e| Error::io(&self.path, e))?;
        file.sync_data().map_err(|e| Error::io(&self.path, e))?;
        let _ = file.unlock();
        Ok(record)
    }
}
