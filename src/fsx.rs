//! Safe file access in directories an agent or a test command can write to.
//!
//! Agents and acceptance commands run with write access to the working tree, so anything the
//! orchestrator writes there may have been prepared by a hostile process: a symlink at the
//! target (or at a predictable temp name) pointing outside the repository, a FIFO that blocks
//! the writer or the reader forever, a device such as `/dev/zero` that never ends, or a parent
//! directory replaced by a link. Every write goes through this module, which:
//!
//! - looks at the target with `lstat` and refuses a symlink or anything that is not a regular
//!   file, with an error that names the path and what was found there;
//! - refuses a path whose directory passes through a symlink inside the workspace (a directory
//!   holding `.git`), so `evidence/` linked to `/etc` cannot redirect a save;
//! - writes a temp file with an unpredictable name created exclusively (`O_CREAT|O_EXCL`, which
//!   never follows a link), syncs it, then renames it over the target (a rename replaces a
//!   directory entry; it never writes through a link planted after the check);
//! - opens files for reading or appending with `O_NOFOLLOW|O_NONBLOCK` and checks the opened
//!   file is regular, so nothing blocks on a FIFO and nothing reads a device.
//!
//! Everything read back from those directories is read through [`read_max`] or
//! [`read_following_max`] with the [`Limit`] of its kind (or [`read_tail`] for an excerpt): the
//! size is checked on the opened file before a byte is read and the read stops one byte past the
//! cap, so a 1 GiB (or sparse, or still growing) file costs a refusal naming the file, the cap
//! and what to do, never memory or time in proportion to its size.
//!
//! Temp files carry the marker [`TEMP_MARKER`] so that a save killed half-way leaves a file
//! [`sweep_temp`] recognises and removes, and the commit path can keep out of commits.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// What every temp file of an atomic save has in its name: `.<name>.tmp-<random>`.
pub const TEMP_MARKER: &str = ".tmp-";

/// A temp file older than this is stale: no save takes that long, so its writer was killed.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Describes a file type for messages: "a symlink", "a FIFO", ….
pub fn kind_name(ft: fs::FileType) -> &'static str {
    if ft.is_symlink() {
        "a symlink"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_dir() {
        "a directory"
    } else {
        "a regular file"
    }
}

/// A file this module will not touch. Kind `Io` (a file could not be read or written), not
/// `Usage`: the entry was planted during the run, the command line was fine.
fn refusal(path: &Path, problem: String) -> Error {
    Error::io(path, std::io::Error::other(problem))
}

fn refused(path: &Path, found: &str, doing: &str) -> Error {
    refusal(
        path,
        format!(
            "is {found}; refusing to {doing} it (only regular files are written or read here, so a planted link or special file cannot redirect or block the run); remove it and retry"
        ),
    )
}

/// Refuses `path` when something other than a regular file (or nothing) is there.
fn check_target(path: &Path, doing: &str) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_file() => Ok(()),
        Ok(meta) => Err(refused(path, kind_name(meta.file_type()), doing)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Refuses a directory that passes through a symlink inside a workspace: the deepest symlinked
/// ancestor is allowed only when no directory above it holds `.git` (a link such as
/// `/tmp -> /private/tmp` above the checkout is the system's, not an agent's).
pub fn check_dir(dir: &Path) -> Result<()> {
    let abs = std::path::absolute(dir).map_err(|e| Error::io(dir, e))?;
    let deepest_link = abs.ancestors().find(|a| {
        fs::symlink_metadata(a)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false)
    });
    let Some(link) = deepest_link else {
        return Ok(());
    };
    let inside = link
        .ancestors()
        .skip(1)
        .any(|a| fs::symlink_metadata(a.join(".git")).is_ok());
    if inside {
        let to = fs::read_link(link)
            .map(|t| format!(" (to {})", t.display()))
            .unwrap_or_default();
        return Err(refusal(
            dir,
            format!(
                "passes through a symlink inside the workspace: {}{to}; refusing to write through it (it could lead outside the repository); remove the link and retry",
                link.display()
            ),
        ));
    }
    Ok(())
}

