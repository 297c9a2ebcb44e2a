//! The job's decisions, from small events and states: no forge, no process, no network.

use std::collections::BTreeMap;

use super::*;
use crate::forge::github::event::Command;
use crate::state::job::Effect;
use crate::state::{BranchRef, Mode, PhaseLogEntry, Usage};
use crate::state::{IssueRef, PrRef};

#[test]
fn a_phase_error_keeps_the_kind_its_exit_code_names() {
    assert_eq!(child_error(PhaseEnd::Exited(0)), None);
    assert_eq!(
        child_error(PhaseEnd::Exited(1)),
        None,
        "a draft is no error"
    );
    assert_eq!(child_error(PhaseEnd::Budget), None);
    for kind in ErrorKind::ALL {
        let code = i32::from(kind.exit_code());
        if code < 2 {
            continue;
        }
        let got = child_error(PhaseEnd::Exited(code)).expect("an error");
        assert_eq!(got.kind, kind, "exit code {code}");
    }
    let panic = child_error(PhaseEnd::Exited(101)).expect("a panic is an error");
    assert_eq!(panic.kind, ErrorKind::Io);
    let killed = child_error(PhaseEnd::Killed(9)).expect("a kill is an error");
    assert_eq!(killed.kind, ErrorKind::Io);
    assert!(killed.why.contains("signal 9"), "{}", killed.why);
}

fn person(login: &str) -> Actor {
    Actor {
        login: login.into(),
        is_bot: false,
    }
}

fn bot(login: &str) -> Actor {
    Actor {
        login: login.into(),
        is_bot: true,
    }
}

fn labeled() -> Trigger {
    Trigger::Labeled {
        issue: IssueRef {
            number: Some(7.into()),
            title: "Add a thing".into(),
            ..IssueRef::default()
        },
        actor: person("alice"),
        default_branch: Some("main".into()),
    }
}

fn command(command: Result<Command, String>) -> Trigger {
    Trigger::Command {
        issue: 7.into(),
        command,
        actor: person("alice"),
        comment_id: 99.into(),
    }
}

fn dispatch(parent_run: Option<u64>) -> Trigger {
    Trigger::Dispatch {
        issue: 7.into(),
        parent_run: parent_run.map(RunId::from),
        actor: None,
        review: None,
    }
}

fn state(phase: Phase) -> State {
    crate::state::tests::at("add-a-thing", 7, "Add a thing", Mode::Auto, phase)
}

/// Through JSON, as the state file holds it, so the fixture does not depend on how the
/// record is typed in Rust.
fn waiting(kind: &str, message: &str) -> crate::state::Waiting {
    serde_json::from_value(serde_json::json!({ "kind": kind, "message": message }))
        .expect("a waiting record")
}

fn stop(message: &str) -> crate::types::RunStop {
    serde_json::from_value(serde_json::json!({
        "kind": "budget",
        "phase": "implement",
        "agent": "claude",
        "message": message,
        "spent_usd": 10.0,
        "ts": "2026-01-01T00:00:00Z",
    }))
    .expect("a stop record")
}

/// A job whose phase ended well.
fn ok() -> JobOutcome {
    JobOutcome::Phase(PhaseOutcome::Ended(Outcome::Ok))
}

fn logged(phase: Phase, outcome: &str) -> PhaseLogEntry {
    PhaseLogEntry {
        phase,
        started: crate::types::time::parse("2026-01-01T00:00:00Z").expect("a time"),
        ended: crate::types::time::parse("2026-01-01T00:01:00Z").expect("a time"),
        outcome: outcome.parse().expect("a phase-log outcome"),
        attempt: 1,
    }
}

fn ran(phase: Phase, end: PhaseEnd, halt: Option<&str>) -> Ran {
    Ran {
        issue: 7.into(),
        earlier: Vec::new(),
        phase,
        end,
        halt: halt.map(str::to_string),
        comment_id: Some(5.into()),
        pr_published: false,
    }
}

fn env() -> ActionEnv {
    let vars = BTreeMap::from([
        ("GITHUB_EVENT_NAME", "workflow_dispatch"),
        ("GITHUB_EVENT_PATH", "/github/workflow/event.json"),
        ("GITHUB_REPOSITORY", "octo-org/octo-repo"),
        ("GITHUB_RUN_ID", "1001"),
        ("GITHUB_RUN_ATTEMPT", "2"),
        ("GITHUB_SERVER_URL", "https://github.example"),
    ]);
    ActionEnv::from_vars(|k| vars.get(k).map(|v| v.to_string())).expect("a runner env")
}

