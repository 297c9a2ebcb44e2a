//! The checkpoint archive: the state file and every other file of `.specs/<feature>/` that git
//! ignores (evidence, evaluate results, `pr-body.md`, `retrospective.md`). What git tracks
//! travels through the pushed work branch instead; the two together are the whole run.
//!
//! Entries are stored under their repository-relative path. Extraction refuses any entry that
//! would land outside `.specs/` (absolute paths, `..`, symlinked directories), because a
//! checkpoint is downloaded data and must not be able to write elsewhere in the checkout.

use std::io::{Cursor, Read, Write};
use std::path::{Component, Path};

use crate::error::{Error, Result};
use crate::git::Git;
use crate::state::{LOCK_FILE, STATE_FILE, State};

/// A checkpoint that cannot be written or read back: a state error. The archive lives in memory
/// (built for upload, or downloaded), so it is named rather than given a path.
fn bad(problem: impl Into<String>) -> Error {
    Error::State {
        path: "checkpoint archive".into(),
        problem: problem.into(),
        help: "re-run the job that saved it, or comment `/spec-orchestrate continue` to resume from the newest readable checkpoint".into(),
    }
}

/// Files of the checkpoint, repository-relative, sorted: the ignored files under `spec_rel`
/// minus the lock and temp files.
pub fn members(repo: &Path, spec_rel: &str) -> Result<Vec<String>> {
    let out = Git::new(repo).run(&[
        "ls-files",
        "--others",
        "--ignored",
        "--exclude-standard",
        "-z",
        "--",
        spec_rel,
    ])?;
    let mut files: Vec<String> = out
        .split('\0')
        .filter(|p| !p.is_empty())
        .filter(|p| {
            let name = p.rsplit('/').next().unwrap_or(p);
            name != LOCK_FILE && !name.starts_with(".pipeline-state.json.tmp")
        })
        .map(str::to_string)
        .collect();
    files.sort();
    Ok(files)
}

/// Builds the zip of the checkpoint of `spec_rel` (e.g. `.specs/dark-mode`).
pub fn build(repo: &Path, spec_rel: &str) -> Result<Vec<u8>> {
    let files = members(repo, spec_rel)?;
    if !files.iter().any(|f| f.ends_with(&format!("/{STATE_FILE}"))) {
        return Err(bad(format!(
            "{spec_rel}/{STATE_FILE} is missing or not ignored by git; the feature's .gitignore must list it"
        )));
    }
    zip_of(files.iter().map(|rel| {
        let path = repo.join(rel);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        Ok((rel.as_str(), bytes.into()))
    }))
}

/// A zip of `files` (each a path under `.specs/` and its bytes), as [`build`] writes one: a
/// matrix leg's result travels so, and is read back through [`entries`] with the same checks.
pub fn pack(files: &[(String, Vec<u8>)]) -> Result<Vec<u8>> {
    zip_of(files.iter().map(|(rel, bytes)| {
        check_path(rel)?;
        Ok((rel.as_str(), bytes.as_slice().into()))
    }))
}

/// A zip of `files` (path and bytes, each read when its turn comes), deflated, undated.
fn zip_of<'a>(
    files: impl Iterator<Item = Result<(&'a str, std::borrow::Cow<'a, [u8]>)>>,
) -> Result<Vec<u8>> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::default());
    for file in files {
        let (rel, bytes) = file?;
        zip.start_file(rel, options)
            .map_err(|e| bad(format!("cannot add {rel}: {e}")))?;
        zip.write_all(&bytes)
            .map_err(|e| bad(format!("cannot add {rel}: {e}")))?;
    }
    let cursor = zip
        .finish()
        .map_err(|e| bad(format!("cannot finish the zip: {e}")))?;
    Ok(cursor.into_inner())
}

/// The most an archive may unpack to: a downloaded zip of a few megabytes can claim to hold
/// terabytes (a zip bomb), and the entries are held in memory.
const MAX_UNPACKED: u64 = 1024 * 1024 * 1024;

/// Every entry: (repository-relative path, bytes), validated to stay under `.specs/`, at most
/// [`MAX_UNPACKED`] bytes in all.
pub fn entries(zip: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    entries_within(zip, MAX_UNPACKED)
}

