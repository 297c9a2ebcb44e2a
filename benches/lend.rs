//! Benchmark: what the agents' identity costs per agent call — lending a checkout of many
//! entries to the agent uid before a confined program starts, and giving it back at the end.
//!
//! Before every confined start the orchestrator walks the working tree and hands over what the
//! agent uid does not own yet (`process::identity`); that walk happens once per agent call, so
//! its cost on a large checkout (a `node_modules` of tens of thousands of entries) is what a
//! root run pays per call. `cargo bench --bench lend` lends a tree of 100,000 entries; under
//! `cargo test` (no `--bench` argument) a smoke size of 2,000. It measures: the first start
//! (every entry changes owner), a later start (nothing to change: one `lstat` per entry), and the
//! give-back. Only a root run lends; otherwise it says why and measures nothing.

// A test or benchmark program prints for the person running it; the library may not.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use spec_orchestrate::process::{self, identity};

const REPEAT: usize = 5;

/// Lays out `entries` files in directories of 100, plus a `.git` directory the lending leaves
/// alone, as root's.
fn make_tree(repo: &Path, entries: usize) {
    std::fs::create_dir_all(repo.join(".git")).expect("mkdir .git");
    for i in 0..entries {
        let dir = repo.join(format!("node_modules/p{:04}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        std::fs::write(dir.join(format!("f{i}.js")), "x").expect("write");
    }
}

/// Starts one confined `true` and waits for it: the hand-over happens inside the start.
fn confined_start(repo: &Path) -> Duration {
    let started = Instant::now();
    let mut cmd = Command::new("/bin/true");
    cmd.current_dir(repo);
    let mut child = process::spawn_confined(&mut cmd).expect("a confined program starts");
    child.wait().expect("it ends");
    started.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    if let identity::Separation::Shared(why) = identity::current() {
        println!(
            "lend benchmark: agents share this user ({why}); nothing is lent, nothing to measure"
        );
        return;
    }
    let entries = if full { 100_000 } else { 2_000 };
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    make_tree(&repo, entries);
    identity::lend(&repo);
    let (mut first, mut again, mut back) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..REPEAT {
        first.push(confined_start(&repo));
        again.push(confined_start(&repo));
        let agent_uid = std::fs::symlink_metadata(repo.join("node_modules"))
            .expect("lent")
            .uid();
        assert_ne!(agent_uid, 0, "the tree was handed to the agent uid");
        let started = Instant::now();
        identity::give_back(&repo);
        back.push(started.elapsed());
        let owner = std::fs::symlink_metadata(repo.join("node_modules"))
            .expect("back")
            .uid();
        assert_eq!(owner, 0, "the tree came back to root");
    }
    identity::restore();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("lend benchmark: a checkout of {entries} entries, median of {REPEAT}");
    println!("| step | time |");
    println!("|---|---|");
    println!(
        "| first confined start (every entry handed over) | {:.1} ms |",
        ms(median(first))
    );
    println!(
        "| later confined start (nothing to hand over) | {:.1} ms |",
        ms(median(again))
    );
    println!(
        "| give back to the owner of `.git` | {:.1} ms |",
        ms(median(back))
    );
}
