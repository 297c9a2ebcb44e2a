//! What a `/spec-orchestrate <command>` comment does to the saved run.
//!
//! The answers mirror the local `approve` and arbitration choices (SPEC §6): each is recorded in
//! the state (approval, an arbitration with who decided, a draft reason), so the PR body and the
//! status comment show that a person took the decision.

use crate::config::{Config, Role};
use crate::forge::github::event::Command;
use crate::machine::Phase;
use crate::review::arbitration::loop_of;
use crate::state::{Approval, Arbitration, RoleOverride, State, Waiting};
use crate::util;

/// What the job does after applying a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Run the next phase, then go on as usual.
    Run,
    /// Save and publish the state, run nothing, dispatch nothing.
    Halt(String),
    /// The command does not apply now: reply with this, change nothing.
    Reject(String),
}

fn rounds_of(state: &State, lp: Phase) -> u32 {
    match lp {
        Phase::SpecReview => state.rounds.spec_review.len() as u32,
        _ => state.rounds.evaluate.len() as u32,
    }
}

fn last_signal(state: &State) -> String {
    state
        .arbitrations
        .last()
        .map(|a| a.signal.clone())
        .unwrap_or_else(|| "MANUAL".into())
}

fn record(state: &mut State, decision: &str, by: &str, note: String) {
    let lp = loop_of(state.phase);
    let after_round = rounds_of(state, lp);
    let signal = last_signal(state);
    state.arbitrations.push(Arbitration {
        phase: lp,
        signal,
        decision: decision.into(),
        from: None,
        to: None,
        note: format!("{note} (by @{by})"),
        ts: util::now(),
        after_round,
    });
}

fn waiting_kind(state: &State) -> Option<&str> {
    state.waiting.as_ref().map(|w| w.kind.as_str())
}

