//! `spec-orchestrate action` against the simulated GitHub: a labelled issue becomes a pull
//! request in six jobs (one agent phase each, the phases that call no agent riding along) or,
//! with `github.jobs: per_phase`, one phase per job, each job checkpointed as an artifact and
//! dispatching the next; a crashed job re-run with the same inputs; refused triggers; manual
//! approval by comment; a job that runs out of its time budget hands over to a continuation.

use serde_json::Value;
use spec_orchestrate::state::State;
use spec_orchestrate::types::Phase;

use crate::actions_sim::{ISSUE, Sim};
use crate::fake_github::{Dispatch, RunDetails, World};
use crate::support::git;

const BRANCH: &str = "spec-orchestrate/1347-add-a-dark-mode-toggle";

/// The phases the demo goes through: one review send-back, then straight to the end.
const DEMO_PHASES: [&str; 12] = [
    "intake",
    "spec_generate",
    "inspect",
    "spec_review",
    "spec_generate",
    "inspect",
    "spec_review",
    "approval",
    "implement",
    "evaluate",
    "pr",
    "retrospective",
];

/// The demo's phases as the default `github.jobs` mode cuts them into jobs (the `phase` output
/// of each job is the last of its phases).
const DEMO_JOBS: [&[&str]; 6] = [
    &["intake", "spec_generate", "inspect"],
    &["spec_review"],
    &["spec_generate", "inspect"],
    &["spec_review", "approval"],
    &["implement"],
    &["evaluate", "pr", "retrospective"],
];

/// The configuration with `github.jobs: per_phase`.
fn per_phase(config: &str) -> String {
    assert!(!config.contains("\ngithub:"), "{config}");
    format!("{config}github:\n  jobs: per_phase\n")
}

/// The phase column of the status comment's runs table, with the run of each row.
fn runs_table(body: &str) -> Vec<(u64, String)> {
    let table = body.split("#### Runs").nth(1).unwrap_or_default();
    table
        .lines()
        .filter(|l| l.starts_with("| ["))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let run = cells[1]
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            (run, cells[2].to_string())
        })
        .collect()
}

fn task_subjects(sim: &Sim) -> Vec<String> {
    let mut t: Vec<String> = sim
        .branch_log(BRANCH)
        .into_iter()
        .filter(|s| s.starts_with('T'))
        .collect();
    t.sort();
    t
}

fn successful_runs(sim: &Sim) -> Vec<&crate::actions_sim::RunLog> {
    sim.runs.iter().filter(|r| r.code == 0).collect()
}

/// The checks every completed chain must pass.
fn assert_completed_chain(sim: &Sim) {
    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "the fake saw: {:#?}", w.violations);
    assert_one_status_comment(sim, &w);
    assert_one_ready_pull_request(&w);
    assert_a_checkpoint_and_dispatch_per_run(sim, &w);
    drop(w);

    // The branch on origin: every task committed once, evidence and state never.
    assert_eq!(
        task_subjects(sim)
            .iter()
            .map(|s| &s[..4])
            .collect::<Vec<_>>(),
        ["T001", "T002", "T003"],
        "{:?}",
        sim.branch_log(BRANCH)
    );
    let tracked = git(&sim.origin, &["ls-tree", "-r", "--name-only", BRANCH]);
    assert!(tracked.contains(".specs/add-a-dark-mode-toggle/requirement.md"));
    assert!(!tracked.contains("pipeline-state.json"), "{tracked}");
    assert!(!tracked.contains("evidence/"), "{tracked}");
}

/// Exactly one status comment, created once and edited in place afterwards, saying the run is
/// done and pointing at the last checkpoint.
fn assert_one_status_comment(sim: &Sim, w: &World) {
    let status = w.status_comments(ISSUE);
    assert_eq!(status.len(), 1, "one status comment");
    assert_eq!(w.count("POST", "/issues/1347/comments"), 1, "posted once");
    let successes = successful_runs(sim).len();
    assert!(
        w.count("PATCH", "/issues/comments/") >= successes - 1,
        "every later run edits it"
    );
    let body = status[0]["body"].as_str().unwrap();
    let last = sim.runs.last().unwrap();
    assert!(
        body.starts_with(&format!(
            "<!-- spec-orchestrate:status issue=1347 checkpoint={} -->",
            last.run_id
        )),
        "the marker points at the last checkpoint: {body}"
    );
    assert!(
        body.contains("Done: the pull request is ready for review"),
        "{body}"
    );
    for p in ["intake", "approval", "retrospective"] {
        assert!(
            body.contains(&format!("| {p} | ✅ |")),
            "{p} ticked: {body}"
        );
    }
    assert!(body.contains("#### Runs"), "{body}");
}

/// One pull request, ready, with the body of docs/reports.md.
fn assert_one_ready_pull_request(w: &World) {
    assert_eq!(w.pulls.len(), 1, "one pull request");
    let pr = &w.pulls[0];
    assert_eq!(pr["head"]["ref"], BRANCH);
    assert_eq!(pr["base"]["ref"], "main");
    assert_eq!(pr["draft"], false, "the demo's gate passed: ready");
    assert_eq!(pr["title"], "Add a dark mode toggle");
    let pr_body = pr["body"].as_str().unwrap();
    for needle in [
        "Closes #1347",
        "### Adversarial review history",
        "| Round | Reviewer | Critical | Improvement | Minor | Fix required | Gate |",
        "### Acceptance evidence",
        "| Case | Requirement | Method | Verdict | Evidence |",
        "#### Evidence manifest",
        "<!-- spec-orchestrate:manifest -->",
        "### Usage",
    ] {
        assert!(
            pr_body.contains(needle),
            "PR body lacks {needle}:\n{pr_body}"
        );
    }
    assert_eq!(w.count("POST", "/pulls"), 1, "opened once");
}

