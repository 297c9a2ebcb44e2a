//! One writer per checkout: a run for another issue in the same checkout is refused naming the
//! feature that holds it, and a holder whose lock file was deleted stops before it commits.

use serde_json::json;

use crate::hostile_git::safe_git;
use crate::support::Scenario;

/// A second issue file for the same demo repository.
fn second_issue(s: &Scenario) -> std::path::PathBuf {
    let path = s.demo.tmp.path().join("other-issue.md");
    std::fs::write(
        &path,
        "# Export notes as markdown\n\nAdd an export button.\n",
    )
    .unwrap();
    path
}

#[test]
fn a_second_run_in_the_same_checkout_is_refused_naming_the_feature_that_holds_it() {
    let s = Scenario::new(json!({ "sleep": 4 }), "");
    let mut first = std::process::Command::new(assert_cmd::cargo::cargo_bin("spec-orchestrate"));
    first
        .args(["run", "--until", "spec_review", "--issue"])
        .arg(&s.demo.issue)
        .arg("--repo")
        .arg(&s.demo.repo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = first.spawn().unwrap();
    // Wait until the first run holds the checkout (its feature written into the lock).
    let lock = s.demo.repo.join(".git/spec-orchestrate.lock");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::read_to_string(&lock)
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the first run never took the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = s.demo.run_issue_cmd(&second_issue(&s)).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let status = child.wait().unwrap();
    assert!(status.success(), "the first run is undisturbed");
    assert_eq!(out.status.code(), Some(4), "a state error: {stderr}");
    assert!(stderr.contains("this checkout is in use"), "{stderr}");
    assert!(
        stderr.contains("`add-a-dark-mode-toggle`"),
        "names the holder: {stderr}"
    );
    assert!(
        !s.demo.repo.join(".specs/export-notes-as-markdown").exists(),
        "the second run wrote nothing"
    );
    // Once the first run is over, the checkout is free again.
    s.demo
        .run_issue_cmd(&second_issue(&s))
        .arg("--until")
        .arg("intake")
        .assert()
        .success();
}

#[test]
fn a_deleted_checkout_lock_stops_the_holder_before_it_commits() {
    let s = Scenario::new(json!({}), "");
    let lock = s.demo.repo.join(".git/spec-orchestrate.lock");
    // The implementer of T001 waits while the lock is deleted from outside the run (the agents'
    // own uid may not touch `.git`; a person or another process may).
    std::fs::write(
        s.dir.join("scenario.json"),
        json!({ "hold": { "T001": s.dir } }).to_string(),
    )
    .unwrap();
    let mut run = s.run_cmd();
    run.timeout(std::time::Duration::from_secs(300));
    let holder = std::thread::spawn(move || run.output());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(240);
    while !s.dir.join("T001.started").exists() {
        assert!(
            std::time::Instant::now() < deadline && !holder.is_finished(),
            "the implementer of T001 never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::fs::remove_file(&lock).expect("the run holds the lock while T001 is implemented");
    std::fs::write(s.dir.join("T001.go"), "").unwrap();
    let out = holder.join().unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "the holder stopped: {stderr}");
    assert!(stderr.contains("deleted or replaced"), "{stderr}");
    assert!(stderr.contains("resume"), "says how to go on: {stderr}");
    let subjects = safe_git(&s.demo.repo, &["log", "--format=%s"]);
    assert!(!subjects.contains("T001"), "nothing committed: {subjects}");

    // The scenario no longer deletes it: resume commits T001 exactly once.
    std::fs::write(s.dir.join("scenario.json"), "{}").unwrap();
    s.demo.cmd("resume").assert().success();
    let subjects = safe_git(&s.demo.repo, &["log", "--format=%s"]);
    assert_eq!(
        subjects.lines().filter(|l| l.starts_with("T001")).count(),
        1,
        "{subjects}"
    );
}
