//! `approve`: the manual-mode gate between a reviewed spec and its implementation, decided by
//! the machine's table (`machine::answer`, the same one the Action mode's comments use).

use std::path::Path;

use super::{Exit, open_ctx, repo_root};
use crate::error::Result;
use crate::machine::answer::{self, PersonCommand};

/// Records approval of the spec waiting at `approval`.
pub fn approve(repo: Option<&Path>, feature: Option<&str>) -> Result<Exit> {
    let repo = repo_root(repo)?;
    let dir = super::feature_dir(&repo, feature)?;
    let mut ctx = open_ctx(&repo, &dir, None)?;
    let by = std::env::var("USER").unwrap_or_else(|_| "local".into());
    let applied = answer::answer(&ctx.state, &ctx.config, PersonCommand::Approve, &by)
        .map_err(|r| r.into_error(&ctx.state.feature, &ctx.store.path()))?;
    ctx.state = applied.state;
    ctx.save()?;
    crate::events::emit(crate::events::Event::Note {
        message: format!(
            "approved `{}`; continue with `spec-orchestrate resume --feature {}`",
            ctx.state.feature, ctx.state.feature
        ),
    });
    Ok(Exit::Ok)
}
