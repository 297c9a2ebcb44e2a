//! The `debate` strategy: two anonymous debaters (A and B) review independently, then
//! cross-review each other's envelope and rebut, for at most three rounds; a fresh judge with no
//! debate memory then decides which findings are adopted.
//!
//! Why each rule exists:
//! - labels, never names ([`super::anonymize`]): a debater that knows who it argues with argues
//!   with the reputation, not the finding;
//! - early stop only when *both* sides say `converged` with no `remaining_disputes`, and an
//!   empty or invalid answer (retried once by [`super::calls`]) never counts as convergence: a
//!   debate must not end because one side went silent;
//! - `debate-log.md` is appended after every round, so a debate killed in round 3 still shows
//!   rounds 1 and 2;
//! - the judge sees the spec and the final positions (who raised, who disputes), not the
//!   transcript, so its decision rests on the findings rather than on who argued longer.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::anonymize::Anonymizer;
use super::calls::{self, CallEnv, CallLog, ReviewCall};
use super::envelope::{self, Envelope, json_candidate};
use super::merge::{Attributed, MergedReview};
use super::strategy::{PromptVars, StrategyOutput, render};
use crate::error::{Error, Result};
use crate::prompts::Template;
use crate::types::kinds::CallRole;
use crate::types::{Finding, Role};

/// Debate rounds at most: independent review, cross-review, rebuttal.
pub const MAX_ROUNDS: u32 = 3;
/// The two labels.
pub const LABELS: [&str; 2] = ["A", "B"];

/// Everything a debate needs.
#[derive(Debug)]
pub struct DebateSetup<'a> {
    /// Where the calls run.
    pub env: &'a CallEnv<'a>,
    /// Where prompt overrides are looked up.
    pub root: &'a Path,
    /// Prompt variables (scrubbed before use).
    pub vars: PromptVars,
    /// Agent playing A.
    pub a: String,
    /// Agent playing B.
    pub b: String,
    /// Agent playing the judge.
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
    /// The envelope, when the answer was valid (ids namespaced `A.F1`).
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
pub struct DebateRound {
    /// 1, 2 or 3.
    pub number: u32,
    /// `independent review`, `cross-review` or `rebuttal`.
    pub stage: String,
    /// A then B.
    pub sides: Vec<Side>,
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
}

/// The judge's decision on one finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Finding id (`A.F1`).
    pub id: String,
    /// Adopted (true) or rejected.
    pub adopted: bool,
    /// Why.
    pub reason: String,
}

/// The judge's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ruling {
    /// One decision per finding.
    pub decisions: Vec<Decision>,
    /// The final spec (stand-alone debate only).
    pub spec: Option<String>,
}

/// How a debate ended.
#[derive(Debug, Clone)]
pub struct DebateOutcome {
    /// Every round held.
    pub rounds: Vec<DebateRound>,
    /// Both sides converged with no dispute in a valid round.
    pub converged: bool,
    /// The findings left standing.
    pub stances: Vec<Stance>,
    /// The judge's ruling, or why there is none.
    pub ruling: std::result::Result<Ruling, String>,
    /// Adopted findings as a review (for the gate), or why the debate failed.
    pub output: StrategyOutput,
}

