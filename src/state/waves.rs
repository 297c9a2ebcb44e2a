//! `waves`: the record of `implement`'s waves, so that people can see what ran at once, where
//! and for how long.
//!
//! A wave is the ready tasks `implement` runs at once (one task when nothing else is ready, or
//! when `limits.parallel_tasks` is 1). Each task records where it ran: a thread of the local run
//! (no leg), or a matrix leg of the Action's job graph (its job, the workflow run and the run
//! attempt, so a leg re-run by "Re-run failed jobs" is told apart from the first). The local
//! waves (`phases::implement::waves`) and the Action's legs and join write it through the same
//! few functions here, and the reports read it: the wall time of a wave against the sum of its
//! tasks' times is what running them at once saved.
//!
//! Times of day are to the second, as every record's; wall times are measured with a monotonic
//! clock, in milliseconds, since a task of a few seconds would otherwise read as 0 or 1 s.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::State;
use crate::types::ids::{RunId, Sha, TaskId};
use crate::types::kinds::WaveTaskState;

/// One wave of `implement`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Wave {
    /// 1 for the run's first wave, 2 for the next, …
    pub number: u32,
    #[serde(with = "crate::types::time")]
    pub started: DateTime<Utc>,
    /// When it ended; absent while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_time")]
    pub ended: Option<DateTime<Utc>>,
    /// Its wall time in milliseconds, once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<u64>,
    /// Its tasks, in task id order.
    pub tasks: Vec<WaveTask>,
}

/// One task of a wave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct WaveTask {
    pub task: TaskId,
    /// The matrix leg that ran it; absent for a task the local run ran (a thread of its own,
    /// or the checkout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leg: Option<Leg>,
    pub state: WaveTaskState,
    /// True once its change had to be run again on top of the tasks landed before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rerun: bool,
    /// Its wall time in milliseconds (the re-run included), once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<u64>,
    /// Its commit on the work branch, once landed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<Sha>,
}

/// A matrix leg of the Action's job graph: the GitHub job that ran one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leg {
    /// The job's name as GitHub shows it (`implement (T002)`), or the runner's.
    pub job: String,
    /// The workflow run (`GITHUB_RUN_ID`).
    pub run_id: RunId,
    /// Its attempt (`GITHUB_RUN_ATTEMPT`): 2 and more after "Re-run failed jobs".
    pub attempt: u32,
}

impl Leg {
    /// `implement (T002)`, or `implement (T002), attempt 2` for a re-run job.
    pub fn label(&self) -> String {
        if self.attempt > 1 {
            format!("{}, attempt {}", self.job, self.attempt)
        } else {
            self.job.clone()
        }
    }
}

/// Milliseconds of `d`, for a `wall_ms`.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Wave {
    /// The task `id` of this wave, to change.
    pub fn task_mut(&mut self, id: &str) -> Option<&mut WaveTask> {
        self.tasks.iter_mut().find(|t| t.task == id)
    }

    /// Task `id` starts, on `leg` (`None`: the local run).
    pub fn start_task(&mut self, id: &str, leg: Option<Leg>) {
        if let Some(t) = self.task_mut(id) {
            t.state = WaveTaskState::Running;
            t.leg = leg;
        }
    }

    /// Task `id` is where `state` says, after `wall` of work in all (a re-run's included);
    /// `commit` once it landed.
    pub fn end_task(
        &mut self,
        id: &str,
        state: WaveTaskState,
        wall: Duration,
        commit: Option<Sha>,
    ) {
        if let Some(t) = self.task_mut(id) {
            t.state = state;
            t.rerun |= state == WaveTaskState::Rerun;
            t.wall_ms = Some(millis(wall));
            if commit.is_some() {
                t.commit = commit;
            }
        }
    }

    /// The wave ends at `ended` after `wall`: a task still queued or running there was stopped.
    pub fn close(&mut self, ended: DateTime<Utc>, wall: Duration) {
        for t in &mut self.tasks {
            if !t.state.is_over() {
                t.state = WaveTaskState::Stopped;
            }
        }
        self.ended = Some(ended);
        self.wall_ms = Some(millis(wall));
    }

    /// The sum of its tasks' wall times in milliseconds: what the wave would have taken one task
    /// after another.
    pub fn tasks_ms(&self) -> u64 {
        self.tasks.iter().filter_map(|t| t.wall_ms).sum()
    }

    /// Whether it ran more than one task or on a matrix leg: only then is there more to say
    /// than the task list does.
    pub fn is_parallel(&self) -> bool {
        self.tasks.len() > 1 || self.tasks.iter().any(|t| t.leg.is_some())
    }
}

