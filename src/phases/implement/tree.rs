//! A task's own worktree, for the tasks of a wave that run at once.
//!
//! Each is a `git worktree` of the checkout on its own branch (`spec-orchestrate-task/<id>`,
//! made at the work branch's HEAD), under the git directory
//! (`<git-common-dir>/spec-orchestrate/trees/<id>`): outside the working tree the other agents
//! see and outside every commit, beside the objects it shares (nothing is copied but the
//! checked-out files). On a large checkout ([`SPARSE_FROM`] files) the tree of a task that
//! names its target files is sparse: cone mode with a sparse index, the directories of those
//! files and the spec ([`cone`]), so that making it costs the files the task works on, not the
//! whole checkout (docs/phases.md#tasks-in-parallel); `limits.task_trees: full` turns this off
//! ([`sparse_trees`]). The checkout's dependency directories are
//! linked in as into a round's tree. The implementer and the reviewer of the task work there;
//! it is lent to the agents' identity like the checkout
//! ([`crate::process::identity::lend_for`]), and git's own files (`.git/config`, hooks, HEAD,
//! the tree's sparse-checkout file) are guarded by the rooms as in the checkout, since a
//! worktree reads the checkout's.
//!
//! A tree is removed with its branch when its task ends ([`TaskTree`]'s `Drop`). A run killed
//! mid-wave leaves its trees behind; the next run reaching implement removes them ([`sweep`]):
//! it holds the checkout lock, so no other process of this checkout can be using one.

use std::path::{Path, PathBuf};

use crate::config::TaskTrees;
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
    main: Git,
    git: Git,
    /// Its branch, `refs/heads/…` left out.
    branch: String,
    base: String,
    /// The tree lent to the agents' identity while it lives.
    loan: Option<Loan>,
}

/// The directory of the trees of `main`'s repository.
pub fn root(main: &Git) -> Result<PathBuf> {
    Ok(main.common_dir()?.join(TREES))
}

/// What a task's tree holds besides the commit's files.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    /// The directories checked out (cone mode, see [`cone`]); `None`: every file.
    pub cone: Option<Vec<String>>,
    /// The checkout's dependency directories to link (`app.dependencies`).
    pub dependencies: Vec<String>,
}

