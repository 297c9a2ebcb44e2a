//! The whole pipeline through the real binary on the demo repository: the happy path, a kill in
//! the middle of an implementer call, manual approval, and the small commands around a run.

use std::time::{Duration, Instant};

use crate::support::{Demo, JSON_PROGRESS, bin, events_of, git};
use spec_orchestrate::events::Event;
use spec_orchestrate::state::{State, TaskStatus};
use spec_orchestrate::types::kinds::{BlockerCategory, Decision, Gate, WaitKind};
use spec_orchestrate::types::{Phase, Signal};

const NINE: [&str; 9] = [
    "intake",
    "spec_generate",
    "inspect",
    "spec_review",
    "approval",
    "implement",
    "evaluate",
    "pr",
    "retrospective",
];

fn phases(state: &State) -> Vec<String> {
    state
        .completed_phases
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The task commits' subjects, sorted. Read with `safe.directory=*`: after a run killed by
/// SIGKILL the working tree stays lent to the agents' uid until the next command in it gives it
/// back (docs/security.md), so git, run as root, would call the repository dubious.
fn task_commits(demo: &Demo) -> Vec<String> {
    let mut git = std::process::Command::new("git");
    git.args(["-c", "safe.directory=*"]);
    let mut subjects: Vec<String> =
        crate::support::git_with(git, &demo.repo, &["log", "--format=%s"])
            .lines()
            .filter(|s| s.starts_with('T'))
            .map(str::to_string)
            .collect();
    subjects.sort();
    subjects
}

#[test]
fn demo_command_runs_all_nine_phases_and_prints_the_pr_body() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("demo");
    let out = bin().arg("demo").arg("--dir").arg(&root).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let body_path = root.join("repo/.specs/add-a-dark-mode-toggle/pr-body.md");
    assert!(
        stdout.contains(&body_path.display().to_string()),
        "demo prints where pr-body.md is: {stdout}"
    );
    assert!(stdout.contains("| File | Bytes | sha256 |"), "{stdout}");
    let state = spec_orchestrate::state::store::load_file(
        &root.join("repo/.specs/add-a-dark-mode-toggle/pipeline-state.json"),
    )
    .unwrap();
    assert_eq!(phases(&state), NINE);
    assert_eq!(state.phase(), Phase::Done);
}

#[test]
fn demo_stall_example_shows_s1_the_reviewer_swap_and_the_draft_landing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("demo");
    let started = Instant::now();
    let out = bin()
        .arg("demo")
        .arg("--example")
        .arg("stall")
        .arg("--dir")
        .arg(&root)
        .assert()
        .success();
    eprintln!("stall demo took {:?}", started.elapsed());
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let feature = root.join("repo/.specs/follow-the-system-theme");
    crate::support::assert_contains_all(
        &stdout,
        &[
            "Stall handling:",
            "spec_review S1 after round 3 → swap",
            "spec_review S1 after round 6 → draft",
        ],
    );
    let state =
        spec_orchestrate::state::store::load_file(&feature.join("pipeline-state.json")).unwrap();
    let rounds = &state.rounds.spec_review;
    assert_eq!(rounds.len(), 6);
    let fp = rounds[0].fingerprints[0].as_str();
    for r in rounds {
        assert_eq!(r.gate, Gate::Fail);
        assert_eq!(r.fingerprints, [fp], "the one finding, every round");
    }
    assert_eq!(rounds[3].reviewer, "implementer", "the swapped-in reviewer");
    let arbs = &state.arbitrations;
    assert_eq!(arbs.len(), 2);
    assert_eq!(
        (
            arbs[0].signal,
            arbs[0].decision,
            arbs[0].from.as_ref().map(|a| a.as_str()),
            arbs[0].to.as_ref().map(|a| a.as_str())
        ),
        (
            Signal::S1,
            Decision::Swap,
            Some("reviewer"),
            Some("implementer")
        )
    );
    assert_eq!(arbs[1].signal, Signal::S1);
    assert_eq!(arbs[1].decision, Decision::Draft);
    assert!(crate::support::pr_draft(&state));
    assert!(
        state.tasks.is_empty(),
        "nothing was built on a stalled spec"
    );
    let body = std::fs::read_to_string(feature.join("pr-body.md")).unwrap();
    let unresolved = body
        .split("### Unresolved")
        .nth(1)
        .expect("Unresolved section");
    crate::support::assert_contains_all(unresolved, &[fp, "critical", "prefers-color-scheme"]);
    assert!(body.contains("draft — not verified as mergeable"), "{body}");
}

