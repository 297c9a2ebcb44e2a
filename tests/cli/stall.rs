//! Stall signals S1–S4 through the real loops (the binary, git, scripted agents): each signal
//! fires in the spec_review loop and in the evaluate loop, and loops that are making progress,
//! with near misses of every signal, are never stopped.

use serde_json::{Value, json};

use crate::support::Scenario;

/// A finding placed in section `section` with claim `gist`.
fn f(gist: &str, section: &str) -> Value {
    json!({"gist": gist, "section": section})
}

fn arbitrations(s: &Scenario) -> Vec<(String, String, String, u64)> {
    s.state()["arbitrations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["phase"].as_str().unwrap().to_string(),
                a["signal"].as_str().unwrap().to_string(),
                a["decision"].as_str().unwrap().to_string(),
                a["after_round"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn owned(v: &[(&str, &str, &str, u64)]) -> Vec<(String, String, String, u64)> {
    v.iter()
        .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), *d))
        .collect()
}

/// Runs the spec loop until spec_review passes and returns the scenario.
fn spec_loop(review: Value) -> Scenario {
    let s = Scenario::new(json!({ "review": review }), "");
    s.run_cmd()
        .arg("--until")
        .arg("spec_review")
        .assert()
        .success();
    s
}

fn review_rounds(s: &Scenario) -> usize {
    s.state()["rounds"]["spec_review"].as_array().unwrap().len()
}

#[test]
fn spec_review_s1_same_finding_three_rounds_swaps_the_reviewer() {
    let a = f("The cache has no eviction policy", "Cache");
    let s = spec_loop(json!({"1": [a], "2": [a], "3": [a]}));
    assert_eq!(arbitrations(&s), owned(&[("spec_review", "S1", "swap", 3)]));
    let state = s.state();
    assert_eq!(
        state["roles"]["spec_reviewer"], "alpha",
        "swapped from beta"
    );
    assert_eq!(review_rounds(&s), 4);
    assert_eq!(state["rounds"]["spec_review"][3]["reviewer"], "alpha");
    assert_eq!(state["rounds"]["spec_review"][3]["gate"], "PASS");
}

#[test]
fn spec_review_s2_count_not_going_down_is_a_stall() {
    let s = spec_loop(json!({
        "1": [f("first claim", "A")],
        "2": [f("second claim", "B")],
        "3": [f("third claim", "C")],
    }));
    assert_eq!(arbitrations(&s), owned(&[("spec_review", "S2", "swap", 3)]));
}

#[test]
fn spec_review_s3_oscillation_is_a_stall() {
    let a = f("claim a", "A");
    let b = f("claim b", "B");
    let s = spec_loop(json!({
        "1": [a, b],
        "2": [f("claim c", "C")],
        "3": [a, b],
    }));
    assert_eq!(arbitrations(&s), owned(&[("spec_review", "S3", "swap", 3)]));
}

#[test]
fn spec_review_s4_first_firing_orders_a_restructure_instead_of_stopping() {
    let s = spec_loop(json!({
        "1": [f("persistence key unnamed", "Persistence"), f("b", "B"), f("c", "C")],
        "2": [f("persistence fallback missing", "4. Persistence"), f("e", "E")],
        "3": [f("persistence values undefined", "§4 persistence")],
    }));
    assert_eq!(
        arbitrations(&s),
        owned(&[("spec_review", "S4", "restructure", 3)]),
        "S4's first firing is not an arbitration of agents"
    );
    assert_eq!(
        review_rounds(&s),
        4,
        "the loop went on and passed in round 4"
    );
    assert_eq!(
        s.state()["roles"]["spec_reviewer"],
        "beta",
        "nobody swapped"
    );
    let authors = s.requests_of("spec_author");
    assert_eq!(authors.len(), 4);
    let revision = authors[3]["prompt"].as_str().unwrap();
    assert!(
        revision.contains("RESTRUCTURE ORDER")
            && revision.contains("design.md (section \"§4 persistence\")"),
        "the author of round 4 was ordered to restructure the section:\n{revision}"
    );
    for earlier in &authors[..3] {
        assert!(!earlier["prompt"].as_str().unwrap().contains("RESTRUCTURE"));
    }
}

#[test]
fn spec_review_s4_second_firing_goes_to_arbitration() {
    let s = spec_loop(json!({
        "1": [f("persistence key unnamed", "Persistence"), f("b", "B"), f("c", "C")],
        "2": [f("persistence fallback missing", "Persistence"), f("e", "E")],
        "3": [f("persistence values undefined", "Persistence")],
        "4": [f("persistence still vague", "Persistence")],
    }));
    assert_eq!(
        arbitrations(&s),
        owned(&[
            ("spec_review", "S4", "restructure", 3),
            ("spec_review", "S4", "swap", 4),
        ])
    );
}

