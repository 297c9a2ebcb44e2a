//! Contract negotiation: during spec_review the e2e_runner reviews test.md, its findings gate
//! like the reviewer's, and its reasoning never reaches the author or the implementer.

use serde_json::json;

use crate::support::{Scenario, assert_first_review_failed, role_agent, with_agent};
use spec_orchestrate::types::kinds::{BlockerCategory, CallRole, Decision, Gate};
use spec_orchestrate::types::{Role, Signal};

const REASONING: &str = "SECRET-EVALUATOR-REASONING";
const PROSE: &str = "EVALUATOR-PROSE-MARKER";

#[test]
fn contract_findings_gate_the_review_and_only_the_findings_travel_on() {
    let s = Scenario::new(
        json!({
            "contract": {"1": [{
                "id": "C1",
                "severity": "improvement",
                "section": "T-A02",
                "gist": "T-A02 checks no observable outcome",
                "argument": REASONING,
                "suggestion": "add an Output contains marker to T-A02"
            }]},
            "contract_prose": format!("{PROSE}: here is how I reasoned about the harness."),
        }),
        "",
    );
    s.run_cmd().assert().success();
    let rounds = s.state().rounds.spec_review;
    assert_eq!(rounds.len(), 2);
    // The reviewer had nothing; the contract finding alone failed round 1.
    assert_eq!(rounds[0].gate, Gate::Fail);
    assert_eq!(rounds[0].improvement, 1);
    assert_eq!(rounds[0].members, ["spec_reviewer", "e2e_runner"]);
    assert_eq!(rounds[1].gate, Gate::Pass);
    assert_eq!(s.requests_of("e2e_runner").len(), 2, "reviewed every round");
    for r in s.requests_of("e2e_runner") {
        assert_eq!(r["phase"], "spec_review");
        assert!(
            r["prompt"]
                .as_str()
                .unwrap()
                .contains("acceptance contract")
        );
    }

    let review: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(s.demo.feature_dir().join("reviews/spec-review-1.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(review["findings"][0]["raised_by"], json!(["e2e_runner"]));

    // The author of round 2 got the finding (claim and fix) …
    let authors = s.requests_of("spec_author");
    let revision = authors[1]["prompt"].as_str().unwrap();
    assert!(
        revision.contains("T-A02 checks no observable outcome"),
        "{revision}"
    );
    assert!(
        revision.contains("add an Output contains marker"),
        "{revision}"
    );
    // … but no writer ever saw the evaluator's reasoning or prose, and it was not kept.
    for r in s.requests() {
        let role = r["role"].as_str().unwrap();
        if role == "e2e_runner" {
            continue;
        }
        let prompt = r["prompt"].as_str().unwrap();
        assert!(
            !prompt.contains(REASONING) && !prompt.contains(PROSE),
            "{role} saw the evaluator's reasoning"
        );
    }
    for entry in walkdir::WalkDir::new(s.demo.feature_dir()) {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            assert!(
                !text.contains(REASONING) && !text.contains(PROSE),
                "{} keeps the evaluator's reasoning",
                entry.path().display()
            );
        }
    }
    assert!(
        s.requests()
            .iter()
            .any(|r| r["role"].as_str().unwrap().starts_with("impl_")),
        "the implementer ran"
    );
    assert!(!crate::support::pr_draft(&s.state()));
}

#[test]
fn a_failing_contract_reviewer_fails_the_round_and_is_swapped() {
    // The e2e_runner answers without an envelope, twice: the round fails (never a pass), and
    // arbitration swaps e2e_runner to its opposite agent, which reviews the contract properly.
    let s = Scenario::new(json!({}), "");
    let config = with_agent(
        &s.demo.config(),
        "broken",
        "{ kind: command, command: [\"sh\", \"-c\", \"echo no json here\"], opposite: beta }",
    )
    .replace("e2e_runner: alpha", "e2e_runner: broken\n");
    s.demo.write_config(&config);
    s.run_cmd().assert().success();
    let state = s.state();
    assert_first_review_failed(&state, "contract review by broken: malformed_output");
    assert_eq!(state.arbitrations[0].signal, Signal::AgentFailure);
    assert_eq!(state.arbitrations[0].decision, Decision::Swap);
    assert_eq!(state.arbitrations[0].from.as_deref(), Some("broken"));
    assert_eq!(state.arbitrations[0].to.as_deref(), Some("beta"));
    assert_eq!(role_agent(&state, Role::E2eRunner), "beta");
    assert_eq!(state.rounds.spec_review[1].gate, Gate::Pass);
    let e2e_runner = CallRole::Role(Role::E2eRunner);
    let failures: Vec<_> = state
        .agent_failures
        .iter()
        .filter(|f| f.role == e2e_runner)
        .collect();
    assert_eq!(
        failures.len(),
        1,
        "one malformed_output record: {failures:?}"
    );
    assert_eq!(failures[0].category, BlockerCategory::MalformedOutput);
}