/// Runs a debate: the debaters' rounds (each appended to the log), the outcome, the judge's
/// ruling, and the adopted findings as the review the gate reads.
pub fn run(setup: &DebateSetup, round: Option<u32>) -> Result<DebateOutcome> {
    let scrub = |s: &str| setup.anonymizer.scrub(s);
    let vars = setup.vars.map(scrub);
    start_log(setup)?;
    let Held {
        rounds,
        last,
        mut logs,
        converged,
    } = hold_rounds(setup, &vars, &scrub)?;
    let stances = stances(&last);
    let mut outcome_text = outcome_section(converged, rounds.len(), &stances);
    let members: Vec<String> = (0..2)
        .filter(|i| last[*i].is_some())
        .map(|i| format!("debater:{}", LABELS[i]))
        .collect();
    let skipped: Vec<String> = (0..2)
        .filter(|i| last[*i].is_none())
        .map(|i| format!("debater:{} (no valid answer in any round)", LABELS[i]))
        .collect();
    if last.iter().all(Option::is_none) {
        outcome_text
            .push_str("\nNeither debater gave a valid answer; there is nothing to judge.\n");
        append_log(&setup.log_path, &outcome_text)?;
        return Ok(DebateOutcome {
            rounds,
            converged: false,
            stances,
            ruling: Err("no debater gave a valid answer".into()),
            output: StrategyOutput {
                review: Err("agent_error: both debaters failed in every round".into()),
                logs,
            },
        });
    }
    append_log(&setup.log_path, &outcome_text)?;

    let ruling = judge(setup, &vars, &scrub, &stances, round, &mut logs)?;
    append_log(&setup.log_path, &render_ruling(&stances, &ruling, &scrub))?;

    let review = match &ruling {
        Err(reason) => Err(format!("judge failed: {reason}")),
        Ok(r) => Ok(adopted_review(
            r, &stances, members, skipped, converged, &rounds,
        )),
    };
    Ok(DebateOutcome {
        rounds,
        converged,
        stances,
        ruling,
        output: StrategyOutput { review, logs },
    })
}

/// What the debaters' rounds left: every round, each side's last valid envelope, the call logs,
/// and whether both sides converged.
struct Held {
    rounds: Vec<DebateRound>,
    last: [Option<Envelope>; 2],
    logs: Vec<CallLog>,
    converged: bool,
}

/// The debaters' rounds, at most [`MAX_ROUNDS`], each appended to the log as soon as it ends;
/// they stop early only when both sides converge.
fn hold_rounds(
    setup: &DebateSetup,
    vars: &PromptVars,
    scrub: &dyn Fn(&str) -> String,
) -> Result<Held> {
    let mut last: [Option<Envelope>; 2] = [None, None];
    let mut rounds = Vec::new();
    let mut logs: Vec<CallLog> = Vec::new();
    let mut converged = false;
    for number in 1..=MAX_ROUNDS {
        let stage = match number {
            1 => "independent review",
            2 => "cross-review",
            _ => "rebuttal",
        };
        let calls = round_calls(setup, vars, scrub, &last, number, stage);
        let answers = calls::run_batch(setup.env, &calls, &envelope::parse_answer)?;
        let sides = record_sides(answers, &mut last, &mut logs, scrub);
        let round_record = DebateRound {
            number,
            stage: stage.into(),
            sides,
        };
        append_log(&setup.log_path, &render_round(&round_record))?;
        let both = round_record.sides.iter().all(Side::converged);
        rounds.push(round_record);
        if both {
            converged = true;
            break;
        }
    }
    Ok(Held {
        rounds,
        last,
        logs,
        converged,
    })
}

/// The two debaters' calls of round `number`: an independent review first, then each side
/// answers the other's last envelope (both scrubbed of names).
fn round_calls(
    setup: &DebateSetup,
    vars: &PromptVars,
    scrub: &dyn Fn(&str) -> String,
    last: &[Option<Envelope>; 2],
    number: u32,
    stage: &str,
) -> Vec<ReviewCall> {
    let agents = [setup.a.clone(), setup.b.clone()];
    (0..2)
        .map(|i| {
            let label = LABELS[i];
            let prompt = if number == 1 {
                render(
                    setup.root,
                    Template::DebateReview,
                    vars,
                    &[("label", label)],
                )
            } else {
                let own = envelope_json(last[i].as_ref(), &scrub);
                let other = envelope_json(last[1 - i].as_ref(), &scrub);
                render(
                    setup.root,
                    Template::DebateRespond,
                    vars,
                    &[
                        ("label", label),
                        ("other_label", LABELS[1 - i]),
                        ("stage", stage),
                        ("own", &own),
                        ("other", &other),
                    ],
                )
            };
            ReviewCall {
                role: CallRole::Debater,
                agent: agents[i].clone(),
                label: Some(label.to_string()),
                round: Some(number),
                task: None,
                prompt,
            }
        })
        .collect()
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
        let side = match answer.result {
            Ok(env) => {
                let env = namespace(LABELS[i], LABELS[1 - i], env, &other_ids);
                last[i] = Some(env.clone());
                Side {
                    label: LABELS[i].into(),
                    envelope: Some(env),
                    failure: None,
                }
            }
            Err(reason) => Side {
                label: LABELS[i].into(),
                envelope: None,
                failure: Some(scrub(&reason.to_string())),
            },
        };
        sides.push(side);
    }
    sides
}

