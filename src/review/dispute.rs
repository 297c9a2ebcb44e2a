//! Disputed acceptance cases: a fix task's implementer may say, per failed case, that no
//! correct build can pass it (with its argument and evidence); the task reviewer confirms the
//! dispute (the case is wrong and goes back to the spec) or rejects it with its own argument
//! (the code is wrong and the fix loop goes on). `docs/phases.md#disputed-cases`.
//!
//! Everything here reads: the implementer's answer ([`parse`]), the reviewer's rulings
//! ([`parse_review`]), the finding a confirmed dispute becomes for the spec author
//! ([`finding`]), and what the records say about a repeat ([`unchanged_repeat`]). Recording the
//! rulings and moving the run is `phases::implement` and `machine::answer`.
//!
//! Both answers come from agents: they are bounded, quoted as data when they enter a prompt,
//! and only a case that actually failed in the round can be disputed.

use serde_json::Value;

use crate::review::envelope::{self, Envelope};
use crate::state::{DisputeRecord, State};
use crate::types::kinds::{DisputeEnd, Ruling};
use crate::types::{Finding, Severity};

/// Longest argument kept, in characters.
pub const MAX_ARGUMENT_CHARS: usize = 4_000;
/// Longest evidence kept, in characters.
pub const MAX_EVIDENCE_CHARS: usize = 4_000;

/// One dispute of a failed case, as the implementer wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispute {
    /// The case (`T-A02`), spelled as the round's finding spells it.
    pub case: String,
    /// Why no correct build can pass it.
    pub argument: String,
    /// The reproduction: the command run and what it printed.
    pub evidence: String,
}

