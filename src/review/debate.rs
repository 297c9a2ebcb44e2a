//! The `debate` strategy: two anonymous debaters (A and B) review independently, then
//! cross-review each other's envelope and rebut, for at most three rounds; a fresh judge with no
//! debate memory then decides which findings are adopted.
//!
//! Why each rule exists:
//! - labels, never names ([`super::anonymize`]): a debater that knows who it argues with argues
//!   with the reputation, not the finding. The documents are quoted into every prompt, scrubbed
//!   of names like everything else, and the debaters are told not to read the configuration,
//!   the state or the review records, which name them;
//! - a counter-argument names the finding it disputes (`disputes`) and is never a finding of
//!   its own: an answer "B.F2 is wrong because …" that became a gating finding would make the
//!   debate block on its own disagreement;
//! - round 1 never ends a debate, and a later one only when *both* sides say `converged` with no
//!   `remaining_disputes`; an empty or invalid answer (retried once by [`super::calls`]) never
//!   counts as convergence: a debate must not end before the sides have read each other, nor
//!   because one side went silent;
//! - `debate-log.md` is appended after every round ([`log`]), so a debate killed in round 3
//!   still shows rounds 1 and 2;
//! - the judge sees the documents and the final positions, each with the arguments for it and
//!   against it as the debaters wrote them (who raised, who disputes), not the transcript, so
//!   its decision rests on the findings rather than on who argued longer.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::anonymize::Anonymizer;
use super::calls::{self, CallEnv, CallLog, ReviewCall};
use super::envelope::{self, Envelope};
use super::merge::{Attributed, MergedReview};
use super::strategy::{PromptVars, StrategyOutput, render};
use crate::error::Result;
use crate::prompts::Template;
use crate::types::kinds::CallRole;
use crate::types::{Finding, Role};
use ruling::{Ruling, decision_for, decision_table};

pub mod log;
pub mod ruling;

/// Debate rounds at most: independent review, cross-review, rebuttal.
pub const MAX_ROUNDS: u32 = 3;
/// The two labels.
pub const LABELS: [&str; 2] = ["A", "B"];
/// Most characters of one document quoted into a debate prompt; the rest is cut with a note.
pub const MAX_DOCUMENT_CHARS: usize = 200_000;

/// Everything a debate needs.
#[derive(Debug)]
#[allow(missing_docs)]
pub struct DebateSetup<'a> {
    pub env: &'a CallEnv<'a>,
    /// Where prompt overrides are looked up.
    pub root: &'a Path,
    /// Prompt variables (scrubbed before use).
    pub vars: PromptVars,
    /// The documents debated, as `(path shown, text)`: quoted into every debater's and the
    /// judge's prompt, scrubbed of names, between per-call markers.
    pub documents: Vec<(String, String)>,
    pub a: String,
    pub b: String,
    pub judge: String,
    /// The debate log (created fresh, then appended after every round).
    pub log_path: PathBuf,
    /// Whether the judge also writes the final spec (stand-alone `debate`).
    pub want_spec: bool,
    /// Removes names from everything put into a prompt.
    pub anonymizer: Anonymizer,
    /// First line of the log under its title (what is debated, input hash).
    pub header: String,
}

/// One debater's answer in one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// `A` or `B`.
    pub label: String,
    /// The envelope, when the answer was valid (ids namespaced `A.F1`; an entry with
    /// `disputes` is a counter-argument, not a finding).
    pub envelope: Option<Envelope>,
    /// Why the answer was not usable (after its retry).
    pub failure: Option<String>,
}

impl Side {
    fn converged(&self) -> bool {
        self.envelope
            .as_ref()
            .is_some_and(|e| e.converged && e.remaining_disputes.is_empty())
    }
}

/// One round of the debate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct DebateRound {
    pub number: u32,
    /// `independent review`, `cross-review` or `rebuttal`.
    pub stage: String,
    pub sides: Vec<Side>,
}

/// One side's reason, as it wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Reason {
    /// `A` or `B`.
    pub by: String,
    /// Its one-line claim (empty when it gave none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub gist: String,
    pub argument: String,
}