/// One checkpoint artifact per run (per successful attempt), named by phase and attempt, and a
/// dispatch per run except the last, each continuing the run that made it.
fn assert_a_checkpoint_and_dispatch_per_run(sim: &Sim, w: &World) {
    let last = sim.runs.last().unwrap();
    let mut run_ids: Vec<u64> = sim.runs.iter().map(|r| r.run_id).collect();
    run_ids.dedup();
    for id in &run_ids {
        let arts: Vec<_> = w
            .artifacts
            .iter()
            .filter(|a| a.run_id == *id && a.finalized && a.is_zip())
            .collect();
        assert_eq!(
            arts.len(),
            1,
            "run {id} left exactly one checkpoint: {arts:?}"
        );
        let ok = sim
            .runs
            .iter()
            .rfind(|r| r.run_id == *id && r.code == 0)
            .unwrap();
        assert_eq!(
            arts[0].name,
            format!(
                "spec-orchestrate-1347-{}-a{}",
                ok.output("phase"),
                ok.attempt
            )
        );
    }

    // A dispatch per run except the last, each continuing the run that made it.
    assert_eq!(w.dispatches.len(), run_ids.len() - 1);
    for (d, parent) in w.dispatches.iter().zip(&run_ids) {
        assert_eq!(d.inputs["parent_run"], parent.to_string());
        assert_eq!(d.inputs["issue"], "1347");
        assert_eq!(d.workflow, "spec-orchestrate.yml");
        assert_eq!(d.git_ref, "refs/heads/main");
    }
    assert_eq!(
        last.output("next_run"),
        "",
        "the last run dispatches nothing"
    );
    assert_eq!(last.output("phase"), "retrospective");
}

#[test]
fn a_labelled_issue_becomes_a_ready_pull_request_in_six_jobs_by_default() {
    let mut sim = Sim::new(|c, _| c.to_string());
    let first = sim.labeled("octocat", false);
    let log = sim.run(1001, 1, "issues", &first);
    assert_eq!(log.code, 0, "{}", log.stderr);
    sim.follow(30, false);
    let jobs = sim.print_jobs_per_chain("github.jobs: per_agent_phase");
    assert!(
        jobs <= 7,
        "the happy path takes at most 7 jobs, took {jobs}"
    );

    let last_phases: Vec<String> = sim.runs.iter().map(|r| r.output("phase")).collect();
    let want: Vec<&str> = DEMO_JOBS.iter().map(|j| *j.last().unwrap()).collect();
    assert_eq!(last_phases, want, "one agent phase per job");
    assert!(sim.runs.iter().all(|r| r.code == 0));
    assert_completed_chain(&sim);
    for (run, phases) in sim.runs.iter().zip(DEMO_JOBS) {
        let names: Vec<String> = phases.iter().map(|p| format!("**{p}**")).collect();
        assert!(
            run.summary
                .contains(&format!("This job ran {}.", names.join(", "))),
            "{}",
            run.summary
        );
    }
    // The review's gate, even when approval rode along after it.
    assert_eq!(sim.runs[1].output("gate"), "FAIL");
    assert_eq!(sim.runs[3].output("gate"), "PASS");
    assert_eq!(
        sim.runs[5].output("pr_url"),
        "https://github.com/octocat/Hello-World/pull/7",
        "the pull request of the pr phase that rode along"
    );

    // The status comment still lists every phase, each with the run that did it.
    let body = sim
        .fake
        .with(|w| w.status_comments(ISSUE)[0]["body"].clone());
    let rows = runs_table(body.as_str().unwrap());
    let want: Vec<(u64, String)> = sim
        .runs
        .iter()
        .zip(DEMO_JOBS)
        .flat_map(|(r, phases)| phases.iter().map(|p| (r.run_id, p.to_string())))
        .collect();
    assert_eq!(rows, want, "{body}");
    assert_eq!(rows.len(), DEMO_PHASES.len());

    // Every phase still has its own commit (intake and the spec author's first pass here ran
    // in the same job).
    let subjects = sim.branch_log(BRANCH);
    for subject in [
        "spec-orchestrate: intake (pass 1, #1347)",
        "spec-orchestrate: spec_generate (pass 1, #1347)",
        "spec-orchestrate: inspect (pass 1, #1347)",
        "spec-orchestrate: retrospective (pass 1, #1347)",
    ] {
        assert!(
            subjects.iter().any(|s| s == subject),
            "{subject} in {subjects:?}"
        );
    }
    sim.assert_no_secrets();
}

#[test]
fn a_labelled_issue_becomes_a_ready_pull_request_one_phase_per_job() {
    let mut sim = Sim::new(|c, _| per_phase(c));
    let first = sim.labeled("octocat", false);
    let log = sim.run(1001, 1, "issues", &first);
    assert_eq!(log.code, 0, "{}", log.stderr);
    assert!(log.stdout.contains("::add-mask::"), "secrets are masked");
    sim.follow(30, false);
    sim.print_jobs_per_chain("github.jobs: per_phase");

    let phases: Vec<String> = sim.runs.iter().map(|r| r.output("phase")).collect();
    assert_eq!(phases, DEMO_PHASES, "one phase per job");
    assert!(sim.runs.iter().all(|r| r.code == 0));
    assert_completed_chain(&sim);

    // Outputs and summaries of particular jobs.
    let review = &sim.runs[3];
    assert_eq!(review.output("gate"), "FAIL");
    assert_eq!(sim.runs[6].output("gate"), "PASS");
    let pr_job = &sim.runs[10];
    assert_eq!(
        pr_job.output("pr_url"),
        "https://github.com/octocat/Hello-World/pull/7"
    );
    assert!(
        pr_job.summary.contains("This job ran **pr**"),
        "{}",
        pr_job.summary
    );
    assert!(sim.runs[9].summary.contains("evaluate rounds"));

    // A checkpoint holds the state and what git ignores (evidence, results), nothing committed.
    let entries = sim.artifact_entries();
    let evaluate: Vec<&str> = entries
        .iter()
        .filter(|(a, _, _)| a == "spec-orchestrate-1347-evaluate-a1")
        .map(|(_, p, _)| p.as_str())
        .collect();
    let dir = ".specs/add-a-dark-mode-toggle";
    for want in [
        format!("{dir}/pipeline-state.json"),
        format!("{dir}/evaluate-1.json"),
        format!("{dir}/evidence/1/T-A01.txt"),
    ] {
        assert!(evaluate.contains(&want.as_str()), "{want} in {evaluate:?}");
    }
    assert!(
        evaluate
            .iter()
            .all(|p| !p.ends_with("requirement.md") && !p.ends_with(".lock")),
        "{evaluate:?}"
    );

    // Checkpoints were read from the parent through REST and storage, never from the own run.
    let w = sim.fake.world.lock().unwrap();
    let lists: Vec<String> = w
        .requests
        .iter()
        .filter(|r| r.method == "GET" && r.url.contains("/artifacts?"))
        .map(|r| r.url.clone())
        .collect();
    assert_eq!(
        lists.len(),
        sim.runs.len() - 1,
        "every job but the first reads one"
    );
    for (url, parent) in lists.iter().zip(sim.runs.iter().map(|r| r.run_id)) {
        assert!(
            url.contains(&format!("/actions/runs/{parent}/artifacts")),
            "{url}"
        );
    }
    let storage_gets = w
        .requests
        .iter()
        .filter(|r| r.server == "blob" && r.method == "GET")
        .count();
    assert_eq!(storage_gets, sim.runs.len() - 1);
    assert!(
        w.requests
            .iter()
            .filter(|r| r.server == "blob")
            .all(|r| r.headers.iter().all(|(k, _)| k != "authorization"))
    );
    drop(w);
    sim.assert_no_secrets();
}

