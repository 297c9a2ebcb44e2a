//! A thin wrapper over the real `git` program: the pipeline's only way to touch history.
//!
//! Shelling out (rather than a library) keeps behaviour identical to what users see on the
//! command line, except that nothing the checkout or the user's config names is run: no hooks,
//! no fsmonitor, no filter or diff programs, no editor, pager or credential helper of theirs
//! (agents can write all of those; see [`harden`]).

pub mod harden;
pub mod lock;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::types::ids::Sha;

/// A repository working tree.
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
    /// `-c key=value` options every call in this tree carries (a sparse task tree's, see
    /// [`Git::sparse`]).
    options: Vec<String>,
}

/// The options of a sparse tree's git calls: cone-mode sparse checkout with a sparse index.
/// Given on each call rather than written to the repository's config, which a per-worktree
/// setting would need (`extensions.worktreeConfig` in the checkout's own `.git/config`).
const SPARSE: [&str; 4] = [
    "core.sparseCheckout=true",
    "core.sparseCheckoutCone=true",
    "index.sparse=true",
    "advice.updateSparsePath=false",
];

/// Pathspec that keeps the atomic-save temp files (`.<name>.tmp-<random>`) out of every commit.
const TEMP_EXCLUDE: &str = ":(exclude,glob)**/.*.tmp-*";

impl Git {
    /// Wraps the working tree at `dir`.
    pub fn new(dir: &Path) -> Git {
        Git {
            dir: dir.to_path_buf(),
            options: Vec::new(),
        }
    }

    /// Wraps the sparse working tree at `dir` (`phases::implement::tree`): every call reads
    /// its sparse-checkout file in cone mode, so that a file written outside the cone is seen
    /// (git clears its skip-worktree bit) and can be staged, restored or removed like any other.
    pub fn sparse(dir: &Path) -> Git {
        Git {
            dir: dir.to_path_buf(),
            options: SPARSE.iter().map(|o| o.to_string()).collect(),
        }
    }

    /// Whether this is a sparse tree's git ([`Git::sparse`]): the agents working there are told
    /// how to read the files left out of it.
    pub fn is_sparse(&self) -> bool {
        !self.options.is_empty()
    }

    /// Runs git and returns trimmed stdout.
    pub fn run(&self, args: &[&str]) -> Result<String> {
        self.run_env(args, &[])
    }

    /// Runs git with extra environment variables (e.g. a temporary `GIT_INDEX_FILE`).
    pub fn run_env(&self, args: &[&str], env: &[(&str, String)]) -> Result<String> {
        // Global options (`-c key=value`) come before the subcommand.
        let mut at = 0;
        while args.get(at) == Some(&"-c") {
            at += 2;
        }
        let (globals, rest) = args.split_at(at.min(args.len()));
        let sub = rest.first().copied().unwrap_or_default();
        if matches!(sub, "commit" | "commit-tree" | "update-ref") {
            self.verify_writer()?;
        }
        let mut cmd = self.command()?;
        cmd.args(globals);
        if let Some((sub, rest)) = rest.split_first() {
            cmd.arg(sub).args(harden::subcommand_flags(sub)).args(rest);
        }
        cmd.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
        self.output(cmd, args, &[])
    }

    /// The `git` command every call starts from (see [`harden`]): in the work tree, with a
    /// scrubbed environment, hooks, fsmonitor and every program named by the repository's config
    /// switched off. Callers add `-c` options, the subcommand and its arguments, and run it with
    /// [`Git::output`]. Fails when the repository's config cannot be made safe (`core.worktree`).
    pub fn command(&self) -> Result<Command> {
        let overrides = harden::repository_overrides(&self.dir)
            .map_err(|stderr| self.failed(&["config", "--list"], stderr))?;
        if let Some(key) = overrides.refused.first() {
            return Err(Error::repo(
                &self.dir,
                format!(
                    "the repository's git config sets `{key}`, which would make git work on another directory; refusing to run git here (an agent may have added it)"
                ),
            )
            .with_help(format!("remove it with `git config --unset {key}` and run again")));
        }
        let mut cmd = harden::base(&self.dir);
        for o in overrides.set.iter().chain(&self.options) {
            cmd.arg("-c").arg(o);
        }
        Ok(cmd)
    }