#[test]
fn labels_and_commands_are_authorised_but_dispatches_are_not_rechecked() {
    assert_eq!(
        actor_of(&labeled()).map(|a| a.login.as_str()),
        Some("alice")
    );
    assert_eq!(
        actor_of(&command(Ok(Command::Stop))).map(|a| a.login.as_str()),
        Some("alice")
    );
    assert!(actor_of(&dispatch(Some(1))).is_none());
    assert!(actor_of(&Trigger::Ignored("push".into())).is_none());
}

#[test]
fn bots_need_a_listing_and_people_need_write_access() {
    let listed = vec!["renovate[bot]".to_string()];
    assert_eq!(bot_refusal(&listed, &bot("renovate[bot]")), None);
    let why = bot_refusal(&listed, &bot("other[bot]")).expect("refused");
    assert!(why.contains("@other[bot] is a bot"), "{why}");
    assert!(why.contains("github.allowed_bots"), "{why}");

    let access = |permission: &str, role_name: &str| Permission {
        permission: permission.into(),
        role_name: role_name.into(),
    };
    assert_eq!(
        permission_refusal(&person("a"), &access("write", "maintain")),
        None
    );
    assert_eq!(permission_refusal(&person("a"), &access("admin", "")), None);
    let why = permission_refusal(&person("bob"), &access("read", "triage")).expect("refused");
    assert!(why.starts_with("@bob has `triage` access"), "{why}");
}

#[test]
fn an_unknown_command_word_is_answered_with_the_list_of_commands() {
    assert_eq!(unknown_command(&command(Ok(Command::Approve))), None);
    assert_eq!(unknown_command(&labeled()), None);
    assert_eq!(
        unknown_command(&command(Err("merge".into()))).as_deref(),
        Some(
            "`/spec-orchestrate merge` is not a command; use one of: approve, continue, swap, draft, stop"
        )
    );
}

#[test]
fn a_checkpoint_counts_only_from_a_run_of_this_workflow_file() {
    let own = Some("spec-orchestrate.yml");
    assert!(is_this_workflow(
        Some(".github/workflows/spec-orchestrate.yml"),
        own
    ));
    assert!(is_this_workflow(
        Some(".github/workflows/spec-orchestrate.yml@refs/heads/main"),
        own
    ));
    assert!(!is_this_workflow(Some(".github/workflows/ci.yml"), own));
    assert!(!is_this_workflow(None, own), "no such run");
}

#[test]
fn a_label_starts_a_run_only_on_an_issue_without_one() {
    assert_eq!(
        resume_from(&labeled(), 7.into(), None, 50.into(), "go"),
        Resume::From(None)
    );
    let Resume::Nothing(why) = resume_from(&labeled(), 7.into(), Some(40.into()), 50.into(), "go")
    else {
        panic!("a second label must not start a second run");
    };
    assert!(
        why.contains("already has a run (checkpoint in run 40)"),
        "{why}"
    );
}

#[test]
fn a_command_steers_the_newest_checkpoint_or_is_refused_without_one() {
    let steer = command(Ok(Command::Continue));
    assert_eq!(
        resume_from(&steer, 7.into(), Some(40.into()), 50.into(), "go"),
        Resume::From(Some(40.into()))
    );
    let Resume::Refuse(why) = resume_from(&steer, 7.into(), None, 50.into(), "go") else {
        panic!("a command without a run must be refused");
    };
    assert!(why.contains("add the `go` label"), "{why}");
}

#[test]
fn a_dispatch_continues_its_parent_unless_another_run_took_over() {
    // Issue 7, run 50, dispatched by `parent` while the status comment names run `named`.
    let resume = |parent: Option<u64>, named: Option<u64>| {
        resume_from(
            &dispatch(parent),
            7.into(),
            named.map(RunId::from),
            50.into(),
            "go",
        )
    };
    // The chain as expected: the comment names the parent.
    assert_eq!(resume(Some(40), Some(40)), Resume::From(Some(40.into())));
    // A re-run of this job: the comment already names this run, the parent still counts.
    assert_eq!(resume(Some(40), Some(50)), Resume::From(Some(40.into())));
    // A hand-made dispatch without a parent takes the newest checkpoint, or starts.
    assert_eq!(resume(None, Some(40)), Resume::From(Some(40.into())));
    assert_eq!(resume(None, None), Resume::From(None));
    let Resume::Nothing(why) = resume(Some(40), Some(45)) else {
        panic!("a superseded dispatch must do nothing");
    };
    assert!(
        why.starts_with("superseded: this run continues run 40"),
        "{why}"
    );
}

