//! evaluate: the harness runs every acceptance case, builds the evidence manifest, and re-checks
//! every PASS against it. Failed cases become findings for the implementer; blocked cases go to
//! arbitration, because no implementer can fix missing configuration.

use std::fmt::Write as _;

use crate::error::Result;
use crate::evidence::manifest;
use crate::evidence::runners::{self, RunDirs};
use crate::evidence::{CaseResult, EvaluateResult, Verdict};
use crate::machine::{Outcome, Phase};
use crate::review::loops;
use crate::review::{Finding, Severity};
use crate::spec::cases;
use crate::state::{EvaluateRound, Gate};
use crate::util;

use super::Ctx;

/// Runs one acceptance round.
pub fn run(ctx: &mut Ctx) -> Result<Outcome> {
    let round = ctx.state.rounds.evaluate.len() as u32 + 1;
    // A restructure order reaches one fix task only; this round judges it.
    ctx.state.evaluate_restructure = None;
    let feature_dir = ctx.feature_dir().to_path_buf();
    let round_dir = feature_dir.join("evidence").join(round.to_string());
    if round_dir.exists() {
        // A re-run of a round that was interrupted: its partial evidence is not trustworthy.
        std::fs::remove_dir_all(&round_dir).map_err(|e| crate::Error::io(&round_dir, e))?;
    }
    let test_md = util::read_to_string(&feature_dir.join("test.md"))?;
    let all = cases::parse(&test_md);
    let dirs = RunDirs {
        repo: &ctx.repo,
        feature_dir: &feature_dir,
        round_dir: &round_dir,
    };
    let mut results: Vec<CaseResult> = Vec::new();
    for case in &all {
        let r = runners::run_case(dirs, case, &ctx.config, &ctx.redactor);
        eprintln!("    {} {} ({})", r.id, r.verdict, r.detail);
        results.push(r);
    }
    let rows =
        manifest::build(&feature_dir, &round_dir).map_err(|e| crate::Error::io(&round_dir, e))?;
    let mismatches = manifest::check(&feature_dir, &results, &rows);
    let mut findings = manifest::enforce(&mut results, &mismatches);
    for r in results.iter().filter(|r| r.verdict != Verdict::Pass) {
        if findings.iter().any(|f| f.id == r.id) {
            continue;
        }
        findings.push(Finding {
            id: r.id.clone(),
            requirement_id: r.requirement.clone(),
            severity: Severity::Critical,
            file: "test.md".into(),
            section: r.id.clone(),
            gist: format!("{} {}: {}", r.id, r.verdict, r.detail),
            argument: format!("acceptance case {} did not pass", r.id),
            suggestion: "change the implementation so that the case passes".into(),
            fingerprint: None,
            class_key: None,
        });
    }
    if results.is_empty() {
        findings.push(Finding {
            id: "T-A".into(),
            requirement_id: String::new(),
            severity: Severity::Critical,
            file: "test.md".into(),
            section: "acceptance".into(),
            gist: "test.md has no acceptance case, so nothing backs the work".into(),
            argument: String::new(),
            suggestion: String::new(),
            fingerprint: None,
            class_key: None,
        });
    }
    let findings: Vec<Finding> = crate::review::Envelope {
        findings,
        ..Default::default()
    }
    .with_fingerprints()
    .findings;
    let count = |v| results.iter().filter(|r| r.verdict == v).count() as u32;
    let (pass, fail, blocked) = (
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::Blocked),
    );
    let gate = if findings.is_empty() {
        Gate::Pass
    } else {
        Gate::Fail
    };
    let result = EvaluateResult {
        round,
        cases: results,
        findings: findings.clone(),
        manifest: rows,
        gate,
    };
    write_result(ctx, &result)?;
    ctx.state.rounds.evaluate.push(EvaluateRound {
        round,
        pass,
        fail,
        blocked,
        fingerprints: findings
            .iter()
            .filter_map(|f| f.fingerprint.clone())
            .collect(),
        class_keys: findings
            .iter()
            .filter_map(|f| f.class_key.clone())
            .collect(),
        gate,
    });
    eprintln!("    evaluate round {round}: {pass} pass, {fail} fail, {blocked} blocked → {gate}");
    if gate == Gate::Pass {
        ctx.state.open_findings.clear();
        return Ok(Outcome::Ok);
    }
    ctx.state.open_findings = findings;
    if blocked > 0 || result.cases.is_empty() {
        return Ok(Outcome::Blocked);
    }
    let fix = ctx.state.open_findings.clone();
    Ok(loops::after_failed_gate(ctx, Phase::Evaluate, round, &fix))
}

/// Path of `evaluate-<round>.json` in a feature directory.
pub fn result_path(feature_dir: &std::path::Path, round: u32) -> std::path::PathBuf {
    feature_dir.join(format!("evaluate-{round}.json"))
}

fn write_result(ctx: &Ctx, result: &EvaluateResult) -> Result<()> {
    let dir = ctx.feature_dir();
    let json = serde_json::to_string_pretty(result).unwrap_or_default();
    util::write_text(&result_path(dir, result.round), &(json + "\n"))?;
    let mut md = format!(
        "# Acceptance, round {}\n\nGate: **{}**\n\n",
        result.round, result.gate
    );
    md.push_str(&crate::report::acceptance_table(result));
    md.push('\n');
    md.push_str(&crate::report::manifest_table(&result.manifest));
    if !result.findings.is_empty() {
        md.push_str("\n## Findings\n\n");
        for f in &result.findings {
            let _ = writeln!(md, "- {} ({}): {}", f.id, f.severity.as_str(), f.gist);
        }
    }
    util::write_text(&dir.join(format!("evaluate-{}.md", result.round)), &md)
}