/// A finding left standing at the end of the debate, with who holds and who disputes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stance {
    /// The finding (id of its first holder).
    pub finding: Finding,
    /// Every id it had (the same finding held by both sides has two).
    pub ids: Vec<String>,
    /// Labels holding it.
    pub raised_by: Vec<String>,
    /// Labels disputing it.
    pub disputed_by: Vec<String>,
    /// The holders' arguments for it.
    #[serde(default)]
    pub arguments: Vec<Reason>,
    /// The disputers' counter-arguments.
    #[serde(default)]
    pub counters: Vec<Reason>,
}

/// How a debate ended.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct DebateOutcome {
    pub rounds: Vec<DebateRound>,
    /// Both sides converged with no dispute in a valid round.
    pub converged: bool,
    pub stances: Vec<Stance>,
    pub ruling: std::result::Result<Ruling, String>,
    /// Adopted findings as a review (for the gate), or why the debate failed.
    pub output: StrategyOutput,
}

/// What every prompt of the debate shares: the scrubbed variables and documents, and where
/// the calls run (without `files`: the documents are quoted, scrubbed, so a text-only agent is
/// not sent them a second time as they are).
struct Shared<'a> {
    vars: PromptVars,
    documents: Vec<(String, String)>,
    env: CallEnv<'a>,
}

/// Runs a debate: the debaters' rounds (each appended to the log), the outcome, the judge's
/// ruling, and the adopted findings as the review the gate reads.
pub fn run(setup: &DebateSetup, round: Option<u32>) -> Result<DebateOutcome> {
    let scrub = |s: &str| setup.anonymizer.scrub(s);
    let mut env = setup.env.clone();
    env.files.clear();
    let shared = Shared {
        vars: setup.vars.map(scrub),
        documents: setup
            .documents
            .iter()
            .map(|(name, text)| (scrub(name), scrub(text)))
            .collect(),
        env,
    };
    log::start(setup)?;
    let mut last: [Option<Envelope>; 2] = [None, None];
    let mut logs = Vec::new();
    let rounds = hold_rounds(setup, &shared, &scrub, &mut last, &mut logs)?;
    // Round 1 is two reviews that have not met: agreeing there is not a debate.
    let converged = rounds
        .last()
        .is_some_and(|r| r.number > 1 && r.sides.iter().all(Side::converged));
    let stances = stances(&last);
    let outcome = log::outcome(converged, rounds.len(), &stances);
    // Neither side answered (so neither converged either): there is nothing to judge.
    let (ruling, review) = if last.iter().all(Option::is_none) {
        let nothing = "\nNeither debater gave a valid answer; there is nothing to judge.\n";
        log::append(&setup.log_path, &(outcome + nothing))?;
        let failed = "agent_error: both debaters failed in every round";
        (
            Err("no debater gave a valid answer".into()),
            Err(failed.into()),
        )
    } else {
        log::append(&setup.log_path, &outcome)?;
        let ruling = judge(setup, &shared, &scrub, &stances, round, &mut logs)?;
        log::append(&setup.log_path, &log::ruling(&stances, &ruling, &scrub))?;
        let review = match &ruling {
            Err(reason) => Err(format!("judge failed: {reason}")),
            Ok(r) => Ok(adopted_review(r, &stances, &last, converged, &rounds)),
        };
        (ruling, review)
    };
    Ok(DebateOutcome {
        rounds,
        converged,
        stances,
        ruling,
        output: StrategyOutput { review, logs },
    })
}

/// The debaters' rounds, at most [`MAX_ROUNDS`], each appended to the log as soon as it ends;
/// they stop early only when both sides converge after having answered each other (round 2 on).
/// `last` is each side's last valid envelope.
fn hold_rounds(
    setup: &DebateSetup,
    shared: &Shared,
    scrub: &dyn Fn(&str) -> String,
    last: &mut [Option<Envelope>; 2],
    logs: &mut Vec<CallLog>,
) -> Result<Vec<DebateRound>> {
    let mut rounds = Vec::new();
    for number in 1..=MAX_ROUNDS {
        let stage = match number {
            1 => "independent review",
            2 => "cross-review",
            _ => "rebuttal",
        };
        let calls = round_calls(setup, shared, scrub, last, number, stage);
        let answers = calls::run_batch(&shared.env, &calls, &envelope::parse_answer)?;
        let sides = record_sides(answers, last, logs, scrub);
        let round = DebateRound {
            number,
            stage: stage.into(),
            sides,
        };
        log::append(&setup.log_path, &log::round(&round, scrub))?;
        let both = round.sides.iter().all(Side::converged);
        rounds.push(round);
        if both && number > 1 {
            break;
        }
    }
    Ok(rounds)
}

