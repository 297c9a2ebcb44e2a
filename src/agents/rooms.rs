//! Rooms: the part of the checkout each writing role may change.
//!
//! Agents run on text from an untrusted issue, so any of them may be prompt-injected. A writing
//! agent is given a room — the spec author its feature's spec directory, a task implementer the
//! working tree except `.specs/` and `.git/` — and after every call of it the orchestrator
//! measures what changed (content compared with a snapshot taken before the call, not the
//! agent's word): changes inside the room stand, changes outside it are undone (restored from
//! the snapshot or HEAD, new files removed) and reported as a `sandbox_violation`. Read-only
//! roles (reviewers, the e2e_runner, the judge…) have no room at all; their calls are guarded by
//! the review layer's call batch (`review::calls`, one layer up) with the same snapshot.
//!
//! Besides the working tree, the files through which git itself reads configuration or runs
//! programs (`.git/config`, `.git/config.worktree`, `.git/hooks/`, `.git/info/`) are in no
//! one's room, and a commit or reset the agent made itself is taken back (the branch returns to
//! where it was, the agent's changes stay in the working tree to be judged like any other), so
//! nothing reaches history except through the orchestrator's own task commits.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::git::{Git, Snapshot};
use crate::types::Role;
use crate::types::kinds::CallRole;

/// Where a role may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Room {
    /// One directory, repository-relative (the spec author: `.specs/<feature>`).
    Dir(String),
    /// The working tree except `.specs/` and `.git/` (task implementers).
    WorkTree,
    /// Nothing: every change is outside (read-only roles).
    Nothing,
}

impl Room {
    /// The room of `role` in the feature whose spec directory is `spec_rel`.
    pub fn of(role: CallRole, spec_rel: &str) -> Room {
        match role {
            CallRole::Role(Role::SpecAuthor) => Room::Dir(spec_rel.trim_end_matches('/').into()),
            CallRole::Role(Role::ImplUi | Role::ImplBackend | Role::ImplTest) => Room::WorkTree,
            _ => Room::Nothing,
        }
    }

    /// Whether the repository-relative `path` is inside the room.
    pub fn contains(&self, path: &str) -> bool {
        match self {
            Room::Dir(dir) => path
                .strip_prefix(dir.as_str())
                .is_some_and(|rest| rest.starts_with('/')),
            Room::WorkTree => !is_under(path, ".specs") && !is_under(path, ".git"),
            Room::Nothing => false,
        }
    }

    /// How the room reads in a report.
    pub fn describe(&self) -> String {
        match self {
            Room::Dir(dir) => format!("{dir}/"),
            Room::WorkTree => "the working tree except .specs/ and .git/".into(),
            Room::Nothing => "nothing".into(),
        }
    }

    /// Directories whose every file is snapshotted, git-ignored ones included: the spec
    /// directory, where the spec author writes and which an implementer must not touch.
    fn watched(&self, spec_rel: &str) -> Vec<String> {
        match self {
            Room::Dir(dir) => vec![dir.clone()],
            Room::WorkTree | Room::Nothing => vec![spec_rel.to_string()],
        }
    }
}

fn is_under(path: &str, dir: &str) -> bool {
    path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// What the checkout held before a writing call: the files git reports changed or untracked,
/// every file of the watched directories, git's own configuration and hooks, and HEAD.
#[derive(Debug)]
pub struct Before {
    room: Room,
    watched: Vec<String>,
    files: Snapshot,
    git_dirs: Vec<PathBuf>,
    control: Vec<(PathBuf, Option<Vec<u8>>)>,
    head: Option<crate::types::ids::Sha>,
    branch: Option<String>,
}

/// What a writing call changed, once the changes outside its room are undone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settled {
    /// Repository-relative paths changed inside the room (they stand).
    pub inside: Vec<String>,
    /// Paths changed outside the room (undone); `.git/…` for git's own files, and `.git/HEAD`
    /// when the agent committed or moved the branch.
    pub outside: Vec<String>,
}

/// Takes the snapshot a writing call in `room` is judged against.
pub fn before(git: &Git, room: Room, spec_rel: &str) -> Result<Before> {
    let watched = room.watched(spec_rel);
    let w: Vec<&str> = watched.iter().map(String::as_str).collect();
    let files = Snapshot::take(git, &w)?;
    let git_dirs = git_dirs(git)?;
    let control = control_files(&git_dirs)
        .into_iter()
        .map(|p| {
            let content = crate::fsx::read_entry(&p);
            (p, content)
        })
        .collect();
    Ok(Before {
        room,
        watched,
        files,
        git_dirs,
        control,
        head: git.head(),
        branch: symbolic_head(git),
    })
}

