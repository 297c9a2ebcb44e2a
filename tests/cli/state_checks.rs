//! A state read back from disk is checked before anything uses it: an edited `feature`, a bogus
//! `base_commit`, a phase its completed phases cannot lead to. Each is refused with a message
//! that says the state is inconsistent, which key, and how to recover — and nothing runs.

use serde_json::Value;

use crate::support::{Demo, bin, git};

fn after_intake() -> Demo {
    let demo = Demo::new();
    crate::support::run_until_ok(demo.run_cmd(), "intake", &[]);
    demo
}

/// Edits the state with `edit`, runs `args` and returns (exit code, stderr).
fn run_edited(demo: &Demo, edit: impl FnOnce(&mut Value), args: &[&str]) -> (Option<i32>, String) {
    let path = demo.feature_dir().join("pipeline-state.json");
    let mut state: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut state);
    std::fs::write(&path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
    let out = bin()
        .args(args)
        .arg("--repo")
        .arg(&demo.repo)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_refused(code: Option<i32>, stderr: &str, key: &str) {
    assert_eq!(code, Some(4), "a state error: {stderr}");
    assert!(stderr.contains("is inconsistent"), "{stderr}");
    assert!(
        stderr.contains(&format!("`{key}`")),
        "names {key}: {stderr}"
    );
    assert!(
        stderr.contains("restore the file from the run's checkpoint")
            && stderr.contains("delete the feature directory"),
        "says how to recover: {stderr}"
    );
}

#[test]
fn a_feature_that_climbs_out_of_specs_is_refused_before_git_sees_it() {
    let demo = after_intake();
    let head = git(&demo.repo, &["rev-parse", "HEAD"]);
    let (code, stderr) = run_edited(&demo, |s| s["feature"] = "../../..".into(), &["resume"]);
    assert_refused(code, &stderr, "feature");
    assert!(stderr.contains("../../.."), "{stderr}");
    assert_eq!(
        git(&demo.repo, &["rev-parse", "HEAD"]),
        head,
        "nothing committed"
    );
    let (code, stderr) = run_edited(&demo, |_| {}, &["status"]);
    assert_refused(code, &stderr, "feature");
}

#[test]
fn a_bogus_base_commit_is_named_instead_of_a_raw_git_error() {
    let demo = after_intake();
    let (code, stderr) = run_edited(
        &demo,
        |s| s["base_commit"] = "0123456789abcdef0123456789abcdef01234567".into(),
        &["resume"],
    );
    assert_refused(code, &stderr, "base_commit");
    assert!(
        stderr.contains("not a commit of this repository"),
        "{stderr}"
    );
    assert!(!stderr.contains("fatal:"), "no raw git error: {stderr}");
    // An option smuggled in as a sha never reaches git either.
    let (code, stderr) = run_edited(
        &demo,
        |s| s["base_commit"] = "--output=/tmp/x".into(),
        &["resume"],
    );
    assert_refused(code, &stderr, "base_commit");
    assert!(stderr.contains("is not a commit sha"), "{stderr}");
}

#[test]
fn a_state_edited_to_done_without_completed_phases_is_refused() {
    let demo = after_intake();
    let (code, stderr) = run_edited(
        &demo,
        |s| {
            s["phase"] = "done".into();
            s["completed_phases"] = serde_json::json!([]);
        },
        &["resume"],
    );
    assert_refused(code, &stderr, "phase");
    assert!(stderr.contains("is `done`"), "{stderr}");
    assert!(!stderr.contains("ready for review ()"), "{stderr}");
    let (code, stderr) = run_edited(&demo, |_| {}, &["status"]);
    assert_refused(code, &stderr, "phase");
}
