//! What the step converter answers: the steps of a case, or the parts of the case that no step
//! can check (each with a reason), which go back to the author instead of becoming steps that
//! pass without checking anything.

use serde::{Deserialize, Serialize};

use super::check::validate;
use super::{Step, StepsError};

/// One part of a case the converter could not express as steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unexpressible {
    /// The prose step (or expectation) as the case words it.
    pub step: String,
    /// Why no browser step can check it.
    pub reason: String,
}

/// A usable answer of the converter for one case.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversion {
    /// The steps (empty when part of the case cannot be expressed: a case is run whole or not
    /// at all).
    pub steps: Vec<Step>,
    /// What cannot be expressed, with reasons.
    pub cannot_express: Vec<Unexpressible>,
}

/// Reads a conversion out of an agent's answer: the first fenced ```json block, else the text
/// from the first `{` or `[` to the last `}` or `]`; accepts `{"steps": [...]}`, a bare array,
/// or `{"cannot_express": [{"step": "…", "reason": "…"}]}`.
pub fn from_answer(text: &str) -> Result<Conversion, StepsError> {
    let candidate = fenced_json(text).unwrap_or_else(|| bracketed(text).unwrap_or(text));
    let value: serde_json::Value = serde_json::from_str(candidate.trim())
        .map_err(|e| StepsError(format!("the answer holds no JSON steps ({e})")))?;
    let (list, unexpressible) = match value {
        serde_json::Value::Array(_) => (Some(value), None),
        serde_json::Value::Object(mut map) => (map.remove("steps"), map.remove("cannot_express")),
        _ => {
            return Err(StepsError(
                "the JSON is neither an object nor an array".into(),
            ));
        }
    };
    if let Some(raw) = unexpressible.filter(|v| !v.is_null()) {
        let cannot_express: Vec<Unexpressible> = serde_json::from_value(raw).map_err(|e| {
            StepsError(format!(
                "`cannot_express` is not a list of {{\"step\": \"…\", \"reason\": \"…\"}} ({e})"
            ))
        })?;
        if let Some(empty) = cannot_express
            .iter()
            .position(|u| u.step.trim().is_empty() || u.reason.trim().is_empty())
        {
            return Err(StepsError(format!(
                "`cannot_express` entry {} needs a non-empty `step` and `reason`",
                empty + 1
            )));
        }
        if !cannot_express.is_empty() {
            return Ok(Conversion {
                steps: Vec::new(),
                cannot_express,
            });
        }
    }
    let list = list.ok_or_else(|| StepsError("the JSON object has no `steps` array".into()))?;
    let items = list
        .as_array()
        .ok_or_else(|| StepsError("`steps` is not an array".into()))?;
    let mut steps = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let step: Step = serde_json::from_value(item.clone())
            .map_err(|e| StepsError(format!("step {}: {e}", i + 1)))?;
        steps.push(step);
    }
    let problems = validate(&steps);
    if !problems.is_empty() {
        return Err(StepsError(problems.join("; ")));
    }
    Ok(Conversion {
        steps,
        cannot_express: Vec::new(),
    })
}

fn fenced_json(text: &str) -> Option<&str> {
    let start = text.find("```json")? + "```json".len();
    let rest = &text[start..];
    let end = rest.find("```")?;
    Some(&rest[..end])
}

fn bracketed(text: &str) -> Option<&str> {
    let start = text.find(['{', '['])?;
    let end = text.rfind(['}', ']'])?;
    (end > start).then(|| &text[start..=end])
}