#[test]
fn a_done_run_and_a_waiting_run_skip_the_phase_unless_a_command_halts() {
    let done = state(Phase::Done);
    assert_eq!(
        skip_reason(&done, false, &dispatch(Some(1)), 7.into()).as_deref(),
        Some("the run of issue #7 is done")
    );
    assert_eq!(skip_reason(&done, true, &dispatch(Some(1)), 7.into()), None);

    let mut waits = state(Phase::Approval);
    waits.waiting = Some(waiting("approval", "approve the spec"));
    assert_eq!(
        skip_reason(&waits, false, &dispatch(Some(1)), 7.into()).as_deref(),
        Some("the run waits for a person: approve the spec")
    );
    // A person's command answers the wait; it is not skipped.
    assert_eq!(
        skip_reason(&waits, false, &command(Ok(Command::Approve)), 7.into()),
        None
    );
    assert_eq!(
        skip_reason(&waits, true, &dispatch(Some(1)), 7.into()),
        None
    );
    assert_eq!(
        skip_reason(&state(Phase::Implement), false, &dispatch(None), 7.into()),
        None
    );
}

#[test]
fn a_phase_that_landed_a_draft_fails_the_job() {
    assert_eq!(exit_of(PhaseEnd::Exited(1)), Exit::Failed);
    assert_eq!(exit_of(PhaseEnd::Exited(0)), Exit::Ok);
    assert_eq!(exit_of(PhaseEnd::Budget), Exit::Ok);
}

#[test]
fn each_pass_of_a_phase_gets_its_own_numbered_commit() {
    let mut s = state(Phase::Evaluate);
    assert_eq!(
        commit_message(&s, Phase::Implement),
        "spec-orchestrate: implement (pass 1, #7)"
    );
    s.phase_log.push(logged(Phase::Implement, "ok"));
    s.phase_log.push(logged(Phase::Evaluate, "send_back"));
    s.phase_log.push(logged(Phase::Implement, "ok"));
    assert_eq!(
        commit_message(&s, Phase::Implement),
        "spec-orchestrate: implement (pass 2, #7)"
    );
    s.issue.number = None;
    assert_eq!(
        commit_message(&s, Phase::Evaluate),
        "spec-orchestrate: evaluate (pass 1)"
    );
}

#[test]
fn jobs_that_reach_their_budget_without_progress_are_counted_until_three_wait() {
    let mut s = state(Phase::Implement);
    let before = progress(&s);
    assert_eq!(idle_jobs(&s, PhaseEnd::Budget, before), 1);
    s.job.record(Effect::BudgetIdle(2));
    assert_eq!(idle_jobs(&s, PhaseEnd::Budget, before), 3);
    assert_eq!(idle_jobs(&s, PhaseEnd::Exited(0), before), 0);
    s.usage.insert(
        "claude".into(),
        Usage {
            calls: 1,
            ..Usage::default()
        },
    );
    assert_eq!(
        idle_jobs(&s, PhaseEnd::Budget, before),
        0,
        "a call is progress"
    );

    let budget = Duration::from_secs(30 * 60);
    let job = ran(Phase::Implement, PhaseEnd::Budget, None);
    assert_eq!(decide_next(&s, &job, 2, budget), AfterJob::Dispatch);
    let AfterJob::Wait(why) = decide_next(&s, &job, 3, budget) else {
        panic!("three idle jobs must wait");
    };
    assert!(
        why.starts_with("3 jobs in a row reached job_budget_minutes (30 min) before implement"),
        "{why}"
    );
}

#[test]
fn the_next_step_follows_the_halt_the_state_and_the_phase_end() {
    let budget = Duration::from_secs(60);
    let mut s = state(Phase::Evaluate);
    let ok = ran(Phase::Implement, PhaseEnd::Exited(0), None);
    assert_eq!(decide_next(&s, &ok, 0, budget), AfterJob::Dispatch);
    let halted = ran(
        Phase::Implement,
        PhaseEnd::Exited(0),
        Some("stopped by @alice"),
    );
    assert_eq!(
        decide_next(&s, &halted, 5, budget),
        AfterJob::Wait("stopped by @alice".into())
    );

    s.stop = Some(stop("The budget is spent."));
    assert_eq!(
        decide_next(&s, &ok, 0, budget),
        AfterJob::OverBudget("The budget is spent.".into())
    );
    s.waiting = Some(waiting("arbitration", "choose"));
    assert_eq!(
        decide_next(&s, &ok, 0, budget),
        AfterJob::Wait("choose".into())
    );
    s.move_to(Phase::Done);
    assert_eq!(decide_next(&s, &ok, 0, budget), AfterJob::Done);
    // A job stopped at its budget always hands over.
    let budgeted = ran(Phase::Implement, PhaseEnd::Budget, None);
    assert_eq!(decide_next(&s, &budgeted, 0, budget), AfterJob::Dispatch);
}

