//! The `panel` strategy: personas review the same spec concurrently, each with its own focused
//! prompt, and their envelopes are merged with attribution.
//!
//! One generalist reviewer misses what a specialist would catch; six generalists in a row cost
//! six times the wall time. The personas run at once (see [`super::calls`]), a persona that fails
//! is skipped and named in the review, and only a panel where every persona failed fails the
//! round — which then escalates like any other agent failure.

use std::path::Path;

use super::calls::{self, CallEnv, ReviewCall};
use super::envelope;
use super::merge::MergedReview;
use super::strategy::{PromptVars, StrategyOutput, render};
use crate::error::Result;
use crate::prompts::Template;
use crate::types::kinds::{CallRole, Persona};

/// The prompt of one persona: its focused template, then the shared envelope instructions.
pub fn prompt(root: &Path, persona: Persona, vars: &PromptVars) -> String {
    format!(
        "{}\n\n{}",
        render(root, Template::Panel(persona), vars, &[]).trim_end(),
        render(root, Template::ReviewEnvelope, vars, &[])
    )
}

/// Runs the panel: one concurrent call per persona, all played by `agent`.
pub fn review(
    env: &CallEnv,
    root: &Path,
    vars: &PromptVars,
    agent: &str,
    personas: &[Persona],
    round: Option<u32>,
) -> Result<StrategyOutput> {
    let calls: Vec<ReviewCall> = personas
        .iter()
        .map(|p| ReviewCall::new(CallRole::Panel(*p), agent, round, prompt(root, *p, vars)))
        .collect();
    let answers = calls::run_batch(env, &calls, &envelope::parse_answer)?;
    let mut logs = Vec::new();
    let mut sources = Vec::new();
    let mut skipped = Vec::new();
    for (persona, answer) in personas.iter().zip(answers) {
        logs.extend(answer.logs);
        match answer.result {
            Ok(env) => sources.push((persona.to_string(), env)),
            Err(reason) => skipped.push(format!("{persona} ({reason})")),
        }
    }
    let review = if sources.is_empty() {
        Err(format!(
            "all {} panel reviewers failed: {}",
            personas.len(),
            skipped.join("; ")
        ))
    } else {
        Ok(MergedReview::merge("panel", sources, skipped))
    };
    Ok(StrategyOutput { review, logs })
}
