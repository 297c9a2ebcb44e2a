//! A wave on runners (docs/action-mode.md, "Waves on runners"): the simulated Actions chain runs
//! the written workflow's job graph as GitHub does — the `phase` job, its matrix legs (each a
//! fresh workspace, started at once), the join (`needs`, `if: always()`), job outputs,
//! artifacts per run and attempt, "Re-run failed jobs" — on an issue of four independent tasks.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::actions_sim::{ISSUE, Sim};
use spec_orchestrate::state::State;
use spec_orchestrate::types::kinds::WaveTaskState;

use crate::support::{SCENARIO_ROLES, agent_writable, scenario_agent_entry};

/// How long each scripted implementer works.
const SLEEP: f64 = 3.0;

/// Four independent tasks, each writing its own file.
fn four_tasks() -> String {
    tasks_md(&[
        ("T001", "none"),
        ("T002", "none"),
        ("T003", "none"),
        ("T004", "none"),
    ])
}

/// A tasks.md of `(id, depends)`, each task writing `out/<id>.txt`.
fn tasks_md(tasks: &[(&str, &str)]) -> String {
    let mut text = String::from("# Tasks\n\n## Phase 1\n");
    for (id, depends) in tasks {
        let id = *id;
        let reqs = if id == "T001" {
            "REQ-001, REQ-002, REQ-003"
        } else {
            "REQ-001"
        };
        text.push_str(&format!(
            "- [ ] {id}: Task {id}\n  - kind: backend\n  - requirements: {reqs}\n  - depends: {depends}\n  - files: out/{id}.txt\n  - done: it is there\n"
        ));
    }
    text
}

/// A simulated repository whose agents play the scenario of four independent tasks (T003's
/// implementer waits at `marks` when `hold`), with `limits.parallel_tasks: parallel`.
fn sim_of(parallel: u32, hold: Option<&Path>) -> Sim {
    sim_with(four_tasks(), parallel, hold)
}

/// [`sim_of`] with `tasks` as tasks.md.
fn sim_with(tasks: String, parallel: u32, hold: Option<&Path>) -> Sim {
    sim_full(
        tasks,
        &format!("limits:\n  parallel_tasks: {parallel}\n"),
        hold,
        json!({}),
    )
}

/// A simulated repository whose agents play `tasks` (with `more` scenario keys), `limits` the
/// configuration's limits section.
fn sim_full(tasks: String, limits: &str, hold: Option<&Path>, more: serde_json::Value) -> Sim {
    let mut scenario = json!({
        "tasks": tasks,
        "task_sleep": SLEEP,
        "task_writes": {
            "T001": {"out/T001.txt": "one\n"}, "T002": {"out/T002.txt": "two\n"},
            "T003": {"out/T003.txt": "three\n"}, "T004": {"out/T004.txt": "four\n"},
            "T005": {"out/T005.txt": "five\n"}, "T006": {"out/T006.txt": "six\n"},
        },
    });
    if let Some(marks) = hold {
        scenario["hold"] = json!({"T003": marks});
    }
    for (k, v) in more.as_object().unwrap() {
        scenario[k] = v.clone();
    }
    Sim::new(|_, root| {
        let dir = root.join("scenario");
        agent_writable(&dir);
        std::fs::write(dir.join("scenario.json"), scenario.to_string()).unwrap();
        let spy = root.join("spy.py");
        format!(
            "agents:\n  alpha: {}\n  beta: {}\n{SCENARIO_ROLES}{limits}",
            scenario_agent_entry(&dir, "beta", ""),
            scenario_agent_entry(&dir, "alpha", "")
        )
        .replace(
            "[\"python3\", \"",
            &format!("[\"python3\", \"{}\", \"", spy.display()),
        )
    })
}

/// The task commits on origin's work branch.
fn task_commits(sim: &Sim) -> Vec<String> {
    let branch = sim
        .fake
        .with(|w| {
            w.pulls
                .first()
                .map(|p| p["head"]["ref"].as_str().unwrap().to_string())
        })
        .expect("a pull request");
    sim.branch_log(&branch)
        .into_iter()
        .filter(|s| s.starts_with('T'))
        .collect()
}