    /// Runs `cmd` (made by [`Git::command`]) and returns its trimmed stdout; a failure is an
    /// [`Error::Git`] naming `args`, with every value in `hide` masked in git's stderr (git may
    /// echo a credential it was handed).
    pub fn output(&self, cmd: Command, args: &[&str], hide: &[&str]) -> Result<String> {
        harden::stdout(cmd).map_err(|mut stderr| {
            for secret in hide.iter().filter(|s| !s.is_empty()) {
                stderr = stderr.replace(secret, "***");
            }
            self.failed(args, stderr)
        })
    }

    fn failed(&self, args: &[&str], stderr: String) -> Error {
        Error::Git {
            args: args.join(" "),
            dir: self.dir.clone(),
            stderr,
        }
    }

    /// The absolute git common directory (shared by all worktrees of the repository): where
    /// the checkout lock lives.
    pub fn common_dir(&self) -> Result<PathBuf> {
        self.run(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
            .map(PathBuf::from)
    }

    /// Before anything that commits: a process that holds the checkout lock must still hold it
    /// (see [`lock`]); a process that holds none is not checked.
    fn verify_writer(&self) -> Result<()> {
        match self.common_dir() {
            Ok(dir) => lock::CheckoutLock::verify_for(&dir),
            Err(_) => Ok(()),
        }
    }

    /// The work tree.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether `dir` is inside a git work tree.
    pub fn is_repo(&self) -> bool {
        self.run(&["rev-parse", "--is-inside-work-tree"]).is_ok()
    }

    /// The top-level directory of the work tree.
    pub fn toplevel(&self) -> Result<PathBuf> {
        self.run(&["rev-parse", "--show-toplevel"])
            .map(PathBuf::from)
    }

    /// The current HEAD sha, if any commit exists.
    pub fn head(&self) -> Option<Sha> {
        self.run(&["rev-parse", "HEAD"]).ok().map(Sha::from)
    }

    /// A disposable tree of `commit` at `into` (which must not exist): a clone that shares this
    /// checkout's objects (`git clone --shared --no-checkout`, so nothing is copied but the
    /// files checked out, and nothing is registered in this checkout's `.git`), detached at
    /// `commit`. The files are written by a worker per core: on a large checkout, writing them
    /// is the tree's whole cost (`benches/round_tree.rs`).
    pub fn clone_detached(&self, into: &Path, commit: &str) -> Result<Git> {
        let from = self.dir.to_string_lossy();
        let to = into.to_string_lossy();
        self.run(&[
            "clone",
            "--shared",
            "--no-checkout",
            "--quiet",
            from.as_ref(),
            to.as_ref(),
        ])?;
        let tree = Git::new(into);
        tree.run(&[
            "-c",
            "checkout.workers=0",
            "checkout",
            "--quiet",
            "--detach",
            commit,
        ])?;
        Ok(tree)
    }

    /// The current branch name.
    pub fn current_branch(&self) -> Result<String> {
        self.run(&["rev-parse", "--abbrev-ref", "HEAD"])
    }

    /// Whether the local branch `branch` exists.
    pub fn branch_exists(&self, branch: &str) -> bool {
        self.run(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ])
        .is_ok()
    }

    /// Checks out `branch`, creating it at HEAD if it does not exist.
    pub fn checkout_branch(&self, branch: &str) -> Result<()> {
        if self.branch_exists(branch) {
            if self.current_branch().ok().as_deref() != Some(branch) {
                self.run(&["checkout", "--quiet", branch])?;
            }
        } else {
            self.run(&["checkout", "--quiet", "-b", branch])?;
        }
        Ok(())
    }

    /// `git status --porcelain` lines (untracked files included).
    pub fn status(&self) -> Result<Vec<String>> {
        Ok(self
            .run(&["status", "--porcelain", "--untracked-files=all"])?
            .lines()
            .map(str::to_string)
            .collect())
    }

    /// Paths changed in the work tree relative to HEAD, untracked files included, both sides of
    /// a staged rename. Read NUL-separated (`-z`), so that a name with spaces, quotes or
    /// non-ASCII letters comes back as it is on disk rather than C-quoted.
    pub fn changed_paths(&self) -> Result<Vec<String>> {
        let out = self.run(&["status", "--porcelain", "-z", "--untracked-files=all"])?;
        let mut paths = Vec::new();
        let mut fields = out.split('\0').filter(|f| !f.is_empty());
        while let Some(record) = fields.next() {
            let Some(path) = record.get(3..) else {
                continue;
            };
            paths.push(path.to_string());
            if record.starts_with(['R', 'C'])
                && let Some(from) = fields.next()
            {
                // A rename's or copy's source follows as a field of its own.
                paths.push(from.to_string());
            }
        }
        Ok(paths)
    }

