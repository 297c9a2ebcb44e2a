//! The evidence manifest: every file under the evidence directory with its size and sha256, and
//! the checks that hold verdicts to it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};
use walkdir::WalkDir;

use super::{CaseResult, ManifestRow, Verdict};
use crate::review::{Finding, Severity};

/// sha256 and size of a file, streamed.
pub fn hash_file(path: &Path) -> std::io::Result<(u64, String)> {
    let mut f = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((total, hex::encode(hasher.finalize())))
}

/// Walks `feature_dir/evidence/<round>` and returns rows with paths relative to `feature_dir`,
/// sorted by path. Symlinks are not followed.
pub fn build(feature_dir: &Path, round_dir: &Path) -> std::io::Result<Vec<ManifestRow>> {
    let mut rows = Vec::new();
    if !round_dir.exists() {
        return Ok(rows);
    }
    for entry in WalkDir::new(round_dir)
        .follow_links(false)
        .sort_by_file_name()
    {
        let entry = entry.map_err(std::io::Error::other)?;
        if !entry.file_type().is_file() {
            continue;
        }
        let (bytes, sha256) = hash_file(entry.path())?;
        let rel = entry
            .path()
            .strip_prefix(feature_dir)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .replace('\\', "/");
        rows.push(ManifestRow {
            path: rel,
            bytes,
            sha256,
        });
    }
    Ok(rows)
}

/// A problem with one evidence file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Case id.
    pub case: String,
    /// Evidence path.
    pub path: String,
    /// What is wrong.
    pub problem: String,
}

/// Checks every PASS against the files on disk and the manifest: missing or empty evidence, or a
/// size/hash differing from the manifest row, is a mismatch.
pub fn check(feature_dir: &Path, cases: &[CaseResult], manifest: &[ManifestRow]) -> Vec<Mismatch> {
    let rows: BTreeMap<&str, &ManifestRow> =
        manifest.iter().map(|r| (r.path.as_str(), r)).collect();
    let mut out = Vec::new();
    for case in cases.iter().filter(|c| c.verdict == Verdict::Pass) {
        if case.evidence.is_empty() {
            out.push(Mismatch {
                case: case.id.clone(),
                path: String::new(),
                problem: "PASS without any evidence file".into(),
            });
        }
        for path in &case.evidence {
            let full = feature_dir.join(path);
            let problem = match hash_file(&full) {
                Err(_) => Some("evidence file is missing".to_string()),
                Ok((0, _)) => Some("evidence file is empty".to_string()),
                Ok((bytes, sha)) => match rows.get(path.as_str()) {
                    None => Some("evidence file is not in the manifest".to_string()),
                    Some(r) if r.bytes != bytes => Some(format!(
                        "size changed: manifest {} bytes, now {bytes}",
                        r.bytes
                    )),
                    Some(r) if r.sha256 != sha => {
                        Some("sha256 differs from the manifest".to_string())
                    }
                    Some(_) => None,
                },
            };
            if let Some(problem) = problem {
                out.push(Mismatch {
                    case: case.id.clone(),
                    path: path.clone(),
                    problem,
                });
            }
        }
    }
    out
}

/// Downgrades every PASS with a mismatch to FAIL and returns a critical finding per mismatch.
pub fn enforce(cases: &mut [CaseResult], mismatches: &[Mismatch]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for m in mismatches {
        if let Some(c) = cases.iter_mut().find(|c| c.id == m.case) {
            c.verdict = Verdict::Fail;
            c.detail = format!("verification: {} ({})", m.problem, m.path);
            findings.push(Finding {
                id: c.id.clone(),
                requirement_id: c.requirement.clone(),
                severity: Severity::Critical,
                file: m.path.clone(),
                section: c.id.clone(),
                gist: format!("{}: {}", c.id, m.problem),
                argument: "a PASS must be backed by an intact evidence file".into(),
                suggestion: "re-run the case so that it produces its evidence".into(),
                fingerprint: None,
                class_key: None,
            });
        }
    }
    findings
}
