//! The panel strategy through the binary: personas run concurrently with their own prompts, the
//! merged review attributes every item, a failed persona is skipped and noted, a panel where
//! all fail escalates, and `panel: auto` classifies the issue once.

use serde_json::{Value, json};

use spec_orchestrate::types::kinds::Decision;
use spec_orchestrate::types::{IssueType, Signal};

use crate::support::{Scenario, assert_contains_all, assert_first_review_failed, pr_draft};
use spec_orchestrate::types::kinds::Strategy;

const ALL_SIX: [&str; 6] = [
    "architect",
    "paranoid",
    "operator",
    "simplifier",
    "user_advocate",
    "product_strategist",
];

fn panel_config(list: &str) -> String {
    format!("review:\n  strategy: panel\n  panel: {list}\n")
}

#[test]
fn personas_review_concurrently_and_the_merged_review_attributes_every_item() {
    let shared =
        json!({"gist": "Nothing says what happens when storage is full", "section": "Persistence"});
    let s = Scenario::new(
        json!({
            "panel": {
                "architect": {"sleep": 2, "by_round": {"1": [shared, {"gist": "Module boundaries are unclear", "section": "Architecture", "severity": "improvement"}]}},
                "paranoid": {"sleep": 2, "by_round": {"1": [shared]}},
                "operator": {"sleep": 2, "fail": true},
                "simplifier": {"sleep": 2, "by_round": {"1": [{"gist": "Persistence could be dropped entirely", "section": "Persistence", "severity": "minor"}]}},
                "user_advocate": {"sleep": 2, "findings": []},
                "product_strategist": {"sleep": 2, "findings": []}
            }
        }),
        &panel_config(
            "[architect, paranoid, operator, simplifier, user_advocate, product_strategist]",
        ),
    );
    crate::support::run_until_ok(s.run_cmd(), "spec_review", &[]);

    // Concurrency: every persona started before any of them finished.
    let timing: Vec<Value> = std::fs::read_to_string(s.dir.join("timing.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first_round: Vec<&Value> = timing.iter().take(6).collect();
    assert_eq!(first_round.len(), 6);
    let last_start = first_round
        .iter()
        .map(|t| t["start"].as_f64().unwrap())
        .fold(f64::MIN, f64::max);
    let first_end = first_round
        .iter()
        .map(|t| t["end"].as_f64().unwrap())
        .fold(f64::MAX, f64::min);
    assert!(
        last_start < first_end,
        "the six personas overlapped (last start {last_start}, first end {first_end})"
    );

    // Each persona got its own focused prompt, in a `panel:<persona>` role.
    let first_round_prompts: Vec<String> = ALL_SIX
        .iter()
        .map(|p| {
            let reqs = s.requests_of(&format!("panel:{p}"));
            assert!(!reqs.is_empty(), "{p} was called");
            reqs[0]["prompt"].as_str().unwrap().to_string()
        })
        .collect();
    for (p, prompt) in ALL_SIX.iter().zip(&first_round_prompts) {
        let heading = p.replace('_', " ").to_uppercase();
        assert!(prompt.contains(&heading), "{p}'s prompt names its focus");
    }

    let state = s.state();
    let r1 = &state.rounds.spec_review[0];
    assert_eq!(r1.strategy, Strategy::Panel);
    assert_eq!(r1.critical, 1, "the shared finding counts once");
    assert_eq!(r1.improvement, 1);
    assert_eq!(r1.minor, 1);
    assert_eq!(r1.skipped.len(), 1);
    assert!(r1.skipped[0].starts_with("operator (agent_error"));
    assert!(!r1.members.iter().any(|m| m == "panel:operator"));

    let md =
        std::fs::read_to_string(s.demo.feature_dir().join("reviews/spec-review-1.md")).unwrap();
    assert_contains_all(
        &md,
        &[
            "## Must Address (1)",
            "## Should Consider (1)",
            "## Minor (1)",
            "## Points of Disagreement (1)",
        ],
    );
    let items: Vec<&str> = md.lines().filter(|l| l.starts_with("- F")).collect();
    assert_eq!(items.len(), 3, "{md}");
    for item in &items {
        assert!(item.contains(" — raised by "), "attributed: {item}");
    }
    // The attribution, the noted skip, and critical vs minor in Persistence as a disagreement.
    assert_contains_all(
        &md,
        &[
            "storage is full — raised by architect, paranoid",
            "operator (agent_error",
            "simplifier says minor",
        ],
    );
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(s.demo.feature_dir().join("reviews/spec-review-1.json")).unwrap(),
    )
    .unwrap();
    for f in json["findings"].as_array().unwrap() {
        assert!(!f["raised_by"].as_array().unwrap().is_empty(), "{f}");
    }
}

#[test]
fn a_panel_where_every_persona_fails_escalates_to_arbitration() {
    let fail = json!({"fail": true});
    let s = Scenario::new(
        json!({"panel": {"architect": fail, "paranoid": fail, "simplifier": fail}}),
        &panel_config("[architect, paranoid, simplifier]"),
    );
    s.run_cmd().assert().code(1);
    let state = s.state();
    assert_first_review_failed(&state, "all 3 panel reviewers failed");
    let arbs: Vec<_> = state
        .arbitrations
        .iter()
        .map(|a| (a.signal, a.decision))
        .collect();
    let failure = Signal::AgentFailure;
    assert_eq!(
        arbs,
        [(failure, Decision::Swap), (failure, Decision::Draft)]
    );
    assert_eq!(state.arbitrations[0].from.as_deref(), Some("beta"));
    assert!(pr_draft(&state));
}

#[test]
fn panel_auto_classifies_the_issue_once_and_picks_personas_by_type() {
    let s = Scenario::new(
        json!({
            "classification": {"type": "bug-fix", "risk": "low", "scope": "small"},
            "panel": {"paranoid": {"findings": []}, "operator": {"findings": []}}
        }),
        &panel_config("auto"),
    );
    crate::support::run_until_ok(s.run_cmd(), "spec_review", &[]);
    assert_eq!(s.requests_of("classifier").len(), 1);
    // The personas run concurrently, so they reach the log in any order.
    let mut called: Vec<String> = s
        .requests()
        .iter()
        .map(|r| r["role"].as_str().unwrap().to_string())
        .filter(|r| r.starts_with("panel:"))
        .collect();
    called.sort();
    assert_eq!(called, ["panel:operator", "panel:paranoid"]);
    let classification = s.state().classification.expect("classified");
    assert_eq!(classification.kind, IssueType::BugFix);
    assert_eq!(classification.by, "beta");
    let md =
        std::fs::read_to_string(s.demo.feature_dir().join("reviews/spec-review-1.md")).unwrap();
    assert!(
        md.contains("Panel chosen by classification (bug-fix, risk low, scope small, by beta): paranoid, operator"),
        "{md}"
    );
}

#[test]
fn panel_auto_high_risk_is_a_deep_review_with_all_six() {
    let s = Scenario::new(
        json!({"classification": {"type": "small-feature", "risk": "high", "scope": "small"}}),
        &panel_config("auto"),
    );
    crate::support::run_until_ok(s.run_cmd(), "spec_review", &[]);
    for p in ALL_SIX {
        assert_eq!(s.requests_of(&format!("panel:{p}")).len(), 1, "{p}");
    }
}
