//! spec_generate: the spec author writes the four documents, or revises them against the open
//! findings of the last inspection or review.

use crate::config::Role;
use crate::error::Result;
use crate::machine::{Outcome, Phase};

use super::{Call, Ctx};

/// Runs spec_generate.
pub fn run(ctx: &mut Ctx) -> Result<Outcome> {
    let round = ctx.state.rounds.spec_review.len() as u32 + 1;
    let (title, body) = ctx.issue_vars();
    let mut revision = String::new();
    if !ctx.state.open_findings.is_empty() {
        revision.push_str("This is a revision. Resolve every open finding below (JSON); keep what is not affected unchanged.\n```json\n");
        revision
            .push_str(&serde_json::to_string_pretty(&ctx.state.open_findings).unwrap_or_default());
        revision.push_str("\n```\n");
    }
    if let Some(section) = &ctx.state.restructure {
        revision.push_str(&format!(
            "\nRESTRUCTURE ORDER: findings keep landing in {section} round after round. Do not patch it again: rewrite that section from scratch (new structure, not new wording), then resolve the open findings.\n"
        ));
    }
    let spec_dir = ctx.spec_rel();
    let prompt = crate::prompts::render(
        &ctx.repo,
        "spec_author",
        &[
            ("spec_dir", &spec_dir),
            ("issue_title", &title),
            ("issue_body", &body),
            ("revision", &revision),
        ],
    );
    let agent = ctx.agent(Role::SpecAuthor);
    let call = Call {
        role: Role::SpecAuthor.as_str(),
        agent: &agent,
        writes: true,
        round: Some(round),
        task: None,
        prompt,
    };
    match ctx.call_agent(&call, Phase::SpecGenerate)? {
        Ok(_) => Ok(Outcome::Ok),
        Err(_) => Ok(Outcome::AgentFailure),
    }
}
