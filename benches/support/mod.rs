//! What the tree benchmarks share: git in a scratch repository, a checkout of many files, a
//! timer and one confined start (the hand-over to the agents' identity happens inside it).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use spec_orchestrate::process;

/// Runs `git args` in `dir` with a throwaway identity; panics when it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.test",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs")
        .status
        .success();
    assert!(ok, "git {args:?}");
}

/// Writes `files` files `src/dNNNN/f<i>.<ext>` in directories of 100 (not yet added to git).
pub fn files_in_dirs_of_100(repo: &Path, files: usize, ext: &str) {
    for i in 0..files {
        let dir = repo.join(format!("src/d{:04}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        std::fs::write(dir.join(format!("f{i}.{ext}")), format!("// {i}\n")).expect("write");
    }
}

/// How long `f` takes.
pub fn timed(f: impl FnOnce()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}

/// Starts one confined `true` in `dir` and waits for it: a lent tree is handed over to the
/// agents' identity inside the first start.
pub fn confined_start(dir: &Path) -> Duration {
    timed(|| {
        let mut cmd = Command::new("/bin/true");
        cmd.current_dir(dir);
        let mut child = process::spawn_confined(&mut cmd).expect("a confined program starts");
        child.wait().expect("it ends");
    })
}
