//! HTTP agents (`anthropic`, `openai`) in the roles whose calls ask for different answers: the
//! e2e_runner reviews the acceptance contract (an envelope) and converts browser steps
//! (`{"steps"}`), the judge rules on a debate (`{"decisions"}`). The shape is chosen per call
//! and sent as such: each fake answers only the shape the request asks for, so a request held
//! to the wrong schema fails the run.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, Request, ResponseTemplate};

use crate::fakes::{EMPTY_ENVELOPE, Fake, anthropic, openai};
use crate::http_backends::{KEY, quotes_file};
use crate::support::{Scenario, demo_with_api, run_until_ok};
use spec_orchestrate::types::kinds::Gate;

/// The demo's browser case as a model answers it when no schema holds it: prose around a
/// fenced JSON block.
fn steps_answer() -> String {
    let steps = json!({"steps": [
        {"action": "goto", "url": "/"},
        {"action": "expect_visible", "selector": "#theme-toggle"},
        {"action": "click", "selector": "#theme-toggle"},
        {"action": "wait_for", "selector": "html[data-theme=\"dark\"]", "state": "attached"},
        {"action": "screenshot", "name": "dark"}
    ]});
    format!(
        "Here are the steps for T-A05:\n\n```json\n{steps}\n```\n\nThey use the ids of index.html."
    )
}

/// What the request asks for: the schema's name, or `json_object` when it asks for JSON
/// without a schema (OpenAI's `text.format`; for Anthropic, the absence of `output_config`).
fn asked_shape(body: &Value) -> String {
    if let Some(format) = body.get("text").and_then(|t| t.get("format")) {
        return match format["type"].as_str() {
            Some("json_schema") => format["name"].as_str().unwrap_or_default().to_string(),
            other => other.unwrap_or_default().to_string(),
        };
    }
    match body.get("output_config") {
        Some(c) => {
            let required = &c["format"]["schema"]["required"];
            if required == &json!(["findings", "converged", "remaining_disputes", "rulings"]) {
                "review_envelope".into()
            } else if required == &json!(["decisions", "spec"]) {
                "judge_decisions".into()
            } else {
                format!("unexpected schema {required}")
            }
        }
        None => "json_object".into(),
    }
}

