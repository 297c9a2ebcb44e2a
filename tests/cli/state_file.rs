//! `pipeline-state.json` (docs/state.md): the documented field names, round-trips, atomic saves,
//! the single-writer lock, refusal of newer schema versions, and corrupted files reported with
//! their path and left byte-for-byte untouched.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use spec_orchestrate::state::store::StateStore;
use spec_orchestrate::state::{self, State};
use spec_orchestrate::types::Phase;

use crate::support::{self, Demo};

/// A state with every field populated and deterministic values.
fn full_state_json() -> Value {
    let fp = |c: char| c.to_string().repeat(64);
    let mut state = json!({
        "schema_version": 2,
        "feature": "dark-mode-toggle",
        "run_id": "2026-11-29T22:00:00Z-a1b2c3d4",
        "mode": "manual",
        "issue": {
            "number": 42,
            "title": "Dark mode toggle",
            "url": "https://github.com/acme/notes/issues/42",
            "body": "As a user I want a dark mode.",
            "labels": ["spec-orchestrate", "ui"]
        },
        "phase": "evaluate",
        "completed_phases": ["intake", "spec_generate", "inspect", "spec_review", "approval", "implement"],
        "phase_log": [
            {"phase": "intake", "started": "2026-11-29T22:00:00Z", "ended": "2026-11-29T22:00:01Z", "outcome": "ok", "attempt": 1},
            {"phase": "spec_review", "started": "2026-11-29T22:05:00Z", "ended": "2026-11-29T22:06:00Z", "outcome": "send_back", "attempt": 1},
            {"phase": "spec_review", "started": "2026-11-29T22:09:00Z", "ended": "2026-11-29T22:10:00Z", "outcome": "stall:S1", "attempt": 2}
        ],
        "roles": {
            "e2e_runner": "claude", "impl_backend": "codex", "impl_test": "codex", "impl_ui": "claude",
            "judge": "claude", "spec_author": "claude", "spec_reviewer": "claude"
        },
        "role_overrides": [
            {"role": "spec_reviewer", "from": "codex", "to": "claude", "reason": "codex CLI not found", "ts": "2026-11-29T22:00:02Z"}
        ],
        "inspect": {"critical": 0, "warning": 1, "info": 2, "gate": "PASS", "runs": 2},
        "arbitrations": [
            {"phase": "spec_review", "signal": "S1", "decision": "swap", "from": "codex", "to": "claude",
             "note": "same finding three rounds", "ts": "2026-11-29T22:10:00Z", "after_round": 3}
        ],
        "tasks": [
            {"id": "T001", "kind": "ui", "implementer": "claude", "reviewer": "codex", "attempts": 1, "status": "done",
             "commit": "0123456789abcdef0123456789abcdef01234567", "blocker": null, "title": "Toggle button"},
            {"id": "T003", "kind": "backend", "implementer": "codex", "reviewer": "claude", "attempts": 3, "status": "blocked",
             "commit": null, "blocker": "tool_unavailable", "title": "Persist preference"}
        ],
        "branch": {"name": "spec-orchestrate/42-dark-mode-toggle", "head": "89abcdef0123456789abcdef0123456789abcdef"},
        "pr": {"number": 7, "url": "https://github.com/acme/notes/pull/7", "draft": true},
        "usage": {
            "claude": {"input_tokens": 1200, "output_tokens": 340, "usd": 0.25, "calls": 4},
            "codex": {"input_tokens": 900, "output_tokens": 120, "usd": 0.125, "calls": 2}
        },
        "side_effects": [
            {"key": "status-comment", "id": 123},
            {"key": "push", "id": "89abcdef0123456789abcdef0123456789abcdef"}
        ],
        "ts_updated": "2026-11-29T22:30:00Z",
        "approval": {"by": "octocat", "ts": "2026-11-29T22:12:00Z"},
        "waiting": {"kind": "arbitration", "message": "choose how to continue", "choices": ["continue", "swap", "draft", "approve"]},
        "draft_reasons": ["task T003 blocked: tool_unavailable"],
        "agent_failures": [
            {"phase": "spec_review", "role": "spec_reviewer", "agent": "codex", "category": "malformed_output",
             "detail": "no JSON envelope", "ts": "2026-11-29T22:08:00Z"}
        ],
        "base_commit": "fedcba9876543210fedcba9876543210fedcba98",
        "open_findings": [
            {"id": "F1", "requirement_id": "REQ-002", "severity": "critical", "file": "requirement.md",
             "section": "Persistence", "gist": "preference is not persisted", "argument": "reload loses it",
             "suggestion": "store it in localStorage", "fingerprint": fp('a'), "class_key": "security|auth"}
        ],
        "restructure": "Persistence",
        "inspect_history": [[fp('f')], [fp('f'), fp('0')]],
        "config_path": "/repo/ci/pipeline.yml",
        "implement_base": "0123456789abcdef0123456789abcdef01234567"
    });
    state["rounds"] = full_rounds_json();
    // Apart: one literal this deep is past the macro's recursion limit.
    state["disputes"] = json!([
        {"case": "T-A02", "task": "FIX1", "after_round": 1, "by": "codex",
         "argument": "REQ-002 says Saved.; the case expects Saved!",
         "evidence": "$ npm run check T-A02\nSaved.", "reviewer": "claude", "ruling": "confirmed",
         "answer": "the case contradicts REQ-002", "case_hash": fp('9'), "end": "revised",
         "decided_by": "octocat"}
    ]);
    state["waves"] = json!([
        {"number": 1, "started": "2026-11-29T22:14:00Z", "ended": "2026-11-29T22:20:00Z", "wall_ms": 361250,
         "tasks": [
            {"task": "T001", "leg": {"job": "implement (T001)", "run_id": 8109, "attempt": 2},
             "state": "landed", "rerun": true, "wall_ms": 301000,
             "commit": "0123456789abcdef0123456789abcdef01234567"},
            {"task": "T003", "state": "failed", "wall_ms": 359000}
         ]},
        {"number": 2, "started": "2026-11-29T22:21:00Z", "tasks": [{"task": "FIX1", "state": "running"}]}
    ]);
    state
}

