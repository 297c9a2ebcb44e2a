//! approval: auto mode passes; manual mode waits for `spec-orchestrate approve`. Once approved,
//! the spec documents and review records are committed to the work branch, so the
//! implementation's history starts from the spec it was built against.

use super::Ctx;
use crate::error::Result;
use crate::state::{Mode, Waiting};
use crate::types::Outcome;
use crate::types::kinds::WaitKind;

/// Runs approval.
pub fn run(ctx: &mut Ctx) -> Result<Outcome> {
    if ctx.state.mode == Mode::Manual && ctx.state.approval.is_none() {
        ctx.state.waiting = Some(Waiting {
            kind: WaitKind::Approval,
            message: format!(
                "the spec in {} passed review and waits for approval: read it, then run `spec-orchestrate approve --feature {}` and `spec-orchestrate resume`",
                ctx.spec_rel(),
                ctx.state.feature
            ),
            choices: Vec::new(),
            phase: None,
            signal: None,
        });
        return Ok(Outcome::Waiting);
    }
    let title = ctx.state.issue.title.clone();
    let message = match ctx.state.issue.number {
        Some(n) => format!("spec: {title} (#{n})"),
        None => format!("spec: {title}"),
    };
    let spec_rel = ctx.spec_rel();
    if let Some(sha) = ctx
        .forge
        .git()
        .commit_paths(&message, &[spec_rel.as_str()])?
    {
        ctx.state.job.record(crate::state::job::Effect::Commit {
            what: "spec".into(),
            sha: sha.clone(),
        });
        if let Some(b) = ctx.state.branch.as_mut() {
            b.head = Some(sha);
        }
    }
    Ok(Outcome::Ok)
}
