//! Self-improvement from the ledger: three runs with the same reviewer failure in one
//! repository, through the real binary.

use crate::support::{Demo, bin, git};

fn run_issue(demo: &Demo, n: u32) -> std::path::PathBuf {
    let issue = demo.tmp.path().join(format!("issue-{n}.md"));
    std::fs::write(
        &issue,
        format!("# Add a dark mode toggle, take {n}\n\nSame request as the demo issue.\n"),
    )
    .unwrap();
    git(&demo.repo, &["checkout", "--quiet", "main"]);
    // Exit 0 or 1 (the task reviewer fails the same way, so runs may land as drafts).
    let out = demo.run_issue_cmd(&issue).output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "run {n}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    demo.repo
        .join(format!(".specs/add-a-dark-mode-toggle-take-{n}"))
}

fn run_id(feature_dir: &std::path::Path) -> String {
    spec_orchestrate::state::store::load_file(&feature_dir.join("pipeline-state.json"))
        .unwrap()
        .run_id
}

fn branches(demo: &Demo) -> Vec<String> {
    git(&demo.repo, &["branch", "--format=%(refname:short)"])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_same_failure_twice_becomes_a_tier_one_branch_citing_both_runs() {
    let demo = Demo::new();
    // The spec reviewer prints garbage every time: malformed_output in spec_review, each run.
    let config = demo.config().replace(
        "reviewer:    { kind: command,",
        "reviewer:    { env: { DEMO_REVIEWER_MODE: garbage }, kind: command,",
    );
    assert!(config.contains("DEMO_REVIEWER_MODE"));
    demo.write_config(&config);
    let pipeline_before = std::fs::read_to_string(demo.config_path()).unwrap();

    let d1 = run_issue(&demo, 1);
    let retro1 = std::fs::read_to_string(d1.join("retrospective.md")).unwrap();
    let r1 = run_id(&d1);
    crate::support::assert_contains_all(
        &retro1,
        &[
            "### Observations",
            "category `malformed_output` in spec_review",
        ],
    );
    assert!(
        !retro1.contains("### Proposals"),
        "one run is only an observation:\n{retro1}"
    );
    assert!(!branches(&demo).iter().any(|b| b.contains("improve-")));

    let d2 = run_issue(&demo, 2);
    let retro2 = std::fs::read_to_string(d2.join("retrospective.md")).unwrap();
    let r2 = run_id(&d2);
    let proposal = retro2
        .lines()
        .find(|l| {
            l.contains("category `malformed_output` in spec_review") && l.contains("cites runs")
        })
        .unwrap_or_else(|| panic!("run 2 proposes a change:\n{retro2}"));
    assert!(
        proposal.contains(&r1) && proposal.contains(&r2),
        "cites runs 1–2: {proposal}"
    );
    assert!(
        proposal.contains(".specs/prompts/spec_reviewer.md"),
        "{proposal}"
    );
    assert!(proposal.contains("created"), "{proposal}");

    assert_tier_one_branch(&demo, &d2, proposal, (&r1, &r2));

    // Tier 2: suggested in the report, never applied anywhere.
    assert!(retro2.contains("### Suggestions (Tier 2"), "{retro2}");
    assert!(retro2.contains("roles.spec_reviewer"), "{retro2}");
    assert_eq!(
        std::fs::read_to_string(demo.config_path()).unwrap(),
        pipeline_before
    );
    for b in branches(&demo) {
        let files = git(&demo.repo, &["diff", "--name-only", "main", &b]);
        assert!(
            !files.lines().any(|f| f == ".specs/pipeline.yml"),
            "{b} changed pipeline.yml"
        );
    }

    // Run 3: the same proposal is not duplicated.
    let improve_before: Vec<String> = branches(&demo)
        .into_iter()
        .filter(|b| b.contains("improve-"))
        .collect();
    let d3 = run_issue(&demo, 3);
    let retro3 = std::fs::read_to_string(d3.join("retrospective.md")).unwrap();
    assert!(retro3.contains("already exists"), "{retro3}");
    let improve: Vec<String> = branches(&demo)
        .into_iter()
        .filter(|b| b.contains("improve-"))
        .collect();
    assert_eq!(
        improve, improve_before,
        "no new improvement branch for the same failures"
    );

    // The ledger has one record per run and `retro` aggregates them.
    let ledger = std::fs::read_to_string(demo.repo.join(".specs/pipeline-metrics.jsonl")).unwrap();
    assert_eq!(ledger.lines().count(), 3);
    let out = bin()
        .args(["retro", "--json", "--repo"])
        .arg(&demo.repo)
        .assert()
        .success();
    let agg: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(agg["runs"], 3);
    assert_eq!(agg["failures"]["category malformed_output spec_review"], 3);
    let out = bin()
        .args(["retro", "--repo"])
        .arg(&demo.repo)
        .assert()
        .success();
    let table = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(table.contains("| runs | 3 |"), "{table}");
}

/// Tier 1 of the retrospective's `proposal` (made in run `d2`, citing runs `r1` and `r2`): its
/// own branch, changing only the prompt file, from the base commit, with a PR body beside it.
fn assert_tier_one_branch(
    demo: &Demo,
    d2: &std::path::Path,
    proposal: &str,
    (r1, r2): (&str, &str),
) {
    let id = proposal
        .split('`')
        .find(|w| w.starts_with("imp-"))
        .expect("the proposal names its change id")
        .to_string();
    let branch = format!("spec-orchestrate/improve-{id}");
    assert!(branches(demo).contains(&branch), "{branch} exists");
    let changed = git(&demo.repo, &["diff", "--name-only", "main", &branch]);
    assert_eq!(changed.trim(), ".specs/prompts/spec_reviewer.md");
    let prompt = git(
        &demo.repo,
        &["show", &format!("{branch}:.specs/prompts/spec_reviewer.md")],
    );
    assert!(
        prompt.contains("<!-- spec-orchestrate:improvement imp-"),
        "{prompt}"
    );
    assert!(
        prompt.contains(r1) && prompt.contains(r2),
        "the lesson cites its runs"
    );
    assert!(
        prompt.contains("You are an adversarial specification reviewer"),
        "built on the built-in prompt"
    );
    assert!(
        d2.join(format!("improvement-{id}.md")).is_file(),
        "a PR body for the branch"
    );
}

#[test]
fn a_retrospective_run_again_supersedes_its_ledger_record() {
    let demo = Demo::new();
    demo.run_cmd().assert().success();
    let ledger_path = demo.repo.join(".specs/pipeline-metrics.jsonl");
    assert_eq!(
        std::fs::read_to_string(&ledger_path)
            .unwrap()
            .lines()
            .count(),
        1
    );
    // Put the run back at retrospective and run it again.
    let state_path = demo.feature_dir().join("pipeline-state.json");
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap();
    // The phase is the machine's to write: a test can only rewind it in the file itself.
    state["phase"] = "retrospective".into();
    std::fs::write(&state_path, serde_json::to_string(&state).unwrap()).unwrap();
    demo.cmd("resume").assert().success();
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&ledger_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "appended, never edited");
    assert_eq!(lines[0]["run_id"], lines[1]["run_id"]);
    assert_eq!(lines[1]["seq"], 2, "the second record supersedes the first");
    let out = bin()
        .args(["retro", "--json", "--repo"])
        .arg(&demo.repo)
        .assert()
        .success();
    let agg: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(agg["runs"], 1, "a superseded record is not a second run");
}