#[test]
fn demo_issue_goes_from_spec_to_ready_pr_with_one_review_send_back() {
    let demo = Demo::new();
    demo.run_cmd().assert().success();
    let state = demo.state();
    assert_eq!(phases(&state), NINE);

    let rounds = &state.rounds.spec_review;
    let gates: Vec<Gate> = rounds.iter().map(|r| r.gate).collect();
    assert_eq!(
        gates,
        [Gate::Fail, Gate::Pass],
        "the first review sends the spec back once"
    );
    assert_eq!(rounds[0].critical, 1);
    assert_eq!(rounds[0].fingerprints.len(), 1);

    // One commit per task, each task done with its commit recorded.
    let commits = task_commits(&demo);
    assert_eq!(commits.len(), 3, "{commits:?}");
    for (c, id) in commits.iter().zip(["T001", "T002", "T003"]) {
        assert!(c.starts_with(&format!("{id}: ")), "{c}");
    }
    for t in &state.tasks {
        assert_eq!(t.status, TaskStatus::Done);
        assert_eq!(t.implementer, "implementer");
        assert_eq!(t.reviewer, "reviewer");
        let sha = t.commit.as_ref().expect("a done task records its commit");
        let subject = git(&demo.repo, &["log", "-1", "--format=%s", sha.as_str()]);
        assert!(subject.starts_with(&t.id), "{subject}");
    }
    // The checkboxes are ticked in the committed tasks.md.
    let tasks_md = git(
        &demo.repo,
        &["show", "HEAD:.specs/add-a-dark-mode-toggle/tasks.md"],
    );
    for id in ["T001", "T002", "T003"] {
        assert!(tasks_md.contains(&format!("- [x] {id}")), "{id} ticked");
    }
    // Evidence is never committed.
    let tracked = git(&demo.repo, &["ls-files"]);
    assert!(!tracked.contains("evidence/"), "{tracked}");
    assert!(!tracked.contains("pipeline-state.json"), "{tracked}");

    let body = std::fs::read_to_string(demo.feature_dir().join("pr-body.md")).unwrap();
    for heading in [
        "### Adversarial review history",
        "| Round | Reviewer | Critical | Improvement | Minor | Fix required | Gate |",
        "### Acceptance evidence",
        "| Case | Requirement | Method | Verdict | Evidence |",
        "#### Evidence manifest",
        "<!-- spec-orchestrate:manifest -->",
        "### Usage",
    ] {
        assert!(body.contains(heading), "pr-body lacks {heading}:\n{body}");
    }
    assert!(body.contains("ready for review"), "{body}");
    assert!(
        !body.contains("### Unresolved"),
        "a ready PR lists nothing unresolved"
    );
    // Every manifest row in the body is the real file's hash.
    let evaluate: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(demo.feature_dir().join("evaluate-1.json")).unwrap(),
    )
    .unwrap();
    let rows = evaluate["manifest"].as_array().unwrap();
    let files = std::fs::read_dir(demo.feature_dir().join("evidence/1"))
        .unwrap()
        .count();
    assert_eq!(
        rows.len(),
        files,
        "one row per evidence file (logs, excerpts, screenshots)"
    );
    assert!(rows.len() >= 8, "{rows:?}");
    for row in rows {
        let path = demo.feature_dir().join(row["path"].as_str().unwrap());
        let bytes = std::fs::read(&path).unwrap();
        use sha2::Digest;
        let sha = hex::encode(sha2::Sha256::digest(&bytes));
        assert_eq!(row["sha256"].as_str().unwrap(), sha);
        let line = format!("{sha}  {}  {}", bytes.len(), row["path"].as_str().unwrap());
        assert!(
            body.contains(&line),
            "pr-body's manifest block lists `{line}`"
        );
    }
    let retro = std::fs::read_to_string(demo.feature_dir().join("retrospective.md")).unwrap();
    assert!(retro.contains("| spec_review | 2 |"), "{retro}");
}

