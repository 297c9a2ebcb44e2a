//! evaluate: the harness runs every acceptance case, builds the evidence manifest, and re-checks
//! every PASS against it. Failed cases become findings for the implementer; blocked cases go to
//! arbitration, because no implementer can fix missing configuration.
//!
//! With `evaluate.rubric` configured, the e2e_runner also scores the round's screenshots against
//! the rubric; a weighted score below the pass mark is a finding. The rubric has its own stall
//! rule: when the score has not improved for `evaluate.rubric_plateau_rounds` rounds, the loop
//! reports `RUBRIC_PLATEAU` and arbitration throws the implementation away once (see
//! `machine::arbitrate`). Its finding therefore does not feed S1–S4, which watch the cases.

use std::collections::BTreeMap;
use std::fmt::Write as _;

mod reconvert;

use super::loops;
use super::{Call, Ctx};
use crate::agents::text_roles::Output;
use crate::config::rubric::Rubric;
use crate::error::Result;
use crate::evidence::runners::{self, RunDirs};
use crate::evidence::{CaseResult, EvaluateResult, RubricScore, manifest, steps};
use crate::prompts::Template;
use crate::spec::cases;
use crate::state::EvaluateRound;
use crate::types::kinds::Gate;
use crate::types::kinds::Verdict;
use crate::types::{Finding, Outcome, Phase, Role, Severity, Signal};
use crate::util;

/// Section name of the rubric finding (so its fingerprint is recognisable and stable).
pub const RUBRIC_SECTION: &str = "rubric";

/// Runs one acceptance round: the cases, the rubric score, the manifest check, the findings,
/// the round's record, and the outcome the loop goes on with.
pub fn run(ctx: &mut Ctx) -> Result<Outcome> {
    let round = ctx.state.rounds.evaluate.len() as u32 + 1;
    // A restructure order reaches one fix task only; this round judges it.
    ctx.state.evaluate_restructure = None;
    let feature_dir = ctx.feature_dir().to_path_buf();
    let round_dir = feature_dir.join("evidence").join(round.to_string());
    let mut results = run_cases(ctx, &feature_dir, &round_dir)?;
    let rubric = match ctx.config.evaluate.rubric.clone() {
        Some(rubric) => match score(ctx, round, &rubric, &results)? {
            Ok(score) => score,
            Err(()) => return Ok(Outcome::AgentFailure),
        },
        None => None,
    };
    let rows = manifest::build(&feature_dir, &round_dir, &ctx.redactor)
        .map_err(|e| crate::error::Error::io(&round_dir, e))?;
    let mismatches = manifest::check(&feature_dir, &results, &rows);
    let findings = round_findings(&mut results, &mismatches, rubric.as_ref());
    let gate = if findings.is_empty() {
        Gate::Pass
    } else {
        Gate::Fail
    };
    let isolation = Some(crate::config::AppConfig::isolation_of(
        ctx.config.app.as_ref(),
    ));
    let mut result = EvaluateResult {
        round,
        cases: results,
        findings,
        manifest: rows,
        gate,
        rubric,
        isolation,
    };
    // The report lists the other files' hashes, then its own row joins the manifest.
    let report = crate::report::html::write(&feature_dir, &round_dir, &result, &ctx.redactor)?;
    result.manifest.push(report);
    result.manifest.sort_by(|a, b| a.path.cmp(&b.path));
    write_result(ctx, &result)?;
    let record = evaluate_round(&result);
    let blocked = record.blocked;
    crate::events::emit(crate::events::Event::EvaluateRound {
        round,
        pass: record.pass,
        fail: record.fail,
        blocked,
        rubric: record.rubric_score,
        gate,
    });
    ctx.state.rounds.evaluate.push(record);
    let fix = result.findings;
    ctx.state.open_findings = fix.clone();
    if gate == Gate::Pass {
        return Ok(Outcome::Ok);
    }
    if blocked > 0 || result.cases.is_empty() {
        return Ok(Outcome::Blocked);
    }
    let rubric_short = result.rubric.as_ref().is_some_and(|r| !r.below.is_empty());
    if plateau(ctx, rubric_short) {
        return Ok(Outcome::Stall(Signal::RubricPlateau));
    }
    let state = &mut ctx.state;
    Ok(super::loops::after_failed_gate(
        state,
        Phase::Evaluate,
        round,
        &fix,
    ))
}

