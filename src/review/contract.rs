//! Contract negotiation: during `spec_review` the `e2e_runner` agent — the one that will later
//! evaluate the work — reviews `test.md` as the acceptance contract (granular, observable,
//! executable by the harness, covering the edge cases), and its findings gate like the
//! reviewer's.
//!
//! The generator must build against the contract, not against the evaluator's mind: the
//! evaluator's reasoning (its prose and each finding's `argument`) is dropped at this boundary,
//! so that neither the author nor, later, the implementer ever sees it — only the findings
//! (claim, place, severity, suggested fix).

use std::path::Path;

use super::calls::{self, CallEnv, CallLog, ReviewCall};
use super::envelope::{self, Envelope};
use super::strategy::{PromptVars, render};
use crate::agents::Failure;
use crate::error::Result;
use crate::prompts::Template;
use crate::types::Role;

/// The role that reviews the contract.
pub const ROLE: &str = "e2e_runner";

/// The contract reviewer's prompt.
pub fn prompt(root: &Path, vars: &PromptVars) -> String {
    format!(
        "{}\n\n{}",
        render(root, Template::ContractReviewer, vars, &[]).trim_end(),
        render(root, Template::ReviewEnvelope, vars, &[])
    )
}

/// Parses the contract reviewer's answer and strips the reasoning from every finding.
pub fn parse(text: &str) -> std::result::Result<Envelope, String> {
    envelope::parse_answer(text).map(|mut env| {
        for f in &mut env.findings {
            f.argument.clear();
        }
        env
    })
}

/// Runs the contract review with `agent`.
pub fn review(
    env: &CallEnv,
    root: &Path,
    vars: &PromptVars,
    agent: &str,
    round: Option<u32>,
) -> Result<(std::result::Result<Envelope, Failure>, Vec<CallLog>)> {
    let call = ReviewCall::new(Role::E2eRunner, agent, round, prompt(root, vars));
    let answer = calls::run_one(env, call, &parse)?;
    Ok((answer.result, answer.logs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_never_leaves_the_parser() {
        let text = "I think the cases are vague because REASONING-TEXT.\n```json\n{\"findings\": [{\"id\": \"C1\", \"severity\": \"improvement\", \"file\": \"test.md\", \"section\": \"T-A02\", \"gist\": \"T-A02 has no observable outcome\", \"argument\": \"SECRET-WHY\", \"suggestion\": \"add Output contains\"}]}\n```";
        let env = parse(text).unwrap();
        let json = serde_json::to_string(&env).unwrap();
        assert!(!json.contains("SECRET-WHY") && !json.contains("REASONING-TEXT"));
        assert_eq!(env.findings[0].gist, "T-A02 has no observable outcome");
        assert_eq!(env.fix_required(), 1);
    }
}
