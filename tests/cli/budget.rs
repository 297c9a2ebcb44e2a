//! The hard budget and the secrecy of API keys, on the whole demo pipeline with an HTTP reviewer
//! served by a local fake Messages API.

use serde_json::json;
use wiremock::ResponseTemplate;
use wiremock::matchers::{method, path};

use crate::fakes::{self, EMPTY_ENVELOPE, Fake, Script, anthropic};
use crate::http_backends::KEY;
use crate::support::{
    Demo, JSON_PROGRESS, bin, config_with_api, events_of, pr_draft, stopped_messages,
};
use spec_orchestrate::state::State;
use spec_orchestrate::types::kinds::{BlockerCategory, Gate};
use spec_orchestrate::types::{Phase, StopKind};

/// One reviewer call: 1500 input + 150 output tokens of claude-sonnet-4-5 = 0.00675 USD.
const CALL_USD: f64 = (1500.0 * 3.0 + 150.0 * 15.0) / 1e6;

/// The demo where `reviewer` (spec review and every task review) is an HTTP agent.
fn paid_reviewer_config(demo: &Demo, fake: &Fake, budget: &str) -> String {
    config_with_api(
        demo,
        &format!(
            "kind: anthropic, base_url: \"{}\", opposite: implementer",
            fake.uri()
        ),
        &[("spec_reviewer", "api")],
        "",
    )
    // Task reviews go to the implementer's opposite: make it the paid agent too.
    .replace("opposite: reviewer }", "opposite: api }")
    .replace("limits:\n", &format!("limits:\n  budget_usd: {budget}\n"))
}

fn paid_calls(state: &State) -> usize {
    state.calls.iter().filter(|c| c.usd > 0.0).count()
}

/// The budget fits the first paid call (the spec review, whose request the proxy estimates at
/// about 0.011 USD of input) and not a second one (0.00675 spent + at least the 0.00675 a call
/// of this agent has cost): 1.3 cents.
#[test]
fn a_budget_that_fits_one_paid_call_stops_the_demo_before_the_second_and_resume_finishes_it() {
    let fake = Fake::start();
    let (script, _) = Script::new(vec![anthropic::ok(EMPTY_ENVELOPE, 1500, 150)]);
    fake.mount(
        wiremock::Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(script),
    );
    let demo = Demo::new();
    demo.write_config(&paid_reviewer_config(&demo, &fake, "0.013"));

    let out = demo
        .run_cmd()
        .env("ANTHROPIC_API_KEY", KEY)
        .env(JSON_PROGRESS.0, JSON_PROGRESS.1)
        .output()
        .expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "stopped = draft: {stderr}");
    // The run stopped once; its message (the person's) names the limit, the spend and the way on.
    let events = events_of(&stderr);
    let stopped = stopped_messages(&events);
    assert_eq!(stopped.len(), 1, "{stderr}");
    let spent = format!("{CALL_USD:.4}");
    assert!(
        stopped[0].starts_with(&format!(
            "stopped: limits.budget_usd is 0.0130 USD, {spent} USD is spent"
        )),
        "{stderr}"
    );
    assert!(stopped[0].contains("spec-orchestrate resume"), "{stderr}");
    assert_eq!(
        fake.requests().len(),
        1,
        "the second paid call was not made"
    );

    assert_stopped_before_the_second_call(&demo, &spent);

    // Resuming without raising the budget stops again at the same place, spending nothing.
    let again = bin()
        .args(["resume", "--repo"])
        .arg(&demo.repo)
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .expect("resume runs");
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(fake.requests().len(), 1);

    // Raise the budget in the configuration and resume: the run finishes, ready.
    demo.write_config(&paid_reviewer_config(&demo, &fake, "1.0"));
    let done = bin()
        .args(["resume", "--repo"])
        .arg(&demo.repo)
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .expect("resume runs");
    let stderr = String::from_utf8_lossy(&done.stderr).into_owned();
    assert!(done.status.success(), "{stderr}");
    let state = demo.state();
    assert_eq!(state.phase(), Phase::Done);
    assert!(state.stop.is_none());
    assert_eq!(state.stops.len(), 2);
    // One spec review and one review per task, each a paid call.
    assert_eq!(state.usage["api"].calls, 4);
    assert_eq!(paid_calls(&state), 4);
    assert_eq!(fake.requests().len(), 4);
    let total = state.usage["api"].usd;
    assert!((total - 4.0 * CALL_USD).abs() < 1e-9, "{total}");
    assert!(!pr_draft(&state));
    let body = std::fs::read_to_string(demo.feature_dir().join("pr-body.md")).unwrap();
    crate::support::assert_contains_all(
        &body,
        &[
            "ready for review",
            "Resumed after 2 stop(s): budget at implement",
        ],
    );
}