/// The `rounds` of [`full_state_json`]: a panel and a failed spec review, an evaluate round with
/// a rubric score, and a finished pull request review round with what it posted.
fn full_rounds_json() -> Value {
    let fp = |c: char| c.to_string().repeat(64);
    json!({
        "spec_review": [
            {"round": 1, "reviewer": "codex", "critical": 1, "improvement": 2, "minor": 0, "fix_required": 3,
             "fingerprints": [fp('a'), fp('b'), fp('c')], "class_keys": ["security|auth", "api|errors", "ux|copy"], "gate": "FAIL",
             "strategy": "panel", "members": ["panel:architect", "panel:paranoid", "e2e_runner"],
             "skipped": ["operator (agent_error: exited with 1)"]},
            {"round": 2, "reviewer": "claude", "critical": 0, "improvement": 0, "minor": 0, "fix_required": 0,
             "fingerprints": [], "class_keys": [], "gate": "FAIL", "failure": "unparseable output twice",
             "strategy": "single"}
        ],
        "evaluate": [
            {"round": 1, "pass": 11, "fail": 2, "blocked": 0, "fingerprints": [fp('d'), fp('e')],
             "class_keys": ["test.md|T-A02", "test.md|T-A05"], "gate": "FAIL",
             "rubric_score": 6.5}
        ],
        "pr_review": [
            {"round": 1, "from": "pull request #7", "status": "finished",
             "items": [{"finding": {"id": "R1.C1", "requirement_id": "", "severity": "critical",
                 "file": "app.js", "section": "line 12", "gist": "Empty list",
                 "argument": "An empty list shows nothing.", "suggestion": "",
                 "fingerprint": fp('9'), "class_key": "app.js|line 12"},
                 "source": "maintainer", "target": "code", "thread": "PRRT_1", "comment_id": 11}],
             "task": "REV1", "swapped": false,
             "answers": [["R1.C1", {"kind": "fixed", "commit": "0123456", "summary": "Shows the empty state."}]],
             "ending": "Every acceptance case passed again with fresh evidence.",
             "posted": {"replies": [{"item": "R1.C1", "thread_root": 11, "reply": 12}],
                        "resolved": ["PRRT_1"], "summary": 13, "done": true}}
        ]
    })
}

