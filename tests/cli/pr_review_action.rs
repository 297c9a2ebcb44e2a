//! A person's review of the pipeline's pull request in action mode, through the simulated
//! GitHub: the triggers and their guards, the round run as jobs of the issue's chain, and a
//! review submitted while a round runs taken by the next round (docs/action-mode.md, "After the
//! pull request").

use serde_json::{Value, json};

use spec_orchestrate::state::pr_review::{Answer, PrReviewRound, RoundStatus};

use crate::actions_sim::{ISSUE, RunLog, Sim, in_workspace, job_condition};
use crate::fake_github::Delivery;

const BRANCH: &str = "spec-orchestrate/1347-add-a-dark-mode-toggle";
const FEATURE: &str = ".specs/add-a-dark-mode-toggle";

/// The simulated repository with an implementer that also answers review rounds: for `REV<n>`
/// it adds the empty state to app.js and disputes the round's second comment; every other task
/// goes to the demo's own implementer.
fn sim_with_reviser() -> Sim {
    Sim::new(|config, root| {
        let agents = root.join("agents");
        let wrapper = crate::pr_review::write_reviser(root, &agents);
        let original = format!("{}/implementer.py", agents.display());
        assert!(config.contains(&original), "{config}");
        config.replace(&original, &wrapper.display().to_string())
    })
}

/// The chain of the demo issue played to its pull request (#7); returns its number.
fn chain_to_pr(sim: &mut Sim) -> u64 {
    let first = sim.labeled("octocat", false);
    assert_eq!(sim.run(1001, 1, "issues", &first).code, 0);
    sim.follow(30, false);
    let pr = sim.fake.with(|w| w.pulls[0].clone());
    assert_eq!(pr["head"]["ref"], BRANCH);
    pr["number"].as_u64().unwrap()
}

/// The payload of the newest event the fake delivered (a submitted review).
fn delivered(sim: &Sim) -> Value {
    sim.fake.with(|w| match w.deliveries.last() {
        Some(Delivery::Event(_, p)) => p.clone(),
        other => panic!("no event delivered: {other:?}"),
    })
}

/// A review submitted now by `login`; returns the `pull_request_review` payload GitHub delivers.
fn review(
    sim: &Sim,
    pr: u64,
    login: &str,
    state: &str,
    body: &str,
    inline: &[(&str, u64, &str, &str)],
) -> Value {
    sim.fake
        .with(|w| w.submit_review(pr, login, "MEMBER", state, body, inline));
    delivered(sim)
}

/// The `issue_comment` payload of a comment `body` by `login` on pull request `pr`.
fn pr_comment(sim: &Sim, pr: u64, login: &str, body: &str) -> Value {
    let mut e = sim.comment(login, body);
    e["issue"]["number"] = json!(pr);
    e["issue"]["pull_request"] = json!({
        "url": format!("https://api.github.com/repos/octocat/Hello-World/pulls/{pr}"),
        "html_url": format!("https://github.com/octocat/Hello-World/pull/{pr}"),
    });
    e["comment"]["author_association"] = json!("MEMBER");
    e
}

fn run_event(sim: &mut Sim, event: &str, payload: &Value) -> RunLog {
    let id = sim.new_run_id();
    let log = sim.run(id, 1, event, payload);
    assert_eq!(log.code, 0, "{}", log.stderr);
    log
}

/// The review rounds the job's state records (`rounds.pr_review`).
fn rounds(log: &RunLog) -> Vec<PrReviewRound> {
    let path = in_workspace(log, &format!("{FEATURE}/pipeline-state.json"));
    let state = spec_orchestrate::state::store::load_file(&path).expect("the run's state");
    state.rounds.pr_review
}

fn dispatches(sim: &Sim) -> Vec<Value> {
    sim.fake
        .with(|w| w.dispatches.iter().map(|d| d.inputs.clone()).collect())
}

