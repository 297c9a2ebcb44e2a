//! What people see of `implement`'s waves (docs/reports.md#waves): the status comment and
//! `status` show the current wave, each leg's task and its state; the job summary and the pull
//! request body show which runner did each task and the wave's wall time against the sum of its
//! tasks'. Two runs: today's sequential one (one wave of one task, in the checkout), which must
//! read without noise, and one of several waves on matrix legs with a failed task.

use std::time::Duration;

use spec_orchestrate::commands::status as cli_status;
use spec_orchestrate::report::{fit, pr_body, status};
use spec_orchestrate::state::State;
use spec_orchestrate::state::waves::Leg;
use spec_orchestrate::types::Phase;
use spec_orchestrate::types::ids::{Sha, TaskId};
use spec_orchestrate::types::kinds::WaveTaskState;

use crate::snapshot::fixture_state;

fn at(s: &str) -> chrono::DateTime<chrono::Utc> {
    spec_orchestrate::types::time::parse(s).expect("a time")
}

/// The ready run as the sequential implement left it: one wave of one task, in the checkout.
fn sequential() -> State {
    let mut state = fixture_state("ready");
    let n = state.open_wave(&[TaskId::from("T001")], at("2026-11-28T09:40:00Z"));
    let wave = state.wave_mut(n).expect("the wave");
    wave.start_task("T001", None);
    let commit = Sha::from("9ef14b8fb81fedc83dca10782c25f96b83e6b0b9");
    let wall = Duration::from_millis(95_400);
    wave.end_task("T001", WaveTaskState::Landed, wall, Some(commit));
    wave.close(at("2026-11-28T09:41:36Z"), Duration::from_millis(95_900));
    state
}

/// [`sequential`] while its one task works: the run is at implement.
fn sequential_running() -> State {
    let mut state = fixture_state("ready");
    state.move_to(Phase::Implement);
    let n = state.open_wave(&[TaskId::from("T001")], at("2026-11-28T09:40:00Z"));
    state
        .wave_mut(n)
        .expect("the wave")
        .start_task("T001", None);
    state
}

/// The draft run (four waves, the first on three matrix legs with T003 failed) back at implement
/// with a fifth wave on the legs of run 8120: one landed, one re-run on top, one running on its
/// second attempt, one queued.
fn parallel_running() -> State {
    let mut state = fixture_state("draft");
    state.move_to(Phase::Implement);
    let ids: Vec<TaskId> = ["FIX4", "FIX5", "FIX6", "FIX7"].map(TaskId::from).into();
    let n = state.open_wave(&ids, at("2026-11-29T10:20:00Z"));
    let wave = state.wave_mut(n).expect("the wave");
    let leg = |task: &str, attempt: u32| Leg {
        job: format!("implement ({task})"),
        run_id: 8120.into(),
        attempt,
    };
    for (task, attempt) in [("FIX4", 1), ("FIX5", 1), ("FIX6", 2)] {
        wave.start_task(task, Some(leg(task, attempt)));
    }
    let sha = Sha::from("4d5e6f7081920a1b2c3d4e5f60718293a4b5c6d7");
    wave.end_task(
        "FIX4",
        WaveTaskState::Landed,
        Duration::from_secs(88),
        Some(sha),
    );
    wave.end_task("FIX5", WaveTaskState::Rerun, Duration::from_secs(91), None);
    state
}

fn comment(state: &State) -> String {
    let view = status::View {
        checkpoint: Some(8120.into()),
        headline: "implement is running.".into(),
        ..Default::default()
    };
    status::render(57.into(), state, &view)
}

#[test]
fn one_wave_of_one_task_reads_as_one_line_in_every_report() {
    let running = sequential_running();
    let shown = comment(&running);
    assert!(shown.contains("Wave 1: T001 running."), "{shown}");
    assert!(
        !shown.contains("| Runner"),
        "no table for one task: {shown}"
    );
    insta::assert_snapshot!("waves_sequential_status_comment", shown);
    insta::assert_snapshot!("waves_sequential_cli_status", cli_status::render(&running));

    let done = sequential();
    let summary = status::job_summary(&done, Some(Phase::Implement), "implement is done.", None);
    assert!(
        summary.contains("The task ran in the run's own checkout (1 m 35 s)."),
        "{summary}"
    );
    insta::assert_snapshot!("waves_sequential_job_summary", summary);
    let body = pr_body::render(&done, None);
    assert!(!body.contains("| Runner"), "{body}");
    insta::assert_snapshot!("waves_sequential_pr_body", body);
    // Outside implement, the comment has no current wave.
    assert!(!comment(&done).contains("Wave 1"));
}

#[test]
fn waves_on_matrix_legs_show_each_leg_its_task_state_and_times() {
    let running = parallel_running();
    let shown = comment(&running);
    assert!(
        shown.contains("| FIX6 | implement (FIX6), attempt 2 | running | — |"),
        "{shown}"
    );
    insta::assert_snapshot!("waves_parallel_status_comment", shown);
    let cli = cli_status::render(&running);
    assert!(cli.contains("  | FIX7 | — | queued | — |"), "{cli}");
    insta::assert_snapshot!("waves_parallel_cli_status", cli);

    let draft = fixture_state("draft");
    let summary = status::job_summary(&draft, Some(Phase::Implement), "implement is done.", None);
    // Wave 1: three legs at once, 2 m 10 s against 5 m 45 s one after another.
    assert!(
        summary.contains("| 1 | 3 | 2 m 10 s | 5 m 45 s |"),
        "{summary}"
    );
    assert!(
        summary.contains("| 1 | T003 | implement (T003) | failed | 2 m 08 s | — |"),
        "{summary}"
    );
    insta::assert_snapshot!("waves_parallel_job_summary", summary);
}

/// A run of a thousand waves still publishes its body: the waves tables are cut like any other
/// table, the header stays.
#[test]
fn a_long_waves_record_is_cut_to_fit_the_pull_request_body() {
    let mut state = fixture_state("draft");
    for i in 0..2_000u32 {
        let ids: Vec<TaskId> = (0..4).map(|k| TaskId::from(format!("T{i}-{k}"))).collect();
        let n = state.open_wave(&ids, at("2026-11-29T10:20:00Z"));
        let wave = state.wave_mut(n).expect("the wave");
        for id in &ids {
            wave.end_task(id, WaveTaskState::Landed, Duration::from_secs(60), None);
        }
        wave.close(at("2026-11-29T10:21:00Z"), Duration::from_secs(61));
    }
    let body = pr_body::render(&state, None);
    assert!(body.chars().count() <= fit::GITHUB_BODY_LIMIT);
    assert!(body.contains("#### Waves"), "the section stays");
    assert!(body.contains("| Wave | Task | Runner | State | Wall time | Commit |"));
    assert!(body.contains("more row(s) not shown"), "a cut says so");
}