#[test]
fn a_job_whose_agent_crashes_mid_phase_is_rerun_with_the_same_inputs_without_duplicates() {
    let mut sim = Sim::new(|c, _| c.to_string());
    // The first implementer call kills the phase process: the job dies in the middle of
    // `implement`, after the approval commit and before any task commit.
    std::fs::write(sim.root.join("crash-implementer"), "").unwrap();
    let first = sim.labeled("octocat", false);
    sim.run(1001, 1, "issues", &first);
    sim.follow(30, true);

    let failed: Vec<_> = sim.runs.iter().filter(|r| r.code != 0).collect();
    assert_eq!(failed.len(), 1, "exactly one job failed");
    let crashed = failed[0].clone();
    assert_eq!(crashed.output("phase"), "implement");
    assert!(
        crashed.stderr.contains("killed by signal 9"),
        "{}",
        crashed.stderr
    );
    let rerun = sim
        .runs
        .iter()
        .find(|r| r.run_id == crashed.run_id && r.attempt == 2)
        .expect("re-run with the next attempt");
    assert_eq!(rerun.code, 0, "{}", rerun.stderr);
    assert_eq!(rerun.payload, crashed.payload, "same inputs");
    {
        let w = sim.fake.world.lock().unwrap();
        let names: Vec<&str> = w
            .artifacts
            .iter()
            .filter(|a| a.run_id == crashed.run_id && a.is_zip())
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(
            names,
            ["spec-orchestrate-1347-implement-a2"],
            "the crash saved nothing"
        );
        let from_crashed = w
            .dispatches
            .iter()
            .filter(|d| d.inputs["parent_run"].as_str() == Some(&crashed.run_id.to_string()))
            .count();
        assert_eq!(
            from_crashed, 1,
            "the re-run dispatched once, the crash never"
        );
    }
    assert_completed_chain(&sim);
    let subjects = sim.branch_log(BRANCH);
    let spec_commits = subjects.iter().filter(|s| s.starts_with("spec: ")).count();
    assert!(spec_commits <= 1, "{subjects:?}");
    let mut unique = subjects.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        subjects.len(),
        "no commit subject twice: {subjects:?}"
    );
    sim.assert_no_secrets();
}

/// A job that ran several phases and failed in one of them publishes none of them; its re-run
/// repeats exactly what it did (all of its phases, from the same start), and nothing lands twice.
#[test]
fn a_job_that_fails_after_a_phase_rode_along_is_rerun_whole_without_duplicates() {
    let mut sim = Sim::new(|c, _| c.to_string());
    // The spec author's first call kills the phase process: intake has run and been committed
    // in the job's checkout, spec_generate dies.
    std::fs::write(sim.root.join("crash-author"), "").unwrap();
    let first = sim.labeled("octocat", false);
    let crashed = sim.run(1001, 1, "issues", &first);
    assert_ne!(crashed.code, 0, "the job fails with its phase");
    assert_eq!(crashed.output("phase"), "spec_generate");
    assert!(
        crashed.stderr.contains("killed by signal 9"),
        "{}",
        crashed.stderr
    );
    let heads = git(&sim.origin, &["for-each-ref", "--format=%(refname)"]);
    assert!(
        !heads.contains("spec-orchestrate/"),
        "the intake before the crash was not pushed: {heads}"
    );
    sim.fake.with(|w| {
        assert!(w.artifacts.is_empty(), "no checkpoint: {:?}", w.artifacts);
        assert!(w.dispatches.is_empty(), "no dispatch");
    });

    let rerun = sim.run(1001, 2, "issues", &first);
    assert_eq!(rerun.code, 0, "{}", rerun.stderr);
    assert_eq!(
        rerun.output("phase"),
        "inspect",
        "intake and spec_generate again"
    );
    assert!(
        rerun
            .summary
            .contains("This job ran **intake**, **spec_generate**, **inspect**."),
        "{}",
        rerun.summary
    );
    sim.follow(30, true);
    assert!(sim.runs[1..].iter().all(|r| r.code == 0));
    assert_completed_chain(&sim);
    let subjects = sim.branch_log(BRANCH);
    let mut unique = subjects.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        subjects.len(),
        "no commit twice: {subjects:?}"
    );
    let body = sim
        .fake
        .with(|w| w.status_comments(ISSUE)[0]["body"].clone());
    let rows = runs_table(body.as_str().unwrap());
    let first_job: Vec<&(u64, String)> = rows.iter().filter(|(r, _)| *r == 1001).collect();
    assert_eq!(
        first_job
            .iter()
            .map(|(_, p)| p.as_str())
            .collect::<Vec<_>>(),
        ["intake", "spec_generate", "inspect"],
        "the re-run's phases, once: {body}"
    );
    sim.assert_no_secrets();
}

