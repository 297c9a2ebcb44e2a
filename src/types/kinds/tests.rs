//! Every closed set reads back as the word it was written as, and refuses any other.

use super::*;
use crate::types::Signal;
use crate::types::tests::{refused, round_trips, shows_words, spelled};

/// The sets that are nothing but their words: each variant's word in the files and in print
/// (and `as_str`), and a word outside the set refused naming it.
#[test]
fn closed_sets_keep_their_words() {
    let blockers = "malformed_output tool_unavailable timeout sandbox_violation env_error \
                    review_rejected agent_error max_tokens refusal incomplete rate_limited \
                    quota_exhausted budget_exhausted";
    shows_words(&BlockerCategory::ALL, blockers, "flaky");
    assert_eq!(
        spelled(&BlockerCategory::ALL, BlockerCategory::as_str),
        blockers
    );
    let decisions = "ask swap draft continue approve restart restructure";
    shows_words(Decision::VARIANTS, decisions, "shrug");
    assert_eq!(spelled(Decision::VARIANTS, Decision::as_str), decisions);
    let waits = "approval arbitration stopped pr_permission dispute";
    shows_words(WaitKind::VARIANTS, waits, "nap");
    shows_words(Ruling::VARIANTS, "confirmed rejected", "maybe");
    let ends = "fix_loop waiting spec revised unchanged stalled draft";
    shows_words(DisputeEnd::VARIANTS, ends, "gone");
    shows_words(Strategy::VARIANTS, "single panel debate", "duel");
    let personas = "architect paranoid operator simplifier user_advocate product_strategist";
    shows_words(&Persona::ALL, personas, "pirate");
    shows_words(Gate::VARIANTS, "PASS FAIL", "pass");
    shows_words(Verdict::VARIANTS, "PASS FAIL BLOCKED", "SKIPPED");
    let waves = "queued running landed rerun failed stopped";
    shows_words(WaveTaskState::VARIANTS, waves, "paused");
}

/// Answers and task kinds are also parsed from what a person or `tasks.md` wrote.
#[test]
fn answers_and_task_kinds_keep_their_words() {
    shows_words(&Answer::ALL, "continue swap draft approve", "maybe");
    for a in Answer::ALL {
        assert_eq!(Answer::parse(a.as_str()), Some(a));
        assert_eq!(Decision::from(a).as_str(), a.as_str());
    }
    assert_eq!(Answer::parse("maybe"), None);
    shows_words(&TaskKind::ALL, "ui backend test", "playwright");
    assert!(
        TaskKind::ALL
            .iter()
            .all(|k| TaskKind::parse(k.as_str()) == Some(*k))
    );
    assert_eq!(TaskKind::parse("playwright"), None);
    assert_eq!(TaskKind::Ui.role(), Role::ImplUi);
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