#[test]
fn the_outcome_is_the_phase_logs_last_word_on_the_phase_that_ran() {
    let mut s = state(Phase::Implement);
    let job = ran(Phase::Evaluate, PhaseEnd::Exited(0), None);
    assert_eq!(outcome_of(&s, &job).to_string(), "ok");
    s.phase_log.push(logged(Phase::Evaluate, "blocked"));
    s.phase_log.push(logged(Phase::Implement, "ok"));
    s.phase_log.push(logged(Phase::Evaluate, "send_back"));
    assert_eq!(outcome_of(&s, &job).to_string(), "send_back");
    let budgeted = ran(Phase::Evaluate, PhaseEnd::Budget, None);
    assert_eq!(
        outcome_of(&s, &budgeted).to_string(),
        "continued (job time budget)"
    );
    let halted = ran(Phase::Evaluate, PhaseEnd::Budget, Some("stop"));
    assert_eq!(outcome_of(&s, &halted).to_string(), "stopped");
}

/// The demo's happy path cut into jobs by [`rides_along`]: each job starts with the phase
/// that is due and takes the following ones while they may ride along.
fn jobs_of(path: &[Phase], mode: JobsMode) -> Vec<Vec<Phase>> {
    let mut jobs: Vec<Vec<Phase>> = Vec::new();
    let mut agents = false;
    for (i, p) in path.iter().enumerate() {
        let joins = i > 0 && {
            let s = state(*p);
            rides_along(mode, &s, agents, true)
        };
        if joins {
            jobs.last_mut().expect("a job").push(*p);
        } else {
            jobs.push(vec![*p]);
            agents = false;
        }
        agents |= p.calls_agents();
    }
    jobs
}

#[test]
fn one_agent_phase_per_job_and_the_others_ride_along() {
    use Phase::*;
    let demo = [
        Intake,
        SpecGenerate,
        Inspect,
        SpecReview,
        SpecGenerate,
        Inspect,
        SpecReview,
        Approval,
        Implement,
        Evaluate,
        Pr,
        Retrospective,
    ];
    assert_eq!(
        jobs_of(&demo, JobsMode::PerAgentPhase),
        vec![
            vec![Intake, SpecGenerate, Inspect],
            vec![SpecReview],
            vec![SpecGenerate, Inspect],
            vec![SpecReview, Approval],
            vec![Implement],
            vec![Evaluate, Pr, Retrospective],
        ]
    );
    assert_eq!(jobs_of(&demo, JobsMode::PerPhase).len(), demo.len());

    // Nothing rides along without time, after the end, while waiting or stopped.
    assert!(rides_along(JobsMode::PerAgentPhase, &state(Pr), true, true));
    assert!(!rides_along(
        JobsMode::PerAgentPhase,
        &state(Pr),
        true,
        false
    ));
    assert!(!rides_along(
        JobsMode::PerAgentPhase,
        &state(Done),
        false,
        true
    ));
    let mut waiting_state = state(Approval);
    waiting_state.waiting = Some(waiting("approval", "approve"));
    assert!(!rides_along(
        JobsMode::PerAgentPhase,
        &waiting_state,
        false,
        true
    ));
    let mut stopped = state(Implement);
    stopped.stop = Some(stop("over budget"));
    assert!(!rides_along(JobsMode::PerAgentPhase, &stopped, false, true));
    // An agent phase joins a job that ran none yet (an approval comment's job implements).
    assert!(rides_along(
        JobsMode::PerAgentPhase,
        &state(Implement),
        false,
        true
    ));
}

