//! The phase machine: the closed set of phases, one pure transition function, and the driver
//! loop that runs phases and persists state after each one.
//!
//! Transitions are data (one `match` over every (phase, outcome) pair, tested exhaustively), not
//! `if`s scattered through the phases: a phase only reports what happened, the machine alone
//! decides what comes next.

pub mod answer;
pub mod arbitrate;

use std::ops::ControlFlow;

use crate::error::Result;
use crate::phases::{self, Ctx};
use crate::state::PhaseLogEntry;
use crate::types::kinds::PhaseOutcome;
use crate::types::{Outcome, Phase, Signal};
use crate::util;

/// Where the machine goes after a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Run this phase next.
    Go(Phase),
    /// Decide by arbitration (swap, draft, or ask a person).
    Arbitrate,
    /// Stop and wait for a person; the same phase runs again on resume.
    Wait,
}

/// A (phase, outcome) pair that cannot happen; reaching it is a bug in a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("phase `{phase}` cannot end with outcome `{outcome:?}`")]
#[allow(missing_docs)]
pub struct InvalidTransition {
    pub phase: Phase,
    pub outcome: Outcome,
}

/// The whole transition table (`docs/phases.md` shows it as a table).
pub fn transition(phase: Phase, outcome: Outcome) -> Result<Next, InvalidTransition> {
    use Next::{Arbitrate, Go, Wait};
    use Outcome as O;
    use Phase as P;
    let next = match (phase, outcome) {
        (P::Intake, O::Ok) => Go(P::SpecGenerate),
        (P::SpecGenerate, O::Ok) => Go(P::Inspect),
        // A case confirmed disputed again with its text unchanged: the spec loop stalled.
        (P::SpecGenerate, O::Stall(_) | O::AgentFailure) => Arbitrate,
        (P::Inspect, O::Ok) => Go(P::SpecReview),
        (P::Inspect, O::SendBack) => Go(P::SpecGenerate),
        (P::Inspect, O::Stall(_)) => Arbitrate,
        (P::SpecReview, O::Ok) => Go(P::Approval),
        (P::SpecReview, O::SendBack) => Go(P::SpecGenerate),
        (P::SpecReview, O::Stall(_) | O::AgentFailure) => Arbitrate,
        (P::Approval, O::Ok) => Go(P::Implement),
        (P::Approval, O::Waiting) => Wait,
        (P::Implement, O::Ok) => Go(P::Evaluate),
        (P::Implement, O::Blocked) => Go(P::Pr),
        // The task reviewer confirmed a fix task's dispute of a failed case: the case, not the
        // code, goes back to the spec author.
        (P::Implement, O::SendBack) => Go(P::SpecGenerate),
        (P::Evaluate, O::Ok) => Go(P::Pr),
        (P::Evaluate, O::SendBack) => Go(P::Implement),
        (P::Evaluate, O::Stall(_) | O::AgentFailure | O::Blocked) => Arbitrate,
        (P::Pr, O::Ok) => Go(P::Retrospective),
        (P::Retrospective, O::Ok) => Go(P::Done),
        (_, O::Waiting) => Wait,
        (phase, outcome) => return Err(InvalidTransition { phase, outcome }),
    };
    Ok(next)
}

/// When the driver should stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopAt {
    /// Run until done or waiting.
    End,
    /// Run exactly one phase.
    OnePhase,
    /// Stop once this phase has completed.
    After(Phase),
}

/// How a drive ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// Reached `done`; `draft` tells whether the PR is a draft.
    Done {
        /// The PR is a draft (gate failed, stall unresolved, budget hit).
        draft: bool,
    },
    /// Waiting for a person; the message says what to do.
    Waiting(String),
    /// Stopped early on request (`step`, `--until`).
    Paused(Phase),
    /// Stopped by a limit (budget, spend cap) with a draft that says why; `resume` continues at
    /// the same phase once the cause is removed.
    Stopped(String),
}