/// The two debaters' calls of round `number`: an independent review first, then each side
/// answers the other's last envelope (both scrubbed of names).
fn round_calls(
    setup: &DebateSetup,
    shared: &Shared,
    scrub: &dyn Fn(&str) -> String,
    last: &[Option<Envelope>; 2],
    number: u32,
    stage: &str,
) -> Vec<ReviewCall> {
    let agents = [&setup.a, &setup.b];
    (0..2)
        .map(|i| {
            let label = LABELS[i];
            let documents = quote_documents(&shared.documents);
            let prompt = if number == 1 {
                render(
                    setup.root,
                    Template::DebateReview,
                    &shared.vars,
                    &[("label", label), ("documents", &documents)],
                )
            } else {
                let own = envelope_json(last[i].as_ref(), &scrub);
                let other = envelope_json(last[1 - i].as_ref(), &scrub);
                render(
                    setup.root,
                    Template::DebateRespond,
                    &shared.vars,
                    &[
                        ("label", label),
                        ("other_label", LABELS[1 - i]),
                        ("stage", stage),
                        ("own", &own),
                        ("other", &other),
                        ("documents", &documents),
                    ],
                )
            };
            ReviewCall {
                label: Some(label.to_string()),
                ..ReviewCall::new(CallRole::Debater, agents[i], Some(number), prompt)
            }
        })
        .collect()
}

/// The documents, each between `<<<FILE-<code> path` and `FILE-<code>>>>` lines whose code is
/// drawn for this call and appears in none of them, so a document cannot end its block.
fn quote_documents(docs: &[(String, String)]) -> String {
    if docs.is_empty() {
        return "(no documents)\n".into();
    }
    let mut out = String::new();
    for (name, text) in docs {
        let whole = text.chars().count() <= MAX_DOCUMENT_CHARS;
        let mut text: String = text.chars().take(MAX_DOCUMENT_CHARS).collect();
        if !whole {
            text.push_str(&format!(
                "\n[… cut at {MAX_DOCUMENT_CHARS} characters; read the rest in the file]"
            ));
        }
        let n = crate::prompts::nonce(&[&text, name]);
        out.push_str(&format!("<<<FILE-{n} {name}\n{text}\nFILE-{n}>>>\n"));
    }
    out
}

/// Each side's answer as a [`Side`]; a valid envelope (ids namespaced, disputes pointing at
/// what the side was shown) becomes that side's latest in `last`.
fn record_sides(
    answers: Vec<calls::Answer<Envelope>>,
    last: &mut [Option<Envelope>; 2],
    logs: &mut Vec<CallLog>,
    scrub: &dyn Fn(&str) -> String,
) -> Vec<Side> {
    // Disputes refer to what each side was shown: the other's envelope before this round.
    let shown = last.clone();
    let mut sides = Vec::new();
    for (i, answer) in answers.into_iter().enumerate() {
        logs.extend(answer.logs);
        let other_ids: Vec<String> = shown[1 - i]
            .as_ref()
            .map(|e| e.findings.iter().map(|f| f.id.clone()).collect())
            .unwrap_or_default();
        let (envelope, failure) = match answer.result {
            Ok(env) => {
                let env = namespace(LABELS[i], LABELS[1 - i], env, &other_ids);
                last[i] = Some(env.clone());
                (Some(env), None)
            }
            Err(reason) => (None, Some(scrub(&reason.to_string()))),
        };
        let label = LABELS[i].into();
        sides.push(Side {
            label,
            envelope,
            failure,
        });
    }
    sides
}