/// Stops the app an interrupted evaluate round left running (the orchestrator was killed while
/// the app served: its group is recorded in state), if the group is still that one, and clears
/// the record. Every command that drives the run calls this first (`commands::drive_and_report`,
/// before the machine runs a phase).
pub fn stop_leftover_app(ctx: &mut Ctx) -> Result<()> {
    // A round killed with its orchestrator leaves its tree too, and a concurrent review the
    // trees of its calls.
    crate::evidence::isolation::sweep();
    crate::review::calls::tree::sweep();
    let Some(stamp) = ctx.state.app_process.take() else {
        return Ok(());
    };
    let stopped = stamp.stop_leftover(std::time::Duration::from_secs(5));
    if stopped > 0 {
        crate::events::emit(crate::events::Event::Warning {
            message: format!(
                "stopped the app an interrupted evaluate round left running (process group {}, {stopped} process{})",
                stamp.pgid,
                if stopped == 1 { "" } else { "es" }
            ),
        });
    }
    ctx.save()
}

/// Runs every acceptance case of test.md into a fresh `round_dir`, printing each verdict.
fn run_cases(
    ctx: &mut Ctx,
    feature_dir: &std::path::Path,
    round_dir: &std::path::Path,
) -> Result<Vec<CaseResult>> {
    // Created fresh by the orchestrator: a re-run of an interrupted round must not trust its
    // partial evidence, and whatever an agent planted there (links, FIFOs) is removed unfollowed.
    crate::fsx::fresh_dir(round_dir)?;
    let test_md =
        util::read_to_string_max(&feature_dir.join("test.md"), crate::fsx::Limit::SpecDoc)?;
    let all = cases::parse(&test_md);
    let steps_file = steps::load(feature_dir).map_err(|e| e.0);
    let repo = ctx.repo.clone();
    let dirs = RunDirs {
        repo: &repo,
        feature_dir,
        round_dir,
    };
    let steps = steps_file
        .as_ref()
        .map(Option::as_ref)
        .map_err(Clone::clone);
    let mut results = run_all(ctx, dirs, &all, steps, |r| r.detail.clone());
    let round = ctx.state.rounds.evaluate.len() as u32 + 1;
    reconvert::again(ctx, round, dirs, &all, &test_md, &mut results)?;
    Ok(results)
}

/// Runs `cases` into the round's `dirs` (`steps`: the browser steps, or why they cannot be
/// read), each verdict announced with its `detail`, the app's process group recorded and saved
/// while the app runs (so a killed round's app can be stopped, [`stop_leftover_app`]).
fn run_all(
    ctx: &mut Ctx,
    dirs: RunDirs,
    cases: &[cases::Case],
    steps: std::result::Result<Option<&steps::StepsFile>, String>,
    detail: impl Fn(&CaseResult) -> String,
) -> Vec<CaseResult> {
    let on_result = |r: &CaseResult| {
        let (case, verdict, detail) = (r.id.clone(), r.verdict, detail(r));
        crate::events::emit(crate::events::Event::CaseResult {
            case,
            verdict,
            detail,
        })
    };
    runners::run_all(
        dirs,
        cases,
        &ctx.config,
        steps,
        &ctx.redactor,
        on_result,
        &mut |stamp| {
            ctx.state.app_process = stamp;
            ctx.store.save(&mut ctx.state).map_err(|e| e.to_string())
        },
    )
}

/// The round's findings, fingerprinted: manifest mismatches, every case that did not pass, an
/// empty test.md, and a rubric score below its pass mark.
fn round_findings(
    results: &mut [CaseResult],
    mismatches: &[manifest::Mismatch],
    rubric: Option<&RubricScore>,
) -> Vec<Finding> {
    let mut findings = manifest::enforce(results, mismatches);
    for r in results.iter().filter(|r| r.verdict != Verdict::Pass) {
        if findings.iter().any(|f| f.id == r.id) {
            continue;
        }
        findings.push(case_finding(r));
    }
    if results.is_empty() {
        findings.push(Finding {
            id: "T-A".into(),
            file: "test.md".into(),
            section: "acceptance".into(),
            gist: "test.md has no acceptance case, so nothing backs the work".into(),
            ..Finding::new(Severity::Critical)
        });
    }
    if let Some(score) = rubric
        && !score.passed()
    {
        findings.push(rubric_finding(score));
    }
    crate::review::envelope::Envelope {
        findings,
        ..Default::default()
    }
    .with_fingerprints()
    .findings
}

