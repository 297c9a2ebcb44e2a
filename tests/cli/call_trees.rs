//! Concurrent read-only calls never share a checkout (issue 30, point 5): each persona of a
//! panel works in a tree of its own, with the spec documents it reviews, lent like the checkout
//! and removed when its call ends; a tree a killed run left is removed by the next command.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use spec_orchestrate::types::kinds::BlockerCategory;

use crate::support::{Scenario, failures_in};

const PANEL: &str = "review:\n  strategy: panel\n  panel: [architect, paranoid]\n";

/// The lines of `$SCENARIO_STATE/<name>`.
fn lines(s: &Scenario, name: &str) -> Vec<Value> {
    std::fs::read_to_string(s.dir.join("state").join(name))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The working directories the panel's personas were given, in call order.
fn panel_workdirs(s: &Scenario) -> Vec<PathBuf> {
    s.requests()
        .iter()
        .filter(|r| r["role"].as_str().is_some_and(|x| x.starts_with("panel:")))
        .map(|r| PathBuf::from(r["workdir"].as_str().unwrap()))
        .collect()
}

/// Waits (at most 60 s) until none of `dirs` exists; the ones still there.
fn gone_within(dirs: &[PathBuf], limit: Duration) -> Vec<PathBuf> {
    let deadline = Instant::now() + limit;
    loop {
        let left: Vec<PathBuf> = dirs.iter().filter(|d| d.exists()).cloned().collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_persona_never_sees_what_another_writes_into_its_working_directory() {
    // The architect writes a marker into its working directory as it starts, then works for
    // 4 s; the paranoid persona looks for it 1.5 s in, while the architect still works.
    let s = Scenario::new(
        json!({
            "stray": {"panel:architect": {"MARKER": "written by the architect"}},
            "panel": {
                "architect": {"sleep": 4},
                "paranoid": {"peek": {"after": 1.5, "names": ["MARKER"]}}
            }
        }),
        PANEL,
    );
    crate::support::run_until_ok(s.run_cmd(), "spec_review", &[]);

    let peeks = lines(&s, "peek.jsonl");
    assert_eq!(peeks.len(), 1, "the paranoid persona ran once: {peeks:?}");
    let peek = &peeks[0];
    assert_eq!(peek["seen"], json!([]), "it never saw the marker: {peek}");
    for doc in ["requirement.md", "design.md", "tasks.md", "test.md"] {
        assert!(
            peek["docs"].as_array().unwrap().iter().any(|d| d == doc),
            "the spec documents under review are in its tree: {peek}"
        );
    }
    // It looked while the architect was at work, marker written.
    let timing: Vec<Value> = std::fs::read_to_string(s.dir.join("timing.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let architect = timing.iter().find(|t| t["persona"] == "architect").unwrap();
    let at = peek["at"].as_f64().unwrap();
    assert!(
        architect["start"].as_f64().unwrap() < at && at < architect["end"].as_f64().unwrap(),
        "the peek at {at} fell inside the architect's call {architect}"
    );

    // Each call had its own directory, none of them the checkout or inside it.
    let dirs = panel_workdirs(&s);
    let repo = s.demo.repo.canonicalize().unwrap();
    let mut distinct = dirs.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), dirs.len(), "{dirs:?}");
    assert!(dirs.iter().all(|d| !d.starts_with(&repo)), "{dirs:?}");
    assert!(!s.demo.repo.join("MARKER").exists());

    // The write was the architect's own violation, caught in its tree, twice (its one re-run);
    // the paranoid persona was neither blamed nor run again.
    let caught = failures_in(&s.state(), BlockerCategory::SandboxViolation);
    let roles: Vec<String> = caught.iter().map(|f| f.role.to_string()).collect();
    assert_eq!(roles, ["panel:architect", "panel:architect"], "{caught:?}");
    assert!(caught[0].detail.contains("MARKER"), "{}", caught[0].detail);
    assert_eq!(s.requests_of("panel:paranoid").len(), 1);

    // The trees went with their calls.
    let left = gone_within(&dirs, Duration::from_secs(60));
    assert!(left.is_empty(), "trees left after the run: {left:?}");
}

/// The `run` command of `s`, started as a child this test can kill.
fn spawn_run(s: &Scenario) -> std::process::Child {
    let bin = assert_cmd::cargo::cargo_bin("spec-orchestrate");
    std::process::Command::new(bin)
        .args(["run", "--issue"])
        .arg(&s.demo.issue)
        .arg("--repo")
        .arg(&s.demo.repo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits (at most 120 s) until both personas were called; their working directories.
fn both_called(s: &Scenario) -> Vec<PathBuf> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let dirs = panel_workdirs(s);
        if dirs.len() >= 2 || Instant::now() > deadline {
            return dirs;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_trees_of_a_run_killed_during_a_panel_are_removed_by_the_next_command() {
    let go = crate::support::tempdir();
    let release: &Path = &go.path().join("go");
    let hold = json!({"hold": release});
    let s = Scenario::new(
        json!({"panel": {"architect": hold, "paranoid": hold}}),
        PANEL,
    );
    let mut run = spawn_run(&s);
    let dirs = both_called(&s);
    assert_eq!(dirs.len(), 2, "both personas were called");
    assert!(dirs.iter().all(|d| d.is_dir()), "{dirs:?}");
    run.kill().unwrap();
    run.wait().unwrap();
    assert!(
        dirs.iter().all(|d| d.is_dir()),
        "a killed run cannot remove its trees: {dirs:?}"
    );

    std::fs::write(release, "").unwrap();
    let resumed = s.demo.cmd("step").output().unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let left: Vec<&PathBuf> = dirs.iter().filter(|d| d.exists()).collect();
    assert!(left.is_empty(), "swept by the next command: {left:?}");
    let all = panel_workdirs(&s);
    assert!(
        all.len() >= 4,
        "the resumed review ran the panel again: {all:?}"
    );
    let left = gone_within(&all, Duration::from_secs(60));
    assert!(left.is_empty(), "{left:?}");
}

/// A persona that prints 3 MiB of chatter before a clean envelope.
const LOUD_PERSONA: &str = r#"import sys
sys.stdin.read()
line = ("chatter " * 127 + "\n").encode()
for _ in range(3 * 1024):
    sys.stdout.buffer.write(line)
sys.stdout.buffer.write(b'Review:\n```json\n{"findings": []}\n```\n')
"#;

#[test]
fn the_whole_output_of_a_persona_in_its_own_tree_is_kept_in_the_checkouts_agent_log() {
    let s = Scenario::new(json!({}), PANEL);
    let script = s.dir.join("loud.py");
    std::fs::write(&script, LOUD_PERSONA).unwrap();
    let config = crate::support::with_agent(
        &s.demo.config(),
        "loud",
        &format!(
            "{{ kind: command, command: [\"python3\", \"{}\"], opposite: alpha }}",
            script.display()
        ),
    )
    .replace("spec_reviewer: beta", "spec_reviewer: loud");
    s.demo.write_config(&config);
    crate::support::run_until_ok(s.run_cmd(), "spec_review", &[]);
    let logs: Vec<(String, u64)> = std::fs::read_dir(s.demo.feature_dir().join("agent-log"))
        .unwrap()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, e.metadata().unwrap().len())
        })
        .filter(|(n, _)| n.starts_with("spec_review-panel") && n.ends_with(".stdout.log"))
        .collect();
    assert_eq!(logs.len(), 2, "{logs:?}");
    assert!(logs.iter().all(|(_, size)| *size > 3_000_000), "{logs:?}");
}