#[test]
fn the_headline_says_what_comes_next() {
    let mut s = state(Phase::Evaluate);
    assert_eq!(
        headline(&s, Phase::Implement.as_str(), ok(), &AfterJob::Dispatch),
        "implement: ok. Next: evaluate, in a new run."
    );
    assert_eq!(
        headline(
            &s,
            Phase::Implement.as_str(),
            JobOutcome::ContinuedAfterJobBudget,
            &AfterJob::Dispatch
        ),
        "implement ran out of this job's time; it continues in a new run from the checkpoint"
    );
    s.waiting = Some(waiting("approval", "approve"));
    s.branch = Some(BranchRef {
        name: "spec/add-a-thing".into(),
        head: None,
    });
    let h = headline(
        &s,
        Phase::SpecReview.as_str(),
        ok(),
        &AfterJob::Wait("approve".into()),
    );
    assert!(
        h.starts_with("Waiting for approval: the spec on branch `spec/add-a-thing`"),
        "{h}"
    );
    s.pr = Some(PrRef {
        number: Some(3.into()),
        url: "https://github.example/pr/3".into(),
        draft: true,
    });
    assert_eq!(
        headline(&s, Phase::Pr.as_str(), ok(), &AfterJob::Done),
        "Done: the pull request is a draft (see why in its body)."
    );
}

#[test]
fn outputs_and_the_run_record_name_the_phase_its_gate_and_the_checkpoint() {
    let mut s = state(Phase::Implement);
    let job = ran(Phase::Inspect, PhaseEnd::Exited(0), None);
    assert_eq!(step_outputs(&s, &job), ("inspect", String::new()));
    let halted = ran(Phase::Inspect, PhaseEnd::Exited(0), Some("stop"));
    assert_eq!(step_outputs(&s, &halted), ("", String::new()));

    assert_eq!(pr_url_of(&s), None);
    s.pr = Some(PrRef {
        number: None,
        url: ".specs/add-a-thing/pr-body.md".into(),
        draft: false,
    });
    assert_eq!(pr_url_of(&s), None, "a local stand-in is no address");
    s.pr = Some(PrRef {
        number: Some(3.into()),
        url: "https://github.example/pr/3".into(),
        draft: false,
    });
    assert_eq!(
        pr_url_of(&s).as_deref(),
        Some("https://github.example/pr/3")
    );

    let record = run_record(&env(), 7.into(), Phase::Implement, ok());
    assert_eq!(record.run_id, 1001);
    assert_eq!(record.attempt, 2);
    assert_eq!(record.phase, Phase::Implement);
    assert_eq!(record.outcome.to_string(), "ok");
    assert_eq!(
        record.url,
        "https://github.example/octo-org/octo-repo/actions/runs/1001"
    );
    assert_eq!(record.checkpoint, "spec-orchestrate-7-implement-a2");
}

/// The facts of a job of run 50 (attempt 1) on issue 7, with the status comment's marker.
fn facts(trigger: &Trigger, head: Option<u64>, next: Option<u64>) -> Facts<'_> {
    Facts {
        trigger,
        issue: 7.into(),
        refusal: None,
        head: head.map(RunId::from),
        next: next.map(RunId::from),
        run_id: 50.into(),
        attempt: 1,
        trigger_label: "go",
    }
}

/// A chain job's plan: the run opened from `runs` (or started, when `or_fresh`), steered by
/// `steer`.
fn chain(runs: &[u64], or_fresh: bool, steer: Steer) -> Plan {
    Plan::Chain {
        source: Source {
            runs: runs.iter().copied().map(RunId::from).collect(),
            or_fresh,
        },
        steer,
    }
}

