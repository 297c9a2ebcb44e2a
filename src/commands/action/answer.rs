//! What a `/spec-orchestrate <command>` comment (or the approve label) does to the saved run.
//!
//! A run waiting on an arbitration is answered exactly as `spec-orchestrate arbitrate` answers it
//! locally (`phases::arbitration::answer`): the same record, the same next phase. The other
//! answers — approving a spec at `approval`, stopping and resuming the chain, asking for a draft
//! while nothing waits — are the Action mode's own and are recorded the same way, with the
//! person's login, so the PR body and the status comment show who decided.

use crate::error::Error;
use crate::forge::github::event::Command;
use crate::phases::{Ctx, arbitration};
use crate::review::arbitration::loop_of;
use crate::state::{Approval, Arbitration, Waiting};
use crate::types::kinds::{Decision, WaitKind};
use crate::types::{Phase, Signal};
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

fn waiting_kind(ctx: &Ctx) -> Option<WaitKind> {
    ctx.state.waiting.as_ref().map(|w| w.kind)
}

/// Applies `command` from `by` to the run in `ctx` (saving it when it changes).
pub fn apply(ctx: &mut Ctx, command: Command, by: &str) -> crate::error::Result<Answer> {
    if ctx.state.phase == Phase::Done {
        return Ok(Answer::Reject(
            "this run is done; there is nothing left to steer".into(),
        ));
    }
    let who = format!("@{by}");
    if waiting_kind(ctx) == Some(WaitKind::Arbitration) && command != Command::Stop {
        let local = match command {
            Command::Approve => crate::types::kinds::Answer::Approve,
            Command::Continue => crate::types::kinds::Answer::Continue,
            Command::Swap => crate::types::kinds::Answer::Swap,
            _ => crate::types::kinds::Answer::Draft,
        };
        return match arbitration::answer(ctx, local, &who) {
            Ok(_) => Ok(Answer::Run),
            // An answer that does not apply (nothing to swap, …) is a reply, not a failed job.
            Err(e @ Error::Usage { .. }) => Ok(Answer::Reject(e.report())),
            Err(e) => Err(e),
        };
    }
    let answer = match command {
        Command::Approve if ctx.state.phase == Phase::Approval => {
            ctx.state.approval = Some(Approval {
                by: by.to_string(),
                ts: util::now(),
            });
            ctx.state.waiting = None;
            Answer::Run
        }
        Command::Approve => Answer::Reject(format!(
            "nothing waits for approval: the run is at {}",
            ctx.state.phase
        )),
        Command::Continue if waiting_kind(ctx) == Some(WaitKind::Approval) => Answer::Reject(
            "the spec waits for approval: comment `/spec-orchestrate approve` to go on".into(),
        ),
        Command::Continue => {
            ctx.state.waiting = None;
            Answer::Run
        }
        Command::Swap => Answer::Reject(
            "`swap` answers a stalled loop; nothing is waiting for an arbitration".into(),
        ),
        Command::Draft if matches!(ctx.state.phase, Phase::Pr | Phase::Retrospective) => {
            Answer::Reject(format!(
                "the run is already at {}; the pull request is being written",
                ctx.state.phase
            ))
        }
        Command::Draft => {
            let phase = ctx.state.phase;
            let lp = loop_of(phase);
            ctx.state.arbitrations.push(Arbitration {
                phase: lp,
                signal: Signal::Manual,
                decision: Decision::Draft,
                from: None,
                to: None,
                note: format!("{who} asked for a draft at {phase}"),
                ts: util::now(),
                after_round: match lp {
                    Phase::SpecReview => ctx.state.rounds.spec_review.len() as u32,
                    _ => ctx.state.rounds.evaluate.len() as u32,
                },
            });
            ctx.state
                .draft_reasons
                .push(format!("a draft was requested by {who} at {phase}"));
            ctx.state.mark_completed(phase);
            ctx.state.phase = Phase::Pr;
            ctx.state.waiting = None;
            Answer::Run
        }
        Command::Stop => {
            let message = format!(
                "stopped by {who} at {}; comment `/spec-orchestrate continue` to resume",
                ctx.state.phase
            );
            // A stop during an arbitration keeps the question: `continue` then resumes the wait.
            if waiting_kind(ctx) != Some(WaitKind::Arbitration) {
                ctx.state.waiting = Some(Waiting {
                    kind: WaitKind::Stopped,
                    message: message.clone(),
                    choices: vec![crate::types::kinds::Answer::Continue],
                    phase: None,
                    signal: None,
                });
            }
            Answer::Halt(message)
        }
    };
    if !matches!(answer, Answer::Reject(_)) {
        ctx.save()?;
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::forge::local::LocalForge;
    use crate::secrets::Redactor;
    use crate::state::{IssueRef, Mode, State, StateStore};

    fn ctx_at(dir: &std::path::Path, phase: Phase, waiting: Option<WaitKind>) -> Ctx {
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
        // The phases a real run completed before reaching `phase`: a state read back is checked
        // for a phase its completed phases lead to (`state::validate`).
        s.completed_phases = Phase::ALL
            .iter()
            .copied()
            .take_while(|p| *p != phase)
            .collect();
        s.waiting = waiting.map(|kind| Waiting {
            kind,
            message: "m".into(),
            choices: vec![],
            phase: (kind == WaitKind::Arbitration).then_some(phase),
            signal: (kind == WaitKind::Arbitration).then_some(Signal::S1),
        });
        Ctx {
            repo: dir.to_path_buf(),
            config: Config::default(),
            state: s,
            store: StateStore::open(&dir.join(".specs/f")).unwrap(),
            forge: LocalForge::new(dir),
            redactor: Redactor::default(),
        }
    }

    #[test]
    fn approve_records_who_and_only_applies_when_something_waits() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx_at(dir.path(), Phase::Approval, Some(WaitKind::Approval));
        assert_eq!(
            apply(&mut c, Command::Approve, "octocat").unwrap(),
            Answer::Run
        );
        assert_eq!(c.state.approval.as_ref().unwrap().by, "octocat");
        assert!(c.state.waiting.is_none());
        drop(c);

        let mut c = ctx_at(dir.path(), Phase::Implement, None);
        assert!(matches!(
            apply(&mut c, Command::Approve, "o").unwrap(),
            Answer::Reject(_)
        ));
        assert!(c.state.approval.is_none());
        drop(c);

        // At a stalled review loop, `approve` is the local arbitration answer.
        let mut c = ctx_at(dir.path(), Phase::SpecReview, Some(WaitKind::Arbitration));
        assert_eq!(apply(&mut c, Command::Approve, "o").unwrap(), Answer::Run);
        assert_eq!(c.state.phase, Phase::Approval);
        let a = c.state.arbitrations.last().unwrap();
        assert_eq!(a.decision, Decision::Approve);
        assert!(a.note.contains("@o"), "{}", a.note);
    }

    #[test]
    fn stop_halts_continue_resumes_draft_goes_to_pr_swap_needs_an_arbitration() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx_at(dir.path(), Phase::Implement, None);
        assert!(matches!(
            apply(&mut c, Command::Stop, "o").unwrap(),
            Answer::Halt(_)
        ));
        assert_eq!(c.state.waiting.as_ref().unwrap().kind, WaitKind::Stopped);
        assert_eq!(apply(&mut c, Command::Continue, "o").unwrap(), Answer::Run);
        assert!(c.state.waiting.is_none());
        assert!(matches!(
            apply(&mut c, Command::Swap, "o").unwrap(),
            Answer::Reject(_)
        ));
        assert_eq!(apply(&mut c, Command::Draft, "o").unwrap(), Answer::Run);
        assert_eq!(c.state.phase, Phase::Pr);
        assert!(c.state.draft_reasons[0].contains("@o"));
        assert!(matches!(
            apply(&mut c, Command::Draft, "o").unwrap(),
            Answer::Reject(_)
        ));
        drop(c);

        let mut c = ctx_at(dir.path(), Phase::Done, None);
        assert!(matches!(
            apply(&mut c, Command::Continue, "o").unwrap(),
            Answer::Reject(_)
        ));
    }

    /// A draft asked for while nothing waits is recorded with the `MANUAL` signal, which reads
    /// back as itself (it used to be a string outside the signal set).
    #[test]
    fn a_requested_draft_records_the_manual_signal_and_it_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx_at(dir.path(), Phase::Implement, None);
        assert_eq!(apply(&mut c, Command::Draft, "o").unwrap(), Answer::Run);
        let a = c.state.arbitrations.last().unwrap().clone();
        assert_eq!((a.signal, a.decision), (Signal::Manual, Decision::Draft));
        let loaded = c.store.load().unwrap().unwrap();
        assert_eq!(loaded.arbitrations.last().unwrap().signal, Signal::Manual);
        let json = serde_json::to_value(&loaded.arbitrations).unwrap();
        assert_eq!(json[0]["signal"], "MANUAL");
    }

    /// A wait without its signal (a state from before waits recorded it) takes the signal of the
    /// `ask` arbitration written with it; with neither, the answer is refused, never read as S1.
    #[test]
    fn an_arbitration_without_its_signal_is_never_read_as_s1() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx_at(dir.path(), Phase::SpecReview, Some(WaitKind::Arbitration));
        c.state.waiting.as_mut().unwrap().signal = None;
        let err = apply(&mut c, Command::Swap, "o").expect_err("refused");
        let message = err.to_string();
        assert!(message.contains("`waiting.signal`"), "{message}");
        assert!(message.contains("pipeline-state.json"), "{message}");
        assert!(c.state.waiting.is_some(), "nothing was answered");
        drop(c);

        let mut c = ctx_at(dir.path(), Phase::SpecReview, Some(WaitKind::Arbitration));
        c.state.waiting.as_mut().unwrap().signal = None;
        c.state.arbitrations.push(Arbitration {
            phase: Phase::SpecReview,
            signal: Signal::S3,
            decision: Decision::Ask,
            from: None,
            to: None,
            note: String::new(),
            ts: util::now(),
            after_round: 0,
        });
        assert_eq!(apply(&mut c, Command::Continue, "o").unwrap(), Answer::Run);
        let a = c.state.arbitrations.last().unwrap();
        assert_eq!((a.signal, a.decision), (Signal::S3, Decision::Continue));
    }
}