impl State {
    /// Opens the next wave with `tasks`, all queued, and returns its number. A wave a killed
    /// run left open is closed first, at its start (its wall time unknown), with its unfinished
    /// tasks stopped.
    pub fn open_wave(&mut self, tasks: &[TaskId], started: DateTime<Utc>) -> u32 {
        if let Some(open) = self.waves.last_mut().filter(|w| w.ended.is_none()) {
            let at = open.started;
            open.close(at, Duration::ZERO);
            open.wall_ms = None;
        }
        let number = self.waves.last().map_or(1, |w| w.number + 1);
        self.waves.push(Wave {
            number,
            started,
            ended: None,
            wall_ms: None,
            tasks: tasks
                .iter()
                .map(|id| WaveTask {
                    task: id.clone(),
                    leg: None,
                    state: WaveTaskState::Queued,
                    rerun: false,
                    wall_ms: None,
                    commit: None,
                })
                .collect(),
        });
        number
    }

    /// Wave `number`, to change.
    pub fn wave_mut(&mut self, number: u32) -> Option<&mut Wave> {
        self.waves.iter_mut().find(|w| w.number == number)
    }

    /// The newest wave, running or not.
    pub fn current_wave(&self) -> Option<&Wave> {
        self.waves.last()
    }
}

/// `Option<DateTime<Utc>>` in the record shape of [`crate::types::time`].
mod opt_time {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => crate::types::time::serialize(t, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| crate::types::time::parse(&s).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{IssueRef, Mode};

    fn at(s: &str) -> DateTime<Utc> {
        crate::types::time::parse(s).unwrap()
    }

    fn state() -> State {
        let issue: IssueRef = serde_json::from_value(serde_json::json!({
            "number": null, "title": "t", "url": null
        }))
        .unwrap();
        State::new("f", issue, Mode::Auto)
    }

    /// A wave's tasks move from queued to running to landed or failed; closing the wave stops
    /// what did not end, and the record reads back as written.
    #[test]
    fn a_wave_records_its_tasks_and_round_trips() {
        let mut s = state();
        let ids: Vec<TaskId> = vec!["T001".into(), "T002".into(), "T003".into()];
        let n = s.open_wave(&ids, at("2026-12-01T10:00:00Z"));
        assert_eq!(n, 1);
        let wave = s.wave_mut(n).unwrap();
        let leg = Leg {
            job: "implement (T001)".into(),
            run_id: RunId::from(77),
            attempt: 2,
        };
        wave.start_task("T001", Some(leg.clone()));
        wave.start_task("T002", None);
        wave.end_task(
            "T001",
            WaveTaskState::Landed,
            Duration::from_millis(4200),
            Some(Sha::from("ab".repeat(20))),
        );
        wave.end_task("T002", WaveTaskState::Failed, Duration::from_secs(3), None);
        wave.close(at("2026-12-01T10:00:05Z"), Duration::from_millis(5100));
        assert_eq!(wave.tasks[2].state, WaveTaskState::Stopped);
        assert_eq!(wave.tasks_ms(), 7200);
        assert!(wave.is_parallel());
        assert_eq!(leg.label(), "implement (T001), attempt 2");
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["waves"][0]["tasks"][0]["leg"]["run_id"], 77);
        assert_eq!(json["waves"][0]["tasks"][1]["state"], "failed");
        assert_eq!(json["waves"][0]["ended"], "2026-12-01T10:00:05Z");
        let back: State = serde_json::from_value(json).unwrap();
        assert_eq!(back.waves, s.waves);
    }

    /// A wave a killed run left open is closed when the next one opens: its running task
    /// stopped, no wall time claimed.
    #[test]
    fn a_wave_left_open_is_closed_by_the_next() {
        let mut s = state();
        let n = s.open_wave(&["T001".into()], at("2026-12-01T10:00:00Z"));
        s.wave_mut(n).unwrap().start_task("T001", None);
        let m = s.open_wave(&["T001".into()], at("2026-12-01T11:00:00Z"));
        assert_eq!(m, 2);
        let first = &s.waves[0];
        assert_eq!(first.tasks[0].state, WaveTaskState::Stopped);
        assert_eq!(first.ended, Some(at("2026-12-01T10:00:00Z")));
        assert_eq!(first.wall_ms, None);
        assert!(!s.current_wave().unwrap().is_parallel());
    }
}