/// A reader's review, a bare comment, a fork's pull request and one whose head is not a work
/// branch start nothing; the reader gets one reply on the pull request.
fn nothing_starts_but_for_a_writer_on_our_branch(sim: &mut Sim, pr: u64) {
    sim.fake.set_role("maria", "maintain");
    sim.fake.set_role("rita", "read");
    let dispatched = dispatches(sim).len();
    let reader = review(sim, pr, "rita", "CHANGES_REQUESTED", "Rename it.", &[]);
    let log = run_event(sim, "pull_request_review", &reader);
    assert!(
        log.stderr.contains("@rita has `read` access"),
        "{}",
        log.stderr
    );
    let bare = pr_comment(sim, pr, "maria", "Looks nice, one question below.");
    assert!(
        !job_condition("issue_comment", &bare),
        "the workflow's if: skips it"
    );
    run_event(sim, "issue_comment", &bare);
    // (Payloads only: a maintainer's review as a fork's or another branch's would carry it.)
    let mut fork = reader.clone();
    fork["review"]["user"]["login"] = json!("maria");
    fork["review"]["author_association"] = json!("MEMBER");
    fork["sender"]["login"] = json!("maria");
    let mut other = fork.clone();
    fork["pull_request"]["head"]["repo"]["full_name"] = json!("mallory/Hello-World");
    assert!(
        !job_condition("pull_request_review", &fork),
        "the workflow's if: skips it"
    );
    let log = run_event(sim, "pull_request_review", &fork);
    assert!(log.summary.contains("comes from a fork"), "{}", log.summary);
    other["pull_request"]["head"]["ref"] = json!("feature/dark-mode");
    let log = run_event(sim, "pull_request_review", &other);
    assert!(
        log.summary.contains("not a spec-orchestrate pull request"),
        "{}",
        log.summary
    );
    assert_eq!(dispatches(sim).len(), dispatched, "no round was dispatched");
    let replies: Vec<String> = sim.fake.with(|w| {
        w.comments
            .iter()
            .filter(|(n, _)| *n == pr)
            .map(|(_, c)| c["body"].as_str().unwrap_or_default().to_string())
            .collect()
    });
    assert_eq!(replies.len(), 1, "{replies:#?}");
    assert!(
        replies[0].contains("@rita has `read` access"),
        "{}",
        replies[0]
    );
}

/// Round 1 took the two threads (one fixed, one disputed); round 2 the review posted while
/// round 1 ran: queued, not lost.
fn assert_two_rounds(last: &RunLog, pr: u64) {
    let all = rounds(last);
    assert_eq!(all.len(), 2, "{all:#?}");
    let one = &all[0];
    assert_eq!(one.from, format!("pull request #{pr}"));
    assert_eq!(one.status, RoundStatus::Finished);
    let items = &one.items;
    assert_eq!(items.len(), 2, "the two threads, nothing else");
    assert_eq!(items[0].source, "maria");
    assert_eq!(items[0].finding.file, "app.js");
    assert!(
        items[0]
            .thread
            .as_deref()
            .is_some_and(|t| t.starts_with("PRRT_")),
        "{:?}",
        items[0]
    );
    assert!(
        matches!(one.answers[0].1, Answer::Fixed { .. }),
        "{:?}",
        one.answers
    );
    assert!(
        matches!(one.answers[1].1, Answer::Disputed { .. }),
        "{:?}",
        one.answers
    );
    let two = &all[1];
    assert_eq!(two.status, RoundStatus::Finished);
    let taken: Vec<&str> = two
        .items
        .iter()
        .map(|i| i.finding.argument.as_str())
        .collect();
    assert_eq!(
        taken,
        ["Also keep the old setting."],
        "the resolved thread and the answered dispute are not taken again: {two:#?}"
    );
}

/// Both threads of round 1 answered once, the fixed one resolved, the disputed one open with
/// the agent's reason; one summary comment per round.
fn assert_answered_on_the_pull_request(sim: &Sim, pr: u64) {
    sim.fake.with(|w| {
        let threads: Vec<(u64, bool, Option<String>)> = w
            .reviews
            .threads
            .iter()
            .filter(|t| t.pr == pr)
            .map(|t| (t.root, t.resolved, t.resolved_by.clone()))
            .collect();
        assert_eq!(threads.len(), 2, "{threads:?}");
        let (fixed, disputed) = (&threads[0], &threads[1]);
        assert!(fixed.1, "the fixed thread is resolved");
        assert_eq!(fixed.2.as_deref(), Some("github-actions[bot]"));
        assert!(!disputed.1, "the disputed thread stays open");
        let fixed_replies = w.replies_to(fixed.0);
        let disputed_replies = w.replies_to(disputed.0);
        assert_eq!(fixed_replies.len(), 1, "{fixed_replies:#?}");
        assert_eq!(disputed_replies.len(), 1, "{disputed_replies:#?}");
        assert!(
            fixed_replies[0]["body"]
                .as_str()
                .unwrap()
                .contains("Fixed in"),
            "{}",
            fixed_replies[0]["body"]
        );
        let reason = disputed_replies[0]["body"].as_str().unwrap();
        assert!(reason.contains("fallback for old browsers"), "{reason}");
        for round in [1, 2] {
            let marker = format!("<!-- spec-orchestrate:review-round round={round} -->");
            let summaries = w
                .comments
                .iter()
                .filter(|(n, c)| {
                    *n == pr && c["body"].as_str().unwrap_or_default().contains(&marker)
                })
                .count();
            assert_eq!(summaries, 1, "one summary comment for round {round}");
        }
    });
}

