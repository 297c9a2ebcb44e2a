//! Stall signals S1–S4 through the real loops (the binary, git, scripted agents): each signal
//! fires in the spec_review loop and in the evaluate loop, and loops that are making progress,
//! with near misses of every signal, are never stopped.

use serde_json::{Value, json};

use spec_orchestrate::types::Role;
use spec_orchestrate::types::kinds::Gate;

use crate::support::{Scenario, arbitrations, evaluate_gates, pr_draft, role_agent};

/// A finding placed in section `section` with claim `gist`.
fn f(gist: &str, section: &str) -> Value {
    json!({"gist": gist, "section": section})
}

/// Runs the spec loop until spec_review passes and returns the scenario.
fn spec_loop(review: Value) -> Scenario {
    let s = Scenario::new(json!({ "review": review }), "");
    crate::support::run_until_ok(s.run_cmd(), "spec_review", &[]);
    s
}

fn review_rounds(s: &Scenario) -> usize {
    s.state().rounds.spec_review.len()
}

#[test]
fn spec_review_s1_same_finding_three_rounds_swaps_the_reviewer() {
    let a = f("The cache has no eviction policy", "Cache");
    let s = spec_loop(json!({"1": [a], "2": [a], "3": [a]}));
    assert_eq!(arbitrations(&s.state()), ["spec_review S1 swap 3"]);
    let state = s.state();
    let reviewer = role_agent(&state, Role::SpecReviewer);
    assert_eq!(reviewer, "alpha", "swapped from beta");
    assert_eq!(review_rounds(&s), 4);
    assert_eq!(state.rounds.spec_review[3].reviewer, "alpha");
    assert_eq!(state.rounds.spec_review[3].gate, Gate::Pass);
}

#[test]
fn spec_review_s2_count_not_going_down_is_a_stall() {
    let s = spec_loop(json!({
        "1": [f("first claim", "A")],
        "2": [f("second claim", "B")],
        "3": [f("third claim", "C")],
    }));
    assert_eq!(arbitrations(&s.state()), ["spec_review S2 swap 3"]);
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
    assert_eq!(arbitrations(&s.state()), ["spec_review S3 swap 3"]);
}

#[test]
fn spec_review_s4_first_firing_orders_a_restructure_instead_of_stopping() {
    let s = spec_loop(json!({
        "1": [f("persistence key unnamed", "Persistence"), f("b", "B"), f("c", "C")],
        "2": [f("persistence fallback missing", "4. Persistence"), f("e", "E")],
        "3": [f("persistence values undefined", "§4 persistence")],
    }));
    assert_eq!(
        arbitrations(&s.state()),
        ["spec_review S4 restructure 3"],
        "S4's first firing is not an arbitration of agents"
    );
    assert_eq!(
        review_rounds(&s),
        4,
        "the loop went on and passed in round 4"
    );
    let reviewer = role_agent(&s.state(), Role::SpecReviewer);
    assert_eq!(reviewer, "beta", "nobody swapped");
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
        arbitrations(&s.state()),
        ["spec_review S4 restructure 3", "spec_review S4 swap 4"]
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
    assert!(
        arbitrations(&s.state()).is_empty(),
        "{:?}",
        arbitrations(&s.state())
    );
    assert_eq!(review_rounds(&s), 5);
    let gates: Vec<Gate> = s
        .state()
        .rounds
        .spec_review
        .iter()
        .map(|r| r.gate)
        .collect();
    use Gate::{Fail, Pass};
    assert_eq!(gates, [Fail, Fail, Fail, Fail, Pass]);
}

