//! One writer per checkout.
//!
//! Two runs for different features in one checkout share one work tree, one index and one HEAD:
//! each undoes the other's files and commits the other's state. So every command that changes
//! the tree or a branch takes `<git-common-dir>/spec-orchestrate.lock` (an OS file lock the
//! kernel releases when the holder dies, so a killed run never leaves a stale lock), writes the
//! feature it works on into it for the refusal message, and before each commit checks that it
//! still holds it: the file at that path must be the very file it locked. A deleted or replaced
//! lock file means another process may now believe it is the writer, so the holder stops.
//!
//! Within one process the lock is shared: opening a second [`CheckoutLock`] for the same
//! checkout returns the same lock (an OS lock would refuse the process itself).

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use crate::error::{Error, Result};
use crate::fsx::Lock;
use crate::util::locked;

/// File name of the lock, in the git common directory.
pub const LOCK_NAME: &str = "spec-orchestrate.lock";

#[derive(Debug)]
struct Held {
    path: PathBuf,
    file: File,
    feature: String,
}

/// A held checkout lock; released when the last clone in this process is dropped.
#[derive(Debug, Clone)]
pub struct CheckoutLock(Arc<Held>);

/// Locks held by this process, by lock path.
static HELD: Mutex<Option<HashMap<PathBuf, Weak<Held>>>> = Mutex::new(None);

impl CheckoutLock {
    /// Takes the lock of the checkout whose git common directory is `common_dir`, for
    /// `feature`; refused, naming the holder's feature, when another process holds it.
    pub fn acquire(common_dir: &Path, feature: &str) -> Result<CheckoutLock> {
        let path = common_dir.join(LOCK_NAME);
        let mut reg = locked(&HELD);
        let map = reg.get_or_insert_with(HashMap::new);
        if let Some(held) = map.get(&path).and_then(Weak::upgrade) {
            return Ok(CheckoutLock(held));
        }
        let mut file = match crate::fsx::try_lock(&path)? {
            Lock::Taken(file) => file,
            Lock::Held(mut file) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let holder = if holder.is_empty() {
                    "another feature"
                } else {
                    holder
                };
                return Err(Error::State {
                    path,
                    problem: format!(
                        "this checkout is in use: another spec-orchestrate process is working on `{holder}` here (one writer per checkout: they would undo each other's files and commits)"
                    ),
                    help: format!(
                        "wait for the run of `{holder}` to finish or stop it, or run `{feature}` in another clone or `git worktree`; the lock is released when that process exits"
                    ),
                });
            }
        };
        let write = |file: &mut File| -> std::io::Result<()> {
            file.set_len(0)?;
            file.rewind()?;
            file.write_all(format!("{feature}\n").as_bytes())
        };
        write(&mut file).map_err(|e| Error::io(&path, e))?;
        let held = Arc::new(Held {
            path: path.clone(),
            file,
            feature: feature.to_string(),
        });
        map.insert(path, Arc::downgrade(&held));
        Ok(CheckoutLock(held))
    }

    /// The feature written in the lock file of `common_dir`, if any.
    pub fn holder(common_dir: &Path) -> Option<String> {
        let text = std::fs::read_to_string(common_dir.join(LOCK_NAME)).ok()?;
        let name = text.trim();
        (!name.is_empty()).then(|| name.to_string())
    }

    /// Fails when the lock file at the path is no longer the file this process locked
    /// (deleted, or replaced by a new one someone else may hold).
    pub fn verify(&self) -> Result<()> {
        let held = &self.0;
        let ours = held.file.metadata().map_err(|e| Error::io(&held.path, e))?;
        let same = std::fs::symlink_metadata(&held.path)
            .is_ok_and(|now| now.dev() == ours.dev() && now.ino() == ours.ino());
        if same {
            return Ok(());
        }
        Err(Error::State {
            path: held.path.clone(),
            problem: format!(
                "the checkout lock of the run of `{}` was deleted or replaced while it ran; another process may be writing to this checkout, so nothing more is committed",
                held.feature
            ),
            help: "make sure no other spec-orchestrate process works in this checkout, then `spec-orchestrate resume`; the unfinished step is redone".into(),
        })
    }

    /// Verifies every lock this process holds on the checkout of `common_dir` (none held: ok).
    pub fn verify_for(common_dir: &Path) -> Result<()> {
        let path = common_dir.join(LOCK_NAME);
        let held = locked(&HELD)
            .as_ref()
            .and_then(|m| m.get(&path))
            .and_then(Weak::upgrade);
        match held {
            Some(h) => CheckoutLock(h).verify(),
            None => Ok(()),
        }
    }
}

/// Released by `unlock`, not by closing the file: a child forked by another thread shares the
/// open file until its `exec`, and would hold the lock that long (the same reason as the state
/// lock's, `state::store`).
impl Drop for Held {
    fn drop(&mut self) {
        let _ = self.file.unlock();
        let mut reg = locked(&HELD);
        if let Some(map) = reg.as_mut()
            && map.get(&self.path).is_some_and(|w| w.strong_count() == 0)
        {
            map.remove(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_in_process_and_lost_when_the_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let a = CheckoutLock::acquire(dir.path(), "one").unwrap();
        let b = CheckoutLock::acquire(dir.path(), "two").unwrap();
        a.verify().unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(LOCK_NAME)).unwrap(),
            "one\n"
        );
        std::fs::remove_file(dir.path().join(LOCK_NAME)).unwrap();
        let e = b.verify().unwrap_err().to_string();
        assert!(e.contains("deleted or replaced"), "{e}");
        assert!(CheckoutLock::verify_for(dir.path()).is_err());
        drop((a, b));
        assert!(CheckoutLock::verify_for(dir.path()).is_ok());
    }
}
