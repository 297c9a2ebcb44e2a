//! GitHub's concurrency rules around the chain, played by `Sim::play`: a `stop` posted while a
//! job runs is never lost, and a comment or label posted between a dispatch and the end of the
//! job does not stall the chain — under the rule the written workflow sets (job level,
//! `queue: max`) and under GitHub's default queue (one pending run, evicted by each newcomer).

use crate::actions_sim::{Fate, Queue, Rule, Sim};

/// The rule of a workflow without `queue:` (GitHub's default, and GitHub Enterprise Server).
const WORKFLOW_LEVEL_DEFAULT: Rule = Rule {
    job_level: false,
    queue: Queue::Single,
};
const JOB_LEVEL_DEFAULT: Rule = Rule {
    job_level: true,
    queue: Queue::Single,
};

#[test]
fn the_written_workflow_queues_jobs_per_issue_at_job_level_with_queue_max() {
    assert_eq!(
        Rule::written(),
        Rule {
            job_level: true,
            queue: Queue::Max
        }
    );
}

/// The agent calls made by jobs that started after run `after` had run.
fn calls_after(sim: &Sim, after: usize) -> Vec<(u64, usize)> {
    sim.played
        .iter()
        .filter_map(|p| match p.fate {
            Fate::Ran { agent_calls, .. } => Some((p.run_id, agent_calls)),
            _ => None,
        })
        .skip(after)
        .collect()
}

/// A maintainer comments `stop` while the second job (spec_review) runs (its run queued just before
/// that job dispatches the next one); returns the sim after the chain ended.
fn stop_while_a_job_runs(rule: Rule) -> Sim {
    let mut sim = Sim::new(|c, _| c.to_string());
    sim.fake.set_role("hubot", "maintain");
    // Dispatch 0 comes from the first job (intake, spec_generate and inspect ride together),
    // dispatch 1 from the spec_review job.
    sim.post_during(1, true, "hubot", "COLLABORATOR", "/spec-orchestrate stop");
    let first = sim.labeled("octocat", false);
    sim.deliver("issues", first);
    sim.play(rule, 30);
    sim
}

fn assert_stopped_before_any_agent_call(sim: &Sim, rule: Rule) {
    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "{:#?}", w.violations);
    // The first two jobs ran; every job after them called no agent.
    let after = calls_after(sim, 2);
    assert!(
        after.iter().all(|(_, calls)| *calls == 0),
        "agent calls after the stop under {rule:?}: {after:?}\n{:#?}",
        sim.played
    );
    assert!(w.pulls.is_empty(), "no pull request after a stop");
    let status = w.status_comments(crate::actions_sim::ISSUE)[0]["body"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(status.contains("stopped by @hubot"), "{status}");
    assert!(
        !sim.played
            .iter()
            .any(|p| matches!(p.fate, Fate::Ran { code, .. } if code != 0)),
        "{:#?}",
        sim.played
    );
}

#[test]
fn a_stop_posted_while_a_job_runs_is_not_lost_under_queue_max() {
    let sim = stop_while_a_job_runs(Rule::written());
    // The stop's own run waited behind the job and ran before the dispatched one.
    assert!(cancelled_events(&sim).is_empty(), "{:#?}", sim.played);
    assert_stopped_before_any_agent_call(&sim, Rule::written());
}

#[test]
fn a_stop_posted_while_a_job_runs_is_not_lost_under_the_default_queue() {
    let sim = stop_while_a_job_runs(WORKFLOW_LEVEL_DEFAULT);
    // The dispatch evicted the stop's pending run: the next job must read the stop itself.
    let cancelled = cancelled_events(&sim);
    assert_eq!(cancelled, ["issue_comment"], "{:#?}", sim.played);
    assert_stopped_before_any_agent_call(&sim, WORKFLOW_LEVEL_DEFAULT);
}

/// The events of the runs the concurrency group cancelled, in the order they were played.
fn cancelled_events(sim: &Sim) -> Vec<&str> {
    sim.played
        .iter()
        .filter(|p| p.fate == Fate::Cancelled)
        .map(|p| p.event.as_str())
        .collect()
}

/// Chatter (a comment that is no command, and a command from someone outside the repository)
/// posted right after the second job (spec_review) dispatched the next one.
fn chatter_after_a_dispatch(rule: Rule) -> Sim {
    let mut sim = Sim::new(|c, _| c.to_string());
    sim.post_during(1, false, "mona", "NONE", "Looks promising!");
    sim.post_during(1, false, "mallory", "NONE", "/spec-orchestrate stop");
    let first = sim.labeled("octocat", false);
    sim.deliver("issues", first);
    sim.play(rule, 40);
    sim
}

fn assert_completed(sim: &Sim) {
    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "{:#?}", w.violations);
    assert_eq!(w.pulls.len(), 1, "{:#?}", sim.played);
    assert_eq!(
        sim.runs.last().unwrap().output("phase"),
        "retrospective",
        "{:#?}",
        sim.played
    );
}

#[test]
fn a_comment_after_a_dispatch_does_not_stall_the_chain_under_queue_max() {
    let sim = chatter_after_a_dispatch(Rule::written());
    let skipped = sim
        .played
        .iter()
        .filter(|p| p.fate == Fate::Skipped)
        .count();
    assert_eq!(skipped, 2, "{:#?}", sim.played);
    assert!(cancelled_events(&sim).is_empty());
    assert_completed(&sim);
}

