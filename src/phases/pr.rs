//! pr: render `pr-body.md` from state and result files and publish it through the forge, as a
//! draft unless the last evaluate gate passed and nothing is unresolved.

use crate::error::Result;
use crate::report::pr_body;
use crate::types::Outcome;
use crate::util;

use super::Ctx;

/// Runs pr.
pub fn run(ctx: &mut Ctx) -> Result<Outcome> {
    if ctx.state.rounds.evaluate.is_empty() && ctx.state.draft_reasons.is_empty() {
        ctx.state
            .draft_reasons
            .push("no acceptance round ran".into());
    }
    // A review round in flight is answered now, from this run's tasks and last evaluate
    // round, so the body shows its answers.
    super::revise::settle(ctx)?;
    let draft = !pr_body::is_ready(&ctx.state);
    publish(ctx, draft)?;
    Ok(Outcome::Ok)
}

/// Renders `pr-body.md` from the state and publishes it through the forge, as a draft when
/// `draft`. Also used to land a draft when a run stops on its budget or a spend cap, without
/// touching the phase or the draft reasons (a resumed run may still end ready).
pub fn publish(ctx: &mut Ctx, draft: bool) -> Result<()> {
    let result = pr_body::last_result(ctx.feature_dir(), &ctx.state);
    // Mark the PR before rendering so that the body and the state agree on draft/ready.
    let path = ctx.feature_dir().join("pr-body.md");
    let pr = ctx.forge.publish_pr(&path, draft)?;
    ctx.state.pr = Some(pr);
    let isolation = crate::process::identity::describe();
    let imported = pr_body::imported_section(&crate::spec::SpecDocs::read(ctx.feature_dir()));
    let body = ctx.redactor.redact(&pr_body::render_full(
        &ctx.state,
        result.as_ref(),
        Some(&isolation),
        imported.as_deref(),
    ));
    util::write_text(&path, &body)?;
    ctx.state.job.record(crate::state::job::Effect::PrBody(
        path.display().to_string(),
    ));
    crate::events::emit(crate::events::Event::PrWritten {
        path: path.display().to_string(),
        draft,
    });
    Ok(())
}
