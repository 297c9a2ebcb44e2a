//! Structured browser steps: `.specs/<feature>/test.steps.json`.
//!
//! A playwright case's `Steps` in `test.md` are prose for people. The `e2e_runner` agent turns
//! them into these steps once (per version of the prose), the orchestrator validates them before
//! storing, `inspect` checks the stored file, and the spec reviewer reviews it with the four
//! documents. The browser driver only ever receives steps from this file, so what runs in the
//! browser is exactly what was reviewed.
//!
//! Each entry remembers the sha256 of the prose it was made from (`source`): when the author
//! revises a case, its steps are stale and are converted again; when nothing changed, the agent
//! is not asked twice.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::spec::cases::Case;
use crate::types::STEPS_FILE;

/// Version of the steps file this build writes and reads.
pub const STEPS_VERSION: u32 = 1;

/// Longest explicit wait a step may ask for, so a typo cannot stall a round for an hour.
pub const MAX_WAIT_MS: u64 = 60_000;

/// One browser step, as the driver (`driver/run.js`) executes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Open a URL; relative URLs resolve against `app.url`.
    Goto {
        /// Path (`/`, `/settings`) or absolute http(s) URL.
        url: String,
    },
    /// Click the one element matching a selector.
    Click {
        /// Playwright selector.
        selector: String,
    },
    /// Type a value into an input.
    Fill {
        /// Playwright selector.
        selector: String,
        /// Text to fill in.
        value: String,
    },
    /// Press a key, on an element or the page.
    Press {
        /// Element to focus first; the page when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selector: Option<String>,
        /// Key name as Playwright spells it (`Enter`, `Control+A`).
        key: String,
    },
    /// Choose an option of a `<select>`.
    Select {
        /// Playwright selector of the select element.
        selector: String,
        /// Option value or label.
        value: String,
    },
    /// The element's text contains (or, with `exact`, equals) `text`.
    ExpectText {
        /// Element; `body` when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selector: Option<String>,
        /// Expected text.
        text: String,
        /// Compare the trimmed text for equality instead of containment.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exact: Option<bool>,
    },
    /// The element is visible.
    ExpectVisible {
        /// Playwright selector.
        selector: String,
    },
    /// The page is at this URL (relative URLs resolve against `app.url`).
    ExpectUrl {
        /// Expected URL.
        url: String,
    },
    /// Every matching image has loaded and decoded (`naturalWidth > 0`); at least one matches.
    ExpectImages {
        /// Images to check; every `img` when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selector: Option<String>,
    },
    /// Save a screenshot into the round's evidence directory.
    Screenshot {
        /// Short name used in the file name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Capture the whole scrollable page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        full_page: Option<bool>,
    },
    /// Wait for an element state, or a fixed time.
    WaitFor {
        /// Element to wait for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selector: Option<String>,
        /// `attached`, `detached`, `visible` (default) or `hidden`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<String>,
        /// Milliseconds to wait when no selector is given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ms: Option<u64>,
    },
}

impl Step {
    /// The action name as written in the file.
    pub fn action(&self) -> &'static str {
        match self {
            Step::Goto { .. } => "goto",
            Step::Click { .. } => "click",
            Step::Fill { .. } => "fill",
            Step::Press { .. } => "press",
            Step::Select { .. } => "select",
            Step::ExpectText { .. } => "expect_text",
            Step::ExpectVisible { .. } => "expect_visible",
            Step::ExpectUrl { .. } => "expect_url",
            Step::ExpectImages { .. } => "expect_images",
            Step::Screenshot { .. } => "screenshot",
            Step::WaitFor { .. } => "wait_for",
        }
    }

    /// Problems with this step's values that serde cannot see (empty strings, bad states).
    fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut non_empty = |key: &str, v: &str| {
            if v.trim().is_empty() {
                out.push(format!("`{key}` is empty"));
            }
        };
        match self {
            Step::Goto { url } | Step::ExpectUrl { url } => {
                non_empty("url", url);
                let relative = url.starts_with('/') || !url.contains(':');
                if !(relative || url.starts_with("http://") || url.starts_with("https://")) {
                    out.push(format!(
                        "`url` \"{url}\" is neither a path nor an http(s) URL"
                    ));
                }
            }
            Step::Click { selector } | Step::ExpectVisible { selector } => {
                non_empty("selector", selector)
            }
            Step::Fill { selector, .. } | Step::Select { selector, .. } => {
                non_empty("selector", selector)
            }
            Step::Press { selector, key } => {
                non_empty("key", key);
                if let Some(s) = selector {
                    non_empty("selector", s);
                }
            }
            Step::ExpectText { selector, text, .. } => {
                non_empty("text", text);
                if let Some(s) = selector {
                    non_empty("selector", s);
                }
            }
            Step::ExpectImages { selector } => {
                if let Some(s) = selector {
                    non_empty("selector", s);
                }
            }
            Step::Screenshot { .. } => {}
            Step::WaitFor {
                selector,
                state,
                ms,
            } => {
                match (selector, ms) {
                    (None, None) => out.push("needs `selector` or `ms`".into()),
                    (Some(s), _) => non_empty("selector", s),
                    (None, Some(ms)) if *ms > MAX_WAIT_MS => out.push(format!(
                        "`ms` {ms} is longer than the {MAX_WAIT_MS} ms allowed"
                    )),
                    _ => {}
                }
                if let Some(st) = state
                    && !["attached", "detached", "visible", "hidden"].contains(&st.as_str())
                {
                    out.push(format!(
                        "`state` \"{st}\" is not one of attached, detached, visible, hidden"
                    ));
                }
            }
        }
        out
    }
}