#[test]
fn concurrent_appends_never_interleave() {
    use spec_orchestrate::retro::ledger::{Ledger, RunRecord};
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::of(dir.path());
    let big = "x".repeat(64 * 1024);
    std::thread::scope(|s| {
        for t in 0..8 {
            let ledger = ledger.clone();
            let big = big.clone();
            s.spawn(move || {
                for i in 0..10 {
                    let record = RunRecord {
                        ledger_version: 1,
                        run_id: format!("run-{t}-{i}"),
                        seq: 0,
                        feature: big.clone(),
                        issue: None,
                        ts: Default::default(),
                        outcome: "ready".into(),
                        rounds: Default::default(),
                        failures: vec![],
                        arbitrations: 0,
                        overrides: 0,
                        usd: 0.0,
                        durations: Default::default(),
                        active_changes: vec![],
                    };
                    ledger.append(record).unwrap();
                }
            });
        }
    });
    let text = std::fs::read_to_string(ledger.path()).unwrap();
    assert_eq!(text.lines().count(), 80);
    for line in text.lines() {
        let r: RunRecord = serde_json::from_str(line).expect("every line is one whole record");
        assert_eq!(r.feature.len(), big.len());
        assert_eq!(r.seq, 1);
    }
}

#[test]
fn a_merged_change_followed_by_the_same_failure_twice_is_proposed_for_revert() {
    let demo = Demo::new();
    let config = demo.config().replace(
        "reviewer:    { kind: command,",
        "reviewer:    { env: { DEMO_REVIEWER_MODE: garbage }, kind: command,",
    );
    demo.write_config(&config);
    run_issue(&demo, 1);
    let d2 = run_issue(&demo, 2);
    let retro2 = std::fs::read_to_string(d2.join("retrospective.md")).unwrap();
    let line = retro2
        .lines()
        .find(|l| {
            l.contains("in spec_review")
                && l.contains("cites runs")
                && l.contains("malformed_output")
        })
        .expect("proposal");
    let id = line
        .split('`')
        .find(|w| w.starts_with("imp-"))
        .unwrap()
        .to_string();
    // A person merges the improvement into main.
    git(&demo.repo, &["checkout", "--quiet", "main"]);
    git(
        &demo.repo,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "merge",
            "--quiet",
            "--no-edit",
            &format!("spec-orchestrate/improve-{id}"),
        ],
    );
    let d3 = run_issue(&demo, 3);
    let r3 = run_id(&d3);
    let retro3 = std::fs::read_to_string(d3.join("retrospective.md")).unwrap();
    assert!(
        !retro3.contains(&format!("revert `{id}`")),
        "one run after the change is not enough:\n{retro3}"
    );
    let d4 = run_issue(&demo, 4);
    let r4 = run_id(&d4);
    let retro4 = std::fs::read_to_string(d4.join("retrospective.md")).unwrap();
    let revert = retro4
        .lines()
        .find(|l| l.contains(&format!("revert `{id}`")))
        .unwrap_or_else(|| panic!("run 4 proposes the revert:\n{retro4}"));
    assert!(revert.contains(&r3) && revert.contains(&r4), "{revert}");
    let branch = format!("spec-orchestrate/revert-{id}");
    let prompt = git(
        &demo.repo,
        &["show", &format!("{branch}:.specs/prompts/spec_reviewer.md")],
    );
    assert!(
        !prompt.contains(&id),
        "the revert removes the lesson:\n{prompt}"
    );
    assert!(prompt.contains("You are an adversarial specification reviewer"));
}
