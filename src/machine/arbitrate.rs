//! Arbitration: what happens when a loop stalls or an agent keeps failing, decided in one place.
//!
//! Auto mode swaps the stalled role to the opposite agent (at most `limits.role_swap_max` times
//! per loop) and otherwise lands a draft; manual mode stops and asks, and `answer` applies the
//! person's choice (`continue`, `swap`, `draft`, `approve`) with the same [`swap`]. Every
//! decision — asked, answered or automatic — is recorded in state, because a silent stall is a
//! bug.
//!
//! One signal has a fixed answer in both modes: `RUBRIC_PLATEAU` (the screenshots' rubric score
//! stopped improving) throws the implementation away once — the work branch is reset to the
//! commit `implement` started from, the tasks start over from the spec — because patching a
//! design that plateaued rarely lifts it. A second plateau is arbitrated like any other stall.
//!
//! [`arbitrate`] is pure like [`super::answer::answer`]: it reads the state and returns the
//! state as the decision leaves it. The one effect it cannot carry out, resetting the work
//! branch, is returned as [`Applied::reset`] for the driver to hand to
//! `phases::arbitration::reset_branch`.

use super::answer::Applied;
use crate::config::Config;
use crate::phases::loops::arbitration;
use crate::phases::waiting;
use crate::state::{Arbitration, Mode, RoleOverride, State, Waiting};
use crate::types::ids::Sha;
use crate::types::kinds::{Answer, Decision, WaitKind};
use crate::types::{Phase, Role, Signal};
use crate::util;

/// A rubric restart with no commit to go back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "a rubric restart needs the commit implement started from, and the state has none (`implement_base` and `base_commit` are both missing)"
)]
pub struct NoRestartBase;

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

/// Gives `role` to the opposite of the agent playing it (its configured agent when the state
/// names none), recorded as a role override with `reason`. Returns the agents before and after;
/// `None` when there is no other agent.
pub fn swap(
    s: &mut State,
    config: &Config,
    role: Role,
    reason: String,
) -> Option<(String, String)> {
    let current = crate::phases::agent_for(s, config, role);
    let to = config.opposite_of(&current).filter(|to| *to != current)?;
    s.roles.insert(role, to.as_str().into());
    s.role_overrides.push(RoleOverride {
        role,
        from: current.as_str().into(),
        to: to.as_str().into(),
        reason,
        ts: util::now(),
    });
    Some((current, to))
}

/// Decides and records the arbitration of `phase` after `signal`: the rubric restart (once), a
/// question in manual mode, a swap while swaps are left, else a draft. `head` is the work
/// branch's commit now (named in a restart's note).
pub fn arbitrate(
    state: &State,
    config: &Config,
    phase: Phase,
    signal: Signal,
    head: &str,
) -> Result<Applied, NoRestartBase> {
    let mut s = state.clone();
    let lp = loop_of(phase);
    let round = last_round(&s, lp);
    let record = |decision, note: &str| arbitration((lp, round), signal, decision, note.into());
    if signal == Signal::RubricPlateau && !restarted(&s) {
        return restart(s, config, round, head);
    }
    if s.mode == Mode::Manual {
        let message = format!(
            "{lp} stalled ({signal}) after round {round}; answer with `spec-orchestrate arbitrate <continue|swap|draft|approve> --feature {}`",
            s.feature
        );
        s.waiting = Some(Waiting {
            phase: Some(phase),
            signal: Some(signal),
            ..waiting(WaitKind::Arbitration, message.clone(), Answer::ALL.to_vec())
        });
        s.arbitrations.push(record(
            Decision::Ask,
            "manual mode: waiting for a person to choose continue, swap, draft or approve",
        ));
        return Ok(Applied::halt(s, message));
    }
    let swaps = s
        .arbitrations
        .iter()
        .filter(|a| a.phase == lp && a.decision == Decision::Swap)
        .count() as u32;
    if swaps < config.limits.role_swap_max
        && let Some((role, rerun)) = stalled_role(&s, phase, signal)
        && let Some((from, to)) = swap(&mut s, config, role, format!("arbitration after {signal}"))
    {
        let note = format!("{role} swapped from {from} to {to} after {signal} in {lp}");
        s.arbitrations.push(Arbitration {
            from: Some(from.into()),
            to: Some(to.into()),
            ..record(Decision::Swap, &note)
        });
        s.move_to(rerun);
        return Ok(Applied::run(s).noted(note));
    }
    let note = format!(
        "{lp} stalled ({signal}) after round {round}; {swaps} swap(s) of {} used, landing a draft",
        config.limits.role_swap_max
    );
    s.arbitrations.push(record(Decision::Draft, &note));
    s.draft_reasons.push(note.clone());
    s.mark_completed(phase);
    s.move_to(Phase::Pr);
    Ok(Applied::run(s).noted(note))
}