/// The finding for an acceptance case that did not pass: critical, fixed in the
/// implementation, or in the configuration when the case was blocked.
fn case_finding(r: &CaseResult) -> Finding {
    let mut argument = format!("acceptance case {} did not pass: {}", r.id, r.detail);
    if let Some(notes) = &r.notes {
        argument.push('\n');
        argument.push_str(notes);
    }
    Finding {
        id: r.id.clone(),
        requirement_id: r.requirement.clone(),
        file: "test.md".into(),
        section: r.id.clone(),
        gist: format!("{} {}: {}", r.id, r.verdict, r.detail),
        argument,
        suggestion: match r.verdict {
            Verdict::Blocked => "fix the configuration or environment named above".into(),
            _ => "change the implementation so that the case passes".into(),
        },
        ..Finding::new(Severity::Critical)
    }
}

/// The round as the state records it; the rubric finding stays out of the fingerprints that
/// S1–S4 watch.
fn evaluate_round(result: &EvaluateResult) -> EvaluateRound {
    let count = |v| result.cases.iter().filter(|r| r.verdict == v).count() as u32;
    let findings = &result.findings;
    EvaluateRound {
        round: result.round,
        pass: count(Verdict::Pass),
        fail: count(Verdict::Fail),
        blocked: count(Verdict::Blocked),
        fingerprints: findings
            .iter()
            .filter(|f| f.section != RUBRIC_SECTION)
            .filter_map(|f| f.fingerprint.clone())
            .collect(),
        class_keys: findings
            .iter()
            .filter_map(|f| f.class_key.clone())
            .collect(),
        gate: result.gate,
        rubric_score: result.rubric.as_ref().map(|r| r.weighted),
    }
}

