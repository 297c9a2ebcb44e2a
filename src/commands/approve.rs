//! `approve`: the manual-mode gate between a reviewed spec and its implementation.

use std::path::Path;

use crate::error::{Error, Result};
use crate::state::Approval;
use crate::types::Phase;
use crate::util;

use super::{Exit, open_ctx, repo_root};

/// Records approval of the spec waiting at `approval`.
pub fn approve(repo: Option<&Path>, feature: Option<&str>) -> Result<Exit> {
    let repo = repo_root(repo)?;
    let dir = super::feature_dir(&repo, feature)?;
    let mut ctx = open_ctx(&repo, &dir, None)?;
    if ctx.state.phase != Phase::Approval {
        return Err(Error::usage(format!(
            "`{}` is at phase {}, not waiting for approval; `spec-orchestrate status` shows where it is",
            ctx.state.feature, ctx.state.phase
        )));
    }
    let by = std::env::var("USER").unwrap_or_else(|_| "local".into());
    ctx.state.approval = Some(Approval {
        by,
        ts: util::now(),
    });
    ctx.state.waiting = None;
    ctx.save()?;
    crate::events::emit(crate::events::Event::Note {
        message: format!(
            "approved `{}`; continue with `spec-orchestrate resume --feature {}`",
            ctx.state.feature, ctx.state.feature
        ),
    });
    Ok(Exit::Ok)
}