    /// Stages everything and commits with `message`; returns the new sha, or `None` when there
    /// was nothing to commit.
    pub fn commit_all(&self, message: &str) -> Result<Option<Sha>> {
        self.commit_paths(message, &["."])
    }

    /// Stages the changes under `pathspecs` (git pathspec syntax, `:(exclude)…` allowed) and
    /// commits them; returns the new sha, or `None` when there was nothing to commit.
    /// The temp files of atomic saves (`.<name>.tmp-<random>`, see `fsx`) are never staged: a
    /// save killed half-way must not land in a commit.
    pub fn commit_paths(&self, message: &str, pathspecs: &[&str]) -> Result<Option<Sha>> {
        // `--sparse`: a path outside a sparse tree's cone is staged like any other.
        let specs = [pathspecs, &[TEMP_EXCLUDE]].concat();
        self.run_on(&["add", "--all", "--sparse", "--"], &specs)?;
        if self.run(&["diff", "--cached", "--quiet"]).is_ok() {
            return Ok(None);
        }
        self.commit(message, false)?;
        Ok(self.head())
    }

    /// [`Git::commit_paths`], or an empty commit when nothing under `pathspecs` changed (a task
    /// whose work was already there still gets its one commit); returns the new sha.
    pub fn commit_paths_or_empty(&self, message: &str, pathspecs: &[&str]) -> Result<Sha> {
        if let Some(sha) = self.commit_paths(message, pathspecs)? {
            return Ok(sha);
        }
        self.commit(message, true)?;
        Ok(self.head().unwrap_or_default())
    }

    /// Commits the index as the orchestrator (never the agent's configured identity), hooks
    /// skipped.
    fn commit(&self, message: &str, allow_empty: bool) -> Result<String> {
        let mut args = vec![
            "-c",
            "user.name=spec-orchestrate",
            "-c",
            "user.email=spec-orchestrate@users.noreply.github.com",
            "commit",
            "--quiet",
            "--no-verify",
        ];
        if allow_empty {
            args.push("--allow-empty");
        }
        args.extend(["-m", message]);
        self.run(&args)
    }

    /// The diff against HEAD of the paths under `pathspecs`, untracked files included (they are
    /// added with intent-to-add so that they show up).
    pub fn diff_worktree(&self, pathspecs: &[&str]) -> Result<String> {
        self.run_on(
            &["add", "--all", "--intent-to-add", "--sparse", "--"],
            pathspecs,
        )?;
        self.run_on(
            &["diff", "HEAD", "--no-color", "--no-ext-diff", "--"],
            pathspecs,
        )
    }

    /// [`Git::run`] of `args` followed by `more`.
    fn run_on(&self, args: &[&str], more: &[&str]) -> Result<String> {
        self.run(&[args, more].concat())
    }

    /// Discards every uncommitted change, new files included, except under the `keep`
    /// directories (e.g. `.specs/`, where the run's records and the user's configuration live)
    /// and ignored files.
    pub fn discard_changes(&self, keep: &[&str]) -> Result<()> {
        let excludes: Vec<String> = keep
            .iter()
            .map(|k| format!(":(exclude){}", k.trim_end_matches('/')))
            .collect();
        let mut spec: Vec<&str> = vec!["--", "."];
        spec.extend(excludes.iter().map(String::as_str));
        self.run_on(&["reset", "--quiet", "HEAD"], &spec)?;
        self.run_on(&["checkout", "--quiet"], &spec)?;
        self.run_on(&["clean", "-fdq"], &spec)?;
        Ok(())
    }

    /// Commit whose subject starts with `prefix` on the current branch since `base`, if any.
    pub fn find_commit(&self, base: Option<&str>, prefix: &str) -> Result<Option<Sha>> {
        let range = match base {
            Some(b) => format!("{b}..HEAD"),
            None => "HEAD".to_string(),
        };
        let log = self.run(&["log", "--format=%H %s", &range])?;
        Ok(log
            .lines()
            .filter_map(|l| l.split_once(' '))
            .find(|(_, subject)| subject.starts_with(prefix))
            .map(|(sha, _)| Sha::from(sha)))
    }
}

/// The content of every file a reviewer could have touched, taken before a read-only call, so
/// that a reviewer that edits the tree is caught (`sandbox_violation`) and its edits undone.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    files: std::collections::BTreeMap<String, Option<Vec<u8>>>,
}

