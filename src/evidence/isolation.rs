//! Where a round's cases run: a disposable tree of the commit under test, outside the agents'
//! checkout.
//!
//! Every round of acceptance cases ([`super::runners::run_all`]) makes a [`RoundTree`]: a clone
//! of the checkout's `HEAD` that shares its objects (`git clone --shared`, so nothing is
//! copied but the files of the commit, and nothing is registered in the checkout's `.git`),
//! detached at that commit, in a scratch directory of the system temp dir. The app, the command
//! cases and the file checks run there; what they write never reaches the work branch, the
//! agents' checkout, the next round or the pull request. The evidence still goes to the
//! checkout's `evidence/<round>/`.
//!
//! Ignored dependency directories (`node_modules`, a virtualenv: `app.dependencies`) are linked
//! from the checkout into the tree, so nothing is installed again per round, and no reset ever
//! removes them. Beside the tree lie the fresh, empty directories `app.env` names as
//! `{round_dir}` and `{case_dir}`.
//!
//! With `app.isolation: case` every case starts from the committed state ([`RoundTree::reset`]:
//! tracked files as committed, every other file removed but the linked dependencies). The
//! scratch directory's name records the process that made it: it is removed when the round ends
//! (in the background: a large tree takes as long to remove as to write), and one a process left
//! (killed, or ended during the removal) is removed by the next one that makes a tree or drives
//! a run ([`sweep`]).

use std::path::{Path, PathBuf};

use crate::git::Git;
use crate::process::identity::{self, Loan};
use crate::process::leftovers::{self, ScratchDir};

/// Why a round's tree could not be made or reset.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// The checkout has no commit to test.
    #[error(
        "the checkout at {checkout} has no commit to test: the acceptance cases run in a tree of the commit under test; commit the work first"
    )]
    NoCommit {
        /// The checkout.
        checkout: PathBuf,
    },
    /// A file system step failed.
    #[error("the round's tree could not be prepared at {path}: {source}")]
    Io {
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A git step failed.
    #[error("the round's tree could not be prepared: {0}")]
    Git(String),
}

/// A round's disposable tree and its scratch directories; removed when dropped (in the
/// background: [`ScratchDir`]).
#[derive(Debug)]
pub struct RoundTree {
    /// The tree and the data directories, lent to the agents' identity while the round runs.
    /// Declared first, so dropped first: their way in is taken back while the tree still exists.
    loans: Vec<Loan>,
    /// The tree of the commit under test.
    tree: PathBuf,
    /// `{round_dir}`.
    round_data: PathBuf,
    /// The dependency directories linked into the tree (relative paths).
    linked: Vec<String>,
    /// The scratch directory holding the tree and the data directories.
    base: ScratchDir,
}

/// Removes the round trees that processes no longer running left behind (a round killed by
/// SIGKILL). Every command that drives a run calls it, and so does every new tree.
pub fn sweep() {
    leftovers::sweep_with(&std::env::temp_dir(), leftovers::ROUND_PREFIX);
}

impl RoundTree {
    /// Makes the tree of `checkout`'s `HEAD`, links the dependency directories `dependencies`
    /// (relative paths; those the checkout does not have as a directory, or the commit tracks,
    /// are skipped) and the empty `{round_dir}`.
    pub fn create(checkout: &Path, dependencies: &[String]) -> Result<RoundTree, TreeError> {
        let source = Git::new(checkout);
        let head = source.head().ok_or_else(|| TreeError::NoCommit {
            checkout: checkout.to_path_buf(),
        })?;
        let base = ScratchDir::create(leftovers::ROUND_PREFIX)
            .map_err(|e| io(&std::env::temp_dir(), e))?;
        let mut made = RoundTree {
            loans: Vec::new(),
            tree: base.path().join("tree"),
            round_data: base.path().join("data/round"),
            linked: Vec::new(),
            base,
        };
        source
            .clone_detached(&made.tree, head.as_str())
            .map_err(|e| TreeError::Git(e.to_string()))?;
        made.link(checkout, dependencies)?;
        for dir in [&made.round_data, &made.base.path().join("data/cases")] {
            std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        }
        hand_over(&made.round_data)?;
        made.loans.push(identity::lend_disposable(&made.tree));
        Ok(made)
    }

    /// The tree's root: where the app, the command cases and the file checks run.
    pub fn path(&self) -> &Path {
        &self.tree
    }

    /// `{round_dir}`: one empty directory for the round.
    pub fn round_dir(&self) -> &Path {
        &self.round_data
    }

    /// `{case_dir}` of case `id`: a directory made empty now.
    pub fn case_dir(&self, id: &str) -> Result<PathBuf, TreeError> {
        let dir = self
            .base
            .path()
            .join("data/cases")
            .join(crate::util::file_safe(id));
        crate::fsx::fresh_dir(&dir).map_err(|e| TreeError::Git(e.to_string()))?;
        hand_over(&dir)?;
        Ok(dir)
    }

    /// The dependency directories linked into the tree.
    pub fn linked(&self) -> &[String] {
        &self.linked
    }

