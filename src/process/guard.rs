//! The file-command guard: defence in depth for the runner's file commands.
//!
//! The Actions runner applies the files named by `GITHUB_ENV`, `GITHUB_PATH`, `GITHUB_OUTPUT`,
//! `GITHUB_STATE` and `GITHUB_STEP_SUMMARY` after the step: a line an agent planted there
//! reaches every later step of the job (`LD_PRELOAD` in `GITHUB_ENV`, a directory with a fake
//! `git` in `GITHUB_PATH`, a forged `pr_url` output, a forged summary). With the separate agent
//! identity ([`super::identity`]) agents cannot write them at all; this guard also holds when
//! the identity could not be separated. The first [`check`] of a process records the size, the
//! sha-256 and the content of those files and of every file beside them in the runner's
//! `file_commands` directory (a file past [`KEPT`] by size and hash only); every later check
//! compares, puts changed or removed files back, and reports what it found.
//!
//! Only the processes that call agents check (`run`, `step`); the `action` process, which writes
//! its own outputs and summary, never records a baseline, and no phase writes these files.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

/// The variables naming the runner's file commands.
pub const FILE_COMMANDS: [&str; 5] = [
    "GITHUB_ENV",
    "GITHUB_PATH",
    "GITHUB_OUTPUT",
    "GITHUB_STATE",
    "GITHUB_STEP_SUMMARY",
];

/// Largest file whose content is kept to put it back (the runner caps a summary at 1 MiB).
pub const KEPT: u64 = 16 * 1024 * 1024;

/// How many entries of one directory are recorded at most.
const MAX_ENTRIES: usize = 1000;

/// One recorded file.
#[derive(Debug, Clone)]
struct Recorded {
    size: u64,
    sha: [u8; 32],
    mode: u32,
    content: Option<Vec<u8>>,
}

/// The baseline: directory → (file name → record).
type Baseline = Vec<(PathBuf, Vec<(std::ffi::OsString, Recorded)>)>;

static BASELINE: Mutex<Option<Baseline>> = Mutex::new(None);

