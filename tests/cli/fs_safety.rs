//! Writes and reads in directories agents and test commands can touch: planted symlinks are never
//! followed, FIFOs and devices never block, stale temp files never reach a commit, and the
//! messages about a broken state or evidence directory say what is wrong.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::support::{JSON_PROGRESS, Scenario, events_of, git, verify, warnings};
use spec_orchestrate::types::kinds::BlockerCategory;

/// Every call is bounded: a regression that blocks on a FIFO fails the test instead of hanging.
const LIMIT: Duration = Duration::from_secs(180);

/// The hostile agent's own directory outside the checkout, where it makes the victims its links
/// point at: as root the agents run as their own uid, which may write there (as it may write
/// `/tmp`), so the victims are the planter's, and only the orchestrator could write through.
fn outside() -> tempfile::TempDir {
    crate::support::tempdir()
}

/// The hostile scenario: the implementer plants links (see `plant_fs.py`) into `outside`.
fn hostile(check: Option<&str>) -> (Scenario, tempfile::TempDir) {
    let outside = outside();
    let mut plant = json!({"outside": outside.path()});
    if let Some(c) = check {
        plant["check"] = json!(c);
    }
    let s = Scenario::new(json!({"plant_fs": plant}), "");
    (s, outside)
}

/// Every victim file in `outside` still holds what the planter wrote.
fn assert_untouched(outside: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(outside).unwrap() {
        let p = e.unwrap().path();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "untouched",
            "{} was written through a planted link",
            p.display()
        );
        n += 1;
    }
    n
}

fn run(s: &Scenario) -> (Option<i32>, String) {
    let out = s.run_cmd().timeout(LIMIT).output().expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn links_planted_at_temp_names_and_in_the_evidence_directory_are_never_written_through() {
    let (s, outside) = hostile(None);
    let (code, stderr) = run(&s);
    assert_eq!(code, Some(0), "the run is ready\n{stderr}");
    // Victims for both temp names and the evidence names exist, and none was written.
    assert!(assert_untouched(outside.path()) >= 5);
    let dir = s.demo.feature_dir();
    let state = std::fs::symlink_metadata(dir.join("pipeline-state.json")).unwrap();
    assert!(state.file_type().is_file(), "the state is a regular file");
    assert!(
        std::fs::symlink_metadata(dir.join("tasks.md"))
            .unwrap()
            .file_type()
            .is_file()
    );
    assert!(
        std::fs::read_to_string(dir.join("tasks.md"))
            .unwrap()
            .contains("- [x] T001"),
        "tasks.md was ticked in place"
    );
    // The round's evidence directory was made fresh: the links made ahead are gone and every
    // case's log is the orchestrator's own file.
    for n in 1..=3 {
        let log = dir.join(format!("evidence/1/T-A0{n}.log"));
        let meta = std::fs::symlink_metadata(&log).unwrap();
        assert!(meta.file_type().is_file(), "{} is a file", log.display());
    }
    assert_eq!(s.state().rounds.evaluate[0].pass, 3, "{:?}", s.state());
}

#[test]
fn a_test_command_that_plants_links_at_other_cases_evidence_blocks_them_and_writes_nothing_outside()
{
    let (s, outside) = hostile(Some("evidence"));
    let (code, stderr) = run(&s);
    assert!(code.is_some(), "the run ended\n{stderr}");
    assert!(assert_untouched(outside.path()) >= 5);
    let result: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(s.demo.feature_dir().join("evaluate-1.json")).unwrap(),
    )
    .unwrap();
    for case in result["cases"].as_array().unwrap() {
        assert_eq!(case["verdict"], "BLOCKED", "{case}");
        let detail = case["detail"].as_str().unwrap();
        assert!(detail.contains("is a symlink"), "{detail}");
    }
}

#[test]
fn a_fifo_at_an_evidence_path_does_not_hang_evaluate_or_verify() {
    let (s, outside) = hostile(Some("fifo"));
    let (code, stderr) = run(&s);
    assert!(code.is_some(), "the run ended\n{stderr}");
    assert_untouched(outside.path());
    let dir = s.demo.feature_dir();
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("evaluate-1.json")).unwrap())
            .unwrap();
    let detail = result["cases"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("a FIFO"), "{detail}");
    // verify names the FIFOs (entries the manifest does not hold) and ends.
    let (code, out) = verify(&dir);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("evidence/1/T-A02.log: a FIFO appeared in the evidence directory"),
        "{out}"
    );
}

#[test]
fn a_reviewer_that_links_a_spec_file_outside_and_plants_a_fifo_is_undone_without_writing_through() {
    let outside = outside();
    let s = Scenario::new(
        json!({"plant_fs": {"outside": outside.path(), "reviewer": true}}),
        "",
    );
    let (code, stderr) = run(&s);
    assert!(code.is_some(), "the run ended\n{stderr}");
    assert_eq!(assert_untouched(outside.path()), 1, "the design.md victim");
    let design = s.demo.feature_dir().join("design.md");
    let meta = std::fs::symlink_metadata(&design).unwrap();
    assert!(
        meta.file_type().is_file(),
        "design.md is put back as a file"
    );
    assert!(
        std::fs::read_to_string(&design)
            .unwrap()
            .contains("Traceability Matrix")
    );
    assert!(
        std::fs::symlink_metadata(s.demo.feature_dir().join("notes.fifo")).is_err(),
        "the planted FIFO is undone"
    );
    let state = s.state();
    let violation =
        |f: &spec_orchestrate::state::AgentFailure| f.category == BlockerCategory::SandboxViolation;
    assert!(state.agent_failures.iter().any(violation), "{state:?}");
}

