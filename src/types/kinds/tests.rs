//! Every closed set reads back as the word it was written as, and refuses any other.

use super::*;
use crate::types::Signal;
use crate::types::tests::{keeps_words, printed, refused, round_trips, spelled};

#[test]
fn blocker_categories_keep_their_words() {
    let words = "malformed_output tool_unavailable timeout sandbox_violation env_error \
                 review_rejected agent_error max_tokens refusal incomplete rate_limited \
                 quota_exhausted budget_exhausted";
    keeps_words(&BlockerCategory::ALL, words);
    assert_eq!(printed(&BlockerCategory::ALL), words);
    assert_eq!(
        spelled(&BlockerCategory::ALL, BlockerCategory::as_str),
        words
    );
    assert!(refused::<BlockerCategory>("flaky").contains("flaky"));
}

#[test]
fn decisions_keep_their_words() {
    let words = "ask swap draft continue approve restart restructure";
    keeps_words(Decision::VARIANTS, words);
    assert_eq!(spelled(Decision::VARIANTS, Decision::as_str), words);
    for a in Answer::ALL {
        assert_eq!(Decision::from(a).as_str(), a.as_str());
    }
    assert!(refused::<Decision>("shrug").contains("shrug"));
}

#[test]
fn answers_keep_their_words() {
    keeps_words(&Answer::ALL, "continue swap draft approve");
    for a in Answer::ALL {
        assert_eq!(Answer::parse(a.as_str()), Some(a));
    }
    assert_eq!(Answer::parse("maybe"), None);
    assert!(refused::<Answer>("maybe").contains("maybe"));
}

#[test]
fn wait_kinds_keep_their_words() {
    let words = "approval arbitration stopped pr_permission dispute";
    keeps_words(WaitKind::VARIANTS, words);
    assert_eq!(printed(WaitKind::VARIANTS), words);
    assert!(refused::<WaitKind>("nap").contains("nap"));
}

#[test]
fn dispute_words_keep_their_spelling() {
    keeps_words(Ruling::VARIANTS, "confirmed rejected");
    assert_eq!(printed(Ruling::VARIANTS), "confirmed rejected");
    let ends = "fix_loop waiting spec revised unchanged stalled draft";
    keeps_words(DisputeEnd::VARIANTS, ends);
    assert_eq!(printed(DisputeEnd::VARIANTS), ends);
    assert!(refused::<Ruling>("maybe").contains("maybe"));
}

#[test]
fn task_kinds_keep_their_words() {
    keeps_words(&TaskKind::ALL, "ui backend test");
    for k in TaskKind::ALL {
        assert_eq!(TaskKind::parse(k.as_str()), Some(k));
    }
    assert_eq!(TaskKind::Ui.role(), Role::ImplUi);
    assert_eq!(TaskKind::parse("playwright"), None);
    assert!(refused::<TaskKind>("playwright").contains("playwright"));
}

#[test]
fn strategies_keep_their_words() {
    keeps_words(Strategy::VARIANTS, "single panel debate");
    assert_eq!(printed(Strategy::VARIANTS), "single panel debate");
    assert!(refused::<Strategy>("duel").contains("duel"));
}

#[test]
fn personas_gates_and_verdicts_keep_their_words() {
    let personas = "architect paranoid operator simplifier user_advocate product_strategist";
    keeps_words(&Persona::ALL, personas);
    assert_eq!(printed(&Persona::ALL), personas);
    keeps_words(Gate::VARIANTS, "PASS FAIL");
    assert_eq!(printed(Gate::VARIANTS), "PASS FAIL");
    keeps_words(Verdict::VARIANTS, "PASS FAIL BLOCKED");
    assert_eq!(printed(Verdict::VARIANTS), "PASS FAIL BLOCKED");
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
    ended.extend(Signal::VARIANTS.iter().copied().map(Outcome::Stall));
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

#[test]
fn wave_task_states_keep_their_words() {
    let words = "queued running landed rerun failed stopped";
    keeps_words(WaveTaskState::VARIANTS, words);
    assert_eq!(printed(WaveTaskState::VARIANTS), words);
    assert!(refused::<WaveTaskState>("paused").contains("paused"));
}
