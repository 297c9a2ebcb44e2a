//! A read-only call's own tree, when calls of a batch run at once.
//!
//! No two agents work in the same checkout at the same time: each call of a concurrent batch
//! (the panel's personas, the two debaters of a round) that starts a program works in a tree of
//! its own, never in the checkout the others read. In a run, that is a clone of the checkout's
//! `HEAD` sharing its objects ([`Git::clone_detached`]), with what the batch's guard watches
//! laid out over it exactly as the checkout holds it ([`Snapshot::lay_out`]: the spec
//! documents, uncommitted at review time, and any other uncommitted change); in a stand-alone
//! `review`/`debate`, a directory holding a copy of the input. It lies in a scratch directory
//! of the system temp dir named after this process ([`ScratchDir`]), is lent to the agents'
//! identity when the checkout it stands for is (so the call has the rights it had there), is
//! guarded like the checkout (an edit is a `sandbox_violation`, attributed to that call alone),
//! and is removed when the call ends; one a killed process left is removed by the next tree or
//! the next command that drives a run ([`sweep`]).

use std::path::{Path, PathBuf};

use super::{Before, CallEnv, Guard};
use crate::git::Git;
use crate::process::identity::{self, Loan};
use crate::process::leftovers::{self, ScratchDir};
use crate::types::AGENT_LOG_DIR;

/// Removes the call trees that processes no longer running left behind.
pub fn sweep() {
    leftovers::sweep_with(&std::env::temp_dir(), leftovers::CALL_PREFIX);
}

/// One call's tree; removed (in the background) when dropped.
#[derive(Debug)]
pub(super) struct CallTree {
    /// The tree lent to the agents' identity, when the checkout is. Declared first, so given
    /// back before the directory goes.
    _loan: Option<Loan>,
    /// Where the call works: the tree's counterpart of the batch's workdir.
    workdir: PathBuf,
    /// What the call must leave as it found it, in its tree, and the tree before the call.
    guard: Guard,
    before: Before,
    _dir: ScratchDir,
}

impl CallTree {
    /// The tree of a call of `env`'s batch, laid out from `before` (what the batch's guard took
    /// of the checkout); `None` when the batch guards nothing (there is nothing to show).
    pub(super) fn make(env: &CallEnv, before: &Before) -> Result<Option<CallTree>, String> {
        if matches!(before, Before::None) {
            return Ok(None);
        }
        let dir = ScratchDir::create(leftovers::CALL_PREFIX)
            .map_err(|e| format!("no scratch directory in the system temp dir: {e}"))?;
        let root = dir.path().join("tree");
        let (workdir, guard, loan) = match (&env.guard, before) {
            (Guard::Git { git, watch }, Before::Git(snapshot)) => {
                let head = git
                    .head()
                    .ok_or_else(|| format!("{} has no commit", git.dir().display()))?;
                git.clone_detached(&root, head.as_str())
                    .map_err(|e| e.to_string())?;
                snapshot.lay_out(&root).map_err(|e| e.to_string())?;
                let rel = env.workdir.strip_prefix(git.dir()).unwrap_or(Path::new(""));
                let loan = identity::is_lent(git.dir()).then(|| identity::lend_disposable(&root));
                let guard = Guard::Git {
                    git: Git::new(&root),
                    watch: watch.clone(),
                };
                let workdir = if rel.as_os_str().is_empty() {
                    root
                } else {
                    root.join(rel)
                };
                (workdir, guard, loan)
            }
            (Guard::Files(_), Before::Files(files)) => (
                root.clone(),
                Guard::Files(copy(&root, &env.workdir, files)?),
                None,
            ),
            _ => return Ok(None),
        };
        let before = guard.take().map_err(|e| e.to_string())?;
        Ok(Some(CallTree {
            _loan: loan,
            workdir,
            guard,
            before,
            _dir: dir,
        }))
    }

    pub(super) fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// Moves the whole-output logs the call's agent wrote in its tree (`<spec_dir>/agent-log/`,
    /// for output too long to keep in memory) to the checkout's, where every other call's are:
    /// regular `.log` files only, never through a link.
    pub(super) fn keep_logs(&self, env: &CallEnv) {
        let from = self.workdir.join(&env.spec_dir).join(AGENT_LOG_DIR);
        let to = env.workdir.join(&env.spec_dir).join(AGENT_LOG_DIR);
        let Ok(entries) = std::fs::read_dir(&from) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let is_log = entry.file_type().is_ok_and(|t| t.is_file())
                && name.to_string_lossy().ends_with(".log");
            let ready = crate::fsx::read(&to.join(".gitignore")).is_ok_and(|b| b == b"*\n")
                || crate::fsx::create_dir_all(&to)
                    .and_then(|()| crate::fsx::write_atomic(&to.join(".gitignore"), b"*\n"))
                    .is_ok();
            if is_log && ready && crate::fsx::check_dir(&to).is_ok() {
                let target = to.join(&name);
                if std::fs::rename(entry.path(), &target).is_err() {
                    let _ = crate::fsx::remove_entry(&target);
                    let _ = std::fs::copy(entry.path(), &target);
                }
            }
        }
    }

    /// What the call changed in its tree (paths relative to the tree); a tree that can no
    /// longer be read counts as changed.
    pub(super) fn changes(&self) -> Vec<String> {
        self.guard
            .changes(&self.before)
            .unwrap_or_else(|e| vec![format!("its working tree ({e})")])
    }
}

/// Copies the files a stand-alone review guards (`files`, read before the batch) into `root` at
/// their places relative to `workdir`, readable by all; returns their paths there.
fn copy(
    root: &Path,
    workdir: &Path,
    files: &[(PathBuf, Option<Vec<u8>>)],
) -> Result<Vec<PathBuf>, String> {
    use std::os::unix::fs::PermissionsExt;
    crate::fsx::create_dir_all(root).map_err(|e| e.to_string())?;
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    let mut copied = Vec::new();
    for (path, content) in files {
        let rel = path
            .strip_prefix(workdir)
            .ok()
            .map(Path::to_path_buf)
            .or_else(|| path.file_name().map(PathBuf::from))
            .ok_or_else(|| format!("{} names no file", path.display()))?;
        let target = root.join(rel);
        if let Some(bytes) = content {
            crate::fsx::restore_entry(&target, bytes).map_err(|e| e.to_string())?;
            if std::fs::symlink_metadata(&target).is_ok_and(|m| m.is_file()) {
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644))
                    .map_err(|e| e.to_string())?;
            }
        }
        copied.push(target);
    }
    Ok(copied)
}
