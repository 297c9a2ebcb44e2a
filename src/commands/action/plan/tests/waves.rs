use super::*;

/// A state whose run handed out `tasks` (in run `run`, when set), `done` of them landed.
fn handed_out(tasks: &[&str], run: Option<u64>, done: &[&str]) -> State {
    let mut s = State::new("f", IssueRef::default(), Mode::Auto);
    s.tasks = tasks
        .iter()
        .map(|id| crate::state::TaskState {
            id: id.to_string(),
            kind: crate::types::kinds::TaskKind::Backend,
            implementer: "alpha".into(),
            reviewer: "beta".into(),
            attempts: 0,
            status: if done.contains(id) {
                crate::state::TaskStatus::Done
            } else {
                crate::state::TaskStatus::Pending
            },
            commit: None,
            blocker: None,
            title: id.to_string(),
        })
        .collect();
    s.fanout = Some(crate::state::leg::Fanout {
        tasks: tasks.iter().map(|t| t.to_string()).collect(),
        run: run.map(RunId::from),
        share_usd: None,
        wave: 1,
    });
    s
}

#[test]
fn a_wave_is_handed_out_only_by_a_job_whose_workflow_has_legs() {
    let s = handed_out(&["T001", "T002"], None, &[]);
    let wave = AfterJob::HandOut(vec!["T001".into(), "T002".into()]);
    assert_eq!(next_of(&s, PhaseEnd::Exited(0)), wave);
    assert_eq!(hand_out_or_dispatch(wave.clone(), true), wave);
    // The join's run has no legs after it: the next run hands the wave out.
    assert_eq!(hand_out_or_dispatch(wave, false), AfterJob::Dispatch);
    // Handed out already (the run is set): the chain goes on.
    let landed = handed_out(&["T001", "T002"], Some(7), &[]);
    assert_eq!(next_of(&landed, PhaseEnd::Exited(0)), AfterJob::Dispatch);
    let line = headline(
        &s,
        "implement",
        JobOutcome::from(PhaseOutcome::Ended(Outcome::Ok)),
        &AfterJob::HandOut(vec!["T001".into(), "T002".into()]),
    );
    assert!(line.contains("T001, T002 runs on 2 runners"), "{line}");
}

#[test]
fn a_leg_or_join_acts_only_while_its_run_is_the_head_and_never_twice() {
    let (issue, run) = (IssueNumber::from(5), RunId::from(7));
    assert_eq!(wave_ending(issue, Some(run), None, run, 1), None);
    // Its own earlier attempt recorded itself as next? Never: only another run counts.
    assert_eq!(wave_ending(issue, Some(run), Some(run), run, 2), None);
    let Some(Ending::NotNext(why)) = wave_ending(issue, Some(run), Some(9.into()), run, 2) else {
        panic!("a join re-run after its successor was dispatched does nothing");
    };
    assert!(
        why.contains("run 9 continues") && why.contains("attempt 2"),
        "{why}"
    );
    let Some(Ending::Nothing(why)) = wave_ending(issue, Some(8.into()), None, run, 1) else {
        panic!("superseded");
    };
    assert!(why.contains("run 8's"), "{why}");
    assert!(matches!(
        wave_ending(issue, None, None, run, 1),
        Some(Ending::Nothing(_))
    ));
}

#[test]
fn a_leg_runs_its_task_once_and_only_for_its_own_run() {
    let s = handed_out(&["T001", "T002"], Some(7), &["T001"]);
    assert_eq!(leg_ending(&s, 7.into(), "T002"), None);
    let Some(Ending::Nothing(why)) = leg_ending(&s, 7.into(), "T001") else {
        panic!("a done task is not run again");
    };
    assert!(why.contains("T001 is done"), "{why}");
    assert!(
        leg_ending(&s, 8.into(), "T002").is_some(),
        "another run's wave"
    );
    assert!(
        leg_ending(&s, 7.into(), "T003").is_some(),
        "not in the wave"
    );
}

#[test]
fn a_wave_is_in_flight_while_its_run_runs() {
    let s = handed_out(&["T001", "T002"], Some(7), &[]);
    assert_eq!(wave_in_flight(&s, |r| r == RunId::from(7)), Some(7.into()));
    assert_eq!(
        wave_in_flight(&s, |_| false),
        None,
        "its run completed: stale"
    );
    let never = handed_out(&["T001", "T002"], None, &[]);
    assert_eq!(wave_in_flight(&never, |_| true), None);
}