impl TaskTree {
    /// Makes the tree of task `id` at `main`'s HEAD, on a fresh branch, holding the files of
    /// `shape`'s cone (or all of them), links the checkout's dependency directories into it as
    /// a round's tree does ([`crate::evidence::isolation::link_dependencies`]), and lends it.
    pub fn create(main: &Git, id: &str, shape: &Shape) -> Result<TaskTree> {
        let root = root(main)?;
        make_dirs(&root)?;
        let name: String = id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let path = root.join(&name);
        let branch = format!("{BRANCH_PREFIX}{name}");
        let base = main.head().map(String::from).unwrap_or_default();
        let git = check_out(main, (&path, &branch, &base), shape.cone.as_deref())?;
        // Ignored directories are in no commit: the implementer's build and tests need the
        // checkout's (linked, never copied; one the commit tracks is left as checked out).
        crate::evidence::isolation::link_dependencies(main.dir(), &path, &shape.dependencies)
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

/// The tree at `path` on `branch` at `base`: every file of the commit, checked out by as many
/// workers as there are cores (on a large checkout, writing the files is the tree's whole cost,
/// benches/task_tree.rs), or only the files of the cone `dirs` (and the files directly in each
/// directory above them): the tree is then registered without a checkout, its sparse-checkout
/// file written in cone mode, and the index read from the commit with a sparse index (one entry
/// per directory left out). Nothing is written to the repository's config; a sparse tree's
/// [`Git::sparse`] carries the settings on every call.
fn check_out(
    main: &Git,
    (path, branch, base): (&Path, &str, &str),
    cone: Option<&[String]>,
) -> Result<Git> {
    let at = path.to_string_lossy();
    let workers = ["-c", "checkout.workers=0"];
    let add = ["worktree", "add", "--quiet", "--force"];
    let sparse = cone.map(|_| "--no-checkout");
    let args: Vec<&str> = workers
        .into_iter()
        .chain(add)
        .chain(sparse)
        .chain(["-B", branch, &at, base])
        .collect();
    main.run(&args)?;
    let Some(dirs) = cone else {
        return Ok(Git::new(path));
    };
    let git = Git::sparse(path);
    let git_dir = PathBuf::from(git.run(&["rev-parse", "--path-format=absolute", "--git-dir"])?);
    let info = git_dir.join("info");
    std::fs::create_dir_all(&info).map_err(|e| crate::error::Error::io(&info, e))?;
    crate::util::write_text(&info.join("sparse-checkout"), &cone_patterns(dirs))?;
    git.run(&[workers[0], workers[1], "read-tree", "-mu", "HEAD"])?;
    Ok(git)
}

/// The sparse-checkout file of cone mode for the directories `dirs` (repository-relative,
/// no trailing `/`): the top-level files, then each directory above a cone directory with its
/// files only, then the cone directories whole.
fn cone_patterns(dirs: &[String]) -> String {
    let mut whole: Vec<&str> = dirs.iter().map(String::as_str).collect();
    whole.sort_unstable();
    whole.dedup();
    let kept: Vec<&str> = whole
        .iter()
        .copied()
        .filter(|d| !whole.iter().any(|o| o != d && is_under(d, o)))
        .collect();
    let mut parents: Vec<&str> = kept
        .iter()
        .flat_map(|d| d.match_indices('/').map(move |(i, _)| &d[..i]))
        .collect();
    parents.sort_unstable();
    parents.dedup();
    let mut text = String::from("/*\n!/*/\n");
    for p in parents {
        text.push_str(&format!("/{p}/\n!/{p}/*/\n"));
    }
    for d in kept {
        text.push_str(&format!("/{d}/\n"));
    }
    text
}

fn is_under(path: &str, dir: &str) -> bool {
    path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

/// From how many files in the checkout a task's tree is sparse. Below it a full tree costs
/// under about a second to make and remove (0.35 s for 2,000 files, benches/task_tree.rs) and
/// gives the implementer every file to read, build and test with; above it writing every file
/// dominates (about 17 s for 100,000).
pub const SPARSE_FROM: usize = 5_000;

/// Whether the trees of `main`'s tasks are sparse (for a task whose [`cone`] can be written):
/// with `limits.task_trees: auto` on a large checkout ([`is_large`]), never with `full`, which
/// a repository whose build or tests need sources outside a task's directories sets.
pub fn sparse_trees(main: &Git, mode: TaskTrees) -> Result<bool> {
    match mode {
        TaskTrees::Auto => is_large(main),
        TaskTrees::Full => Ok(false),
    }
}

/// Whether `main`'s checkout holds at least [`SPARSE_FROM`] files (its index's entries, one
/// `git ls-files`: about 0.1 s for 100,000).
fn is_large(main: &Git) -> Result<bool> {
    let listing = main.run(&["ls-files", "-z"])?;
    Ok(listing.split('\0').filter(|p| !p.is_empty()).count() >= SPARSE_FROM)
}

/// The cone of a task's tree: the directory of each of its target files (`files:` of
/// `tasks.md`; a file's own directory, or the directory it names) and the directories of
/// `keep` (the spec directory), or `None` — every file — when the task names no target file or
/// a name could not be written as a cone pattern (`..`, an absolute path, a glob or escape
/// character, a control character): the tree is then complete, as before. `is_dir` says
/// whether a path names a directory of the checkout.
pub fn cone(
    files: &[String],
    keep: &[String],
    is_dir: impl Fn(&str) -> bool,
) -> Option<Vec<String>> {
    if files.is_empty() {
        return None;
    }
    let mut dirs: Vec<String> = Vec::new();
    let named = files.iter().map(|f| (f, false));
    for (f, kept) in named.chain(keep.iter().map(|k| (k, true))) {
        let f = f.trim();
        let f = f.strip_prefix("./").unwrap_or(f);
        let named_dir = kept || f.ends_with('/');
        let f = f.trim_end_matches('/');
        if f.is_empty() || !plain(f) {
            return None;
        }
        let dir = if named_dir || is_dir(f) {
            f
        } else {
            match f.rfind('/') {
                Some(i) => &f[..i],
                // A top-level file: cone mode always holds those.
                None => continue,
            }
        };
        dirs.push(dir.to_string());
    }
    Some(dirs)
}

/// A relative path of plain names that a cone pattern can hold as written.
fn plain(path: &str) -> bool {
    path.split('/').all(|c| {
        !c.is_empty()
            && c != "."
            && c != ".."
            && !c.starts_with(['!', '#'])
            && !c.chars().any(|ch| ch.is_control() || "*?[]\\".contains(ch))
    })
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
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "--quiet"]);
        let files = [
            (".gitignore", "node_modules\n"),
            ("vendor/lib.txt", "tracked\n"),
            ("node_modules/pkg/index.js", "installed\n"),
        ];
        commit(&repo, &files, "base");
        (tmp, repo)
    }

