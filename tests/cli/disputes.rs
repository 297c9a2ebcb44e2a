//! A failed acceptance case the implementer can show is wrong goes back to the spec, not around
//! the fix loop (docs/phases.md#disputed-cases), through real runs with scripted agents: the
//! spec's case T-A02 expects output its requirement does not ask for (`NOPE`, where the check
//! prints `OK`), so no correct build passes it.

use serde_json::json;
use spec_orchestrate::state::State;
use spec_orchestrate::types::kinds::{Answer, Decision, DisputeEnd, Gate, Ruling, WaitKind};
use spec_orchestrate::types::{Phase, Role, Signal};

use crate::support::Scenario;

/// The fix task's answer, as real models write it: a `DISPUTE <case>` line, prose, evidence.
const DISPUTE: &str = "T-A01 and T-A03 pass.\n\nDISPUTE T-A02\nREQ-002 says the check prints OK, and it does; the case expects NOPE, which no build meeting REQ-002 prints.\nEvidence:\n$ python3 check.py T-A02\nOK";

const CONFIRMED: &str = "the case contradicts REQ-002: a correct check prints OK";
const REJECTED: &str = "REQ-002 leaves the word open; the check must print NOPE";

fn scenario(ruling: &str, argument: &str) -> Scenario {
    Scenario::new(
        json!({
            "wrong_case": {"case": "T-A02", "expect": "NOPE"},
            "fix_answer": {"*": DISPUTE},
            "fix_rulings": {"*": [{"case": "T-A02", "ruling": ruling, "argument": argument}]},
        }),
        "",
    )
}

fn fix_tasks(state: &State) -> Vec<String> {
    state
        .tasks
        .iter()
        .filter(|t| t.id.starts_with("FIX"))
        .map(|t| t.id.clone())
        .collect()
}

fn draft(state: &State) -> bool {
    state.pr.as_ref().expect("a pull request").draft
}

fn body(s: &Scenario) -> String {
    std::fs::read_to_string(s.demo.feature_dir().join("pr-body.md")).unwrap()
}

/// The implementer disputes the case, the reviewer confirms, the author fixes the case, and the
/// run ends ready after one fix cycle: the contract review checked the revised case and
/// evaluate ran it again.
#[test]
fn a_confirmed_dispute_sends_the_case_back_to_the_spec_and_the_run_ends_ready() {
    let s = scenario("confirmed", CONFIRMED);
    s.run_cmd().assert().success();
    let state = s.state();
    assert!(!draft(&state), "{}", body(&s));
    assert_eq!(fix_tasks(&state), ["FIX1"], "one fix cycle");
    let evaluate = &state.rounds.evaluate;
    assert_eq!(evaluate.len(), 2);
    assert_eq!(evaluate[1].gate, Gate::Pass);
    assert_eq!(state.disputes.len(), 1);
    let d = &state.disputes[0];
    assert_eq!(
        (d.case.as_str(), d.task.as_str(), d.ruling, d.end),
        ("T-A02", "FIX1", Ruling::Confirmed, DisputeEnd::Revised)
    );
    assert!(d.evidence.contains("$ python3 check.py T-A02\nOK"));
    assert!(d.argument.starts_with("REQ-002 says the check prints OK"));
    assert_eq!(d.answer, CONFIRMED);

    // The fix task was told how to dispute; its reviewer saw the dispute beside the diff.
    let fix = s
        .requests_of("impl_backend")
        .into_iter()
        .find(|r| r["task"]["id"] == "FIX1")
        .unwrap();
    assert!(
        fix["prompt"]
            .as_str()
            .unwrap()
            .contains("DISPUTE <case id>: <your argument>")
    );
    let review = s
        .requests_of("task_reviewer")
        .into_iter()
        .find(|r| r["task"]["id"] == "FIX1")
        .unwrap();
    let review = review["prompt"].as_str().unwrap();
    assert!(review.contains("<<<DISPUTES-"), "{review}");
    assert!(review.contains("the case expects NOPE"), "{review}");
    assert!(
        review.find("<<<DISPUTES-") < review.find("<<<DIFF"),
        "{review}"
    );

    // The author got the case back with both sides' arguments, and the spec loop ran again:
    // the contract review (e2e_runner) checked the revised test.md.
    let authors = s.requests_of("spec_author");
    assert_eq!(authors.len(), 2);
    let revision = authors[1]["prompt"].as_str().unwrap();
    assert!(
        revision.contains("T-A02 cannot pass on a correct build"),
        "{revision}"
    );
    assert!(revision.contains(CONFIRMED), "{revision}");
    assert_eq!(state.rounds.spec_review.len(), 2);
    let test_md = std::fs::read_to_string(s.demo.feature_dir().join("test.md")).unwrap();
    assert!(!test_md.contains("NOPE"), "{test_md}");
    assert!(state.arbitrations.is_empty());

    // The PR body's history lists the dispute, who ruled and how it ended.
    let body = body(&s);
    assert!(body.contains("#### Disputed acceptance cases"), "{body}");
    assert!(
        body.contains("| T-A02 | 1 | alpha (FIX1) |")
            && body.contains("| beta | confirmed | the case contradicts REQ-002")
            && body.contains("the spec author revised the case"),
        "{body}"
    );
    eprintln!(
        "confirmed dispute: fix cycles {}, evaluate rounds {}, agent calls {}",
        fix_tasks(&state).len(),
        evaluate.len(),
        s.requests().len()
    );
}