/// The log's outcome section: convergence, or how many findings stand and how many are disputed.
fn outcome_section(converged: bool, rounds: usize, stances: &[Stance]) -> String {
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

/// The judge's ruling on the stances, or why there is none; no call when nothing stands and no
/// spec is wanted.
fn judge(
    setup: &DebateSetup,
    vars: &PromptVars,
    scrub: &dyn Fn(&str) -> String,
    stances: &[Stance],
    round: Option<u32>,
    logs: &mut Vec<CallLog>,
) -> Result<std::result::Result<Ruling, String>> {
    let ruling = if stances.is_empty() && !setup.want_spec {
        Ok(Ruling {
            decisions: Vec::new(),
            spec: None,
        })
    } else {
        let positions = serde_json::to_string_pretty(&judge_view(stances)).unwrap_or_default();
        let instruction = if setup.want_spec {
            "Also write the final specification: the whole document with every adopted finding applied and nothing else changed, as the string `spec` (Markdown)."
        } else {
            "Do not rewrite the specification; its author will apply the adopted findings. Leave `spec` out."
        };
        let call = ReviewCall {
            role: Role::Judge.into(),
            agent: setup.judge.clone(),
            label: None,
            round,
            task: None,
            prompt: render(
                setup.root,
                Template::Judge,
                vars,
                &[
                    ("positions", &scrub(&positions)),
                    ("spec_instruction", instruction),
                ],
            ),
        };
        let want_spec = setup.want_spec;
        let parse = move |t: &str| parse_ruling(t, want_spec);
        let env = setup.env.with_follow_up(calls::FollowUp::new(
            crate::prompts::template(setup.root, Template::EnvelopeRetry),
            "the judge's decisions",
            crate::agents::text_roles::Output::Decisions,
        ));
        let mut answers = calls::run_batch(&env, &[call], &parse)?;
        match answers.pop() {
            Some(a) => {
                logs.extend(a.logs);
                // The ruling's failure is a reason for people (it is also "no debater gave a
                // valid answer"), so the judge's failure is kept as its rendering.
                a.result.map_err(|f| f.to_string())
            }
            None => Err("env_error: no answer".into()),
        }
    };
    Ok(ruling)
}

/// The findings the judge did not reject, most severe first, as the merged review of the
/// debate, with a note on the rounds and the decision table.
fn adopted_review(
    r: &Ruling,
    stances: &[Stance],
    members: Vec<String>,
    skipped: Vec<String>,
    converged: bool,
    rounds: &[DebateRound],
) -> MergedReview {
    let mut merged = MergedReview {
        strategy: "debate".into(),
        members,
        skipped,
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

/// The judge's decision on a stance (by any of its ids).
pub fn decision_for<'r>(ruling: &'r Ruling, stance: &Stance) -> Option<&'r Decision> {
    ruling.decisions.iter().find(|d| {
        stance
            .ids
            .iter()
            .any(|id| id.eq_ignore_ascii_case(d.id.trim()))
    })
}

/// `| Finding | Severity | Gist | Raised by | Disputed by | Decision | Reason |`
pub fn decision_table(stances: &[Stance], ruling: &Ruling) -> String {
    let mut s = String::from(
        "| Finding | Severity | Gist | Raised by | Disputed by | Decision | Reason |\n|---|---|---|---|---|---|---|\n",
    );
    for st in stances {
        let (decision, reason) = match decision_for(ruling, st) {
            Some(d) => (
                if d.adopted { "adopted" } else { "rejected" },
                d.reason.clone(),
            ),
            None => (
                "adopted (undecided)",
                "the judge gave no decision; kept".into(),
            ),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            st.ids.join(", "),
            st.finding.severity.as_str(),
            cell(&st.finding.gist),
            st.raised_by.join(", "),
            if st.disputed_by.is_empty() {
                "—".to_string()
            } else {
                st.disputed_by.join(", ")
            },
            decision,
            cell(&reason)
        );
    }
    s
}

fn cell(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

fn envelope_json(env: Option<&Envelope>, scrub: &dyn Fn(&str) -> String) -> String {
    match env {
        Some(e) => {
            let view = serde_json::json!({
                "findings": e.findings.iter().map(|f| serde_json::json!({
                    "id": f.id, "requirement_id": f.requirement_id, "severity": f.severity,
                    "file": f.file, "section": f.section, "gist": f.gist,
                    "argument": f.argument, "suggestion": f.suggestion,
                })).collect::<Vec<_>>(),
                "converged": e.converged,
                "remaining_disputes": e.remaining_disputes,
            });
            scrub(&serde_json::to_string_pretty(&view).unwrap_or_default())
        }
        None => "(no valid answer yet)".into(),
    }
}

/// Gives every finding a debate-wide id (`A.F1`) and resolves bare dispute ids.
fn namespace(label: &str, other: &str, mut env: Envelope, other_ids: &[String]) -> Envelope {
    let prefixed = |id: &str| id.starts_with("A.") || id.starts_with("B.");
    for (n, f) in env.findings.iter_mut().enumerate() {
        if f.id.trim().is_empty() {
            f.id = format!("F{}", n + 1);
        }
        if !prefixed(&f.id) {
            f.id = format!("{label}.{}", f.id.trim());
        }
    }
    env.remaining_disputes = env
        .remaining_disputes
        .into_iter()
        .map(|d| {
            let d = d.trim().to_string();
            if prefixed(&d) {
                d
            } else if other_ids.contains(&format!("{other}.{d}")) {
                format!("{other}.{d}")
            } else {
                format!("{label}.{d}")
            }
        })
        .collect();
    env
}

/// The findings in the last valid envelope of each side, merged by fingerprint.
fn stances(last: &[Option<Envelope>; 2]) -> Vec<Stance> {
    let mut out: Vec<Stance> = Vec::new();
    for (i, env) in last.iter().enumerate() {
        let Some(env) = env else { continue };
        for f in &env.findings {
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
                    }
                }
                None => out.push(Stance {
                    finding: f.clone(),
                    ids: vec![f.id.clone()],
                    raised_by: vec![LABELS[i].into()],
                    disputed_by: Vec::new(),
                }),
            }
        }
    }
    for (i, env) in last.iter().enumerate() {
        let Some(env) = env else { continue };
        for d in &env.remaining_disputes {
            for s in out.iter_mut() {
                if s.ids.contains(d)
                    && !s.raised_by.iter().any(|l| l == LABELS[i])
                    && !s.disputed_by.iter().any(|l| l == LABELS[i])
                {
                    s.disputed_by.push(LABELS[i].into());
                }
            }
        }
    }
    out
}

