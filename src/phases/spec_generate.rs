//! spec_generate: the spec author writes the four documents, or revises them against the open
//! findings of the last inspection or review.
//!
//! Then the e2e_runner turns the prose `Steps` of every playwright case into structured browser
//! steps, stored in `test.steps.json` beside `test.md` — once per version of the prose: a case
//! whose stored steps were made from its current text is not converted again. The stale cases
//! of a round are converted in one call that answers one steps object per case id, so eight
//! cases cost one call and no two converters share the checkout; each answer is validated on
//! its own before it is stored, and only the unusable ones are asked again, in one more call
//! (unusable twice: the case is left without steps, which `inspect` reports, while the cases
//! that did convert are kept; an agent failure when no case converted). An answer may say that part of
//! a case cannot be expressed as steps: that is stored with its reasons and goes back to the
//! author through `inspect`, never as steps that would pass without checking it. The file is
//! then inspected and reviewed with the rest of the spec.

use super::{Call, Ctx};
use crate::agents::text_roles::Output;
use crate::agents::{Failure, TaskInfo, TaskInfoKind};
use crate::error::Result;
use crate::evidence::steps::{self, CaseSteps, StepsFile};
use crate::prompts::Template;
use crate::spec::cases::{self, Method};
use crate::types::kinds::BlockerCategory;
use crate::types::{Outcome, Phase, Role, Signal};

/// Runs spec_generate.
pub fn run(ctx: &mut Ctx) -> Result<Outcome> {
    // A case confirmed disputed again with its text unchanged since its last confirmed dispute:
    // the author had it and changed nothing, a stall of the spec loop (arbitrated before the
    // author is called again; the dispute is then marked, so the next run goes on).
    let repeats = crate::review::dispute::unchanged_repeats(&ctx.state);
    if !repeats.is_empty() {
        for i in &repeats {
            ctx.state.disputes[*i].end = crate::types::kinds::DisputeEnd::Stalled;
        }
        let round = ctx.state.rounds.spec_review.len() as u32;
        crate::events::emit(crate::events::Event::Stall {
            signal: Signal::S1,
            round,
            loop_phase: Phase::SpecReview,
        });
        return Ok(Outcome::Stall(Signal::S1));
    }
    let round = ctx.state.rounds.spec_review.len() as u32 + 1;
    if imported_first_version(ctx) {
        // The run started from an imported spec (docs/import.md): its first version is the
        // original's, so the author is not asked for one; inspect and the review judge it.
        return convert_steps(ctx, round);
    }
    let (title, body) = ctx.issue_vars();
    let mut revision = String::new();
    if !ctx.state.open_findings.is_empty() {
        revision.push_str("This is a revision. Resolve every open finding below (JSON); keep what is not affected unchanged.\n```json\n");
        revision
            .push_str(&serde_json::to_string_pretty(&ctx.state.open_findings).unwrap_or_default());
        revision.push_str("\n```\n");
    }
    if let Some(section) = &ctx.state.restructure {
        revision.push_str(&format!(
            "\nRESTRUCTURE ORDER: findings keep landing in {section} round after round. Do not patch it again: rewrite that section from scratch (new structure, not new wording), then resolve the open findings.\n"
        ));
    }
    let spec_dir = ctx.spec_rel();
    let examples = crate::spec::examples_text();
    let prompt = crate::prompts::render(
        &ctx.repo,
        Template::SpecAuthor,
        &[
            ("spec_dir", &spec_dir),
            ("examples", &examples),
            ("issue_title", &title),
            ("issue_body", &body),
            ("revision", &revision),
        ],
    );
    let agent = ctx.agent(Role::SpecAuthor);
    let call = Call {
        writes: true,
        ..Call::new(Role::SpecAuthor, &agent, round, prompt)
    };
    match ctx.call_agent(&call, Phase::SpecGenerate)? {
        Ok(_) => convert_steps(ctx, round),
        Err(_) => Ok(Outcome::AgentFailure),
    }
}