/// The judge's ruling on the stances, or why there is none; no call when nothing stands and no
/// spec is wanted.
fn judge(
    setup: &DebateSetup,
    shared: &Shared,
    scrub: &dyn Fn(&str) -> String,
    stances: &[Stance],
    round: Option<u32>,
    logs: &mut Vec<CallLog>,
) -> Result<std::result::Result<Ruling, String>> {
    if stances.is_empty() && !setup.want_spec {
        return Ok(Ok(Ruling::default()));
    }
    let prompt = render(
        setup.root,
        Template::Judge,
        &shared.vars,
        &[
            ("positions", &scrub(&judge_view(stances))),
            (
                "spec_instruction",
                ruling::spec_instruction(setup.want_spec),
            ),
            ("documents", &quote_documents(&shared.documents)),
        ],
    );
    let call = ReviewCall::new(Role::Judge, &setup.judge, round, prompt);
    let want_spec = setup.want_spec;
    let parse = move |t: &str| ruling::parse_ruling(t, want_spec);
    let env = shared.env.with_follow_up(calls::FollowUp::new(
        crate::prompts::template(setup.root, Template::EnvelopeRetry),
        "the judge's decisions",
        crate::agents::text_roles::Output::Decisions,
    ));
    let answer = calls::run_one(&env, call, &parse)?;
    logs.extend(answer.logs);
    // The ruling's failure is a reason for people (it is also "no debater gave a valid
    // answer"), so the judge's failure is kept as its rendering.
    Ok(answer.result.map_err(|f| f.to_string()))
}

/// The findings the judge did not reject, most severe first, as the merged review of the
/// debate, with a note on the rounds and the decision table.
fn adopted_review(
    r: &Ruling,
    stances: &[Stance],
    last: &[Option<Envelope>; 2],
    converged: bool,
    rounds: &[DebateRound],
) -> MergedReview {
    let (answered, silent): (Vec<usize>, Vec<usize>) = (0..2).partition(|i| last[*i].is_some());
    let mut merged = MergedReview {
        strategy: "debate".into(),
        members: answered
            .iter()
            .map(|i| format!("debater:{}", LABELS[*i]))
            .collect(),
        skipped: silent
            .iter()
            .map(|i| format!("debater:{} (no valid answer in any round)", LABELS[*i]))
            .collect(),
        converged,
        ..MergedReview::default()
    };
    merged.members.push("judge".into());
    for s in stances {
        if decision_for(r, s).is_none_or(|d| d.adopted) {
            merged.findings.push(Attributed {
                finding: s.finding.clone(),
                raised_by: s.raised_by.clone(),
            });
        }
    }
    merged.findings.sort_by_key(|a| a.finding.severity);
    merged.notes.push(format!(
        "Debate: {} round(s), {}. The judge adopted {} of {} finding(s).",
        rounds.len(),
        if converged {
            "converged"
        } else {
            "not converged"
        },
        merged.findings.len(),
        stances.len()
    ));
    merged.notes.push(decision_table(stances, r));
    merged
}

/// A side's envelope as the other side is shown it: its findings and its counter-arguments
/// (`disputes` naming the finding each argues against), scrubbed of names.
fn envelope_json(env: Option<&Envelope>, scrub: &dyn Fn(&str) -> String) -> String {
    match env {
        Some(e) => {
            let view = serde_json::json!({
                "findings": e.findings.iter().map(|f| {
                    let mut v = envelope::shown(f);
                    if !f.disputes.is_empty() {
                        v["disputes"] = serde_json::json!(f.disputes);
                    }
                    v
                }).collect::<Vec<_>>(),
                "converged": e.converged,
                "remaining_disputes": e.remaining_disputes,
            });
            scrub(&serde_json::to_string_pretty(&view).unwrap_or_default())
        }
        None => "(no valid answer yet)".into(),
    }
}

/// Gives every finding a debate-wide id (`A.F1`), resolves bare dispute ids (in
/// `remaining_disputes` and in counter-arguments' `disputes`), and lists every finding a
/// counter-argument disputes in `remaining_disputes`, so that a side arguing is never converged.
fn namespace(label: &str, other: &str, mut env: Envelope, other_ids: &[String]) -> Envelope {
    let prefixed = |id: &str| id.starts_with("A.") || id.starts_with("B.");
    let resolve = |d: &str| {
        let d = d.trim().to_string();
        if prefixed(&d) {
            d
        } else if other_ids.contains(&format!("{other}.{d}")) {
            format!("{other}.{d}")
        } else {
            format!("{label}.{d}")
        }
    };
    for (n, f) in env.findings.iter_mut().enumerate() {
        if f.id.trim().is_empty() {
            f.id = format!("F{}", n + 1);
        }
        if !prefixed(&f.id) {
            f.id = format!("{label}.{}", f.id.trim());
        }
        if !f.disputes.is_empty() {
            f.disputes = resolve(&f.disputes);
        }
    }
    let mut disputes: Vec<String> = env.remaining_disputes.iter().map(|d| resolve(d)).collect();
    for f in env.findings.iter().filter(|f| !f.disputes.is_empty()) {
        if !disputes.contains(&f.disputes) {
            disputes.push(f.disputes.clone());
        }
    }
    env.remaining_disputes = disputes;
    env
}