/// The steps of one case and the prose they were made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseSteps {
    /// sha256 of the case's prose ([`source_hash`]) when the steps were made.
    pub source: String,
    /// Agent that converted them (for the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub converted_by: Option<String>,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// `test.steps.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepsFile {
    /// [`STEPS_VERSION`].
    pub version: u32,
    /// Case id → steps.
    pub cases: BTreeMap<String, CaseSteps>,
}

impl Default for StepsFile {
    fn default() -> Self {
        StepsFile {
            version: STEPS_VERSION,
            cases: BTreeMap::new(),
        }
    }
}

/// Why a steps file or an agent's answer could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StepsError(pub String);

/// sha256 of what the steps are made from: the case's title, `Steps` and `Expected`, so that a
/// revision of any of them makes the stored steps stale.
pub fn source_hash(case: &Case) -> String {
    let text = format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}",
        case.id,
        case.title.trim(),
        case.steps.as_deref().unwrap_or_default().trim(),
        case.expected.as_deref().unwrap_or_default().trim()
    );
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Checks a list of steps; each problem names the step number and action.
pub fn validate(steps: &[Step]) -> Vec<String> {
    let mut out = Vec::new();
    if steps.is_empty() {
        out.push("there are no steps".into());
    }
    if !matches!(steps.first(), Some(Step::Goto { .. }) | None) {
        out.push("the first step must be `goto`, so the browser starts on the app".into());
    }
    for (i, s) in steps.iter().enumerate() {
        for p in s.problems() {
            out.push(format!("step {} ({}): {p}", i + 1, s.action()));
        }
    }
    out
}

/// Parses the file's text.
pub fn parse_file(text: &str) -> Result<StepsFile, StepsError> {
    let file: StepsFile = serde_json::from_str(text).map_err(|e| {
        StepsError(format!(
            "is not a valid steps file ({e}); expected {{\"version\": 1, \"cases\": {{\"T-A01\": {{\"source\": \"…\", \"steps\": [{{\"action\": \"goto\", \"url\": \"/\"}}]}}}}}}"
        ))
    })?;
    if file.version != STEPS_VERSION {
        return Err(StepsError(format!(
            "has version {}, this build reads version {STEPS_VERSION}",
            file.version
        )));
    }
    Ok(file)
}

/// Loads the steps file of a feature directory: `Ok(None)` when there is none.
pub fn load(feature_dir: &Path) -> Result<Option<StepsFile>, StepsError> {
    let path = feature_dir.join(STEPS_FILE);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    match crate::util::read_to_string_max(&path, crate::fsx::Limit::Steps) {
        Ok(text) => parse_file(&text).map(Some),
        Err(e) => Err(StepsError(format!("cannot be read: {e}"))),
    }
}

/// Writes the steps file (pretty JSON, cases sorted by id, trailing newline).
pub fn save(feature_dir: &Path, file: &StepsFile) -> crate::error::Result<()> {
    let json = serde_json::to_string_pretty(file).unwrap_or_default();
    crate::util::write_text(&feature_dir.join(STEPS_FILE), &(json + "\n"))
}

