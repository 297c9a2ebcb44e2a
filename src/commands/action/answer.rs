//! What a `/spec-orchestrate <command>` comment (or the approve label) does to the saved run.
//!
//! The decision is the machine's (`machine::answer`), the same table the CLI's `approve` and
//! `arbitrate` use: a run waiting on an arbitration is answered exactly as `spec-orchestrate
//! arbitrate` answers it locally, and the Action mode's own commands (stopping and resuming the
//! chain, asking for a draft while nothing waits) are recorded the same way, with the person's
//! login, so the PR body and the status comment show who decided. Here the comment's word becomes
//! the machine's command, and the machine's refusal becomes the reply.

use std::path::Path;

use crate::config::Config;
use crate::error::Error;
use crate::forge::github::event::Command;
use crate::machine::answer::{self, PersonCommand, Refusal, Then};
use crate::state::State;
use crate::types::Phase;
use crate::types::kinds::Answer as Word;

/// What the job does after applying a command (not a person's [`crate::types::kinds::Answer`]
/// to a wait, which a command may carry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterCommand {
    /// Run the next phase, then go on as usual.
    Run,
    /// Save and publish the state, run nothing, dispatch nothing.
    Halt(String),
    /// The command does not apply now: reply with this, change nothing.
    Reject(String),
}

/// Applies `command` from `by` to `state` in memory (the caller saves it); `path` is the state
/// file, named when the state cannot be answered.
pub fn apply_to(
    state: &mut State,
    config: &Config,
    command: Command,
    by: &str,
    path: &Path,
) -> crate::error::Result<AfterCommand> {
    if state.phase() == Phase::Done {
        return Ok(AfterCommand::Reject(Refusal::Done.reply()));
    }
    let word = match command {
        Command::Approve => Word::Approve,
        Command::Continue | Command::Stop => Word::Continue,
        Command::Swap => Word::Swap,
        Command::Draft => Word::Draft,
    };
    let person = answer::from_comment(word, command == Command::Stop, state);
    // An arbitration's record names a person as the comment does (`@login`), as the CLI's
    // names the local user; an approval records the login itself.
    let by = match person {
        PersonCommand::Arbitrate(_) => format!("@{by}"),
        _ => by.to_string(),
    };
    match answer::answer(state, config, person, &by) {
        Ok(applied) => {
            if let Some(note) = applied.note {
                crate::events::emit(crate::events::Event::Arbitration { note });
            }
            *state = applied.state;
            Ok(match applied.then {
                Then::Run => AfterCommand::Run,
                Then::Halt(message) => AfterCommand::Halt(message),
            })
        }
        Err(refusal) => match refusal.inconsistency() {
            Some(problem) => Err(Error::State {
                path: path.to_path_buf(),
                problem,
                help: Refusal::SIGNAL_HELP.into(),
            }),
            None => Ok(AfterCommand::Reject(refusal.reply())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::local::LocalForge;
    use crate::phases::Ctx;
    use crate::secrets::Redactor;
    use crate::state::Arbitration;
    use crate::state::store::StateStore;
    use crate::types::Signal;
    use crate::types::kinds::{Decision, WaitKind};
    use crate::util;

    /// Applies `command` from `by` to the run in `ctx`, saving it when it changes.
    fn apply(ctx: &mut Ctx, command: Command, by: &str) -> crate::error::Result<AfterCommand> {
        let path = ctx.store.path();
        let answer = apply_to(&mut ctx.state, &ctx.config, command, by, &path)?;
        if !matches!(answer, AfterCommand::Reject(_)) {
            ctx.save()?;
        }
        Ok(answer)
    }

    fn ctx_at(dir: &std::path::Path, phase: Phase, waiting: Option<WaitKind>) -> Ctx {
        let mut s = crate::state::tests::waiting_at(phase, waiting);
        // The phases a real run completed before reaching `phase`: a state read back is checked
        // for a phase its completed phases lead to (`state::validate`).
        s.completed_phases = Phase::ALL
            .iter()
            .copied()
            .take_while(|p| *p != phase)
            .collect();
        Ctx {
            repo: dir.to_path_buf(),
            config: Config::default(),
            state: s,
            store: StateStore::open(&dir.join(".specs/f")).unwrap(),
            forge: LocalForge::new(dir),
            redactor: Redactor::default(),
            waves: Default::default(),
        }
    }

    #[test]
    fn approve_records_who_and_only_applies_when_something_waits() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx_at(dir.path(), Phase::Approval, Some(WaitKind::Approval));
        assert_eq!(
            apply(&mut c, Command::Approve, "octocat").unwrap(),
            AfterCommand::Run
        );
        assert_eq!(c.state.approval.as_ref().unwrap().by, "octocat");
        assert!(c.state.waiting.is_none());
        drop(c);

        let mut c = ctx_at(dir.path(), Phase::Implement, None);
        assert!(matches!(
            apply(&mut c, Command::Approve, "o").unwrap(),
            AfterCommand::Reject(_)
        ));
        assert!(c.state.approval.is_none());
        drop(c);

        // At a stalled review loop, `approve` is the local arbitration answer.
        let mut c = ctx_at(dir.path(), Phase::SpecReview, Some(WaitKind::Arbitration));
        assert_eq!(
            apply(&mut c, Command::Approve, "o").unwrap(),
            AfterCommand::Run
        );
        assert_eq!(c.state.phase(), Phase::Approval);
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
            AfterCommand::Halt(_)
        ));
        assert_eq!(c.state.waiting.as_ref().unwrap().kind, WaitKind::Stopped);
        assert_eq!(
            apply(&mut c, Command::Continue, "o").unwrap(),
            AfterCommand::Run
        );
        assert!(c.state.waiting.is_none());
        assert!(matches!(
            apply(&mut c, Command::Swap, "o").unwrap(),
            AfterCommand::Reject(_)
        ));
        assert_eq!(
            apply(&mut c, Command::Draft, "o").unwrap(),
            AfterCommand::Run
        );
        assert_eq!(c.state.phase(), Phase::Pr);
        assert!(c.state.draft_reasons[0].contains("@o"));
        assert!(matches!(
            apply(&mut c, Command::Draft, "o").unwrap(),
            AfterCommand::Reject(_)
        ));
        drop(c);

        let mut c = ctx_at(dir.path(), Phase::Done, None);
        assert!(matches!(
            apply(&mut c, Command::Continue, "o").unwrap(),
            AfterCommand::Reject(_)
        ));
    }

    /// A draft asked for while nothing waits is recorded with the `MANUAL` signal, which reads
    /// back as itself (it used to be a string outside the signal set).
    #[test]
    fn a_requested_draft_records_the_manual_signal_and_it_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx_at(dir.path(), Phase::Implement, None);
        assert_eq!(
            apply(&mut c, Command::Draft, "o").unwrap(),
            AfterCommand::Run
        );
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
        assert_eq!(
            apply(&mut c, Command::Continue, "o").unwrap(),
            AfterCommand::Run
        );
        let a = c.state.arbitrations.last().unwrap();
        assert_eq!((a.signal, a.decision), (Signal::S3, Decision::Continue));
    }
}
