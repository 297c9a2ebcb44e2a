//! `verify`: re-check, at any later time, that every PASS of the last acceptance round is still
//! backed by the exact evidence file the manifest recorded.

use std::path::Path;

use crate::error::{Error, Result};
use crate::evidence::{EvaluateResult, manifest};
use crate::state;

use super::Exit;

/// Verifies a feature directory; prints one line per mismatch.
pub fn verify(feature_dir: &Path) -> Result<Exit> {
    let st = state::load_file(&feature_dir.join(state::STATE_FILE))?;
    let Some(last) = st.rounds.evaluate.last() else {
        return Err(Error::Usage(format!(
            "{}: no acceptance round has run yet, so there is nothing to verify",
            feature_dir.display()
        )));
    };
    let path = crate::phases::evaluate::result_path(feature_dir, last.round);
    let text = crate::util::read_to_string(&path)?;
    let result: EvaluateResult = serde_json::from_str(&text).map_err(|e| Error::Input {
        path: path.clone(),
        problem: format!("is not a valid evaluate result: {e}"),
    })?;
    let mismatches = manifest::check(feature_dir, &result.cases, &result.manifest);
    for m in &mismatches {
        println!("FAIL {} {}: {}", m.case, m.path, m.problem);
    }
    let passes = result
        .cases
        .iter()
        .filter(|c| c.verdict == crate::evidence::Verdict::Pass)
        .count();
    if mismatches.is_empty() {
        println!(
            "ok: {passes} PASS verdict(s) of round {} hold against {} manifest row(s)",
            result.round,
            result.manifest.len()
        );
        Ok(Exit::Ok)
    } else {
        println!(
            "{} mismatch(es): those PASS verdicts do not hold",
            mismatches.len()
        );
        Ok(Exit::Failed)
    }
}
