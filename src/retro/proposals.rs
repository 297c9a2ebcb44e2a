//! From ledger counts to observations, proposals and suggestions.
//!
//! A failure seen in fewer than `improve.min_occurrences` runs is an observation. Seen in at
//! least that many, it becomes a Tier 1 proposal (a guidance section added to the prompt of the
//! role that failed, citing the runs) and a Tier 2 suggestion (configuration changes a person
//! should consider). A change that is active and followed by the same failure in the next two
//! runs gets a revert proposal.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::ledger::{FailureKey, RunRecord};

/// Marker that identifies a section this pipeline added to a prompt file.
pub const MARKER_PREFIX: &str = "<!-- spec-orchestrate:improvement ";

/// A failure seen, but not often enough to act on.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct Observation {
    pub key: FailureKey,
    pub runs: Vec<String>,
}

/// A Tier 1 change (or revert) backed by counts.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct Proposal {
    /// Stable id of the change (derived from the failure).
    pub id: String,
    pub key: FailureKey,
    pub runs: Vec<String>,
    /// Prompt name (`.specs/prompts/<name>.md`).
    pub prompt: String,
    /// Guidance text added (or, for a revert, the section removed).
    pub guidance: String,
    /// A revert of an active change rather than a new one.
    pub revert: bool,
}

/// A Tier 2 suggestion: configuration a person should consider; never applied.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct Suggestion {
    pub target: String,
    pub text: String,
    pub runs: Vec<String>,
}

/// Everything the retrospective concluded.
#[derive(Debug, Clone, PartialEq, Default)]
#[allow(missing_docs)]
pub struct Analysis {
    /// Failures seen too rarely to act on.
    pub observations: Vec<Observation>,
    pub proposals: Vec<Proposal>,
    pub suggestions: Vec<Suggestion>,
}

/// Id of the change answering `key`.
pub fn change_id(key: &FailureKey) -> String {
    let h = Sha256::digest(format!("{}\u{1f}{}\u{1f}{}", key.kind, key.name, key.phase).as_bytes());
    format!("imp-{}", &hex::encode(h)[..8])
}

/// The prompt and role a failure in `phase` concerns.
pub fn prompt_for(phase: &str) -> (&'static str, &'static str) {
    match phase {
        "spec_review" => ("spec_reviewer", "spec_reviewer"),
        "spec_generate" | "inspect" => ("spec_author", "spec_author"),
        "implement" | "evaluate" => ("implementer", "impl_backend"),
        _ => ("spec_author", "spec_author"),
    }
}

fn guidance(key: &FailureKey) -> String {
    match (key.kind.as_str(), key.name.as_str()) {
        ("category", "malformed_output") => "Answer with exactly one ```json block holding the envelope `{\"findings\": [...], \"converged\": ..., \"remaining_disputes\": [...]}`; put nothing before or after it.".into(),
        ("category", "timeout") => "Keep each answer focused on the task at hand; do not explore the whole repository before answering.".into(),
        ("category", "sandbox_violation") => "Change only the files your role owns (a reviewer: none; the spec author: its spec directory; an implementer: the working tree outside `.specs/` and `.git/`); never commit, and never touch git's configuration or hooks.".into(),
        ("category", "review_rejected") => "Before finishing, check every requirement id named by the task and the reviewer's earlier findings; address each one explicitly.".into(),
        ("signal", "S1") | ("signal", "S3") => "Before raising a finding, check whether the same point was already raised and answered in an earlier round; do not repeat a finding the author has resolved, and say so in `converged`.".into(),
        ("signal", "S2") => "Rank findings by impact and raise only those that block building the feature correctly; mark the rest `minor`.".into(),
        ("signal", "S4") => "When a section keeps drawing findings, propose a restructuring of that section instead of another local patch.".into(),
        _ => format!("Runs keep failing with {key}; state assumptions explicitly and keep the answer within the documented format."),
    }
}

/// Ids of changes present in the repository's prompt files.
pub fn active_changes(repo: &std::path::Path) -> Vec<String> {
    let dir = repo.join(super::guardrails::PROMPTS_DIR);
    let files = std::fs::read_dir(&dir).into_iter().flatten().flatten();
    // Bounded like every read of an override: a huge file names no change worth a scan.
    let texts = files
        .filter_map(|e| crate::fsx::read_max(&e.path(), crate::fsx::Limit::Prompt).ok())
        .filter_map(|bytes| String::from_utf8(bytes).ok());
    let mut out: Vec<String> = texts
        .flat_map(|text| {
            let ids = text.lines().filter_map(|line| {
                line.trim()
                    .strip_prefix(MARKER_PREFIX)
                    .map(|rest| rest.trim_end_matches("-->").trim().to_string())
            });
            ids.filter(|id| !id.is_empty()).collect::<Vec<_>>()
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Analyses the ledger (which already holds the current run as its last record).
pub fn analyse(
    runs: &[RunRecord],
    current: &RunRecord,
    min_occurrences: u32,
    active: &[String],
) -> Analysis {
    let mut seen: BTreeMap<&FailureKey, Vec<String>> = BTreeMap::new();
    for r in runs {
        for k in &r.failures {
            seen.entry(k).or_default().push(r.run_id.clone());
        }
    }
    let mut a = Analysis::default();
    for key in &current.failures {
        let run_ids = seen.get(key).cloned().unwrap_or_default();
        let id = change_id(key);
        // A change already active that keeps failing the same way is reverted, not repeated.
        let after: Vec<String> = runs
            .iter()
            .filter(|r| r.active_changes.contains(&id) && r.failures.contains(key))
            .map(|r| r.run_id.clone())
            .collect();
        let (prompt, role) = prompt_for(&key.phase);
        let proposal = |runs, revert| Proposal {
            id: id.clone(),
            key: key.clone(),
            runs,
            prompt: prompt.into(),
            guidance: guidance(key),
            revert,
        };
        if active.contains(&id) && after.len() >= 2 {
            a.proposals.push(proposal(after, true));
            continue;
        }
        if active.contains(&id) || (run_ids.len() as u32) < min_occurrences {
            let key = key.clone();
            a.observations.push(Observation { key, runs: run_ids });
            continue;
        }
        a.proposals.push(proposal(run_ids.clone(), false));
        a.suggestions.push(Suggestion {
            target: crate::config::CONFIG_PATH.into(),
            text: format!(
                "{key} recurred in {} runs: consider assigning `roles.{role}` to another agent or raising `limits.agent_timeout_s`/`limits.task_attempts` in {}",
                run_ids.len(),
                crate::config::CONFIG_PATH
            ),
            runs: run_ids,
        });
    }
    a
}

/// The section a proposal adds to a prompt file.
pub fn section(p: &Proposal) -> String {
    format!(
        "\n{MARKER_PREFIX}{} -->\n## Lesson from runs {}\n\n{}\n",
        p.id,
        p.runs.join(", "),
        p.guidance
    )
}

/// `text` with the section of change `id` removed (from its marker to the next marker or end).
pub fn without_section(text: &str, id: &str) -> String {
    let marker = format!("{MARKER_PREFIX}{id} -->");
    let mut out = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.trim() == marker {
            skipping = true;
            if out.last().is_some_and(|l: &&str| l.trim().is_empty()) {
                out.pop();
            }
            continue;
        }
        if skipping && line.trim().starts_with(MARKER_PREFIX) {
            skipping = false;
        }
        if !skipping {
            out.push(line);
        }
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}
