//! Applying a Tier 1 proposal: a commit on its own branch, made with a temporary index so the
//! checkout (the work branch) is never touched, plus a PR body file for the local forge.

use std::path::Path;

use crate::error::{Error, Result};
use crate::git::Git;
use crate::prompts;

use super::guardrails::{self, Refusal, Tier};
use super::proposals::{self, Proposal};

/// What applying produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// A branch with the change and its body.
    Branch {
        /// Branch name.
        name: String,
        /// Commit sha.
        commit: String,
    },
    /// The branch already exists (re-run of a retrospective): nothing new.
    Exists(String),
    /// Guardrails refused it.
    Refused(Refusal),
}

/// Creates the branch for `p` from `base`, changing only `.specs/prompts/<prompt>.md`.
pub fn apply(repo: &Path, base: &str, p: &Proposal, line_budget: u32) -> Result<Applied> {
    let target = format!("{}/{}.md", guardrails::PROMPTS_DIR, p.prompt);
    let rel = match guardrails::tier(repo, &target) {
        Ok(Tier::One(rel)) => rel,
        Ok(Tier::Two) => {
            return Ok(Applied::Refused(Refusal {
                target,
                reason: "not a prompt file (Tier 2 is only suggested)".into(),
            }));
        }
        Err(r) => return Ok(Applied::Refused(r)),
    };
    let rel_str = rel.to_string_lossy().into_owned();
    let git = Git::new(repo);
    let verb = if p.revert { "revert" } else { "improve" };
    let branch = format!("spec-orchestrate/{verb}-{}", p.id);
    if git.branch_exists(&branch) {
        return Ok(Applied::Exists(branch));
    }
    let old = match git.run(&["show", &format!("{base}:{rel_str}")]) {
        Ok(t) => t + "\n",
        // No override in the base revision: the change starts from the built-in template, and
        // a proposal naming no template at all is refused rather than writing a prompt that
        // holds nothing but its section.
        Err(_) => prompts::Template::parse(&p.prompt)
            .map(|t| t.builtin().to_string())
            .ok_or_else(|| prompts::MissingTemplate {
                name: p.prompt.clone(),
                override_path: prompts::override_path(repo, &p.prompt),
            })?,
    };
    let new = if p.revert {
        proposals::without_section(&old, &p.id)
    } else {
        format!(
            "{}{}",
            old.trim_end_matches('\n').to_string() + "\n",
            proposals::section(p)
        )
    };
    if let Err(r) = guardrails::check_growth(&target, &old, &new, line_budget) {
        return Ok(Applied::Refused(r));
    }
    let tmp = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let index = tmp.path().join("index");
    let content = tmp.path().join("content");
    std::fs::write(&content, &new).map_err(|e| Error::io(&content, e))?;
    let env = [("GIT_INDEX_FILE", index.to_string_lossy().into_owned())];
    git.run_env(&["read-tree", base], &env)?;
    let blob = git.run(&["hash-object", "-w", &content.to_string_lossy()])?;
    git.run_env(
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("100644,{blob},{rel_str}"),
        ],
        &env,
    )?;
    let tree = git.run_env(&["write-tree"], &env)?;
    let message = format!(
        "{verb}({}): {} (runs {})",
        p.prompt,
        p.key,
        p.runs.join(", ")
    );
    // Author and committer are the orchestrator, as for every commit it makes (git's
    // environment is cleared, so no identity of the person running it leaks in).
    let commit = git.run(&[
        "-c",
        "user.name=spec-orchestrate",
        "-c",
        "user.email=spec-orchestrate@users.noreply.github.com",
        "commit-tree",
        &tree,
        "-p",
        base,
        "-m",
        &message,
    ])?;
    git.run(&["update-ref", &format!("refs/heads/{branch}"), &commit])?;
    Ok(Applied::Branch {
        name: branch,
        commit,
    })
}

/// The PR body of an improvement branch.
pub fn body(p: &Proposal, branch: &str) -> String {
    let (title, why) = if p.revert {
        (
            "Revert a lesson in",
            "The change was active and the same failure followed it in the next runs, so it is taken back.",
        )
    } else {
        (
            "Add a lesson to",
            "Tier 1 change (a prompt file): review and merge to apply it.",
        )
    };
    format!(
        "## {title} `.specs/prompts/{}.md`\n\nBranch `{branch}`.\n\n{} was recorded in runs {} of `.specs/pipeline-metrics.jsonl`.\n\n{why}\n\n```\n{}\n```\n",
        p.prompt,
        p.key,
        p.runs.join(", "),
        p.guidance
    )
}