/// The reviewer rejects the dispute: the case stands and the fix loop goes on as before, until
/// its stall signals and arbitration land a draft, whose body quotes both arguments.
#[test]
fn a_rejected_dispute_keeps_the_fix_loop_and_the_draft_quotes_the_arguments() {
    let s = scenario("rejected", REJECTED);
    // A run that lands a draft exits 1.
    s.run_cmd().assert().code(1);
    let state = s.state();
    assert!(draft(&state));
    let fixes = fix_tasks(&state);
    assert!(fixes.len() >= 3, "{fixes:?}");
    assert_eq!(
        state.disputes.len(),
        fixes.len(),
        "one dispute per fix task"
    );
    assert!(
        state
            .disputes
            .iter()
            .all(|d| d.ruling == Ruling::Rejected && d.end == DisputeEnd::FixLoop),
        "{:?}",
        state.disputes
    );
    assert_eq!(
        s.requests_of("spec_author").len(),
        1,
        "the spec was never sent back"
    );
    assert!(
        state
            .arbitrations
            .iter()
            .all(|a| a.phase == Phase::Evaluate),
        "{:?}",
        state.arbitrations
    );

    let body = body(&s);
    let unresolved = &body[body
        .find("### Unresolved")
        .expect("a draft lists what is open")..];
    assert!(
        unresolved.contains("| Last argument for | Last argument against |"),
        "{unresolved}"
    );
    let row = unresolved
        .lines()
        .find(|l| l.contains("test.md § T-A02"))
        .expect("the case's row");
    assert!(
        row.contains(&format!("(task reviewer): {REJECTED}")),
        "{row}"
    );
    assert!(
        row.contains("(implementer): REQ-002 says the check prints OK"),
        "{row}"
    );
    eprintln!(
        "rejected dispute: fix cycles {}, evaluate rounds {}, agent calls {}",
        fixes.len(),
        state.rounds.evaluate.len(),
        s.requests().len()
    );
}

/// An author that leaves the disputed case as it was: the second confirmed dispute of the
/// unchanged case is a stall of the spec loop, arbitrated like any other (the author is
/// swapped), and the third, with no swap left, lands a draft.
#[test]
fn a_case_confirmed_disputed_again_unchanged_stalls_the_spec_loop() {
    let s = Scenario::new(
        json!({
            "wrong_case": {"case": "T-A02", "expect": "NOPE", "stubborn": true},
            "fix_answer": {"*": DISPUTE},
            "fix_rulings": {"*": [{"case": "T-A02", "ruling": "confirmed", "argument": CONFIRMED}]},
        }),
        "",
    );
    s.run_cmd().assert().code(1);
    let state = s.state();
    assert!(draft(&state));
    let ends: Vec<DisputeEnd> = state.disputes.iter().map(|d| d.end).collect();
    assert_eq!(
        ends,
        [
            DisputeEnd::Unchanged,
            DisputeEnd::Stalled,
            DisputeEnd::Stalled
        ]
    );
    let arbitrations: Vec<(Phase, Signal, Decision)> = state
        .arbitrations
        .iter()
        .map(|a| (a.phase, a.signal, a.decision))
        .collect();
    assert_eq!(
        arbitrations,
        [
            (Phase::SpecReview, Signal::S1, Decision::Swap),
            (Phase::SpecReview, Signal::S1, Decision::Draft)
        ]
    );
    assert_eq!(state.roles[&Role::SpecAuthor].as_str(), "beta");
    // The evaluate loop itself never stalled: each confirmed dispute restarted its window.
    assert_eq!(fix_tasks(&state), ["FIX1", "FIX2", "FIX3"]);
    // The draft's open finding is the disputed case, with the argument for it quoted.
    let body = body(&s);
    let unresolved = &body[body
        .find("### Unresolved")
        .expect("a draft lists what is open")..];
    let row = unresolved
        .lines()
        .find(|l| l.contains("test.md § T-A02"))
        .expect("the case's row");
    assert!(
        row.contains("T-A02 cannot pass on a correct build")
            && row.contains(
                "alpha (implementer, confirmed by beta): REQ-002 says the check prints OK"
            ),
        "{row}"
    );
}

/// In manual mode a confirmed dispute waits for a person like an arbitration (resuming runs
/// nothing); `arbitrate approve` sends the case to the spec, and the run ends ready.
#[test]
fn in_manual_mode_a_confirmed_dispute_waits_for_a_person() {
    let s = scenario("confirmed", CONFIRMED);
    let cli = |args: &[&str]| {
        let mut c = crate::support::bin();
        c.args(args).arg("--repo").arg(&s.demo.repo);
        c
    };
    s.run_cmd().arg("--mode").arg("manual").assert().success();
    assert_eq!(waiting(&s.state()), Some(WaitKind::Approval));
    cli(&["approve"]).assert().success();
    cli(&["resume"]).assert().success();
    let state = s.state();
    assert_eq!(waiting(&state), Some(WaitKind::Dispute), "{state:#?}");
    assert_eq!(
        state.waiting.as_ref().unwrap().choices,
        [Answer::Approve, Answer::Continue, Answer::Draft]
    );
    assert_eq!(state.disputes[0].end, DisputeEnd::Waiting);
    let calls = s.requests().len();
    cli(&["resume"]).assert().success();
    assert_eq!(s.requests().len(), calls, "a waiting dispute runs nothing");
    cli(&["arbitrate", "swap"]).assert().failure();
    cli(&["arbitrate", "approve"]).assert().success();
    let state = s.state();
    assert_eq!(state.disputes[0].end, DisputeEnd::Revised, "{state:#?}");
    assert!(state.disputes[0].decided_by.is_some());
    assert_eq!(s.requests_of("spec_author").len(), 2);
    assert_eq!(state.phase(), Phase::Done);
    assert!(!draft(&state));
}

fn waiting(state: &State) -> Option<WaitKind> {
    state.waiting.as_ref().map(|w| w.kind)
}
