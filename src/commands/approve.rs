//! `approve`: the manual-mode gate between a reviewed spec and its implementation, decided by
//! the machine's table (`machine::answer`, the same one the Action mode's comments use).

use std::path::Path;

use super::Exit;
use crate::error::Result;
use crate::machine::answer::PersonCommand;

/// Records approval of the spec waiting at `approval`.
pub fn approve(repo: Option<&Path>, feature: Option<&str>) -> Result<Exit> {
    let (ctx, _) = super::answer_locally(repo, feature, PersonCommand::Approve)?;
    crate::events::emit(crate::events::Event::Note {
        message: format!(
            "approved `{}`; continue with `spec-orchestrate resume --feature {}`",
            ctx.state.feature, ctx.state.feature
        ),
    });
    Ok(Exit::Ok)
}
