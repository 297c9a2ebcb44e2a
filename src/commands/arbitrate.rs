//! `arbitrate`: the manual-mode answer to a stalled loop (`continue`, `swap`, `draft`,
//! `approve`). The answer is decided by the machine's table (`machine::answer`, the same one the
//! Action mode's comments use), recorded in state like every arbitration, then the run resumes.

use std::path::Path;

use super::{Exit, drive_and_report, open_ctx, repo_root};
use crate::error::Result;
use crate::machine::StopAt;
use crate::machine::answer::{self, PersonCommand};
use crate::types::kinds::Answer;

/// Answers the arbitration the run of `feature` waits on, then drives the run on.
pub fn arbitrate(repo: Option<&Path>, feature: Option<&str>, answer: Answer) -> Result<Exit> {
    let repo = repo_root(repo)?;
    let dir = super::feature_dir(&repo, feature)?;
    let mut ctx = open_ctx(&repo, &dir, None)?;
    let by = std::env::var("USER").unwrap_or_else(|_| "local".into());
    let applied = answer::answer(
        &ctx.state,
        &ctx.config,
        PersonCommand::Arbitrate(answer),
        &by,
    )
    .map_err(|r| r.into_error(&ctx.state.feature, &ctx.store.path()))?;
    if let Some(note) = applied.note {
        crate::events::emit(crate::events::Event::Arbitration { note });
    }
    ctx.state = applied.state;
    ctx.save()?;
    crate::events::emit(crate::events::Event::Note {
        message: format!(
            "arbitration answered with `{answer}`; `{}` continues at {}",
            ctx.state.feature,
            ctx.state.phase()
        ),
    });
    drive_and_report(&mut ctx, StopAt::End)
}
