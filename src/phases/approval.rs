//! approval: auto mode passes; manual mode waits for `spec-orchestrate approve`. Once approved,
//! the spec documents and review records are committed to the work branch, so the
//! implementation's history starts from the spec it was built against.

use super::Ctx;
use crate::error::Result;
use crate::state::Mode;
use crate::types::Outcome;
use crate::types::kinds::WaitKind;

/// Runs approval.
pub fn run(ctx: &mut Ctx) -> Result<Outcome> {
    if ctx.state.mode == Mode::Manual && ctx.state.approval.is_none() {
        let message = format!(
            "the spec in {} passed review and waits for approval: read it, then run `spec-orchestrate approve --feature {}` and `spec-orchestrate resume`",
            ctx.spec_rel(),
            ctx.state.feature
        );
        ctx.state.waiting = Some(super::waiting(WaitKind::Approval, message, Vec::new()));
        return Ok(Outcome::Waiting);
    }
    let message =
        super::implement::commit_message(ctx.state.issue.number, "spec", &ctx.state.issue.title);
    let spec_rel = ctx.spec_rel();
    if let Some(sha) = ctx
        .forge
        .git()
        .commit_paths(&message, &[spec_rel.as_str()])?
    {
        super::implement::committed(ctx, "spec", sha);
    }
    Ok(Outcome::Ok)
}