#[test]
fn labels_from_a_reader_and_an_unlisted_bot_start_nothing_but_one_reply() {
    let mut sim = Sim::new(|c, _| c.to_string());
    sim.fake.set_role("mona", "read");
    let origin_refs = git(&sim.origin, &["for-each-ref"]);

    let reader = sim.labeled("mona", false);
    assert_eq!(sim.run(1001, 1, "issues", &reader).code, 0);
    // "Re-run all jobs" of the same run: still one reply.
    assert_eq!(sim.run(1001, 2, "issues", &reader).code, 0);
    let bot = sim.labeled("renovate[bot]", true);
    let log = sim.run(1002, 1, "issues", &bot);
    assert_eq!(log.code, 0);
    assert!(log.stderr.contains("allowed_bots"), "{}", log.stderr);

    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "{:#?}", w.violations);
    let replies: Vec<&str> = w
        .comments
        .iter()
        .map(|(_, c)| c["body"].as_str().unwrap())
        .collect();
    assert_eq!(
        replies.len(),
        2,
        "one reply per refused trigger: {replies:#?}"
    );
    assert!(
        replies[0].contains("@mona has `read` access"),
        "{}",
        replies[0]
    );
    assert!(
        replies[1].contains("@renovate[bot] is a bot"),
        "{}",
        replies[1]
    );
    assert!(w.status_comments(ISSUE).is_empty(), "no run started");
    assert!(w.dispatches.is_empty() && w.pulls.is_empty() && w.artifacts.is_empty());
    assert_eq!(
        w.count("GET", "/collaborators/renovate"),
        0,
        "a bot is refused before any permission lookup"
    );
    let writes: Vec<String> = w
        .requests
        .iter()
        .filter(|r| r.method != "GET")
        // Reading the token's identity is a GraphQL query, not a write.
        .filter(|r| !String::from_utf8_lossy(&r.body).contains("viewer"))
        .map(|r| format!("{} {}", r.method, r.url))
        .collect();
    assert_eq!(writes.len(), 2, "nothing but the two replies: {writes:#?}");
    drop(w);
    assert_eq!(
        git(&sim.origin, &["for-each-ref"]),
        origin_refs,
        "nothing pushed"
    );
    for r in &sim.runs {
        assert_eq!(r.output("phase"), "");
    }
    sim.assert_no_secrets_in_logs_only();
}

#[test]
fn manual_mode_waits_for_an_approve_comment_from_a_writer() {
    let mut sim = Sim::new(|c, _| c.to_string());
    sim.mode = "manual";
    sim.fake.set_role("mona", "read");
    sim.fake.set_role("hubot", "write");
    let first = sim.labeled("octocat", false);
    sim.run(1001, 1, "issues", &first);
    sim.follow(30, false);
    let waiting = sim.runs.last().unwrap().clone();
    assert_eq!(waiting.output("phase"), "approval");
    assert_eq!(waiting.output("next_run"), "", "waiting: no dispatch");
    let status = sim
        .fake
        .with(|w| w.status_comments(ISSUE)[0]["body"].clone());
    assert!(
        status
            .as_str()
            .unwrap()
            .contains("comment `/spec-orchestrate approve`"),
        "{status}"
    );

    // A reader's approval is refused; a typo gets a hint; a writer's approval goes on.
    let no = sim.comment("mona", "/spec-orchestrate approve");
    sim.run(3001, 1, "issue_comment", &no);
    let typo = sim.comment("hubot", "/spec-orchestrate aprove");
    sim.run(3002, 1, "issue_comment", &typo);
    // The approve label counts as `approve`, and is refused from a reader the same way.
    let mut label = sim.labeled("mona", false);
    label["label"]["name"] = serde_json::json!("spec-approved");
    sim.run(3004, 1, "issues", &label);
    assert_eq!(
        sim.fake.with(|w| w.dispatches.len()),
        sim.followed,
        "neither started anything"
    );
    let yes = sim.comment("hubot", "/spec-orchestrate approve\nLooks right.");
    let approved = sim.run(3003, 1, "issue_comment", &yes);
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    assert_eq!(
        approved.output("phase"),
        "implement",
        "approval, then the implementation rode along"
    );
    assert_ne!(approved.output("next_run"), "");
    sim.follow(30, false);

    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "{:#?}", w.violations);
    let bodies: Vec<String> = w
        .comments
        .iter()
        .map(|(_, c)| c["body"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(bodies.len(), 4, "status + three replies: {bodies:#?}");
    assert_eq!(
        bodies
            .iter()
            .filter(|b| b.contains("@mona has `read` access"))
            .count(),
        2,
        "the reader's comment and label"
    );
    assert!(bodies.iter().any(|b| b.contains("@mona has `read` access")));
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("`/spec-orchestrate aprove` is not a command"))
    );
    assert_eq!(w.pulls.len(), 1);
    drop(w);
    let state: State = serde_json::from_slice(
        &sim.artifact_entries()
            .into_iter()
            .rfind(|(_, p, _)| p.ends_with("pipeline-state.json"))
            .unwrap()
            .2,
    )
    .unwrap();
    assert_eq!(
        state.approval.as_ref().map(|a| a.by.as_str()),
        Some("hubot")
    );
    assert_eq!(state.phase(), Phase::Done);
    sim.assert_no_secrets();
}

/// One line per job the simulation ran (run, job, exit code, phase, wall time), for failures.
fn runs_seen(sim: &Sim) -> String {
    sim.runs
        .iter()
        .map(|r| {
            format!(
                "\n  run {} ({}) exit {} phase `{}` in {:.1} s",
                r.run_id,
                r.job,
                r.code,
                r.output("phase"),
                r.wall.as_secs_f64()
            )
        })
        .collect()
}

#[test]
fn a_job_near_its_time_budget_checkpoints_and_dispatches_a_continuation() {
    let mut sim = Sim::new(|c, root| {
        c.replace(
            "implementer: { kind: command,",
            &format!(
                "implementer: {{ env: {{ DEMO_SLOW_TASK: T002, DEMO_MARKER: \"{}\" }}, kind: command,",
                root.join("slow-started").display()
            ),
        )
    });
    assert!(sim.demo.config().contains("DEMO_SLOW_TASK"));
    // 45 s per job, stopped at 80 % of it (36 s). Only T002, which sleeps 60 s, can outlast it:
    // every other phase (evaluate starts the app and Chromium) has room on a loaded machine, so
    // the cut this test guards is the one it provokes, not one the machine's speed decides.
    sim.budget_minutes = Some("0.75".into());
    let first = sim.labeled("octocat", false);
    sim.run(1001, 1, "issues", &first);
    sim.follow(30, false);

    let jobs = runs_seen(&sim);
    assert!(sim.runs.iter().all(|r| r.code == 0), "{jobs}");
    let implement: Vec<&crate::actions_sim::RunLog> = sim
        .runs
        .iter()
        .filter(|r| r.output("phase") == "implement")
        .collect();
    // The job running T002 was stopped by the budget, checkpointed and continued; a later job
    // finished implement (a very slow machine may need more than one continuation).
    assert!(
        implement.len() >= 2,
        "implement took {} job(s): {jobs}",
        implement.len()
    );
    for cut in &implement[..implement.len() - 1] {
        assert!(cut.stderr.contains("time budget"), "{}", cut.stderr);
        assert_ne!(cut.output("next_run"), "", "a continuation was dispatched");
    }
    assert_completed_chain(&sim);
    let status = sim
        .fake
        .with(|w| w.status_comments(ISSUE)[0]["body"].clone());
    assert!(
        status
            .as_str()
            .unwrap()
            .contains("continued (job time budget)"),
        "{status}"
    );
}

