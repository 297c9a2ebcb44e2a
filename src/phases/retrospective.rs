//! retrospective: the run's record for people (`retrospective.md`) and for the ledger, and the
//! self-improvement that the ledger's counts justify (see `crate::retro`).

use std::fmt::Write as _;

use crate::error::Result;
use crate::retro::apply::{self, Applied};
use crate::retro::ledger::{Ledger, RunRecord};
use crate::retro::proposals::{self, Analysis};
use crate::state::job::{Effect, ImprovementBranch};
use crate::types::{Outcome, Phase};
use crate::util;

use super::Ctx;

/// Runs retrospective.
pub fn run(ctx: &mut Ctx) -> Result<Outcome> {
    // The retrospective reports on the run up to here, including itself as completed.
    ctx.state.mark_completed(Phase::Retrospective);
    let active = proposals::active_changes(&ctx.repo);
    let ledger = Ledger::of(&ctx.repo);
    let record = ledger.append(RunRecord::from_state(&ctx.state, active.clone()))?;
    let runs = ledger.runs()?;
    let analysis = proposals::analyse(&runs, &record, ctx.config.improve.min_occurrences, &active);
    let mut applied = Vec::new();
    if ctx.config.improve.auto_apply
        && let Some(base) = ctx.state.base_commit.clone()
    {
        for p in &analysis.proposals {
            let result = apply::apply(&ctx.repo, &base, p, ctx.config.improve.line_budget)?;
            if let Applied::Branch { name, commit } = &result {
                let body_path = ctx.feature_dir().join(format!("improvement-{}.md", p.id));
                util::write_text(&body_path, &apply::body(p, name))?;
                ctx.state.job.record(Effect::Improvement {
                    proposal: p.id.clone(),
                    branch: ImprovementBranch {
                        branch: name.clone(),
                        commit: commit.as_str().into(),
                    },
                });
                crate::events::emit(crate::events::Event::ImprovementBranch {
                    proposal: p.id.clone(),
                    branch: name.clone(),
                });
            }
            applied.push((p.id.clone(), result));
        }
    }
    let mut text = crate::report::retrospective::render(&ctx.state);
    text.push_str(&render_improvement(
        &analysis,
        &applied,
        ctx.config.improve.auto_apply,
    ));
    util::write_text(&ctx.feature_dir().join("retrospective.md"), &text)?;
    Ok(Outcome::Ok)
}

fn render_improvement(a: &Analysis, applied: &[(String, Applied)], auto_apply: bool) -> String {
    let mut s = String::from("\n## Improvement\n\n");
    if a.observations.is_empty() && a.proposals.is_empty() {
        s.push_str("No failure was recorded in this run.\n");
        return s;
    }
    if !a.observations.is_empty() {
        s.push_str("### Observations (not enough runs to act on)\n\n");
        for o in &a.observations {
            let _ = writeln!(s, "- {} (runs: {})", o.key, o.runs.join(", "));
        }
        s.push('\n');
    }
    if !a.proposals.is_empty() {
        s.push_str("### Proposals (Tier 1: prompt files)\n\n");
        for p in &a.proposals {
            let status = match applied.iter().find(|(id, _)| *id == p.id).map(|(_, r)| r) {
                Some(Applied::Branch { name, .. }) => format!("branch `{name}` created"),
                Some(Applied::Exists(name)) => format!("branch `{name}` already exists"),
                Some(Applied::Refused(r)) => format!("refused by guardrails: {}", r.reason),
                None if auto_apply => "not applied (no base commit recorded)".into(),
                None => "not applied (improve.auto_apply is false)".into(),
            };
            let _ = writeln!(
                s,
                "- {} `{}`: {} `.specs/prompts/{}.md` — cites runs {} — {status}",
                if p.revert { "revert" } else { "change" },
                p.id,
                p.key,
                p.prompt,
                p.runs.join(", ")
            );
        }
        s.push('\n');
    }
    if !a.suggestions.is_empty() {
        s.push_str("### Suggestions (Tier 2: never applied automatically)\n\n");
        for g in &a.suggestions {
            let _ = writeln!(
                s,
                "- `{}`: {} (runs: {})",
                g.target,
                g.text,
                g.runs.join(", ")
            );
        }
    }
    s
}