/// The directory of `path` (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Creates the directory of `path` (see [`create_dir_all`]).
fn create_parent(path: &Path) -> Result<()> {
    create_dir_all(parent(path))
}

/// Creates `dir` and its parents, refusing a path through a workspace symlink.
pub fn create_dir_all(dir: &Path) -> Result<()> {
    check_dir(dir)?;
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    // Re-checked after creation: a link planted while we created the tree is caught here.
    check_dir(dir)
}

/// Writes `bytes` to `path` so that a reader (or a crash) sees either the old file or the new
/// one, never a torn mix, and so that nothing planted at the path or at the temp name can
/// redirect the write (see the module documentation).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent(path);
    create_dir_all(dir)?;
    check_target(path, "overwrite")?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}{TEMP_MARKER}"))
        .rand_bytes(12)
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    tmp.write_all(bytes).map_err(|e| Error::io(tmp.path(), e))?;
    // Data must be on disk before the rename makes it visible; metadata (mtime) need not be.
    tmp.as_file()
        .sync_data()
        .map_err(|e| Error::io(tmp.path(), e))?;
    // The directory is not synced: a crash may leave the old file in place, which is still a
    // whole, consistent document; a killed process loses nothing (the page cache survives it).
    // On failure the temp file is removed when `tmp` drops.
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// Opens `path` without following a link (unless `follow`: a file a user names, see
/// [`read_following`]) and without blocking on a FIFO, then insists the opened file is regular
/// (the `fstat` check closes the race with the `lstat` one), so a FIFO or a link to `/dev/zero`
/// is refused at once instead of hanging or reading forever.
fn open_regular(path: &Path, opts: &mut OpenOptions, doing: &str, follow: bool) -> Result<File> {
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
    if !follow {
        check_target(path, doing)?;
        flags |= libc::O_NOFOLLOW;
    }
    let file = opts
        .custom_flags(flags)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) if !follow => refused(path, "a symlink", doing),
            Some(libc::ENXIO) => refused(path, "a FIFO", doing),
            _ => Error::io(path, e),
        })?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.file_type().is_file() {
        return Err(refused(path, kind_name(meta.file_type()), doing));
    }
    Ok(file)
}

/// Opens a regular file for reading; a symlink, FIFO, device or directory is refused at once.
pub fn open_read(path: &Path) -> Result<File> {
    open_regular(path, OpenOptions::new().read(true), "read", false)
}

/// Reads a whole regular file (see [`open_read`]).
pub fn read(path: &Path) -> Result<Vec<u8>> {
    read_all(open_read(path)?, path)
}

/// The rest of `file` (opened from `path`, which errors name).
fn read_all(mut file: File, path: &Path) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    file.read_to_end(&mut out).map_err(|e| Error::io(path, e))?;
    Ok(out)
}

/// A kind of file read back from a directory agents and test commands write to, with the most
/// of it the orchestrator reads. Each cap is far above what an honest writer produces (a spec
/// document is a few dozen KiB) and far below what would strain a runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `requirement.md`, `design.md`, `tasks.md`, `test.md` (and a spec handed to `review`):
    /// prose that is parsed, quoted into prompts and reviewed.
    SpecDoc,
    /// `test.steps.json`, the structured browser steps.
    Steps,
    /// A record the orchestrator wrote and reads back: an evaluate result, a review.
    Record,
    /// A file an acceptance check reads whole (`file_check`'s file).
    Evidence,
    /// A file compared before and after an agent call ([`read_entry`]).
    Snapshot,
    /// A prompt override, `.specs/prompts/<name>.md`: a template a few KiB long that any
    /// commit to the repository (or an accepted retrospective change) may write.
    Prompt,
    /// `pipeline-state.json`: compact JSON, about half a megabyte after 1,000 review rounds,
    /// that an agent working in the checkout could still overwrite.
    State,
    /// `pr-body.md`, written by the orchestrator in the feature directory and read back to be
    /// published: GitHub itself refuses a body over 64 KiB.
    PrBody,
    /// The retrospective ledger, one JSON line per run: a few hundred bytes a run.
    Ledger,
}