/// The file commands this process's environment names.
fn named() -> Vec<PathBuf> {
    FILE_COMMANDS
        .iter()
        .filter_map(std::env::var_os)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// Their directories.
fn directories(named: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = named
        .iter()
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .filter(|d| !d.as_os_str().is_empty())
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Reads a regular file without following a link; `None` for anything else.
fn record(path: &Path) -> Option<Recorded> {
    let mut file = crate::fsx::open_read(path).ok()?;
    let meta = file.metadata().ok()?;
    let mut hasher = Sha256::new();
    let mut content = Vec::new();
    let mut size = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = std::io::Read::read(&mut file, &mut buf).ok()?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
        if size <= KEPT {
            content.extend_from_slice(&buf[..n]);
        }
    }
    Some(Recorded {
        size,
        sha: hasher.finalize().into(),
        mode: meta.permissions().mode() & 0o7777,
        content: (size <= KEPT).then_some(content),
    })
}

/// The files recorded in `dir`: the file commands this process names there, and, in the
/// runner's own directory (named `file_commands`, as `/github/file_commands/` and
/// `_runner_file_commands/` are), every regular file in it. Elsewhere (a local run pointing
/// `GITHUB_OUTPUT` into `/tmp`) other people's files are left alone.
fn snapshot(dir: &Path, named: &[PathBuf]) -> Vec<(std::ffi::OsString, Recorded)> {
    let runners = dir
        .file_name()
        .is_some_and(|n| n.to_string_lossy().ends_with("file_commands"));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .take(MAX_ENTRIES)
        .filter(|e| runners || named.iter().any(|n| *n == e.path()))
        .filter_map(|e| record(&e.path()).map(|r| (e.file_name(), r)))
        .collect()
}

/// How many agent calls of this process are running (the tasks of a wave, the members of a
/// review batch run at once).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// One agent call's watch over the file commands: [`Watch::start`] before the call, and
/// [`Watch::end`] after it, which returns what was found around it.
#[derive(Debug)]
pub struct Watch {
    /// What the check before the call found (left by an earlier program).
    before: Vec<String>,
}

impl Watch {
    /// Checks before a call; what is found then was left by an earlier program.
    pub fn start() -> Watch {
        let others = IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        let alone = |line| format!("{line} (found before the call: left by an earlier program)");
        Watch {
            before: found("before", others, alone),
        }
    }

    /// Checks after the call: the lines found around it, oldest first. The files are shared by
    /// every call of the process, so a change found while other calls were running cannot be
    /// told apart among them, and its line says so.
    pub fn end(self) -> Vec<String> {
        let others = IN_FLIGHT.fetch_sub(1, Ordering::SeqCst).saturating_sub(1);
        let mut lines = self.before;
        lines.extend(found("after", others, |line| line));
        lines.truncate(MAX_ENTRIES);
        lines
    }
}

/// The lines of a [`check`] made `when` (before or after) a call while `others` other calls ran,
/// each saying so; with none, as `alone` words it.
fn found(when: &str, others: usize, alone: impl Fn(String) -> String) -> Vec<String> {
    let calls = match others {
        0 => return check().into_iter().map(alone).collect(),
        1 => "another call".to_string(),
        n => format!("{n} other calls"),
    };
    let while_others = |line| {
        format!("{line} (found {when} this call while {calls} ran: it cannot be told which one)")
    };
    check().into_iter().map(while_others).collect()
}

/// Compares the file commands with the baseline (recording it on the first call) and puts back
/// what changed or was removed. A file added beside them is left alone: the runner reads only
/// the files it named for the step. Returns one line per file found changed (names
/// only: the files may hold values of earlier steps), empty when all is as recorded or when the
/// environment names no file command.
pub fn check() -> Vec<String> {
    let mut guard = crate::util::locked(&BASELINE);
    let Some(baseline) = guard.as_ref() else {
        let named = named();
        let dirs = directories(&named);
        if !dirs.is_empty() {
            *guard = Some(
                dirs.iter()
                    .map(|d| (d.clone(), snapshot(d, &named)))
                    .collect(),
            );
        }
        return Vec::new();
    };
    let mut found = Vec::new();
    for (dir, files) in baseline {
        for (name, was) in files {
            let path = dir.join(name);
            let now = record(&path);
            if now
                .as_ref()
                .is_some_and(|n| n.size == was.size && n.sha == was.sha)
            {
                continue;
            }
            let what = if now.is_some() {
                "changed"
            } else {
                "removed or replaced"
            };
            let done = match put_back(&path, was) {
                Ok(()) => "restored".to_string(),
                Err(e) => format!("could not be restored: {e}"),
            };
            found.push(format!("{} {what}, {done}", path.display()));
        }
    }
    found
}

/// Writes the recorded content back in place (a link or other entry put there is removed first,
/// never written through).
fn put_back(path: &Path, was: &Recorded) -> std::io::Result<()> {
    let Some(content) = &was.content else {
        return Err(std::io::Error::other(format!(
            "it was larger than {} MiB when recorded",
            KEPT / (1024 * 1024)
        )));
    };
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if m.is_dir() {
            std::fs::remove_dir_all(path)?;
        } else if !m.file_type().is_file() {
            std::fs::remove_file(path)?;
        }
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(was.mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    file.write_all(content)?;
    file.sync_all()?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(was.mode))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::tests::temp_file;

    #[test]
    fn put_back_restores_content_and_replaces_a_planted_link() {
        let (dir, f) = temp_file("set_env", "A=1\n");
        let was = record(&f).unwrap();
        std::fs::write(&f, "A=1\nLD_PRELOAD=/tmp/x.so\n").unwrap();
        let changed = record(&f).unwrap();
        assert_ne!(changed.sha, was.sha);
        put_back(&f, &was).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "A=1\n");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        std::fs::remove_file(&f).unwrap();
        std::os::unix::fs::symlink(&victim, &f).unwrap();
        assert!(record(&f).is_none(), "a link is not read through");
        put_back(&f, &was).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "A=1\n");
    }
}