#[test]
fn sigkill_during_an_implementer_call_then_resume_finishes_without_duplicates() {
    let demo = Demo::new();
    // The implementer (the agents' uid, as root) creates the marker: a directory it may write.
    let marks = demo.tmp.path().join("marks");
    crate::support::agent_writable(&marks);
    let marker = marks.join("slow-started");
    let config = demo.config().replace(
        "implementer: { kind: command,",
        &format!(
            "implementer: {{ env: {{ DEMO_SLOW_TASK: T002, DEMO_MARKER: \"{}\" }}, kind: command,",
            marker.display()
        ),
    );
    assert!(
        config.contains("DEMO_SLOW_TASK"),
        "config rewritten: {config}"
    );
    demo.write_config(&config);

    let mut child = demo.spawn_run();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        assert!(
            Instant::now() < deadline,
            "the slow implementer never started"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "run ended before the slow task"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let before = demo.state();
    assert_eq!(before.phase(), Phase::Implement);
    let t2 = before.tasks.iter().find(|t| t.id == "T002").unwrap();
    assert_eq!(
        t2.status,
        TaskStatus::InProgress,
        "the call in flight is recorded as in progress"
    );
    assert_eq!(
        task_commits(&demo).len(),
        1,
        "only T001 was committed before the kill"
    );
    let rounds_before = before.rounds.spec_review.len();

    demo.cmd("resume").assert().success();

    let after = demo.state();
    assert_eq!(phases(&after), NINE);
    assert_eq!(
        after.rounds.spec_review.len(),
        rounds_before,
        "no review round was lost or repeated"
    );
    let commits = task_commits(&demo);
    assert_eq!(
        commits.len(),
        3,
        "one commit per task, no duplicate: {commits:?}"
    );
    let ids: Vec<&str> = commits.iter().map(|c| &c[..4]).collect();
    assert_eq!(ids, ["T001", "T002", "T003"]);
    assert_eq!(after.rounds.evaluate[0].gate, Gate::Pass);
}

#[test]
fn manual_mode_waits_for_approval_then_resumes() {
    let demo = Demo::new();
    let out = demo
        .run_cmd()
        .arg("--mode")
        .arg("manual")
        .env(JSON_PROGRESS.0, JSON_PROGRESS.1)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    // The run ends waiting, and the message tells the person the command that goes on.
    let waiting: Vec<String> = events_of(&stderr)
        .into_iter()
        .filter_map(|e| match e {
            Event::Waiting { message } => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(waiting.len(), 1, "{stderr}");
    assert!(waiting[0].contains("spec-orchestrate approve"), "{stderr}");
    let state = demo.state();
    assert_eq!(state.phase(), Phase::Approval);
    assert_eq!(state.waiting.map(|w| w.kind), Some(WaitKind::Approval));
    assert!(
        task_commits(&demo).is_empty(),
        "nothing is implemented before approval"
    );

    // Resuming without approval waits again; it does not implement.
    demo.cmd("resume").assert().success();
    assert_eq!(demo.state().phase(), Phase::Approval);

    demo.cmd("approve").assert().success();
    assert!(demo.state().approval.is_some(), "the approval is recorded");
    demo.cmd("resume").assert().success();
    let done = demo.state();
    assert_eq!(phases(&done), NINE);
    assert_eq!(task_commits(&demo).len(), 3);

    // Approving something that is not waiting is a clear error.
    let out = demo.cmd("approve").assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("not waiting for approval"), "{stderr}");
}

#[test]
fn step_runs_exactly_one_phase_and_until_stops_after_the_named_phase() {
    let demo = Demo::new();
    crate::support::run_until_ok(demo.run_cmd(), "inspect", &[]);
    let s = demo.state();
    assert_eq!(phases(&s), ["intake", "spec_generate", "inspect"]);
    assert_eq!(s.phase(), Phase::SpecReview);
    demo.cmd("step").assert().success();
    let s = demo.state();
    assert_eq!(s.rounds.spec_review.len(), 1);
    assert_eq!(s.phase(), Phase::SpecGenerate, "round 1 sent the spec back");
    assert_eq!(s.phase_log.len(), 4);
}

#[test]
fn status_reports_rounds_tasks_and_cost_in_text_and_json() {
    let demo = Demo::new();
    demo.run_cmd().assert().success();
    let out = demo.cmd("status").assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("phase:     done"), "{text}");
    assert!(
        text.contains("spec_review round 1: 1 critical, 0 improvement, 0 minor → FAIL"),
        "{text}"
    );
    assert!(text.contains("task T002 [backend] Done"), "{text}");
    assert!(text.contains("cost:"), "{text}");
    let out = bin()
        .arg("status")
        .arg("--json")
        .arg("--repo")
        .arg(&demo.repo)
        .assert()
        .success();
    let json: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(json["phase"], "done");
    // The author agent wrote the spec twice, as e2e_runner converted the browser case's steps
    // once, and reviewed test.md as the acceptance contract in both review rounds.
    assert_eq!(json["usage"]["author"]["calls"], 5);
}

#[test]
fn verify_holds_on_an_untouched_run_and_fails_on_tampered_evidence() {
    let demo = Demo::new();
    demo.run_cmd().assert().success();
    let dir = demo.feature_dir();
    bin().arg("verify").arg(&dir).assert().code(0);
    let log = dir.join("evidence/1/T-A02.log");
    let original = std::fs::read(&log).unwrap();

    std::fs::write(&log, b"tampered").unwrap();
    let out = bin().arg("verify").arg(&dir).assert().code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stdout).contains("T-A02"));

    std::fs::write(&log, b"").unwrap();
    let out = bin().arg("verify").arg(&dir).assert().code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stdout).contains("empty"));

    std::fs::remove_file(&log).unwrap();
    let out = bin().arg("verify").arg(&dir).assert().code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stdout).contains("missing"));

    std::fs::write(&log, original).unwrap();
    bin().arg("verify").arg(&dir).assert().code(0);
}