/// Reads steps out of an agent's answer: the first fenced ```json block, else the text from the
/// first `{` or `[` to the last `}` or `]`; accepts `{"steps": [...]}` or a bare array.
pub fn from_answer(text: &str) -> Result<Vec<Step>, StepsError> {
    let candidate = fenced_json(text).unwrap_or_else(|| bracketed(text).unwrap_or(text));
    let value: serde_json::Value = serde_json::from_str(candidate.trim())
        .map_err(|e| StepsError(format!("the answer holds no JSON steps ({e})")))?;
    let list = match value {
        serde_json::Value::Array(_) => value,
        serde_json::Value::Object(mut map) => map
            .remove("steps")
            .ok_or_else(|| StepsError("the JSON object has no `steps` array".into()))?,
        _ => {
            return Err(StepsError(
                "the JSON is neither an object nor an array".into(),
            ));
        }
    };
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
    Ok(steps)
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

/// What is wrong with the stored steps of `case`, if anything: `None` means they are present,
/// valid and made from the current prose.
pub fn staleness(file: Option<&StepsFile>, case: &Case) -> Option<String> {
    let Some(entry) = file.and_then(|f| f.cases.get(&case.id)) else {
        return Some(format!(
            "{} has no structured steps in {STEPS_FILE}",
            case.id
        ));
    };
    if entry.source != source_hash(case) {
        return Some(format!(
            "the steps of {} in {STEPS_FILE} were made from other prose (the case changed since)",
            case.id
        ));
    }
    let problems = validate(&entry.steps);
    if !problems.is_empty() {
        return Some(format!(
            "the steps of {} in {STEPS_FILE} are invalid: {}",
            case.id,
            problems.join("; ")
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case() -> Case {
        Case {
            id: "T-A05".into(),
            title: "Toggle in the browser".into(),
            steps: Some("open the page, click the toggle".into()),
            expected: Some("dark".into()),
            verify: Some("playwright".into()),
            ..Case::default()
        }
    }

    #[test]
    fn every_action_round_trips_and_unknown_fields_are_refused() {
        let text = r##"[{"action":"goto","url":"/"},{"action":"click","selector":"#t"},
            {"action":"fill","selector":"#n","value":"x"},{"action":"press","key":"Enter"},
            {"action":"select","selector":"#s","value":"a"},{"action":"expect_text","text":"Notes"},
            {"action":"expect_visible","selector":"h1"},{"action":"expect_url","url":"/"},
            {"action":"screenshot","name":"s"},{"action":"wait_for","ms":10}]"##;
        let steps = from_answer(text).unwrap();
        assert_eq!(steps.len(), 10);
        let back: Vec<Step> =
            serde_json::from_str(&serde_json::to_string(&steps).unwrap()).unwrap();
        assert_eq!(back, steps);
        let e = from_answer(r#"[{"action":"goto","url":"/","bogus":1}]"#).unwrap_err();
        assert!(e.0.contains("bogus"), "{e}");
        let e = from_answer(r#"[{"action":"hover","selector":"a"}]"#).unwrap_err();
        assert!(e.0.contains("hover"), "{e}");
    }

    #[test]
    fn answers_in_prose_with_a_fenced_block_or_an_object_are_read() {
        let text =
            "Here you go:\n```json\n{\"steps\": [{\"action\": \"goto\", \"url\": \"/\"}]}\n```\n";
        assert_eq!(from_answer(text).unwrap().len(), 1);
        let text = "Sure. {\"steps\": [{\"action\": \"goto\", \"url\": \"/\"}]} Done.";
        assert_eq!(from_answer(text).unwrap().len(), 1);
        assert!(from_answer("no json here").is_err());
    }

    #[test]
    fn validation_names_the_step_and_the_problem() {
        let steps = vec![
            Step::Click {
                selector: "#t".into(),
            },
            Step::WaitFor {
                selector: None,
                state: Some("gone".into()),
                ms: None,
            },
            Step::Goto {
                url: "ftp://x".into(),
            },
        ];
        let p = validate(&steps).join("\n");
        assert!(p.contains("first step must be `goto`"), "{p}");
        assert!(
            p.contains("step 2 (wait_for): needs `selector` or `ms`"),
            "{p}"
        );
        assert!(p.contains("`state` \"gone\""), "{p}");
        assert!(p.contains("step 3 (goto)"), "{p}");
    }

    #[test]
    fn steps_are_stale_when_the_prose_changes() {
        let c = case();
        let mut file = StepsFile::default();
        assert!(
            staleness(Some(&file), &c)
                .unwrap()
                .contains("no structured steps")
        );
        file.cases.insert(
            c.id.clone(),
            CaseSteps {
                source: source_hash(&c),
                converted_by: None,
                steps: vec![Step::Goto { url: "/".into() }],
            },
        );
        assert_eq!(staleness(Some(&file), &c), None);
        let mut revised = c.clone();
        revised.steps = Some("open the page, click the toggle twice".into());
        assert!(
            staleness(Some(&file), &revised)
                .unwrap()
                .contains("other prose")
        );
        let text = serde_json::to_string(&file).unwrap();
        assert_eq!(parse_file(&text).unwrap(), file);
        assert!(
            parse_file("{\"version\": 2, \"cases\": {}}")
                .unwrap_err()
                .0
                .contains("version 2")
        );
    }
}