impl Limit {
    /// The cap, in bytes.
    pub const fn bytes(self) -> u64 {
        const MIB: u64 = 1024 * 1024;
        match self {
            Limit::SpecDoc | Limit::Steps => 4 * MIB,
            Limit::Record | Limit::Snapshot => 16 * MIB,
            Limit::Evidence => 64 * MIB,
            Limit::Prompt => MIB,
            Limit::State | Limit::Ledger => 64 * MIB,
            Limit::PrBody => MIB,
        }
    }

    /// What the file is, for messages.
    pub const fn what(self) -> &'static str {
        match self {
            Limit::SpecDoc => "a spec document",
            Limit::Steps => "a steps file",
            Limit::Record => "a result or review record",
            Limit::Evidence => "a file an acceptance check reads",
            Limit::Snapshot => "a file watched during an agent call",
            Limit::Prompt => "a prompt override",
            Limit::State => "a pipeline state",
            Limit::PrBody => "a pull-request body",
            Limit::Ledger => "a retrospective ledger",
        }
    }

    const fn help(self) -> &'static str {
        match self {
            Limit::SpecDoc => {
                "the agent that wrote it went astray: shorten it (or delete it and run the phase again with `spec-orchestrate resume`)"
            }
            Limit::Steps => {
                "delete it and run `spec-orchestrate resume`: the steps are converted again from test.md"
            }
            Limit::Record => {
                "it was not written this large by spec-orchestrate: restore it from the checkpoint or run the phase again"
            }
            Limit::Evidence => {
                "the check's file is not evidence a person can read; make the acceptance case check a smaller file"
            }
            Limit::Snapshot => {
                "an agent grew the file far beyond a spec document; remove it and run the phase again"
            }
            Limit::Prompt => {
                "a prompt template is a few KiB: shorten the override or delete it to use the built-in template"
            }
            Limit::State => {
                "spec-orchestrate never writes a state this large: restore it from the checkpoint or version control, or delete the feature directory to start over"
            }
            Limit::PrBody => {
                "spec-orchestrate never writes a body this large: delete pr-body.md and run the pr phase again"
            }
            Limit::Ledger => {
                "spec-orchestrate never writes a ledger this large: restore it from version control, or move it aside to start a new one"
            }
        }
    }

    fn refuse(self, path: &Path, size: u64) -> Error {
        Error::TooLarge {
            path: path.to_path_buf(),
            what: self.what(),
            size,
            cap: self.bytes(),
            help: self.help(),
        }
    }
}

/// Reads an opened regular file, at most `limit`'s bytes: its size is checked first (a sparse
/// 1 GiB file is refused without reading it), and a file that grows past the cap while it is
/// read is refused one byte past it.
fn read_capped(file: File, path: &Path, limit: Limit) -> Result<Vec<u8>> {
    let cap = limit.bytes();
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if size > cap {
        return Err(limit.refuse(path, size));
    }
    let mut out = Vec::with_capacity(size as usize);
    file.take(cap + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::io(path, e))?;
    if out.len() as u64 > cap {
        return Err(limit.refuse(path, out.len() as u64));
    }
    Ok(out)
}

/// Reads a regular file (see [`open_read`]: no link followed, no FIFO waited on) of at most
/// `limit`'s size; a larger one is [`Error::TooLarge`].
pub fn read_max(path: &Path, limit: Limit) -> Result<Vec<u8>> {
    read_capped(open_read(path)?, path, limit)
}

