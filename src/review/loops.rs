//! The two loops without a round cap (`spec_review` ⇄ `spec_generate`, `evaluate` ⇄
//! `implement`) and what a failed gate leads to: another round, a restructure order, or a stall.
//!
//! Both loops apply the same rules (`docs/reviews.md`), so they live here once: the stall window
//! holds the rounds since the last arbitration that restarted it, failed rounds never count as
//! progress (they are left out of the window, so a loop of failures cannot look like one that is
//! getting better), and S4's first firing in a window orders the author to restructure the
//! section instead of stopping the loop.
//!
//! This module only reads the state; acting on a failed gate (recording the restructure order,
//! reporting the stall) is `phases::loops`.

use super::stall::RoundView;
use crate::state::State;
use crate::types::Phase;
use crate::types::kinds::Decision;

/// The round after which the stall window of loop `lp` starts (0 = from the first round):
/// the last arbitration of that loop, restructure orders (S4's first firing) excepted.
pub fn window_start(state: &State, lp: Phase) -> u32 {
    state
        .arbitrations
        .iter()
        .filter(|a| a.phase == lp && a.decision != Decision::Restructure)
        .map(|a| a.after_round)
        .max()
        .unwrap_or(0)
}

/// The rounds of loop `lp` the stall detector looks at.
pub fn window(state: &State, lp: Phase) -> Vec<RoundView> {
    let start = window_start(state, lp);
    match lp {
        Phase::Evaluate => state
            .rounds
            .evaluate
            .iter()
            .filter(|r| r.round > start)
            .map(|r| RoundView {
                fingerprints: r.fingerprints.iter().cloned().collect(),
                class_keys: r.class_keys.iter().cloned().collect(),
                count: r.fail + r.blocked,
            })
            .collect(),
        _ => state
            .rounds
            .spec_review
            .iter()
            .filter(|r| r.round > start && r.failure.is_none())
            .map(|r| RoundView {
                fingerprints: r.fingerprints.iter().cloned().collect(),
                class_keys: r.class_keys.iter().cloned().collect(),
                count: r.fix_required,
            })
            .collect(),
    }
}

/// Whether S4 already ordered a restructure in the current window of `lp`.
pub fn restructure_ordered(state: &State, lp: Phase) -> bool {
    let start = window_start(state, lp);
    state
        .arbitrations
        .iter()
        .any(|a| a.phase == lp && a.decision == Decision::Restructure && a.after_round > start)
}