#[test]
fn spec_review_progress_with_near_misses_of_every_signal_is_never_stopped() {
    // Round 2 repeats round 1's `a` (S1 needs three), counts fall 4,3,2,1 (no S2), round 3
    // brings back round 1's `b` but not all of round 1 (no S3), and no section is hit three
    // rounds running (no S4).
    let s = spec_loop(json!({
        "1": [f("a", "A"), f("b", "B"), f("c", "C"), f("d", "D")],
        "2": [f("a", "A"), f("e", "E"), f("f", "F")],
        "3": [f("b", "B"), f("g", "G")],
        "4": [f("h", "H")],
    }));
    assert!(arbitrations(&s).is_empty(), "{:?}", arbitrations(&s));
    assert_eq!(review_rounds(&s), 5);
    let state = s.state();
    let gates: Vec<&str> = state["rounds"]["spec_review"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["gate"].as_str().unwrap())
        .collect();
    assert_eq!(gates, ["FAIL", "FAIL", "FAIL", "FAIL", "PASS"]);
}

/// Runs a whole pipeline whose acceptance checks exit with the given codes round by round.
fn evaluate_loop(plan: Value) -> Scenario {
    let s = Scenario::new(json!({ "evaluate": plan }), "");
    s.run_cmd().assert().success();
    s
}

fn evaluate_gates(s: &Scenario) -> Vec<String> {
    s.state()["rounds"]["evaluate"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["gate"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn evaluate_s1_same_failure_three_rounds_swaps_the_implementer_and_the_swap_fixes_it() {
    let s = evaluate_loop(json!([{"T-A01": 1}, {"T-A01": 1}, {"T-A01": 1}, {}]));
    assert_eq!(arbitrations(&s), owned(&[("evaluate", "S1", "swap", 3)]));
    let state = s.state();
    assert_eq!(state["roles"]["impl_backend"], "beta");
    let fix3 = state["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "FIX3")
        .expect("a fix task after the swap");
    assert_eq!(fix3["implementer"], "beta");
    assert_eq!(evaluate_gates(&s), ["FAIL", "FAIL", "FAIL", "PASS"]);
    assert_eq!(state["pr"]["draft"], false);
}

#[test]
fn evaluate_s2_failures_not_going_down_is_a_stall() {
    let s = evaluate_loop(json!([{"T-A01": 1}, {"T-A02": 1}, {"T-A03": 1}, {}]));
    assert_eq!(arbitrations(&s), owned(&[("evaluate", "S2", "swap", 3)]));
}

#[test]
fn evaluate_s3_oscillation_is_a_stall() {
    let s = evaluate_loop(json!([
        {"T-A01": 1, "T-A02": 1},
        {"T-A03": 1},
        {"T-A01": 1, "T-A02": 1},
        {}
    ]));
    assert_eq!(arbitrations(&s), owned(&[("evaluate", "S3", "swap", 3)]));
}

#[test]
fn evaluate_s4_first_firing_orders_the_implementer_to_rework_the_case() {
    // T-A01 fails every round, differently each time (exit 1, 2, 3): same place, new finding.
    let s = evaluate_loop(json!([
        {"T-A01": 1, "T-A02": 1, "T-A03": 1},
        {"T-A01": 2, "T-A02": 2},
        {"T-A01": 3},
        {}
    ]));
    assert_eq!(
        arbitrations(&s),
        owned(&[("evaluate", "S4", "restructure", 3)])
    );
    let fixes: Vec<Value> = s
        .requests_of("impl_backend")
        .into_iter()
        .filter(|r| r["task"]["id"].as_str().unwrap_or("").starts_with("FIX"))
        .collect();
    let by_task = |id: &str| {
        fixes
            .iter()
            .find(|r| r["task"]["id"] == id)
            .unwrap_or_else(|| panic!("{id} was implemented"))["prompt"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        by_task("FIX3").contains("Rework the implementation behind T-A01 from scratch"),
        "{}",
        by_task("FIX3")
    );
    assert!(!by_task("FIX2").contains("Rework"));
    assert_eq!(evaluate_gates(&s), ["FAIL", "FAIL", "FAIL", "PASS"]);
    assert_eq!(s.state()["pr"]["draft"], false);
}

#[test]
fn evaluate_progress_with_near_misses_is_never_stopped() {
    // T-A01 fails the same way twice (not three times), counts fall 3,2,1, and no case fails
    // three rounds running.
    let s = evaluate_loop(json!([
        {"T-A01": 1, "T-A02": 1, "T-A03": 1},
        {"T-A01": 1, "T-A02": 2},
        {"T-A03": 2},
        {}
    ]));
    assert!(arbitrations(&s).is_empty(), "{:?}", arbitrations(&s));
    assert_eq!(evaluate_gates(&s), ["FAIL", "FAIL", "FAIL", "PASS"]);
    assert_eq!(s.state()["pr"]["draft"], false);
}
