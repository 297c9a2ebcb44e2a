//! Findings and the envelope reviewers return, and the extraction of that envelope from free
//! model output.
//!
//! Models wrap JSON in prose and fences, and their strings hold code samples with braces and
//! ``` of their own; extraction therefore finds the JSON value by a scan that knows JSON strings
//! (the value opening the first ```json block, else the first balanced object that parses), with
//! the old wide spans as a last resort. Anything that still does not parse is a failed round,
//! never an empty (and therefore passing) review.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::types::{Finding, Severity};

/// A reviewer's answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Envelope {
    pub findings: Vec<Finding>,
    /// Reviewer considers the debate settled.
    #[serde(default)]
    pub converged: bool,
    /// Finding ids still disputed.
    #[serde(default)]
    pub remaining_disputes: Vec<String>,
    /// Findings of the answer that could not be read (no severity the table knows, not an
    /// object), one line each saying which and why: one bad finding is dropped and said so,
    /// instead of rejecting the whole review.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
}

impl Envelope {
    /// Computes fingerprints and class keys of every finding.
    pub fn with_fingerprints(mut self) -> Envelope {
        self.findings.iter_mut().for_each(super::fingerprint::stamp);
        self
    }

    /// Number of fix-required findings.
    pub fn fix_required(&self) -> u32 {
        self.findings
            .iter()
            .filter(|f| f.severity.fix_required())
            .count() as u32
    }

    /// Count of findings with `severity`.
    pub fn count(&self, severity: Severity) -> u32 {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count() as u32
    }
}

/// Why an envelope could not be extracted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EnvelopeError(pub String);

/// Extracts the envelope from model output (`docs/reviews.md`): the JSON value that opens a
/// fenced json block, else the first balanced JSON object in the text that parses, else first
/// `{` to last `}`; a bare array of findings is accepted too.
pub fn extract(text: &str) -> Result<Envelope, EnvelopeError> {
    let mut first_error = None;
    for candidate in candidates(text) {
        match parse_candidate(candidate) {
            Ok(env) => return Ok(env),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| EnvelopeError("no JSON object found in the output".into())))
}

fn parse_candidate(candidate: &str) -> Result<Envelope, EnvelopeError> {
    parse_untrusted(candidate).map(|mut env| {
        cap_findings(&mut env.findings);
        // Fingerprints are the orchestrator's to compute: a reviewer cannot forge "the same
        // finding" (or dodge recurrence) by sending its own.
        for f in &mut env.findings {
            f.fingerprint = None;
            f.class_key = None;
            bound(f);
        }
        for d in &mut env.remaining_disputes {
            cap(d, MAX_LABEL_CHARS);
        }
        env
    })
}

/// Most findings kept from one envelope. A review holds a handful (a panel of reviewers, a few
/// dozen); every finding is copied into the review files, the state, the next round's prompts
/// and the PR body, so a reviewer answering thousands would make each of them grow with it.
pub const MAX_FINDINGS: usize = 200;

/// Keeps the first [`MAX_FINDINGS`] findings, in the reviewer's order, and says in the run's
/// progress how many were dropped (the reviewer's own answer, whole, stays in its agent log).
fn cap_findings(findings: &mut Vec<Finding>) {
    if findings.len() <= MAX_FINDINGS {
        return;
    }
    let total = findings.len();
    findings.truncate(MAX_FINDINGS);
    tracing::warn!(total, kept = MAX_FINDINGS, "review envelope findings cut");
    crate::events::emit(crate::events::Event::Note {
        message: format!(
            "a reviewer answered {total} findings; the first {MAX_FINDINGS} are kept and {} dropped (an envelope holds at most {MAX_FINDINGS}; the whole answer is in the agent's log)",
            total - MAX_FINDINGS
        ),
    });
}

/// Longest gist kept, in characters: a gist is one line.
pub const MAX_GIST_CHARS: usize = 500;
/// Longest argument or suggestion kept, in characters.
pub const MAX_TEXT_CHARS: usize = 8 * 1024;
/// Longest id, requirement id, file, section or disputed id kept, in characters.
pub const MAX_LABEL_CHARS: usize = 200;

/// Cuts a finding's fields to their caps. A finding is copied into review files, the state, the
/// prompts of later rounds and the PR body: one reviewer answering with a 1 MiB gist would
/// otherwise make each of them megabytes (and the PR body too long for GitHub).
fn bound(f: &mut Finding) {
    cap(&mut f.gist, MAX_GIST_CHARS);
    cap(&mut f.argument, MAX_TEXT_CHARS);
    cap(&mut f.suggestion, MAX_TEXT_CHARS);
    for label in [
        &mut f.id,
        &mut f.requirement_id,
        &mut f.file,
        &mut f.section,
        &mut f.still_open,
        &mut f.disputes,
    ] {
        cap(label, MAX_LABEL_CHARS);
    }
}

