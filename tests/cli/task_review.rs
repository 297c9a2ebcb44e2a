//! The implement loop's prompts through a real run: the task reviewer is scoped to its task
//! (text, requirements, `done`, files) and sees the implementer's dispute of its finding; the
//! implementer is told to run the project's tests and its acceptance commands and never to
//! weaken a test.

use serde_json::json;

use crate::support::Scenario;
use spec_orchestrate::state::TaskStatus;

const DISPUTE: &str = "DISPUTE F1: check.py already prints OK for every case, see outcome.json";

#[test]
fn the_task_reviewer_reviews_its_task_and_reads_the_implementers_dispute() {
    let s = Scenario::new(
        json!({
            "task_review": {"1": [{
                "id": "F1", "severity": "improvement", "file": "check.py",
                "gist": "the check prints nothing on success"
            }]},
            "implement_summary": {"2": format!("Done.\n{DISPUTE}")},
        }),
        "",
    );
    s.run_cmd().assert().success();

    let implementers = s.requests_of("impl_backend");
    assert_eq!(implementers.len(), 2, "the finding sent the task back once");
    let first = implementers[0]["prompt"].as_str().unwrap();
    // Told to run the existing tests and this task's acceptance commands, never to weaken one.
    assert!(
        first.contains("run the project's existing tests"),
        "{first}"
    );
    for case in ["T-A01", "T-A02", "T-A03"] {
        assert!(
            first.contains(&format!(
                "- {case}: `python3 check.py {case}` (exit 0, output contains `OK`)"
            )),
            "{case}: {first}"
        );
    }
    assert!(
        first.contains("never weaken, skip or delete a test"),
        "{first}"
    );
    // The second attempt may dispute the finding (and does, in its answer).
    let second = implementers[1]["prompt"].as_str().unwrap();
    assert!(
        second.contains("the check prints nothing on success"),
        "{second}"
    );
    assert!(
        second.contains("`DISPUTE <finding id>: <your argument>`"),
        "{second}"
    );

    let reviews = s.requests_of("task_reviewer");
    assert_eq!(reviews.len(), 2);
    let first = reviews[0]["prompt"].as_str().unwrap();
    crate::support::assert_contains_all(
        first,
        &[
            "Review only this task",
            "Later tasks' requirements are out of scope",
            "T001: Write the check tool",
            "- [REQ-002] The second behaviour holds.",
        ],
    );
    assert!(
        !first.contains("## Glossary"),
        "only the requirement lines: {first}"
    );
    assert!(
        first.contains("`done` criteria: every case passes"),
        "{first}"
    );
    assert!(first.contains("Files: check.py, outcome.json"), "{first}");
    assert!(!first.contains("DISPUTE F1"), "{first}");
    // The next reviewer sees its previous finding and the implementer's argument, quoted.
    let second = reviews[1]["prompt"].as_str().unwrap();
    assert!(
        second.contains("the check prints nothing on success"),
        "{second}"
    );
    assert!(second.contains(DISPUTE), "{second}");
    assert!(
        second.contains("<<<ANSWER-"),
        "the answer is quoted: {second}"
    );
    assert_eq!(s.state().tasks[0].status, TaskStatus::Done);
}