#[test]
fn a_maintainers_review_runs_one_verified_round_as_jobs_and_one_posted_meanwhile_the_next() {
    let mut sim = sim_with_reviser();
    let pr = chain_to_pr(&mut sim);
    let chain_jobs = sim.runs.len();
    let evaluate_jobs = |sim: &Sim| {
        sim.runs
            .iter()
            .filter(|r| r.output("phase") == "retrospective")
            .count()
    };
    let body_before = sim.fake.with(|w| w.pulls[0]["body"].clone());

    nothing_starts_but_for_a_writer_on_our_branch(&mut sim, pr);

    request_changes_routed_into_the_chain(&mut sim, pr);

    // The round's first job takes it; while it runs... a second review arrives.
    assert_eq!(sim.follow_at_most(1, false), 1);
    let first = sim.runs.last().unwrap().clone();
    assert!(
        first.stderr.contains("review round taken: 2 comment(s)"),
        "{}",
        first.stderr
    );
    let later = review(
        &sim,
        pr,
        "maria",
        "CHANGES_REQUESTED",
        "Also keep the old setting.",
        &[],
    );
    run_event(&mut sim, "pull_request_review", &later);
    sim.follow(30, false);
    assert!(sim.runs.iter().all(|r| r.code == 0));

    let last = sim.runs.last().unwrap().clone();
    assert_two_rounds(&last, pr);

    // Each round ran as jobs of the chain: the fix task committed, every case again with fresh
    // evidence, the body written anew.
    let subjects = sim.branch_log(BRANCH);
    for task in ["REV1: Answer review round 1", "REV2: Answer review round 2"] {
        assert!(
            subjects.iter().any(|s| s.starts_with(task)),
            "{task} in {subjects:?}"
        );
    }
    assert_eq!(
        evaluate_jobs(&sim),
        3,
        "the chain's evaluate and one per round"
    );
    let body = sim.fake.with(|w| w.pulls[0]["body"].clone());
    assert_ne!(body, body_before);
    assert!(
        body.as_str()
            .unwrap()
            .contains("Pull request review rounds"),
        "{body}"
    );
    assert!(sim.runs.len() > chain_jobs + 4);
    let evidence_rounds: std::collections::BTreeSet<String> = sim.fake.with(|w| {
        w.artifacts
            .iter()
            .filter_map(|a| a.name.strip_prefix("spec-orchestrate-evidence-1347-r"))
            .filter_map(|rest| rest.split('-').next().map(str::to_string))
            .collect()
    });
    assert!(
        evidence_rounds.len() >= 3,
        "fresh evidence per round: {evidence_rounds:?}"
    );
    assert_answered_on_the_pull_request(&sim, pr);
    // One pull request, one status comment, throughout.
    sim.fake.with(|w| {
        assert_eq!(w.pulls.len(), 1);
        assert_eq!(w.status_comments(ISSUE).len(), 1);
        assert!(w.violations.is_empty(), "{:#?}", w.violations);
    });
    sim.assert_no_secrets();
}

/// The maintainer requests changes with two inline comments: the review's own job only routes
/// the round into the issue's chain (input `review`), in the issue's group.
fn request_changes_routed_into_the_chain(sim: &mut Sim, pr: u64) {
    let asked = review(
        sim,
        pr,
        "maria",
        "CHANGES_REQUESTED",
        "",
        &[
            (
                "app.js",
                12,
                "RIGHT",
                "An empty list shows nothing at all; show the empty state.",
            ),
            (
                "style.css",
                3,
                "RIGHT",
                "Use the theme variable, not a literal colour.",
            ),
        ],
    );
    assert!(job_condition("pull_request_review", &asked));
    let router = run_event(sim, "pull_request_review", &asked);
    let inputs = dispatches(sim);
    let routed = inputs.last().unwrap();
    assert_eq!(routed["issue"], json!(ISSUE.to_string()));
    assert_eq!(routed["review"], json!(pr.to_string()));
    assert_eq!(routed["parent_run"], json!(""));
    assert_eq!(
        router.output("next_run"),
        sim.fake
            .with(|w| w.dispatches.last().unwrap().run_id.to_string())
    );
    assert_eq!(router.output("phase"), "", "the review's job runs no phase");
}