/// The last `max` bytes of a regular file (see [`open_read`]), and whether anything before them
/// was left out: an excerpt costs `max` bytes whatever the file's size.
pub fn read_tail(path: &Path, max: u64) -> Result<(Vec<u8>, bool)> {
    use std::io::{Seek, SeekFrom};
    let mut file = open_read(path)?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let start = size.saturating_sub(max);
    file.seek(SeekFrom::Start(start))
        .map_err(|e| Error::io(path, e))?;
    let mut out = Vec::new();
    file.take(max)
        .read_to_end(&mut out)
        .map_err(|e| Error::io(path, e))?;
    Ok((out, start > 0))
}

/// Opens a file a user may name through a link, but only when it is a regular file in the end.
fn open_following(path: &Path) -> Result<File> {
    open_regular(path, OpenOptions::new().read(true), "read", true)
}

/// Reads a whole file a user may name through a link (`--issue`, a config), but only when it is a
/// regular file in the end (see [`open_following`]).
pub fn read_following(path: &Path) -> Result<Vec<u8>> {
    read_all(open_following(path)?, path)
}

/// [`read_following`] of a file of at most `limit`'s size; a larger one is
/// [`Error::TooLarge`].
pub fn read_following_max(path: &Path, limit: Limit) -> Result<Vec<u8>> {
    read_capped(open_following(path)?, path, limit)
}

/// Opens a regular file for appending, creating it (and its directory) if needed.
pub fn open_append(path: &Path) -> Result<File> {
    create_parent(path)?;
    let mut opts = OpenOptions::new();
    open_regular(path, opts.append(true).create(true), "append to", false)
}

/// Creates (or truncates) a regular file for writing, e.g. a log a child process writes into.
pub fn create(path: &Path) -> Result<File> {
    create_parent(path)?;
    let file = open_regular(
        path,
        OpenOptions::new().write(true).create(true),
        "write",
        false,
    )?;
    // Truncated only once it is known to be a regular file of ours to write.
    file.set_len(0).map_err(|e| Error::io(path, e))?;
    Ok(file)
}

/// A lock file opened for [`try_lock`]: its lock taken, or held by another open of it.
pub enum Lock {
    /// The exclusive lock is ours (released when the file closes or is unlocked).
    Taken(File),
    /// Another process (or another open of the file in this one) holds it; the file is open
    /// for reading what the holder wrote.
    Held(File),
}

/// Opens the lock file `path` (created if missing, never truncated) for reading and writing
/// and tries its exclusive lock without waiting.
pub fn try_lock(path: &Path) -> Result<Lock> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(Lock::Taken(file)),
        Err(fs::TryLockError::WouldBlock) => Ok(Lock::Held(file)),
        Err(fs::TryLockError::Error(e)) => Err(Error::io(path, e)),
    }
}

/// Removes whatever is at `path` (file, link, special file or directory tree) without following
/// links, so that a directory the orchestrator is about to fill starts empty and its own.
pub fn remove_entry(path: &Path) -> Result<()> {
    // `lstat` follows every component but the last: a parent replaced by a link must not lead
    // the removal outside the workspace.
    check_dir(parent(path))?;
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
        // `remove_dir_all` does not follow links inside the tree.
        Ok(m) if m.file_type().is_dir() => fs::remove_dir_all(path).map_err(|e| Error::io(path, e)),
        Ok(_) => fs::remove_file(path).map_err(|e| Error::io(path, e)),
    }
}

/// Creates `dir` fresh: whatever was there (planted links and special files included) is removed
/// first without following links, then the directory is created.
pub fn fresh_dir(dir: &Path) -> Result<()> {
    create_parent(dir)?;
    remove_entry(dir)?;
    create_dir_all(dir)
}

/// Marks a symlink in an entry's recorded content ([`read_entry`]): never the start of real text.
const LINK_MARKER: &[u8] = b"\0spec-orchestrate:symlink\0";
/// Marks a special file (FIFO, device, socket, directory) in an entry's recorded content.
const SPECIAL_MARKER: &[u8] = b"\0spec-orchestrate:special\0";
/// Marks a regular file larger than [`Limit::Snapshot`]: recorded by size and modification time
/// (so growing or touching it still shows as a change), never read.
const OVERSIZE_MARKER: &[u8] = b"\0spec-orchestrate:oversize\0";