/// A finished run whose round-1 evidence the tests tamper with.
fn finished() -> (Scenario, PathBuf) {
    let s = Scenario::new(json!({}), "");
    let (code, stderr) = run(&s);
    assert_eq!(code, Some(0), "{stderr}");
    let dir = s.demo.feature_dir();
    assert_eq!(verify(&dir).0, Some(0), "an untouched run verifies");
    (s, dir)
}

#[test]
fn verify_reports_every_added_removed_or_changed_entry_whatever_its_type() {
    let (_s, dir) = finished();
    let log = dir.join("evidence/1/T-A01.log");
    let original = std::fs::read(&log).unwrap();
    let mkfifo = |p: &Path| {
        assert!(
            std::process::Command::new("mkfifo")
                .arg(p)
                .status()
                .unwrap()
                .success()
        )
    };

    // A symlink to identical content is a type change, in both checks, not OK.
    let copy = dir.join("copy.log");
    std::fs::write(&copy, &original).unwrap();
    std::fs::remove_file(&log).unwrap();
    symlink(&copy, &log).unwrap();
    let (code, out) = verify(&dir);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "FAIL T-A01 evidence/1/T-A01.log: type changed: was a regular file, now a symlink"
        ),
        "{out}"
    );
    assert!(!out.contains("missing"), "one message, not two: {out}");

    // A symlink to a device and a FIFO in place of evidence: reported, no hang.
    std::fs::remove_file(&log).unwrap();
    symlink("/dev/zero", &log).unwrap();
    let (code, out) = verify(&dir);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("now a symlink"), "{out}");
    std::fs::remove_file(&log).unwrap();
    mkfifo(&log);
    let (code, out) = verify(&dir);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("type changed: was a regular file, now a FIFO"),
        "{out}"
    );
    std::fs::remove_file(&log).unwrap();
    std::fs::write(&log, &original).unwrap();
    assert_eq!(verify(&dir).0, Some(0));

    // Entries added after the manifest, whatever their type.
    let round = dir.join("evidence/1");
    symlink("/etc/hostname", round.join("extra-link")).unwrap();
    mkfifo(&round.join("extra-fifo"));
    std::fs::create_dir(round.join("extra-dir")).unwrap();
    let (code, out) = verify(&dir);
    assert_eq!(code, Some(1), "{out}");
    for line in [
        "CHANGED - evidence/1/extra-link: a symlink appeared in the evidence directory",
        "CHANGED - evidence/1/extra-fifo: a FIFO appeared in the evidence directory",
        "CHANGED - evidence/1/extra-dir: a directory appeared in the evidence directory",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
}

#[test]
fn a_stale_temp_file_of_a_killed_save_is_swept_and_never_committed() {
    let s = Scenario::new(json!({}), "");
    // What killed saves leave in the feature directory: one long ago (stale), and one that
    // looks like a save in progress in another process (fresh, so it is left alone).
    let dir = s.demo.feature_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let stale = dir.join(".tasks.md.tmp-4242");
    std::fs::write(&stale, "half a save").unwrap();
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let fresh = dir.join(".design.md.tmp-abcdef");
    std::fs::write(&fresh, "in flight").unwrap();
    let out = s
        .run_cmd()
        .env(JSON_PROGRESS.0, JSON_PROGRESS.1)
        .timeout(LIMIT)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stale.exists(), "the stale temp file was swept");
    let events = events_of(&stderr);
    assert!(
        warnings(&events).iter().any(|w| w.starts_with(&format!(
            "removed {}, the temp file of a save that was killed half-way",
            stale.display()
        ))),
        "the sweep is reported as a warning event\n{stderr}"
    );
    assert!(fresh.exists(), "a fresh temp file is left alone");
    // The approval commit took the spec directory, and every task commit its files: no temp
    // file is in any of them.
    let committed = git(&s.demo.repo, &["log", "--name-only", "--format="]);
    assert!(committed.contains("design.md"), "{committed}");
    assert!(!committed.contains(".tmp-"), "{committed}");
}

#[test]
fn a_binary_or_linked_state_file_and_verify_of_a_wrong_directory_say_what_is_wrong() {
    let (s, dir) = finished();
    let state = dir.join("pipeline-state.json");
    let good = std::fs::read(&state).unwrap();
    let status = || {
        let out = s
            .demo
            .cmd("status")
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    std::fs::write(&state, b"\x89PNG\r\n\x1a\n\xff\xfe binary").unwrap();
    let (code, err) = status();
    assert_ne!(code, Some(0));
    assert!(err.contains("is corrupted: not text"), "{err}");
    assert!(err.contains("restore it from the checkpoint"), "{err}");
    assert!(!err.contains("stream did not contain valid UTF-8"), "{err}");

    std::fs::remove_file(&state).unwrap();
    symlink(dir.join("gone.json"), &state).unwrap();
    let (code, err) = status();
    assert_ne!(code, Some(0));
    assert!(err.contains("is a symlink to"), "{err}");
    assert!(err.contains("which does not exist"), "{err}");
    assert!(!err.contains("no run found"), "{err}");
    std::fs::remove_file(&state).unwrap();
    std::fs::write(&state, good).unwrap();

    let (code, out) = verify(Path::new("/etc"));
    assert_ne!(code, Some(0));
    assert!(out.contains(".specs/<feature>"), "{out}");
}