#[test]
fn stop_supersedes_the_pending_run_and_continue_resumes_from_the_newest_checkpoint() {
    let mut sim = Sim::new(|c, _| c.to_string());
    let first = sim.labeled("octocat", false);
    let intake = sim.run(1001, 1, "issues", &first);
    assert_eq!(intake.output("next_run"), "2001");

    // While run 2001 is queued, a maintainer stops the chain.
    sim.fake.set_role("hubot", "maintain");
    let stop = sim.comment("hubot", "/spec-orchestrate stop");
    let stopped = sim.run(3001, 1, "issue_comment", &stop);
    assert_eq!(stopped.code, 0, "{}", stopped.stderr);
    assert_eq!(stopped.output("next_run"), "", "stop dispatches nothing");

    // The queued run finds that its parent is no longer the newest checkpoint and does nothing.
    assert_eq!(sim.follow_at_most(1, false), 1);
    let superseded = sim.runs.last().unwrap().clone();
    assert_eq!(superseded.run_id, 2001);
    assert!(
        superseded.stderr.contains("superseded"),
        "{}",
        superseded.stderr
    );
    assert_eq!(superseded.output("phase"), "");

    let resume = sim.comment("hubot", "/spec-orchestrate continue");
    let resumed = sim.run(3002, 1, "issue_comment", &resume);
    assert_eq!(
        resumed.output("phase"),
        "spec_review",
        "the first job ran intake, spec_generate and inspect"
    );
    sim.follow(30, false);

    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "{:#?}", w.violations);
    assert_eq!(w.status_comments(ISSUE).len(), 1);
    assert_eq!(w.comments.len(), 1, "no reply was needed");
    assert_eq!(w.pulls.len(), 1);
    assert!(
        w.artifacts.iter().all(|a| a.run_id != 2001),
        "the superseded run saved nothing"
    );
    assert!(
        w.dispatches
            .iter()
            .all(|d| d.inputs["parent_run"] != "2001"),
        "and dispatched nothing"
    );
    let stop_state = w
        .artifacts
        .iter()
        .find(|a| a.run_id == 3001)
        .expect("stop saved a checkpoint");
    assert_eq!(stop_state.name, "spec-orchestrate-1347-spec_review-a1");
    let last_phase = sim.runs.last().unwrap().output("phase");
    assert_eq!(last_phase, "retrospective");
    drop(w);
    sim.assert_no_secrets();
}

#[test]
fn a_budget_stop_lands_a_draft_pull_request_and_dispatches_nothing() {
    let mut sim = Sim::new(|c, _| c.replace("limits:\n", "limits:\n  budget_usd: 0.01\n"));
    // Every implementer call costs 0.006 USD: the second one would pass the budget.
    std::fs::write(sim.root.join("price-implementer"), "0.006").unwrap();
    let first = sim.labeled("octocat", false);
    sim.run(1001, 1, "issues", &first);
    sim.follow(30, false);

    let last = sim.runs.last().unwrap().clone();
    assert_eq!(last.code, 1, "a stopped run exits like `step`: 1");
    assert_eq!(last.output("phase"), "implement");
    assert_eq!(
        last.output("next_run"),
        "",
        "nothing dispatched after the stop"
    );
    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "{:#?}", w.violations);
    assert_eq!(w.pulls.len(), 1, "the stop's draft was published");
    assert_eq!(w.pulls[0]["draft"], true);
    assert!(
        last.output("pr_url").ends_with("/pull/7"),
        "{}",
        last.outputs
    );
    let status = w.status_comments(ISSUE)[0]["body"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        status.contains("Stopped, with a draft pull request"),
        "{status}"
    );
    assert!(status.contains("budget"), "{status}");
    drop(w);
    sim.assert_no_secrets();
}

#[test]
fn a_readers_forged_status_marker_steers_nothing() {
    let mut sim = Sim::new(|c, _| c.to_string());
    sim.fake.set_role("mona", "read");
    sim.fake.set_role("hubot", "write");
    // A read-only user writes the status marker, naming a checkpoint that does not exist.
    sim.fake.with(|w| {
        w.post_as(
            ISSUE,
            "mona",
            "NONE",
            "<!-- spec-orchestrate:status issue=1347 checkpoint=424242 -->\nAll done here.",
        )
    });
    // A writer's `continue` has no run to steer: the reply never advises `continue` again.
    let early = sim.comment("hubot", "/spec-orchestrate continue");
    let refused = sim.run(3001, 1, "issue_comment", &early);
    assert_eq!(refused.code, 0, "{}", refused.stderr);
    assert_eq!(refused.output("phase"), "");
    // The writer's label starts a run as on a fresh issue.
    let first = sim.labeled("octocat", false);
    let intake = sim.run(1001, 1, "issues", &first);
    assert_eq!(intake.output("phase"), "inspect", "{}", intake.stderr);
    sim.follow(30, false);

    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "{:#?}", w.violations);
    let forged = w
        .comments
        .iter()
        .find(|(_, c)| c["user"]["login"] == "mona")
        .unwrap();
    assert!(
        forged.1["body"]
            .as_str()
            .unwrap()
            .contains("checkpoint=424242"),
        "the reader's comment was not edited"
    );
    let ours: Vec<&Value> = w
        .status_comments(ISSUE)
        .into_iter()
        .filter(|c| c["user"]["login"] == crate::fake_github::TOKEN_LOGIN)
        .collect();
    assert_eq!(ours.len(), 1, "one status comment of our own");
    let replies: Vec<&str> = w
        .comments
        .iter()
        .filter_map(|(_, c)| c["body"].as_str())
        .filter(|b| b.starts_with("<!-- spec-orchestrate:refusal"))
        .collect();
    assert_eq!(replies.len(), 1, "{replies:#?}");
    assert!(
        replies[0].contains("no run on this issue") && !replies[0].contains("continue"),
        "{}",
        replies[0]
    );
    assert_eq!(w.pulls.len(), 1);
    assert_eq!(
        w.count("GET", "/actions/runs/424242"),
        0,
        "only our comment is read"
    );
}

