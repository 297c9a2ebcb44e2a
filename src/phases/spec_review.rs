//! spec_review: the reviewer attacks the spec; its envelope becomes a round in state, fix-required
//! findings go back to the author, and stall signals end a loop that has stopped progressing.

use std::fmt::Write as _;

use crate::config::Role;
use crate::error::Result;
use crate::machine::{Outcome, Phase};
use crate::review::stall::{self, RoundView};
use crate::review::{Envelope, Severity, Signal};
use crate::state::{Gate, ReviewRound};
use crate::util;

use super::{Call, Ctx};

/// Runs one spec review round.
pub fn run(ctx: &mut Ctx) -> Result<Outcome> {
    let round = ctx.state.rounds.spec_review.len() as u32 + 1;
    let reviewer = ctx.agent(Role::SpecReviewer);
    let (title, body) = ctx.issue_vars();
    let spec_dir = ctx.spec_rel();
    let prompt = crate::prompts::render(
        &ctx.repo,
        "spec_reviewer",
        &[
            ("spec_dir", &spec_dir),
            ("issue_title", &title),
            ("issue_body", &body),
        ],
    );
    let call = Call {
        role: Role::SpecReviewer.as_str(),
        agent: &reviewer,
        writes: false,
        round: Some(round),
        task: None,
        prompt,
    };
    let envelope = match ctx.review_call(&call, Phase::SpecReview)? {
        Ok(env) => env,
        Err(reason) => {
            // A failed round is recorded as failed: never converged, never a pass.
            ctx.state.rounds.spec_review.push(ReviewRound {
                round,
                reviewer: reviewer.clone(),
                critical: 0,
                improvement: 0,
                minor: 0,
                fix_required: 0,
                fingerprints: Vec::new(),
                class_keys: Vec::new(),
                gate: Gate::Fail,
                failure: Some(reason),
            });
            return Ok(Outcome::AgentFailure);
        }
    };
    write_review(ctx, round, &reviewer, &envelope)?;
    let fix: Vec<_> = envelope
        .findings
        .iter()
        .filter(|f| f.severity.fix_required())
        .cloned()
        .collect();
    let gate = if fix.is_empty() {
        Gate::Pass
    } else {
        Gate::Fail
    };
    ctx.state.rounds.spec_review.push(ReviewRound {
        round,
        reviewer: reviewer.clone(),
        critical: envelope.count(Severity::Critical),
        improvement: envelope.count(Severity::Improvement),
        minor: envelope.count(Severity::Minor),
        fix_required: envelope.fix_required(),
        fingerprints: fix.iter().filter_map(|f| f.fingerprint.clone()).collect(),
        class_keys: fix.iter().filter_map(|f| f.class_key.clone()).collect(),
        gate,
        failure: None,
    });
    eprintln!(
        "    review round {round} by {reviewer}: {} fix-required → {gate}",
        fix.len()
    );
    if gate == Gate::Pass {
        ctx.state.open_findings.clear();
        ctx.state.restructure = None;
        return Ok(Outcome::Ok);
    }
    ctx.state.open_findings = fix.clone();
    match stall::detect(&window(ctx)) {
        Some(Signal::S4) if ctx.state.restructure.is_none() => {
            // S4's first firing: order a restructure of the section instead of another patch.
            let section = fix.first().map(|f| f.section.clone()).unwrap_or_default();
            ctx.state.restructure = Some(section.clone());
            ctx.state.arbitrations.push(crate::state::Arbitration {
                phase: Phase::SpecReview,
                signal: "S4".into(),
                decision: "restructure".into(),
                from: None,
                to: None,
                note: format!(
                    "findings keep landing in `{section}`: author ordered to restructure it"
                ),
                ts: util::now(),
                after_round: round,
            });
            Ok(Outcome::SendBack)
        }
        Some(signal) => Ok(Outcome::Stall(signal)),
        None => Ok(Outcome::SendBack),
    }
}

/// The spec_review rounds since the last arbitration that restarted the window.
fn window(ctx: &Ctx) -> Vec<RoundView> {
    let start = ctx
        .state
        .arbitrations
        .iter()
        .filter(|a| a.phase == Phase::SpecReview && a.decision != "restructure")
        .map(|a| a.after_round)
        .max()
        .unwrap_or(0);
    ctx.state
        .rounds
        .spec_review
        .iter()
        .filter(|r| r.round > start && r.failure.is_none())
        .map(|r| RoundView {
            fingerprints: r.fingerprints.iter().cloned().collect(),
            class_keys: r.class_keys.iter().cloned().collect(),
            count: r.fix_required,
        })
        .collect()
}

/// Writes `reviews/spec-review-<round>.json` and `.md`.
fn write_review(ctx: &Ctx, round: u32, reviewer: &str, env: &Envelope) -> Result<()> {
    let dir = ctx.feature_dir().join("reviews");
    let json = serde_json::to_string_pretty(env).unwrap_or_default();
    util::write_text(
        &dir.join(format!("spec-review-{round}.json")),
        &(json + "\n"),
    )?;
    let mut md = format!("# Spec review, round {round}\n\nReviewer: {reviewer}\n\n");
    if env.findings.is_empty() {
        md.push_str("No findings.\n");
    } else {
        md.push_str("| Severity | Requirement | File | Section | Gist | Fingerprint |\n|---|---|---|---|---|---|\n");
        for f in &env.findings {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | `{}` |",
                f.severity.as_str(),
                f.requirement_id,
                f.file,
                f.section.replace('|', "\\|"),
                f.gist.replace('|', "\\|"),
                f.fingerprint
                    .as_deref()
                    .map(|s| &s[..12.min(s.len())])
                    .unwrap_or("")
            );
        }
        for f in &env.findings {
            let _ = writeln!(
                md,
                "\n## {} ({})\n\n{}\n\nSuggestion: {}",
                f.id,
                f.severity.as_str(),
                f.argument,
                f.suggestion
            );
        }
    }
    util::write_text(&dir.join(format!("spec-review-{round}.md")), &md)
}
