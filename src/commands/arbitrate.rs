//! `arbitrate`: the manual-mode answer to a stalled loop (`continue`, `swap`, `draft`,
//! `approve`). The answer is recorded in state like every arbitration, then the run resumes.

use std::path::Path;

use super::{Exit, drive_and_report, open_ctx, repo_root};
use crate::error::Result;
use crate::machine::StopAt;
use crate::phases::arbitration;
use crate::types::kinds::Answer;

/// Answers the arbitration the run of `feature` waits on, then drives the run on.
pub fn arbitrate(repo: Option<&Path>, feature: Option<&str>, answer: Answer) -> Result<Exit> {
    let repo = repo_root(repo)?;
    let dir = super::feature_dir(&repo, feature)?;
    let mut ctx = open_ctx(&repo, &dir, None)?;
    let by = std::env::var("USER").unwrap_or_else(|_| "local".into());
    let next = arbitration::answer(&mut ctx, answer, &by)?;
    crate::events::emit(crate::events::Event::Note {
        message: format!(
            "arbitration answered with `{answer}`; `{}` continues at {next}",
            ctx.state.feature
        ),
    });
    drive_and_report(&mut ctx, StopAt::End)
}