#[test]
fn a_pull_request_refused_by_the_repository_setting_waits_and_says_which_setting() {
    let mut sim = Sim::new(|c, _| c.to_string());
    sim.fake.with(|w| w.actions_may_open_prs = false);
    sim.fake.set_role("hubot", "write");
    let first = sim.labeled("octocat", false);
    sim.run(1001, 1, "issues", &first);
    sim.follow(30, false);
    let waiting = sim.runs.last().unwrap().clone();
    assert_eq!(waiting.code, 0, "the chain waits, the job does not fail");
    assert_eq!(waiting.output("phase"), "pr");
    assert_eq!(waiting.output("next_run"), "");
    let setting = "Allow GitHub Actions to create and approve pull requests";
    assert!(waiting.summary.contains(setting), "{}", waiting.summary);
    let status = sim
        .fake
        .with(|w| w.status_comments(ISSUE)[0]["body"].clone());
    assert!(status.as_str().unwrap().contains(setting), "{status}");
    assert!(sim.fake.with(|w| w.pulls.is_empty()));

    // The maintainer turns the setting on and resumes: the pr phase runs again.
    sim.fake.with(|w| w.actions_may_open_prs = true);
    let resume = sim.comment("hubot", "/spec-orchestrate continue");
    let resumed = sim.run(3001, 1, "issue_comment", &resume);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert!(
        resumed
            .summary
            .contains("This job ran **pr**, **retrospective**."),
        "the pr phase runs again, the retrospective rides along once it opened: {}",
        resumed.summary
    );
    sim.follow(30, false);
    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "{:#?}", w.violations);
    assert_eq!(w.pulls.len(), 1);
    assert_eq!(sim.runs.last().unwrap().output("phase"), "retrospective");
    // Opened with the workflow's GITHUB_TOKEN: the PR and the status comment say CI will not
    // run on it, and how to change that.
    let body = w.pulls[0]["body"].as_str().unwrap();
    let status = w.status_comments(ISSUE)[0]["body"].as_str().unwrap();
    for text in [body, status] {
        assert!(
            text.contains("CI will not run on this pull request"),
            "{text}"
        );
        assert!(text.contains("close and reopen the pull request"), "{text}");
        assert!(text.contains("actions/create-github-app-token"), "{text}");
    }
}

#[test]
fn with_an_app_token_the_pull_request_opens_without_the_setting_and_says_nothing_about_ci() {
    let mut sim = Sim::new(|c, _| c.to_string());
    // The `github_token` input is a GitHub App installation token: the setting does not bind
    // it, and the events it causes start workflows.
    sim.fake.with(|w| {
        w.token_login = "spec-bot[bot]".into();
        w.actions_may_open_prs = false;
    });
    let first = sim.labeled("octocat", false);
    sim.run(1001, 1, "issues", &first);
    sim.follow(30, false);
    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "{:#?}", w.violations);
    assert_eq!(w.pulls.len(), 1, "opened despite the setting");
    assert_eq!(sim.runs.last().unwrap().output("phase"), "retrospective");
    let status = w.status_comments(ISSUE);
    assert_eq!(status.len(), 1);
    assert_eq!(status[0]["user"]["login"], "spec-bot[bot]");
    for text in [
        w.pulls[0]["body"].as_str().unwrap(),
        status[0]["body"].as_str().unwrap(),
    ] {
        assert!(!text.contains("CI will not run"), "{text}");
    }
}

#[test]
fn on_an_enterprise_server_without_run_details_the_dispatched_run_is_found_by_listing() {
    let mut sim = Sim::new(|c, _| c.to_string());
    // GitHub Enterprise Server 3.20 and older refuse `return_run_details` as an unknown key.
    sim.fake.with(|w| w.run_details = RunDetails::Refused);
    let first = sim.labeled("octocat", false);
    sim.run(1001, 1, "issues", &first);
    sim.follow(30, false);
    assert_completed_chain(&sim);

    let w = sim.fake.world.lock().unwrap();
    // Every job but the last names the run it dispatched, found by listing.
    for (run, d) in sim.runs.iter().zip(&w.dispatches) {
        assert_eq!(
            run.output("next_run"),
            d.run_id.to_string(),
            "{}",
            run.stderr
        );
    }
    assert_eq!(
        w.count("POST", "/dispatches"),
        2 * w.dispatches.len(),
        "asked once with return_run_details, refused, sent again without"
    );
    assert_eq!(
        w.count("GET", "/actions/workflows/spec-orchestrate.yml/runs?"),
        w.dispatches.len()
    );
}

#[test]
fn a_dispatch_answered_204_finds_its_run_by_title_not_by_time() {
    let mut sim = Sim::new(|c, _| c.to_string());
    sim.fake.with(|w| w.run_details = RunDetails::Ignored);
    // Another issue's chain dispatched at the same moment, with a higher run id.
    sim.fake.with(|w| {
        w.dispatches.push(Dispatch {
            workflow: crate::fake_github::WORKFLOW.into(),
            git_ref: "refs/heads/main".into(),
            inputs: serde_json::json!({"issue": "42", "parent_run": "77"}),
            run_id: 999_999,
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        })
    });
    let first = sim.labeled("octocat", false);
    let intake = sim.run(1001, 1, "issues", &first);
    assert_eq!(intake.code, 0, "{}", intake.stderr);
    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "{:#?}", w.violations);
    let ours = w.dispatches.last().unwrap();
    assert_eq!(ours.inputs["issue"], "1347");
    assert_eq!(intake.output("next_run"), ours.run_id.to_string());
}

