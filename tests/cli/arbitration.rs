//! Arbitration through the binary: auto mode swaps up to `role_swap_max` then lands a draft that
//! lists every unresolved finding; manual mode waits with the choices and `arbitrate` resumes.
//! Every arbitration shows in state, in `status` and in the PR body.

use serde_json::{Value, json};
use spec_orchestrate::types::kinds::{Answer, Gate, WaitKind};
use spec_orchestrate::types::{Phase, Role};

use crate::support::{Scenario, arbitrations, bin, pr_draft, role_agent};

fn repeating(rounds: u32, findings: Value) -> Value {
    let mut review = serde_json::Map::new();
    for r in 1..=rounds {
        review.insert(r.to_string(), findings.clone());
    }
    json!({ "review": review })
}

fn two_findings() -> Value {
    json!([
        {"gist": "The cache has no eviction policy", "section": "Cache", "requirement_id": "REQ-002"},
        {"gist": "Retry limits are not stated", "section": "Errors", "severity": "improvement"}
    ])
}

fn status_text(s: &Scenario) -> String {
    let out = s.demo.cmd("status").assert().success();
    String::from_utf8_lossy(&out.get_output().stdout).into_owned()
}

#[test]
fn auto_mode_swaps_once_then_lands_a_draft_listing_every_unresolved_finding() {
    let s = Scenario::new(
        repeating(12, two_findings()),
        "limits:\n  role_swap_max: 1\n",
    );
    s.run_cmd().assert().code(1); // landed as a draft
    let state = s.state();
    assert_eq!(
        arbitrations(&state),
        ["spec_review S1 swap 3", "spec_review S1 draft 6"]
    );
    assert_eq!(state.arbitrations[0].from.as_deref(), Some("beta"));
    assert_eq!(state.arbitrations[0].to.as_deref(), Some("alpha"));
    assert_eq!(state.rounds.spec_review.len(), 6);
    assert!(pr_draft(&state));
    assert_eq!(state.phase(), Phase::Done);

    let body = std::fs::read_to_string(s.demo.feature_dir().join("pr-body.md")).unwrap();
    let unresolved = body
        .split("### Unresolved")
        .nth(1)
        .expect("a draft has an Unresolved section");
    let open = &state.open_findings;
    assert_eq!(open.len(), 2);
    for f in open {
        let fp = f.fingerprint.as_deref().unwrap();
        assert_eq!(fp.len(), 64);
        let row = unresolved
            .lines()
            .find(|l| l.contains(fp))
            .unwrap_or_else(|| panic!("{fp} listed:\n{unresolved}"));
        assert!(row.contains(f.severity.as_str()), "{row}");
        assert!(row.contains(&f.gist), "{row}");
    }
    assert!(
        body.contains("| spec_review | S1 | 3 | swap | beta | alpha |"),
        "{body}"
    );
    assert!(body.contains("| spec_review | S1 | 6 | draft |"), "{body}");

    let text = status_text(&s);
    assert!(
        text.contains("arbitration: spec_review S1 after round 3 → swap"),
        "{text}"
    );
    assert!(
        text.contains("arbitration: spec_review S1 after round 6 → draft"),
        "{text}"
    );
}

#[test]
fn role_swap_max_zero_lands_the_draft_at_the_first_stall() {
    let s = Scenario::new(
        repeating(6, two_findings()),
        "limits:\n  role_swap_max: 0\n",
    );
    s.run_cmd().assert().code(1);
    let state = s.state();
    assert_eq!(arbitrations(&state), ["spec_review S1 draft 3"]);
    assert_eq!(role_agent(&state, Role::SpecReviewer), "beta");
}

#[test]
fn manual_mode_waits_and_arbitrate_continue_swap_draft_resume_it() {
    let s = Scenario::new(repeating(12, two_findings()), "");
    s.run_cmd().arg("--mode").arg("manual").assert().success();
    let state = s.state();
    let waiting = state.waiting.as_ref().unwrap();
    assert_eq!(waiting.kind, WaitKind::Arbitration);
    assert_eq!(
        waiting.choices,
        [
            Answer::Continue,
            Answer::Swap,
            Answer::Draft,
            Answer::Approve
        ]
    );
    assert_eq!(arbitrations(&state), ["spec_review S1 ask 3"]);
    let text = status_text(&s);
    assert!(
        text.contains("choices:   continue, swap, draft, approve"),
        "{text}"
    );

    // Resuming without an answer waits again and adds no round.
    s.demo.cmd("resume").assert().success();
    assert_eq!(s.state().rounds.spec_review.len(), 3);

    // continue: the window restarts, so three more rounds pass before S1 fires again.
    let arbitrate = |answer: &str| {
        let mut c = bin();
        c.arg("arbitrate")
            .arg(answer)
            .arg("--repo")
            .arg(&s.demo.repo);
        c
    };
    arbitrate("continue").assert().success();
    let state = s.state();
    assert_eq!(
        arbitrations(&state),
        [
            "spec_review S1 ask 3",
            "spec_review S1 continue 3",
            "spec_review S1 ask 6"
        ]
    );
    assert_eq!(role_agent(&state, Role::SpecReviewer), "beta");

    // swap: the reviewer role goes to the opposite agent.
    arbitrate("swap").assert().success();
    let state = s.state();
    assert_eq!(
        arbitrations(&state),
        [
            "spec_review S1 ask 3",
            "spec_review S1 continue 3",
            "spec_review S1 ask 6",
            "spec_review S1 swap 6",
            "spec_review S1 ask 9"
        ]
    );
    assert_eq!(role_agent(&state, Role::SpecReviewer), "alpha");
    assert_eq!(state.rounds.spec_review[6].reviewer, "alpha");

    // draft: the run lands as a draft (exit 1) listing the open findings.
    arbitrate("draft").assert().code(1);
    let state = s.state();
    assert_eq!(state.phase(), Phase::Done);
    assert!(pr_draft(&state));
    let body = std::fs::read_to_string(s.demo.feature_dir().join("pr-body.md")).unwrap();
    assert!(body.contains("| spec_review | S1 | 9 | draft |"), "{body}");
    assert!(
        body.contains("| spec_review | S1 | 6 | swap | beta | alpha |"),
        "{body}"
    );
    assert!(body.contains("### Unresolved"), "{body}");

    // Nothing is waiting any more: a clear error.
    let out = arbitrate("continue").assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("not waiting for an arbitration"),
        "{stderr}"
    );
}

#[test]
fn manual_arbitrate_approve_accepts_the_spec_and_the_run_finishes_ready() {
    let s = Scenario::new(repeating(3, two_findings()), "");
    s.run_cmd().arg("--mode").arg("manual").assert().success();
    assert_eq!(s.state().waiting.unwrap().kind, WaitKind::Arbitration);
    bin()
        .arg("arbitrate")
        .arg("approve")
        .arg("--repo")
        .arg(&s.demo.repo)
        .assert()
        .success();
    let state = s.state();
    assert_eq!(
        arbitrations(&state),
        ["spec_review S1 ask 3", "spec_review S1 approve 3"]
    );
    assert!(
        state.arbitrations[1]
            .note
            .contains("accepting 2 open finding(s)")
    );
    assert!(!state.approval.as_ref().unwrap().by.is_empty());
    assert_eq!(state.phase(), Phase::Done);
    assert_eq!(state.rounds.evaluate[0].gate, Gate::Pass);
    assert!(!pr_draft(&state));
}
