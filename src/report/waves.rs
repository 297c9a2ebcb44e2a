//! `implement`'s waves as people read them, from the state's `waves` record only: the current
//! wave (the status comment and `spec-orchestrate status`) and the history of every wave (the
//! job summary and the pull request body).
//!
//! A run whose waves each ran one task in the checkout is the sequential run as it always was:
//! it gets one line, not tables that repeat the task list. Both renderings are tables of
//! [`Table`], so [`super::fit::cap`] can cut them when a body runs long.

use crate::state::State;
use crate::state::waves::{Wave, WaveTask};
use crate::types::Phase;
use crate::types::kinds::WaveTaskState;

use super::{Table, cell, commit_cell};

/// A wall time in milliseconds as people read it: `4.2 s`, `2 m 05 s`, `1 h 03 m`.
pub fn wall(ms: u64) -> String {
    let secs = ms / 1000;
    if secs < 60 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else if secs < 3600 {
        format!("{} m {:02} s", secs / 60, secs % 60)
    } else {
        format!("{} h {:02} m", secs / 3600, (secs % 3600) / 60)
    }
}

/// A wall time that may not be known yet (a task or wave still running, or killed).
fn wall_or_dash(ms: Option<u64>) -> String {
    ms.map_or_else(|| "—".to_string(), wall)
}

/// Which runner did the task: its matrix leg's job (and attempt), the local run, or none yet
/// (a task still queued).
fn runner(t: &WaveTask) -> String {
    match &t.leg {
        Some(leg) => cell(&leg.label()),
        None if t.state == WaveTaskState::Queued => "—".to_string(),
        None => "local".to_string(),
    }
}

/// Where the task is, and that it was re-run on top when it was.
fn state_of(t: &WaveTask) -> String {
    if t.rerun && t.state != WaveTaskState::Rerun {
        format!("{} (re-run on top)", t.state.describe())
    } else {
        t.state.describe().to_string()
    }
}

/// The current wave while `implement` runs: one line for a wave of one task in the checkout, a
/// table of its tasks (runner, state, wall time) for a wave run at once. `None` outside
/// `implement` or before its first wave.
pub fn current(state: &State) -> Option<String> {
    if state.phase() != Phase::Implement {
        return None;
    }
    let w = state.current_wave()?;
    if !w.is_parallel() {
        let t = w.tasks.first()?;
        return Some(format!(
            "Wave {}: {} {}.\n",
            w.number,
            cell(&t.task),
            state_of(t)
        ));
    }
    let mut table = Table::new("Task | Runner | State | Wall time");
    for t in &w.tasks {
        table.row(&[
            &cell(&t.task),
            &runner(t),
            &state_of(t),
            &wall_or_dash(t.wall_ms),
        ]);
    }
    Some(format!(
        "Wave {} ({}, {} tasks at once):\n\n{table}",
        w.number,
        if w.ended.is_some() {
            "ended"
        } else {
            "running"
        },
        w.tasks.len()
    ))
}

/// The waves of the run, for the job summary and the pull request body: per wave its wall time
/// against the sum of its tasks' (what running them at once saved), then which runner did each
/// task, how it ended and in what time. One line when every wave ran one task in the checkout;
/// nothing before the first wave.
pub fn history(state: &State) -> String {
    if state.waves.is_empty() {
        return String::new();
    }
    if !state.waves.iter().any(Wave::is_parallel) {
        let total = wall(state.waves.iter().filter_map(|w| w.wall_ms).sum());
        let line = match state.waves.len() {
            1 => format!("The task ran in the run's own checkout ({total})."),
            n => format!(
                "The tasks ran one at a time in the run's own checkout ({n} waves of one task, {total} in all)."
            ),
        };
        return format!("#### Waves\n\n{line}\n\n");
    }
    let mut waves = Table::new("Wave | Tasks | Wall time | Sum of its tasks' times");
    let mut tasks = Table::new("Wave | Task | Runner | State | Wall time | Commit");
    for w in &state.waves {
        waves.row(&[
            &w.number,
            &w.tasks.len(),
            &wall_or_dash(w.wall_ms),
            &wall(w.tasks_ms()),
        ]);
        for t in &w.tasks {
            tasks.row(&[
                &w.number,
                &cell(&t.task),
                &runner(t),
                &state_of(t),
                &wall_or_dash(t.wall_ms),
                &commit_cell(t.commit.as_deref()),
            ]);
        }
    }
    format!("#### Waves\n\n{waves}\n{tasks}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_times_read_in_the_unit_that_fits() {
        assert_eq!(wall(0), "0.0 s");
        assert_eq!(wall(4_249), "4.2 s");
        assert_eq!(wall(125_000), "2 m 05 s");
        assert_eq!(wall(3_780_000), "1 h 03 m");
    }
}
