//! What the step converter answers: the steps of a case, or the parts of the case that no step
//! can check (each with a reason), which go back to the author instead of becoming steps that
//! pass without checking anything.

use std::collections::BTreeMap;

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
    from_value(json_of(text)?)
}

/// The answers of one conversion call for several cases (`ids`): `{"cases": {"T-A05":
/// {"steps": [...]}, "T-A06": {"cannot_express": [...]}}}`, each case's object read as
/// [`from_answer`] reads one. Each case is validated on its own: the map holds every asked id,
/// with its conversion or why it is not usable (no answer for it, invalid steps). When one case
/// was asked, its object alone (`{"steps": [...]}`) is read too. `Err`: the answer holds no
/// `cases` object at all.
pub fn cases_from_answer(
    text: &str,
    ids: &[String],
) -> Result<BTreeMap<String, Result<Conversion, StepsError>>, StepsError> {
    let value = json_of(text)?;
    let mut cases = match value {
        serde_json::Value::Object(mut map) if map.contains_key("cases") => {
            match map.remove("cases") {
                Some(serde_json::Value::Object(cases)) => cases,
                _ => {
                    return Err(StepsError(
                        "`cases` is not an object of case id → {\"steps\": [...]}".into(),
                    ));
                }
            }
        }
        single if ids.len() == 1 => {
            let mut one = serde_json::Map::new();
            one.insert(ids[0].clone(), single);
            one
        }
        _ => {
            return Err(StepsError(
                "the JSON has no `cases` object (one entry per case id)".into(),
            ));
        }
    };
    Ok(ids
        .iter()
        .map(|id| {
            let answer = match cases.remove(id) {
                Some(v) => from_value(v),
                None => Err(StepsError(format!("the answer has no entry for {id}"))),
            };
            (id.clone(), answer)
        })
        .collect())
}

/// The JSON of an answer: the first fenced ```json block, else the text from the first `{` or
/// `[` to the last `}` or `]`.
fn json_of(text: &str) -> Result<serde_json::Value, StepsError> {
    let candidate = fenced_json(text).unwrap_or_else(|| bracketed(text).unwrap_or(text));
    serde_json::from_str(candidate.trim())
        .map_err(|e| StepsError(format!("the answer holds no JSON steps ({e})")))
}

/// One case's conversion from its JSON: `{"steps": [...]}`, a bare array, or
/// `{"cannot_express": [...]}`.
fn from_value(value: serde_json::Value) -> Result<Conversion, StepsError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// One answer for several cases: each read and validated on its own, a missing or invalid
    /// one named, the others kept.
    #[test]
    fn a_batch_answer_is_read_case_by_case() {
        let ids: Vec<String> = ["T-A01", "T-A02", "T-A03", "T-A04"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let text = r##"Here they are:
```json
{"cases": {
  "T-A01": {"steps": [{"action": "goto", "url": "/"}, {"action": "screenshot"}]},
  "T-A02": {"cannot_express": [{"step": "an email arrives", "reason": "no mailbox"}]},
  "T-A03": {"steps": [{"action": "click", "selector": "#x"}]}
}}
```"##;
        let by = cases_from_answer(text, &ids).unwrap();
        assert_eq!(by["T-A01"].as_ref().unwrap().steps.len(), 2);
        assert_eq!(by["T-A02"].as_ref().unwrap().cannot_express.len(), 1);
        let bad = by["T-A03"].as_ref().unwrap_err().to_string();
        assert!(bad.contains("goto"), "{bad}");
        let missing = by["T-A04"].as_ref().unwrap_err().to_string();
        assert!(missing.contains("no entry for T-A04"), "{missing}");
        // One case asked: its object alone is read as well; several: a `cases` object is needed.
        let single = r#"{"steps": [{"action": "goto", "url": "/"}]}"#;
        assert!(cases_from_answer(single, &ids[..1]).unwrap()["T-A01"].is_ok());
        assert!(cases_from_answer(single, &ids).is_err());
        assert!(cases_from_answer("no json here", &ids).is_err());
    }
}