fn full_state() -> State {
    serde_json::from_value(full_state_json()).expect("the literal is a valid state")
}

/// The field names documented in docs/state.md, by object path.
const DOCUMENTED_KEYS: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "schema_version",
            "feature",
            "run_id",
            "mode",
            "issue",
            "phase",
            "completed_phases",
            "phase_log",
            "roles",
            "role_overrides",
            "inspect",
            "rounds",
            "arbitrations",
            "tasks",
            "branch",
            "pr",
            "usage",
            "side_effects",
            "ts_updated",
        ],
    ),
    ("/issue", &["number", "title", "url"]),
    (
        "/phase_log/0",
        &["phase", "started", "ended", "outcome", "attempt"],
    ),
    ("/role_overrides/0", &["role", "from", "to", "reason", "ts"]),
    ("/inspect", &["critical", "warning", "info", "gate"]),
    ("/rounds", &["spec_review", "evaluate", "pr_review"]),
    (
        "/rounds/spec_review/0",
        &[
            "round",
            "reviewer",
            "critical",
            "improvement",
            "minor",
            "fix_required",
            "fingerprints",
            "class_keys",
            "gate",
        ],
    ),
    (
        "/rounds/evaluate/0",
        &["round", "pass", "fail", "blocked", "fingerprints", "gate"],
    ),
    (
        "/arbitrations/0",
        &["phase", "signal", "decision", "from", "to", "note", "ts"],
    ),
    (
        "/tasks/0",
        &[
            "id",
            "kind",
            "implementer",
            "reviewer",
            "attempts",
            "status",
            "commit",
        ],
    ),
    (
        "/waves/0",
        &["number", "started", "ended", "wall_ms", "tasks"],
    ),
    (
        "/waves/0/tasks/0",
        &["task", "leg", "state", "rerun", "wall_ms", "commit"],
    ),
    ("/waves/0/tasks/0/leg", &["job", "run_id", "attempt"]),
    ("/branch", &["name", "head"]),
    ("/pr", &["number", "url", "draft"]),
    (
        "/usage/claude",
        &["input_tokens", "output_tokens", "usd", "calls"],
    ),
    ("/side_effects/0", &["key", "id"]),
    (
        "/disputes/0",
        &[
            "case",
            "task",
            "after_round",
            "by",
            "argument",
            "reviewer",
            "ruling",
            "end",
        ],
    ),
];

#[test]
fn full_state_serialises_with_the_documented_field_names() {
    let state = full_state();
    let value = serde_json::to_value(&state).expect("serialises");
    for (pointer, keys) in DOCUMENTED_KEYS {
        let object = value
            .pointer(pointer)
            .and_then(Value::as_object)
            .unwrap_or_else(|| panic!("`{pointer}` is not an object in {value:#}"));
        for key in *keys {
            assert!(
                object.contains_key(*key),
                "documented field `{pointer}/{key}` missing"
            );
        }
    }
    // Enum spellings of the contract.
    assert_eq!(value["mode"], "manual");
    assert_eq!(value["phase"], "evaluate");
    assert_eq!(value["completed_phases"][1], "spec_generate");
    assert_eq!(value["inspect"]["gate"], "PASS");
    assert_eq!(value["rounds"]["spec_review"][0]["gate"], "FAIL");
    assert_eq!(value["tasks"][1]["status"], "blocked");
    insta::assert_json_snapshot!("full_state", state);
}

