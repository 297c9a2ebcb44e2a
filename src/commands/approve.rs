//! `approve`: the manual-mode gate between a reviewed spec and its implementation, decided by
//! the machine's table (`machine::answer`, the same one the Action mode's comments use).

use super::Exit;
use crate::error::Result;
use crate::machine::answer::PersonCommand;

/// Records approval of the spec waiting at `approval`.
pub fn approve(at: &super::Target) -> Result<Exit> {
    let (ctx, _) = super::answer_locally(at, PersonCommand::Approve)?;
    super::note(format!(
        "approved `{}`; continue with `spec-orchestrate resume --feature {}`",
        ctx.state.feature, ctx.state.feature
    ));
    Ok(Exit::Ok)
}
