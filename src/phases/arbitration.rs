//! The one effect of an arbitration that needs a context: a rubric restart resets the work
//! branch. What is decided and recorded is `machine::arbitrate` (auto) and `machine::answer` (a
//! person's answer), both pure.

use super::Ctx;
use crate::error::Result;

/// Throws the implementation away: resets the work branch to `target`, the commit `implement`
/// started from (the approved spec), and discards what the run left under `.specs/` since.
pub fn reset_branch(ctx: &mut Ctx, target: &str) -> Result<()> {
    let git = ctx.forge.git().clone();
    git.run(&["reset", "--quiet", "--hard", target])?;
    git.discard_changes(&[".specs/"])?;
    Ok(())
}