fn oversize_mark(meta: &fs::Metadata, size: u64) -> Vec<u8> {
    use std::os::unix::fs::MetadataExt;
    let mut out = OVERSIZE_MARKER.to_vec();
    out.extend_from_slice(format!("{size}:{}.{}", meta.mtime(), meta.mtime_nsec()).as_bytes());
    out
}

/// What is at `path` now, for "did anything change" snapshots: a regular file's bytes (or, past
/// [`Limit::Snapshot`], its size and modification time), a
/// symlink's target, or the kind of a special file; `None` when nothing is there. Never follows
/// a link and never opens a FIFO or device, so a planted one neither hangs nor fools the check.
pub fn read_entry(path: &Path) -> Option<Vec<u8>> {
    let meta = fs::symlink_metadata(path).ok()?;
    let ft = meta.file_type();
    if ft.is_file() {
        return match read_max(path, Limit::Snapshot) {
            Err(Error::TooLarge { size, .. }) => Some(oversize_mark(&meta, size)),
            other => other.ok(),
        };
    }
    Some(if ft.is_symlink() {
        use std::os::unix::ffi::OsStrExt;
        [
            LINK_MARKER,
            fs::read_link(path).ok()?.as_os_str().as_bytes(),
        ]
        .concat()
    } else {
        [SPECIAL_MARKER, kind_name(ft).as_bytes()].concat()
    })
}

/// Puts back an entry recorded by [`read_entry`]: whatever is there now is removed unfollowed,
/// then the file (or link) is recreated; a recorded special file is only removed, and a file
/// recorded as too large to read is left as it is.
pub fn restore_entry(path: &Path, recorded: &[u8]) -> Result<()> {
    if recorded.starts_with(OVERSIZE_MARKER) {
        // Its content was never read, so it cannot be put back; what is there stays, and every
        // later read of it is refused at its size.
        return Ok(());
    }
    create_parent(path)?;
    remove_entry(path)?;
    if let Some(target) = recorded.strip_prefix(LINK_MARKER) {
        use std::os::unix::ffi::OsStrExt;
        let target = Path::new(std::ffi::OsStr::from_bytes(target));
        return std::os::unix::fs::symlink(target, path).map_err(|e| Error::io(path, e));
    }
    if recorded.starts_with(SPECIAL_MARKER) {
        return Ok(());
    }
    write_atomic(path, recorded)
}

/// Whether a file name is one of our atomic-save temp files (`.<name>.tmp-<suffix>`).
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(TEMP_MARKER)
}

