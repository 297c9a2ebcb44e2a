//! `verify`: re-check, at any later time, that every PASS of the last acceptance round is still
//! backed by the exact evidence file the manifest recorded, and that the evidence directory as a
//! whole is still what the manifest says (nothing changed, removed or added since).
//!
//! It is read-only: it reports which PASS verdicts would now be FAIL and exits 1, but never
//! rewrites the result file, so the record of what happened stays intact.

pub mod pr;

use std::path::Path;

use crate::error::{Error, Result};
use crate::evidence::{EvaluateResult, manifest};
use crate::secrets::Redactor;
use crate::state;
use crate::types::kinds::Verdict;

use super::Exit;

/// Verifies a feature directory; prints one line per mismatch.
pub fn verify(feature_dir: &Path) -> Result<Exit> {
    let state_path = feature_dir.join(state::STATE_FILE);
    if std::fs::symlink_metadata(&state_path).is_err() {
        return Err(Error::usage(format!(
            "{} is not a feature directory: it holds no {}",
            feature_dir.display(),
            state::STATE_FILE
        ))
        .with_help(
            "pass the feature directory of a run, `.specs/<feature>` (e.g. `spec-orchestrate verify .specs/add-a-dark-mode-toggle`); `spec-orchestrate status` lists the runs",
        ));
    }
    let st = state::store::load_file(&state_path)?;
    let Some(last) = st.rounds.evaluate.last() else {
        return Err(Error::evidence(
            feature_dir,
            "no acceptance round has run yet, so there is nothing to verify",
        )
        .with_help("run the pipeline through `evaluate` first (`spec-orchestrate resume`)"));
    };
    let path = crate::types::evaluate_result_path(feature_dir, last.round);
    // A planted FIFO or link at the result file is refused rather than followed or waited on.
    let text = String::from_utf8_lossy(&crate::fsx::read_max(&path, crate::fsx::Limit::Record)?)
        .into_owned();
    let result: EvaluateResult = serde_json::from_str(&text).map_err(|e| {
        Error::evidence(&path, format!("is not a valid evaluate result: {e}")).with_help(
            "the result file was edited or damaged; restore it from the checkpoint or run `evaluate` again",
        )
    })?;
    let round_dir = feature_dir.join("evidence").join(result.round.to_string());
    // Recompute without redacting: verify must not modify the files it checks.
    let now = manifest::build(feature_dir, &round_dir, &Redactor::default())
        .map_err(|e| Error::io(&round_dir, e))?;
    let pass_mismatches = manifest::check(feature_dir, &result.cases, &result.manifest);
    let mut downgraded: Vec<&str> = Vec::new();
    for m in &pass_mismatches {
        outln!(
            "FAIL {} {}: {} (PASS does not hold)",
            m.case,
            m.path,
            m.problem
        )?;
        if !downgraded.contains(&m.case.as_str()) {
            downgraded.push(&m.case);
        }
    }
    let specials =
        manifest::special_entries(feature_dir, &round_dir).map_err(|e| Error::io(&round_dir, e))?;
    let other: Vec<manifest::Mismatch> =
        manifest::compare_entries(&result.manifest, &now, &specials, &result.cases)
            .into_iter()
            .filter(|m| {
                !pass_mismatches
                    .iter()
                    .any(|p| p.path == m.path && p.case == m.case)
            })
            .collect();
    for m in &other {
        outln!("CHANGED {} {}: {}", m.case, m.path, m.problem)?;
    }
    let passes = result
        .cases
        .iter()
        .filter(|c| c.verdict == Verdict::Pass)
        .count();
    if pass_mismatches.is_empty() && other.is_empty() {
        outln!(
            "ok: {passes} PASS verdict(s) of round {} hold against {} manifest row(s)",
            result.round,
            result.manifest.len()
        )?;
        Ok(Exit::Ok)
    } else {
        outln!(
            "{} mismatch(es); {} of {passes} PASS verdict(s) no longer hold{}",
            pass_mismatches.len() + other.len(),
            downgraded.len(),
            if downgraded.is_empty() {
                String::new()
            } else {
                format!(" and would be FAIL: {}", downgraded.join(", "))
            }
        )?;
        Ok(Exit::Failed)
    }
}