    /// Puts the tree back to the commit: tracked files as committed, every other file (ignored
    /// ones too) removed, except the linked dependency directories.
    pub fn reset(&self) -> Result<(), TreeError> {
        let git = Git::new(&self.tree);
        // Handing the tree to the agents' identity changed every file's owner and ctime, which
        // the index records: without a refresh, `reset --hard` takes every file for modified and
        // writes all of them again, as root, so the next hand-over changes them all once more
        // (on 100,000 files, 100 s per case). The refresh reads each file whose stat changed and
        // keeps what is unchanged in content; only what a case really changed is written back.
        git.run(&["update-index", "-q", "--refresh"])
            .map_err(|e| TreeError::Git(e.to_string()))?;
        git.run(&["reset", "--hard", "--quiet", "HEAD"])
            .map_err(|e| TreeError::Git(e.to_string()))?;
        let excludes: Vec<String> = self.linked.iter().map(|d| format!("/{d}")).collect();
        let mut clean: Vec<&str> = vec!["clean", "-ffdxq"];
        for e in &excludes {
            clean.extend(["-e", e.as_str()]);
        }
        git.run(&clean).map_err(|e| TreeError::Git(e.to_string()))?;
        Ok(())
    }

    /// Links the dependency directories into the tree ([`link_dependencies`]).
    fn link(&mut self, checkout: &Path, dependencies: &[String]) -> Result<(), TreeError> {
        self.linked = link_dependencies(checkout, &self.tree, dependencies)
            .map_err(|(path, e)| io(&path, e))?;
        Ok(())
    }

    /// Removes the tree and its scratch directories now, waiting until they are gone (a drop
    /// removes them in the background).
    pub fn remove(self) {
        let RoundTree { loans, base, .. } = self;
        drop(loans);
        base.remove();
    }
}

/// Links each dependency directory of `dependencies` (repository-relative paths, no `..`) that
/// `checkout` has as a real directory (not a link) into `tree` at the same path, unless the
/// tree has something there already (the commit tracks it): a symbolic link, so nothing is
/// copied or installed again. Returns the paths linked. Shared by a round's tree and a task's
/// tree (`phases::implement::tree`), so both see the checkout's `node_modules` and virtualenvs
/// alike. An error names the path it failed on.
pub fn link_dependencies(
    checkout: &Path,
    tree: &Path,
    dependencies: &[String],
) -> Result<Vec<String>, (PathBuf, std::io::Error)> {
    let mut linked = Vec::new();
    for dep in dependencies {
        let rel = Path::new(dep);
        let inside = rel.is_relative()
            && rel
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        let source = checkout.join(rel);
        let is_dir = std::fs::symlink_metadata(&source).is_ok_and(|m| m.is_dir());
        let target = tree.join(rel);
        if !inside || !is_dir || std::fs::symlink_metadata(&target).is_ok() {
            continue;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| (parent.to_path_buf(), e))?;
        }
        std::os::unix::fs::symlink(&source, &target).map_err(|e| (target.clone(), e))?;
        linked.push(dep.trim_end_matches('/').to_string());
    }
    Ok(linked)
}

/// Gives a scratch directory to the agents' identity when there is one (the app and the
/// commands write there as that uid); it is no checkout, so nothing is lent or given back.
fn hand_over(dir: &Path) -> Result<(), TreeError> {
    if let identity::Separation::Separate(id) = identity::current() {
        std::os::unix::fs::lchown(dir, Some(id.uid), Some(id.gid)).map_err(|e| io(dir, e))?;
    }
    Ok(())
}