#[test]
fn a_comment_after_a_dispatch_does_not_stall_the_chain_under_the_default_queue_at_job_level() {
    // GitHub Enterprise Server without `queue:`: skipped runs still never join the group.
    let sim = chatter_after_a_dispatch(JOB_LEVEL_DEFAULT);
    assert!(cancelled_events(&sim).is_empty());
    assert_completed(&sim);
}

#[test]
fn at_workflow_level_the_default_queue_lets_chatter_evict_the_next_job() {
    // Why the written workflow sets its group at job level: at workflow level, the skipped
    // run took the pending place first and evicted the chain's next job.
    let sim = chatter_after_a_dispatch(WORKFLOW_LEVEL_DEFAULT);
    let cancelled = cancelled_events(&sim);
    assert_eq!(
        cancelled,
        ["workflow_dispatch", "issue_comment"],
        "{:#?}",
        sim.played
    );
    let w = sim.fake.world.lock().unwrap();
    assert!(w.pulls.is_empty());
}

#[test]
fn a_stop_queued_behind_the_next_job_is_applied_once_by_that_job() {
    let mut sim = Sim::new(|c, _| c.to_string());
    sim.fake.set_role("hubot", "maintain");
    // Posted just after the second job (spec_review) dispatched the next one: that job runs first.
    sim.post_during(1, false, "hubot", "COLLABORATOR", "/spec-orchestrate stop");
    let first = sim.labeled("octocat", false);
    sim.deliver("issues", first);
    sim.play(Rule::written(), 30);
    assert_stopped_before_any_agent_call(&sim, Rule::written());
    let stop_run = sim
        .runs
        .iter()
        .find(|r| r.event == "issue_comment")
        .expect("the stop's own job ran");
    assert!(
        stop_run.stderr.contains("already applied"),
        "{}",
        stop_run.stderr
    );
    assert_eq!(stop_run.output("next_run"), "");
    let dispatched_after = sim
        .runs
        .iter()
        .filter(|r| r.event == "workflow_dispatch")
        .count();
    assert_eq!(
        dispatched_after, 2,
        "spec_generate, then the job that read the stop"
    );
}

/// The sweep's replies on the issue.
fn sweep_replies(sim: &Sim) -> Vec<String> {
    sim.fake.with(|w| {
        w.comments
            .iter()
            .filter_map(|(_, c)| c["body"].as_str())
            .filter(|b| b.starts_with("<!-- spec-orchestrate:sweep"))
            .map(str::to_string)
            .collect()
    })
}

#[test]
fn a_sweep_resumes_a_chain_whose_next_job_was_evicted_from_the_default_queue() {
    // GitHub Enterprise Server without `queue:`, group at workflow level: chatter evicted the
    // chain's next job and the chain stalled with no pull request.
    let mut sim = chatter_after_a_dispatch(WORKFLOW_LEVEL_DEFAULT);
    assert!(sim.fake.with(|w| w.pulls.is_empty()));
    let evicted = sim
        .played
        .iter()
        .find(|p| p.fate == Fate::Cancelled && p.event == "workflow_dispatch")
        .expect("the next job was evicted")
        .run_id;
    // The status comment names the run expected to continue the chain: the stall shows.
    let status = sim.fake.with(|w| {
        w.status_comments(crate::actions_sim::ISSUE)[0]["body"]
            .as_str()
            .unwrap()
            .to_string()
    });
    assert!(
        status
            .lines()
            .next()
            .unwrap()
            .ends_with(&format!(" next={evicted} -->")),
        "{status}"
    );
    assert!(
        status.contains(&format!("Next: run [{evicted}]")),
        "{status}"
    );

    // The hourly sweep of the `init --sweep` workflow finds it and resumes the chain.
    sim.deliver("schedule", Sim::schedule_payload());
    sim.play(WORKFLOW_LEVEL_DEFAULT, 40);
    assert_completed(&sim);
    let replies = sweep_replies(&sim);
    assert_eq!(replies.len(), 1, "{replies:#?}");
    assert!(
        replies[0].contains(&format!("Run {evicted} "))
            && replies[0].contains("was cancelled")
            && replies[0].contains("resumed the chain"),
        "{}",
        replies[0]
    );
}

#[test]
fn a_sweep_reports_a_next_job_that_failed_before_it_could_once_and_spends_nothing() {
    let mut sim = Sim::new(|c, _| c.to_string());
    let first = sim.labeled("octocat", false);
    let intake = sim.run(1001, 1, "issues", &first);
    assert_eq!(intake.code, 0, "{}", intake.stderr);
    let next: u64 = intake.output("next_run").parse().expect("a next run");
    // The next job never started spec-orchestrate (say, its image could not be pulled) and
    // nobody re-ran it.
    sim.set_run_status(next, "completed", Some("startup_failure"));
    for id in [5001, 5002] {
        let log = sim.run(id, 1, "schedule", &Sim::schedule_payload());
        assert_eq!(log.code, 0, "{}", log.stderr);
    }
    let replies = sweep_replies(&sim);
    assert_eq!(replies.len(), 1, "reported once: {replies:#?}");
    for needle in [
        format!("Run {next} "),
        "`startup_failure`".to_string(),
        "Re-run failed jobs".to_string(),
        "checkpoint of run 1001".to_string(),
    ] {
        assert!(replies[0].contains(&needle), "{needle}: {}", replies[0]);
    }
    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "{:#?}", w.violations);
    assert_eq!(w.dispatches.len(), 1, "a failure is a person's call");
}