    /// Writes `files` (path, text) into `repo` and commits them as `message`.
    fn commit(repo: &Path, files: &[(&str, &str)], message: &str) {
        for (path, text) in files {
            let file = repo.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        git(repo, &["add", "--all"]);
        git(repo, &["commit", "--quiet", "-m", message]);
    }

    #[test]
    fn a_task_tree_links_the_checkouts_dependency_directories_and_removes_only_the_links() {
        let (_tmp, repo) = checkout();
        let main = Git::new(&repo);
        let deps: Vec<String> = ["node_modules", ".venv", "vendor", "../outside"]
            .map(String::from)
            .to_vec();
        let shape = Shape {
            cone: None,
            dependencies: deps,
        };
        let tree = TaskTree::create(&main, "T001", &shape).unwrap();
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

    #[test]
    fn the_cone_is_the_directories_of_the_target_files_and_none_when_it_cannot_be_written() {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let is_dir = |p: &str| p == "lib";
        let keep = v(&[".specs/f"]);
        assert_eq!(
            cone(
                &v(&["src/a/x.rs", "./lib", "docs/", "top.txt"]),
                &keep,
                is_dir
            ),
            Some(v(&["src/a", "lib", "docs", ".specs/f"]))
        );
        assert_eq!(cone(&[], &keep, is_dir), None, "no file named: every file");
        for odd in ["../x.rs", "/etc/x", "src/*.rs", "a/[b]/c", "!x/y", "a\nb/c"] {
            assert_eq!(cone(&v(&[odd]), &keep, is_dir), None, "{odd}");
        }
        assert_eq!(
            cone_patterns(&v(&["src/a/b", "src/a", ".specs/f", "src/a"])),
            "/*\n!/*/\n/.specs/\n!/.specs/*/\n/src/\n!/src/*/\n/.specs/f/\n/src/a/\n"
        );
    }

    /// A sparse tree holds the cone; a file written outside it is seen, staged and committed
    /// when it is in the implementer's room, and undone and reported when it is not.
    #[test]
    fn a_sparse_tree_holds_the_cone_and_the_rooms_see_writes_outside_it() {
        use crate::agents::rooms::{self, Room};
        let (_tmp, repo) = checkout();
        let files = [
            ("a/x.txt", "a\n"),
            ("b/y.txt", "b\n"),
            ("top.txt", "top\n"),
            (".specs/f/tasks.md", "tasks\n"),
            (".specs/g/other.md", "other feature\n"),
        ];
        commit(&repo, &files, "more");
        let main = Git::new(&repo);
        let shape = Shape {
            cone: Some(vec!["a".into(), ".specs/f".into()]),
            dependencies: Vec::new(),
        };
        let tree = TaskTree::create(&main, "T002", &shape).unwrap();
        let at = |p: &str| tree.path().join(p);
        for present in ["a/x.txt", "top.txt", ".gitignore", ".specs/f/tasks.md"] {
            assert!(at(present).is_file(), "{present} is checked out");
        }
        for absent in ["b", "vendor", ".specs/g"] {
            assert!(!at(absent).exists(), "{absent} is outside the cone");
        }
        assert_eq!(tree.git().status().unwrap(), Vec::<String>::new());

        let before = rooms::before(tree.git(), Room::WorkTree, ".specs/f").unwrap();
        std::fs::create_dir_all(at("b")).unwrap();
        std::fs::write(at("b/y.txt"), "changed outside the cone\n").unwrap();
        std::fs::create_dir_all(at("c")).unwrap();
        std::fs::write(at("c/new.txt"), "new\n").unwrap();
        std::fs::create_dir_all(at(".specs/g")).unwrap();
        std::fs::write(at(".specs/g/other.md"), "planted\n").unwrap();
        let settled = rooms::settle(tree.git(), &before).unwrap();
        assert_eq!(settled.inside, ["b/y.txt", "c/new.txt"]);
        assert_eq!(settled.outside, [".specs/g/other.md"]);
        assert_eq!(
            std::fs::read_to_string(at(".specs/g/other.md")).unwrap(),
            "other feature\n",
            "undone"
        );
        let work = [":(literal)b/y.txt", ":(literal)c/new.txt"];
        let diff = tree.git().diff_worktree(&work).unwrap();
        assert!(diff.contains("+changed outside the cone"), "{diff}");
        let sha = tree.git().commit_paths_or_empty("T002: t", &work).unwrap();
        let files = git(
            tree.path(),
            &["show", "--name-only", "--format=", sha.as_str()],
        );
        assert_eq!(files, "b/y.txt\nc/new.txt\n");
        assert!(
            !std::fs::read_to_string(repo.join(".git/config"))
                .unwrap()
                .contains("worktreeConfig"),
            "the checkout's config is left as it was"
        );
    }

    /// `limits.task_trees: full` gives a task every file even on a large checkout, where
    /// `auto` gives it the directories of its files.
    #[test]
    fn full_task_trees_are_never_sparse_on_a_large_checkout() {
        let (_tmp, repo) = checkout();
        std::fs::create_dir_all(repo.join("many")).unwrap();
        std::fs::create_dir_all(repo.join("a")).unwrap();
        for i in 0..SPARSE_FROM {
            std::fs::write(repo.join(format!("many/{i}.txt")), "x\n").unwrap();
        }
        std::fs::write(repo.join("a/x.txt"), "a\n").unwrap();
        git(&repo, &["add", "--all"]);
        git(&repo, &["commit", "--quiet", "-m", "large"]);
        let main = Git::new(&repo);
        for (mode, sparse) in [(TaskTrees::Auto, true), (TaskTrees::Full, false)] {
            let chosen = sparse_trees(&main, mode).unwrap();
            assert_eq!(chosen, sparse, "{mode:?}");
            let files = vec!["a/x.txt".to_string()];
            let shape = Shape {
                cone: chosen.then(|| cone(&files, &[], |_| false)).flatten(),
                dependencies: Vec::new(),
            };
            let tree = TaskTree::create(&main, &format!("T{mode:?}"), &shape).unwrap();
            assert!(tree.path().join("a/x.txt").is_file(), "{mode:?}");
            assert_eq!(tree.git().is_sparse(), sparse, "{mode:?}");
            assert_eq!(
                tree.path().join("many/0.txt").is_file(),
                !sparse,
                "{mode:?}: the files outside the task's directories"
            );
        }
    }
}