#[test]
fn checkpoints_upload_as_the_official_artifact_client_does() {
    let mut sim = Sim::new(|c, _| c.to_string());
    let first = sim.labeled("octocat", false);
    let intake = sim.run(1001, 1, "issues", &first);
    assert_eq!(intake.code, 0, "{}", intake.stderr);
    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "{:#?}", w.violations);
    let a = &w.artifacts[0];
    assert!(a.finalized);
    assert_eq!(a.version, 7, "CreateArtifact version");
    assert_eq!(a.mime.as_deref(), Some("application/zip"));
    assert_eq!(a.content_type.as_deref(), Some("application/zip"));
    // Put Block, then Put Block List; never the whole blob at once.
    let puts: Vec<&str> = w
        .requests
        .iter()
        .filter(|r| r.server == "blob" && r.method == "PUT")
        .map(|r| r.url.as_str())
        .collect();
    assert_eq!(puts.len(), 2, "{puts:#?}");
    assert!(puts[0].contains("&comp=block&blockid="), "{}", puts[0]);
    assert!(puts[1].ends_with("&comp=blocklist"), "{}", puts[1]);
}

#[test]
fn the_simulated_storage_takes_a_whole_blob_or_blocks_and_refuses_an_unknown_block() {
    use base64::Engine as _;
    use sha2::Digest as _;
    // The crate's rustls provider, as its one client installs it.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sim = Sim::new(|c, _| c.to_string());
    let token = sim.fake.runtime_token(4242, 1);
    let (_, run_backend, job_backend) = sim.fake.with(|w| w.runtime_tokens[&token].clone());
    let http = reqwest::blocking::Client::new();
    let twirp = |method: &str, body: Value| -> Value {
        http.post(format!(
            "{}/twirp/github.actions.results.api.v1.ArtifactService/{method}",
            sim.fake.api_uri()
        ))
        .bearer_auth(&token)
        .json(&body)
        .send()
        .unwrap()
        .json()
        .unwrap()
    };
    let create = |name: &str| -> String {
        let v = twirp(
            "CreateArtifact",
            serde_json::json!({"workflow_run_backend_id": run_backend,
                "workflow_job_run_backend_id": job_backend, "name": name, "version": 4}),
        );
        v["signed_upload_url"].as_str().unwrap().to_string()
    };
    let finalize = |name: &str, bytes: &[u8]| -> Value {
        twirp(
            "FinalizeArtifact",
            serde_json::json!({"workflow_run_backend_id": run_backend,
                "workflow_job_run_backend_id": job_backend, "name": name,
                "size": bytes.len().to_string(),
                "hash": format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))}),
        )
    };
    // The whole blob at once (the client's former style).
    let url = create("whole");
    let status = sent(
        http.put(&url)
            .header("x-ms-blob-type", "BlockBlob")
            .body(b"whole blob".to_vec()),
    );
    assert_eq!(status, 201);
    assert_eq!(finalize("whole", b"whole blob")["ok"], true);

    // Three blocks staged out of order, committed in order.
    let url = create("blocks");
    let id = |i: u32| base64::engine::general_purpose::STANDARD.encode(format!("block-{i:04}"));
    for (i, part) in [(2, "three"), (0, "one-"), (1, "two-")] {
        let status = http
            .put(format!(
                "{url}&comp=block&blockid={}",
                id(i).replace('=', "%3D")
            ))
            .body(part.as_bytes().to_vec())
            .send()
            .unwrap()
            .status();
        assert_eq!(status, 201);
    }
    let list = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList><Latest>{}</Latest><Latest>{}</Latest><Latest>{}</Latest></BlockList>",
        id(0),
        id(1),
        id(2)
    );
    let status = sent(
        http.put(format!("{url}&comp=blocklist"))
            .header("x-ms-blob-content-type", "application/zip")
            .body(list),
    );
    assert_eq!(status, 201);
    assert_eq!(finalize("blocks", b"one-two-three")["ok"], true);

    // A block list naming a block never staged is refused, as storage refuses it.
    let url = create("broken");
    let status = sent(
        http.put(format!("{url}&comp=blocklist"))
            .body(format!("<BlockList><Latest>{}</Latest></BlockList>", id(9))),
    );
    assert_eq!(status, 400);
    let w = sim.fake.world.lock().unwrap();
    assert_eq!(w.violations.len(), 1, "{:#?}", w.violations);
    let bytes = |n: &str| {
        w.artifacts
            .iter()
            .find(|a| a.name == n)
            .unwrap()
            .bytes
            .clone()
    };
    assert_eq!(bytes("whole").as_deref(), Some(&b"whole blob"[..]));
    assert_eq!(bytes("blocks").as_deref(), Some(&b"one-two-three"[..]));
    assert_eq!(bytes("broken"), None);
}

/// The status storage answered `request` with.
fn sent(request: reqwest::blocking::RequestBuilder) -> reqwest::StatusCode {
    request.send().expect("storage answers").status()
}

/// The status comment of the issue, if there is one.
fn status_body(sim: &Sim) -> Option<String> {
    sim.fake.with(|w| {
        w.status_comments(ISSUE)
            .first()
            .and_then(|c| c["body"].as_str())
            .map(str::to_string)
    })
}

fn refuse_once(sim: &Sim, method: &str, path_contains: &str, status: u16) {
    sim.fake.with(|w| {
        w.faults.push(crate::fake_github::Fault {
            method: method.into(),
            path_contains: path_contains.into(),
            status,
            retry_after: None,
            times: 1,
        })
    });
}

