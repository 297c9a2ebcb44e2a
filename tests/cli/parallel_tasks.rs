//! Tasks in parallel (docs/phases.md#tasks-in-parallel): the ready tasks of `tasks.md` run at
//! once, each in its own worktree, and land on the work branch in order; a change that no longer
//! applies runs again on top; shared target files serialise; `parallel_tasks: 1` is the old
//! sequence; a run killed mid-wave leaves trees the next run removes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use spec_orchestrate::events::Event;
use spec_orchestrate::state::{AgentFailure, CallRecord, TaskStatus};
use spec_orchestrate::types::ids::TaskId;
use spec_orchestrate::types::kinds::WaveTaskState;
use spec_orchestrate::types::kinds::{BlockerCategory, CallRole};
use spec_orchestrate::types::{Phase, Role};

use crate::support::{JSON_PROGRESS, Scenario, agent_writable, bin, events_of, git, git_with};

/// How long each scripted implementer works.
const SLEEP: f64 = 4.0;

/// A tasks.md of independent tasks `(id, files)`; T001 names every requirement.
fn tasks_md(tasks: &[(&str, &str)]) -> String {
    let mut text = String::from("# Tasks\n\n## Phase 1\n");
    for (id, files) in tasks {
        let reqs = if *id == "T001" {
            "REQ-001, REQ-002, REQ-003"
        } else {
            "REQ-001"
        };
        text.push_str(&format!(
            "- [ ] {id}: Task {id}\n  - kind: backend\n  - requirements: {reqs}\n  - depends: none\n  - files: {files}\n  - done: it is there\n"
        ));
    }
    text
}

/// A scenario with `tasks`, every implementer sleeping `sleep` s and writing `writes`, and
/// `extra` configuration; run until approval.
fn approved(tasks: &[(&str, &str)], sleep: f64, writes: Value, extra: &str) -> Scenario {
    let s = Scenario::new(
        json!({"tasks": tasks_md(tasks), "task_sleep": sleep, "task_writes": writes}),
        extra,
    );
    let out = s.run_until("approval", Duration::from_secs(300));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s
}

/// `step` (the implement phase) with JSON progress; its progress events and how long it took.
fn implement(s: &Scenario) -> (Vec<Event>, Duration) {
    let started = Instant::now();
    let out = bin()
        .arg("step")
        .arg("--repo")
        .arg(&s.demo.repo)
        .env(JSON_PROGRESS.0, JSON_PROGRESS.1)
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        s.state().completed_phases.last(),
        Some(&Phase::Implement),
        "{stderr}"
    );
    (events_of(&stderr), took)
}

/// The task commits on the work branch, oldest first: (subject, sha).
fn task_commits(repo: &Path) -> Vec<(String, String)> {
    let mut g = std::process::Command::new("git");
    g.args(["-c", "safe.directory=*"]);
    let mut out: Vec<(String, String)> = git_with(g, repo, &["log", "--format=%H %s"])
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, s)| s.starts_with('T'))
        .map(|(h, s)| (s.to_string(), h.to_string()))
        .collect();
    out.reverse();
    out
}

fn ids(commits: &[(String, String)]) -> Vec<String> {
    commits.iter().map(|(s, _)| s[..4].to_string()).collect()
}

