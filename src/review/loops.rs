//! The two loops without a round cap (`spec_review` ⇄ `spec_generate`, `evaluate` ⇄
//! `implement`) and what a failed gate leads to: another round, a restructure order, or a stall.
//!
//! Both loops apply the same rules (`docs/reviews.md`), so they live here once: the stall window
//! holds the rounds since the last arbitration that restarted it, failed rounds never count as
//! progress (they are left out of the window, so a loop of failures cannot look like one that is
//! getting better), and S4's first firing in a window orders the author to restructure the
//! section instead of stopping the loop.

use crate::machine::{Outcome, Phase};
use crate::phases::Ctx;
use crate::state::{Arbitration, State};
use crate::util;

use super::Finding;
use super::stall::{self, RoundView};

/// The decision recorded for S4's first firing (not an arbitration that restarts the window).
pub const RESTRUCTURE: &str = "restructure";

/// The round after which the stall window of loop `lp` starts (0 = from the first round):
/// the last arbitration of that loop, restructure orders excepted.
pub fn window_start(state: &State, lp: Phase) -> u32 {
    state
        .arbitrations
        .iter()
        .filter(|a| a.phase == lp && a.decision != RESTRUCTURE)
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
        .any(|a| a.phase == lp && a.decision == RESTRUCTURE && a.after_round > start)
}

/// After a failed gate in round `round` of loop `lp` with fix-required findings `fix`: send the
/// work back, order a restructure (S4's first firing), or report a stall for arbitration.
pub fn after_failed_gate(ctx: &mut Ctx, lp: Phase, round: u32, fix: &[Finding]) -> Outcome {
    let window = window(&ctx.state, lp);
    match stall::detect(&window) {
        Some(stall::Signal::S4) if !restructure_ordered(&ctx.state, lp) => {
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
                    ctx.state.evaluate_restructure = Some(section.clone());
                    format!(
                        "findings keep landing on {what}: the implementer is ordered to rework what is behind it from scratch"
                    )
                }
                _ => {
                    ctx.state.restructure = Some(what.clone());
                    format!(
                        "findings keep landing in {what}: the author is ordered to restructure that section instead of patching it"
                    )
                }
            };
            eprintln!("    S4: {order}");
            ctx.state.arbitrations.push(Arbitration {
                phase: lp,
                signal: "S4".into(),
                decision: RESTRUCTURE.into(),
                from: None,
                to: None,
                note: order,
                ts: util::now(),
                after_round: round,
            });
            Outcome::SendBack
        }
        Some(signal) => {
            eprintln!("    stall signal {signal} after round {round} of {lp}");
            Outcome::Stall(signal)
        }
        None => Outcome::SendBack,
    }
}
