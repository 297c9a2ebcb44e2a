//! intake: settle who plays which role, and create the work branch.
//!
//! The issue itself was read when the run was created (it names the feature directory the state
//! lives in); intake records the base commit and refuses to start on a dirty tree, because every
//! change on the work branch must come from an agent the pipeline dispatched.

use crate::agents::roles;
use crate::error::{Error, Result};
use crate::types::Outcome;

use super::Ctx;

/// Runs intake.
pub fn run(ctx: &mut Ctx) -> Result<Outcome> {
    if ctx.state.roles.is_empty() {
        let (map, overrides) = roles::resolve(&ctx.config, &ctx.repo, ctx.state.mode)?;
        ctx.state.roles = map.into_iter().map(|(r, a)| (r, a.into())).collect();
        ctx.state.role_overrides.extend(overrides);
        ctx.save()?;
    }
    let git = ctx.forge.git().clone();
    let name = branch_name(ctx);
    if ctx.state.branch.is_none() {
        let dirty: Vec<String> = git
            .changed_paths()?
            .into_iter()
            // `.specs/` holds this and other runs' records and the ledger, never user work.
            .filter(|p| !p.starts_with(".specs/"))
            .collect();
        if !dirty.is_empty() {
            return Err(Error::usage(format!(
                "the working tree of {} has uncommitted changes ({}); commit or stash them first, so that the work branch holds only the pipeline's changes",
                ctx.repo.display(),
                dirty.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
            )));
        }
        let Some(base) = git.head() else {
            return Err(Error::usage(format!(
                "{} has no commit yet; make an initial commit first",
                ctx.repo.display()
            )));
        };
        ctx.state.base_commit = Some(base.clone());
        ctx.forge.ensure_branch(&name)?;
        ctx.state.branch = Some(crate::state::BranchRef {
            name,
            head: Some(base),
        });
    } else {
        ctx.forge.ensure_branch(&name)?;
    }
    Ok(Outcome::Ok)
}

/// `spec-orchestrate/<issue>-<feature>`, or without the number for a file issue.
pub fn branch_name(ctx: &Ctx) -> String {
    let prefix = &ctx.config.github.branch_prefix;
    match ctx.state.issue.number {
        Some(n) => format!("{prefix}{n}-{}", ctx.state.feature),
        None => format!("{prefix}{}", ctx.state.feature),
    }
}
