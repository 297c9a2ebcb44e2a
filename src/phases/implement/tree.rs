//! A task's own worktree, for the tasks of a wave that run at once.
//!
//! Each is a `git worktree` of the checkout on its own branch (`spec-orchestrate-task/<id>`,
//! made at the work branch's HEAD), under the git directory
//! (`<git-common-dir>/spec-orchestrate/trees/<id>`): outside the working tree the other agents
//! see and outside every commit, beside the objects it shares (nothing is copied but the
//! checked-out files). The implementer and the reviewer of the task work there; it is lent to
//! the agents' identity like the checkout ([`crate::process::identity::lend_for`]), and git's
//! own files (`.git/config`, hooks, HEAD) are guarded by the rooms as in the checkout, since a
//! worktree reads the checkout's.
//!
//! A tree is removed with its branch when its task ends ([`TaskTree`]'s `Drop`). A run killed
//! mid-wave leaves its trees behind; the next run reaching implement removes them ([`sweep`]):
//! it holds the checkout lock, so no other process of this checkout can be using one.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::git::Git;
use crate::process::identity::{self, Loan};

/// The branches of task trees: `spec-orchestrate-task/<id>` (outside `github.branch_prefix`, so
/// never taken for a work branch, never pushed).
pub const BRANCH_PREFIX: &str = "spec-orchestrate-task/";

/// Where the trees live, under the git common directory.
const TREES: &str = "spec-orchestrate/trees";

/// One task's worktree; removed (with its branch) when dropped.
#[derive(Debug)]
pub struct TaskTree {
    /// The checkout the tree belongs to.
    main: Git,
    /// The tree.
    git: Git,
    /// Its branch, `refs/heads/…` left out.
    branch: String,
    /// The commit it was made at.
    base: String,
    /// The tree lent to the agents' identity while it lives.
    loan: Option<Loan>,
}

/// The directory of the trees of `main`'s repository.
pub fn root(main: &Git) -> Result<PathBuf> {
    Ok(main.common_dir()?.join(TREES))
}

impl TaskTree {
    /// Makes the tree of task `id` at `main`'s HEAD, on a fresh branch, links the checkout's
    /// `dependencies` (`app.dependencies`: `node_modules`, virtualenvs) into it as a round's
    /// tree does ([`crate::evidence::isolation::link_dependencies`]), and lends it.
    pub fn create(main: &Git, id: &str, dependencies: &[String]) -> Result<TaskTree> {
        let root = root(main)?;
        make_dirs(&root)?;
        let name: String = id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let path = root.join(&name);
        let branch = format!("{BRANCH_PREFIX}{name}");
        let base = main.head().map(String::from).unwrap_or_default();
        let at = path.to_string_lossy();
        // Checked out by as many workers as there are cores: on a large checkout, writing the
        // files is the tree's whole cost (benches/task_tree.rs).
        main.run(&[
            "-c",
            "checkout.workers=0",
            "worktree",
            "add",
            "--quiet",
            "--force",
            "-B",
            &branch,
            &at,
            &base,
        ])?;
        let git = Git::new(&path);
        // Ignored directories are in no commit: the implementer's build and tests need the
        // checkout's (linked, never copied; one the commit tracks is left as checked out).
        crate::evidence::isolation::link_dependencies(main.dir(), &path, dependencies)
            .map_err(|(at, e)| crate::error::Error::io(&at, e))?;
        let loan = Some(identity::lend_for(&path));
        Ok(TaskTree {
            main: main.clone(),
            git,
            branch,
            base,
            loan,
        })
    }

    /// The tree's git (its working tree is the task's workdir).
    pub fn git(&self) -> &Git {
        &self.git
    }

    /// Where the tree is.
    pub fn path(&self) -> &Path {
        self.git.dir()
    }

    /// The commit the tree was made at.
    pub fn base(&self) -> &str {
        &self.base
    }
}

