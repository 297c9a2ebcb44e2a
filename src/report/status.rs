//! The issue's status comment and the job summary (`docs/reports.md`), rendered from the state
//! only.
//!
//! There is exactly one status comment per issue, found again by the hidden marker on its first
//! line and edited in place by every job of the chain. The marker also names the run whose
//! checkpoint is the chain's current head: a comment command reads that checkpoint, and a
//! dispatched run whose parent is no longer the head knows it has been superseded (a `stop`, a
//! newer `continue`) and does nothing.

use std::fmt::Write as _;

use crate::state::State;
use crate::types::Phase;
use crate::types::ids::{IssueNumber, RunId};
use crate::types::kinds::JobOutcome;

use super::{ArbitrationColumns, Table, arbitration_table, cell, line, usage_table};

/// How every status comment begins.
pub const MARKER: &str = "<!-- spec-orchestrate:status";

/// How the one reply to a refused trigger begins (one per run, found again on re-run).
pub const REFUSAL_MARKER: &str = "<!-- spec-orchestrate:refusal";

/// What the marker of a status comment says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    /// The issue.
    pub issue: IssueNumber,
    /// The run holding the newest checkpoint of the chain.
    pub checkpoint: Option<RunId>,
}

/// The marker line.
pub fn marker_line(m: Marker) -> String {
    match m.checkpoint {
        Some(run) => format!("{MARKER} issue={} checkpoint={run} -->", m.issue),
        None => format!("{MARKER} issue={} -->", m.issue),
    }
}

/// The number the marker of a status comment (its first line) gives `key` (`issue`,
/// `checkpoint`, `next`); `None` when `body` is no status comment or the marker has none.
fn marker_field(body: &str, key: &str) -> Option<u64> {
    let line = body.trim_start().lines().next()?;
    let rest = line.strip_prefix(MARKER)?.strip_suffix("-->")?;
    let mut fields = rest.split_whitespace().filter_map(|kv| kv.split_once('='));
    fields.find(|(k, _)| *k == key)?.1.parse().ok()
}

/// Reads the marker of a comment body, if it is a status comment.
pub fn parse_marker(body: &str) -> Option<Marker> {
    Some(Marker {
        issue: marker_field(body, "issue")?.into(),
        checkpoint: marker_field(body, "checkpoint").map(RunId::from),
    })
}

/// What the comment says beyond the state.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// Newest checkpoint run (goes into the marker).
    pub checkpoint: Option<RunId>,
    /// One line on where the run stands and what a person may do.
    pub headline: String,
    /// The pull request, once there is one.
    pub pr_url: Option<String>,
    /// A failure or notice to show above everything else.
    pub notice: Option<String>,
    /// Why CI will not run on the pull request, when the token cannot start workflows.
    pub ci_note: Option<String>,
    /// The run expected to continue the chain (id, link), once dispatched: the marker carries
    /// it as `next=<id>` for the sweep (`docs/action-mode.md`, "Stalled chains").
    pub next_run: Option<(RunId, String)>,
}

/// The line of the status comment that names the run expected to continue the chain.
pub fn next_line(run: RunId, url: &str) -> String {
    format!(
        "Next: run [{run}]({url}) continues the chain. If it is cancelled, or fails and nobody re-runs it, comment `/spec-orchestrate continue`."
    )
}

/// The marker line naming `next` as the run expected to continue the chain.
pub fn marker_with_next(m: Marker, next: RunId) -> String {
    let line = marker_line(m);
    let head = line.strip_suffix(" -->").unwrap_or(&line);
    format!("{head} next={next} -->")
}

/// The run a status comment names as expected to continue the chain (`next=` in its marker).
pub fn parse_next(body: &str) -> Option<RunId> {
    marker_field(body, "next").map(RunId::from)
}

fn phase_mark(state: &State, p: Phase) -> &'static str {
    let current = state.phase() == p;
    if current && state.waiting.is_some() {
        "⏸️ waiting"
    } else if current {
        "▶️ next"
    } else if state.completed_phases.contains(&p) {
        "✅"
    } else {
        "⬜"
    }
}

