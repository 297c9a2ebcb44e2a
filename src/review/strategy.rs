//! What every review strategy shares: the prompt variables, the output shape, and the `single`
//! strategy itself.
//!
//! The same strategies serve the pipeline's `spec_review` (the four documents of a feature) and
//! the stand-alone `review`/`debate` commands (any Markdown file); only the prompt variables
//! differ, so a strategy never needs to know which of the two it is serving.

use std::path::Path;

use super::calls::{self, CallEnv, CallLog, ReviewCall};
use super::envelope;
use super::merge::MergedReview;
use crate::error::Result;
use crate::prompts::Template;
use crate::types::Role;

/// Template variables of every review prompt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptVars {
    /// What to review, in words ("the specification in `.specs/x/` (…)").
    pub target: String,
    /// The context block (the issue, as untrusted data), or empty.
    pub context: String,
    /// `.specs/<feature>` (pipeline) or `.` (stand-alone).
    pub spec_dir: String,
    /// Issue title (pipeline), or the document's file name.
    pub issue_title: String,
    /// Issue body (pipeline), or empty.
    pub issue_body: String,
    /// From spec review round 2: the previous round's findings, the author's revision notes
    /// and the changed sections ([`super::previous::render`]); empty otherwise.
    pub previous: String,
}

impl PromptVars {
    /// As `(name, value)` pairs for [`crate::prompts::render`].
    pub fn pairs(&self) -> [(&'static str, &str); 6] {
        [
            ("target", &self.target),
            ("context", &self.context),
            ("spec_dir", &self.spec_dir),
            ("issue_title", &self.issue_title),
            ("issue_body", &self.issue_body),
            ("previous", &self.previous),
        ]
    }

    /// The same variables with every value passed through `f` (the debate's anonymiser).
    pub fn map(&self, f: impl Fn(&str) -> String) -> PromptVars {
        PromptVars {
            target: f(&self.target),
            context: f(&self.context),
            spec_dir: f(&self.spec_dir),
            issue_title: f(&self.issue_title),
            issue_body: f(&self.issue_body),
            previous: f(&self.previous),
        }
    }
}

/// Renders template `t` with `vars` plus `extra` pairs.
pub fn render(root: &Path, t: Template, vars: &PromptVars, extra: &[(&str, &str)]) -> String {
    let mut all = vars.pairs().to_vec();
    all.extend_from_slice(extra);
    crate::prompts::render(root, t, &all)
}

/// What a strategy hands back: the merged review (or why the round failed) and every call's
/// log, for the caller to record.
#[derive(Debug, Clone)]
pub struct StrategyOutput {
    /// The review, or the reason no usable review came back.
    pub review: std::result::Result<MergedReview, String>,
    /// Usage and failures of every call made.
    pub logs: Vec<CallLog>,
}

/// `single`: the spec_reviewer agent reviews once.
pub fn single(
    env: &CallEnv,
    root: &Path,
    vars: &PromptVars,
    agent: &str,
    round: Option<u32>,
) -> Result<StrategyOutput> {
    let prompt = render(root, Template::SpecReviewer, vars, &[]);
    let call = ReviewCall::new(Role::SpecReviewer, agent, round, prompt);
    let answer = calls::run_one(env, call, &envelope::parse_answer)?;
    Ok(StrategyOutput {
        review: answer
            .result
            .map(|env| MergedReview::merge("single", vec![("spec_reviewer".into(), env)], vec![]))
            .map_err(|f| f.to_string()),
        logs: answer.logs,
    })
}