/// Runs phases from the saved state until `stop`, saving after every phase.
pub fn drive(ctx: &mut Ctx, stop: StopAt) -> Result<RunEnd> {
    resume_after_stop(ctx)?;
    loop {
        let phase = ctx.state.phase();
        if let Some(w) = &ctx.state.waiting
            && matches!(
                w.kind,
                crate::types::kinds::WaitKind::Arbitration | crate::types::kinds::WaitKind::Dispute
            )
        {
            // Only `spec-orchestrate arbitrate` moves a run past a stall (or a confirmed dispute)
            // in manual mode; running the phase again would silently add rounds nobody asked for.
            return Ok(RunEnd::Waiting(w.message.clone()));
        }
        if phase == Phase::Done {
            return Ok(RunEnd::Done {
                draft: ctx.state.pr.as_ref().is_some_and(|p| p.draft),
            });
        }
        let started = util::now();
        let log = &ctx.state.phase_log;
        let attempt = log.iter().filter(|e| e.phase == phase).count() as u32 + 1;
        tracing::info!(phase = %phase, attempt, "phase started");
        crate::events::emit(crate::events::Event::PhaseStarted { phase, attempt });
        let outcome = match phases::run(ctx, phase) {
            Ok(o) => o,
            Err(crate::error::Error::Stopped(why)) => {
                return stopped(ctx, phase, started, attempt, *why);
            }
            // A wave left for the Action's matrix legs (or a leg's task ended): the phase is
            // still due; the state was saved where it left.
            Err(crate::error::Error::HandedOut(_)) => return Ok(RunEnd::Paused(phase)),
            Err(e) => return Err(e),
        };
        log_phase(ctx, (phase, attempt), started, outcome.into());
        crate::events::emit(crate::events::Event::PhaseEnded {
            phase,
            attempt,
            outcome: PhaseOutcome::from(outcome),
        });
        let next = transition(phase, outcome).map_err(|e| crate::error::Error::State {
            path: ctx.store.path(),
            problem: e.to_string(),
            help: "this is a bug in spec-orchestrate; please report it with this state file".into(),
        })?;
        let next = match follow(ctx, phase, outcome, next)? {
            ControlFlow::Continue(next) => next,
            ControlFlow::Break(end) => return Ok(end),
        };
        ctx.state.move_to(next);
        ctx.save()?;
        match stop {
            StopAt::OnePhase => return Ok(RunEnd::Paused(next)),
            StopAt::After(p) if p == phase && outcome == Outcome::Ok => {
                return Ok(RunEnd::Paused(next));
            }
            _ => {}
        }
    }
}

/// A budget or spend-cap stop is moved to the run's past stops when the run is resumed: the
/// limit may have been raised (the configuration is read afresh); if not, the same check stops
/// the run again.
fn resume_after_stop(ctx: &mut Ctx) -> Result<()> {
    if let Some(previous) = ctx.state.stop.take() {
        crate::events::emit(crate::events::Event::ResumedAfterStop {
            phase: previous.phase,
            stop: previous.kind,
        });
        ctx.state.stops.push(previous);
        ctx.save()?;
    }
    Ok(())
}

/// Follows the transition `next` the machine chose after `phase` ended with `outcome`: the
/// phase to run next, or the end of this drive (waiting for a person, or an arbitration that
/// halts).
fn follow(
    ctx: &mut Ctx,
    phase: Phase,
    outcome: Outcome,
    next: Next,
) -> Result<ControlFlow<RunEnd, Phase>> {
    Ok(ControlFlow::Continue(match next {
        Next::Go(p) => {
            ctx.state.mark_completed(phase);
            ctx.state.waiting = None;
            p
        }
        Next::Wait => {
            let message = ctx
                .state
                .waiting
                .as_ref()
                .map(|w| w.message.clone())
                .unwrap_or_else(|| format!("waiting at {phase}"));
            ctx.save()?;
            return Ok(ControlFlow::Break(RunEnd::Waiting(message)));
        }
        Next::Arbitrate => {
            let signal = match outcome {
                Outcome::Stall(s) => s,
                Outcome::Blocked => Signal::Blocked,
                _ => Signal::AgentFailure,
            };
            match apply_arbitration(ctx, phase, signal)? {
                answer::Then::Run => ctx.state.phase(),
                answer::Then::Halt(message) => {
                    ctx.save()?;
                    return Ok(ControlFlow::Break(RunEnd::Waiting(message)));
                }
            }
        }
    }))
}

/// Arbitrates `phase` after `signal` ([`arbitrate::arbitrate`]), carries out the branch reset of
/// a rubric restart, and adopts the state the decision leaves; returns what follows.
fn apply_arbitration(ctx: &mut Ctx, phase: Phase, signal: Signal) -> Result<answer::Then> {
    let head = ctx.forge.git().head().map(String::from).unwrap_or_default();
    let applied = arbitrate::arbitrate(&ctx.state, &ctx.config, phase, signal, &head).map_err(
        |e| crate::error::Error::State {
            path: ctx.store.path(),
            problem: e.to_string(),
            help: "the state lost `implement_base` and `base_commit`; start the run again from its issue".into(),
        },
    )?;
    if let Some(target) = &applied.reset {
        phases::arbitration::reset_branch(ctx, target)?;
    }
    if let Some(note) = applied.note {
        crate::events::emit(crate::events::Event::Arbitration { note });
    }
    ctx.state = applied.state;
    Ok(applied.then)
}

/// Adds attempt `attempt` of `phase`, begun at `started`, to the phase log.
fn log_phase(
    ctx: &mut Ctx,
    (phase, attempt): (Phase, u32),
    started: chrono::DateTime<chrono::Utc>,
    outcome: PhaseOutcome,
) {
    let ended = util::now();
    let entry = PhaseLogEntry {
        phase,
        started,
        ended,
        outcome,
        attempt,
    };
    ctx.state.phase_log.push(entry);
}