/// Renders the whole status comment for issue `issue`.
pub fn render(issue: IssueNumber, state: &State, view: &View) -> String {
    let marker = Marker {
        issue,
        checkpoint: view.checkpoint,
    };
    let mut s = match &view.next_run {
        Some((next, _)) => marker_with_next(marker, *next),
        None => marker_line(marker),
    };
    s.push('\n');
    let _ = writeln!(s, "### spec-orchestrate: {}\n", line(&state.issue.title));
    if let Some(n) = &view.notice {
        let _ = writeln!(s, "> [!WARNING]\n> {}\n", line(n));
    }
    let _ = writeln!(s, "**{}**\n", line(&view.headline));
    if let Some(url) = &view.pr_url {
        let draft = state.pr.as_ref().is_some_and(|p| p.draft);
        let _ = writeln!(
            s,
            "Pull request: {url}{}\n",
            if draft { " (draft)" } else { "" }
        );
    }
    if let Some(line) = super::links::status_line(state) {
        let _ = writeln!(s, "{line}\n");
    }
    if let Some((run, url)) = &view.next_run {
        let _ = writeln!(s, "{}\n", next_line(*run, url));
    }
    if let Some(n) = &view.ci_note {
        let _ = writeln!(s, "> [!NOTE]\n> {}\n", cell(n));
    }
    let violations = state
        .agent_failures
        .iter()
        .filter(|f| f.category == crate::types::kinds::BlockerCategory::SandboxViolation)
        .count();
    if violations > 0 {
        let _ = writeln!(
            s,
            "> [!CAUTION]\n> {violations} sandbox violation{}: agents reached outside what they may (files outside their room, the runner's file commands, non-model API endpoints); each was undone or refused. The pull request's **Sandbox violations** table lists them.\n",
            if violations == 1 { "" } else { "s" }
        );
    }
    let mut phases = Table::new("Phase | ");
    for &p in Phase::WORKING {
        phases.row(&[&p.as_str(), &phase_mark(state, p)]);
    }
    let _ = writeln!(s, "{phases}");
    if let Some(wave) = super::waves::current(state) {
        let _ = writeln!(s, "{wave}");
    }
    s.push_str(&rounds_tables(state));
    let arbitrations = arbitration_table(state, ArbitrationColumns::Short);
    s.push_str(&arbitrations.titled("#### Signals and arbitrations\n\n"));
    s.push_str(&cost_table(state));
    let mut t = Table::new("Run | Phase | Outcome");
    for r in state.job.runs() {
        let attempt = if r.attempt > 1 {
            format!(" (attempt {})", r.attempt)
        } else {
            String::new()
        };
        // One row per phase, so a job that ran several still shows each one and its run.
        let earlier = (r.earlier.iter()).map(|e| (e.phase, JobOutcome::from(e.outcome)));
        for (phase, outcome) in earlier.chain([(r.phase, r.outcome)]) {
            let run = format!("[{}]({}){attempt}", r.run_id, r.url);
            t.row(&[&run, &phase, &cell(&outcome.to_string())]);
        }
    }
    s.push_str(&t.titled("#### Runs\n\n"));
    s.push_str("<sub>Commands (write access): `/spec-orchestrate approve`, `continue`, `swap`, `draft`, `stop`. This comment is edited in place by every run.</sub>\n");
    s
}

fn rounds_tables(state: &State) -> String {
    let mut spec = Table::new("Round | Reviewer | Critical | Improvement | Minor | Gate");
    for r in &state.rounds.spec_review {
        spec.row(&[
            &r.round,
            &r.reviewer,
            &r.critical,
            &r.improvement,
            &r.minor,
            &r.gate,
        ]);
    }
    let mut evaluate = Table::new("Round | Pass | Fail | Blocked | Gate");
    for r in &state.rounds.evaluate {
        evaluate.row(&[&r.round, &r.pass, &r.fail, &r.blocked, &r.gate]);
    }
    spec.titled("#### spec_review rounds\n\n") + &evaluate.titled("#### evaluate rounds\n\n")
}

fn cost_table(state: &State) -> String {
    if state.usage.is_empty() {
        return String::new();
    }
    format!("#### Cost\n\n{}\n", usage_table(state))
}

/// The job summary (`GITHUB_STEP_SUMMARY`): what this job did and where the run stands.
pub fn job_summary(
    state: &State,
    ran: Option<Phase>,
    headline: &str,
    pr_url: Option<&str>,
) -> String {
    job_summary_of(state, ran.as_slice(), headline, pr_url)
}

/// The job summary of a job that ran the phases `ran`, in order (none when a command halted
/// the chain).
pub fn job_summary_of(
    state: &State,
    ran: &[Phase],
    headline: &str,
    pr_url: Option<&str>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## spec-orchestrate: {}\n", line(&state.issue.title));
    if !ran.is_empty() {
        let names: Vec<String> = ran.iter().map(|p| format!("**{p}**")).collect();
        let _ = writeln!(s, "This job ran {}.\n", names.join(", "));
    }
    let _ = writeln!(s, "{}\n", line(headline));
    if let Some(url) = pr_url {
        let _ = writeln!(s, "Pull request: {url}\n");
    }
    s.push_str(&rounds_tables(state));
    s.push_str(&super::waves::history(state));
    s.push_str(&cost_table(state));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_run_rides_in_the_marker_without_changing_what_it_says() {
        let m = Marker {
            issue: 42.into(),
            checkpoint: Some(1003.into()),
        };
        let body = format!("{}\nhello", marker_with_next(m, 1004.into()));
        assert_eq!(
            body.lines().next(),
            Some("<!-- spec-orchestrate:status issue=42 checkpoint=1003 next=1004 -->")
        );
        assert_eq!(parse_marker(&body), Some(m));
        assert_eq!(parse_next(&body), Some(1004.into()));
        assert_eq!(parse_next(&marker_line(m)), None);
    }

    #[test]
    fn markers_round_trip_and_other_comments_are_not_status() {
        let m = Marker {
            issue: 42.into(),
            checkpoint: Some(1003.into()),
        };
        let line = marker_line(m);
        assert_eq!(
            line,
            "<!-- spec-orchestrate:status issue=42 checkpoint=1003 -->"
        );
        assert_eq!(parse_marker(&format!("{line}\n### x")), Some(m));
        let bare = Marker {
            issue: 7.into(),
            checkpoint: None,
        };
        assert_eq!(parse_marker(&marker_line(bare)), Some(bare));
        assert_eq!(parse_marker("Me too"), None);
        assert_eq!(parse_marker("<!-- spec-orchestrate:status -->"), None);
    }
}