/// Real reviewers reword what they repeat: the same complaint about the owner check comes back
/// in new words, in another file and section, every round. Counts fall (3, 2, 1) and no place
/// repeats, so without `still_open` no signal fires; naming the finding carries its fingerprint
/// over, S1 fires at round 3 (the author disputed the escalation twice) and the loop goes to
/// arbitration.
#[test]
fn spec_review_s1_fires_on_reworded_re_raises_that_name_their_finding() {
    let owner = |gist: &str, file: &str, section: &str, still_open: &str| json!({"gist": gist, "file": file, "section": section, "still_open": still_open});
    let plan = |named: &str| {
        json!({
            "1": [owner("DELETE does not check who owns the entry", "design.md", "Delete endpoint", ""),
                  f("b", "B"), f("c", "C")],
            "2": [owner("Deleting still skips the ownership check", "requirement.md", "Ownership", named),
                  f("d", "D")],
            "3": [owner("Anyone can still remove another user's entry", "test.md", "T-A02", named)],
        })
    };
    let discussion =
        "\n## Review Discussion\n\n- F1: not addressed, because the proxy checks the owner\n";
    let named = Scenario::new(
        json!({ "review": plan("F1"), "requirement_appendix": discussion }),
        "",
    );
    crate::support::run_until_ok(named.run_cmd(), "spec_review", &[]);
    assert_eq!(arbitrations(&named.state()), ["spec_review S1 swap 3"]);
    let state = named.state();
    let rounds = &state.rounds.spec_review;
    let first = &rounds[0].fingerprints[0];
    for r in &rounds[1..3] {
        assert_eq!(&r.fingerprints[0], first, "{r:?}");
    }

    // Round 1's reviewer sees no previous round; round 2's sees round 1's findings by id, the
    // author's answer and what changed, and is told to verify the fixes first.
    let reviews = named.requests_of("spec_reviewer");
    let prompt = |n: usize| reviews[n]["prompt"].as_str().unwrap().to_string();
    assert!(!prompt(0).contains("## Previous round"), "{}", prompt(0));
    let second = prompt(1);
    for part in [
        "## Previous round",
        "Round 1's fix-required findings",
        "\"id\": \"F1\"",
        "DELETE does not check who owns the entry",
        "not addressed, because the proxy checks the owner",
        "No section changed since round 1",
        "Verify what was fixed first",
    ] {
        assert!(second.contains(part), "{part}:\n{second}");
    }
    assert!(prompt(2).contains("Deleting still skips the ownership check"));

    // The same rewording without naming the finding: three different complaints, no signal.
    let unnamed = spec_loop(plan(""));
    assert!(
        arbitrations(&unnamed.state()).is_empty(),
        "{:?}",
        arbitrations(&unnamed.state())
    );
}

/// Runs a whole pipeline whose acceptance checks exit with the given codes round by round.
fn evaluate_loop(plan: Value) -> Scenario {
    let s = Scenario::new(json!({ "evaluate": plan }), "");
    s.run_cmd().assert().success();
    s
}

#[test]
fn evaluate_s1_same_failure_three_rounds_swaps_the_implementer_and_the_swap_fixes_it() {
    let s = evaluate_loop(json!([{"T-A01": 1}, {"T-A01": 1}, {"T-A01": 1}, {}]));
    assert_eq!(arbitrations(&s.state()), ["evaluate S1 swap 3"]);
    let state = s.state();
    assert_eq!(role_agent(&state, Role::ImplBackend), "beta");
    let fix3 = state
        .tasks
        .iter()
        .find(|t| t.id == "FIX3")
        .expect("a fix task after the swap");
    assert_eq!(fix3.implementer, "beta");
    assert_eq!(evaluate_gates(&state), ["FAIL", "FAIL", "FAIL", "PASS"]);
    assert!(!pr_draft(&state));
}

#[test]
fn evaluate_s2_failures_not_going_down_is_a_stall() {
    let s = evaluate_loop(json!([{"T-A01": 1}, {"T-A02": 1}, {"T-A03": 1}, {}]));
    assert_eq!(arbitrations(&s.state()), ["evaluate S2 swap 3"]);
}

#[test]
fn evaluate_s3_oscillation_is_a_stall() {
    let s = evaluate_loop(json!([
        {"T-A01": 1, "T-A02": 1},
        {"T-A03": 1},
        {"T-A01": 1, "T-A02": 1},
        {}
    ]));
    assert_eq!(arbitrations(&s.state()), ["evaluate S3 swap 3"]);
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
    assert_eq!(arbitrations(&s.state()), ["evaluate S4 restructure 3"]);
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
    assert_eq!(evaluate_gates(&s.state()), ["FAIL", "FAIL", "FAIL", "PASS"]);
    assert!(!pr_draft(&s.state()));
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
    assert!(
        arbitrations(&s.state()).is_empty(),
        "{:?}",
        arbitrations(&s.state())
    );
    assert_eq!(evaluate_gates(&s.state()), ["FAIL", "FAIL", "FAIL", "PASS"]);
    assert!(!pr_draft(&s.state()));
}