/// Whether this is the first spec_generate of a run that started from an imported spec (the
/// issue's `spec:` line): nothing has sent the spec back yet.
fn imported_first_version(ctx: &Ctx) -> bool {
    ctx.feature_dir()
        .join(crate::spec::import::MAP_FILE)
        .is_file()
        && ctx.state.open_findings.is_empty()
        && ctx.state.restructure.is_none()
        && ctx.state.rounds.spec_review.is_empty()
        && !ctx
            .state
            .phase_log
            .iter()
            .any(|e| e.phase == Phase::SpecGenerate)
}

/// Converts the prose steps of every playwright case whose stored steps are missing, stale or
/// invalid; drops entries of cases that are gone or no longer playwright cases.
fn convert_steps(ctx: &mut Ctx, round: u32) -> Result<Outcome> {
    let feature_dir = ctx.feature_dir().to_path_buf();
    let Some(test_md) = ctx.doc("test.md") else {
        return Ok(Outcome::Ok); // inspect reports the missing (or too large) document
    };
    let browser_cases: Vec<cases::Case> = cases::parse(&test_md)
        .into_iter()
        .filter(|c| c.method() == Some(Method::Playwright) && c.steps.is_some())
        .collect();
    let loaded = steps::load(&feature_dir);
    if browser_cases.is_empty() && matches!(loaded, Ok(None)) {
        return Ok(Outcome::Ok);
    }
    let original = loaded.clone().ok().flatten();
    let mut file = match loaded {
        Ok(Some(f)) => f,
        Ok(None) => StepsFile::default(),
        Err(e) => {
            crate::events::emit(crate::events::Event::Detail {
                message: format!(
                    "{} {e}; converting every browser case again",
                    crate::types::STEPS_FILE
                ),
            });
            StepsFile::default()
        }
    };
    let kept = |id: &String| browser_cases.iter().any(|c| &c.id == id);
    file.cases.retain(|id, _| kept(id));
    file.history.retain(|id, _| kept(id));
    let stale: Vec<&cases::Case> = browser_cases
        .iter()
        .filter(|case| {
            let problem = steps::needs_conversion(Some(&file), case);
            problem
                .map(|problem| {
                    let message = format!("{problem}: converting its prose steps");
                    crate::events::emit(crate::events::Event::Detail { message })
                })
                .is_some()
        })
        .collect();
    let agent = ctx.agent(Role::E2eRunner);
    let asks: Vec<(&cases::Case, String)> = stale.iter().map(|c| (*c, String::new())).collect();
    let converted = convert_batch(ctx, Phase::SpecGenerate, round, &agent, &test_md, &asks)?;
    let mut failed = Vec::new();
    for (case, answer) in stale.iter().zip(converted) {
        let conversion = match answer {
            Ok(conversion) => conversion,
            Err(failure) => {
                failed.push(format!("{} ({failure})", case.id));
                continue;
            }
        };
        // New prose starts a new line of versions: the replaced ones were made from old text.
        file.history.remove(&case.id);
        file.cases.insert(
            case.id.clone(),
            CaseSteps {
                source: steps::source_hash(case),
                converted_by: Some(agent.clone()),
                steps: conversion.steps,
                cannot_express: conversion.cannot_express,
            },
        );
    }
    // What converted is kept even when another case failed: the next attempt asks only for
    // the rest.
    if original.as_ref() != Some(&file) {
        steps::save(&feature_dir, &file)?;
    }
    Ok(conversion_outcome(&failed, stale.len()))
}

/// A converter that converted none of the cases asked of it is failing, and arbitration swaps
/// it. One that converted some has shown that it works: a case it could not convert is left
/// without (fresh) steps, never with steps that could pass without checking it, so `inspect`
/// reports it (a finding that goes back to the author, who may reword the case) and the next
/// round asks for it again.
fn conversion_outcome(failed: &[String], asked: usize) -> Outcome {
    if failed.is_empty() {
        return Outcome::Ok;
    }
    if failed.len() == asked {
        return Outcome::AgentFailure;
    }
    crate::events::emit(crate::events::Event::Warning {
        message: format!(
            "the e2e_runner converted {} of {asked} browser case(s); not converted: {}; inspect reports them and the next round asks again",
            asked - failed.len(),
            failed.join(", ")
        ),
    });
    Outcome::Ok
}

