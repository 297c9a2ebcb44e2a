//! Arbitration: what happens when a loop stalls or an agent keeps failing.
//!
//! Auto mode swaps the stalled role to the opposite agent (at most `limits.role_swap_max` times
//! per loop) and otherwise lands a draft; manual mode stops and asks, and `answer` applies the
//! person's choice (`continue`, `swap`, `draft`, `approve`). Every decision — asked, answered or
//! automatic — is recorded in state, because a silent stall is a bug.
//!
//! This module holds the decisions that only read the run (which loop, which role stalled, whether
//! the restart was used); applying them to the run (swapping, resetting the branch, asking a
//! person, recording) is `phases::arbitration`.
//!
//! One signal has a fixed answer in both modes: `RUBRIC_PLATEAU` (the screenshots' rubric score
//! stopped improving) throws the implementation away once — the work branch is reset to the
//! commit `implement` started from, the tasks start over from the spec — because patching a
//! design that plateaued rarely lifts it. A second plateau is arbitrated like any other stall.

use crate::state::State;
use crate::types::kinds::Decision;
use crate::types::{Phase, Role, Signal};

/// What the machine does after arbitration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Run this phase next (after a swap).
    Continue(Phase),
    /// Go to `pr` as a draft.
    Draft,
    /// Wait for a person.
    Wait(String),
}

/// The loop a phase belongs to, for counting swaps and restarting the stall window.
pub fn loop_of(phase: Phase) -> Phase {
    match phase {
        Phase::SpecGenerate | Phase::Inspect | Phase::SpecReview => Phase::SpecReview,
        Phase::Implement | Phase::Evaluate => Phase::Evaluate,
        other => other,
    }
}

/// The role that stalled or failed, and the phase to re-run after swapping it.
pub fn stalled_role(state: &State, phase: Phase, signal: Signal) -> Option<(Role, Phase)> {
    if signal == Signal::AgentFailure
        && let Some(last) = state.agent_failures.last()
    {
        return last.role.config_role().map(|role| (role, phase));
    }
    match (phase, signal) {
        (_, Signal::Blocked | Signal::Manual) => None,
        (Phase::SpecGenerate | Phase::Inspect, _) => Some((Role::SpecAuthor, Phase::SpecGenerate)),
        (Phase::SpecReview, _) => Some((Role::SpecReviewer, Phase::SpecReview)),
        (Phase::Evaluate, _) => Some((Role::ImplBackend, Phase::Implement)),
        _ => None,
    }
}

/// Whether the one allowed rubric restart has happened.
pub fn restarted(state: &State) -> bool {
    state
        .arbitrations
        .iter()
        .any(|a| a.decision == Decision::Restart)
}

/// The last round number of loop `lp`.
pub fn last_round(state: &State, lp: Phase) -> u32 {
    match lp {
        Phase::SpecReview => state.rounds.spec_review.len() as u32,
        _ => state.rounds.evaluate.len() as u32,
    }
}
