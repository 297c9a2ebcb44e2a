//! `retro`: aggregates of the metrics ledger, to see whether the pipeline is getting better.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::report::Table;
use crate::retro::ledger::{Ledger, RunRecord};

use super::{Exit, repo_root};

/// Ledger aggregates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Aggregates {
    /// Runs recorded (superseded records counted once).
    pub runs: usize,
    /// Runs that ended with a ready PR.
    pub ready: usize,
    /// ready / runs.
    pub pass_rate: f64,
    /// Mean rounds per loop.
    pub mean_rounds: BTreeMap<String, f64>,
    /// How often each signal or category was seen, by `kind name phase`.
    pub failures: BTreeMap<String, usize>,
    /// Total cost.
    pub total_usd: f64,
    /// Mean cost per run.
    pub usd_per_run: f64,
}

/// Computes aggregates over run records.
pub fn aggregate(runs: &[RunRecord]) -> Aggregates {
    let n = runs.len();
    let ready = runs.iter().filter(|r| r.outcome == "ready").count();
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    let mut failures: BTreeMap<String, usize> = BTreeMap::new();
    for r in runs {
        for (k, v) in &r.rounds {
            *sums.entry(k.clone()).or_default() += f64::from(*v);
        }
        for f in &r.failures {
            *failures
                .entry(format!("{} {} {}", f.kind, f.name, f.phase))
                .or_default() += 1;
        }
    }
    let div = |x: f64| if n == 0 { 0.0 } else { x / n as f64 };
    let total_usd: f64 = runs.iter().map(|r| r.usd).sum();
    Aggregates {
        runs: n,
        ready,
        pass_rate: div(ready as f64),
        mean_rounds: sums.into_iter().map(|(k, v)| (k, div(v))).collect(),
        failures,
        total_usd,
        usd_per_run: div(total_usd),
    }
}

/// Prints the aggregates of the repository's ledger.
pub fn retro(repo: Option<&Path>, json: bool) -> Result<Exit> {
    let repo = repo_root(repo)?;
    let ledger = Ledger::of(&repo);
    let agg = aggregate(&ledger.runs()?);
    if json {
        crate::output::print_line(&serde_json::to_string_pretty(&agg).unwrap_or_default())?;
        return Ok(Exit::Ok);
    }
    let mut s = String::new();
    let _ = writeln!(s, "ledger: {}", ledger.path().display());
    let mut t = Table::new("metric | value");
    t.row(&[&"runs", &agg.runs]);
    let rate = agg.pass_rate * 100.0;
    t.row(&[&"ready PRs", &format!("{} ({rate:.0}%)", agg.ready)]);
    for (k, v) in &agg.mean_rounds {
        t.row(&[&format!("mean {k} rounds"), &format!("{v:.2}")]);
    }
    t.row(&[&"cost per run (USD)", &format!("{:.4}", agg.usd_per_run)]);
    t.row(&[&"total cost (USD)", &format!("{:.4}", agg.total_usd)]);
    s.push_str(&t.into_text());
    if !agg.failures.is_empty() {
        let mut t = Table::new("failure (kind name phase) | runs");
        for (k, v) in &agg.failures {
            t.row(&[&k, &v]);
        }
        let _ = write!(s, "\n{t}");
    }
    crate::output::print(&s)?;
    Ok(Exit::Ok)
}