/// Every implementer call: (task, workdir, start, end).
fn calls(s: &Scenario) -> Vec<(String, PathBuf, f64, f64)> {
    std::fs::read_to_string(s.dir.join("timing.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("task").is_some())
        .map(|v| {
            (
                v["task"].as_str().unwrap().to_string(),
                PathBuf::from(v["workdir"].as_str().unwrap()),
                v["start"].as_f64().unwrap(),
                v["end"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// The task trees' directory and the task branches left in the repository.
fn leftovers(repo: &Path) -> (bool, String, String) {
    let trees = repo.join(".git/spec-orchestrate/trees");
    let listed = std::fs::read_dir(&trees)
        .map(|d| d.count() > 0)
        .unwrap_or(false);
    let mut g = std::process::Command::new("git");
    g.args(["-c", "safe.directory=*"]);
    let branches = git_with(g, repo, &["branch", "--list", "spec-orchestrate-task/*"]);
    let mut g = std::process::Command::new("git");
    g.args(["-c", "safe.directory=*"]);
    let worktrees = git_with(g, repo, &["worktree", "list", "--porcelain"]);
    (listed, branches, worktrees)
}

#[test]
fn four_independent_tasks_run_at_once_in_their_own_worktrees_and_land_in_order() {
    let four = [
        ("T001", "out/T001.txt"),
        ("T002", "out/T002.txt"),
        ("T003", "out/T003.txt"),
        ("T004", "out/T004.txt"),
    ];
    let writes = json!({
        "T001": {"out/T001.txt": "one\n"}, "T002": {"out/T002.txt": "two\n"},
        "T003": {"out/T003.txt": "three\n"}, "T004": {"out/T004.txt": "four\n"},
    });
    let s = approved(&four, SLEEP, writes, "");
    let (events, took) = implement(&s);

    // Less than the four sleeps one after the other would take (a behaviour check, not a
    // benchmark: on a loaded two-core machine the reviews and trees took 10.6 s, so the bound
    // sits at what sequential work cannot reach; the overlap below is the exact proof).
    assert!(
        took < Duration::from_secs_f64(4.0 * SLEEP),
        "implement took {took:?} for four tasks of {SLEEP} s each\n{events:#?}"
    );
    let calls = calls(&s);
    assert_eq!(calls.len(), 4, "{calls:?}");
    let last_start = calls.iter().map(|c| c.2).fold(f64::MIN, f64::max);
    let first_end = calls.iter().map(|c| c.3).fold(f64::MAX, f64::min);
    assert!(
        last_start < first_end,
        "the four implementers overlapped: {calls:?}"
    );
    // Each in its own worktree under the git directory, never the checkout.
    let trees = s.demo.repo.join(".git/spec-orchestrate/trees");
    for (task, workdir, _, _) in &calls {
        assert_eq!(workdir, &trees.join(task), "{task} ran in its own tree");
        assert!(
            events.iter().any(|e| matches!(
                e,
                Event::TaskInTree { task: t, tree } if t == task && Path::new(tree) == trees.join(task).as_path()
            )),
            "{events:#?}"
        );
    }
    // Landed in task id order, one commit each, holding its own file and the ticked tasks.md.
    let commits = task_commits(&s.demo.repo);
    assert_eq!(ids(&commits), ["T001", "T002", "T003", "T004"]);
    for (subject, sha) in &commits {
        let files = git(&s.demo.repo, &["show", "--name-only", "--format=", sha]);
        let id = &subject[..4];
        assert!(
            files.contains(&format!("out/{id}.txt")),
            "{subject}: {files}"
        );
        assert!(files.contains("tasks.md"), "{subject}: {files}");
        for other in ["T001", "T002", "T003", "T004"]
            .iter()
            .filter(|o| *o != &id)
        {
            assert!(
                !files.contains(&format!("out/{other}.txt")),
                "{subject}: {files}"
            );
        }
    }
    let tasks = std::fs::read_to_string(s.demo.feature_dir().join("tasks.md")).unwrap();
    assert_eq!(tasks.matches("- [x] T00").count(), 4, "{tasks}");
    let state = s.state();
    for t in &state.tasks {
        assert_eq!(t.status, TaskStatus::Done, "{t:?}");
        assert_eq!(t.attempts, 1, "{t:?}");
    }
    assert_eq!(s.requests_of("task_reviewer").len(), 4);
    // The state records the one wave: its four tasks, each run locally (no leg), landed with
    // its commit and its wall time; the wave's wall time is less than the sum of its tasks'.
    assert_eq!(state.waves.len(), 1, "{:?}", state.waves);
    let wave = &state.waves[0];
    assert_eq!(wave.number, 1);
    let in_wave: Vec<&TaskId> = wave.tasks.iter().map(|t| &t.task).collect();
    assert_eq!(in_wave, ["T001", "T002", "T003", "T004"]);
    for (t, (_, sha)) in wave.tasks.iter().zip(&commits) {
        assert_eq!(t.state, WaveTaskState::Landed, "{t:?}");
        assert_eq!(t.leg, None, "{t:?}");
        assert!(!t.rerun, "{t:?}");
        assert_eq!(t.commit.as_deref(), Some(sha.as_str()), "{t:?}");
        let wall = t.wall_ms.expect("a task's wall time");
        assert!(wall >= (SLEEP * 1000.0) as u64, "{t:?}");
    }
    let wave_ms = wave.wall_ms.expect("the wave's wall time");
    assert!(wave.ended.is_some_and(|e| e >= wave.started), "{wave:?}");
    assert!(wave_ms < wave.tasks_ms(), "at once: {wave:?}");
    assert!(
        wave_ms as u128 <= took.as_millis(),
        "{wave:?} within {took:?}"
    );
    // The trees and their branches are gone.
    let (listed, branches, worktrees) = leftovers(&s.demo.repo);
    assert!(!listed, "no tree is left");
    assert_eq!(branches, "", "no task branch is left");
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
}

#[test]
fn parallel_tasks_1_runs_the_tasks_one_after_the_other_in_the_checkout() {
    let three = [("T001", "a.txt"), ("T002", "b.txt"), ("T003", "c.txt")];
    let s = approved(&three, 0.5, json!({}), "limits:\n  parallel_tasks: 1\n");
    let (events, _) = implement(&s);
    let calls = calls(&s);
    let order: Vec<&str> = calls.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(order, ["T001", "T002", "T003"]);
    for pair in calls.windows(2) {
        assert!(pair[1].2 >= pair[0].3, "one after the other: {calls:?}");
    }
    let repo = std::fs::canonicalize(&s.demo.repo).unwrap();
    for c in &calls {
        assert_eq!(
            std::fs::canonicalize(&c.1).unwrap(),
            repo,
            "in the checkout"
        );
    }
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::TaskInTree { .. } | Event::TaskRerun { .. })),
        "{events:#?}"
    );
    assert_eq!(ids(&task_commits(&s.demo.repo)), ["T001", "T002", "T003"]);
    // Three waves of one task each, in order, each landed locally.
    let waves = s.state().waves;
    let shape: Vec<(u32, Vec<&str>, WaveTaskState)> = waves
        .iter()
        .map(|w| {
            let ids = w.tasks.iter().map(|t| t.task.as_str()).collect();
            (w.number, ids, w.tasks[0].state)
        })
        .collect();
    let landed = WaveTaskState::Landed;
    assert_eq!(
        shape,
        [
            (1, vec!["T001"], landed),
            (2, vec!["T002"], landed),
            (3, vec!["T003"], landed)
        ]
    );
    assert!(
        waves
            .iter()
            .all(|w| !w.is_parallel() && w.wall_ms.is_some())
    );
}

#[test]
fn a_change_that_no_longer_applies_runs_again_on_top_of_the_landed_ones() {
    // Both write shared.txt without saying so in `files:`: they run at once, T001 lands, and
    // T002's change conflicts with it.
    let two = [("T001", "a.txt"), ("T002", "b.txt")];
    let writes =
        json!({"T001": {"shared.txt": "from T001\n"}, "T002": {"shared.txt": "from T002\n"}});
    let s = approved(&two, 1.0, writes, "");
    let (events, _) = implement(&s);
    let reruns: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::TaskRerun { .. }))
        .collect();
    assert_eq!(
        reruns,
        [&Event::TaskRerun {
            task: "T002".into()
        }],
        "{events:#?}"
    );
    let calls = calls(&s);
    let t2: Vec<&(String, PathBuf, f64, f64)> = calls.iter().filter(|c| c.0 == "T002").collect();
    assert_eq!(t2.len(), 2, "T002 ran twice: {calls:?}");
    assert_eq!(
        std::fs::canonicalize(&t2[1].1).unwrap(),
        std::fs::canonicalize(&s.demo.repo).unwrap(),
        "the second run is in the checkout, on top of T001"
    );
    let commits = task_commits(&s.demo.repo);
    assert_eq!(ids(&commits), ["T001", "T002"]);
    assert_eq!(
        std::fs::read_to_string(s.demo.repo.join("shared.txt")).unwrap(),
        "from T002\n"
    );
    let t1_files = git(
        &s.demo.repo,
        &["show", "--name-only", "--format=", &commits[0].1],
    );
    assert!(t1_files.contains("shared.txt"), "{t1_files}");
    let state = s.state();
    assert_eq!(state.tasks[1].status, TaskStatus::Done);
    assert!(git(&s.demo.repo, &["status", "--porcelain", "--", "shared.txt"]).is_empty());
    // The wave records T002 as re-run, then landed with the commit of its second run.
    let t2 = &state.waves[0].tasks[1];
    assert_eq!(
        (t2.task.as_str(), t2.state, t2.rerun),
        ("T002", WaveTaskState::Landed, true)
    );
    assert_eq!(t2.commit.as_deref(), Some(commits[1].1.as_str()));
    assert!(!state.waves[0].tasks[0].rerun);
}

#[test]
fn tasks_sharing_target_files_run_one_after_the_other_and_inspect_says_so() {
    let three = [
        ("T001", "shared.txt"),
        ("T002", "./shared.txt"),
        ("T003", "c.txt"),
    ];
    let s = approved(&three, 1.5, json!({}), "");
    let report =
        std::fs::read_to_string(s.demo.feature_dir().join("inspection-report.md")).unwrap();
    assert!(
        report.contains("T001 and T002 both name shared.txt and neither depends on the other"),
        "{report}"
    );
    implement(&s);
    let calls = calls(&s);
    let at = |id: &str| calls.iter().find(|c| c.0 == id).unwrap().clone();
    let (t1, t2, t3) = (at("T001"), at("T002"), at("T003"));
    assert!(
        t3.2 < t1.3 && t1.2 < t3.3,
        "T001 and T003 overlap: {calls:?}"
    );
    assert!(t2.2 >= t1.3, "T002 starts after T001 ended: {calls:?}");
    assert_eq!(ids(&task_commits(&s.demo.repo)), ["T001", "T003", "T002"]);
}

#[test]
fn a_run_killed_mid_wave_leaves_trees_the_next_run_removes() {
    let marks = crate::support::tempdir();
    agent_writable(marks.path());
    let two = [("T001", "a.txt"), ("T002", "b.txt")];
    let s = Scenario::new(
        json!({"tasks": tasks_md(&two), "hold": {"T002": marks.path()}}),
        "",
    );
    let out = s.run_until("approval", Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(0));
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("spec-orchestrate"))
        .arg("step")
        .arg("--repo")
        .arg(&s.demo.repo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = marks.path().join("T002.started");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !started.exists() {
        assert!(
            Instant::now() < deadline,
            "T002's implementer never started"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (listed, branches, _) = leftovers(&s.demo.repo);
    assert!(listed, "the killed run left its trees");
    assert!(
        branches.contains("spec-orchestrate-task/T002"),
        "{branches}"
    );
    // The held implementer may go on now (its tree is about to go).
    std::fs::write(marks.path().join("T002.go"), "").unwrap();

    implement(&s);
    let (listed, branches, worktrees) = leftovers(&s.demo.repo);
    assert!(!listed, "the next run removed the trees");
    assert_eq!(branches, "");
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    assert_eq!(ids(&task_commits(&s.demo.repo)), ["T001", "T002"]);
    // The killed wave is closed by the next: its tasks stopped, no wall time claimed; the next
    // wave landed both.
    let waves = s.state().waves;
    assert_eq!(waves.len(), 2, "{waves:?}");
    assert!(
        waves[0]
            .tasks
            .iter()
            .all(|t| t.state == WaveTaskState::Stopped),
        "{waves:?}"
    );
    assert_eq!(waves[0].wall_ms, None);
    assert!(
        waves[1]
            .tasks
            .iter()
            .all(|t| t.state == WaveTaskState::Landed && t.commit.is_some()),
        "{waves:?}"
    );
}

#[test]
fn an_agent_of_a_wave_that_writes_the_checkout_is_undone_and_recorded() {
    let two = [("T001", "a.txt"), ("T002", "b.txt")];
    let s = approved(&two, 0.5, json!({}), "");
    // From now on each implementer also writes a file into the checkout (a path outside its own
    // worktree, as an injected agent would).
    let intruder = s.demo.repo.join("intruder.txt");
    let scenario = json!({
        "tasks": tasks_md(&two),
        "stray": {"impl_backend": {intruder.display().to_string(): "planted\n"}},
    });
    std::fs::write(s.dir.join("scenario.json"), scenario.to_string()).unwrap();
    let (events, _) = implement(&s);
    assert!(!intruder.exists(), "undone: {events:#?}");
    let state = s.state();
    let found: Vec<_> = state
        .agent_failures
        .iter()
        .filter(|f| f.detail.contains("outside its task's worktree"))
        .collect();
    assert_eq!(found.len(), 2, "one per implementer of the wave: {found:?}");
    assert!(
        found.iter().all(|f| f.paths == ["intruder.txt"]),
        "{found:?}"
    );
    assert_eq!(ids(&task_commits(&s.demo.repo)), ["T001", "T002"]);
    let in_commits = git(&s.demo.repo, &["log", "--name-only", "--format="]);
    assert!(!in_commits.contains("intruder.txt"), "{in_commits}");
}

/// A `claude` CLI of the implementers: it writes its task's file, waits (T002 longer than the
/// others) and answers; T002's also asks the model API proxy for something that is no model
/// endpoint first (refused there, recorded as a `sandbox_violation` of the call that asked).
const CLAUDE_IMPLEMENTER: &str = r#"#!/usr/bin/env python3
import json, os, re, sys, time, urllib.request, urllib.error
prompt = sys.stdin.read()
task = re.search(r"^Task (T00\d) ", prompt, re.M).group(1)
if task == "T002":
    req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/models",
                                 headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"]})
    try:
        urllib.request.urlopen(req, timeout=30)
    except urllib.error.HTTPError:
        pass
    time.sleep(4)
else:
    time.sleep(0.5)
os.makedirs("out", exist_ok=True)
with open(f"out/{task}.txt", "w") as f:
    f.write(task + "\n")
print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                  "result": "done", "total_cost_usd": 0.0}))
"#;

#[test]
fn each_call_of_a_wave_names_its_task_when_the_tasks_share_their_agents() {
    let four = [
        ("T001", "out/T001.txt"),
        ("T002", "out/T002.txt"),
        ("T003", "out/T003.txt"),
        ("T004", "out/T004.txt"),
    ];
    let s = Scenario::new(json!({"tasks": tasks_md(&four)}), "");
    // Every implementer is the same `claude` agent (and every reviewer `beta`).
    let claude = s.dir.join("bin/claude");
    crate::support::script(&claude, CLAUDE_IMPLEMENTER);
    let config = format!(
        "agents:\n  alpha: {}\n  beta: {}\n  cl: {{ kind: claude-cli, binary: \"{}\", model: claude-sonnet-4-5, opposite: beta, env: {{ ANTHROPIC_API_KEY: \"sk-ant-test-only\" }} }}\n{}",
        crate::support::scenario_agent_entry(&s.dir, "beta", ""),
        crate::support::scenario_agent_entry(&s.dir, "alpha", ""),
        claude.display(),
        crate::support::SCENARIO_ROLES.replace("impl_backend: alpha", "impl_backend: cl"),
    );
    s.demo.write_config(&config);
    let out = s.run_until("approval", Duration::from_secs(300));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (events, _) = implement(&s);
    assert_eq!(
        ids(&task_commits(&s.demo.repo)),
        ["T001", "T002", "T003", "T004"]
    );

    let state = s.state();
    // Every call of implement names its task: one implementation and one review each.
    let calls: Vec<&CallRecord> = state
        .calls
        .iter()
        .filter(|c| c.phase == Phase::Implement)
        .collect();
    for id in ["T001", "T002", "T003", "T004"] {
        let of = |role: CallRole| {
            calls
                .iter()
                .filter(|c| c.task.as_ref().is_some_and(|t| *t == id) && c.role == role)
                .count()
        };
        assert_eq!(of(CallRole::Role(Role::ImplBackend)), 1, "{id}: {calls:?}");
        assert_eq!(of(CallRole::TaskReviewer), 1, "{id}: {calls:?}");
    }
    assert_eq!(calls.len(), 8, "{calls:?}");
    // T002's refused request is T002's: not taken by T001's call of the same agent, which
    // ended first and was recorded while T002's still ran.
    let refused: Vec<&AgentFailure> = state
        .agent_failures
        .iter()
        .filter(|f| f.detail.contains("GET /v1/models"))
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}\n{events:#?}");
    assert!(
        refused[0].task.as_ref().is_some_and(|t| *t == "T002"),
        "{refused:?}"
    );
    assert_eq!(refused[0].agent, "cl", "{refused:?}");
    assert_eq!(
        refused[0].category,
        BlockerCategory::SandboxViolation,
        "{refused:?}"
    );
}
