//! Arbitration: what happens when a loop stalls or an agent keeps failing.
//!
//! Auto mode swaps the stalled role to the opposite agent (at most `limits.role_swap_max` times
//! per loop) and otherwise lands a draft; manual mode stops and asks. Every decision is recorded
//! in state, because a silent stall is a bug.
//!
//! One signal has a fixed answer in both modes: `RUBRIC_PLATEAU` (the screenshots' rubric score
//! stopped improving) throws the implementation away once — the work branch is reset to the
//! commit `implement` started from, the tasks start over from the spec — because patching a
//! design that plateaued rarely lifts it. A second plateau is arbitrated like any other stall.

use crate::config::Role;
use crate::error::Result;
use crate::machine::Phase;
use crate::phases::Ctx;
use crate::review::Signal;
use crate::state::{Arbitration, Mode, RoleOverride, Waiting};
use crate::util;

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
fn stalled_role(ctx: &Ctx, phase: Phase, signal: Signal) -> Option<(Role, Phase)> {
    if signal == Signal::AgentFailure
        && let Some(last) = ctx.state.agent_failures.last()
    {
        let role = Role::ALL.into_iter().find(|r| r.as_str() == last.role)?;
        return Some((role, phase));
    }
    match (phase, signal) {
        (_, Signal::Blocked) => None,
        (Phase::SpecGenerate | Phase::Inspect, _) => Some((Role::SpecAuthor, Phase::SpecGenerate)),
        (Phase::SpecReview, _) => Some((Role::SpecReviewer, Phase::SpecReview)),
        (Phase::Evaluate, _) => Some((Role::ImplBackend, Phase::Implement)),
        _ => None,
    }
}

/// Decision name of a rubric restart in the arbitration record.
pub const RESTART: &str = "restart";

/// Whether the one allowed rubric restart has happened.
pub fn restarted(ctx: &Ctx) -> bool {
    ctx.state.arbitrations.iter().any(|a| a.decision == RESTART)
}

/// Throws the implementation away: resets the work branch to the commit `implement` started
/// from, forgets every task's progress and the open findings, and records the restart.
fn restart(ctx: &mut Ctx, round: u32) -> Result<Resolution> {
    let git = ctx.forge.git().clone();
    let target = ctx
        .state
        .implement_base
        .clone()
        .or_else(|| ctx.state.base_commit.clone())
        .ok_or_else(|| {
            crate::Error::Usage(
                "a rubric restart needs the commit implement started from, and the state has none"
                    .into(),
            )
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
        .record_side_effect("restart", serde_json::Value::String(target));
    ctx.state.arbitrations.push(Arbitration {
        phase: Phase::Evaluate,
        signal: Signal::RubricPlateau.to_string(),
        decision: RESTART.into(),
        from: None,
        to: None,
        note: note.clone(),
        ts: util::now(),
        after_round: round,
    });
    eprintln!("    arbitration: {note}");
    Ok(Resolution::Continue(Phase::Implement))
}

/// Decides and records an arbitration for `phase` after `signal`.
pub fn arbitrate(ctx: &mut Ctx, phase: Phase, signal: Signal) -> Result<Resolution> {
    let lp = loop_of(phase);
    let round = match lp {
        Phase::SpecReview => ctx.state.rounds.spec_review.len() as u32,
        _ => ctx.state.rounds.evaluate.len() as u32,
    };
    if signal == Signal::RubricPlateau && !restarted(ctx) {
        return restart(ctx, round);
    }
    if ctx.state.mode == Mode::Manual {
        let message = format!(
            "{lp} stalled ({signal}) after round {round}; answer with `spec-orchestrate arbitrate <continue|swap|draft|approve>`"
        );
        ctx.state.waiting = Some(Waiting {
            kind: "arbitration".into(),
            message: message.clone(),
            choices: vec![
                "continue".into(),
                "swap".into(),
                "draft".into(),
                "approve".into(),
            ],
        });
        ctx.state.arbitrations.push(Arbitration {
            phase: lp,
            signal: signal.to_string(),
            decision: "ask".into(),
            from: None,
            to: None,
            note: "manual mode: waiting for a person".into(),
            ts: util::now(),
            after_round: round,
        });
        return Ok(Resolution::Wait(message));
    }
    let swaps = ctx
        .state
        .arbitrations
        .iter()
        .filter(|a| a.phase == lp && a.decision == "swap")
        .count() as u32;
    if swaps < ctx.config.limits.role_swap_max
        && let Some((role, rerun)) = stalled_role(ctx, phase, signal)
    {
        let current = ctx
            .state
            .agent_for(role)
            .unwrap_or(ctx.config.roles.get(role))
            .to_string();
        if let Some(to) = ctx.config.opposite_of(&current)
            && to != current
        {
            ctx.state
                .roles
                .insert(role.as_str().to_string(), to.clone());
            let note = format!("{role} swapped from {current} to {to} after {signal} in {lp}");
            ctx.state.arbitrations.push(Arbitration {
                phase: lp,
                signal: signal.to_string(),
                decision: "swap".into(),
                from: Some(current.clone()),
                to: Some(to.clone()),
                note: note.clone(),
                ts: util::now(),
                after_round: round,
            });
            ctx.state.role_overrides.push(RoleOverride {
                role: role.as_str().into(),
                from: current,
                to,
                reason: format!("arbitration after {signal}"),
                ts: util::now(),
            });
            eprintln!("    arbitration: {note}");
            return Ok(Resolution::Continue(rerun));
        }
    }
    let note =
        format!("{lp} stalled ({signal}) after round {round}; no swap left, landing a draft");
    ctx.state.arbitrations.push(Arbitration {
        phase: lp,
        signal: signal.to_string(),
        decision: "draft".into(),
        from: None,
        to: None,
        note: note.clone(),
        ts: util::now(),
        after_round: round,
    });
    ctx.state.draft_reasons.push(note.clone());
    eprintln!("    arbitration: {note}");
    Ok(Resolution::Draft)
}