impl Snapshot {
    /// Records the files git reports as changed or untracked, plus every file under `extra`
    /// (repository-relative directories whose untracked content matters, e.g. the spec dir).
    pub fn take(git: &Git, extra: &[&str]) -> Result<Snapshot> {
        let mut files = std::collections::BTreeMap::new();
        for path in Self::candidates(git, extra)? {
            // Not followed, not opened when special: a planted FIFO must not hang the guard.
            let content = crate::fsx::read_entry(&git.dir.join(&path));
            files.insert(path, content);
        }
        Ok(Snapshot { files })
    }

    fn candidates(git: &Git, extra: &[&str]) -> Result<Vec<String>> {
        let mut paths: Vec<String> = git.changed_paths()?;
        for dir in extra {
            let root = git.dir.join(dir);
            // Agent logs are the orchestrator's own copies of output, written during the call
            // and possibly huge: neither a reviewer's change nor worth reading. The evidence is
            // not judged either (see `is_orchestrator_record`) and may be large.
            // The root is not followed either: a spec directory replaced by a link is one
            // entry (a change), not a tree read and restored through the link.
            for entry in walkdir::WalkDir::new(&root)
                .follow_links(false)
                .follow_root_links(false)
                .into_iter()
                .filter_entry(|e| {
                    e.file_name() != crate::types::AGENT_LOG_DIR
                        && (e.depth() == 0
                            || !(e.file_type().is_dir() && e.file_name() == "evidence"))
                })
                .flatten()
            {
                // Links and special files too (git status shows no FIFO): a planted one is an
                // edit like any other.
                if !entry.file_type().is_dir()
                    && let Ok(rel) = entry.path().strip_prefix(&git.dir)
                {
                    paths.push(rel.to_string_lossy().into_owned());
                }
            }
        }
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// Paths whose content differs now from the snapshot (new, changed or deleted files).
    pub fn changes(&self, git: &Git, extra: &[&str]) -> Result<Vec<String>> {
        let mut changed = Vec::new();
        let mut now = Self::candidates(git, extra)?;
        now.extend(self.files.keys().cloned());
        now.sort();
        now.dedup();
        for path in now {
            let current = crate::fsx::read_entry(&git.dir.join(&path));
            match self.files.get(&path) {
                Some(before) if *before == current => {}
                _ => changed.push(path),
            }
        }
        Ok(changed)
    }

    /// Lays the recorded entries out in `tree`, another work tree of the same `HEAD`, so that
    /// it shows what this checkout showed: each changed or untracked file (or link) written
    /// there, readable by all (they are what a reviewer is shown), each deleted one removed. A
    /// special file is not recreated, and a file too large to have been read is left as
    /// committed.
    pub fn lay_out(&self, tree: &Path) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        for (path, content) in &self.files {
            let full = tree.join(path);
            match content {
                Some(bytes) => {
                    crate::fsx::restore_entry(&full, bytes)?;
                    if std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_file()) {
                        std::fs::set_permissions(&full, std::fs::Permissions::from_mode(0o644))
                            .map_err(|e| crate::error::Error::io(&full, e))?;
                    }
                }
                None => crate::fsx::remove_entry(&full)?,
            }
        }
        Ok(())
    }

    /// Puts `paths` back as they were: snapshot content, deleted when new, or HEAD's version.
    pub fn restore(&self, git: &Git, paths: &[String]) -> Result<()> {
        for path in paths {
            let full = git.dir.join(path);
            match self.files.get(path) {
                // Whatever the agent put there (a link to outside included) is replaced, never
                // written through.
                Some(Some(content)) => crate::fsx::restore_entry(&full, content)?,
                Some(None) => {
                    let _ = crate::fsx::remove_entry(&full);
                }
                None => {
                    // Clean before the call: files of HEAD return to it, new files go (and
                    // leave the index, should the agent have staged them).
                    if git
                        .run(&["cat-file", "-e", &format!("HEAD:{path}")])
                        .is_ok()
                    {
                        git.run(&["checkout", "HEAD", "--", path])?;
                    } else {
                        git.run(&[
                            "rm",
                            "--cached",
                            "--quiet",
                            "--ignore-unmatch",
                            "--sparse",
                            "--",
                            path,
                        ])?;
                        let _ = crate::fsx::remove_entry(&full);
                    }
                }
            }
        }
        Ok(())
    }
}