#[test]
fn full_state_round_trips_without_losing_a_field() {
    let literal = full_state_json();
    let state = full_state();
    // Serialising gives back exactly the literal: nothing dropped, renamed or defaulted.
    let value = serde_json::to_value(&state).expect("serialises");
    assert_eq!(value, literal);
    // Through the real file, with the store.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StateStore::open(dir.path()).expect("open");
    let mut saved = state.clone();
    store.save(&mut saved).expect("save");
    let loaded = store.load().expect("load").expect("a state was saved");
    assert_eq!(loaded, saved);
    // `save` stamps the time; every other field is what we built.
    let mut expected = state;
    expected.ts_updated = loaded.ts_updated;
    assert_eq!(loaded, expected);
    assert_eq!(
        loaded.open_findings[0].fingerprint.as_deref(),
        Some("a".repeat(64).as_str()),
        "fingerprints of open findings survive a save and load"
    );
    assert_ne!(
        spec_orchestrate::types::time::format(&loaded.ts_updated),
        "2026-11-29T22:30:00Z",
        "save stamps ts_updated"
    );
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn save_is_atomic_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StateStore::open(dir.path()).expect("open");
    let mut state = full_state();
    store.save(&mut state).expect("first save");
    state.feature = "second".into();
    store.save(&mut state).expect("second save");
    assert_eq!(
        names(dir.path()),
        vec![state::STATE_FILE.to_string(), state::LOCK_FILE.to_string()]
    );
    let text = std::fs::read_to_string(store.path()).expect("read");
    assert!(text.ends_with("}\n"));
    let on_disk: Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(on_disk["feature"], "second");
}

#[test]
fn a_reader_never_sees_a_torn_state_while_it_is_rewritten() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StateStore::open(dir.path()).expect("open");
    let mut state = full_state();
    store.save(&mut state).expect("first save");
    let path = store.path();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        let path = path.clone();
        std::thread::spawn(move || {
            let mut reads = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let text = std::fs::read_to_string(&path).expect("the file always exists");
                let parsed: Result<Value, _> = serde_json::from_str(&text);
                assert!(parsed.is_ok(), "torn read of {} bytes", text.len());
                reads += 1;
            }
            reads
        })
    };
    for i in 0..300 {
        // Alternate between a small and a large document so a non-atomic write would be seen.
        state.draft_reasons = vec!["x".repeat(if i % 2 == 0 { 10 } else { 50_000 })];
        store.save(&mut state).expect("save");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().expect("reader saw only whole documents");
    assert!(reads > 0);
    assert_eq!(
        names(dir.path()),
        vec![state::STATE_FILE.to_string(), state::LOCK_FILE.to_string()]
    );
}

