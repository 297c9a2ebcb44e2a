//! A wave handed to the workflow's matrix (one runner per task) and what each leg brings back.
//!
//! In the Action a wave of more than one ready task is not run on the job's runner: the job
//! records the wave ([`Fanout`]) and hands it out as a job output; each matrix leg restores the
//! checkpoint, runs its one task and uploads its [`LegResult`] (beside the task's commit); the
//! join applies the results to the state it restored, in task id order. A result is the leg's
//! part of the state only: what the leg added to the record the wave started from, so the
//! join sums the legs' usage and appends their calls and failures whatever order they ended in
//! (docs/state.md, `fanout`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{AgentFailure, CallRecord, DisputeRecord, State, TaskState, Usage};
use crate::types::RunStop;
use crate::types::ids::{AgentName, RunId};

/// A wave of ready tasks handed to the matrix legs of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fanout {
    /// Its tasks, in task id order.
    pub tasks: Vec<String>,
    /// The run whose legs work on them; set by the job that handed the wave out (the phase
    /// process does not know its run). A wave whose run is not set was never handed out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunId>,
    /// What each leg may spend: its share of what was left of `limits.budget_usd` when the
    /// wave was handed out (none without a budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_usd: Option<f64>,
    /// Its number in the state's `waves` record, where the join writes each leg's job, state
    /// and wall time.
    #[serde(default)]
    pub wave: u32,
}

/// What one leg did to the run's record: its task's record, and what it added to the usage,
/// the calls, the failures, the disputes and the draft reasons.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct LegResult {
    /// The task's record as the leg left it (its commit is the leg's, replaced on landing).
    pub task: TaskState,
    /// Usage the leg added, per agent.
    #[serde(default)]
    pub usage: BTreeMap<AgentName, Usage>,
    #[serde(default)]
    pub calls: Vec<CallRecord>,
    #[serde(default)]
    pub agent_failures: Vec<AgentFailure>,
    /// The task's disputes as the leg left them.
    #[serde(default)]
    pub disputes: Vec<DisputeRecord>,
    /// Draft reasons the leg added (a blocked task's).
    #[serde(default)]
    pub draft_reasons: Vec<String>,
    /// The implementer's answer to a review round whose fix task this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_answer: Option<String>,
    /// The budget stop the leg hit at its share, if it did: the join stops the run with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<RunStop>,
    /// The job that ran the leg (set by the leg's job, which knows its run and attempt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leg: Option<super::waves::Leg>,
    /// How long the leg's task took, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<u64>,
}

/// What `after` holds past the length of `base`: the entries a leg appended to a list.
fn appended<T: Clone>(base: &[T], after: &[T]) -> Vec<T> {
    after[base.len().min(after.len())..].to_vec()
}

impl LegResult {
    /// What the leg of `task` did between `base` (the checkpoint it restored) and `after` (its
    /// state when the task ended); `None` when `after` has no such task.
    pub fn between(base: &State, after: &State, task: &str) -> Option<LegResult> {
        let record = after.tasks.iter().find(|t| t.id == task)?.clone();
        let mut usage = BTreeMap::new();
        for (agent, now) in &after.usage {
            let before = base.usage.get(agent).cloned().unwrap_or_default();
            let added = Usage {
                input_tokens: now.input_tokens.saturating_sub(before.input_tokens),
                output_tokens: now.output_tokens.saturating_sub(before.output_tokens),
                usd: (now.usd - before.usd).max(0.0),
                calls: now.calls.saturating_sub(before.calls),
                max_call_usd: now.max_call_usd,
            };
            if added.calls > 0 || added.usd > 0.0 {
                usage.insert(agent.clone(), added);
            }
        }
        let review_answer = after
            .rounds
            .review_running()
            .filter(|r| r.task.as_deref() == Some(task))
            .and_then(|r| r.implementer_answer.clone());
        Some(LegResult {
            task: record,
            usage,
            calls: appended(&base.calls, &after.calls),
            agent_failures: appended(&base.agent_failures, &after.agent_failures),
            disputes: after
                .disputes
                .iter()
                .filter(|d| d.task == task)
                .cloned()
                .collect(),
            draft_reasons: appended(&base.draft_reasons, &after.draft_reasons),
            review_answer,
            stop: after.stop.clone(),
            leg: None,
            wall_ms: None,
        })
    }