#[test]
fn the_plan_of_each_trigger_over_the_chain_situations() {
    use Steer::{Chain, Command as Cmd, Review};
    let label = labeled();
    let steer = command(Ok(Command::Continue));
    let child = dispatch(Some(40));
    let by_hand = dispatch(None);
    let round = Trigger::Dispatch {
        issue: 7.into(),
        parent_run: None,
        actor: None,
        review: Some(12.into()),
    };
    let rows: Vec<(&str, Facts, Plan)> = vec![
        (
            "a review round's job takes the newest checkpoint, then the round, then runs as the chain",
            facts(&round, Some(40), None),
            chain(&[40], false, Review(12.into())),
        ),
        (
            "a label on a fresh issue starts a run",
            facts(&label, None, None),
            chain(&[], true, Chain),
        ),
        (
            "a dispatch continues its parent, the head",
            facts(&child, Some(40), Some(50)),
            chain(&[40], false, Chain),
        ),
        (
            "a dispatch the chain recorded as next continues the head, whatever parent it names",
            facts(&child, Some(45), Some(50)),
            chain(&[45], false, Chain),
        ),
        (
            "a dispatch of a chain that recorded no next yet continues its parent",
            facts(&child, Some(40), None),
            chain(&[40], false, Chain),
        ),
        (
            "a command steers the newest checkpoint",
            facts(&steer, Some(40), Some(41)),
            chain(&[40], false, Cmd),
        ),
        (
            "a hand-made dispatch takes the newest checkpoint",
            facts(&by_hand, Some(40), Some(41)),
            chain(&[40], false, Chain),
        ),
        (
            "a hand-made dispatch on a fresh issue starts a run",
            facts(&by_hand, None, None),
            chain(&[], true, Chain),
        ),
        (
            "a re-run of a dispatched job whose first attempt finalized its checkpoint goes on from it, else from the parent",
            Facts {
                attempt: 2,
                ..facts(&child, Some(50), None)
            },
            chain(&[50, 40], false, Chain),
        ),
        (
            "a re-run of a failed dispatched job that checkpointed nothing resumes from its parent",
            Facts {
                attempt: 2,
                ..facts(&child, Some(40), Some(50))
            },
            chain(&[40], false, Chain),
        ),
        (
            "a re-run of the label's job goes on from its own checkpoint, or starts over",
            Facts {
                attempt: 2,
                ..facts(&label, Some(50), None)
            },
            chain(&[50], true, Chain),
        ),
        (
            "a re-run of the label's job that checkpointed nothing starts over",
            Facts {
                attempt: 2,
                ..facts(&label, None, None)
            },
            chain(&[], true, Chain),
        ),
    ];
    for (what, f, want) in rows {
        assert_eq!(plan(&f), want, "{what}");
    }
}

#[test]
fn the_plan_ends_at_once_when_nothing_is_to_be_done_or_someone_is_refused() {
    let label = labeled();
    let steer = command(Ok(Command::Continue));
    let child = dispatch(Some(40));
    let one_step = |f: &Facts| -> Ending {
        match plan(f) {
            Plan::End(ending) => ending,
            chain => panic!("the job must end at once: {chain:?}"),
        }
    };
    let Ending::Refuse(why) = one_step(&Facts {
        refusal: Some("@mona has `read` access".into()),
        ..facts(&label, None, None)
    }) else {
        panic!("a refused actor is answered");
    };
    assert!(why.starts_with("@mona"), "{why}");
    let Ending::Nothing(why) = one_step(&facts(&label, Some(40), None)) else {
        panic!("a second label does nothing");
    };
    assert!(why.contains("already has a run"), "{why}");
    let Ending::Refuse(why) = one_step(&facts(&steer, None, None)) else {
        panic!("a command without a run is refused");
    };
    assert!(why.contains("add the `go` label"), "{why}");
    let Ending::Nothing(why) = one_step(&facts(&child, Some(45), None)) else {
        panic!("a superseded dispatch does nothing");
    };
    assert!(why.starts_with("superseded"), "{why}");
}

#[test]
fn a_duplicate_successor_and_a_re_run_after_the_hand_over_do_no_work() {
    let child = dispatch(Some(40));
    let label = labeled();
    // Run 40 dispatched twice (its first answer lost) and recorded run 51 as next: run 50 is
    // the second successor.
    let Plan::End(Ending::NotNext(why)) = plan(&facts(&child, Some(40), Some(51))) else {
        panic!("a duplicate successor must do no work");
    };
    assert!(
        why.starts_with("duplicate successor: run 40 recorded run 51 as the next run of issue #7, not this run 50"),
        "{why}"
    );
    // Run 50 checkpointed and dispatched run 51, then failed: its re-run hands nothing over
    // twice, whatever started it.
    for trigger in [&child, &label] {
        let plan = plan(&Facts {
            attempt: 2,
            ..facts(trigger, Some(50), Some(51))
        });
        let Plan::End(Ending::NotNext(why)) = &plan else {
            panic!("a re-run after the hand-over must do no work: {plan:?}");
        };
        assert!(
            why.starts_with("run 51 continues the chain of issue #7 from this run's checkpoint"),
            "{why}"
        );
    }
    // The successor itself, and its re-run, go on.
    assert_eq!(
        plan(&Facts {
            attempt: 2,
            ..facts(&child, Some(40), Some(50))
        }),
        chain(&[40], false, Steer::Chain)
    );
}

/// The waves a chain hands to matrix legs: who hands them out, and when a leg or join acts.
mod waves;
