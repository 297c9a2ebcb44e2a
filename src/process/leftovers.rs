//! The agents' `HOME`/`TMPDIR` directories that processes no longer running left in the system
//! temp dir, found and removed by the next process that makes one.
//!
//! A process removes its own directory when its command ends ([`super::identity::restore`]), but
//! one killed by SIGKILL (a job the runner cancels, a chaos kill, a developer's `kill -9`), or a
//! library caller that never calls `restore`, leaves it behind: one per process, with whatever
//! an agent wrote into its `HOME`. So each directory's name says which process made it — its pid
//! and that process's start time, which a later process reusing the pid does not share — and a
//! new one is made only after removing those of processes that are gone. Only directories this
//! user owns are touched (an agent may create look-alikes in a world-writable temp dir), a link
//! is never followed, and a name that does not parse (an older build's) is left alone.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The prefix of every identity directory.
const PREFIX: &str = "spec-orchestrate-agent-";

/// The prefix of every acceptance round's scratch directory (`evidence::isolation`).
pub const ROUND_PREFIX: &str = "spec-orchestrate-round-";

/// The prefix of the scratch directory of a read-only call that runs beside others, each in its
/// own tree (`review::calls`).
pub const CALL_PREFIX: &str = "spec-orchestrate-call-";

/// The name of a new identity directory of this process for `uid`, ending in `random`.
pub(super) fn name(uid: u32, random: &str) -> String {
    name_with(PREFIX, uid, random)
}

/// The name of a new directory of this process, `<prefix><uid>-<pid>-<start>-<random>`: a later
/// process removes it with [`sweep_with`] once this one is gone.
pub fn name_with(prefix: &str, uid: u32, random: &str) -> String {
    let pid = std::process::id();
    let start = start_time(pid).unwrap_or_default();
    format!("{prefix}{uid}-{pid}-{start}-{random}")
}

/// Removes from `temp` the identity directories this user owns whose process is gone. Errors are
/// skipped: a directory that cannot be removed now is tried again by the next process.
pub(super) fn sweep(temp: &Path) {
    sweep_with(temp, PREFIX);
}

/// Removes from `temp` the directories named by [`name_with`] with `prefix` that this user owns
/// and whose process is gone.
pub fn sweep_with(temp: &Path, prefix: &str) {
    // Without `/proc` no process's start time can be told, and every directory would look gone.
    if start_time(std::process::id()).is_none() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    let me = rustix::process::geteuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(|n| maker(n, prefix)) else {
            continue;
        };
        let path = entry.path();
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && start_time(pid) != Some(start) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// A scratch directory of this process in the system temp dir, named by [`name_with`] so that
/// a later process removes it with [`sweep_with`] once this one is gone (killed by SIGKILL, or
/// ended while the directory was still being removed). Dropped, it is removed in the background:
/// removing a large tree takes as long as writing it, and the caller's work goes on meanwhile.
#[derive(Debug)]
pub struct ScratchDir {
    /// The directory; empty once it has been removed.
    path: std::path::PathBuf,
}

impl ScratchDir {
    /// Makes a new, empty directory named `<prefix><uid>-<pid>-<start>-<random>` (mode 0755:
    /// the agents' identity may search it; what goes in it decides what it may read), after
    /// removing those of `prefix` whose process is gone.
    pub fn create(prefix: &str) -> std::io::Result<ScratchDir> {
        use std::os::unix::fs::PermissionsExt;
        let temp = std::env::temp_dir();
        sweep_with(&temp, prefix);
        let uid = rustix::process::geteuid().as_raw();
        let path = temp.join(name_with(prefix, uid, &random()?));
        std::fs::create_dir(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        Ok(ScratchDir { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the directory now, waiting until it is gone.
    pub fn remove(mut self) {
        let path = std::mem::take(&mut self.path);
        let _ = std::fs::remove_dir_all(path);
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let path = std::mem::take(&mut self.path);
        if path.as_os_str().is_empty() {
            return;
        }
        // `remove_dir_all` does not follow links (a dependency directory linked into a tree,
        // or one an agent planted). A thread that cannot be started leaves the removal here.
        let removal = std::thread::Builder::new()
            .name("scratch-removal".into())
            .spawn({
                let path = path.clone();
                move || {
                    let _ = std::fs::remove_dir_all(&path);
                }
            });
        if removal.is_err() {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// The pid and start time a directory's name records: `<prefix><uid>-<pid>-<start>-<random>`.
fn maker(name: &str, prefix: &str) -> Option<(u32, u64)> {
    let mut parts = name.strip_prefix(prefix)?.split('-');
    let (_uid, pid, start, random) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || random.is_empty() {
        return None;
    }
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// When process `pid` started (clock ticks since boot), or `None` when there is no such process.
fn start_time(pid: u32) -> Option<u64> {
    super::tree::stat(i32::try_from(pid).ok()?).map(|s| s.start_ticks)
}

/// Four random bytes in hex: enough that no one can make a directory's name beforehand, and
/// short, since the browser puts unix sockets under the identity's TMPDIR and a socket path
/// holds at most 108 bytes (eight bytes plus the pid and start time made Chromium fail to start
/// as root).
pub(super) fn random() -> std::io::Result<String> {
    let mut random = [0u8; 4];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut random)?;
    Ok(hex::encode(random))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_directories_of_processes_that_are_gone_are_removed() {
        let temp = tempfile::tempdir().expect("tempdir");
        let mine = temp.path().join(name(65532, "aa"));
        // A process that has ended (its pid reaped), and a live pid with another start time
        // (the pid reused by a later process).
        let mut ended = std::process::Command::new("/bin/true")
            .spawn()
            .expect("true starts");
        ended.wait().expect("true ends");
        let gone = temp
            .path()
            .join(format!("{PREFIX}65532-{}-1-bb", ended.id()));
        let reused = temp
            .path()
            .join(format!("{PREFIX}65532-{}-1-cc", std::process::id()));
        let older_build = temp.path().join(format!("{PREFIX}65532-0123abcd"));
        for dir in [&mine, &gone, &reused, &older_build] {
            std::fs::create_dir_all(dir.join("home")).expect("mkdir");
        }
        // A look-alike link to a directory elsewhere is never followed.
        let victim = tempfile::tempdir().expect("tempdir");
        std::fs::write(victim.path().join("keep"), "x").expect("write");
        let link = temp
            .path()
            .join(format!("{PREFIX}65532-{}-1-dd", ended.id()));
        std::os::unix::fs::symlink(victim.path(), &link).expect("symlink");

        sweep(temp.path());

        assert!(mine.exists(), "this process's own directory stays");
        assert!(!gone.exists(), "an ended process's directory is removed");
        assert!(
            !reused.exists(),
            "a reused pid's older directory is removed"
        );
        assert!(
            older_build.exists(),
            "a name that does not parse is left alone"
        );
        assert!(link.symlink_metadata().is_ok() && victim.path().join("keep").exists());
    }

    #[test]
    fn a_name_records_this_process_and_parses_back() {
        let n = name(7, "ff");
        let (pid, start) = maker(&n, PREFIX).expect("parses");
        assert_eq!(pid, std::process::id());
        assert_eq!(Some(start), start_time(pid));
        assert_eq!(maker("spec-orchestrate-agent-7-12-34", PREFIX), None);
        assert_eq!(maker("spec-orchestrate-agent-7-x-34-ff", PREFIX), None);
    }
}
