//! `retrospective.md`: the run's counts, for people and for the metrics ledger that later
//! self-improvement rests on.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::Table;
use crate::state::State;
use crate::types::kinds::Gate;

/// Renders the retrospective of a finished run.
pub fn render(state: &State) -> String {
    let mut s = format!(
        "# Retrospective: {}\n\nRun `{}`.\n\n",
        state.issue.title, state.run_id
    );
    let mut loops = Table::new("Loop | Rounds | Failed rounds | Last gate");
    let last = |gate: Option<Gate>| gate.map_or_else(|| "-".into(), |g| g.to_string());
    let sr = &state.rounds.spec_review;
    loops.row(&[
        &"spec_review",
        &sr.len(),
        &sr.iter().filter(|r| r.failure.is_some()).count(),
        &last(sr.last().map(|r| r.gate)),
    ]);
    let ev = &state.rounds.evaluate;
    loops.row(&[&"evaluate", &ev.len(), &0, &last(ev.last().map(|r| r.gate))]);
    let _ = writeln!(s, "## Rounds per loop\n\n{loops}");
    // A section listing `items`, one `- ` line each, or saying there is none.
    let mut list = |heading: &str, items: Vec<String>| {
        let _ = write!(s, "{heading}\n\n");
        if items.is_empty() {
            s.push_str("None.\n");
        }
        for i in items {
            let _ = writeln!(s, "- {i}");
        }
    };
    let arbitrations = state.arbitrations.iter().map(super::arbitration_line);
    list("## Stall signals and arbitrations", arbitrations.collect());
    let overrides = (state.role_overrides.iter())
        .map(|o| format!("{}: {} → {} ({})", o.role, o.from, o.to, o.reason));
    list("\n## Role overrides", overrides.collect());
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
    let cats = cats.into_iter().map(|(c, n)| format!("{c}: {n}"));
    list("\n## Blocker categories", cats.collect());
    let mut per: BTreeMap<crate::types::Phase, (u32, i64)> = BTreeMap::new();
    for e in &state.phase_log {
        let secs = (e.ended - e.started).num_seconds();
        let entry = per.entry(e.phase).or_default();
        entry.0 += 1;
        entry.1 += secs;
    }
    let mut durations = Table::new("Phase | Runs | Seconds");
    for (p, (n, secs)) in per {
        durations.row(&[&p, &n, &secs]);
    }
    let _ = write!(s, "\n## Duration per phase\n\n{durations}\n## Cost\n\n");
    for (agent, u) in &state.usage {
        let _ = writeln!(s, "- {agent}: {} calls, {:.4} USD", u.calls, u.usd);
    }
    let _ = writeln!(s, "\nTotal: {:.4} USD.", state.total_usd());
    s.push_str(&crate::report::pr_body::budget_lines(state));
    s
}
