//! The two loops without a round cap (`spec_review` ⇄ `spec_generate`, `evaluate` ⇄
//! `implement`) and what a failed gate leads to: another round, a restructure order, or a stall
//! for arbitration.
//!
//! Both loops apply the same rules (`docs/reviews.md`), so they live here once: the stall window
//! holds the rounds since the last arbitration that restarted it, failed rounds never count as
//! progress (they are left out of the window, so a loop of failures cannot look like one that is
//! getting better), and S4's first firing in a window orders the author to restructure the
//! section instead of stopping the loop. Everything here reads and writes the state alone.

use crate::review::stall::{self, RoundView};
use crate::state::{Arbitration, State};
use crate::types::kinds::Decision;
use crate::types::{Finding, Outcome, Phase, Signal};
use crate::util;

/// The round after which the stall window of loop `lp` starts (0 = from the first round):
/// the last arbitration of that loop, restructure orders (S4's first firing) excepted.
pub fn window_start(state: &State, lp: Phase) -> u32 {
    let arbitrated = state
        .arbitrations
        .iter()
        .filter(|a| a.phase == lp && a.decision != Decision::Restructure)
        .map(|a| a.after_round);
    // A confirmed dispute sent its case to the spec loop: the rounds before it failed a case
    // that has since been judged wrong, and are not repeats for the rounds after it.
    let disputed = state
        .disputes
        .iter()
        .filter(|d| lp == Phase::Evaluate && d.end.went_to_spec())
        .map(|d| d.after_round);
    arbitrated.chain(disputed).max().unwrap_or(0)
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

/// After a failed gate in round `round` of loop `lp` with fix-required findings `fix`: send the
/// work back, order a restructure (S4's first firing), or report a stall for arbitration.
pub fn after_failed_gate(state: &mut State, lp: Phase, round: u32, fix: &[Finding]) -> Outcome {
    let window = window(state, lp);
    match stall::detect(&window) {
        Some(Signal::S4) if !restructure_ordered(state, lp) => {
            let key = stall::recurring_class_key(&window);
            let place = fix
                .iter()
                .find(|f| f.class_key.is_some() && f.class_key == key)
                .or_else(|| fix.first());
            let (file, section) = place
                .map(|f| (f.file.clone(), f.section.clone()))
                .unwrap_or_default();
            let what = if lp == Phase::Evaluate {
                format!("acceptance case {section}")
            } else {
                format!("{file} (section \"{section}\")")
            };
            let order = match lp {
                Phase::Evaluate => {
                    state.evaluate_restructure = Some(section.clone());
                    format!(
                        "findings keep landing on {what}: the implementer is ordered to rework what is behind it from scratch"
                    )
                }
                _ => {
                    state.restructure = Some(what.clone());
                    format!(
                        "findings keep landing in {what}: the author is ordered to restructure that section instead of patching it"
                    )
                }
            };
            crate::events::emit(crate::events::Event::Restructure {
                order: order.clone(),
            });
            let (signal, decision) = (crate::types::Signal::S4, Decision::Restructure);
            let record = arbitration((lp, round), signal, decision, order);
            state.arbitrations.push(record);
            Outcome::SendBack
        }
        Some(signal) => {
            crate::events::emit(crate::events::Event::Stall {
                signal,
                round,
                loop_phase: lp,
            });
            Outcome::Stall(signal)
        }
        None => Outcome::SendBack,
    }
}

/// The record of an arbitration of loop `lp` after `round`: `decision` after `signal`, with its
/// `note` (a swap adds who played the role before and after).
pub fn arbitration(
    (lp, round): (Phase, u32),
    signal: Signal,
    decision: Decision,
    note: String,
) -> Arbitration {
    Arbitration {
        phase: lp,
        signal,
        decision,
        from: None,
        to: None,
        note,
        ts: util::now(),
        after_round: round,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{DisputeRecord, EvaluateRound, Mode};
    use crate::types::kinds::{DisputeEnd, Gate, Ruling};

    fn round(n: u32) -> EvaluateRound {
        EvaluateRound {
            round: n,
            pass: 1,
            fail: 1,
            blocked: 0,
            fingerprints: vec!["same".into()],
            class_keys: vec!["test.md|T-A02".into()],
            gate: Gate::Fail,
            rubric_score: None,
        }
    }

    /// A dispute sent to the spec restarts the evaluate window after the round it disputed; a
    /// rejected one does not, and the spec loop's window is not the evaluate loop's business.
    #[test]
    fn a_confirmed_dispute_restarts_the_evaluate_window() {
        let mut state = crate::state::tests::blank(Mode::Auto);
        state.rounds.evaluate = (1..=4).map(round).collect();
        let dispute = |end| DisputeRecord {
            case: "T-A02".into(),
            task: "FIX2".into(),
            after_round: 2,
            by: "alpha".into(),
            argument: String::new(),
            evidence: String::new(),
            reviewer: "beta".into(),
            ruling: Ruling::Confirmed,
            answer: String::new(),
            case_hash: String::new(),
            end,
            decided_by: None,
        };
        state.disputes.push(dispute(DisputeEnd::FixLoop));
        assert_eq!(window(&state, Phase::Evaluate).len(), 4);
        state.disputes.push(dispute(DisputeEnd::Revised));
        assert_eq!(window_start(&state, Phase::Evaluate), 2);
        assert_eq!(window(&state, Phase::Evaluate).len(), 2);
        assert_eq!(window_start(&state, Phase::SpecReview), 0);
    }
}