/// Records a stop (budget, spend cap) in the state, lands a draft that says why, and keeps
/// `phase` as the phase to run again on resume.
fn stopped(
    ctx: &mut Ctx,
    phase: Phase,
    started: chrono::DateTime<chrono::Utc>,
    attempt: u32,
    why: crate::types::RunStop,
) -> Result<RunEnd> {
    let message = why.message.clone();
    tracing::warn!(phase = %phase, "run stopped: {message}");
    log_phase(
        ctx,
        (phase, attempt),
        started,
        PhaseOutcome::Stopped(why.kind),
    );
    ctx.state.stop = Some(why);
    ctx.state.move_to(phase);
    ctx.save()?;
    crate::phases::pr::publish(ctx, true)?;
    ctx.save()?;
    Ok(RunEnd::Stopped(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcomes() -> Vec<Outcome> {
        vec![
            Outcome::Ok,
            Outcome::SendBack,
            Outcome::Stall(Signal::S1),
            Outcome::AgentFailure,
            Outcome::Blocked,
            Outcome::Waiting,
        ]
    }

    /// Every (phase, outcome) pair, written out by hand: the table is the contract that
    /// `docs/phases.md` documents.
    #[test]
    fn transition_table_covers_every_pair() {
        use Next::*;
        use Phase as P;
        let x = None; // invalid pair
        #[rustfmt::skip]
        let expected: Vec<(Phase, [Option<Next>; 6])> = vec![
            //                 Ok                      SendBack                Stall            AgentFailure     Blocked          Waiting
            (P::Intake,        [Some(Go(P::SpecGenerate)), x,                  x,               x,               x,               Some(Wait)]),
            (P::SpecGenerate,  [Some(Go(P::Inspect)),  x,                      Some(Arbitrate), Some(Arbitrate), x,               Some(Wait)]),
            (P::Inspect,       [Some(Go(P::SpecReview)), Some(Go(P::SpecGenerate)), Some(Arbitrate), x,          x,               Some(Wait)]),
            (P::SpecReview,    [Some(Go(P::Approval)), Some(Go(P::SpecGenerate)), Some(Arbitrate), Some(Arbitrate), x,           Some(Wait)]),
            (P::Approval,      [Some(Go(P::Implement)), x,                     x,               x,               x,               Some(Wait)]),
            (P::Implement,     [Some(Go(P::Evaluate)), Some(Go(P::SpecGenerate)), x,            x,               Some(Go(P::Pr)), Some(Wait)]),
            (P::Evaluate,      [Some(Go(P::Pr)),       Some(Go(P::Implement)), Some(Arbitrate), Some(Arbitrate), Some(Arbitrate), Some(Wait)]),
            (P::Pr,            [Some(Go(P::Retrospective)), x,                 x,               x,               x,               Some(Wait)]),
            (P::Retrospective, [Some(Go(P::Done)),     x,                      x,               x,               x,               Some(Wait)]),
            (P::Done,          [x,                     x,                      x,               x,               x,               Some(Wait)]),
        ];
        assert_eq!(expected.len(), Phase::ALL.len());
        for (phase, row) in expected {
            for (outcome, want) in outcomes().into_iter().zip(row) {
                let got = transition(phase, outcome).ok();
                assert_eq!(got, want, "({phase}, {outcome:?})");
            }
        }
    }

    #[test]
    fn every_stall_signal_arbitrates_in_both_loops() {
        for s in [Signal::S1, Signal::S2, Signal::S3, Signal::S4] {
            assert_eq!(
                transition(Phase::SpecReview, Outcome::Stall(s)),
                Ok(Next::Arbitrate)
            );
            assert_eq!(
                transition(Phase::Evaluate, Outcome::Stall(s)),
                Ok(Next::Arbitrate)
            );
        }
    }

    /// The phase log spells outcomes as it always did.
    #[test]
    fn outcomes_are_logged_with_their_words() {
        let words: Vec<String> = outcomes()
            .into_iter()
            .map(|o| PhaseOutcome::from(o).to_string())
            .collect();
        assert_eq!(
            words,
            [
                "ok",
                "send_back",
                "stall:S1",
                "agent_failure",
                "blocked",
                "waiting"
            ]
        );
    }

    /// The phase log holds the very outcome the transition table read: each one is written and
    /// read back as itself, and a limit's stop is the only other way a phase ends.
    #[test]
    fn the_phase_log_records_the_outcome_the_machine_read() {
        for o in outcomes()
            .into_iter()
            .chain([Signal::S2, Signal::S3, Signal::S4].map(Outcome::Stall))
        {
            let logged: PhaseOutcome = PhaseOutcome::from(o).to_string().parse().unwrap();
            assert_eq!(logged, PhaseOutcome::Ended(o));
        }
        let stopped: PhaseOutcome = "stopped:budget".parse().unwrap();
        assert!(!matches!(stopped, PhaseOutcome::Ended(_)));
    }

    #[test]
    fn phase_names_round_trip() {
        for p in Phase::ALL {
            assert_eq!(Phase::parse(p.as_str()), Some(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.as_str()));
        }
    }
}