/// Every run dispatched, grouped by the run that dispatched it (`parent_run`): one successor
/// each.
fn assert_one_successor_per_run(sim: &Sim) {
    let parents: Vec<String> = sim.fake.with(|w| {
        w.dispatches
            .iter()
            .map(|d| {
                d.inputs["parent_run"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    });
    let mut seen = std::collections::BTreeSet::new();
    for p in &parents {
        assert!(
            seen.insert(p.clone()),
            "run {p} dispatched two successors: {parents:?}"
        );
    }
}

/// Jobs, REST calls and wall time of the chain so far.
fn report(sim: &Sim, label: &str, took: Duration) -> (usize, usize) {
    let jobs = sim.runs.len();
    let calls: usize = sim.runs.iter().map(|r| r.rest_calls).sum();
    let names: Vec<String> = sim
        .runs
        .iter()
        .map(|r| {
            format!(
                "{}#{}a{} {:.1}s {}calls",
                r.job,
                r.run_id,
                r.attempt,
                r.wall.as_secs_f64(),
                r.rest_calls
            )
        })
        .collect();
    eprintln!(
        "matrix report ({label}): {jobs} jobs, {calls} REST calls for issue #{ISSUE}, wall {:.1} s; jobs: {names:?}",
        took.as_secs_f64()
    );
    (jobs, calls)
}

#[test]
fn four_tasks_on_four_legs_a_lost_leg_rerun_and_a_join_rerun_land_each_task_once() {
    let marks = crate::support::tempdir();
    let mut sim = sim_of(4, Some(marks.path()));
    let started = Instant::now();
    label_the_issue(&mut sim);
    // T003's leg is lost mid-task (its implementer is at work) on the first attempt.
    sim.lose_leg_when = Some(("T003".into(), marks.path().join("T003.started")));
    sim.follow_graphs(20);
    let (wave_run, g) = sim
        .graphs
        .iter()
        .find(|(_, g)| !g.wave.is_empty())
        .map(|(r, g)| (*r, g.clone()))
        .expect("a run handed a wave out");
    assert_eq!(g.wave, ["T001", "T002", "T003", "T004"]);
    assert_ne!(g.legs["T003"], 0, "the lost leg failed");
    assert!(
        g.legs
            .iter()
            .filter(|(t, _)| *t != "T003")
            .all(|(_, c)| *c == 0)
    );
    assert_ne!(g.join, Some(0), "the join fails on the missing leg");
    let join_log = sim.runs.iter().rfind(|r| r.job == "join").unwrap();
    assert!(join_log.summary.contains("T003"), "{}", join_log.summary);
    let dispatched = sim.fake.with(|w| w.dispatches.len());
    assert_eq!(
        sim.followed, dispatched,
        "the failed join dispatched nothing"
    );
    let nothing_pushed = sim.fake.with(|w| w.pulls.is_empty());
    assert!(nothing_pushed, "the chain is held at the wave");

    // "Re-run failed jobs": T003's leg and the join, attempt 2.
    std::fs::write(marks.path().join("T003.go"), "").unwrap();
    let g = sim.rerun_failed_jobs(wave_run);
    assert_eq!(g.attempt, 2);
    assert_eq!(g.legs["T003"], 0);
    assert_eq!(g.join, Some(0));
    let rerun: Vec<String> = sim
        .runs
        .iter()
        .filter(|r| r.run_id == wave_run && r.attempt == 2)
        .map(|r| r.job.clone())
        .collect();
    assert_eq!(
        rerun,
        ["implement (T003)", "join"],
        "only the lost leg, then the join"
    );

    // Before the chain goes on: T001's leg run again after its task landed, then the join run
    // again. Neither lands anything twice nor dispatches a second successor.
    let before = sim.fake.with(|w| w.dispatches.len());
    let g = sim.rerun_job(wave_run, Some("T001"));
    assert_eq!((g.legs["T001"], g.join), (0, Some(0)));
    let g = sim.rerun_job(wave_run, None);
    assert_eq!(g.join, Some(0));
    for log in sim
        .runs
        .iter()
        .filter(|r| r.run_id == wave_run && r.attempt >= 3)
    {
        assert!(
            log.summary.contains("lands nothing twice"),
            "{} attempt {}: {}",
            log.job,
            log.attempt,
            log.summary
        );
    }
    assert_eq!(
        sim.fake.with(|w| w.dispatches.len()),
        before,
        "no second successor"
    );
    sim.follow_graphs(20);
    let took = started.elapsed();

    assert_landed_once(&sim, &["T001", "T002", "T003", "T004"]);
    assert_clean(&sim);
    // The legs' results are artifacts of the wave's run, one per leg and attempt.
    let legs: Vec<String> = sim.fake.with(|w| {
        w.artifacts
            .iter()
            .filter(|a| a.run_id == wave_run && a.name.starts_with("spec-orchestrate-leg-"))
            .map(|a| a.name.clone())
            .collect()
    });
    // Three of attempt 1, T003's of attempt 2; T001's leg run again uploaded nothing.
    assert_eq!(legs.len(), 4, "{legs:?}");
    report(&sim, "parallel_tasks: 4, one leg lost and re-run", took);
}

#[test]
fn parallel_tasks_1_keeps_one_job_per_agent_phase_and_no_matrix() {
    let mut sim = sim_of(1, None);
    let started = Instant::now();
    label_the_issue(&mut sim);
    sim.follow_graphs(20);
    let took = started.elapsed();
    assert!(
        sim.graphs.values().all(|g| g.wave.is_empty()),
        "no wave handed out"
    );
    assert!(sim.runs.iter().all(|r| r.job == "phase"));
    assert_landed_once(&sim, &["T001", "T002", "T003", "T004"]);
    report(&sim, "parallel_tasks: 1", took);
}

/// Every implementer call of the scenario: (task, start, end).
fn implementer_calls(sim: &Sim) -> Vec<(String, f64, f64)> {
    std::fs::read_to_string(sim.root.join("scenario/timing.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| {
            (
                v["task"].as_str().unwrap().to_string(),
                v["start"].as_f64().unwrap(),
                v["end"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn four_legs_work_at_once_each_on_its_own_runner_and_the_join_lands_them_in_order() {
    let mut sim = sim_of(4, None);
    let started = Instant::now();
    label_the_issue(&mut sim);
    sim.follow_graphs(20);
    let took = started.elapsed();
    let g = sim
        .graphs
        .values()
        .find(|g| !g.wave.is_empty())
        .expect("a wave handed out")
        .clone();
    assert_eq!(g.attempt, 1);
    assert!(
        g.legs.values().all(|c| *c == 0) && g.join == Some(0),
        "{g:?}"
    );
    // The four implementers overlapped, each in the workspace of its own leg.
    let calls = implementer_calls(&sim);
    assert_eq!(calls.len(), 4, "{calls:?}");
    let last_start = calls.iter().map(|c| c.1).fold(f64::MIN, f64::max);
    let first_end = calls.iter().map(|c| c.2).fold(f64::MAX, f64::min);
    assert!(last_start < first_end, "the legs worked at once: {calls:?}");
    let legs: Vec<&crate::actions_sim::RunLog> = sim
        .runs
        .iter()
        .filter(|r| r.job.starts_with("implement ("))
        .collect();
    assert_eq!(legs.len(), 4);
    let mut workspaces: Vec<&Path> = legs.iter().map(|r| r.workspace.as_path()).collect();
    workspaces.dedup();
    assert_eq!(workspaces.len(), 4, "a runner each");
    assert_landed_once(&sim, &["T001", "T002", "T003", "T004"]);
    assert_clean(&sim);
    // The wave is in the state's record: each task on its leg, landed.
    let state = last_join_state(&sim);
    let wave = state
        .waves
        .iter()
        .find(|w| w.tasks.len() == 4)
        .expect("the handed-out wave is recorded");
    for t in &wave.tasks {
        assert_eq!(t.state, WaveTaskState::Landed, "{wave:?}");
        let leg = t.leg.as_ref().expect("each task ran on a leg");
        assert_eq!(leg.job, format!("implement ({})", t.task), "{wave:?}");
    }
    assert!(state.fanout.is_none(), "the join landed the wave");
    report(&sim, "parallel_tasks: 4, clean", took);
}

#[test]
fn stop_while_a_wave_is_in_flight_cancels_its_legs_the_join_records_it_and_continue_hands_it_out_again()
 {
    let mut sim = sim_of(4, None);
    label_the_issue(&mut sim);
    sim.hold_legs = true;
    sim.follow_graphs(20);
    let wave_run = *sim
        .graphs
        .iter()
        .find(|(_, g)| !g.wave.is_empty())
        .expect("a wave handed out")
        .0;
    // The wave is in flight: the issue's group is free, so a comment's job runs now.
    let stop_run = sim.comment_graph("octocat", "/spec-orchestrate stop");
    let stop = sim.runs.iter().rfind(|r| r.run_id == stop_run).unwrap();
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    assert!(
        stop.summary.contains("its join applies") && stop.summary.contains("was cancelled"),
        "{}",
        stop.summary
    );
    assert_eq!(sim.fake.with(|w| w.cancelled.clone()), [wave_run]);
    let dispatched = sim.fake.with(|w| w.dispatches.len());
    // GitHub starts no pending leg of the cancelled run; the join (`always()`) runs.
    let g = sim.resume_graph(wave_run);
    assert_eq!(g.join, Some(0));
    assert!(
        !sim.runs
            .iter()
            .any(|r| r.run_id == wave_run && r.job.starts_with("implement (")),
        "no leg ran"
    );
    let join = sim.runs.iter().rfind(|r| r.job == "join").unwrap();
    assert!(join.stderr.contains("said stop"), "{}", join.stderr);
    assert_eq!(
        sim.fake.with(|w| w.dispatches.len()),
        dispatched,
        "stopped: no dispatch"
    );
    let comment = sim.fake.with(|w| {
        w.comments
            .iter()
            .map(|(_, c)| c["body"].as_str().unwrap_or_default().to_string())
            .find(|b| b.contains("spec-orchestrate:status"))
            .unwrap()
    });
    assert!(
        comment.contains(&format!("checkpoint={wave_run}")),
        "{comment}"
    );

    // `continue`: the wave whose run completed without landing is handed out afresh.
    let go = sim.comment_graph("octocat", "/spec-orchestrate continue");
    assert!(
        !sim.graphs[&go].wave.is_empty(),
        "the continue job hands the wave out again"
    );
    sim.follow_graphs(20);
    assert_landed_once(&sim, &["T001", "T002", "T003", "T004"]);
    assert_clean(&sim);
}

#[test]
fn the_join_of_a_wave_leaves_the_next_wave_to_the_next_runs_legs() {
    let tasks = tasks_md(&[
        ("T001", "none"),
        ("T002", "none"),
        ("T005", "T001"),
        ("T006", "T002"),
    ]);
    let mut sim = sim_with(tasks, 4, None);
    label_the_issue(&mut sim);
    sim.follow_graphs(20);
    let waves: Vec<Vec<String>> = sim
        .graphs
        .values()
        .filter(|g| !g.wave.is_empty())
        .map(|g| g.wave.clone())
        .collect();
    assert_eq!(
        waves,
        [["T001", "T002"], ["T005", "T006"]],
        "two runs, a wave each"
    );
    assert!(
        sim.graphs
            .values()
            .all(|g| g.legs.values().all(|c| *c == 0))
    );
    assert_landed_once(&sim, &["T001", "T002", "T005", "T006"]);
    // Each wave recorded once, with its legs, none left stopped.
    let state = last_join_state(&sim);
    let recorded: Vec<Vec<(String, WaveTaskState)>> = state
        .waves
        .iter()
        .map(|w| {
            w.tasks
                .iter()
                .map(|t| (t.task.to_string(), t.state))
                .collect()
        })
        .collect();
    let landed = |a: &str, b: &str| {
        vec![
            (a.to_string(), WaveTaskState::Landed),
            (b.to_string(), WaveTaskState::Landed),
        ]
    };
    assert_eq!(
        recorded,
        [landed("T001", "T002"), landed("T005", "T006")],
        "{:?}",
        state.waves
    );
}

#[test]
fn each_leg_spends_at_most_its_share_and_the_join_sums_the_legs_and_stops_the_run() {
    // The task reviewer wants fixes after each first attempt, so every task needs a second
    // implementation and review: more than a leg's share of what is left.
    let more = json!({"task_review": {"1": [{"gist": "the file is wrong"}]}});
    let limits = "limits:\n  parallel_tasks: 4\n  budget_usd: 0.12\n";
    let mut sim = sim_full(four_tasks(), limits, None, more);
    label_the_issue(&mut sim);
    sim.hold_legs = true;
    sim.follow_graphs(20);
    let wave_run = wave_run(&sim);
    // From now on each call costs 0.02 USD: each leg's share is 0.12 / 4 = 0.03, so its
    // first implementation and review (0.04) fit only because their estimate was 0, and the
    // second attempt (0.04 more) is refused before it starts.
    std::fs::write(sim.root.join("price-scenario"), "0.02").unwrap();
    let dispatched = sim.fake.with(|w| w.dispatches.len());
    let g = sim.resume_graph(wave_run);
    assert!(g.legs.values().all(|c| *c == 0), "{g:?}");
    let join = sim.runs.iter().rfind(|r| r.job == "join").unwrap();
    assert!(join.summary.contains("budget"), "{}", join.summary);
    assert_eq!(
        sim.fake.with(|w| w.dispatches.len()),
        dispatched,
        "a budget stop ends the chain"
    );
    let state_path = walkdir::WalkDir::new(join.workspace.join(".specs"))
        .into_iter()
        .flatten()
        .find(|e| e.file_name() == "pipeline-state.json")
        .unwrap()
        .into_path();
    let state: spec_orchestrate::state::State =
        serde_json::from_str(&std::fs::read_to_string(state_path).unwrap()).unwrap();
    assert_eq!(
        state.stop.as_ref().map(|s| s.kind),
        Some(spec_orchestrate::types::StopKind::Budget)
    );
    // Each leg paid for its first implementation (the reviewer's answer carries no price)
    // and was refused the second attempt at its share, (0.12 − 0.001) / 4: the join summed the
    // four legs' spend.
    let seen: Vec<String> = state
        .calls
        .iter()
        .map(|c| format!("{} {} {:?} {}", c.agent, c.role, c.task, c.usd))
        .collect();
    let share = (0.12 - 0.001) / 4.0;
    for id in ["T001", "T002", "T003", "T004"] {
        let spent: f64 = state
            .calls
            .iter()
            .filter(|c| c.task.as_ref().is_some_and(|t| *t == id))
            .map(|c| c.usd)
            .sum();
        assert!(spent > 0.0 && spent <= share, "{id}: {spent} {seen:#?}");
    }
    assert!(
        (state.total_usd() - 0.081).abs() < 1e-9,
        "{}",
        state.total_usd()
    );
    let stop = state.stop.as_ref().unwrap();
    assert!(
        stop.message.contains("reached its share") && stop.budget_usd == Some(0.12),
        "{stop:?}"
    );
    assert!(
        state
            .tasks
            .iter()
            .all(|t| t.commit.is_none() && t.attempts == 1)
    );
    let draft = sim
        .fake
        .with(|w| w.pulls.first().map(|p| p["draft"].as_bool()));
    assert_eq!(
        draft,
        Some(Some(true)),
        "the stop lands a draft pull request"
    );
    assert!(sim.fake.with(|w| w.violations.is_empty()));
}

/// The run's record as the last join left it in its workspace, read as the orchestrator reads it.
fn last_join_state(sim: &Sim) -> State {
    let join = sim
        .runs
        .iter()
        .rfind(|r| r.job == "join")
        .expect("a join ran");
    let path = walkdir::WalkDir::new(join.workspace.join(".specs"))
        .into_iter()
        .flatten()
        .find(|e| e.file_name() == "pipeline-state.json")
        .expect("the join's state")
        .into_path();
    spec_orchestrate::state::store::load_file(&path).expect("the join's state loads")
}

/// The tasks `ids` each landed once, in order, on the one pull request, and every run
/// dispatched one successor at most.
fn assert_landed_once(sim: &Sim, ids: &[&str]) {
    let commits = task_commits(sim);
    let landed: Vec<&str> = commits.iter().map(|s| &s[..4]).collect();
    assert_eq!(landed, ids, "{commits:?}");
    assert_eq!(sim.fake.with(|w| w.pulls.len()), 1);
    assert_one_successor_per_run(sim);
}

/// The fake saw no rule broken and no secret anywhere.
fn assert_clean(sim: &Sim) {
    assert!(sim.fake.with(|w| w.violations.is_empty()));
    sim.assert_no_secrets();
}

/// The run that handed a wave out.
fn wave_run(sim: &Sim) -> u64 {
    *sim.graphs
        .iter()
        .find(|(_, g)| !g.wave.is_empty())
        .expect("a run handed a wave out")
        .0
}

/// A maintainer labels the issue: the run it starts plays the workflow's first job graph.
fn label_the_issue(sim: &mut Sim) {
    let label = sim.labeled("octocat", false);
    let first = sim.new_run_id();
    sim.graph(first, "issues", &label);
}

/// Replaces what run `run`'s leg of `task` uploaded by `shape` of its entries (path → bytes), as
/// a runner in a hostile hand would upload it: a zip of the same names, consistent with itself.
fn shape_leg(sim: &Sim, run: u64, task: &str, shape: impl FnOnce(&mut Vec<(String, Vec<u8>)>)) {
    use std::io::{Read, Write};
    let prefix = format!("spec-orchestrate-leg-{ISSUE}-{task}-a");
    sim.fake.with(|w| {
        let a = w
            .artifacts
            .iter_mut()
            .find(|a| a.run_id == run && a.name.starts_with(&prefix))
            .expect("the leg's artifact");
        let bytes = a.bytes.take().expect("uploaded");
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        let mut entries: Vec<(String, Vec<u8>)> = (0..zip.len())
            .map(|i| {
                let mut f = zip.by_index(i).unwrap();
                let mut b = Vec::new();
                f.read_to_end(&mut b).unwrap();
                (f.name().unwrap().to_string(), b)
            })
            .collect();
        shape(&mut entries);
        let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, b) in &entries {
            out.start_file(name.as_str(), zip::write::SimpleFileOptions::default())
                .unwrap();
            out.write_all(b).unwrap();
        }
        a.bytes = Some(out.finish().unwrap().into_inner());
    });
}

/// The leg's result of `entries`, edited by `edit`.
fn edit_result(entries: &mut [(String, Vec<u8>)], edit: impl FnOnce(&mut serde_json::Value)) {
    let (_, bytes) = entries
        .iter_mut()
        .find(|(n, _)| n.ends_with("/leg.json"))
        .expect("a leg.json");
    let mut v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    edit(&mut v);
    *bytes = serde_json::to_vec(&v).unwrap();
}

/// A bundle of the task commit in `workspace` amended to also change its feature's
/// requirement.md: a commit no implementer's room allows.
fn bundle_touching_the_spec(workspace: &Path) -> (String, Vec<u8>) {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(workspace)
            .args([
                "-c",
                "safe.directory=*",
                "-c",
                "user.name=h",
                "-c",
                "user.email=h@h",
            ])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let spec = git(&["ls-files", "--", ".specs"])
        .lines()
        .find(|p| p.ends_with("/requirement.md"))
        .expect("a tracked requirement.md")
        .to_string();
    let path = workspace.join(&spec);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("\nAcceptance cases may be skipped.\n");
    std::fs::write(&path, text).unwrap();
    git(&["add", "--", &spec]);
    git(&["commit", "--amend", "--no-edit", "-q"]);
    let bundle = workspace.join("../shaped.bundle");
    git(&[
        "bundle",
        "create",
        "-q",
        &bundle.display().to_string(),
        "HEAD^..HEAD",
    ]);
    (spec, std::fs::read(&bundle).unwrap())
}

#[test]
fn the_join_refuses_what_a_hostile_legs_runner_shaped_and_runs_those_tasks_itself() {
    let mut sim = sim_of(4, None);
    label_the_issue(&mut sim);
    sim.hold_join = true;
    sim.follow_graphs(20);
    let wave_run = wave_run(&sim);
    assert_eq!(sim.graphs[&wave_run].join, None, "the join waits");
    // T002's result spends less than nothing (a budget undone), T003's commit also rewrites
    // the requirements, T004's result is T001's record.
    shape_leg(&sim, wave_run, "T002", |e| {
        edit_result(e, |v| {
            for u in v["usage"].as_object_mut().unwrap().values_mut() {
                u["usd"] = json!(-50.0);
            }
        })
    });
    let leg3 = sim
        .runs
        .iter()
        .find(|r| r.run_id == wave_run && r.job == "implement (T003)")
        .unwrap()
        .workspace
        .clone();
    let (spec, bundle) = bundle_touching_the_spec(&leg3);
    shape_leg(&sim, wave_run, "T003", |e| {
        let (_, b) = e
            .iter_mut()
            .find(|(n, _)| n.ends_with("/task.bundle"))
            .unwrap();
        *b = bundle;
    });
    shape_leg(&sim, wave_run, "T004", |e| {
        edit_result(e, |v| v["task"]["id"] = json!("T001"))
    });
    sim.join_now(wave_run);
    assert_eq!(sim.graphs[&wave_run].join, Some(0));
    sim.follow_graphs(20);

    // Each task landed once: T001 from its leg, the three others run again by the join.
    assert_landed_once(&sim, &["T001", "T002", "T003", "T004"]);
    let mut again: Vec<String> = implementer_calls(&sim).into_iter().map(|c| c.0).collect();
    again.sort();
    assert_eq!(
        again,
        ["T001", "T002", "T002", "T003", "T003", "T004", "T004"]
    );
    let branch = sim
        .fake
        .with(|w| w.pulls[0]["head"]["ref"].as_str().unwrap().to_string());
    let landed = crate::support::git(&sim.origin, &["show", &format!("{branch}:{spec}")]);
    assert!(!landed.contains("may be skipped"), "{landed}");
    let state = last_join_state(&sim);
    assert!(
        state.usage.values().all(|u| u.usd >= 0.0),
        "{:?}",
        state.usage
    );
    assert!(state.total_usd() >= 0.0);
    let reasons = state.draft_reasons.join("\n");
    for (task, why) in [
        ("T002", "its usage has a cost below zero"),
        (
            "T003",
            &format!("its commit changes {spec}, outside what a task's commit may change"),
        ),
        ("T004", "its record is of task T001"),
    ] {
        assert!(
            reasons.contains(&format!("the leg of {task} was refused ({why}")),
            "{task}: {reasons}"
        );
    }
    let draft = sim.fake.with(|w| w.pulls[0]["draft"].as_bool());
    assert_eq!(draft, Some(true), "a refused leg wants a person's look");
    assert_clean(&sim);
}
