//! Nothing a call started outlives it, and no descendant holds a call past its deadline
//! (issue 11, points 1 and 2).
//!
//! The scripted agents (`tests/fixtures/agents/scenario.py`, keys `orphan`, `case_orphan`)
//! start a `setsid` shell running `sleep 1000` — a new session, so outside the call's process
//! group — and write both pids to a file. Liveness is checked by pid (and start time through
//! `/proc`), never by grepping process names, so that other tests running at the same time do
//! not disturb the verdict.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::Scenario;

/// Alive and not a zombie.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !matches!(rest.trim_start().chars().next(), Some('Z' | 'X')))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// The pids a scripted agent or check wrote, at least `at_least` of them.
fn pids(file: &Path, at_least: usize) -> Vec<i32> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let pids: Vec<i32> = text
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert!(
        pids.len() >= at_least,
        "{} holds {} pids, expected at least {at_least}",
        file.display(),
        pids.len()
    );
    pids
}

/// Kills what a failed test left behind, so that a failure does not leak `sleep 1000`s.
struct Cleanup(Vec<i32>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for &pid in &self.0 {
            if alive(pid) {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

fn assert_all_gone(pids: &[i32], what: &str) {
    let cleanup = Cleanup(pids.to_vec());
    let survivors: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
    assert!(
        survivors.is_empty(),
        "{what}: processes {survivors:?} outlived the call that started them"
    );
    drop(cleanup);
}

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn an_agent_whose_setsid_child_holds_its_stdout_ends_at_its_timeout_and_the_child_dies() {
    let pidfile = tempfile::NamedTempFile::new().unwrap();
    let s = Scenario::new(
        json!({"orphan": {"role": "spec_author", "times": 1, "hold_stdout": true,
                          "pidfile": pidfile.path()}}),
        "limits:\n  agent_timeout_s: 3\n",
    );
    let started = Instant::now();
    let out = s
        .run_cmd()
        .arg("--until")
        .arg("spec_generate")
        .timeout(LIMIT)
        .output()
        .unwrap();
    let took = started.elapsed();
    let pids = pids(pidfile.path(), 2);
    assert_all_gone(&pids, "setsid child holding the agent's stdout");
    assert!(
        out.status.success(),
        "the retry succeeds: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        took < Duration::from_secs(60),
        "the call holding a pipe ended at its 3 s timeout (the run took {took:?})"
    );
    let failures = s.state()["agent_failures"].clone();
    assert!(
        failures.to_string().contains("timeout"),
        "the first call is recorded as timed out: {failures}"
    );
}

#[test]
fn a_setsid_child_that_leaves_the_pipes_alone_is_killed_when_the_call_ends() {
    let pidfile = tempfile::NamedTempFile::new().unwrap();
    let s = Scenario::new(
        json!({"orphan": {"role": "spec_author", "times": 1, "hold_stdout": false,
                          "pidfile": pidfile.path()}}),
        "limits:\n  agent_timeout_s: 60\n",
    );
    let out = s
        .run_cmd()
        .arg("--until")
        .arg("spec_generate")
        .timeout(LIMIT)
        .output()
        .unwrap();
    let pids = pids(pidfile.path(), 2);
    assert_all_gone(&pids, "setsid child of an agent");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        s.state()["agent_failures"],
        json!([]),
        "a call whose orphan was stopped still succeeds"
    );
}

#[test]
fn a_command_case_leaving_a_setsid_child_is_bounded_and_leaves_nothing() {
    let held = tempfile::NamedTempFile::new().unwrap();
    let s = Scenario::new(
        json!({"case_orphan": {"hold_stdout": true, "pidfile": held.path()}, "case_timeout": 2}),
        "limits:\n  agent_timeout_s: 60\n",
    );
    let started = Instant::now();
    let _ = s
        .run_cmd()
        .arg("--until")
        .arg("evaluate")
        .timeout(LIMIT)
        .output()
        .unwrap();
    let took = started.elapsed();
    let pids = pids(held.path(), 6);
    assert_all_gone(&pids, "setsid children of acceptance commands");
    assert!(
        took < Duration::from_secs(90),
        "every case ended at its 2 s timeout (the run took {took:?})"
    );
    let result: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(s.demo.feature_dir().join("evaluate-1.json")).unwrap(),
    )
    .unwrap();
    let text = result.to_string();
    assert!(text.contains("timed out after 2 s"), "{text}");
}