/// Keeps the first `max` characters of `text` and says how many were cut.
pub fn cap(text: &mut String, max: usize) {
    if let Some((end, _)) = text.char_indices().nth(max) {
        let cut = text[end..].chars().count();
        text.truncate(end);
        text.push_str(&format!(" [… {cut} characters cut]"));
    }
}

fn parse_untrusted(candidate: &str) -> Result<Envelope, EnvelopeError> {
    let invalid = |why: String| EnvelopeError(format!("the JSON envelope is not valid: {why}"));
    let value: Value = serde_json::from_str(candidate).map_err(|e| invalid(e.to_string()))?;
    let (list, converged, disputes) = match value {
        Value::Array(list) => (list, false, Vec::new()),
        Value::Object(mut map) => {
            let list = match map.remove("findings") {
                Some(Value::Array(list)) => list,
                Some(Value::Null) | None => {
                    let missing = "`findings` is missing (an empty list is a valid answer)";
                    return Err(invalid(missing.into()));
                }
                Some(other) => {
                    let other = kind_of(&other);
                    return Err(invalid(format!("`findings` must be a list, got {other}")));
                }
            };
            let converged = match map.remove("converged") {
                Some(Value::Bool(b)) => b,
                Some(Value::String(s)) => s.trim().eq_ignore_ascii_case("true"),
                _ => false,
            };
            let disputes = match map.remove("remaining_disputes") {
                Some(Value::Array(items)) => items.iter().filter_map(scalar_text).collect(),
                Some(v) => scalar_text(&v).into_iter().collect(),
                None => Vec::new(),
            };
            (list, converged, disputes)
        }
        other => {
            let other = kind_of(&other);
            return Err(invalid(format!(
                "expected an object with `findings`, got {other}"
            )));
        }
    };
    let total = list.len();
    let mut env = Envelope {
        converged,
        remaining_disputes: disputes,
        ..Envelope::default()
    };
    for (i, item) in list.into_iter().enumerate() {
        match normalise_finding(item) {
            Ok(f) => env.findings.push(f),
            Err(why) => env
                .dropped
                .push(format!("finding {} dropped: {why}", i + 1)),
        }
    }
    if total > 0 && env.findings.is_empty() {
        // Every finding unreadable: an empty envelope would pass the gate on a review that
        // found something.
        let dropped = env.dropped.join("; ");
        return Err(invalid(format!("no finding could be read ({dropped})")));
    }
    for line in &env.dropped {
        tracing::warn!(%line, "review finding dropped");
        crate::events::emit(crate::events::Event::Note {
            message: format!("a reviewer's {line}"),
        });
    }
    Ok(env)
}

/// The severities reviewers write beyond the three words, and the one each means
/// (`docs/reviews.md#severities`): a blocker is critical, a major issue an improvement, a nit
/// minor. Anything else drops that one finding.
pub const SEVERITY_TABLE: [(&str, Severity); 12] = [
    ("blocker", Severity::Critical),
    ("blocking", Severity::Critical),
    ("high", Severity::Critical),
    ("major", Severity::Improvement),
    ("medium", Severity::Improvement),
    ("moderate", Severity::Improvement),
    ("should-fix", Severity::Improvement),
    ("low", Severity::Minor),
    ("nit", Severity::Minor),
    ("nitpick", Severity::Minor),
    ("trivial", Severity::Minor),
    ("info", Severity::Minor),
];

/// A severity word as written (any case, `_`/space for `-`): one of the three, or mapped
/// through [`SEVERITY_TABLE`].
pub fn severity_of(word: &str) -> Option<Severity> {
    let w = word.trim().to_lowercase().replace(['_', ' '], "-");
    Severity::parse(&w).or_else(|| {
        SEVERITY_TABLE
            .iter()
            .find(|(k, _)| *k == w)
            .map(|(_, s)| *s)
    })
}

/// One finding as a reviewer wrote it, normalised: a numeric id becomes text, a null or missing
/// text field is empty, a list of requirement ids is joined, extra keys are left out, and the
/// severity goes through [`severity_of`]. `Err` says why it cannot be read.
fn normalise_finding(item: Value) -> Result<Finding, String> {
    let Value::Object(map) = item else {
        return Err(format!("it is {}, not an object", kind_of(&item)));
    };
    let id = map.get("id").and_then(scalar_text).unwrap_or_default();
    let named = if id.is_empty() {
        String::new()
    } else {
        format!(" (`{id}`)")
    };
    let severity = match map.get("severity") {
        Some(Value::String(word)) => severity_of(word).ok_or_else(|| {
            format!(
                "severity \"{word}\"{named} is not critical, improvement or minor, nor in the severity table"
            )
        })?,
        Some(other) => {
            return Err(format!(
                "severity{named} is {}, not a word",
                kind_of(other)
            ));
        }
        // A debater's counter-argument (`disputes`) argues about another finding's severity
        // and is never a finding of its own, so it needs none.
        None if map
            .get("disputes")
            .and_then(scalar_text)
            .is_some_and(|d| !d.trim().is_empty()) =>
        {
            Severity::Minor
        }
        None => return Err(format!("it has no severity{named}")),
    };
    // Only the finding's own keys are read; every other key a reviewer adds is left out.
    let text = |k: &str| match map.get(k) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(scalar_text)
            .collect::<Vec<_>>()
            .join(", "),
        Some(Value::Null) | None => String::new(),
        Some(v) => scalar_text(v).unwrap_or_else(|| v.to_string()),
    };
    Ok(Finding {
        id: text("id"),
        requirement_id: text("requirement_id"),
        file: text("file"),
        section: text("section"),
        gist: text("gist"),
        argument: text("argument"),
        suggestion: text("suggestion"),
        still_open: text("still_open").trim().to_string(),
        disputes: text("disputes").trim().to_string(),
        ..Finding::new(severity)
    })
}

