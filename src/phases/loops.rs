//! What a failed gate leads to in the two loops without a round cap: another round, a restructure
//! order, or a stall for arbitration. The windows and rules are read from `review::loops`; this
//! module acts on the run (records the order, reports the stall).

use super::Ctx;
use crate::review::loops::{restructure_ordered, window};
use crate::review::stall;
use crate::state::Arbitration;
use crate::types::kinds::Decision;
use crate::types::{Finding, Outcome, Phase};
use crate::util;

/// After a failed gate in round `round` of loop `lp` with fix-required findings `fix`: send the
/// work back, order a restructure (S4's first firing), or report a stall for arbitration.
pub fn after_failed_gate(ctx: &mut Ctx, lp: Phase, round: u32, fix: &[Finding]) -> Outcome {
    let window = window(&ctx.state, lp);
    match stall::detect(&window) {
        Some(crate::types::Signal::S4) if !restructure_ordered(&ctx.state, lp) => {
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
            crate::events::emit(crate::events::Event::Restructure {
                order: order.clone(),
            });
            ctx.state.arbitrations.push(Arbitration {
                phase: lp,
                signal: crate::types::Signal::S4,
                decision: Decision::Restructure,
                from: None,
                to: None,
                note: order,
                ts: util::now(),
                after_round: round,
            });
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
