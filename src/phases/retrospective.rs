//! retrospective: the run's record, written from state.

use crate::error::Result;
use crate::machine::{Outcome, Phase};
use crate::util;

use super::Ctx;

/// Runs retrospective.
pub fn run(ctx: &mut Ctx) -> Result<Outcome> {
    // The retrospective reports on the run up to here, including itself as completed.
    ctx.state.mark_completed(Phase::Retrospective);
    let text = crate::report::retrospective::render(&ctx.state);
    util::write_text(&ctx.feature_dir().join("retrospective.md"), &text)?;
    Ok(Outcome::Ok)
}