/// The chain rules of docs/action-mode.md for re-runs: the status comment names a checkpoint
/// only once it is finalized, and a re-run of a failed job — the label's first job included —
/// goes on from the newest finalized checkpoint of the chain, or starts over when there is
/// none; never "nothing to do".
#[test]
fn a_re_run_of_the_first_job_resumes_from_the_newest_finalized_checkpoint_or_starts_over() {
    let mut sim = Sim::new(|c, _| c.to_string());
    let first = sim.labeled("octocat", false);

    // Attempt 1: the checkpoint's upload is refused. Nothing may point at it.
    refuse_once(&sim, "POST", "/FinalizeArtifact", 400);
    let a1 = sim.run(1001, 1, "issues", &first);
    assert_ne!(a1.code, 0, "the job fails with its checkpoint");
    if let Some(body) = status_body(&sim) {
        assert!(!body.contains("checkpoint=1001"), "{body}");
    }

    // Attempt 2 starts over (there is no checkpoint); then GitHub refuses the dispatch, after
    // the checkpoint is finalized and the comment names it.
    refuse_once(&sim, "POST", "/dispatches", 422);
    let a2 = sim.run(1001, 2, "issues", &first);
    assert_ne!(a2.code, 0, "the job fails with its dispatch");
    assert!(!a2.summary.contains("Nothing to do"), "{}", a2.summary);
    assert!(a2.stderr.contains("new run"), "{}", a2.stderr);
    let body = status_body(&sim).expect("a status comment");
    assert!(
        body.starts_with("<!-- spec-orchestrate:status issue=1347 checkpoint=1001 -->"),
        "the pointer names the finalized checkpoint: {body}"
    );

    // Attempt 3 goes on from attempt 2's checkpoint: the next phase, not the first ones again.
    let a3 = sim.run(1001, 3, "issues", &first);
    assert_eq!(a3.code, 0, "{}", a3.stderr);
    assert!(!a3.summary.contains("Nothing to do"), "{}", a3.summary);
    assert!(
        a3.stderr
            .contains("restoring checkpoint spec-orchestrate-1347-inspect-a2 of run 1001"),
        "{}",
        a3.stderr
    );
    assert_eq!(a3.output("phase"), "spec_review");
    assert_ne!(a3.output("next_run"), "", "a successor was dispatched");

    sim.follow(30, false);
    assert!(sim.runs[2..].iter().all(|r| r.code == 0));
    // The chain's end as `assert_completed_chain` checks it, but run 1001 keeps the checkpoint
    // of its failed second attempt beside its third's.
    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "the fake saw: {:#?}", w.violations);
    assert_eq!(w.status_comments(ISSUE).len(), 1, "one status comment");
    assert_eq!(w.count("POST", "/issues/1347/comments"), 1, "posted once");
    let body = w.status_comments(ISSUE)[0]["body"]
        .as_str()
        .unwrap()
        .to_string();
    let last = sim.runs.last().unwrap();
    assert!(
        body.starts_with(&format!(
            "<!-- spec-orchestrate:status issue=1347 checkpoint={} -->",
            last.run_id
        )),
        "{body}"
    );
    assert!(
        body.contains("Done: the pull request is ready for review"),
        "{body}"
    );
    assert_eq!(w.pulls.len(), 1, "one pull request");
    assert_eq!(w.pulls[0]["draft"], false);
    let mut run_ids: Vec<u64> = sim.runs.iter().map(|r| r.run_id).collect();
    run_ids.dedup();
    assert_eq!(
        w.dispatches.len(),
        run_ids.len() - 1,
        "one successor per run"
    );
    drop(w);
    assert_eq!(
        task_subjects(&sim)
            .iter()
            .map(|s| &s[..4])
            .collect::<Vec<_>>(),
        ["T001", "T002", "T003"],
        "every task committed once"
    );
}

/// A dispatched run that is not the one the chain recorded as next (`next=` in the marker) does
/// no work and says why: a second dispatch of the same step never forks the chain.
#[test]
fn a_duplicate_successor_does_no_work_and_the_chain_goes_on_once() {
    let mut sim = Sim::new(|c, _| c.to_string());
    let first = sim.labeled("octocat", false);
    let job = sim.run(1001, 1, "issues", &first);
    assert_eq!(job.code, 0, "{}", job.stderr);
    let next = job.output("next_run");
    let body = status_body(&sim).expect("a status comment");
    assert!(body.contains(&format!("next={next}")), "{body}");

    let spied = |sim: &Sim| {
        std::fs::read_dir(sim.root.join("spy"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let calls = spied(&sim);
    let artifacts = sim.fake.with(|w| w.artifacts.len());
    let duplicate = Sim::dispatch_payload(&serde_json::json!({
        "issue": ISSUE.to_string(),
        "parent_run": "1001",
    }));
    let dup = sim.run(2999, 1, "workflow_dispatch", &duplicate);
    assert_eq!(dup.code, 0, "{}", dup.stderr);
    assert!(
        dup.summary.contains(&format!(
            "duplicate successor: run 1001 recorded run {next} as the next run of issue #1347, not this run 2999"
        )),
        "{}",
        dup.summary
    );
    assert_eq!(spied(&sim), calls, "no agent call");
    assert_eq!(
        sim.fake.with(|w| w.artifacts.len()),
        artifacts,
        "no checkpoint"
    );
    assert_eq!(
        status_body(&sim).as_deref(),
        Some(body.as_str()),
        "the comment is untouched"
    );

    // The chain itself goes on once: the duplicate is no part of it.
    sim.runs.retain(|r| r.run_id != 2999);
    sim.follow(30, false);
    assert_completed_chain(&sim);
}

/// docs/import.md: an issue whose body says `spec: <dir>` starts its chain from that spec. The
/// first job imports it; the author is not asked for a first version (the first agent call of the
/// chain converts browser steps); inspect and the review judge the import, and the chain ends in
/// a ready pull request whose body shows each imported requirement against the original.
#[test]
fn an_issue_with_a_spec_line_starts_the_chain_from_the_imported_spec() {
    let mut sim = Sim::new(|c, root| {
        let dir = root.join("repo/.kiro/specs/dark-mode");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("requirements.md"),
            crate::import::DARK_MODE_REQUIREMENTS,
        )
        .unwrap();
        std::fs::write(dir.join("tasks.md"), crate::import::DARK_MODE_TASKS).unwrap();
        let issue = root.join("issue.md");
        let text = std::fs::read_to_string(&issue).unwrap();
        std::fs::write(&issue, format!("{text}\nspec: .kiro/specs/dark-mode/\n")).unwrap();
        c.to_string()
    });
    let first = sim.labeled("octocat", false);
    let log = sim.run(1001, 1, "issues", &first);
    assert_eq!(log.code, 0, "{}", log.stderr);
    assert!(
        log.stderr
            .contains("started from the kiro spec `.kiro/specs/dark-mode`"),
        "{}",
        log.stderr
    );
    sim.follow(40, false);
    assert_completed_chain(&sim);
    let w = sim.fake.world.lock().unwrap();
    let pr_body = w.pulls[0]["body"].as_str().unwrap();
    assert!(pr_body.contains("#### Imported spec"), "{pr_body}");
    assert!(
        pr_body.contains("Started from the kiro spec `.kiro/specs/dark-mode`"),
        "{pr_body}"
    );
}