/// Applies `command` from `by` to `state`.
pub fn apply(state: &mut State, command: Command, by: &str, config: &Config) -> Answer {
    if state.phase == Phase::Done {
        return Answer::Reject("this run is done; there is nothing left to steer".into());
    }
    match command {
        Command::Approve => match waiting_kind(state) {
            _ if state.phase == Phase::Approval => {
                state.approval = Some(Approval {
                    by: by.to_string(),
                    ts: util::now(),
                });
                state.waiting = None;
                Answer::Run
            }
            Some("arbitration") => {
                let lp = loop_of(state.phase);
                let open = state.open_findings.len();
                record(
                    state,
                    "approve",
                    by,
                    format!("accepted as it is with {open} open finding(s)"),
                );
                state.waiting = None;
                if lp == Phase::SpecReview {
                    state.open_findings.clear();
                    state.approval = Some(Approval {
                        by: by.to_string(),
                        ts: util::now(),
                    });
                    state.phase = Phase::Approval;
                } else {
                    state.phase = Phase::Pr;
                }
                Answer::Run
            }
            _ => Answer::Reject(format!(
                "nothing waits for approval: the run is at {}",
                state.phase
            )),
        },
        Command::Continue => match waiting_kind(state) {
            Some("approval") => Answer::Reject(
                "the spec waits for approval: comment `/spec-orchestrate approve` to go on".into(),
            ),
            Some("arbitration") => {
                record(state, "continue", by, "continue the loop as it is".into());
                state.waiting = None;
                Answer::Run
            }
            _ => {
                state.waiting = None;
                Answer::Run
            }
        },
        Command::Swap => {
            if waiting_kind(state) != Some("arbitration") {
                return Answer::Reject(
                    "`swap` answers a stalled loop; nothing is waiting for an arbitration".into(),
                );
            }
            let role = match state.phase {
                Phase::SpecGenerate | Phase::Inspect => Role::SpecAuthor,
                Phase::SpecReview => Role::SpecReviewer,
                _ => Role::ImplBackend,
            };
            let current = state
                .agent_for(role)
                .unwrap_or(config.roles.get(role))
                .to_string();
            let Some(to) = config.opposite_of(&current).filter(|t| *t != current) else {
                return Answer::Reject(format!(
                    "{role} runs on {current}, which has no opposite agent to swap to; configure `opposite:` or answer draft/continue"
                ));
            };
            state.roles.insert(role.as_str().to_string(), to.clone());
            state.role_overrides.push(RoleOverride {
                role: role.as_str().into(),
                from: current.clone(),
                to: to.clone(),
                reason: format!("swapped by @{by}"),
                ts: util::now(),
            });
            record(
                state,
                "swap",
                by,
                format!("{role} swapped from {current} to {to}"),
            );
            if let Some(a) = state.arbitrations.last_mut() {
                a.from = Some(current);
                a.to = Some(to);
            }
            state.waiting = None;
            Answer::Run
        }
        Command::Draft => {
            if matches!(state.phase, Phase::Pr | Phase::Retrospective) {
                return Answer::Reject(format!(
                    "the run is already at {}; the pull request is being written",
                    state.phase
                ));
            }
            let reason = format!("a draft was requested by @{by} at {}", state.phase);
            record(state, "draft", by, "land a draft pull request".into());
            state.draft_reasons.push(reason);
            state.mark_completed(state.phase);
            state.phase = Phase::Pr;
            state.waiting = None;
            Answer::Run
        }
        Command::Stop => {
            let message = format!(
                "stopped by @{by} at {}; comment `/spec-orchestrate continue` to resume",
                state.phase
            );
            state.waiting = Some(Waiting {
                kind: "stopped".into(),
                message: message.clone(),
                choices: vec!["continue".into()],
            });
            Answer::Halt(message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{IssueRef, Mode};

    fn state_at(phase: Phase, waiting: Option<&str>) -> State {
        let mut s = State::new(
            "f",
            IssueRef {
                number: Some(1),
                title: "t".into(),
                ..IssueRef::default()
            },
            Mode::Manual,
        );
        s.phase = phase;
        s.waiting = waiting.map(|k| Waiting {
            kind: k.into(),
            message: "m".into(),
            choices: vec![],
        });
        s
    }

    #[test]
    fn approve_records_who_and_only_applies_when_something_waits() {
        let c = Config::default();
        let mut s = state_at(Phase::Approval, Some("approval"));
        assert_eq!(apply(&mut s, Command::Approve, "octocat", &c), Answer::Run);
        assert_eq!(s.approval.as_ref().unwrap().by, "octocat");
        assert!(s.waiting.is_none());

        let mut s = state_at(Phase::Implement, None);
        assert!(matches!(
            apply(&mut s, Command::Approve, "o", &c),
            Answer::Reject(_)
        ));
        assert!(s.approval.is_none());

        let mut s = state_at(Phase::SpecReview, Some("arbitration"));
        assert_eq!(apply(&mut s, Command::Approve, "o", &c), Answer::Run);
        assert_eq!(s.phase, Phase::Approval);
        assert_eq!(s.arbitrations.last().unwrap().decision, "approve");
        assert!(s.arbitrations.last().unwrap().note.contains("@o"));
    }

    #[test]
    fn stop_halts_continue_resumes_draft_goes_to_pr_swap_needs_an_arbitration() {
        let c = Config::default();
        let mut s = state_at(Phase::Implement, None);
        assert!(matches!(
            apply(&mut s, Command::Stop, "o", &c),
            Answer::Halt(_)
        ));
        assert_eq!(s.waiting.as_ref().unwrap().kind, "stopped");
        assert_eq!(apply(&mut s, Command::Continue, "o", &c), Answer::Run);
        assert!(s.waiting.is_none());

        let mut s = state_at(Phase::Evaluate, Some("arbitration"));
        assert_eq!(apply(&mut s, Command::Draft, "o", &c), Answer::Run);
        assert_eq!(s.phase, Phase::Pr);
        assert!(s.draft_reasons[0].contains("@o"));

        let mut s = state_at(Phase::Implement, None);
        assert!(matches!(
            apply(&mut s, Command::Swap, "o", &c),
            Answer::Reject(_)
        ));

        let mut s = state_at(Phase::SpecReview, Some("arbitration"));
        assert_eq!(apply(&mut s, Command::Swap, "o", &c), Answer::Run);
        assert_eq!(s.role_overrides.len(), 1);
        assert_eq!(s.arbitrations.last().unwrap().decision, "swap");

        let mut s = state_at(Phase::Done, None);
        assert!(matches!(
            apply(&mut s, Command::Continue, "o", &c),
            Answer::Reject(_)
        ));
    }
}