    /// Adds the leg's part to `state`: the usage summed into each agent's, the calls, failures
    /// and draft reasons appended, the task's disputes and record replaced (the record's commit
    /// is left to the landing, which makes the commit on the work branch).
    pub fn apply(&self, state: &mut State) {
        for (agent, added) in &self.usage {
            let u = state.usage.entry(agent.clone()).or_default();
            u.input_tokens += added.input_tokens;
            u.output_tokens += added.output_tokens;
            u.usd += added.usd;
            u.calls += added.calls;
            u.max_call_usd = u.max_call_usd.max(added.max_call_usd);
        }
        state.calls.extend(self.calls.iter().cloned());
        state
            .agent_failures
            .extend(self.agent_failures.iter().cloned());
        state
            .draft_reasons
            .extend(self.draft_reasons.iter().cloned());
        let id = &self.task.id;
        state.disputes.retain(|d| &d.task != id);
        state.disputes.extend(self.disputes.iter().cloned());
        if let Some(answer) = &self.review_answer
            && let Some(round) = state
                .rounds
                .review_running_mut()
                .filter(|r| r.task.as_deref() == Some(id.as_str()))
        {
            round.implementer_answer = Some(answer.clone());
        }
        if let Some(t) = state.tasks.iter_mut().find(|t| &t.id == id) {
            let commit = t.commit.take();
            *t = self.task.clone();
            t.commit = commit;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{IssueRef, Mode, TaskStatus};
    use crate::types::Phase;
    use crate::types::kinds::{CallRole, TaskKind};

    fn task(id: &str, status: TaskStatus) -> TaskState {
        TaskState {
            id: id.into(),
            kind: TaskKind::Backend,
            implementer: "alpha".into(),
            reviewer: "beta".into(),
            attempts: 0,
            status,
            commit: None,
            blocker: None,
            title: id.into(),
        }
    }

    fn call(agent: &str, usd: f64) -> CallRecord {
        CallRecord {
            agent: agent.into(),
            role: CallRole::TaskReviewer,
            phase: Phase::Implement,
            attempt: 1,
            input_tokens: 10,
            output_tokens: 5,
            usd,
            ok: true,
            session_id: None,
            task: None,
            ts: crate::util::now(),
        }
    }

    /// The leg's own calls of `agent` at `usd` each, on top of `state`.
    fn spend(state: &mut State, agent: &str, usd: &[f64]) {
        for x in usd {
            state.usage.entry(agent.into()).or_default().add(10, 5, *x);
            state.calls.push(call(agent, *x));
        }
    }

    #[test]
    fn the_join_sums_what_each_leg_added_whatever_order_the_legs_ended_in() {
        let mut base = State::new("f", IssueRef::default(), Mode::Auto);
        base.tasks = vec![
            task("T001", TaskStatus::Pending),
            task("T002", TaskStatus::Pending),
        ];
        spend(&mut base, "alpha", &[1.0]);
        let legs: Vec<LegResult> = [("T001", 0.25), ("T002", 0.5)]
            .iter()
            .map(|(id, usd)| {
                let mut after = base.clone();
                spend(&mut after, "alpha", &[*usd]);
                spend(&mut after, "beta", &[*usd / 2.0]);
                after.tasks.iter_mut().find(|t| t.id == *id).unwrap().status = TaskStatus::Done;
                after
                    .tasks
                    .iter_mut()
                    .find(|t| t.id == *id)
                    .unwrap()
                    .attempts = 1;
                LegResult::between(&base, &after, id).unwrap()
            })
            .collect();
        assert_eq!(legs[0].calls.len(), 2, "only the leg's own calls");
        assert_eq!(legs[0].usage["alpha"].calls, 1);
        let mut joined = base.clone();
        for leg in legs.iter().rev() {
            leg.apply(&mut joined);
        }
        assert_eq!(joined.calls.len(), 5);
        assert!((joined.total_usd() - (1.0 + 0.25 + 0.125 + 0.5 + 0.25)).abs() < 1e-9);
        assert_eq!(joined.usage["alpha"].calls, 3);
        assert_eq!(joined.usage["beta"].calls, 2);
        assert!((joined.usage["alpha"].max_call_usd - 1.0).abs() < 1e-9);
        assert!(
            joined
                .tasks
                .iter()
                .all(|t| t.status == TaskStatus::Done && t.attempts == 1)
        );
        assert!(
            joined.tasks.iter().all(|t| t.commit.is_none()),
            "the landing commits"
        );
        assert!(LegResult::between(&base, &base, "T009").is_none());
    }

    #[test]
    fn a_result_travels_as_json_and_a_fanout_without_run_was_never_handed_out() {
        let f = Fanout {
            tasks: vec!["T001".into(), "T002".into()],
            run: None,
            share_usd: Some(0.5),
            wave: 3,
        };
        let text = serde_json::to_string(&f).unwrap();
        assert_eq!(
            text,
            r#"{"tasks":["T001","T002"],"share_usd":0.5,"wave":3}"#
        );
        assert_eq!(serde_json::from_str::<Fanout>(&text).unwrap(), f);
        let mut base = State::new("f", IssueRef::default(), Mode::Auto);
        base.tasks = vec![task("T001", TaskStatus::Pending)];
        let leg = LegResult::between(&base, &base, "T001").unwrap();
        let back: LegResult = serde_json::from_str(&serde_json::to_string(&leg).unwrap()).unwrap();
        assert_eq!(back, leg);
    }
}