/// Judges what changed since `before`: changes outside the room are undone and listed in
/// [`Settled::outside`], the rest is listed in [`Settled::inside`].
pub fn settle(git: &Git, before: &Before) -> Result<Settled> {
    // Git's own files first, without running git: a config the agent broke would make every
    // git call below fail (closed), and one it armed must not meet them.
    let mut outside = restore_control(git.dir(), &before.git_dirs, &before.control)?;
    if (git.head() != before.head || symbolic_head(git) != before.branch)
        && let Some(head) = &before.head
    {
        // The agent committed, reset or switched branches by itself: HEAD goes back to the
        // branch and commit it was on, the files stay as the agent left them and are judged
        // below like every other change.
        if let Some(branch) = &before.branch {
            git.run(&["symbolic-ref", "HEAD", branch])?;
        }
        git.run(&["reset", "--quiet", head])?;
        outside.push(".git/HEAD".to_string());
    }
    let w: Vec<&str> = before.watched.iter().map(String::as_str).collect();
    let changed: Vec<String> = before
        .files
        .changes(git, &w)?
        .into_iter()
        .filter(|p| !crate::state::is_orchestrator_record(p))
        .collect();
    let (inside, out): (Vec<String>, Vec<String>) =
        changed.into_iter().partition(|p| before.room.contains(p));
    before.files.restore(git, &out)?;
    outside.extend(out);
    outside.sort();
    Ok(Settled { inside, outside })
}

/// The branch HEAD points at (`refs/heads/…`), `None` when detached.
fn symbolic_head(git: &Git) -> Option<String> {
    git.run(&["symbolic-ref", "--quiet", "HEAD"]).ok()
}

/// Puts git's configuration and hooks back as they were; returns what had changed.
fn restore_control(
    repo: &Path,
    git_dirs: &[PathBuf],
    control: &[(PathBuf, Option<Vec<u8>>)],
) -> Result<Vec<String>> {
    let mut changed = Vec::new();
    let now: BTreeSet<PathBuf> = control_files(git_dirs).into_iter().collect();
    for path in now.iter().filter(|p| control.iter().all(|(c, _)| c != *p)) {
        crate::fsx::remove_entry(path)?;
        changed.push(display(repo, path));
    }
    // Put back unfollowed: a link planted in place of `.git/config` is replaced, never written
    // through.
    for (path, content) in control {
        let now = crate::fsx::read_entry(path);
        if now == *content {
            continue;
        }
        match content {
            Some(bytes) => crate::fsx::restore_entry(path, bytes)?,
            None => crate::fsx::remove_entry(path)?,
        }
        changed.push(display(repo, path));
    }
    changed.sort();
    Ok(changed)
}

/// The worktree's git directory and the common one (the same directory outside linked
/// worktrees), absolute.
fn git_dirs(git: &Git) -> Result<Vec<PathBuf>> {
    let mut dirs = vec![PathBuf::from(
        git.run(&["rev-parse", "--absolute-git-dir"])?,
    )];
    dirs.push(git.common_dir()?);
    dirs.dedup();
    Ok(dirs)
}

/// The files git reads its configuration, attributes, excludes and hooks from: `config` and
/// `config.worktree`, and every entry but directories under `hooks/` and `info/`, in each of
/// `git_dirs`. Plain file-system reads: it must work while the config is broken.
fn control_files(git_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in git_dirs {
        for name in ["config", "config.worktree"] {
            let p = dir.join(name);
            if p.symlink_metadata().is_ok() {
                files.push(p);
            }
        }
        for sub in ["hooks", "info"] {
            // Not even the root is followed: `hooks` replaced by a link to a directory outside
            // is one entry (removed as a link), not a tree whose files are removed through it.
            for entry in walkdir::WalkDir::new(dir.join(sub))
                .follow_links(false)
                .follow_root_links(false)
                .into_iter()
                .flatten()
            {
                if !entry.file_type().is_dir() {
                    files.push(entry.into_path());
                }
            }
        }
    }
    files.sort();
    files.dedup();
    files
}

/// `.git/config` rather than an absolute path when the file is inside the working tree.
fn display(repo: &Path, path: &Path) -> String {
    let repo = repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
    path.strip_prefix(&repo)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rooms_of_roles() {
        let spec = ".specs/f";
        let author = Room::of(Role::SpecAuthor.into(), spec);
        assert!(author.contains(".specs/f/design.md"));
        assert!(!author.contains(".specs/f2/design.md"));
        assert!(!author.contains(".specs/f"));
        assert!(!author.contains("app.py"));
        let implementer = Room::of(Role::ImplBackend.into(), spec);
        assert!(implementer.contains("app.py") && implementer.contains("src/.specs.rs"));
        assert!(implementer.contains(".specsx/a"));
        assert!(!implementer.contains(".specs/f/design.md"));
        assert!(!implementer.contains(".git/config"));
        assert!(!implementer.contains(".specs"));
        let reviewer = Room::of(CallRole::TaskReviewer, spec);
        assert!(!reviewer.contains("app.py"));
        assert_eq!(Room::of(Role::E2eRunner.into(), spec), Room::Nothing);
    }

    #[test]
    fn a_linked_hooks_directory_is_one_entry_not_followed() {
        let git_dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), git_dir.path().join("hooks")).unwrap();
        let files = control_files(&[git_dir.path().to_path_buf()]);
        assert_eq!(files, vec![git_dir.path().join("hooks")]);
    }
}
