//! `status`: where a run is, in words or as JSON.

use std::fmt::Write as _;

use super::{Exit, repo_root};
use crate::error::Result;
use crate::state::{self, State};
use crate::types::kinds::Strategy;

/// Prints the status of one run (or every run when several exist and none is named).
pub fn status(at: &super::Target, json: bool) -> Result<Exit> {
    let repo = repo_root(at.repo.as_deref())?;
    let all = state::store::features(&repo);
    let dirs: Vec<std::path::PathBuf> = if at.feature.is_some() || all.is_empty() {
        // Without a run, this is the helpful "no run found" error.
        vec![super::feature_dir(&repo, at.feature.as_deref())?]
    } else {
        all.into_iter().map(|(_, d)| d).collect()
    };
    let mut states = Vec::new();
    for d in &dirs {
        states.push(state::store::load_file(&d.join(state::STATE_FILE))?);
    }
    if json {
        let value = if states.len() == 1 {
            serde_json::to_value(&states[0])
        } else {
            serde_json::to_value(&states)
        }
        .unwrap_or_default();
        crate::output::print_line(&serde_json::to_string_pretty(&value).unwrap_or_default())?;
    } else {
        for s in &states {
            crate::output::print(&render(s))?;
        }
    }
    Ok(Exit::Ok)
}

/// Human-readable status, section by section.
pub fn render(s: &State) -> String {
    let mut o = String::new();
    write_position(&mut o, s);
    write_rounds(&mut o, s);
    write_work(&mut o, s);
    write_cost_and_result(&mut o, s);
    write_review_rounds(&mut o, s);
    o
}

/// The review rounds a person's review of the pull request started (`revise`, or a review on
/// GitHub): where each came from, how it stands, and what its comments got.
fn write_review_rounds(o: &mut String, s: &State) {
    use crate::state::pr_review::{Answer, RoundStatus};
    if s.rounds.pr_review.is_empty() {
        return;
    }
    let _ = writeln!(o, "  review rounds after the pull request:");
    for r in &s.rounds.pr_review {
        let count = |f: fn(&Answer) -> bool| r.answers.iter().filter(|(_, a)| f(a)).count();
        let status = match r.status {
            RoundStatus::Running => "in flight",
            RoundStatus::Finished => "answered",
            RoundStatus::Stopped => "stopped",
        };
        let _ = writeln!(
            o,
            "    round {}  {}  {status}: {} comment(s), {} fixed, {} disputed, {} open{}{}",
            r.round,
            r.from,
            r.items.len(),
            count(|a| matches!(a, Answer::Fixed { .. })),
            count(|a| matches!(a, Answer::Disputed { .. })),
            count(|a| matches!(a, Answer::Open { .. })),
            r.task
                .as_deref()
                .map(|t| format!(", task {t}"))
                .unwrap_or_default(),
            match (r.signal, r.swapped) {
                (Some(sig), true) => format!(", {sig}: fix given to the other agent"),
                (Some(sig), false) => format!(", {sig}"),
                _ => String::new(),
            }
        );
    }
}

/// Where the run is: its phase, what it waits for, how the issue was classified.
fn write_position(o: &mut String, s: &State) {
    let _ = writeln!(o, "{} — {}", s.feature, s.issue.title);
    let _ = writeln!(o, "  run:       {} ({:?} mode)", s.run_id, s.mode);
    let _ = writeln!(o, "  phase:     {}", s.phase());
    let done: Vec<&str> = s.completed_phases.iter().map(|p| p.as_str()).collect();
    let _ = writeln!(
        o,
        "  completed: {}",
        if done.is_empty() {
            "-".into()
        } else {
            done.join(", ")
        }
    );
    if let Some(w) = &s.waiting {
        let _ = writeln!(o, "  waiting:   {}", w.message);
        if !w.choices.is_empty() {
            let _ = writeln!(
                o,
                "  choices:   {} (spec-orchestrate arbitrate <choice>)",
                w.choices
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    if let Some(c) = &s.classification {
        let _ = writeln!(o, "  classification: {} (by {})", c.summary(), c.by);
    }
}

/// The review and evaluate rounds, the arbitrations, and the findings left open when the run waits
/// or is done.
fn write_rounds(o: &mut String, s: &State) {
    for r in &s.rounds.spec_review {
        let who = if r.strategy == Strategy::Single && r.skipped.is_empty() {
            String::new()
        } else {
            format!(
                " [{}: {}{}]",
                r.strategy,
                r.members.join(", "),
                if r.skipped.is_empty() {
                    String::new()
                } else {
                    format!("; skipped: {}", r.skipped.join("; "))
                }
            )
        };
        let _ = writeln!(
            o,
            "  spec_review round {}: {} critical, {} improvement, {} minor → {}{}{who}",
            r.round,
            r.critical,
            r.improvement,
            r.minor,
            r.gate,
            r.failure
                .as_ref()
                .map(|f| format!(" (failed: {f})"))
                .unwrap_or_default()
        );
    }
    for r in &s.rounds.evaluate {
        let _ = writeln!(
            o,
            "  evaluate round {}: {} pass, {} fail, {} blocked → {}",
            r.round, r.pass, r.fail, r.blocked, r.gate
        );
    }
    for a in &s.arbitrations {
        let _ = writeln!(o, "  arbitration: {}", crate::report::arbitration_line(a));
    }
    if s.waiting.is_some() || s.phase() == crate::types::Phase::Done {
        for f in &s.open_findings {
            let _ = writeln!(
                o,
                "  open finding {} [{}] {}",
                f.fingerprint
                    .as_deref()
                    .map(|h| &h[..12.min(h.len())])
                    .unwrap_or(""),
                f.severity.as_str(),
                f.gist
            );
        }
    }
}

/// Who did the work: role overrides, the current wave of `implement` and every task.
fn write_work(o: &mut String, s: &State) {
    for ov in &s.role_overrides {
        let _ = writeln!(
            o,
            "  override: {} {} → {} ({})",
            ov.role, ov.from, ov.to, ov.reason
        );
    }
    // The current wave, as the status comment shows it.
    if let Some(wave) = crate::report::waves::current(s) {
        for line in wave.lines().filter(|l| !l.is_empty()) {
            let _ = writeln!(o, "  {line}");
        }
    }
    for t in &s.tasks {
        let _ = writeln!(
            o,
            "  task {} [{}] {:?} by {} (reviewed by {}), {} attempt(s){}",
            t.id,
            t.kind,
            t.status,
            t.implementer,
            t.reviewer,
            t.attempts,
            t.commit
                .as_ref()
                .map(|c| format!(", commit {}", &c[..c.len().min(10)]))
                .unwrap_or_default()
        );
    }
}

/// What it cost, why it stopped, and its pull request.
fn write_cost_and_result(o: &mut String, s: &State) {
    let _ = writeln!(o, "  cost:      {:.4} USD", s.total_usd());
    for (agent, u) in &s.usage {
        let _ = writeln!(
            o,
            "    {agent}: {} calls, {} in / {} out tokens, {:.4} USD",
            u.calls, u.input_tokens, u.output_tokens, u.usd
        );
    }
    let budget = crate::report::pr_body::budget_lines(s);
    for line in budget.lines().filter(|l| !l.trim().is_empty()) {
        let _ = writeln!(o, "  {}", line.replace("**", ""));
    }
    if let Some(stop) = &s.stop {
        let _ = writeln!(o, "  stopped:   {}", stop.message);
    }
    if let Some(pr) = &s.pr {
        let _ = writeln!(
            o,
            "  pr:        {} ({})",
            pr.url,
            if pr.draft { "draft" } else { "ready" }
        );
    }
}