#[test]
fn init_writes_config_and_workflow_once_and_never_overwrites() {
    let demo = Demo::new();
    std::fs::remove_file(demo.config_path()).unwrap();
    demo.cmd("init").assert().success();
    let config = std::fs::read_to_string(demo.config_path()).unwrap();
    let parsed = spec_orchestrate::config::Config::parse(&config, &demo.config_path()).unwrap();
    let mut defaults = spec_orchestrate::config::Config::default();
    defaults.limits.budget_usd = Some(spec_orchestrate::commands::init::INIT_BUDGET_USD);
    assert_eq!(
        parsed, defaults,
        "init writes the defaults, and a budget so a first run is bounded"
    );
    assert!(
        config.contains("budget_usd: 20 ") && config.contains("spec-orchestrate resume"),
        "the budget is commented: how it is enforced, how to raise it\n{config}"
    );
    let wf = demo.repo.join(".github/workflows/spec-orchestrate.yml");
    let workflow: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&wf).unwrap()).unwrap();
    let phase = &workflow["jobs"]["phase"];
    assert_eq!(phase["permissions"]["contents"], "write");
    assert_eq!(phase["permissions"]["actions"], "write");

    std::fs::write(demo.config_path(), "# mine\n").unwrap();
    let out = demo.cmd("init").assert().success();
    assert_eq!(
        std::fs::read_to_string(demo.config_path()).unwrap(),
        "# mine\n"
    );
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("never overwrites"));
}