fn judge_view(stances: &[Stance]) -> serde_json::Value {
    serde_json::Value::Array(
        stances
            .iter()
            .map(|s| {
                serde_json::json!({
                    "id": s.ids.first().cloned().unwrap_or_default(),
                    "also_known_as": s.ids.iter().skip(1).collect::<Vec<_>>(),
                    "requirement_id": s.finding.requirement_id,
                    "severity": s.finding.severity,
                    "file": s.finding.file,
                    "section": s.finding.section,
                    "gist": s.finding.gist,
                    "argument": s.finding.argument,
                    "suggestion": s.finding.suggestion,
                    "raised_by": s.raised_by,
                    "disputed_by": s.disputed_by,
                })
            })
            .collect(),
    )
}

/// Parses the judge's answer: `{"decisions": [{"id", "decision": "adopted|rejected",
/// "reason"}], "spec": "…"}`; with `want_spec` the final document is required, as the `spec`
/// string or else as a fenced ```markdown block.
pub fn parse_ruling(text: &str, want_spec: bool) -> std::result::Result<Ruling, String> {
    let candidate =
        json_candidate(text, "decisions").ok_or("no JSON object found in the output")?;
    let value: serde_json::Value = serde_json::from_str(candidate)
        .map_err(|e| format!("the ruling is not valid JSON: {e}"))?;
    let list = value
        .get("decisions")
        .and_then(serde_json::Value::as_array)
        .ok_or("`decisions` is missing or not a list")?;
    let mut decisions = Vec::new();
    for (n, d) in list.iter().enumerate() {
        let id = d
            .get("id")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| format!("decision {} has no `id`", n + 1))?;
        let word = d
            .get("decision")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_lowercase();
        let adopted = match word.as_str() {
            "adopted" | "adopt" | "accepted" | "accept" => true,
            "rejected" | "reject" => false,
            other => {
                return Err(format!(
                    "decision for `{id}` is \"{other}\", expected adopted or rejected"
                ));
            }
        };
        decisions.push(Decision {
            id: id.trim().to_string(),
            adopted,
            reason: d
                .get("reason")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_string(),
        });
    }
    let spec = value
        .get("spec")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
        .filter(|s| !s.trim().is_empty())
        .or_else(|| fenced_markdown(text));
    if want_spec && spec.is_none() {
        return Err("`spec` (the whole final document) is missing or empty".into());
    }
    Ok(Ruling { decisions, spec })
}