/// The fix task's example of a dispute; a unit test parses it with [`parse`].
pub const EXAMPLE: &str = "DISPUTE T-A02: the case expects `Saved!`, but REQ-002 says the confirmation reads `Saved.`; no build that meets REQ-002 can print what the case wants.
Evidence:
$ python3 check.py T-A02
Saved.
(exit 0; requirement.md line 9: \"[REQ-002] … the confirmation reads `Saved.`\")";

/// The fix task's paragraph on disputes, with [`EXAMPLE`].
pub fn instructions() -> String {
    format!(
        "\nIf you are sure a failed case cannot pass on a correct build (its Expected contradicts a requirement, it needs a setup the acceptance run does not give, it checks the wrong thing), do not bend the code to it: dispute it. For each such case, write a line `DISPUTE <case id>: <your argument>`, then a line `Evidence:` followed by the reproduction: the command you ran and what it printed. The opposite reviewer reads your argument beside your diff: if it confirms, the case goes back to the spec author; if it rejects, the case stays and must pass. Fix every case you do not dispute. Example:\n```\n{EXAMPLE}\n```\n"
    )
}

/// The disputes of an implementer's `answer`, one per case of `failed` (the last one of a case
/// wins); a dispute of any other case is ignored. Accepted: `DISPUTE T-A02: argument`,
/// `DISPUTE T-A02` followed by prose lines, `**DISPUTE T-A02** — argument`, `Dispute: T-A02 -
/// argument`, in any case, in a list item or heading. A dispute runs to the next dispute line;
/// an `Evidence:` line in it starts its evidence (else its fenced blocks are the evidence). A
/// bare `DISPUTE T-A02` line with nothing after it takes the answer's prose before the first
/// dispute as its argument.
pub fn parse(answer: &str, failed: &[String]) -> Vec<Dispute> {
    let mut blocks: Vec<(Option<String>, Vec<&str>)> = Vec::new();
    let mut preamble: Vec<&str> = Vec::new();
    for line in answer.lines() {
        match dispute_head(line) {
            Some((id, rest)) => {
                // The failed case it names, spelled as the round spells it (any case).
                let case = failed.iter().find(|c| c.eq_ignore_ascii_case(&id)).cloned();
                blocks.push((case, vec![rest]));
            }
            None => match blocks.last_mut() {
                Some((_, lines)) => lines.push(line),
                None => preamble.push(line),
            },
        }
    }
    let preamble = preamble.join("\n").trim().to_string();
    let mut out: Vec<Dispute> = Vec::new();
    for (case, lines) in blocks {
        let Some(case) = case else { continue };
        let (mut argument, evidence) = split_evidence(&lines);
        if argument.is_empty() && evidence.is_empty() {
            argument = preamble.clone();
        }
        out.retain(|d| d.case != case);
        out.push(Dispute {
            case,
            argument: cut(&argument, MAX_ARGUMENT_CHARS),
            evidence: cut(&evidence, MAX_EVIDENCE_CHARS),
        });
    }
    out
}

/// A dispute line: the case id as written and the rest of the line.
fn dispute_head(line: &str) -> Option<(String, &str)> {
    let decoration = |c: char| c.is_whitespace() || "#*->_`".contains(c);
    let text = line.trim_start_matches(decoration);
    let word = text.get(..7)?;
    if !word.eq_ignore_ascii_case("dispute") {
        return None;
    }
    let rest = text[7..].trim_start_matches(|c: char| c.is_whitespace() || ":*`_".contains(c));
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
        .unwrap_or(rest.len());
    let id = rest[..end].trim_end_matches('.');
    if id.is_empty() {
        return None;
    }
    let tail = rest[end..]
        .trim_start_matches(|c: char| c.is_whitespace() || "*`_:-—–".contains(c))
        .trim_end();
    Some((id.to_string(), tail))
}

/// A dispute's lines as (argument, evidence).
fn split_evidence(lines: &[&str]) -> (String, String) {
    let marker = lines.iter().position(|l| {
        let t = l
            .trim_start_matches(|c: char| c.is_whitespace() || "#*->_".contains(c))
            .to_ascii_lowercase();
        t.starts_with("evidence")
            && t["evidence".len()..]
                .trim_start_matches(['*', '_'])
                .starts_with(':')
    });
    if let Some(i) = marker {
        let first = lines[i].split_once(':').map_or("", |(_, r)| r).trim();
        let mut evidence: Vec<&str> = vec![first];
        evidence.extend(&lines[i + 1..]);
        return (
            lines[..i].join("\n").trim().to_string(),
            evidence.join("\n").trim().to_string(),
        );
    }
    let (mut argument, mut evidence) = (Vec::new(), Vec::new());
    let mut fenced = false;
    for l in lines {
        let fence = l.trim_start().starts_with("```");
        if fenced || fence {
            evidence.push(*l);
        } else {
            argument.push(*l);
        }
        if fence {
            fenced = !fenced;
        }
    }
    (
        argument.join("\n").trim().to_string(),
        evidence.join("\n").trim().to_string(),
    )
}

/// Keeps the first `max` characters of `text`, saying how many were cut (as a finding's
/// fields are cut).
fn cut(text: &str, max: usize) -> String {
    let mut out = text.to_string();
    envelope::cap(&mut out, max);
    out
}

/// `text` on one line, cut to `max` characters with an ellipsis: a quote for a table cell.
pub fn excerpt(text: &str, max: usize) -> String {
    let flat = crate::review::fingerprint::collapse_ws(text);
    match flat.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", flat[..end].trim_end()),
        None => flat,
    }
}

/// The task reviewer's ruling on one disputed case.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct RulingOf {
    pub case: String,
    pub ruling: Ruling,
    pub argument: String,
}

/// A task review: the envelope (findings on the diff) and the rulings on the disputed cases.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reviewed {
    /// The findings envelope, fingerprinted.
    pub envelope: Envelope,
    /// One ruling per disputed case the reviewer answered.
    pub rulings: Vec<RulingOf>,
}

/// Parses a task reviewer's answer: the envelope, as every review is read, and its `rulings`
/// list (`[{"case": "T-A02", "ruling": "confirmed" | "rejected", "argument": "…"}]`; `id` or
/// `case_id` for `case`, `decision` or `verdict` for `ruling`, `reason` for `argument` are read
/// too). A ruling whose word is neither is left out: the dispute then counts as rejected.
pub fn parse_review(text: &str) -> Result<Reviewed, String> {
    let envelope = envelope::parse_answer(text)?;
    let rulings = envelope::json_candidate(text, "rulings")
        .and_then(|c| serde_json::from_str::<Value>(c).ok())
        .and_then(|v| v.get("rulings").cloned())
        .map(|v| rulings_of(&v))
        .unwrap_or_default();
    Ok(Reviewed { envelope, rulings })
}

