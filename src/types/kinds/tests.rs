//! Every closed set reads back as the word it was written as, and refuses any other.

use super::*;
use crate::types::Signal;

/// `value` serialises to the JSON string `word` and reads back as itself.
fn round_trips<T>(value: T, word: &str)
where
    T: Serialize + for<'de> Deserialize<'de> + PartialEq + fmt::Debug,
{
    let json = serde_json::to_string(&value).unwrap();
    assert_eq!(json, format!("\"{word}\""), "{value:?}");
    let back: T = serde_json::from_str(&json).unwrap();
    assert_eq!(back, value);
}

/// A word outside the set is refused, never defaulted.
fn refused<T: for<'de> Deserialize<'de> + fmt::Debug>(word: &str) -> String {
    serde_json::from_value::<T>(serde_json::Value::String(word.into()))
        .expect_err(word)
        .to_string()
}

#[test]
fn blocker_categories_keep_their_words() {
    for c in BlockerCategory::ALL {
        round_trips(c, c.as_str());
        assert_eq!(c.to_string(), c.as_str());
    }
    round_trips(BlockerCategory::ToolUnavailable, "tool_unavailable");
    round_trips(BlockerCategory::MalformedOutput, "malformed_output");
    assert!(refused::<BlockerCategory>("flaky").contains("flaky"));
}

#[test]
fn decisions_keep_their_words() {
    for (d, w) in [
        (Decision::Ask, "ask"),
        (Decision::Swap, "swap"),
        (Decision::Draft, "draft"),
        (Decision::Continue, "continue"),
        (Decision::Approve, "approve"),
        (Decision::Restart, "restart"),
        (Decision::Restructure, "restructure"),
    ] {
        round_trips(d, w);
        assert_eq!(d.as_str(), w);
    }
    for a in Answer::ALL {
        assert_eq!(Decision::from(a).as_str(), a.as_str());
    }
    assert!(refused::<Decision>("shrug").contains("shrug"));
}

#[test]
fn answers_keep_their_words() {
    for a in Answer::ALL {
        round_trips(a, a.as_str());
        assert_eq!(Answer::parse(a.as_str()), Some(a));
    }
    assert_eq!(Answer::parse("maybe"), None);
    assert!(refused::<Answer>("maybe").contains("maybe"));
}

#[test]
fn wait_kinds_keep_their_words() {
    for (k, w) in [
        (WaitKind::Approval, "approval"),
        (WaitKind::Arbitration, "arbitration"),
        (WaitKind::Stopped, "stopped"),
        (WaitKind::PrPermission, "pr_permission"),
        (WaitKind::Dispute, "dispute"),
    ] {
        round_trips(k, w);
        assert_eq!(k.to_string(), w);
    }
    assert!(refused::<WaitKind>("nap").contains("nap"));
}

#[test]
fn dispute_words_keep_their_spelling() {
    for (r, w) in [
        (Ruling::Confirmed, "confirmed"),
        (Ruling::Rejected, "rejected"),
    ] {
        round_trips(r, w);
        assert_eq!(r.to_string(), w);
    }
    for (e, w) in [
        (DisputeEnd::FixLoop, "fix_loop"),
        (DisputeEnd::Waiting, "waiting"),
        (DisputeEnd::Spec, "spec"),
        (DisputeEnd::Revised, "revised"),
        (DisputeEnd::Unchanged, "unchanged"),
        (DisputeEnd::Stalled, "stalled"),
        (DisputeEnd::Draft, "draft"),
    ] {
        round_trips(e, w);
        assert_eq!(e.to_string(), w);
    }
    assert!(refused::<Ruling>("maybe").contains("maybe"));
}

#[test]
fn task_kinds_keep_their_words() {
    for k in TaskKind::ALL {
        round_trips(k, k.as_str());
        assert_eq!(TaskKind::parse(k.as_str()), Some(k));
    }
    assert_eq!(TaskKind::Ui.role(), Role::ImplUi);
    assert_eq!(TaskKind::parse("playwright"), None);
    assert!(refused::<TaskKind>("playwright").contains("playwright"));
}

#[test]
fn strategies_keep_their_words() {
    for (st, w) in [
        (Strategy::Single, "single"),
        (Strategy::Panel, "panel"),
        (Strategy::Debate, "debate"),
    ] {
        round_trips(st, w);
        assert_eq!(st.to_string(), w);
    }
    assert!(refused::<Strategy>("duel").contains("duel"));
}

#[test]
fn call_roles_keep_their_words() {
    for r in Role::ALL {
        round_trips(CallRole::Role(r), r.as_str());
        assert_eq!(CallRole::Role(r).config_role(), Some(r));
    }
    for p in Persona::ALL {
        round_trips(CallRole::Panel(p), &format!("panel:{}", p.as_str()));
        assert_eq!(CallRole::Panel(p).config_role(), Some(Role::SpecReviewer));
    }
    round_trips(CallRole::Debater, "debater");
    round_trips(CallRole::Classifier, "classifier");
    round_trips(CallRole::TaskReviewer, "task_reviewer");
    assert_eq!(CallRole::Debater.config_role(), Some(Role::SpecReviewer));
    assert_eq!(CallRole::TaskReviewer.config_role(), None);
    assert!(refused::<CallRole>("panel:pirate").contains("pirate"));
    assert!(refused::<CallRole>("implementer").contains("implementer"));
}

