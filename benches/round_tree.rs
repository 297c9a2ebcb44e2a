//! Benchmark: what a round's disposable tree costs (`evidence::isolation::RoundTree`, issue 30).
//!
//! Every evaluate round makes a tree of the commit under test (a `git clone --shared` of the
//! checkout's `HEAD`, its dependency directories linked), resets it before each case with
//! `app.isolation: case`, and removes it at the end. This measures those three on the demo's
//! checkout and on a checkout of 100,000 tracked files (`cargo bench --bench round_tree`; under
//! `cargo test`, a smoke size of 2,000; `ROUND_TREE_FILES=<n>` overrides both), each the median
//! of a few repeats. The reset is measured after a case wrote a tracked file, an ignored one and
//! a new one. As root the tree is lent to the agents' identity: the walk that hands it over
//! happens at the first confined start, measured here too. Then the ways git offers to make and
//! remove such a tree are timed alone, for the choice `Git::clone_detached` made.

// A test or benchmark program prints for the person running it; the library may not.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use spec_orchestrate::evidence::isolation::RoundTree;
use spec_orchestrate::process::identity;

use support::{confined_start, files_in_dirs_of_100, git, timed};

const REPEAT: usize = 5;

/// A checkout of `files` tracked files in directories of 100, and an ignored `node_modules` of
/// 1,000 entries (linked into each tree, never copied).
fn large_checkout(repo: &Path, files: usize) {
    std::fs::create_dir_all(repo).expect("mkdir");
    git(repo, &["init", "-q"]);
    files_in_dirs_of_100(repo, files, "js");
    std::fs::write(repo.join("data.json"), "[]").expect("write");
    std::fs::write(repo.join(".gitignore"), "node_modules/\n*.tmp\n").expect("write");
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", "large"]);
    for i in 0..1_000 {
        let dir = repo.join(format!("node_modules/p{:02}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        std::fs::write(dir.join(format!("m{i}.js")), "x").expect("write");
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// Make, first confined start (the hand-over, as root), reset (after a case wrote three files),
/// and the end of the round (the loan ends, then the removal, which a drop does in the
/// background): the median of each.
fn measure(name: &str, repo: &Path, repeat: usize) {
    let deps = vec!["node_modules".to_string()];
    let lends = matches!(identity::current(), identity::Separation::Separate(_));
    let (mut make, mut lend, mut reset, mut end) = (vec![], vec![], vec![], vec![]);
    for _ in 0..repeat {
        let started = Instant::now();
        let tree = RoundTree::create(repo, &deps).expect("a tree is made");
        make.push(started.elapsed());
        if lends {
            lend.push(confined_start(tree.path()));
        }
        std::fs::write(tree.path().join("data.json"), "[\"milk\"]").expect("write");
        std::fs::write(tree.path().join("cache.tmp"), "x").expect("write");
        std::fs::write(tree.path().join("new.txt"), "x").expect("write");
        reset.push(timed(|| tree.reset().expect("reset")));
        end.push(timed(|| tree.remove()));
    }
    let lend = if lends {
        ms(median(lend))
    } else {
        "not measured (agents share this user)".into()
    };
    println!(
        "| {name} | {} | {lend} | {} | {} |",
        ms(median(make)),
        ms(median(reset)),
        ms(median(end))
    );
}

/// The ways a tree of `repo`'s `HEAD` could be made and removed, with git alone: what
/// `Git::clone_detached` chose from.
fn alternatives(repo: &Path, repeat: usize) {
    let head = String::from_utf8(
        Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(repo)
            .output()
            .expect("git runs")
            .stdout,
    )
    .expect("a sha");
    let head = head.trim();
    let scratch = tempfile::tempdir().expect("tempdir");
    let at = scratch.path().join("tree");
    let to = at.to_string_lossy().into_owned();
    let from = repo.to_string_lossy().into_owned();
    let workers = |n: &str| format!("checkout.workers={n}");
    let row = |what: &str, make: &dyn Fn(), remove: &dyn Fn()| {
        let (mut m, mut r) = (vec![], vec![]);
        for _ in 0..repeat {
            m.push(timed(make));
            r.push(timed(remove));
        }
        println!("| {what} | {} | {} |", ms(median(m)), ms(median(r)));
    };
    let rm = || std::fs::remove_dir_all(&at).expect("removed");
    for n in ["1", "0"] {
        row(
            &format!(
                "`clone --shared --no-checkout` + `checkout` ({})",
                workers(n)
            ),
            &|| {
                git(
                    repo,
                    &["clone", "--shared", "--no-checkout", "--quiet", &from, &to],
                );
                git(
                    &at,
                    &["-c", &workers(n), "checkout", "--quiet", "--detach", head],
                );
            },
            &rm,
        );
    }
    row(
        "`worktree add --detach` (checkout.workers=0) / `worktree remove`",
        &|| {
            git(
                repo,
                &[
                    "-c",
                    &workers("0"),
                    "worktree",
                    "add",
                    "--quiet",
                    "--detach",
                    &to,
                    head,
                ],
            )
        },
        &|| git(repo, &["worktree", "remove", "--force", &to]),
    );
    row(
        "`clone --shared` / rename away (the removal after it, elsewhere)",
        &|| git(repo, &["clone", "--shared", "--quiet", &from, &to]),
        &|| {
            static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let gone = scratch.path().join(format!("gone-{n}"));
            std::fs::rename(&at, &gone).expect("renamed");
            std::thread::spawn(move || std::fs::remove_dir_all(gone));
        },
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (demo, _) =
        spec_orchestrate::commands::demo::lay_out(&tmp.path().join("demo")).expect("demo");
    let files = std::env::var("ROUND_TREE_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 100_000 } else { 2_000 });
    let large = tmp.path().join("large");
    let started = Instant::now();
    large_checkout(&large, files);
    println!(
        "round tree benchmark ({files} tracked files laid out and committed in {})",
        ms(started.elapsed())
    );
    println!(
        "| checkout | make | first confined start (hand-over) | reset between cases | loan's end + removal |"
    );
    println!("|---|---|---|---|---|");
    measure("demo", &demo, REPEAT);
    measure(
        &format!("{files} files"),
        &large,
        if full { 3 } else { REPEAT },
    );
    println!();
    println!("| {files} files, git alone | make | remove |");
    println!("|---|---|---|");
    alternatives(&large, if full { 2 } else { REPEAT });
    identity::restore();
}