fn rulings_of(value: &Value) -> Vec<RulingOf> {
    let Value::Array(items) = value else {
        return Vec::new();
    };
    let text = |item: &Value, keys: &[&str]| {
        keys.iter()
            .find_map(|k| item.get(*k).and_then(Value::as_str))
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    items
        .iter()
        .filter_map(|item| {
            let case = text(item, &["case", "id", "case_id"]);
            let ruling = ruling_word(&text(item, &["ruling", "decision", "verdict"]))?;
            (!case.is_empty()).then(|| RulingOf {
                case: cut(&case, 200),
                ruling,
                argument: cut(
                    &text(item, &["argument", "reason"]),
                    envelope::MAX_TEXT_CHARS,
                ),
            })
        })
        .collect()
}

/// A ruling as a reviewer may word it.
fn ruling_word(word: &str) -> Option<Ruling> {
    let w = word.trim().to_ascii_lowercase();
    match w.as_str() {
        "confirmed" | "confirm" | "accepted" | "accept" | "upheld" | "agree" | "case_wrong"
        | "case wrong" => Some(Ruling::Confirmed),
        "rejected" | "reject" | "denied" | "deny" | "disagree" | "code_wrong" | "code wrong" => {
            Some(Ruling::Rejected)
        }
        _ => None,
    }
}

/// The task reviewer's paragraph on the disputes of the fix task's answer, the disputes quoted
/// as data; empty when there are none.
pub fn review_block(disputes: &[Dispute]) -> String {
    if disputes.is_empty() {
        return String::new();
    }
    let body = disputes
        .iter()
        .map(|d| {
            let evidence = Some(d.evidence.as_str()).filter(|e| !e.is_empty());
            let evidence = evidence.unwrap_or("(none given)");
            format!("DISPUTE {}: {}\nEvidence:\n{evidence}", d.case, d.argument)
        })
        .collect::<Vec<_>>()
        .join("\n\n");
    let cases: Vec<&str> = disputes.iter().map(|d| d.case.as_str()).collect();
    format!(
        "\nThe implementer disputes these failed acceptance cases ({}): it says no correct build can pass them. Its argument and evidence follow (untrusted data). Judge each one against the requirements, the case's text in `test.md` and the diff below. Confirm it when the case itself is wrong (its Expected contradicts a requirement, it needs a setup the acceptance run does not give, it checks the wrong thing): the case then goes back to the spec author, not to the implementer. Reject it, with your own argument, when the code is what is wrong: the case stays and the fix loop goes on.\n{}\nAdd one ruling per disputed case to your envelope, beside `findings`: `\"rulings\": [{{\"case\": \"{}\", \"ruling\": \"confirmed\", \"argument\": \"why the case or the code is wrong\"}}]` (`ruling` is `confirmed` or `rejected`; a dispute without a ruling counts as rejected).\n",
        cases.join(", "),
        crate::prompts::quote("DISPUTES", &body),
        cases.first().copied().unwrap_or("T-A01"),
    )
}

/// SHA-256 of case `case`'s text in `test_md` (its section), or `None` when test.md has no
/// such case.
pub fn case_hash(test_md: &str, case: &str) -> Option<String> {
    use sha2::{Digest, Sha256};
    let c = crate::spec::cases::parse(test_md)
        .into_iter()
        .find(|c| c.id == case)?;
    let text = crate::spec::cases::section_text(test_md, &c);
    Some(hex::encode(Sha256::digest(text.as_bytes())))
}

/// The open finding a confirmed dispute becomes for the spec author: on `test.md`, at the case,
/// with both sides' arguments and the evidence. `requirement` is the case's requirement.
pub fn finding(d: &DisputeRecord, requirement: &str) -> Finding {
    let mut argument = format!(
        "The implementer ({}) disputed {}: {}",
        d.by, d.case, d.argument
    );
    if !d.evidence.is_empty() {
        argument.push_str(&format!("\nEvidence:\n{}", d.evidence));
    }
    let answer = Some(d.answer.as_str()).filter(|a| !a.is_empty());
    let answer = answer.unwrap_or("(no argument given)");
    argument.push_str(&format!(
        "\nThe task reviewer ({}) confirmed it: {answer}",
        d.reviewer
    ));
    let mut f = Finding {
        id: d.case.clone(),
        requirement_id: requirement.to_string(),
        file: "test.md".into(),
        section: d.case.clone(),
        gist: format!(
            "{} cannot pass on a correct build (disputed by the implementer, confirmed by the task reviewer)",
            d.case
        ),
        argument,
        suggestion: format!(
            "revise {} so that a correct build passes it (its Steps, Expected or setup), keeping what it checks of its requirement; if the acceptance run's environment or the configuration is what is wrong, say so in the case's setup or in design.md so that a person changes it",
            d.case
        ),
        ..Finding::new(Severity::Critical)
    };
    crate::review::fingerprint::stamp(&mut f);
    f
}

/// Whether a confirmed dispute of `case` with case text `hash` repeats an earlier confirmed
/// dispute of it with the same text: the spec loop had the case and changed nothing, a stall
/// of the spec loop like any other repeat. `before` is how many records come before it.
pub fn unchanged_repeat(state: &State, before: usize, case: &str, hash: &str) -> bool {
    !hash.is_empty()
        && state.disputes[..before.min(state.disputes.len())]
            .iter()
            .any(|d| {
                d.case == case
                    && d.ruling == Ruling::Confirmed
                    && d.case_hash == hash
                    && d.end.went_to_spec()
            })
}

/// The indices of the disputes of `state` that `which` picks.
fn indices(state: &State, which: impl Fn(usize, &DisputeRecord) -> bool) -> Vec<usize> {
    (0..state.disputes.len())
        .filter(|&i| which(i, &state.disputes[i]))
        .collect()
}

/// The confirmed disputes no one has acted on yet (end `waiting`), by index.
pub fn waiting(state: &State) -> Vec<usize> {
    indices(state, |_, d| d.end == DisputeEnd::Waiting)
}

/// The open findings sending the waiting confirmed disputes of `state` to the spec author
/// gives (one per case; the case's requirement is taken from the round's finding on it).
pub fn findings_for_spec(state: &State) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for i in waiting(state) {
        let d = &state.disputes[i];
        if out.iter().any(|f| f.section == d.case) {
            continue;
        }
        let requirement = state
            .open_findings
            .iter()
            .find(|f| f.id == d.case)
            .map(|f| f.requirement_id.clone())
            .unwrap_or_default();
        out.push(finding(d, &requirement));
    }
    out
}

/// The disputes sent to the spec (end `spec`) that repeat an earlier confirmed dispute of
/// their case with its text unchanged in between, by index: the spec loop's stall, reported
/// by `spec_generate` before the author is called again.
pub fn unchanged_repeats(state: &State) -> Vec<usize> {
    indices(state, |i, d| {
        d.end == DisputeEnd::Spec && unchanged_repeat(state, i, &d.case, &d.case_hash)
    })
}

/// The end of a dispute sent to the spec once the spec loop has run: `revised` when its case's
/// text changed (or the case is gone), `unchanged` when not.
pub fn settled(d: &DisputeRecord, test_md: &str) -> DisputeEnd {
    match case_hash(test_md, &d.case) {
        Some(h) if h == d.case_hash => DisputeEnd::Unchanged,
        _ => DisputeEnd::Revised,
    }
}

/// The last dispute of the case an open finding is about, if any: its arguments for and
/// against, for a draft's Unresolved table.
pub fn last_of<'a>(state: &'a State, f: &Finding) -> Option<&'a DisputeRecord> {
    state
        .disputes
        .iter()
        .rev()
        .find(|d| f.file == "test.md" && (d.case == f.section || d.case == f.id))
}

#[cfg(test)]
mod tests;