impl Drop for TaskTree {
    fn drop(&mut self) {
        // Removed first and given back after: the tree's files go with it, so nothing is
        // handed back one by one (the loan gives back what is left, here nothing).
        remove(&self.main, self.git.dir(), Some(&self.branch));
        self.loan.take();
        crate::process::reach::take_back(self.git.dir());
    }
}

/// Removes the tree at `path` and its `branch` (when named; [`sweep`] deletes branches by
/// prefix): the files first, then git's record of the tree (`git worktree remove` takes many
/// times longer on a large tree, benches/task_tree.rs). Errors are skipped: the next [`sweep`]
/// tries again.
fn remove(main: &Git, path: &Path, branch: Option<&str>) {
    // `remove_dir_all` does not follow links an agent planted in the tree.
    let _ = std::fs::remove_dir_all(path);
    let _ = main.run(&["worktree", "prune"]);
    if let Some(branch) = branch {
        let _ = main.run(&["branch", "--quiet", "-D", branch]);
    }
}

/// Removes every task tree and task branch of `main`'s repository: those a run killed mid-wave
/// left behind. Called by implement before a wave, holding the checkout lock.
pub fn sweep(main: &Git) -> Result<()> {
    let root = root(main)?;
    let listing = main.run(&["worktree", "list", "--porcelain"])?;
    for path in listing
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(PathBuf::from)
        .filter(|p| p.starts_with(&root))
    {
        remove(main, &path, None);
    }
    if root.exists() {
        let _ = std::fs::remove_dir_all(&root);
    }
    let _ = main.run(&["worktree", "prune"]);
    let branches = main.run(&[
        "for-each-ref",
        "--format=%(refname:short)",
        &format!("refs/heads/{BRANCH_PREFIX}"),
    ])?;
    for b in branches.lines().filter(|b| !b.is_empty()) {
        let _ = main.run(&["branch", "--quiet", "-D", b]);
    }
    Ok(())
}

/// Creates `root` and the directories above it up to the git directory, searchable by the
/// agents' identity (a tree's files are no secret to the agents that write them).
fn make_dirs(root: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(root).map_err(|e| crate::error::Error::io(root, e))?;
    for dir in [root, root.parent().unwrap_or(root)] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| crate::error::Error::io(dir, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = crate::git::harden::base(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A checkout with an ignored `node_modules` (installed there, in no commit) and a tracked
    /// `vendor/` directory.
    fn checkout() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        for (path, text) in [
            (".gitignore", "node_modules\n"),
            ("vendor/lib.txt", "tracked\n"),
            ("node_modules/pkg/index.js", "installed\n"),
        ] {
            let file = repo.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        git(&repo, &["init", "--quiet"]);
        git(&repo, &["add", "--all"]);
        git(&repo, &["commit", "--quiet", "-m", "base"]);
        (tmp, repo)
    }

    #[test]
    fn a_task_tree_links_the_checkouts_dependency_directories_and_removes_only_the_links() {
        let (_tmp, repo) = checkout();
        let main = Git::new(&repo);
        let deps: Vec<String> = ["node_modules", ".venv", "vendor", "../outside"]
            .map(String::from)
            .to_vec();
        let tree = TaskTree::create(&main, "T001", &deps).unwrap();
        let link = tree.path().join("node_modules");
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            repo.join("node_modules")
        );
        assert_eq!(
            std::fs::read_to_string(link.join("pkg/index.js")).unwrap(),
            "installed\n"
        );
        // Absent in the checkout, tracked by the commit, or outside the tree: not linked.
        assert!(tree.path().join(".venv").symlink_metadata().is_err());
        let vendor = tree.path().join("vendor").symlink_metadata().unwrap();
        assert!(vendor.is_dir(), "the commit's own directory stays");
        // Ignored in the tree as in the checkout: nothing for a room or a commit to see.
        assert_eq!(git(tree.path(), &["status", "--porcelain"]), "");
        let path = tree.path().to_path_buf();
        drop(tree);
        assert!(!path.exists());
        assert_eq!(
            std::fs::read_to_string(repo.join("node_modules/pkg/index.js")).unwrap(),
            "installed\n",
            "removing the tree removes the link, never what it points to"
        );
    }
}