/// A demo repository run to the end of `intake`: a real state written by the binary.
fn demo_after_intake() -> Demo {
    let demo = Demo::new();
    let out = demo
        .run_cmd()
        .arg("--until")
        .arg("intake")
        .output()
        .expect("binary runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    demo
}

fn state_path(demo: &Demo) -> PathBuf {
    demo.feature_dir().join(state::STATE_FILE)
}

#[test]
fn binary_save_leaves_no_temp_file_and_a_loadable_state() {
    let demo = demo_after_intake();
    let leftovers: Vec<String> = names(&demo.feature_dir())
        .into_iter()
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    let state = state::store::load_file(&state_path(&demo)).expect("loads");
    assert_eq!(state.phase(), Phase::SpecGenerate);
    assert_eq!(state.completed_phases, vec![Phase::Intake]);
    assert_eq!(state.schema_version, state::SCHEMA_VERSION);
}

#[test]
fn the_lock_admits_one_writer_and_is_released_on_drop() {
    let demo = demo_after_intake();
    let dir = demo.feature_dir();
    let holder = StateStore::open(&dir).expect("first writer takes the lock");

    let second = StateStore::open(&dir).expect_err("second writer is refused");
    let message = second.to_string();
    assert!(
        message.contains("another spec-orchestrate process"),
        "{message}"
    );
    assert!(
        message.contains(state::LOCK_FILE),
        "names the lock: {message}"
    );

    let before = std::fs::read(state_path(&demo)).expect("read state");
    let out = demo.cmd("resume").output().expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "state error: stderr: {stderr}");
    assert!(
        stderr.contains("another spec-orchestrate process"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&dir.join(state::LOCK_FILE).display().to_string()),
        "names the lock file: {stderr}"
    );
    assert_eq!(
        std::fs::read(state_path(&demo)).expect("read state"),
        before,
        "a refused writer does not touch the state"
    );

    drop(holder);
    let again = StateStore::open(&dir).expect("the lock is free after the holder is dropped");
    drop(again);
    // The binary can take it too: one phase runs and the state moves on.
    let out = demo.cmd("step").output().expect("binary runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state = state::store::load_file(&state_path(&demo)).expect("loads");
    assert!(state.completed_phases.contains(&Phase::SpecGenerate));
}

/// The binary writes compact JSON; a file an older build wrote indented still loads, is carried
/// on by `step` (and rewritten compact), and `status --json` prints the document indented.
#[test]
fn an_indented_state_from_an_older_build_resumes_and_is_rewritten_compact() {
    let demo = demo_after_intake();
    let path = state_path(&demo);
    let compact = std::fs::read_to_string(&path).expect("read state");
    assert_eq!(
        compact.lines().count(),
        1,
        "the binary saves one line of compact JSON"
    );
    let value: Value = serde_json::from_str(&compact).expect("JSON");
    assert_eq!(
        compact.trim_end().len(),
        serde_json::to_string(&value).expect("json").len(),
        "no whitespace between tokens (the same document, compact, has the same length)"
    );
    // As an older build left it: indented.
    let pretty = serde_json::to_string_pretty(&value).expect("json") + "\n";
    std::fs::write(&path, &pretty).expect("write");

    let out = support::bin()
        .args(["status", "--json", "--repo"])
        .arg(&demo.repo)
        .output()
        .expect("binary runs");
    assert_eq!(out.status.code(), Some(0));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.lines().count() > 20, "status --json is indented");
    let shown: Value = serde_json::from_str(&printed).expect("status --json is JSON");
    assert_eq!(shown["phase"], "spec_generate");

    let out = support::bin()
        .args(["step", "--repo"])
        .arg(&demo.repo)
        .output()
        .expect("binary runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = std::fs::read_to_string(&path).expect("read state");
    assert_eq!(after.lines().count(), 1, "rewritten compact");
    let state = state::store::load_file(&path).expect("loads");
    assert_eq!(state.run_id, value["run_id"].as_str().unwrap_or_default());
    assert!(state.completed_phases.contains(&Phase::SpecGenerate));
}

/// Runs the binary with `args` on the demo and returns (exit code, stderr).
fn run_bin(demo: &Demo, args: &[&str]) -> (Option<i32>, String) {
    let out = support::bin()
        .args(args)
        .arg("--repo")
        .arg(&demo.repo)
        .output()
        .expect("binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_newer_schema_version_is_refused() {
    let demo = demo_after_intake();
    let path = state_path(&demo);
    let mut value = demo.state_json();
    value["schema_version"] = json!(99);
    let bytes = serde_json::to_vec_pretty(&value).expect("json");
    std::fs::write(&path, &bytes).expect("write");

    for args in [&["status"][..], &["status", "--json"], &["resume"]] {
        let (code, stderr) = run_bin(&demo, args);
        assert_eq!(code, Some(4), "state error: {args:?}: {stderr}");
        assert!(
            stderr.contains(&path.display().to_string()),
            "{args:?} names the path: {stderr}"
        );
        assert!(stderr.contains("newer"), "{args:?}: {stderr}");
        assert!(
            stderr.contains("99"),
            "{args:?} names the version: {stderr}"
        );
        assert!(
            stderr.contains("upgrade"),
            "{args:?} says what to do: {stderr}"
        );
    }
    assert_eq!(std::fs::read(&path).expect("read"), bytes, "left untouched");
}

#[test]
fn a_truncated_state_is_reported_with_its_path_and_left_untouched() {
    let demo = demo_after_intake();
    let path = state_path(&demo);
    let full = std::fs::read(&path).expect("read");
    let truncated = full[..full.len() / 2].to_vec();
    std::fs::write(&path, &truncated).expect("write");
    let mtime = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .expect("mtime");

    let issue = demo.issue.display().to_string();
    for args in [
        &["status"][..],
        &["resume"],
        &["step"],
        &["run", "--issue", issue.as_str()],
    ] {
        let (code, stderr) = run_bin(&demo, args);
        assert_eq!(code, Some(4), "state error: {args:?}: {stderr}");
        assert!(
            stderr.contains(&path.display().to_string()),
            "{args:?} names the path: {stderr}"
        );
        assert!(stderr.contains("corrupted"), "{args:?}: {stderr}");
        assert!(stderr.contains("not valid JSON"), "{args:?}: {stderr}");
        assert_eq!(
            std::fs::read(&path).expect("read"),
            truncated,
            "{args:?} must leave the corrupted file byte-for-byte unchanged"
        );
    }
    assert_eq!(
        std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .expect("mtime"),
        mtime,
        "not even rewritten with the same bytes"
    );
}

#[test]
fn a_wrong_field_type_names_the_field_path() {
    let demo = demo_after_intake();
    let path = state_path(&demo);
    let good = demo.state_json();
    assert!(good["phase_log"][0].is_object(), "intake logged a phase");

    type Corrupt = fn(&mut Value);
    let cases: [(&str, Corrupt, &str); 3] = [
        (
            "phase_log[0].attempt",
            |v| v["phase_log"][0]["attempt"] = json!("first"),
            "string \"first\"",
        ),
        (
            "issue.title",
            |v| v["issue"]["title"] = json!(42),
            "integer `42`",
        ),
        ("phase", |v| v["phase"] = json!("reviewing"), "`reviewing`"),
    ];
    for (field, corrupt, detail) in cases {
        let mut value = good.clone();
        corrupt(&mut value);
        let bytes = serde_json::to_vec_pretty(&value).expect("json");
        std::fs::write(&path, &bytes).expect("write");

        let err = state::store::load_file(&path).expect_err("refused");
        let message = err.to_string();
        assert!(message.contains(&format!("`{field}`")), "{message}");
        assert!(message.contains(detail), "{message}");

        let (code, stderr) = run_bin(&demo, &["status"]);
        assert_eq!(code, Some(4), "state error: {stderr}");
        assert!(stderr.contains(&path.display().to_string()), "{stderr}");
        assert!(stderr.contains(&format!("`{field}`")), "{stderr}");
        assert_eq!(std::fs::read(&path).expect("read"), bytes, "left untouched");
    }

    // Control: the unmodified document loads, so the failures above are the corruption's.
    std::fs::write(&path, serde_json::to_vec_pretty(&good).expect("json")).expect("write");
    let (code, stderr) = run_bin(&demo, &["status"]);
    assert_eq!(code, Some(0), "{stderr}");
}

/// Times are `DateTime<Utc>` in the code and strings in the file: a state an older build wrote
/// (every time a `…Z` string) loads into typed times and is written back as it was (byte for
/// byte: the `full_state` snapshot), and a
/// time with another offset or fractions (a hand edit) loads as the same instant in UTC.
#[test]
fn times_of_an_older_file_load_typed_and_write_back_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(state::STATE_FILE);
    let old = serde_json::to_string(&full_state_json()).expect("json");
    std::fs::write(&path, &old).expect("write");
    let loaded = state::store::load_file(&path).expect("an older file loads");
    let instant = |s: &str| spec_orchestrate::types::time::parse(s).expect("a time");
    assert_eq!(loaded.phase_log[2].ended, instant("2026-11-29T22:10:00Z"));
    assert_eq!(
        (loaded.phase_log[1].ended - loaded.phase_log[1].started).num_seconds(),
        60
    );
    assert_eq!(loaded.ts_updated, instant("2026-11-29T22:30:00Z"));
    let written = |s: &State| serde_json::to_value(s).expect("json");
    assert_eq!(written(&loaded), full_state_json());

    let edited = old.replace(
        "\"2026-11-29T22:00:02Z\"",
        "\"2026-11-29T23:00:02.900+01:00\"",
    );
    assert_ne!(edited, old, "the fixture holds the time edited here");
    std::fs::write(&path, &edited).expect("write");
    let loaded = state::store::load_file(&path).expect("an offset time loads");
    assert_eq!(loaded.role_overrides[0].ts, instant("2026-11-29T22:00:02Z"));
    assert_eq!(written(&loaded), full_state_json());

    std::fs::write(&path, old.replace("\"2026-11-29T22:00:02Z\"", "\"soon\"")).expect("write");
    let err = state::store::load_file(&path)
        .expect_err("not a time")
        .to_string();
    assert!(
        err.contains("role_overrides[0].ts") && err.contains("`soon`"),
        "{err}"
    );
}

/// A state file whose `side_effects` is the string-keyed bag older builds wrote (every key the
/// Action job used: `budget-idle`, `push`, `base-branch`, `pull-request`, `run:<id>`,
/// `comments-seen`, `status-comment`, and `dispatch`, which this build does not know) loads
/// through the real loader into the typed job record, and is written back byte for byte.
#[test]
fn an_older_bag_shaped_job_record_loads_typed_and_writes_back_unchanged() {
    let mut old = full_state_json();
    old["side_effects"] = json!([
        {"key": "base-branch", "id": "main"},
        {"key": "comments-seen", "id": 40},
        {"key": "status-comment", "id": 9102},
        {"key": "push", "id": "89abcdef0123456789abcdef0123456789abcdef"},
        {"key": "run:8101", "id": {"attempt": 1, "checkpoint": "spec-orchestrate-42-intake-a1",
            "outcome": "ok", "phase": "intake", "run_id": 8101,
            "url": "https://github.com/acme/notes/actions/runs/8101"}},
        {"key": "run:8102", "id": {"attempt": 2, "checkpoint": "spec-orchestrate-42-implement-a2",
            "outcome": "continued (job time budget)", "phase": "implement", "run_id": 8102,
            "url": "https://github.com/acme/notes/actions/runs/8102"}},
        {"key": "budget-idle", "id": 2},
        {"key": "pull-request", "id": 7},
        {"key": "dispatch", "id": {"anything": [1, 2]}}
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(state::STATE_FILE);
    let text = serde_json::to_string(&old).expect("json");
    std::fs::write(&path, &text).expect("write");
    let loaded = state::store::load_file(&path).expect("an older bag-shaped record loads");
    let job = &loaded.job;
    assert_eq!(job.base_branch(), Some("main"));
    assert_eq!(job.comments_seen().map(u64::from), Some(40));
    assert_eq!(job.status_comment().map(u64::from), Some(9102));
    assert_eq!(
        job.pushed(),
        Some("89abcdef0123456789abcdef0123456789abcdef")
    );
    assert_eq!(job.idle_jobs(), 2);
    assert_eq!(job.pull_request(), Some(7.into()));
    let runs: Vec<(u64, String)> = job
        .runs()
        .map(|r| (r.run_id.get(), r.outcome.to_string()))
        .collect();
    assert_eq!(
        runs,
        [
            (8101, "ok".to_string()),
            (8102, "continued (job time budget)".to_string())
        ]
    );
    // The record byte for byte (entries in their order, each `id` as older builds wrote it), and
    // the whole document unchanged.
    let as_older_builds_wrote: Vec<String> = old["side_effects"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| format!("{{\"key\":{},\"id\":{}}}", e["key"], e["id"]))
        .collect();
    assert_eq!(
        serde_json::to_string(&loaded.job).expect("json"),
        format!("[{}]", as_older_builds_wrote.join(","))
    );
    assert_eq!(serde_json::to_value(&loaded).expect("json"), old);
}

/// A checkout of an older build (schema 1) kept its review rounds in `review-rounds.json`
/// beside the state: the loader reads that file once, the rounds are in the state from then on
/// (`rounds.pr_review`, schema 2), and the file is not needed afterwards; a schema 2 state never
/// reads it, and a schema 1 one with a broken file is refused naming that file.
#[test]
fn an_older_checkout_s_review_rounds_file_is_read_once_into_the_state() {
    use spec_orchestrate::state::pr_review::RoundStatus;
    let demo = demo_after_intake();
    let dir = demo.feature_dir();
    let path = state_path(&demo);
    let mut old = demo.state_json();
    old["schema_version"] = json!(1);
    std::fs::write(&path, serde_json::to_vec(&old).unwrap()).unwrap();
    let fp = "a".repeat(64);
    let legacy = json!({"rounds": [{
        "round": 1, "from": "pull request #7", "status": "running",
        "items": [{"finding": {"id": "R1.C1", "severity": "critical", "file": "app.js",
            "section": "line 12", "gist": "Empty list", "argument": "Empty list shows nothing.",
            "fingerprint": fp, "class_key": "app.js|line 12"},
            "source": "maintainer", "target": "code", "thread": "PRRT_1", "comment_id": 11}],
        "task": "REV1", "swapped": false, "ending": "",
        "posted": {"replies": [{"item": "R1.C1", "thread_root": 11, "reply": 12}]}
    }]});
    let record = dir.join("review-rounds.json");
    std::fs::write(&record, serde_json::to_vec_pretty(&legacy).unwrap()).unwrap();

    // `status` reads it through the same loader.
    let out = support::bin()
        .args(["status", "--repo"])
        .arg(&demo.repo)
        .output()
        .expect("binary runs");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("round 1  pull request #7  in flight: 1 comment(s)"),
        "{shown}"
    );

    let store = StateStore::open(&dir).expect("opens");
    let mut loaded = store.load().expect("loads").expect("a state");
    assert_eq!(loaded.schema_version, state::SCHEMA_VERSION);
    let round = &loaded.rounds.pr_review[0];
    assert_eq!(round.status, RoundStatus::Running);
    assert_eq!(round.task.as_deref(), Some("REV1"));
    assert_eq!(round.items[0].finding.fingerprint.as_deref(), Some(&*fp));
    assert_eq!(round.posted.reply_to(11).and_then(|r| r.reply), Some(12));
    store.save(&mut loaded).expect("saves");
    drop(store);

    // The file is not needed afterwards: the state holds the rounds.
    std::fs::remove_file(&record).unwrap();
    let again = state::store::load_file(&path).expect("loads");
    assert_eq!(again.rounds.pr_review, loaded.rounds.pr_review);
    // A file that comes back beside a schema 2 state is never read.
    std::fs::write(&record, "not json").unwrap();
    let still = state::store::load_file(&path).expect("loads");
    assert_eq!(still.rounds.pr_review, loaded.rounds.pr_review);

    // A schema 1 state whose record does not parse is refused naming the record.
    std::fs::write(&path, serde_json::to_vec(&old).unwrap()).unwrap();
    let err = state::store::load_file(&path).expect_err("a broken record");
    let message = err.to_string();
    assert!(message.contains("review-rounds.json"), "{message}");
    assert!(message.contains("not a review-round record"), "{message}");
}