/// A string, number or boolean as text; `None` for null, lists and objects.
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// What kind of JSON value `v` is, for messages.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A finding as another critic is shown it (the other debater, the next round's reviewers):
/// its claim and place, never the orchestrator's fingerprints.
pub fn shown(f: &Finding) -> Value {
    serde_json::json!({
        "id": f.id, "requirement_id": f.requirement_id, "severity": f.severity,
        "file": f.file, "section": f.section, "gist": f.gist,
        "argument": f.argument, "suggestion": f.suggestion,
    })
}

/// Extracts an envelope from a critic's answer and fingerprints its findings: the parser every
/// review call uses.
pub fn parse_answer(text: &str) -> Result<Envelope, String> {
    extract(text)
        .map(Envelope::with_fingerprints)
        .map_err(|e| e.0)
}

/// The JSON object an answer most likely carries, by the same rule as envelopes: the first
/// candidate that is a JSON object with `key` (prose may quote other objects first), else the
/// first candidate (so its parse error is the one reported); for the other structured answers
/// (classifier, judge).
pub fn json_candidate<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let mut first = None;
    for candidate in candidates(text) {
        if let Ok(serde_json::Value::Object(map)) = serde_json::from_str(candidate)
            && map.contains_key(key)
        {
            return Some(candidate);
        }
        first.get_or_insert(candidate);
    }
    first
}

/// How many `{` positions the scan tries as the start of an object: enough for any prose a
/// model writes around its answer, and a bound on the work hostile output can cause (each try
/// is one linear scan).
const MAX_OBJECT_STARTS: usize = 64;

/// Where a JSON answer may be, most likely first: the value opening a ```json fence (its end
/// found by a string-aware scan, so a code sample with ``` inside a string does not cut it), the
/// fence's body up to the next ```, every balanced object outside the fence, then the old wide
/// spans (first `{` to last `}`, first `[` to last `]`).
fn candidates(text: &str) -> impl Iterator<Item = &str> {
    let mut out: Vec<&str> = Vec::new();
    if let Some(body) = fence_body(text) {
        let offset = text.len() - body.len();
        let lead = body.len() - body.trim_start().len();
        let start = offset + lead;
        if matches!(text.as_bytes().get(start), Some(b'{' | b'['))
            && let Some(end) = value_end(text, start)
        {
            out.push(&text[start..end]);
        }
        if let Some(end) = body.find("```") {
            out.push(body[..end].trim());
        }
    }
    out.extend(balanced_objects(text));
    out.extend(span(text, '{', '}'));
    out.extend(span(text, '[', ']'));
    let mut seen = std::collections::HashSet::new();
    out.into_iter().filter(move |c| seen.insert(*c))
}

/// The text after the first ```json fence line.
fn fence_body(text: &str) -> Option<&str> {
    let start = text.find("```json")?;
    let after = &text[start + "```json".len()..];
    let body_start = after.find('\n').map(|i| i + 1).unwrap_or(0);
    Some(&after[body_start..])
}

/// Every balanced `{…}` span, in order of its start, found by string-aware scans from the first
/// `MAX_OBJECT_STARTS` `{`. Every start is tried (not only those after a closed span): a stray
/// quote in prose can pair with one in the answer and swallow its start.
fn balanced_objects(text: &str) -> Vec<&str> {
    text.match_indices('{')
        .take(MAX_OBJECT_STARTS)
        .filter_map(|(start, _)| value_end(text, start).map(|end| &text[start..end]))
        .collect()
}

/// The byte index just past the JSON value that opens with the `{` or `[` at `start`, by a scan
/// that knows JSON strings: brackets, braces and backticks inside a string (escaped quotes
/// included) do not count. `None` when the value never closes or a closer does not match.
fn value_end(text: &str, start: usize) -> Option<usize> {
    let mut open: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in text.as_bytes().iter().enumerate().skip(start) {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => open.push(b'}'),
            b'[' => open.push(b']'),
            b'}' | b']' => {
                if open.pop()? != b {
                    return None;
                }
                if open.is_empty() {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The span from the first `open` to the last `close`.
fn span(text: &str, open: char, close: char) -> Option<&str> {
    let start = text.find(open)?;
    let end = text.rfind(close)?;
    (end > start).then(|| &text[start..=end])
}

#[cfg(test)]
mod tests;
