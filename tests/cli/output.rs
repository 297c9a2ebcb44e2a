//! The output layer through the real binary: `--progress json` is a stream of parseable events,
//! `--progress quiet` (or `SPEC_ORCHESTRATE_PROGRESS=quiet`) leaves stderr empty, and a reader
//! that closes stdout early (`status | head -1`) does not turn a success into a panic; in-process,
//! a `Capture` reporter receives the library's events.

use std::process::{Command, Stdio};
use std::sync::Arc;

use spec_orchestrate::events::{self, Event};
use spec_orchestrate::output::Capture;
use spec_orchestrate::retro::ledger::Ledger;

use crate::support::{Demo, bin};
use spec_orchestrate::types::Phase;

/// The events of a `--progress json` stderr, each line parsed; panics on a line that is not a
/// JSON object naming its event.
fn events(stderr: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
            assert!(v["event"].is_string(), "no event kind: {line}");
            v
        })
        .collect()
}

#[test]
fn progress_json_is_one_event_object_per_line() {
    let demo = Demo::new();
    let out = demo
        .run_cmd()
        .arg("--until")
        .arg("spec_review")
        .arg("--progress")
        .arg("json")
        .assert()
        .success();
    let events = events(&out.get_output().stderr);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    for kind in [
        "run_started",
        "phase_started",
        "agent_call_started",
        "phase_ended",
        "inspection",
        "review_round",
        "paused",
    ] {
        assert!(kinds.contains(&kind), "no {kind} event in {kinds:?}");
    }
    assert_eq!(kinds.first(), Some(&"run_started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"paused"), "{kinds:?}");
    let first_phase = events
        .iter()
        .find(|e| e["event"] == "phase_started")
        .expect("a phase started");
    assert_eq!(first_phase["phase"], "intake");
    assert_eq!(first_phase["attempt"], 1);
    let round = events
        .iter()
        .find(|e| e["event"] == "review_round")
        .expect("a review round");
    assert_eq!(round["round"], 1);
    assert_eq!(round["gate"], "FAIL", "the demo's first review sends back");
    assert_eq!(events.last().unwrap()["next"], "approval");
}

#[test]
fn progress_quiet_leaves_stderr_empty_and_a_closed_stdout_ends_quietly() {
    let demo = Demo::new();
    // Up to the approval, so the run succeeds with or without a browser for the UI case.
    let out = demo
        .run_cmd()
        .arg("--until")
        .arg("spec_review")
        .env("SPEC_ORCHESTRATE_PROGRESS", "quiet")
        .assert()
        .success();
    assert_eq!(
        String::from_utf8_lossy(&out.get_output().stderr),
        "",
        "quiet prints no progress"
    );
    assert_eq!(demo.state().phase(), Phase::Approval, "the run did happen");

    // `status | head -1` where head has already gone: the read end is closed before the
    // first write, so every write fails with EPIPE.
    for json in [false, true] {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_spec-orchestrate"));
        cmd.arg("status").arg("--repo").arg(&demo.repo);
        if json {
            cmd.arg("--json");
        }
        let out = cmd
            .env_remove("SPEC_ORCHESTRATE_PROGRESS")
            .env_remove("SPEC_ORCHESTRATE_LOG")
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .expect("status runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "json={json}: {stderr}");
        assert_eq!(stderr, "", "json={json}: no panic, no error line");
    }
}

#[test]
fn help_explains_progress_and_json_mode_reports_errors_as_events() {
    let out = bin().arg("--help").assert().success();
    let help = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(help.contains("--progress"), "{help}");
    assert!(help.contains("SPEC_ORCHESTRATE_PROGRESS"), "{help}");
    assert!(help.contains("quiet"), "{help}");

    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let out = bin()
        .arg("--progress")
        .arg("json")
        .arg("status")
        .arg("--repo")
        .arg(&missing)
        .assert()
        .code(2);
    let events = events(&out.get_output().stderr);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["event"], "error");
    assert_eq!(events[0]["kind"], "usage");
    assert_eq!(events[0]["exit_code"], 2);
    assert!(events[0]["help"].is_string(), "{events:?}");
    assert!(
        events[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no such directory")),
        "{events:?}"
    );
}

#[test]
fn in_process_a_capture_reporter_receives_the_library_warnings() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = Ledger::of(tmp.path());
    std::fs::create_dir_all(ledger.path().parent().unwrap()).unwrap();
    std::fs::write(ledger.path(), "not json\n").unwrap();
    let capture = Arc::new(Capture::default());
    let records =
        events::scoped(capture.clone(), || ledger.raw()).expect("a bad line is not fatal");
    assert!(records.is_empty());
    let got = capture.events();
    assert_eq!(got.len(), 1, "{got:?}");
    let Event::Warning { message } = &got[0] else {
        panic!("not a warning: {got:?}");
    };
    assert!(
        message.contains(":1: not a run record") && message.ends_with("line skipped"),
        "{message}"
    );
}