/// What the budget stop of the demo left: one paid call recorded, the stop at implement before
/// any task attempt, a draft that says so, and `status` showing the cost (`spent`) and the stop.
fn assert_stopped_before_the_second_call(demo: &Demo, spent: &str) {
    let state = demo.state();
    assert_eq!(paid_calls(&state), 1);
    assert_eq!(state.usage["api"].calls, 1);
    assert!((state.usage["api"].usd - CALL_USD).abs() < 1e-9);
    let stop = state.stop.as_ref().expect("stopped");
    assert_eq!(stop.kind, StopKind::Budget);
    assert_eq!(stop.phase, Phase::Implement);
    assert_eq!(stop.budget_usd, Some(0.013));
    assert_eq!(state.phase(), Phase::Implement);
    assert!(
        state.tasks.iter().all(|t| t.attempts == 0),
        "the stop came before any task attempt: {:#?}",
        state.tasks
    );
    assert!(pr_draft(&state));
    let body = std::fs::read_to_string(demo.feature_dir().join("pr-body.md")).unwrap();
    assert!(
        body.contains("Run stopped at `implement`** (budget)"),
        "{body}"
    );
    assert!(body.contains("limits.budget_usd"), "{body}");
    assert!(
        body.contains(&format!("| api | 1 | 1500 | 150 | {spent} |")),
        "{body}"
    );

    // `status` shows the cost and the stop.
    let status = bin()
        .args(["status", "--repo"])
        .arg(&demo.repo)
        .output()
        .expect("status runs");
    let text = String::from_utf8_lossy(&status.stdout).into_owned();
    assert!(
        text.contains(&format!(
            "api: 1 calls, 1500 in / 150 out tokens, {spent} USD"
        )),
        "{text}"
    );
    assert!(text.contains("Stopped (budget) at `implement`"), "{text}");
}

#[test]
fn a_budget_too_small_for_the_first_prompt_stops_before_any_paid_call() {
    let fake = Fake::start();
    fake.mount(
        wiremock::Mock::given(wiremock::matchers::any())
            .respond_with(ResponseTemplate::new(500))
            .expect(0),
    );
    let demo = Demo::new();
    // Enough for the free command author, far too little for the reviewer's prompt.
    demo.write_config(&paid_reviewer_config(&demo, &fake, "0.0001"));
    let out = demo
        .run_cmd()
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .expect("binary runs");
    assert_eq!(out.status.code(), Some(1));
    let stop = demo.state().stop.expect("stopped");
    assert_eq!(stop.kind, StopKind::Budget);
    assert_eq!(stop.phase, Phase::SpecReview);
    assert!(stop.next_call_usd.unwrap() > 0.0);
    fake.verify();
}

/// Every file under `root`, the history of `repo` and the outputs must be free of `secret`.
fn assert_nowhere(root: &std::path::Path, repo: &std::path::Path, outputs: &[&str], secret: &str) {
    for (i, o) in outputs.iter().enumerate() {
        assert!(!o.contains(secret), "output {i} leaks the key:\n{o}");
    }
    for entry in walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| !e.path().components().any(|c| c.as_os_str() == ".git"))
    {
        let bytes = std::fs::read(entry.path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "{} leaks the key",
            entry.path().display()
        );
    }
    let history = crate::support::git(repo, &["log", "-p", "--all"]);
    assert!(!history.contains(secret), "git history leaks the key");
}

#[test]
fn no_api_key_appears_in_logs_state_prompts_or_error_messages() {
    let fake = Fake::start();
    // The fake echoes the key back wherever a careless pipeline could copy it: an error
    // message, a finding the author then receives, a summary.
    let mut auth = anthropic::error("authentication_error");
    auth["error"]["message"] = json!(format!("invalid x-api-key: {KEY}"));
    let leaky = json!({"findings": [{
        "id": "F1", "requirement_id": "REQ-003", "severity": "critical", "file": "design.md",
        "section": "4. Persistence", "gist": format!("the key {KEY} was found in the spec"),
        "argument": format!("remove {KEY}"), "suggestion": "add a Persistence section"}],
        "converged": false, "remaining_disputes": ["F1"]});
    let (script, _) = Script::new(vec![
        fakes::json_reply(401, &auth),
        anthropic::ok(&leaky.to_string(), 1500, 150),
        anthropic::ok(EMPTY_ENVELOPE, 1500, 150),
    ]);
    fake.mount(
        wiremock::Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(script),
    );
    let demo = Demo::new();
    demo.write_config(&paid_reviewer_config(&demo, &fake, "5"));
    let out = demo
        .run_cmd()
        .env("ANTHROPIC_API_KEY", KEY)
        .env("SPEC_ORCHESTRATE_LOG", "trace")
        .output()
        .expect("binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("TRACE") && stderr.contains("hyper_util"),
        "every log line, down to the HTTP client's, was captured"
    );
    // The leaks were really offered, and really handled.
    let state = demo.state();
    assert_eq!(state.rounds.spec_review[0].gate, Gate::Fail);
    assert_eq!(state.phase(), Phase::Done);
    let failure = &state.agent_failures[0].detail;
    let category = state.agent_failures[0].category;
    assert_eq!(category, BlockerCategory::EnvError);
    assert!(failure.contains("invalid x-api-key: ***"), "{failure}");
    assert!(
        failure.contains("check that ANTHROPIC_API_KEY holds a valid key"),
        "{failure}"
    );
    let review =
        std::fs::read_to_string(demo.feature_dir().join("reviews/spec-review-1.json")).unwrap();
    assert!(review.contains("the key *** was found"), "{review}");
    let status = bin()
        .args(["status", "--json", "--repo"])
        .arg(&demo.repo)
        .output()
        .expect("status runs");
    let status_out = String::from_utf8_lossy(&status.stdout).into_owned();
    // The key left this process only in the x-api-key header.
    for r in fake.requests() {
        assert_eq!(r.headers.get("x-api-key").unwrap(), KEY);
        assert!(!String::from_utf8_lossy(&r.body).contains(KEY));
    }
    assert_nowhere(
        demo.tmp.path(),
        &demo.repo,
        &[&stdout, &stderr, &status_out],
        KEY,
    );
}
