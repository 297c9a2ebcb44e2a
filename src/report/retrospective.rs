//! `retrospective.md`: the run's counts, for people and for the metrics ledger that later
//! self-improvement rests on.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::state::State;

/// Renders the retrospective of a finished run.
pub fn render(state: &State) -> String {
    let mut s = format!(
        "# Retrospective: {}\n\nRun `{}`.\n\n",
        state.issue.title, state.run_id
    );
    s.push_str(
        "## Rounds per loop\n\n| Loop | Rounds | Failed rounds | Last gate |\n|---|---|---|---|\n",
    );
    let sr = &state.rounds.spec_review;
    let _ = writeln!(
        s,
        "| spec_review | {} | {} | {} |",
        sr.len(),
        sr.iter().filter(|r| r.failure.is_some()).count(),
        sr.last()
            .map(|r| r.gate.to_string())
            .unwrap_or_else(|| "-".into())
    );
    let ev = &state.rounds.evaluate;
    let _ = writeln!(
        s,
        "| evaluate | {} | 0 | {} |",
        ev.len(),
        ev.last()
            .map(|r| r.gate.to_string())
            .unwrap_or_else(|| "-".into())
    );
    s.push_str("\n## Stall signals and arbitrations\n\n");
    if state.arbitrations.is_empty() {
        s.push_str("None.\n");
    } else {
        for a in &state.arbitrations {
            let _ = writeln!(s, "- {} {}: {} ({})", a.phase, a.signal, a.decision, a.note);
        }
    }
    s.push_str("\n## Role overrides\n\n");
    if state.role_overrides.is_empty() {
        s.push_str("None.\n");
    } else {
        for o in &state.role_overrides {
            let _ = writeln!(s, "- {}: {} → {} ({})", o.role, o.from, o.to, o.reason);
        }
    }
    s.push_str("\n## Blocker categories\n\n");
    let mut cats: BTreeMap<String, u32> = BTreeMap::new();
    for f in &state.agent_failures {
        *cats
            .entry(format!("{} ({})", f.category, f.phase))
            .or_default() += 1;
    }
    for t in &state.tasks {
        if let Some(b) = &t.blocker {
            *cats.entry(format!("{b} (task {})", t.id)).or_default() += 1;
        }
    }
    if cats.is_empty() {
        s.push_str("None.\n");
    } else {
        for (c, n) in cats {
            let _ = writeln!(s, "- {c}: {n}");
        }
    }
    s.push_str("\n## Duration per phase\n\n| Phase | Runs | Seconds |\n|---|---|---|\n");
    let mut per: BTreeMap<crate::types::Phase, (u32, i64)> = BTreeMap::new();
    for e in &state.phase_log {
        let secs = (e.ended - e.started).num_seconds();
        let entry = per.entry(e.phase).or_default();
        entry.0 += 1;
        entry.1 += secs;
    }
    for (p, (n, secs)) in per {
        let _ = writeln!(s, "| {p} | {n} | {secs} |");
    }
    s.push_str("\n## Cost\n\n");
    for (agent, u) in &state.usage {
        let _ = writeln!(s, "- {agent}: {} calls, {:.4} USD", u.calls, u.usd);
    }
    let _ = writeln!(s, "\nTotal: {:.4} USD.", state.total_usd());
    s.push_str(&crate::report::pr_body::budget_lines(state));
    s
}
