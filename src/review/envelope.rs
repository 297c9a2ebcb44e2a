//! Findings and the envelope reviewers return, and the extraction of that envelope from free
//! model output.
//!
//! Models wrap JSON in prose and fences; extraction takes the first ```json block, else the span
//! from the first `{` to the last `}`. Anything that still does not parse is a failed round, never
//! an empty (and therefore passing) review.

use serde::{Deserialize, Serialize};

pub use crate::types::{Finding, Severity};

/// A reviewer's answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Envelope {
    /// The findings.
    pub findings: Vec<Finding>,
    /// Reviewer considers the debate settled.
    #[serde(default)]
    pub converged: bool,
    /// Finding ids still disputed.
    #[serde(default)]
    pub remaining_disputes: Vec<String>,
}

impl Envelope {
    /// Computes fingerprints and class keys of every finding.
    pub fn with_fingerprints(mut self) -> Envelope {
        for f in &mut self.findings {
            f.fingerprint = Some(super::fingerprint::fingerprint(f));
            f.class_key = Some(super::fingerprint::class_key(f));
        }
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

/// Extracts the envelope from model output (`docs/reviews.md`): first fenced json block, else
/// first `{` to last `}`; a bare array of findings is accepted too.
pub fn extract(text: &str) -> Result<Envelope, EnvelopeError> {
    if let Some(block) = fenced_json(text) {
        return parse_candidate(block);
    }
    let from_braces = braces(text).map(parse_candidate);
    if let Some(Ok(env)) = from_braces {
        return Ok(env);
    }
    // A bare array of findings (the `fingerprint` command accepts one).
    if let Some(Ok(env)) = brackets(text).map(parse_candidate) {
        return Ok(env);
    }
    match from_braces {
        Some(Err(e)) => Err(e),
        _ => Err(EnvelopeError("no JSON object found in the output".into())),
    }
}

fn parse_candidate(candidate: &str) -> Result<Envelope, EnvelopeError> {
    parse_untrusted(candidate).map(|mut env| {
        // Fingerprints are the orchestrator's to compute: a reviewer cannot forge "the same
        // finding" (or dodge recurrence) by sending its own.
        for f in &mut env.findings {
            f.fingerprint = None;
            f.class_key = None;
        }
        env
    })
}

fn parse_untrusted(candidate: &str) -> Result<Envelope, EnvelopeError> {
    if candidate.trim_start().starts_with('[') {
        return serde_json::from_str::<Vec<Finding>>(candidate)
            .map(|findings| Envelope {
                findings,
                ..Envelope::default()
            })
            .map_err(|e| EnvelopeError(format!("the findings array is not valid: {e}")));
    }
    serde_json::from_str::<Envelope>(candidate)
        .map_err(|e| EnvelopeError(format!("the JSON envelope is not valid: {e}")))
}

/// Extracts an envelope from a critic's answer and fingerprints its findings: the parser every
/// review call uses.
pub fn parse_answer(text: &str) -> Result<Envelope, String> {
    extract(text)
        .map(Envelope::with_fingerprints)
        .map_err(|e| e.0)
}

/// The JSON object an answer most likely carries, by the same rule as envelopes (first fenced
/// json block, else first `{` to last `}`); for the other structured answers (classifier,
/// judge).
pub fn json_candidate(text: &str) -> Option<&str> {
    fenced_json(text).or_else(|| braces(text))
}

fn fenced_json(text: &str) -> Option<&str> {
    let start = text.find("```json")?;
    let after = &text[start + "```json".len()..];
    let body_start = after.find('\n').map(|i| i + 1).unwrap_or(0);
    let body = &after[body_start..];
    let end = body.find("```")?;
    Some(body[..end].trim())
}

fn braces(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (end > start).then(|| &text[start..=end])
}

fn brackets(text: &str) -> Option<&str> {
    let start = text.find('[')?;
    let end = text.rfind(']')?;
    (end > start).then(|| &text[start..=end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_fenced_block_before_braces() {
        let text =
            "Here {not json}\n```json\n{\"findings\": [], \"converged\": true}\n```\ntrailing }";
        let env = extract(text).unwrap();
        assert!(env.converged);
        assert!(env.findings.is_empty());
    }

    #[test]
    fn extracts_braces_span_and_accepts_any_severity_case() {
        let text = "Sure! {\"findings\": [{\"severity\": \"CRITICAL\", \"gist\": \"x\"}]} done";
        let env = extract(text).unwrap();
        assert_eq!(env.findings[0].severity, Severity::Critical);
        assert_eq!(env.fix_required(), 1);
    }

    #[test]
    fn garbage_and_unknown_severity_are_errors() {
        assert!(extract("I reviewed it, looks great!").is_err());
        assert!(extract("{\"findings\": [{\"severity\": \"huge\"}]}").is_err());
        assert!(extract("{\"findings\": 3}").is_err());
    }

    #[test]
    fn prose_with_brackets_before_the_envelope() {
        let env = extract("About [REQ-001]: {\"findings\": [], \"converged\": true}").unwrap();
        assert!(env.converged);
    }

    #[test]
    fn bare_array_is_accepted() {
        let env = extract("[{\"severity\": \"minor\"}]").unwrap();
        assert_eq!(env.findings.len(), 1);
        assert_eq!(env.fix_required(), 0);
    }

    #[test]
    fn input_fingerprints_are_never_trusted() {
        let env =
            extract("{\"findings\": [{\"severity\": \"minor\", \"fingerprint\": \"forged\"}]}")
                .unwrap();
        assert_eq!(env.findings[0].fingerprint, None);
    }
}