/// The finding of a rubric score that did not pass: the weighted mean below the pass mark,
/// or criteria below their own thresholds, with what the scorer cited for the low ones.
fn rubric_finding(score: &RubricScore) -> Finding {
    let scores = score
        .scores
        .iter()
        .map(|(k, v)| format!("{k} {v:.1}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut gist = if score.weighted < score.pass {
        format!(
            "the screenshots score {:.1} against the rubric, below the pass mark {:.1}",
            score.weighted, score.pass
        )
    } else {
        format!(
            "the screenshots score {:.1} against the rubric, but a criterion is below its threshold",
            score.weighted
        )
    };
    for (k, pass) in &score.below {
        let v = score.scores.get(k).copied().unwrap_or(0.0);
        gist.push_str(&format!("; {k} {v:.1} < {pass:.1}"));
    }
    let mut argument = format!(
        "{} scored {} ({scores}); screenshots: {}",
        score.scored_by,
        score.weighted,
        score.screenshots.join(", ")
    );
    for (k, seen) in &score.evidence {
        if score.scores.get(k).is_some_and(|v| *v < LOW_SCORE) || score.below.contains_key(k) {
            argument.push_str(&format!("\n{k}: {seen}"));
        }
    }
    Finding {
        id: "RUBRIC".into(),
        file: "evidence".into(),
        section: RUBRIC_SECTION.into(),
        gist,
        argument,
        suggestion: "improve the criteria with the lowest scores".into(),
        ..Finding::new(Severity::Improvement)
    }
}

/// Whether the rubric score is below the pass mark (or, `short`, a criterion is below its own
/// threshold, so the mark alone does not pass it) and has not improved on the best earlier
/// score of the window for the last `rubric_plateau_rounds` rounds.
fn plateau(ctx: &Ctx, short: bool) -> bool {
    let Some(rubric) = &ctx.config.evaluate.rubric else {
        return false;
    };
    let k = ctx.config.evaluate.rubric_plateau_rounds as usize;
    let start = loops::window_start(&ctx.state, Phase::Evaluate);
    let scores: Vec<f64> = ctx
        .state
        .rounds
        .evaluate
        .iter()
        .filter(|r| r.round > start)
        .filter_map(|r| r.rubric_score)
        .collect();
    let pass = if short { f64::INFINITY } else { rubric.pass };
    plateaued(&scores, k, pass)
}

/// The plateau rule over a window's scores (pure, for tests).
pub fn plateaued(scores: &[f64], k: usize, pass: f64) -> bool {
    let n = scores.len();
    if k == 0 || n < k + 1 || scores[n - 1] >= pass {
        return false;
    }
    let best_before = scores[..n - k]
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let best_recent = scores[n - k..]
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    best_recent <= best_before
}

/// Asks the e2e_runner to score the round's screenshots. `Ok(None)`: nothing to score;
/// `Err(())`: the agent failed twice (recorded), which the machine hands to arbitration.
fn score(
    ctx: &mut Ctx,
    round: u32,
    rubric: &Rubric,
    results: &[CaseResult],
) -> Result<std::result::Result<Option<RubricScore>, ()>> {
    let spec_rel = ctx.spec_rel();
    let screenshots: Vec<String> = results
        .iter()
        .flat_map(|r| r.evidence.iter())
        .filter(|e| e.ends_with(".png"))
        .cloned()
        .collect();
    if screenshots.is_empty() {
        crate::events::emit(crate::events::Event::Detail {
            message: "rubric: no screenshot in this round, nothing to score".into(),
        });
        return Ok(Ok(None));
    }
    let repo_paths: Vec<String> = screenshots
        .iter()
        .map(|s| format!("{spec_rel}/{s}"))
        .collect();
    let criteria = criteria_lines(rubric);
    let cases = case_lines(&ctx.doc("test.md").unwrap_or_default());
    let (title, body) = ctx.issue_vars();
    // The pass mark and the weights stay out of the prompt: a scorer told where the bar is
    // scores to it.
    let base_prompt = crate::prompts::render(
        &ctx.repo,
        Template::E2eRubric,
        &[
            ("spec_dir", &spec_rel),
            ("criteria", &criteria),
            ("cases", &cases),
            ("screenshots", &repo_paths.join("\n")),
            ("issue_title", &title),
            ("issue_body", &body),
        ],
    );
    let agent = ctx.agent(Role::E2eRunner);
    let call = Call::new(Role::E2eRunner, &agent, round, base_prompt);
    let follow_up = ctx.follow_up("rubric scores", Output::Scores);
    let scored = ctx.read_only_call(
        &call,
        Phase::Evaluate,
        &|text| parse_scores(text, rubric),
        follow_up,
    )?;
    let Ok(scores) = scored else {
        return Ok(Err(()));
    };
    let (scores, evidence) = scores;
    let weighted = rubric.weighted(&scores);
    let below = rubric
        .below_threshold(&scores)
        .into_iter()
        .map(|(k, _, pass)| (k, pass))
        .collect();
    crate::events::emit(crate::events::Event::RubricScored {
        agent: agent.clone().into(),
        score: weighted,
        pass_mark: rubric.pass,
    });
    Ok(Ok(Some(RubricScore {
        scores,
        weighted,
        pass: rubric.pass,
        scored_by: agent,
        screenshots,
        evidence,
        below,
    })))
}

/// Below this score a criterion's `evidence` must say what the scorer saw.
pub const LOW_SCORE: f64 = 5.0;

/// Scores (criterion → 0–10) and what the scorer cited for each.
pub type Scores = (BTreeMap<String, f64>, BTreeMap<String, String>);

/// Reads `{"scores": {"criterion": {"score": 0–10, "evidence": "…"}, …}}` from an answer (a
/// bare number is read as a score without evidence); every configured criterion must be
/// scored, and a score below [`LOW_SCORE`] must cite what was seen.
pub fn parse_scores(text: &str, rubric: &Rubric) -> std::result::Result<Scores, String> {
    let candidate = match text.find("```json") {
        Some(i) => {
            let rest = &text[i + "```json".len()..];
            rest.find("```").map(|e| &rest[..e]).unwrap_or(rest)
        }
        None => match (text.find('{'), text.rfind('}')) {
            (Some(a), Some(b)) if b > a => &text[a..=b],
            _ => return Err("no JSON object in the answer".into()),
        },
    };
    let value: serde_json::Value =
        serde_json::from_str(candidate.trim()).map_err(|e| format!("invalid JSON: {e}"))?;
    let scores = value
        .get("scores")
        .and_then(|s| s.as_object())
        .ok_or("the object has no `scores` map")?;
    let mut out = BTreeMap::new();
    let mut evidence = BTreeMap::new();
    for name in rubric.criteria.keys() {
        let entry = scores.get(name);
        let v = entry
            .and_then(|e| e.get("score").unwrap_or(e).as_f64())
            .ok_or_else(|| format!("criterion `{name}` has no numeric score"))?;
        if !(0.0..=10.0).contains(&v) {
            return Err(format!("criterion `{name}` scored {v}, outside 0–10"));
        }
        let cited = entry
            .and_then(|e| e.get("evidence"))
            .and_then(serde_json::Value::as_str)
            .map(str::trim)
            .unwrap_or_default();
        out.insert(name.clone(), v);
        if !cited.is_empty() {
            evidence.insert(name.clone(), cited.chars().take(2_000).collect::<String>());
        }
    }
    // Scores are checked first, so a score out of range is named before a missing citation.
    if let Some((name, v)) = out
        .iter()
        .find(|(k, v)| **v < LOW_SCORE && !evidence.contains_key(*k))
    {
        return Err(format!(
            "criterion `{name}` scored {v} without `evidence`: a score below {LOW_SCORE} must cite what was seen (screenshot, element, what is wrong)"
        ));
    }
    Ok((out, evidence))
}

/// The criteria as the scorer reads them: name and definition, no weight and no threshold.
fn criteria_lines(rubric: &Rubric) -> String {
    rubric
        .criteria
        .keys()
        .map(|k| {
            format!(
                "- criterion `{k}`: {}",
                rubric.definition(k).unwrap_or("(no definition)")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The acceptance cases of `test_md` for the scorer: id, title, how it is verified and what
/// it expects, one line each.
fn case_lines(test_md: &str) -> String {
    let lines: Vec<String> = crate::spec::cases::parse(test_md)
        .into_iter()
        .map(|c| {
            let mut line = format!("- {}: {}", c.id, c.title);
            if let Some(v) = &c.verify {
                line.push_str(&format!(" ({v})"));
            }
            if let Some(e) = &c.expected {
                line.push_str(&format!("; expected: {}", e.replace('\n', " ")));
            }
            line
        })
        .collect();
    if lines.is_empty() {
        "(test.md has no acceptance case)".into()
    } else {
        lines.join("\n")
    }
}

fn write_result(ctx: &Ctx, result: &EvaluateResult) -> Result<()> {
    let dir = ctx.feature_dir();
    let json = serde_json::to_string_pretty(result).unwrap_or_default();
    let path = crate::types::evaluate_result_path(dir, result.round);
    util::write_text(&path, &(json + "\n"))?;
    let mut md = format!(
        "# Acceptance, round {}\n\nGate: **{}**\n\n",
        result.round, result.gate
    );
    if let Some(isolation) = result.isolation {
        let _ = writeln!(md, "{}\n", isolation.describe());
    }
    md.push_str(&crate::report::links::acceptance_table(result, None));
    if let Some(r) = &result.rubric {
        let _ = writeln!(
            md,
            "\nRubric score **{:.2}** (pass mark {:.1}), scored by {}.",
            r.weighted, r.pass, r.scored_by
        );
    }
    md.push_str(&reconversions_md(result));
    md.push('\n');
    md.push_str(&crate::report::manifest_table(&result.manifest));
    if !result.findings.is_empty() {
        md.push_str("\n## Findings\n\n");
        for f in &result.findings {
            let _ = writeln!(md, "- {} ({}): {}", f.id, f.severity.as_str(), f.gist);
            for line in f.argument.lines().skip(1).take(25) {
                let _ = writeln!(md, "  > {line}");
            }
        }
    }
    util::write_text(&dir.join(format!("evaluate-{}.md", result.round)), &md)
}

/// The cases converted again in this round, for `evaluate-<round>.md`: which version matched
/// nothing where, and how the new one ended.
fn reconversions_md(result: &EvaluateResult) -> String {
    let mut md = String::new();
    for c in &result.cases {
        let Some(r) = &c.reconversion else { continue };
        if md.is_empty() {
            md.push_str("\n## Steps converted again against the built app\n\n");
        }
        let _ = writeln!(
            md,
            "- {}: version {} matched nothing at step {} (`{}`); {} converted it again: {}",
            c.id,
            r.from_version,
            r.no_match_step,
            r.selector,
            r.converted_by,
            match &r.problem {
                Some(p) => p.clone(),
                None => format!("version {} ran, {}", r.from_version + 1, c.verdict),
            }
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plateau_needs_k_rounds_without_beating_the_best_before() {
        assert!(!plateaued(&[5.0], 1, 7.0));
        assert!(plateaued(&[5.0, 5.0], 1, 7.0));
        assert!(!plateaued(&[5.0, 6.0], 1, 7.0));
        assert!(!plateaued(&[5.0, 4.0, 6.0], 3, 7.0));
        assert!(plateaued(&[6.0, 5.0, 6.0, 5.5], 3, 7.0));
        assert!(!plateaued(&[6.0, 5.0, 6.5, 5.5], 3, 7.0));
        assert!(
            !plateaued(&[5.0, 8.0], 1, 7.0),
            "a passing score never plateaus"
        );
    }

    #[test]
    fn scores_must_cover_every_criterion_within_range() {
        let rubric = two_criteria();
        let (ok, _) = parse_scores(
            "Scores:\n```json\n{\"scores\": {\"design\": 8, \"craft\": 6.5}}\n```",
            &rubric,
        )
        .unwrap();
        assert_eq!(ok["craft"], 6.5);
        assert!(
            parse_scores("{\"scores\": {\"design\": 8}}", &rubric)
                .unwrap_err()
                .contains("craft")
        );
        assert!(
            parse_scores("{\"scores\": {\"design\": 11, \"craft\": 1}}", &rubric)
                .unwrap_err()
                .contains("outside")
        );
        assert!(parse_scores("nothing", &rubric).is_err());
    }

    fn two_criteria() -> Rubric {
        serde_json::from_value(serde_json::json!({
            "criteria": {"design": 3, "craft": {"weight": 1, "pass": 6}}, "pass": 7.0
        }))
        .unwrap()
    }

    /// A low score must say what was seen, in the object form or not at all; a cited one is
    /// kept with its evidence.
    #[test]
    fn a_low_score_without_evidence_is_refused() {
        let rubric = two_criteria();
        let err = parse_scores("{\"scores\": {\"design\": 3, \"craft\": 8}}", &rubric).unwrap_err();
        assert!(err.contains("design") && err.contains("evidence"), "{err}");
        let blank = r#"{"scores": {"design": {"score": 4.5, "evidence": "  "}, "craft": 8}}"#;
        assert!(parse_scores(blank, &rubric).is_err());
        let cited = r#"{"scores": {"design": {"score": 3, "evidence": "a.png: the table overflows"}, "craft": {"score": 5}}}"#;
        let (scores, evidence) = parse_scores(cited, &rubric).unwrap();
        assert_eq!(scores["design"], 3.0);
        assert_eq!(evidence["design"], "a.png: the table overflows");
        assert!(!evidence.contains_key("craft"));
    }

    /// The template's example is an answer the real parser reads, and the scorer is shown the
    /// definitions and the cases but neither the pass mark nor a criterion's threshold.
    #[test]
    fn the_rubric_template_example_parses_and_the_prompt_hides_the_pass_mark() {
        let text = Template::E2eRubric.builtin();
        let start = text.find("```json\n").unwrap() + "```json\n".len();
        let end = start + text[start..].find("```").unwrap();
        let (scores, evidence) = parse_scores(&text[start..end], &two_criteria()).unwrap();
        assert_eq!(scores["design"], 4.0);
        assert!(evidence["design"].contains("light.png"));
        assert!(!text.contains("{{pass}}") && !text.contains("weighted mean"));
        let criteria = criteria_lines(&two_criteria());
        assert!(criteria.contains("- criterion `craft`: the execution is finished"));
        assert!(!criteria.contains("weight") && !criteria.contains('6') && !criteria.contains('7'));
        let cases = case_lines(
            "## T-A01: [REQ-001] The row is gone\n- Steps: click Delete\n- Expected: the row disappears\n- Verify: playwright\n",
        );
        assert_eq!(
            cases,
            "- T-A01: The row is gone (playwright); expected: the row disappears"
        );
    }

    /// A weighted mean above the pass mark does not pass a criterion below its own threshold.
    #[test]
    fn a_criterion_below_its_threshold_fails_the_round_whatever_the_mean() {
        let rubric = two_criteria();
        let scores: BTreeMap<String, f64> =
            [("design".to_string(), 9.0), ("craft".to_string(), 5.0)].into();
        assert!(rubric.weighted(&scores) >= rubric.pass);
        let score = RubricScore {
            weighted: rubric.weighted(&scores),
            pass: rubric.pass,
            below: rubric
                .below_threshold(&scores)
                .into_iter()
                .map(|(k, _, p)| (k, p))
                .collect(),
            scores,
            scored_by: "alpha".into(),
            screenshots: vec![],
            evidence: [("craft".to_string(), "a.png: clipped label".to_string())].into(),
        };
        assert!(!score.passed());
        let findings = round_findings(&mut [], &[], Some(&score));
        let f = findings
            .iter()
            .find(|f| f.section == RUBRIC_SECTION)
            .unwrap();
        assert!(f.gist.contains("craft 5.0 < 6.0"), "{}", f.gist);
        assert!(
            f.argument.contains("craft: a.png: clipped label"),
            "{}",
            f.argument
        );
    }
}