/// Converts every case of `stale` in one call: the prompt quotes them all, the answer holds one
/// steps object per case id, and each is validated on its own. Only the cases whose entry was
/// missing or unusable are asked again, in one more call told why; an answer that holds no
/// usable `cases` object at all is followed up as any read-only call's is (and recorded when it
/// stays unusable). One call at a time: no two converters ever work in the checkout at once.
/// The results come in the order of `stale`. Each case comes with the template's context:
/// empty when converting prose, what the built page held when re-converting at evaluate.
pub(crate) fn convert_batch(
    ctx: &mut Ctx,
    phase: Phase,
    round: u32,
    agent: &str,
    test_md: &str,
    stale: &[(&cases::Case, String)],
) -> Result<Vec<std::result::Result<steps::answer::Conversion, Failure>>> {
    let mut results: Vec<Option<std::result::Result<steps::answer::Conversion, _>>> =
        vec![None; stale.len()];
    let mut refused: Vec<Option<String>> = vec![None; stale.len()];
    for attempt in 0..2 {
        let asked: Vec<usize> = (0..stale.len())
            .filter(|&i| !matches!(results[i], Some(Ok(_))))
            .collect();
        if asked.is_empty() {
            break;
        }
        let ids: Vec<String> = asked.iter().map(|&i| stale[i].0.id.clone()).collect();
        let blocks: String = asked
            .iter()
            .map(|&i| case_block(stale[i].0, test_md, &stale[i].1, refused[i].as_deref()))
            .collect();
        let list = ids.join(", ");
        let prompt = crate::prompts::render(
            &ctx.repo,
            Template::E2eSteps,
            &[
                ("case_ids", &list),
                ("cases", &blocks),
                ("spec_dir", &ctx.spec_rel()),
                // What an override written for one case per call reads.
                ("case_id", &list),
                ("case_text", &blocks),
                ("context", ""),
            ],
        );
        let call = Call {
            task: Some(TaskInfo {
                id: ids.join(" "),
                kind: TaskInfoKind::Playwright,
                title: format!("browser steps of {} case(s)", ids.len()),
            }),
            ..Call::new(Role::E2eRunner, agent, round, prompt)
        };
        let follow_up = ctx.follow_up("browser steps", Output::Steps);
        let answer = ctx.read_only_call(
            &call,
            phase,
            &|text| steps::answer::cases_from_answer(text, &ids).map_err(|e| e.to_string()),
            follow_up,
        )?;
        let mut by_id = match answer {
            Ok(by_id) => by_id,
            Err(failure) => {
                for &i in &asked {
                    results[i] = Some(Err(failure.clone()));
                }
                break;
            }
        };
        for &i in &asked {
            let id = &stale[i].0.id;
            results[i] = match by_id.remove(id) {
                Some(Ok(conversion)) => Some(Ok(conversion)),
                Some(Err(e)) => {
                    let category = BlockerCategory::MalformedOutput;
                    let failure = Failure::new(category, format!("the steps of {id}: {e}"));
                    if attempt > 0 {
                        // Unusable when asked twice: the converter's `malformed_output` (the
                        // call itself answered, so the call's own record has no failure).
                        let who = (Role::E2eRunner.into(), agent, None);
                        ctx.fail(phase, who, category, &failure.detail, &[]);
                    }
                    refused[i] = Some(e.to_string());
                    Some(Err(failure))
                }
                None => continue,
            };
        }
    }
    let no_answer = || Err(Failure::new(BlockerCategory::EnvError, "no answer"));
    Ok(results
        .into_iter()
        .map(|r| r.unwrap_or_else(no_answer))
        .collect())
}

/// One case of a conversion prompt: its id, its section of test.md quoted, its context, and why
/// the answer for it was refused when it is asked again.
fn case_block(case: &cases::Case, test_md: &str, context: &str, refused: Option<&str>) -> String {
    let mut block = format!(
        "\nCase {}:\n{}\n",
        case.id,
        crate::prompts::quote("CASE", &cases::section_text(test_md, case))
    );
    if !context.trim().is_empty() {
        block.push_str(context.trim_end());
        block.push('\n');
    }
    if let Some(why) = refused {
        block.push_str(&format!(
            "Your earlier answer for {} was refused: {}. Answer it again, with valid steps or `cannot_express`.\n",
            case.id,
            why.replace('\n', " ")
        ));
    }
    block
}