fn fenced_markdown(text: &str) -> Option<String> {
    let start = text.find("```markdown").or_else(|| text.find("```md"))?;
    let after = &text[start..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let end = body.rfind("\n```")?;
    let spec = body[..end].to_string();
    (!spec.trim().is_empty()).then_some(spec)
}

fn start_log(setup: &DebateSetup) -> Result<()> {
    let text = format!(
        "# Debate log\n\n{}\n\nDebaters are labelled A and B; they never learn who the other is. \
Each round is appended as soon as it ends.\n",
        setup.header
    );
    crate::util::write_text(&setup.log_path, &text)
}

/// Appends to the log and flushes it to disk, so that a round is on disk before the next starts.
fn append_log(path: &Path, text: &str) -> Result<()> {
    let mut f = crate::fsx::open_append(path)?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| Error::io(path, e))
}

fn render_round(round: &DebateRound) -> String {
    let mut s = format!("\n## Round {}: {}\n", round.number, round.stage);
    for side in &round.sides {
        let _ = writeln!(s, "\n### {}\n", side.label);
        match (&side.envelope, &side.failure) {
            (Some(env), _) => {
                if env.findings.is_empty() {
                    s.push_str("No findings.\n");
                } else {
                    s.push_str(
                        "| Id | Severity | File | Section | Gist |\n|---|---|---|---|---|\n",
                    );
                    for f in &env.findings {
                        let _ = writeln!(
                            s,
                            "| {} | {} | {} | {} | {} |",
                            f.id,
                            f.severity.as_str(),
                            cell(&f.file),
                            cell(&f.section),
                            cell(&f.gist)
                        );
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
    s
}

fn render_ruling(
    stances: &[Stance],
    ruling: &std::result::Result<Ruling, String>,
    scrub: &dyn Fn(&str) -> String,
) -> String {
    match ruling {
        Ok(r) if r.decisions.is_empty() && stances.is_empty() => {
            "\n## Judge\n\nNo finding stands; nothing to decide.\n".into()
        }
        Ok(r) => format!("\n## Judge\n\n{}", decision_table(stances, r)),
        Err(e) => format!(
            "\n## Judge\n\nThe judge gave no usable ruling: {}\n",
            scrub(e)
        ),
    }
}

#[cfg(test)]
mod tests;