#[test]
fn fingerprint_prints_one_line_per_finding_and_rejects_bad_input() {
    let input = r#"{"findings":[{"id":"F1","requirement_id":"REQ-003","severity":"Critical","file":"./Design.md","section":"4. Module  Design","gist":"  Cache has NO eviction "}]}"#;
    let out = bin()
        .arg("fingerprint")
        .arg("-")
        .write_stdin(input)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let line: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(line["id"], "F1");
    // printf 'REQ-003\x1fcritical\x1fdesign.md\x1fmodule design\x1fcache has no eviction' | sha256sum
    assert_eq!(
        line["fingerprint"],
        "2160900ff8c94c565f386f2e2a02b2b8a92370403985354ada011b516539b135"
    );
    bin()
        .arg("fingerprint")
        .arg("-")
        .write_stdin("not json")
        .assert()
        .code(2);
}

#[test]
fn every_command_explains_itself_with_an_example() {
    for cmd in [
        "run",
        "step",
        "resume",
        "status",
        "approve",
        "arbitrate",
        "review",
        "debate",
        "verify",
        "fingerprint",
        "init",
        "demo",
    ] {
        let out = bin().arg(cmd).arg("--help").assert().success();
        let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        assert!(
            text.contains("Example"),
            "{cmd} --help has an example:\n{text}"
        );
        assert!(
            text.contains(&format!("spec-orchestrate {cmd}")),
            "{cmd} example uses the command"
        );
    }
}

#[test]
fn an_issue_file_without_a_title_and_a_dirty_tree_are_clear_errors() {
    let demo = Demo::new();
    let untitled = demo.tmp.path().join("untitled.md");
    std::fs::write(&untitled, "just text\n").unwrap();
    let out = demo.run_issue_cmd(&untitled).assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("untitled.md") && stderr.contains("# "),
        "{stderr}"
    );

    std::fs::write(demo.repo.join("index.html"), "changed by hand").unwrap();
    let out = demo.run_cmd().assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("uncommitted changes") && stderr.contains("index.html"),
        "{stderr}"
    );
}

#[test]
fn a_reviewer_that_edits_the_spec_is_a_sandbox_violation_undone_and_swapped() {
    let demo = Demo::new();
    let config = demo
        .config_with_script_agent(
            "evil",
            &format!(
                "#!/bin/sh\necho 'EVIL EDIT' >> .specs/add-a-dark-mode-toggle/design.md\nexec python3 {}/reviewer.py\n",
                demo.agents().display()
            ),
            "implementer",
        )
        .replace("spec_reviewer: reviewer", "spec_reviewer: evil");
    demo.write_config(&config);
    demo.run_cmd().assert().success();

    let state = demo.state();
    let violation = BlockerCategory::SandboxViolation;
    let violations = crate::support::failures_in(&state, violation);
    assert_eq!(
        violations.len(),
        2,
        "caught on the call and on its one retry"
    );
    assert_eq!(violations[0].agent, "evil");
    let design = std::fs::read_to_string(demo.feature_dir().join("design.md")).unwrap();
    assert!(
        !design.contains("EVIL EDIT"),
        "the reviewer's edit was undone"
    );
    crate::support::assert_first_review_failed(&state, "sandbox_violation");
    let arb = &state.arbitrations[0];
    assert_eq!(arb.signal, Signal::AgentFailure);
    assert_eq!(arb.decision, Decision::Swap);
    assert_eq!(arb.from.as_ref().unwrap(), "evil");
    assert_eq!(arb.to.as_ref().unwrap(), "implementer");
    assert_eq!(phases(&state), NINE);
    let body = std::fs::read_to_string(demo.feature_dir().join("pr-body.md")).unwrap();
    assert!(
        body.contains("| spec_review | AGENT_FAILURE | 1 | swap | evil | implementer |"),
        "{body}"
    );
}