fn io(path: &Path, source: std::io::Error) -> TreeError {
    TreeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = crate::git::harden::base(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    /// The tree holds the commit, not the checkout's uncommitted files; a reset undoes what a
    /// case wrote (tracked and ignored alike) but keeps the linked dependencies; the tree is
    /// gone when dropped, and the checkout's `.git` knows nothing of it.
    #[test]
    fn a_tree_holds_the_commit_resets_to_it_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("node_modules/lib")).unwrap();
        git(&repo, &["init", "-q"]);
        std::fs::write(repo.join(".gitignore"), "node_modules/\ndb.json\n").unwrap();
        std::fs::write(repo.join("data.txt"), "committed\n").unwrap();
        std::fs::write(repo.join("node_modules/lib/index.js"), "x").unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", "one"]);
        std::fs::write(repo.join("data.txt"), "uncommitted\n").unwrap();
        let before = std::fs::read_dir(repo.join(".git")).unwrap().count();

        let tree = RoundTree::create(&repo, &["node_modules".into(), ".venv".into()]).unwrap();
        let root = tree.path().to_path_buf();
        assert!(!root.starts_with(&repo));
        assert_eq!(
            std::fs::read_to_string(root.join("data.txt")).unwrap(),
            "committed\n"
        );
        assert_eq!(tree.linked(), ["node_modules"]);
        assert!(root.join("node_modules/lib/index.js").is_file());
        std::fs::write(root.join("data.txt"), "written by a case\n").unwrap();
        std::fs::write(root.join("db.json"), "{}").unwrap();
        std::fs::write(root.join("new.txt"), "new").unwrap();
        tree.reset().unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("data.txt")).unwrap(),
            "committed\n"
        );
        assert!(!root.join("db.json").exists() && !root.join("new.txt").exists());
        assert!(root.join("node_modules/lib/index.js").is_file());
        let case = tree.case_dir("T-A01").unwrap();
        std::fs::write(case.join("x"), "1").unwrap();
        assert_eq!(tree.case_dir("T-A01").unwrap(), case);
        assert!(!case.join("x").exists(), "a case dir starts empty");

        drop(tree);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while root.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(!root.exists(), "removed in the background");
        assert!(repo.join("node_modules/lib/index.js").is_file());
        assert_eq!(
            std::fs::read_to_string(repo.join("data.txt")).unwrap(),
            "uncommitted\n"
        );
        assert_eq!(
            std::fs::read_dir(repo.join(".git")).unwrap().count(),
            before
        );
    }

    /// A tree a killed process left (its maker gone) is removed by the next sweep; a live
    /// process's tree is not.
    #[test]
    fn the_tree_of_a_process_that_is_gone_is_swept_and_a_live_one_is_kept() {
        let mut ended = std::process::Command::new("/bin/true").spawn().unwrap();
        let pid = ended.id();
        ended.wait().unwrap();
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        let left = std::env::temp_dir().join(format!(
            "{}{uid}-{pid}-12345-deadbeef",
            leftovers::ROUND_PREFIX
        ));
        std::fs::create_dir_all(left.join("tree/data")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        git(dir.path(), &["commit", "-q", "--allow-empty", "-m", "one"]);
        let live = RoundTree::create(dir.path(), &[]).unwrap();
        assert!(!left.exists(), "made by a process that is gone");
        sweep();
        assert!(live.path().exists(), "this process's tree stays");
    }

    /// Git LFS: the tree holds a tracked LFS file as committed, the pointer, and never runs the
    /// smudge filter the checkout's config names (the orchestrator's git runs no filter, and a
    /// fresh clone's config names none); a reset between cases keeps it so.
    #[test]
    fn an_lfs_file_is_its_pointer_in_the_tree_and_no_smudge_filter_runs() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        let pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n";
        std::fs::write(
            repo.join(".gitattributes"),
            "*.png filter=lfs diff=lfs merge=lfs -text\n",
        )
        .unwrap();
        std::fs::write(repo.join("logo.png"), pointer).unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", "an LFS asset"]);
        // What `git lfs install --local` would leave, with filters that leave a trace.
        let ran = dir.path().join("smudge-ran");
        let filter = format!("sh -c 'touch {}; cat'", ran.display());
        for (key, value) in [
            ("filter.lfs.smudge", filter.as_str()),
            ("filter.lfs.process", filter.as_str()),
            ("filter.lfs.required", "true"),
        ] {
            git(&repo, &["config", key, value]);
        }

        let tree = RoundTree::create(&repo, &[]).unwrap();
        let asset = tree.path().join("logo.png");
        assert_eq!(std::fs::read_to_string(&asset).unwrap(), pointer);
        std::fs::write(&asset, "real bytes a reset command copied in").unwrap();
        tree.reset().unwrap();
        assert_eq!(std::fs::read_to_string(&asset).unwrap(), pointer);
        assert!(!ran.exists(), "no smudge filter ran");
        let config = std::fs::read_to_string(tree.path().join(".git/config")).unwrap();
        assert!(!config.contains("filter"), "{config}");
    }

    /// After the hand-over to the agents' identity (every file's owner and ctime changed), a
    /// reset writes back only the file a case changed: the others keep the owner they were
    /// handed to, so they are neither written again nor handed over again at the next start.
    #[test]
    fn a_reset_after_the_hand_over_writes_back_only_what_a_case_changed() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            // Only root can hand files to another uid (the Docker action's case).
            return;
        }
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        for name in ["a.txt", "b.txt", "c.txt"] {
            std::fs::write(repo.join(name), name).unwrap();
        }
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", "three"]);
        let tree = RoundTree::create(&repo, &[]).unwrap();
        for name in ["a.txt", "b.txt", "c.txt"] {
            std::os::unix::fs::lchown(tree.path().join(name), Some(65532), Some(65532)).unwrap();
        }
        std::fs::write(tree.path().join("b.txt"), "changed by a case").unwrap();
        tree.reset().unwrap();
        let owner = |name: &str| std::fs::metadata(tree.path().join(name)).unwrap().uid();
        assert_eq!(
            std::fs::read_to_string(tree.path().join("b.txt")).unwrap(),
            "b.txt"
        );
        assert_eq!((owner("a.txt"), owner("c.txt")), (65532, 65532));
    }

    #[test]
    fn a_checkout_without_a_commit_has_no_tree() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        let e = RoundTree::create(dir.path(), &[]).unwrap_err();
        assert!(e.to_string().contains("no commit to test"), "{e}");
    }
}
