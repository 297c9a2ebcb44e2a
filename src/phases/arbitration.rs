//! Arbitration applied to the run: swapping a role, resetting the branch for a rubric restart,
//! asking a person in manual mode, applying their answer, and recording every decision in state.
//! The decisions that only read the run live in `review::arbitration`.

use super::Ctx;
use crate::error::Result;
use crate::review::arbitration::{Resolution, last_round, loop_of, restarted, stalled_role};
use crate::state::{Arbitration, Mode, RoleOverride, Waiting};
use crate::types::kinds::{Answer, Decision, WaitKind};
use crate::types::{Phase, Role, Signal};
use crate::util;

/// Throws the implementation away: resets the work branch to the commit `implement` started
/// from, forgets every task's progress and the open findings, and records the restart.
fn restart(ctx: &mut Ctx, round: u32) -> Result<Resolution> {
    let git = ctx.forge.git().clone();
    let target = ctx
        .state
        .implement_base
        .clone()
        .or_else(|| ctx.state.base_commit.clone())
        .ok_or_else(|| crate::error::Error::State {
            path: ctx.store.path(),
            problem:
                "a rubric restart needs the commit implement started from, and the state has none"
                    .into(),
            help: "the state lost `implement_base` and `base_commit`; start the run again from its issue".into(),
        })?;
    let before = git.head().unwrap_or_default();
    git.run(&["reset", "--quiet", "--hard", &target])?;
    git.discard_changes(&[".specs/"])?;
    let best = ctx
        .state
        .rounds
        .evaluate
        .iter()
        .filter_map(|r| r.rubric_score)
        .fold(f64::NEG_INFINITY, f64::max);
    let note = format!(
        "rubric score has not improved for {} round(s) (best {best:.2}, pass mark {}): implementation thrown away, branch reset from {} to {} (the approved spec); implementing again from the spec",
        ctx.config.evaluate.rubric_plateau_rounds,
        ctx.config
            .evaluate
            .rubric
            .as_ref()
            .map(|r| format!("{:.1}", r.pass))
            .unwrap_or_else(|| "-".into()),
        &before[..before.len().min(10)],
        &target[..target.len().min(10)]
    );
    ctx.state.tasks.clear();
    ctx.state.open_findings.clear();
    if let Some(b) = ctx.state.branch.as_mut() {
        b.head = Some(target.clone());
    }
    ctx.state
        .job
        .record(crate::state::job::Effect::Restart(target));
    ctx.state.arbitrations.push(Arbitration {
        phase: Phase::Evaluate,
        signal: Signal::RubricPlateau,
        decision: Decision::Restart,
        from: None,
        to: None,
        note: note.clone(),
        ts: util::now(),
        after_round: round,
    });
    crate::events::emit(crate::events::Event::Arbitration { note: note.clone() });
    Ok(Resolution::Continue(Phase::Implement))
}

/// Swaps `role` to the opposite of its current agent; `None` when there is no other agent.
fn swap(ctx: &mut Ctx, role: Role, reason: &str) -> Option<(String, String)> {
    let current = ctx.agent(role);
    let to = ctx.config.opposite_of(&current)?;
    if to == current {
        return None;
    }
    ctx.state.roles.insert(role, to.as_str().into());
    ctx.state.role_overrides.push(RoleOverride {
        role,
        from: current.as_str().into(),
        to: to.as_str().into(),
        reason: reason.to_string(),
        ts: util::now(),
    });
    Some((current, to))
}

/// Decides and records an arbitration for `phase` after `signal`.
pub fn arbitrate(ctx: &mut Ctx, phase: Phase, signal: Signal) -> Result<Resolution> {
    let lp = loop_of(phase);
    let round = last_round(&ctx.state, lp);
    if signal == Signal::RubricPlateau && !restarted(&ctx.state) {
        return restart(ctx, round);
    }
    if ctx.state.mode == Mode::Manual {
        let message = format!(
            "{lp} stalled ({signal}) after round {round}; answer with `spec-orchestrate arbitrate <continue|swap|draft|approve> --feature {}`",
            ctx.state.feature
        );
        ctx.state.waiting = Some(Waiting {
            kind: WaitKind::Arbitration,
            message: message.clone(),
            choices: Answer::ALL.to_vec(),
            phase: Some(phase),
            signal: Some(signal),
        });
        ctx.state.arbitrations.push(Arbitration {
            phase: lp,
            signal,
            decision: Decision::Ask,
            from: None,
            to: None,
            note: "manual mode: waiting for a person to choose continue, swap, draft or approve"
                .into(),
            ts: util::now(),
            after_round: round,
        });
        return Ok(Resolution::Wait(message));
    }
    let swaps = ctx
        .state
        .arbitrations
        .iter()
        .filter(|a| a.phase == lp && a.decision == Decision::Swap)
        .count() as u32;
    if swaps < ctx.config.limits.role_swap_max
        && let Some((role, rerun)) = stalled_role(&ctx.state, phase, signal)
        && let Some((from, to)) = swap(ctx, role, &format!("arbitration after {signal}"))
    {
        let note = format!("{role} swapped from {from} to {to} after {signal} in {lp}");
        ctx.state.arbitrations.push(Arbitration {
            phase: lp,
            signal,
            decision: Decision::Swap,
            from: Some(from.into()),
            to: Some(to.into()),
            note: note.clone(),
            ts: util::now(),
            after_round: round,
        });
        crate::events::emit(crate::events::Event::Arbitration { note: note.clone() });
        return Ok(Resolution::Continue(rerun));
    }
    let note = format!(
        "{lp} stalled ({signal}) after round {round}; {} swap(s) of {} used, landing a draft",
        swaps, ctx.config.limits.role_swap_max
    );
    ctx.state.arbitrations.push(Arbitration {
        phase: lp,
        signal,
        decision: Decision::Draft,
        from: None,
        to: None,
        note: note.clone(),
        ts: util::now(),
        after_round: round,
    });
    ctx.state.draft_reasons.push(note.clone());
    crate::events::emit(crate::events::Event::Arbitration { note: note.clone() });
    Ok(Resolution::Draft)
}
