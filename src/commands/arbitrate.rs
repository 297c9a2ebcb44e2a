//! `arbitrate`: the manual-mode answer to a stalled loop (`continue`, `swap`, `draft`,
//! `approve`). The answer is decided by the machine's table (`machine::answer`, the same one the
//! Action mode's comments use), recorded in state like every arbitration, then the run resumes.

use super::{Exit, drive_and_report};
use crate::error::Result;
use crate::machine::StopAt;
use crate::machine::answer::PersonCommand;
use crate::types::kinds::Answer;

/// Answers the arbitration the run of `feature` waits on, then drives the run on.
pub fn arbitrate(at: &super::Target, answer: Answer) -> Result<Exit> {
    let (mut ctx, note) = super::answer_locally(at, PersonCommand::Arbitrate(answer))?;
    if let Some(note) = note {
        crate::events::emit(crate::events::Event::Arbitration { note });
    }
    super::note(format!(
        "arbitration answered with `{answer}`; `{}` continues at {}",
        ctx.state.feature,
        ctx.state.phase()
    ));
    drive_and_report(&mut ctx, StopAt::End)
}
