//! Untrusted output within bounds: envelopes whose strings hold code samples, agent output,
//! findings and configuration files of hostile size or shape (issue #11 points 6 and 7).

use std::time::Duration;

use serde_json::json;

use crate::support::Scenario;

/// A whole scripted run's ceiling: far above a normal run, far below a hang.
const RUN_LIMIT: Duration = Duration::from_secs(240);

/// A suggestion the way reviewers write them: a fenced code sample with braces and quotes.
const CODE_SAMPLE: &str = "Guard it:\n```rust\nfn toggle(s: &str) -> &str { if s == \"}\" { \"{\" } else { s } }\n```\nthen test.";

#[test]
fn a_reviewer_envelope_whose_suggestion_holds_a_fenced_code_sample_is_accepted() {
    let s = Scenario::new(
        json!({"review": {"1": [{
            "severity": "minor",
            "gist": "the toggle has no guard",
            "suggestion": CODE_SAMPLE,
        }]}}),
        "",
    );
    s.run_cmd().timeout(RUN_LIMIT).assert().success();
    let state = s.state();
    let rounds = state["rounds"]["spec_review"].as_array().unwrap();
    assert_eq!(rounds[0]["gate"], "PASS", "{:?}", rounds[0]);
    assert!(rounds[0]["failure"].is_null(), "{:?}", rounds[0]);
    assert_eq!(rounds[0]["minor"], 1, "{:?}", rounds[0]);
    assert_eq!(
        s.requests_of("spec_reviewer").len(),
        1,
        "accepted at once: no retry asking for JSON only"
    );
    assert!(
        state["arbitrations"]
            .as_array()
            .is_none_or(|a| a.is_empty()),
        "no role swap: {}",
        state["arbitrations"]
    );
    assert!(
        state["agent_failures"]
            .as_array()
            .is_none_or(|a| a.is_empty()),
        "{}",
        state["agent_failures"]
    );
    let review: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(s.demo.feature_dir().join("reviews/spec-review-1.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        review["findings"][0]["suggestion"], CODE_SAMPLE,
        "the code sample is kept whole"
    );
    assert_eq!(state["pr"]["draft"], false);
}
