//! Benchmark: what a round's disposable tree costs (`evidence::isolation::RoundTree`, issue 30).
//!
//! Every evaluate round makes a tree of the commit under test (a `git clone --shared` of the
//! checkout's `HEAD`, its dependency directories linked), resets it before each case with
//! `app.isolation: case`, and removes it at the end. This measures those three on the demo's
//! checkout and on a checkout of 100,000 tracked files (`cargo bench --bench round_tree`; under
//! `cargo test`, a smoke size of 2,000), each the median of a few repeats. The reset is measured
//! after a case wrote a tracked file, an ignored one and a new one. As root the tree is also lent
//! to the agents' identity (the walk that hands it over happens at the next confined start, and
//! is measured by `benches/lend.rs`).

// A test or benchmark program prints for the person running it; the library may not.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use spec_orchestrate::evidence::isolation::RoundTree;

const REPEAT: usize = 5;

fn git(dir: &Path, args: &[&str]) {
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

/// A checkout of `files` tracked files in directories of 100, and an ignored `node_modules` of
/// 1,000 entries (linked into each tree, never copied).
fn large_checkout(repo: &Path, files: usize) {
    std::fs::create_dir_all(repo).expect("mkdir");
    git(repo, &["init", "-q"]);
    for i in 0..files {
        let dir = repo.join(format!("src/d{:04}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        std::fs::write(dir.join(format!("f{i}.js")), format!("// {i}\n")).expect("write");
    }
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

/// Make, reset (after a case wrote three files), remove: the median of each.
fn measure(name: &str, repo: &Path) {
    let deps = vec!["node_modules".to_string()];
    let (mut make, mut reset, mut remove) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..REPEAT {
        let started = Instant::now();
        let tree = RoundTree::create(repo, &deps).expect("a tree is made");
        make.push(started.elapsed());
        std::fs::write(tree.path().join("data.json"), "[\"milk\"]").expect("write");
        std::fs::write(tree.path().join("cache.tmp"), "x").expect("write");
        std::fs::write(tree.path().join("new.txt"), "x").expect("write");
        let started = Instant::now();
        tree.reset().expect("reset");
        reset.push(started.elapsed());
        // What a drop at the end of a round does in the background, waited for here.
        let started = Instant::now();
        tree.remove();
        remove.push(started.elapsed());
    }
    println!(
        "{name}: make {}, reset between cases {}, remove (in the background at a round's end) {} (median of {REPEAT})",
        ms(median(make)),
        ms(median(reset)),
        ms(median(remove))
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (demo, _) =
        spec_orchestrate::commands::demo::lay_out(&tmp.path().join("demo")).expect("demo");
    measure("demo checkout", &demo);
    let files = if full { 100_000 } else { 2_000 };
    let large = tmp.path().join("large");
    let started = Instant::now();
    large_checkout(&large, files);
    println!(
        "({files} tracked files laid out and committed in {})",
        ms(started.elapsed())
    );
    measure(&format!("checkout of {files} files"), &large);
}