/// Removes our stale temp files under `root` (a save killed half-way leaves one behind); returns
/// the removed paths. Only regular files or links named like ours and older than a minute go, so
/// a save in progress in another process is left alone. Links are removed, never followed.
pub fn sweep_temp(root: &Path) -> Vec<PathBuf> {
    let now = std::time::SystemTime::now();
    let mut removed = Vec::new();
    let walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git");
    for entry in walk.flatten() {
        let ft = entry.file_type();
        if ft.is_dir() || !is_temp_name(&entry.file_name().to_string_lossy()) {
            continue;
        }
        let old = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if old && fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.into_path());
        }
    }
    removed
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A fresh temporary directory and the path `name` inside it (not created): the start of
    /// most file tests. The directory lives as long as the returned guard.
    pub(crate) fn temp_path(name: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        (dir, path)
    }

    /// [`temp_path`] with `contents` written at the path.
    pub(crate) fn temp_file(name: &str, contents: &str) -> (tempfile::TempDir, PathBuf) {
        let (dir, path) = temp_path(name);
        fs::write(&path, contents).unwrap();
        (dir, path)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn atomic_write_replaces_whole_file_and_leaves_no_temp() {
        let (dir, p) = temp_path("a.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "second");
        assert_eq!(names(dir.path()), vec!["a.json".to_string()]);
    }

    #[test]
    fn refuses_symlink_fifo_and_linked_parent() {
        let dir = tempfile::tempdir().unwrap();
        let (outside, victim) = temp_file("victim", "keep");
        fs::create_dir(dir.path().join(".git")).unwrap();
        symlink(&victim, dir.path().join("link")).unwrap();
        let e = write_atomic(&dir.path().join("link"), b"x").unwrap_err();
        assert!(e.to_string().contains("is a symlink"), "{e}");
        assert_eq!(
            e.kind(),
            crate::error::ErrorKind::Io,
            "a planted entry is no usage error"
        );
        let fifo = dir.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert!(
            write_atomic(&fifo, b"x")
                .unwrap_err()
                .to_string()
                .contains("a FIFO")
        );
        assert!(read(&fifo).unwrap_err().to_string().contains("a FIFO"));
        assert!(create(&fifo).is_err());
        assert!(open_append(&dir.path().join("link")).is_err());
        symlink(outside.path(), dir.path().join("out")).unwrap();
        let e = write_atomic(&dir.path().join("out/victim"), b"x").unwrap_err();
        assert!(e.to_string().contains("passes through a symlink"), "{e}");
        assert!(remove_entry(&dir.path().join("out/victim")).is_err());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn bounded_reads_refuse_a_sparse_gigabyte_at_its_size_and_tails_stay_small() {
        let (dir, big) = temp_path("spec.md");
        File::create(&big).unwrap().set_len(1 << 30).unwrap();
        let started = std::time::Instant::now();
        let e = read_max(&big, Limit::SpecDoc).unwrap_err();
        assert!(
            matches!(e, Error::TooLarge { size, cap, .. } if size == 1 << 30 && cap == Limit::SpecDoc.bytes()),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(
            text.contains("spec.md: is 1024 MiB, more than the 4 MiB a spec document may have;"),
            "{text}"
        );
        assert!(read_following_max(&big, Limit::SpecDoc).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        let (tail, cut) = read_tail(&big, 100).unwrap();
        assert_eq!((tail.len(), cut), (100, true));
        let small = dir.path().join("ok.md");
        fs::write(&small, "fine").unwrap();
        assert_eq!(read_max(&small, Limit::SpecDoc).unwrap(), b"fine");
        assert_eq!(read_tail(&small, 100).unwrap(), (b"fine".to_vec(), false));
        // A snapshot of the big file records its size, not its content, and is left in place.
        let mark = read_entry(&big).unwrap();
        assert!(mark.starts_with(OVERSIZE_MARKER) && mark.len() < 100);
        restore_entry(&big, &mark).unwrap();
        assert_eq!(fs::metadata(&big).unwrap().len(), 1 << 30);
    }

    #[test]
    fn fresh_dir_removes_planted_links_without_following_them() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("f"), "keep").unwrap();
        let round = dir.path().join("evidence/1");
        fs::create_dir_all(&round).unwrap();
        symlink(outside.path().join("f"), round.join("f")).unwrap();
        fresh_dir(&round).unwrap();
        assert!(names(&round).is_empty());
        assert_eq!(
            fs::read_to_string(outside.path().join("f")).unwrap(),
            "keep"
        );
    }

    #[test]
    fn sweep_removes_only_stale_temp_files() {
        let (dir, stale) = temp_path(".tasks.md.tmp-123");
        let fresh = dir.path().join(".state.json.tmp-abc");
        fs::write(&stale, "x").unwrap();
        fs::write(&fresh, "x").unwrap();
        fs::write(dir.path().join("keep.md"), "x").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert_eq!(sweep_temp(dir.path()), vec![stale]);
        assert_eq!(
            names(dir.path()),
            vec![".state.json.tmp-abc".to_string(), "keep.md".to_string()]
        );
    }
}