/// The findings in the last valid envelope of each side, merged by fingerprint, each with the
/// arguments for it and the counter-arguments against it. A counter-argument is never a
/// finding: it only marks the finding it names as disputed.
fn stances(last: &[Option<Envelope>; 2]) -> Vec<Stance> {
    let mut out: Vec<Stance> = Vec::new();
    for (i, env) in last.iter().enumerate() {
        let Some(env) = env else { continue };
        for f in env.findings.iter().filter(|f| f.disputes.is_empty()) {
            let reason = Reason {
                by: LABELS[i].into(),
                gist: String::new(),
                argument: f.argument.clone(),
            };
            match out
                .iter_mut()
                .find(|s| s.finding.fingerprint.is_some() && s.finding.fingerprint == f.fingerprint)
            {
                Some(s) => {
                    if !s.ids.contains(&f.id) {
                        s.ids.push(f.id.clone());
                    }
                    if !s.raised_by.iter().any(|l| l == LABELS[i]) {
                        s.raised_by.push(LABELS[i].into());
                        s.arguments.push(reason);
                    }
                }
                None => out.push(Stance {
                    finding: f.clone(),
                    ids: vec![f.id.clone()],
                    raised_by: vec![LABELS[i].into()],
                    disputed_by: Vec::new(),
                    arguments: vec![reason],
                    counters: Vec::new(),
                }),
            }
        }
    }
    for (i, env) in last.iter().enumerate() {
        let Some(env) = env else { continue };
        let label = LABELS[i];
        for s in out.iter_mut() {
            if s.raised_by.iter().any(|l| l == label) {
                continue;
            }
            let disputed = env.remaining_disputes.iter().any(|d| s.ids.contains(d));
            if disputed && !s.disputed_by.iter().any(|l| l == label) {
                s.disputed_by.push(label.into());
            }
            for f in env.findings.iter().filter(|f| s.ids.contains(&f.disputes)) {
                s.counters.push(Reason {
                    by: label.into(),
                    gist: f.gist.clone(),
                    argument: f.argument.clone(),
                });
            }
        }
    }
    out
}

/// What the judge is shown of one stance, in reading order: the finding, who holds it with
/// their arguments (`for`) and who disputes it with their counter-arguments (`against`), as
/// written.
#[derive(Serialize)]
struct JudgeView<'a> {
    id: &'a str,
    also_known_as: &'a [String],
    requirement_id: &'a str,
    severity: crate::types::Severity,
    file: &'a str,
    section: &'a str,
    gist: &'a str,
    suggestion: &'a str,
    raised_by: &'a [String],
    #[serde(rename = "for")]
    arguments: &'a [Reason],
    disputed_by: &'a [String],
    against: &'a [Reason],
}

fn judge_view(stances: &[Stance]) -> String {
    let views: Vec<JudgeView> = stances
        .iter()
        .map(|s| JudgeView {
            id: s.ids.first().map(String::as_str).unwrap_or_default(),
            also_known_as: s.ids.get(1..).unwrap_or_default(),
            requirement_id: &s.finding.requirement_id,
            severity: s.finding.severity,
            file: &s.finding.file,
            section: &s.finding.section,
            gist: &s.finding.gist,
            suggestion: &s.finding.suggestion,
            raised_by: &s.raised_by,
            arguments: &s.arguments,
            disputed_by: &s.disputed_by,
            against: &s.counters,
        })
        .collect();
    serde_json::to_string_pretty(&views).unwrap_or_default()
}

#[cfg(test)]
mod tests;
