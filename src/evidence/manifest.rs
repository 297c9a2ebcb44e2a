//! The evidence manifest: every file under the evidence directory with its size and sha256, and
//! the checks that hold verdicts to it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use rayon::prelude::*;
use sha2::{Digest, Sha256};
use walkdir::WalkDir;

use super::{CaseResult, ManifestRow};
use crate::secrets::Redactor;
use crate::types::kinds::Verdict;
use crate::types::{Finding, Severity};

/// Files whose text is scanned for secrets (and rewritten redacted) before hashing.
const TEXT_EXTENSIONS: [&str; 9] = [
    "log", "txt", "json", "md", "html", "csv", "xml", "yml", "yaml",
];

/// Text files larger than this are hashed as they are (nothing the harness writes gets close).
const REDACT_LIMIT: u64 = 64 << 20;

/// sha256 and size of a file, streamed.
pub fn hash_file(path: &Path) -> std::io::Result<(u64, String)> {
    let mut buf = vec![0u8; 1 << 18];
    hash_with(path, &mut buf)
}

fn hash_with(path: &Path, buf: &mut [u8]) -> std::io::Result<(u64, String)> {
    // Never follows a link nor blocks on a FIFO or reads a device: an agent may have planted one.
    let mut f = crate::fsx::open_read(path).map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut hasher = Sha256::new();
    let mut total = 0u64;
    loop {
        let n = f.read(buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((total, hex::encode(hasher.finalize())))
}

/// Redacts known secrets from a text evidence file in place (so that the hash in the manifest is
/// the hash of the redacted file, and no secret is ever published with the evidence).
fn redact_in_place(path: &Path, redactor: &Redactor) -> std::io::Result<()> {
    if redactor.is_empty() {
        return Ok(());
    }
    let is_text = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| TEXT_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
    if !is_text || std::fs::symlink_metadata(path)?.len() > REDACT_LIMIT {
        return Ok(());
    }
    let other = |e: crate::error::Error| std::io::Error::other(e.to_string());
    let bytes = crate::fsx::read(path).map_err(other)?;
    let text = String::from_utf8_lossy(&bytes);
    let clean = redactor.redact(&text);
    if clean != text {
        crate::fsx::write_atomic(path, clean.as_bytes()).map_err(other)?;
    }
    Ok(())
}

/// How many hashing threads to use: one per available core.
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Walks `feature_dir/evidence/<round>` and returns rows with paths relative to `feature_dir`,
/// sorted by path. Symlinks are not followed. Text files are redacted before they are hashed;
/// files are hashed in parallel on every core.
pub fn build(
    feature_dir: &Path,
    round_dir: &Path,
    redactor: &Redactor,
) -> std::io::Result<Vec<ManifestRow>> {
    build_with_threads(feature_dir, round_dir, redactor, default_threads())
}

/// [`build`] with an explicit number of hashing threads (benchmarks compare 1 and all).
pub fn build_with_threads(
    feature_dir: &Path,
    round_dir: &Path,
    redactor: &Redactor,
    threads: usize,
) -> std::io::Result<Vec<ManifestRow>> {
    if !round_dir.exists() {
        return Ok(Vec::new());
    }
    let files = walk(feature_dir, round_dir, |e| e.file_type().is_file())?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.clamp(1, files.len().max(1)))
        .build()
        .map_err(std::io::Error::other)?;
    pool.install(|| {
        files
            .into_par_iter()
            .map_init(
                || vec![0u8; 1 << 18],
                |buf, (path, entry)| {
                    redact_in_place(entry.path(), redactor)?;
                    let (bytes, sha256) = hash_with(entry.path(), buf)?;
                    Ok(ManifestRow {
                        path,
                        bytes,
                        sha256,
                    })
                },
            )
            .collect()
    })
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
                Err(_) => Some(gone_problem(&full)),
                Ok((0, _)) => Some("evidence file is empty".to_string()),
                Ok((bytes, sha)) => match rows.get(path.as_str()) {
                    None => Some("evidence file is not in the manifest".to_string()),
                    Some(r) => changed(r, bytes, &sha),
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

/// How a file of `bytes` hashing to `sha` differs from its manifest `row`, if it does.
fn changed(row: &ManifestRow, bytes: u64, sha: &str) -> Option<String> {
    if row.bytes != bytes {
        Some(format!(
            "size changed: manifest {} bytes, now {bytes}",
            row.bytes
        ))
    } else {
        (row.sha256 != sha).then(|| "sha256 differs from the manifest".to_string())
    }
}

/// Why a recorded evidence file cannot be hashed now: gone, or replaced by another kind of entry
/// (one message for `check` and `compare`, so `verify` never contradicts itself).
fn gone_problem(full: &Path) -> String {
    match std::fs::symlink_metadata(full) {
        Ok(m) if !m.file_type().is_file() => type_changed(m.file_type()),
        _ => "evidence file is missing".to_string(),
    }
}

fn type_changed(now: std::fs::FileType) -> String {
    format!(
        "type changed: was a regular file, now {}",
        crate::fsx::kind_name(now)
    )
}

/// Every entry under the round directory that is not a regular file (symlinks, FIFOs, devices,
/// sockets, directories), with its path relative to `feature_dir`. Nothing is opened.
pub fn special_entries(
    feature_dir: &Path,
    round_dir: &Path,
) -> std::io::Result<Vec<(String, std::fs::FileType)>> {
    if std::fs::symlink_metadata(round_dir).is_err() {
        return Ok(Vec::new());
    }
    Ok(walk(feature_dir, round_dir, |e| {
        e.depth() > 0 && !e.file_type().is_file()
    })?
    .into_iter()
    .map(|(rel, entry)| (rel, entry.file_type()))
    .collect())
}

/// The entries under `round_dir` that `keep` accepts, sorted by name, links not followed, each
/// with its path relative to `feature_dir` in `/` form: the one walk behind the manifest (the
/// regular files) and the special-entry check (everything else), so both see the same tree.
fn walk(
    feature_dir: &Path,
    round_dir: &Path,
    keep: impl Fn(&walkdir::DirEntry) -> bool,
) -> std::io::Result<Vec<(String, walkdir::DirEntry)>> {
    let mut out = Vec::new();
    for entry in WalkDir::new(round_dir)
        .follow_links(false)
        .sort_by_file_name()
    {
        let entry = entry.map_err(std::io::Error::other)?;
        if !keep(&entry) {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(feature_dir)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .replace('\\', "/");
        out.push((rel, entry));
    }
    Ok(out)
}

/// [`compare`] with the entries that are not regular files: a recorded file now of another type
/// is `type changed`, and any other special entry (a directory only when no recorded file is
/// under it) appeared after the manifest was written.
pub fn compare_entries(
    recorded: &[ManifestRow],
    now: &[ManifestRow],
    specials: &[(String, std::fs::FileType)],
    cases: &[CaseResult],
) -> Vec<Mismatch> {
    let mut out = compare(recorded, now, cases);
    for (path, ft) in specials {
        let was_file = recorded.iter().any(|r| &r.path == path);
        if was_file {
            if let Some(m) = out.iter_mut().find(|m| &m.path == path) {
                m.problem = type_changed(*ft);
            }
            continue;
        }
        let prefix = format!("{path}/");
        if ft.is_dir() && recorded.iter().any(|r| r.path.starts_with(&prefix)) {
            continue;
        }
        out.push(Mismatch {
            case: "-".into(),
            path: path.clone(),
            problem: format!(
                "{} appeared in the evidence directory after the manifest was written",
                crate::fsx::kind_name(*ft)
            ),
        });
    }
    out
}

/// Compares a recorded manifest with one recomputed now: every row whose file is gone, whose
/// size or hash changed, and every file that appeared since, is a mismatch (case `-` when no
/// case names the file). `verify` reports these beside the PASS checks, because evidence that
/// was altered after the run is suspect even when no PASS rests on it.
pub fn compare(
    recorded: &[ManifestRow],
    now: &[ManifestRow],
    cases: &[CaseResult],
) -> Vec<Mismatch> {
    let owner = |path: &str| {
        cases
            .iter()
            .find(|c| c.evidence.iter().any(|e| e == path))
            .map(|c| c.id.clone())
            .unwrap_or_else(|| "-".into())
    };
    let now_rows: BTreeMap<&str, &ManifestRow> = now.iter().map(|r| (r.path.as_str(), r)).collect();
    let recorded_rows: BTreeMap<&str, &ManifestRow> =
        recorded.iter().map(|r| (r.path.as_str(), r)).collect();
    let mut out = Vec::new();
    for r in recorded {
        let problem = match now_rows.get(r.path.as_str()) {
            None => Some("evidence file is missing".to_string()),
            Some(n) if n.bytes == 0 && r.bytes > 0 => Some("evidence file is empty".to_string()),
            Some(n) => changed(r, n.bytes, &n.sha256),
        };
        if let Some(problem) = problem {
            out.push(Mismatch {
                case: owner(&r.path),
                path: r.path.clone(),
                problem,
            });
        }
    }
    for n in now {
        if !recorded_rows.contains_key(n.path.as_str()) {
            out.push(Mismatch {
                case: owner(&n.path),
                path: n.path.clone(),
                problem: "file appeared in the evidence directory after the manifest was written"
                    .into(),
            });
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
                file: m.path.clone(),
                section: c.id.clone(),
                gist: format!("{}: {}", c.id, m.problem),
                argument: "a PASS must be backed by an intact evidence file".into(),
                suggestion: "re-run the case so that it produces its evidence".into(),
                ..Finding::new(Severity::Critical)
            });
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::tests::temp_path;

    /// The manifest and the special-entry check split one walk: every entry under the round is
    /// in exactly one of them (the round directory itself in neither), named from the feature
    /// directory with `/`.
    #[test]
    fn the_manifest_and_the_special_entries_split_the_round_between_them() {
        let (feature, round) = temp_path("evidence/1");
        std::fs::create_dir_all(round.join("shots")).unwrap();
        std::fs::write(round.join("a.log"), "a").unwrap();
        std::fs::write(round.join("shots/b.png"), "b").unwrap();
        std::os::unix::fs::symlink("a.log", round.join("link")).unwrap();
        let rows = build_with_threads(feature.path(), &round, &Redactor::default(), 2).unwrap();
        let files: Vec<&str> = rows.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(files, ["evidence/1/a.log", "evidence/1/shots/b.png"]);
        let special: Vec<String> = special_entries(feature.path(), &round)
            .unwrap()
            .into_iter()
            .map(|(rel, _)| rel)
            .collect();
        assert_eq!(special, ["evidence/1/link", "evidence/1/shots"]);
        let gone = feature.path().join("evidence/2");
        assert!(special_entries(feature.path(), &gone).unwrap().is_empty());
        assert!(
            build_with_threads(feature.path(), &gone, &Redactor::default(), 1)
                .unwrap()
                .is_empty()
        );
    }
}
