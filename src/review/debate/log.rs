//! `debate-log.md`: created when the debate starts, appended (and synced) after every round, so
//! a debate killed in round 3 still shows rounds 1 and 2. Everything a debater wrote is
//! scrubbed of names before it is written here.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use super::ruling::{Ruling, cell, decision_table};
use super::{DebateRound, DebateSetup, Stance};
use crate::error::{Error, Result};

/// Writes the log's title, what is debated and how it is labelled.
pub(super) fn start(setup: &DebateSetup) -> Result<()> {
    let text = format!(
        "# Debate log\n\n{}\n\nDebaters are labelled A and B; they never learn who the other is. \
Each round is appended as soon as it ends.\n",
        setup.header
    );
    crate::util::write_text(&setup.log_path, &text)
}

/// Appends to the log and flushes it to disk, so that a round is on disk before the next starts.
pub(super) fn append(path: &Path, text: &str) -> Result<()> {
    let mut f = crate::fsx::open_append(path)?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| Error::io(path, e))
}

/// The log's outcome section: convergence, or how many findings stand and how many are disputed.
pub(super) fn outcome(converged: bool, rounds: usize, stances: &[Stance]) -> String {
    if converged {
        format!(
            "\n## Outcome\n\nBoth debaters converged with no remaining dispute after round {}.\n",
            rounds
        )
    } else {
        format!(
            "\n## Outcome\n\nNo convergence after {} round(s); {} finding(s) stand, {} of them disputed.\n",
            rounds,
            stances.len(),
            stances.iter().filter(|s| !s.disputed_by.is_empty()).count()
        )
    }
}

/// One round: each side's findings, its counter-arguments (which are not findings) and whether
/// it converged, or why its answer was not usable.
pub(super) fn round(round: &DebateRound, scrub: &dyn Fn(&str) -> String) -> String {
    let mut s = format!("\n## Round {}: {}\n", round.number, round.stage);
    for side in &round.sides {
        let _ = writeln!(s, "\n### {}\n", side.label);
        match (&side.envelope, &side.failure) {
            (Some(env), _) => {
                let (counters, findings): (Vec<_>, Vec<_>) =
                    env.findings.iter().partition(|f| !f.disputes.is_empty());
                if findings.is_empty() {
                    s.push_str("No findings.\n");
                } else {
                    s.push_str(
                        "| Id | Severity | File | Section | Gist |\n|---|---|---|---|---|\n",
                    );
                    for f in findings {
                        let _ = writeln!(
                            s,
                            "| {} | {} | {} | {} | {} |",
                            f.id,
                            f.severity.as_str(),
                            cell(&f.file),
                            cell(&f.section),
                            cell(&scrub(&f.gist))
                        );
                    }
                }
                if !counters.is_empty() {
                    s.push_str("\nCounter-arguments (not findings):\n\n");
                    for f in counters {
                        let why = if f.gist.trim().is_empty() {
                            &f.argument
                        } else {
                            &f.gist
                        };
                        let _ = writeln!(s, "- against {}: {}", f.disputes, cell(&scrub(why)));
                    }
                }
                let _ = writeln!(
                    s,
                    "\nConverged: {}. Remaining disputes: {}.",
                    if env.converged { "yes" } else { "no" },
                    if env.remaining_disputes.is_empty() {
                        "none".to_string()
                    } else {
                        env.remaining_disputes.join(", ")
                    }
                );
            }
            (None, failure) => {
                let _ = writeln!(
                    s,
                    "**No valid answer** ({}), after one retry. This round does not count as convergence.",
                    failure.as_deref().unwrap_or("unknown")
                );
            }
        }
    }
    if round.number == 1 {
        s.push_str("\nRound 1 never ends a debate: each side answers the other at least once.\n");
    }
    s
}

/// The judge's section: its decision table, or why there is none.
pub(super) fn ruling(
    stances: &[Stance],
    ruling: &std::result::Result<Ruling, String>,
    scrub: &dyn Fn(&str) -> String,
) -> String {
    match ruling {
        Ok(r) if r.decisions.is_empty() && stances.is_empty() => {
            "\n## Judge\n\nNo finding stands; nothing to decide.\n".into()
        }
        Ok(r) => format!("\n## Judge\n\n{}", scrub(&decision_table(stances, r))),
        Err(e) => format!(
            "\n## Judge\n\nThe judge gave no usable ruling: {}\n",
            scrub(e)
        ),
    }
}