/// The rubric restart: the work branch goes back to the commit `implement` started from (the
/// driver resets it), every task's progress and the open findings are forgotten, and the
/// restart is recorded; the run implements again from the approved spec.
fn restart(
    mut s: State,
    config: &Config,
    round: u32,
    head: &str,
) -> Result<Applied, NoRestartBase> {
    let target: Sha = s
        .implement_base
        .clone()
        .or_else(|| s.base_commit.clone())
        .ok_or(NoRestartBase)?;
    let best = s
        .rounds
        .evaluate
        .iter()
        .filter_map(|r| r.rubric_score)
        .fold(f64::NEG_INFINITY, f64::max);
    let note = format!(
        "rubric score has not improved for {} round(s) (best {best:.2}, pass mark {}): implementation thrown away, branch reset from {} to {} (the approved spec); implementing again from the spec",
        config.evaluate.rubric_plateau_rounds,
        config
            .evaluate
            .rubric
            .as_ref()
            .map(|r| format!("{:.1}", r.pass))
            .unwrap_or_else(|| "-".into()),
        &head[..head.len().min(10)],
        &target[..target.len().min(10)]
    );
    s.tasks.clear();
    s.open_findings.clear();
    if let Some(b) = s.branch.as_mut() {
        b.head = Some(target.clone());
    }
    s.job
        .record(crate::state::job::Effect::Restart(target.clone()));
    let (signal, decision) = (Signal::RubricPlateau, Decision::Restart);
    let record = arbitration((Phase::Evaluate, round), signal, decision, note.clone());
    s.arbitrations.push(record);
    s.move_to(Phase::Implement);
    let mut applied = Applied::run(s).noted(note);
    applied.reset = Some(target);
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::answer::Then;
    use crate::state::{AgentFailure, EvaluateRound};
    use crate::types::kinds::{BlockerCategory, CallRole, Gate};

    /// A run in `mode` whose loop of `phase` stalled after one round, with `swaps` swaps of that
    /// loop already recorded and the rubric restart used or not.
    fn stalled(mode: Mode, phase: Phase, swaps: u32, restart_used: bool) -> State {
        let mut s = crate::state::tests::blank(mode);
        s.move_to(phase);
        s.implement_base = Some("0123456789abcdef0123456789abcdef01234567".into());
        s.rounds.evaluate.push(EvaluateRound {
            round: 1,
            pass: 1,
            fail: 1,
            blocked: 0,
            fingerprints: vec![],
            class_keys: vec![],
            gate: Gate::Fail,
            rubric_score: Some(5.0),
        });
        let past = |decision| Arbitration {
            phase: loop_of(phase),
            signal: Signal::S1,
            decision,
            from: None,
            to: None,
            note: String::new(),
            ts: util::now(),
            after_round: 0,
        };
        for _ in 0..swaps {
            s.arbitrations.push(past(Decision::Swap));
        }
        if restart_used {
            s.arbitrations.push(past(Decision::Restart));
        }
        s.agent_failures.push(AgentFailure {
            phase,
            role: CallRole::Role(Role::E2eRunner),
            agent: "claude".into(),
            category: BlockerCategory::MalformedOutput,
            detail: String::new(),
            paths: vec![],
            task: None,
            ts: util::now(),
        });
        s
    }

    /// What each stall leads to, mode × loop × signal × swaps used × restart used: the decision
    /// recorded, the phase the run goes to, whether it waits, and the role swapped.
    #[test]
    fn every_stall_against_mode_swaps_and_the_restart() {
        use Decision as D;
        use Mode::{Auto, Manual};
        use Phase as P;
        use Signal as S;
        type Row = (
            Mode,
            Phase,
            Signal,
            u32,
            bool,
            Decision,
            Phase,
            bool,
            Option<Role>,
        );
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            // mode   stalled phase    signal              swaps restart  decision      next phase        waits  role swapped
            (Auto,   P::SpecReview,   S::S1,              0, false, D::Swap,     P::SpecReview,   false, Some(Role::SpecReviewer)),
            (Auto,   P::Inspect,      S::S2,              0, false, D::Swap,     P::SpecGenerate, false, Some(Role::SpecAuthor)),
            (Auto,   P::SpecGenerate, S::AgentFailure,    0, false, D::Swap,     P::SpecGenerate, false, Some(Role::E2eRunner)),
            (Auto,   P::Evaluate,     S::S3,              0, false, D::Swap,     P::Implement,    false, Some(Role::ImplBackend)),
            (Auto,   P::SpecReview,   S::S1,              1, false, D::Draft,    P::Pr,           false, None),
            (Auto,   P::Evaluate,     S::Blocked,         0, false, D::Draft,    P::Pr,           false, None),
            (Auto,   P::Evaluate,     S::RubricPlateau,   0, false, D::Restart,  P::Implement,    false, None),
            (Auto,   P::Evaluate,     S::RubricPlateau,   0, true,  D::Swap,     P::Implement,    false, Some(Role::ImplBackend)),
            (Manual, P::SpecReview,   S::S4,              0, false, D::Ask,      P::SpecReview,   true,  None),
            (Manual, P::Evaluate,     S::RubricPlateau,   0, false, D::Restart,  P::Implement,    false, None),
            (Manual, P::Evaluate,     S::RubricPlateau,   0, true,  D::Ask,      P::Evaluate,     true,  None),
        ];
        let config = Config::default();
        for (mode, phase, signal, swaps, restart_used, decision, next, waits, role) in table {
            let state = stalled(mode, phase, swaps, restart_used);
            let got = arbitrate(&state, &config, phase, signal, "fedcba9876543210")
                .expect("a restart base is recorded");
            let row = format!("{mode:?} {phase} {signal} swaps={swaps} restart={restart_used}");
            let last = got.state.arbitrations.last().expect("recorded");
            assert_eq!(last.decision, decision, "{row}");
            assert_eq!(got.state.phase(), next, "{row}");
            assert_eq!(matches!(got.then, Then::Halt(_)), waits, "{row}");
            assert_eq!(
                got.state.waiting.as_ref().map(|w| w.kind),
                waits.then_some(WaitKind::Arbitration),
                "{row}"
            );
            let swapped = got.state.role_overrides.last().map(|o| o.role);
            assert_eq!(swapped, role, "{row}");
            assert_eq!(got.reset.is_some(), decision == D::Restart, "{row}");
            assert_eq!(
                got.state.draft_reasons.is_empty(),
                decision != D::Draft,
                "{row}"
            );
        }
    }

    #[test]
    fn a_restart_resets_to_the_implement_base_and_needs_one() {
        let state = stalled(Mode::Auto, Phase::Evaluate, 0, false);
        let got = arbitrate(
            &state,
            &Config::default(),
            Phase::Evaluate,
            Signal::RubricPlateau,
            "fedcba9876543210",
        )
        .expect("restarts");
        assert_eq!(got.reset.as_deref(), state.implement_base.as_deref());
        assert!(got.state.tasks.is_empty() && got.state.open_findings.is_empty());
        assert!(
            got.note
                .is_some_and(|n| n.contains("branch reset from fedcba9876 to 0123456789"))
        );
        let mut lost = state.clone();
        lost.implement_base = None;
        lost.base_commit = None;
        assert_eq!(
            arbitrate(
                &lost,
                &Config::default(),
                Phase::Evaluate,
                Signal::RubricPlateau,
                ""
            ),
            Err(NoRestartBase)
        );
    }
}