#[test]
fn an_anthropic_e2e_runner_converts_steps_and_reviews_the_contract_each_in_its_own_shape() {
    let fake = Fake::start();
    let answer = |req: &Request| {
        let body: Value = serde_json::from_slice(&req.body).unwrap();
        match asked_shape(&body).as_str() {
            "json_object" => anthropic::ok(&steps_answer(), 1200, 200),
            "review_envelope" => anthropic::ok(EMPTY_ENVELOPE, 1500, 40),
            other => ResponseTemplate::new(400).set_body_string(format!("not asked: {other}")),
        }
    };
    fake.mount(
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(answer),
    );
    let demo = demo_with_api(
        &format!("kind: anthropic, base_url: \"{}\"", fake.uri()),
        &[("e2e_runner", "api")],
    );
    run_until_ok(demo.run_cmd(), "spec_review", &[("ANTHROPIC_API_KEY", KEY)]);
    fake.verify();
    let state = demo.state();
    assert!(
        state.agent_failures.iter().all(|f| f.agent != "api"),
        "{:?}",
        state.agent_failures
    );
    // The demo's reviewer sends round 1 back; the contract review ran in both rounds.
    let rounds = &state.rounds.spec_review;
    assert_eq!(rounds.len(), 2);
    assert_eq!(rounds[1].gate, Gate::Pass, "{:?}", rounds[1]);
    let steps: Value = serde_json::from_str(
        &std::fs::read_to_string(demo.feature_dir().join("test.steps.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(steps["cases"]["T-A05"]["converted_by"], "api");
    assert_eq!(steps["cases"]["T-A05"]["steps"][2]["action"], "click");

    let bodies = fake.bodies();
    let shapes: Vec<String> = bodies.iter().map(asked_shape).collect();
    assert_eq!(
        shapes,
        ["json_object", "review_envelope", "review_envelope"]
    );
    let text = |b: &Value| {
        b["messages"][0]["content"][1]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(text(&bodies[0]).contains("T-A05"), "{}", text(&bodies[0]));
    assert!(text(&bodies[0]).contains("{\"steps\": [ … ]}"));
    assert!(text(&bodies[1]).contains("acceptance contract"));
    let documents = bodies[1]["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(quotes_file(
        documents,
        ".specs/add-a-dark-mode-toggle/test.md"
    ));
}

#[test]
fn an_openai_judge_rules_on_a_debate_with_the_decisions_schema() {
    let fake = Fake::start();
    let ruling = json!({"decisions": [
        {"id": "A.F1", "decision": "rejected", "reason": "the issue does not ask for a shortcut"}
    ], "spec": null});
    let answer = move |req: &Request| {
        let body: Value = serde_json::from_slice(&req.body).unwrap();
        match asked_shape(&body).as_str() {
            "judge_decisions" => openai::ok(&ruling.to_string(), 900, 60),
            other => ResponseTemplate::new(400).set_body_string(format!("not asked: {other}")),
        }
    };
    fake.mount(
        Mock::given(method("POST"))
            .and(path("/v1/responses"))
            .respond_with(answer)
            .expect(1),
    );
    let s = Scenario::new(
        json!({ "debate": crate::support::one_finding_debate() }),
        "review:\n  strategy: debate\n",
    );
    let config = s.demo.config().replace(
        "agents:\n",
        &format!(
            "agents:\n  api: {{ kind: openai, model: gpt-5, base_url: \"{}\" }}\n",
            fake.uri()
        ),
    );
    s.demo
        .write_config(&config.replace("  judge: alpha\n", "  judge: api\n"));
    run_until_ok(s.run_cmd(), "spec_review", &[("OPENAI_API_KEY", KEY)]);
    fake.verify();
    let r1 = &s.state().rounds.spec_review[0];
    let gate = r1.gate;
    assert_eq!(
        gate,
        Gate::Pass,
        "the judge rejected the only finding: {r1:?}"
    );
    let body = &fake.bodies()[0];
    assert_eq!(body["text"]["format"]["strict"], true);
    assert_eq!(
        body["text"]["format"]["schema"]["properties"]["decisions"]["items"]["properties"]["decision"]
            ["enum"],
        json!(["adopted", "rejected"])
    );
    let input = body["input"].as_str().unwrap();
    assert!(input.contains("A.F1"), "{input}");
    assert!(
        input.contains("Do not rewrite the specification"),
        "{input}"
    );
}

/// What a strictly constrained model can write: only the keys the request's schema defines
/// (structured outputs never produce another), so an answer planned with a key the schema
/// lacks arrives without it.
fn held_to_schema(body: &Value, mut answer: Value) -> String {
    let schema = &body["output_config"]["format"]["schema"];
    let defined = &schema["properties"]["findings"]["items"]["properties"];
    for f in answer["findings"].as_array_mut().unwrap() {
        f.as_object_mut()
            .unwrap()
            .retain(|k, _| defined.get(k).is_some());
    }
    answer.to_string()
}

/// An HTTP spec reviewer re-raises its round-1 finding in round 2 in new words, on another
/// section, naming it in `still_open`: the envelope schema lets it (nullable `still_open` and
/// `disputes`), and the round-1 fingerprint is carried over into round 2.
#[test]
fn an_http_reviewer_reraises_a_finding_with_still_open_and_its_fingerprint_carries_over() {
    let fake = Fake::start();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = calls.clone();
    let finding = |gist: &str, section: &str, still_open: Value| {
        json!({"id": "F1", "requirement_id": "REQ-001", "severity": "critical",
               "file": "design.md", "section": section, "gist": gist,
               "argument": "the toggle's state is lost on reload", "suggestion": "store it",
               "still_open": still_open, "disputes": null})
    };
    let rounds = [
        json!({"findings": [finding("the theme is not persisted", "Architecture", Value::Null)],
               "converged": false, "remaining_disputes": []}),
        json!({"findings": [finding("reloading still forgets the chosen theme", "Storage", json!("F1"))],
               "converged": false, "remaining_disputes": []}),
        json!({"findings": [], "converged": true, "remaining_disputes": []}),
    ];
    let answer = move |req: &Request| {
        let body: Value = serde_json::from_slice(&req.body).unwrap();
        if asked_shape(&body) != "review_envelope" {
            return ResponseTemplate::new(400).set_body_string("not asked");
        }
        let n = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let planned = rounds[n.min(rounds.len() - 1)].clone();
        anthropic::ok(&held_to_schema(&body, planned), 1500, 80)
    };
    fake.mount(
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(answer),
    );
    let demo = demo_with_api(
        &format!("kind: anthropic, base_url: \"{}\"", fake.uri()),
        &[("spec_reviewer", "api")],
    );
    run_until_ok(demo.run_cmd(), "spec_review", &[("ANTHROPIC_API_KEY", KEY)]);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 3);
    let rounds = demo.state().rounds.spec_review;
    assert_eq!(rounds.len(), 3, "{rounds:?}");
    assert_eq!(rounds[0].fingerprints.len(), 1);
    assert_eq!(
        rounds[1].fingerprints, rounds[0].fingerprints,
        "the re-raise carries round 1's fingerprint"
    );
    assert_eq!(rounds[1].class_keys, rounds[0].class_keys);
    assert_eq!(rounds[2].gate, Gate::Pass);
    let bodies = fake.bodies();
    let item = &bodies[1]["output_config"]["format"]["schema"]["properties"]["findings"]["items"];
    assert_eq!(
        item["properties"]["still_open"]["type"],
        json!(["string", "null"])
    );
    assert!(
        item["required"]
            .as_array()
            .unwrap()
            .contains(&json!("disputes"))
    );
}