fn entries_within(zip: &[u8], max: u64) -> Result<Vec<(String, Vec<u8>)>> {
    let mut archive = zip::ZipArchive::new(Cursor::new(zip)).map_err(|e| {
        bad(format!(
            "not a readable zip ({e}); the artifact may be damaged"
        ))
    })?;
    let mut out = Vec::new();
    let mut left = max;
    for i in 0..archive.len() {
        let mut file = archive
            .by_index(i)
            .map_err(|e| bad(format!("entry {i} is unreadable: {e}")))?;
        if file.is_dir() {
            continue;
        }
        let name = file
            .name()
            .map_err(|e| bad(format!("entry {i} has an unreadable name: {e}")))?
            .to_string();
        check_path(&name)?;
        let mut bytes = Vec::new();
        (&mut file)
            .take(left + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| bad(format!("{name} is unreadable: {e}")))?;
        left = left.checked_sub(bytes.len() as u64).ok_or_else(|| {
            bad(format!(
                "it unpacks to more than {max} bytes (at {name}); it is not a checkpoint this program wrote"
            ))
        })?;
        out.push((name, bytes));
    }
    Ok(out)
}

fn check_path(name: &str) -> Result<()> {
    let p = Path::new(name);
    let clean = p.components().all(|c| matches!(c, Component::Normal(_)));
    if !clean || !name.starts_with(".specs/") || name.contains('\\') {
        return Err(bad(format!(
            "entry `{name}` would be written outside .specs/; refusing the whole checkpoint"
        )));
    }
    Ok(())
}

/// The state inside a checkpoint, and its repository-relative path.
pub fn state_of(zip: &[u8]) -> Result<(String, State)> {
    let entries = entries(zip)?;
    let (path, bytes) = entries
        .iter()
        .find(|(p, _)| p.ends_with(&format!("/{STATE_FILE}")) && p.matches('/').count() == 2)
        .ok_or_else(|| bad(format!("it holds no .specs/<feature>/{STATE_FILE}")))?;
    let text = String::from_utf8_lossy(bytes).into_owned();
    // Parse through the same checks as a state file on disk (version, corruption).
    let tmp = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let file = tmp.path().join(STATE_FILE);
    std::fs::write(&file, text).map_err(|e| Error::io(&file, e))?;
    let state = crate::state::store::load_file(&file)?;
    Ok((path.clone(), state))
}

/// Writes every entry under `repo`, refusing to follow a symlink on the way.
pub fn extract(zip: &[u8], repo: &Path) -> Result<Vec<String>> {
    let mut written = Vec::new();
    for (rel, bytes) in entries(zip)? {
        let target = repo.join(&rel);
        let mut dir = repo.to_path_buf();
        if let Some(parent) = Path::new(&rel).parent() {
            for c in parent.components() {
                dir.push(c);
                if dir.is_symlink() {
                    return Err(bad(format!(
                        "{} is a symlink; refusing to extract {rel} through it",
                        dir.display()
                    )));
                }
            }
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        if target.is_symlink() {
            std::fs::remove_file(&target).map_err(|e| Error::io(&target, e))?;
        }
        crate::fsx::write_atomic(&target, &bytes)?;
        written.push(rel);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_that_unpacks_past_the_cap_is_refused_before_it_is_held() {
        let zeros = vec![0u8; 600 * 1024];
        let files = [
            (".specs/f/a.bin".to_string(), zeros.clone()),
            (".specs/f/b.bin".to_string(), zeros),
        ];
        let zip = pack(&files).unwrap();
        assert!(
            zip.len() < 16 * 1024,
            "deflated zeros are small: {}",
            zip.len()
        );
        let err = entries_within(&zip, 1024 * 1024).unwrap_err().to_string();
        assert!(
            err.contains("unpacks to more than 1048576 bytes (at .specs/f/b.bin)"),
            "{err}"
        );
        assert_eq!(entries_within(&zip, 2 * 1024 * 1024).unwrap().len(), 2);
    }

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, bytes) in entries {
            zip.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn entries_outside_specs_are_refused() {
        for name in [
            "../evil",
            "/etc/passwd",
            ".specs/../.git/config",
            "src/main.rs",
            ".specs\\x",
        ] {
            let z = zip_of(&[(name, b"x")]);
            let e = entries(&z).unwrap_err().to_string();
            assert!(
                e.contains("outside .specs/") || e.contains("unreadable"),
                "{name}: {e}"
            );
        }
        let z = zip_of(&[(".specs/f/evidence/1/a.png", b"png")]);
        assert_eq!(entries(&z).unwrap().len(), 1);
    }

    #[test]
    fn garbage_is_a_clear_error() {
        let e = entries(b"not a zip").unwrap_err().to_string();
        assert!(e.contains("not a readable zip"), "{e}");
    }
}
