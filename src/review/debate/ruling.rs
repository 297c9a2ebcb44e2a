//! The judge's answer and the decision table made of it.
//!
//! Whether the judge writes the final document is the caller's to say (`want_spec`), and the
//! prompt, the HTTP schema and this parser say the same thing: `spec` is a string when the
//! final document is asked for (the stand-alone `debate`), and null otherwise (the pipeline,
//! whose author applies the adopted findings), where a document written anyway is ignored.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Stance;
use crate::review::envelope::json_candidate;

/// The judge's decision on one finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Decision {
    /// Finding id (`A.F1`).
    pub id: String,
    pub adopted: bool,
    pub reason: String,
}

/// The judge's answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Ruling {
    /// One decision per finding.
    pub decisions: Vec<Decision>,
    /// The final spec (stand-alone debate only).
    pub spec: Option<String>,
}

/// What the judge is told about `spec`, in the words the parser holds it to: the sentence
/// completes the judge template's `{{spec_instruction}}`.
pub fn spec_instruction(want_spec: bool) -> &'static str {
    if want_spec {
        "You are also asked to write the final specification: the whole document with every adopted finding applied and nothing else changed, as the Markdown string `spec` of the same JSON object, instead of null."
    } else {
        "Do not rewrite the specification; its author will apply the adopted findings, so `spec` is null."
    }
}

/// Parses the judge's answer: `{"decisions": [{"id", "decision": "adopted|rejected",
/// "reason"}], "spec": "…" | null}`. With `want_spec` the final document is required, as the
/// `spec` string or else as a fenced ```markdown block; without it `spec` is ignored.
pub fn parse_ruling(text: &str, want_spec: bool) -> std::result::Result<Ruling, String> {
    let candidate =
        json_candidate(text, "decisions").ok_or("no JSON object found in the output")?;
    let value: Value = serde_json::from_str(candidate)
        .map_err(|e| format!("the ruling is not valid JSON: {e}"))?;
    let list = value
        .get("decisions")
        .and_then(Value::as_array)
        .ok_or("`decisions` is missing or not a list")?;
    let text_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let mut decisions = Vec::new();
    for (n, d) in list.iter().enumerate() {
        let id = text_of(d, "id").ok_or_else(|| format!("decision {} has no `id`", n + 1))?;
        let word = text_of(d, "decision").unwrap_or_default();
        let adopted = match word.trim().to_lowercase().as_str() {
            "adopted" | "adopt" | "accepted" | "accept" => true,
            "rejected" | "reject" => false,
            other => {
                return Err(format!(
                    "decision for `{id}` is \"{other}\", expected adopted or rejected"
                ));
            }
        };
        let (id, reason) = (
            id.trim().to_string(),
            text_of(d, "reason").unwrap_or_default(),
        );
        decisions.push(Decision {
            id,
            adopted,
            reason,
        });
    }
    if !want_spec {
        return Ok(Ruling {
            decisions,
            spec: None,
        });
    }
    let spec = text_of(&value, "spec")
        .filter(|s| !s.trim().is_empty())
        .or_else(|| fenced_markdown(text))
        .ok_or("`spec` (the whole final document) is missing or empty")?;
    Ok(Ruling {
        decisions,
        spec: Some(spec),
    })
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

/// One table cell: one line, pipes escaped.
pub fn cell(s: &str) -> String {
    crate::review::fingerprint::collapse_ws(s).replace('|', "\\|")
}
