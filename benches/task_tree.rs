//! Benchmark: what a task's own worktree costs on a large checkout (docs/phases.md#tasks-in-parallel).
//!
//! A task of a parallel wave runs in a `git worktree` of the checkout (`phases::implement::tree`),
//! lent to the agents' identity like the checkout. On a checkout of 100,000 committed files this
//! measures, for a full tree (every file) and for a sparse tree (the cone of a task naming one
//! directory of 100 files, as implement makes it), against one `git status` of that checkout
//! (the bound per agent call):
//! - the tree's creation plus removal (once per task);
//! - the first confined start after it is lent (every entry of the tree handed to the agent uid;
//!   once per task);
//! - a later confined start with the checkout alone lent, and with the checkout and the tree lent
//!   (the walk every agent call pays; the difference is the tree's share per call).
//!
//! `cargo bench --bench task_tree` uses 100,000 files; under `cargo test` (no `--bench`
//! argument) a smoke size of 2,000; `TASK_TREE_FILES=<n>` overrides both. Only a root run lends;
//! otherwise the lending rows say why they are missing.

// A test or benchmark program prints for the person running it; the library may not.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

mod support;

use std::path::Path;
use std::time::Duration;

use spec_orchestrate::git::Git;
use spec_orchestrate::phases::implement::tree::{Shape, TaskTree};
use spec_orchestrate::process::identity;

use support::{confined_start, files_in_dirs_of_100, git, timed};

const REPEAT: usize = 3;

/// A repository of `files` committed files in directories of 100.
fn make_repo(repo: &Path, files: usize) {
    std::fs::create_dir_all(repo).expect("mkdir");
    git(repo, &["init", "--quiet"]);
    files_in_dirs_of_100(repo, files, "txt");
    git(repo, &["add", "--all"]);
    git(repo, &["commit", "--quiet", "-m", "files"]);
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The two trees measured: every file, and the cone of one directory of 100 files.
fn shapes() -> [(&'static str, Shape); 2] {
    [
        ("full tree", Shape::default()),
        (
            "sparse tree (one directory of 100 files)",
            Shape {
                cone: Some(vec!["src/d0001".into()]),
                dependencies: Vec::new(),
            },
        ),
    ]
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let files = std::env::var("TASK_TREE_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 100_000 } else { 2_000 });
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    let made = timed(|| make_repo(&repo, files));
    let main_git = Git::new(&repo);
    let status = median(
        (0..REPEAT)
            .map(|_| {
                timed(|| {
                    main_git.run(&["status", "--porcelain"]).expect("status");
                })
            })
            .collect(),
    );
    println!(
        "task tree benchmark: a checkout of {files} committed files (made in {}), median of {REPEAT}",
        ms(made)
    );
    println!("| step | time |");
    println!("|---|---|");
    println!(
        "| `git status` of the checkout (the bound per agent call) | {} |",
        ms(status)
    );
    let mut cycles = Vec::new();
    for (name, shape) in shapes() {
        let cycle = median(
            (0..REPEAT)
                .map(|_| timed(|| drop(TaskTree::create(&main_git, "T001", &shape).expect("tree"))))
                .collect(),
        );
        println!("| {name}: made and removed | {} |", ms(cycle));
        cycles.push(cycle);
    }
    if let identity::Separation::Shared(why) = identity::current() {
        println!("| lending | not measured: agents share this user ({why}) |");
        return;
    }
    identity::lend(&repo);
    confined_start(&repo);
    for ((name, shape), cycle) in shapes().into_iter().zip(cycles) {
        lending((&main_git, &repo), (name, &shape), cycle);
    }
    identity::restore();
}

/// The lending rows of one tree shape: its hand-over, its share per call, and what it costs
/// once per task in all (`cycle`: made and removed). The start with the checkout alone lent is
/// measured beside each tree's, so that a shared machine's load shifts both alike.
fn lending((main_git, repo): (&Git, &Path), (name, shape): (&str, &Shape), cycle: Duration) {
    let (mut alone, mut first, mut later) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..REPEAT {
        alone.push(confined_start(repo));
        let tree = TaskTree::create(main_git, "T001", shape).expect("tree");
        first.push(confined_start(tree.path()));
        later.push(confined_start(tree.path()));
        drop(tree);
    }
    let (alone, first, later) = (median(alone), median(first), median(later));
    println!(
        "| {name}: later confined start, the checkout alone lent (every agent call) | {} |",
        ms(alone)
    );
    println!(
        "| {name}: first confined start in it (its entries handed over) | {} |",
        ms(first)
    );
    println!(
        "| {name}: later confined start, the checkout and the tree lent | {} |",
        ms(later)
    );
    println!(
        "| {name}: per agent call, the tree's share (later start minus checkout alone) | {} |",
        ms(later.saturating_sub(alone))
    );
    println!(
        "| {name}: once per task, made, handed over and removed | {} |",
        ms(cycle + first.saturating_sub(alone))
    );
}