#[test]
fn phase_outcomes_keep_their_words() {
    for (o, w) in [
        (PhaseOutcome::Ended(Outcome::Ok), "ok"),
        (PhaseOutcome::Ended(Outcome::SendBack), "send_back"),
        (PhaseOutcome::Ended(Outcome::Stall(Signal::S1)), "stall:S1"),
        (PhaseOutcome::Ended(Outcome::Stall(Signal::S4)), "stall:S4"),
        (
            PhaseOutcome::Ended(Outcome::Stall(Signal::RubricPlateau)),
            "stall:RUBRIC_PLATEAU",
        ),
        (PhaseOutcome::Ended(Outcome::AgentFailure), "agent_failure"),
        (PhaseOutcome::Ended(Outcome::Blocked), "blocked"),
        (PhaseOutcome::Ended(Outcome::Waiting), "waiting"),
        (PhaseOutcome::Stopped(StopKind::Budget), "stopped:budget"),
        (PhaseOutcome::Stopped(StopKind::Quota), "stopped:quota"),
    ] {
        round_trips(o, w);
    }
    assert!(refused::<PhaseOutcome>("stall:S9").contains("stall:S9"));
    assert!(refused::<PhaseOutcome>("stopped:bored").contains("stopped:bored"));
    assert!(refused::<PhaseOutcome>("fine").contains("fine"));
}

/// Every signal; the match fails to compile when a signal is added and not listed.
fn every_signal() -> Vec<Signal> {
    let all = vec![
        Signal::S1,
        Signal::S2,
        Signal::S3,
        Signal::S4,
        Signal::AgentFailure,
        Signal::Blocked,
        Signal::RubricPlateau,
        Signal::Manual,
    ];
    for s in &all {
        match s {
            Signal::S1
            | Signal::S2
            | Signal::S3
            | Signal::S4
            | Signal::AgentFailure
            | Signal::Blocked
            | Signal::RubricPlateau
            | Signal::Manual => {}
        }
    }
    all
}

/// Every job outcome there is, each phase outcome (every signal's stall, both stops) inside
/// it; the matches fail to compile when a variant is added and not listed.
fn every_job_outcome() -> Vec<JobOutcome> {
    let mut ended = vec![
        Outcome::Ok,
        Outcome::SendBack,
        Outcome::AgentFailure,
        Outcome::Blocked,
        Outcome::Waiting,
    ];
    ended.extend(every_signal().into_iter().map(Outcome::Stall));
    let mut phase: Vec<PhaseOutcome> = ended.into_iter().map(PhaseOutcome::Ended).collect();
    phase.extend([StopKind::Budget, StopKind::Quota].map(PhaseOutcome::Stopped));
    let mut all: Vec<JobOutcome> = phase.into_iter().map(JobOutcome::Phase).collect();
    all.extend([JobOutcome::Stopped, JobOutcome::ContinuedAfterJobBudget]);
    for o in &all {
        match o {
            JobOutcome::Phase(PhaseOutcome::Ended(
                Outcome::Ok
                | Outcome::SendBack
                | Outcome::Stall(_)
                | Outcome::AgentFailure
                | Outcome::Blocked
                | Outcome::Waiting,
            ))
            | JobOutcome::Phase(PhaseOutcome::Stopped(StopKind::Budget | StopKind::Quota))
            | JobOutcome::Stopped
            | JobOutcome::ContinuedAfterJobBudget => {}
        }
    }
    all
}

/// The one codec: every outcome's word (`Display`) reads back as itself (`FromStr`), its
/// JSON is that word both ways, a phase outcome's word is the same as a job outcome and as a
/// phase outcome, a stall's signal is spelled as the signal's own JSON, and no two outcomes
/// share a word. Nothing else in `src/` writes or parses these words.
#[test]
fn every_outcome_round_trips_through_its_one_word() {
    let all = every_job_outcome();
    assert_eq!(all.len(), 5 + 8 + 2 + 2);
    let mut words = std::collections::BTreeSet::new();
    for o in all {
        let word = o.to_string();
        assert!(words.insert(word.clone()), "two outcomes are `{word}`");
        assert_eq!(word.parse::<JobOutcome>(), Ok(o), "{word}");
        round_trips(o, &word);
        if let JobOutcome::Phase(p) = o {
            assert_eq!(p.to_string(), word);
            assert_eq!(word.parse::<PhaseOutcome>(), Ok(p), "{word}");
            round_trips(p, &word);
        } else {
            assert!(word.parse::<PhaseOutcome>().is_err(), "{word}");
        }
        if let JobOutcome::Phase(PhaseOutcome::Ended(Outcome::Stall(s))) = o {
            let signal = serde_json::to_string(&s).unwrap();
            assert_eq!(format!("\"stall:{}", &signal[1..]), format!("\"{word}\""));
        }
    }
}

#[test]
fn job_outcomes_keep_their_words() {
    for (o, w) in [
        (JobOutcome::Phase(PhaseOutcome::Ended(Outcome::Ok)), "ok"),
        (
            JobOutcome::Phase(PhaseOutcome::Ended(Outcome::Stall(Signal::S2))),
            "stall:S2",
        ),
        (
            JobOutcome::Phase(PhaseOutcome::Stopped(StopKind::Quota)),
            "stopped:quota",
        ),
        (JobOutcome::Stopped, "stopped"),
        (
            JobOutcome::ContinuedAfterJobBudget,
            "continued (job time budget)",
        ),
    ] {
        round_trips(o, w);
    }
    assert!(JobOutcome::ContinuedAfterJobBudget.continues());
    assert!(!JobOutcome::Stopped.continues());
    assert!(refused::<JobOutcome>("continued").contains("continued"));
}
