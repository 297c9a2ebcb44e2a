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

/// Longest per-step `timeout_ms`: a slow step may wait longer than `evaluate.step_timeout_s`,
/// but not so long that one case holds a round for minutes.
pub const MAX_STEP_TIMEOUT_MS: u64 = 60_000;

/// The one placeholder a step's strings may hold: the driver replaces it with a value unique to
/// the run, so a case can type something no earlier run left behind and then look for it.
pub const RUN_ID: &str = "{{run_id}}";

/// The HTTP methods `expect_request` may name.
pub const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

pub mod answer;
pub mod check;
pub mod reconvert;

/// One browser step as the driver (`driver/run.js`) executes it: the action and its optional
/// per-step timeout. Written flat in the file (`{"action": "click", "selector": "…",
/// "timeout_ms": 5000}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// What the step does.
    pub action: Action,
    /// This step's timeout in milliseconds, instead of `evaluate.step_timeout_s` (at most
    /// [`MAX_STEP_TIMEOUT_MS`]).
    pub timeout_ms: Option<u64>,
}

impl From<Action> for Step {
    fn from(action: Action) -> Step {
        Step {
            action,
            timeout_ms: None,
        }
    }
}

impl Serialize for Step {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut value = serde_json::to_value(&self.action).map_err(serde::ser::Error::custom)?;
        if let (Some(ms), Some(map)) = (self.timeout_ms, value.as_object_mut()) {
            map.insert("timeout_ms".into(), ms.into());
        }
        value.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Step {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Step, D::Error> {
        let mut value = serde_json::Value::deserialize(d)?;
        let timeout_ms = match value.as_object_mut().and_then(|m| m.remove("timeout_ms")) {
            None => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "`timeout_ms` must be a whole number of milliseconds, got {v}"
                ))
            })?),
        };
        let action = Action::deserialize(value).map_err(serde::de::Error::custom)?;
        Ok(Step { action, timeout_ms })
    }
}

/// Kinds of browser dialog (`window.alert`, `confirm`, `prompt`, and the leave-page question).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DialogType {
    /// `alert()`.
    Alert,
    /// `confirm()`.
    Confirm,
    /// `prompt()`.
    Prompt,
    /// The browser's "leave this page?" question.
    Beforeunload,
}

/// What a browser step does, as the driver (`driver/run.js`) executes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
#[strum(serialize_all = "snake_case")]
pub enum Action {
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
    /// Reload the page (what a person does with F5; not a fresh `goto`).
    Reload {},
    /// Accept the next dialog (`confirm`, `prompt`, `alert`) that opens, optionally typing into
    /// a `prompt`.
    AcceptDialog {
        /// Text for a `prompt()` dialog.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt_text: Option<String>,
    },
    /// Dismiss (cancel) the next dialog that opens.
    DismissDialog {},
    /// The next dialog not yet expected opened (answered by an earlier accept/dismiss step),
    /// of this type and with a message containing `message`.
    ExpectDialog {
        /// Kind of dialog.
        #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
        kind: Option<DialogType>,
        /// Text its message contains.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The number of elements matching a selector: exactly `count`, or within `min`..`max`.
    ExpectCount {
        /// Playwright selector.
        selector: String,
        /// Exact number.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u32>,
        /// At least this many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<u32>,
        /// At most this many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<u32>,
    },
    /// An input, textarea or select holds exactly this value.
    ExpectValue {
        /// Playwright selector of the one field.
        selector: String,
        /// Expected value.
        value: String,
    },
    /// The page sent (or, with `"seen": false`, did not send) a request since the case began.
    ExpectRequest {
        /// HTTP method; any when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        method: Option<String>,
        /// URL pattern: `*` matches any characters; a pattern starting with `/` is matched
        /// against the path and query, any other against the whole URL.
        url: String,
        /// The response status one matching request got.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// `false`: no matching request may be sent (watched for `timeout_ms`, 1000 ms when
        /// absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seen: Option<bool>,
    },
}

impl Action {
    /// The action name as written in the file.
    pub fn name(&self) -> &'static str {
        self.into()
    }

    /// The selector the step must find an element with (the ones whose "matches nothing"
    /// makes a case worth converting again against the built app).
    pub fn selector(&self) -> Option<&str> {
        match self {
            Action::Click { selector }
            | Action::ExpectVisible { selector }
            | Action::Fill { selector, .. }
            | Action::Select { selector, .. }
            | Action::ExpectValue { selector, .. } => Some(selector),
            Action::Press { selector, .. }
            | Action::ExpectText { selector, .. }
            | Action::ExpectImages { selector }
            | Action::WaitFor { selector, .. } => selector.as_deref(),
            _ => None,
        }
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
    /// The steps, in order (none when the case cannot be expressed).
    pub steps: Vec<Step>,
    /// The parts of the case the converter said no step can check, each with its reason. Such a
    /// case is never run (it would pass on what was left): it goes back to the author.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cannot_express: Vec<answer::Unexpressible>,
}

/// `test.steps.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepsFile {
    /// [`STEPS_VERSION`].
    pub version: u32,
    /// Case id → steps.
    pub cases: BTreeMap<String, CaseSteps>,
    /// Case id → the earlier versions of its steps that a re-conversion against the built app
    /// replaced (oldest first); the case's current version is `history.len() + 1`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub history: BTreeMap<String, Vec<reconvert::Replaced>>,
}

impl StepsFile {
    /// The version number of a case's current steps: 1 as converted from the design, one more
    /// for each re-conversion against the built app.
    pub fn version_of(&self, case_id: &str) -> u32 {
        self.history.get(case_id).map_or(0, Vec::len) as u32 + 1
    }
}

impl Default for StepsFile {
    fn default() -> Self {
        StepsFile {
            version: STEPS_VERSION,
            cases: BTreeMap::new(),
            history: BTreeMap::new(),
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

/// Why the stored steps of `case` must be made (again) before the case can run: `None` when
/// they are present, valid and made from the current prose, or when the converter said, for
/// this very prose, that the case cannot be expressed (asking again would get the same answer;
/// the author must rewrite the case, see [`staleness`]).
pub fn needs_conversion(file: Option<&StepsFile>, case: &Case) -> Option<String> {
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
    if !entry.cannot_express.is_empty() {
        return None;
    }
    let problems = check::validate(&entry.steps);
    if !problems.is_empty() {
        return Some(format!(
            "the steps of {} in {STEPS_FILE} are invalid: {}",
            case.id,
            problems.join("; ")
        ));
    }
    None
}

/// What is wrong with the stored steps of `case`, if anything: `None` means they are present,
/// valid, made from the current prose, and check the whole case. A case the converter could
/// not express is reported with its reasons, so that `inspect` sends it back to the author.
pub fn staleness(file: Option<&StepsFile>, case: &Case) -> Option<String> {
    if let Some(problem) = needs_conversion(file, case) {
        return Some(problem);
    }
    let entry = file.and_then(|f| f.cases.get(&case.id))?;
    if entry.cannot_express.is_empty() {
        return None;
    }
    let parts: Vec<String> = entry
        .cannot_express
        .iter()
        .map(|u| format!("\"{}\" ({})", u.step.trim(), u.reason.trim()))
        .collect();
    Some(format!(
        "{} cannot be checked in a browser as written: {}; reword the case so that every step and expectation is something a person sees or does in the page, or verify it with a command case",
        case.id,
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::answer::from_answer;
    use super::check::validate;
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

    fn goto() -> Step {
        Action::Goto { url: "/".into() }.into()
    }

    #[test]
    fn every_action_round_trips_and_unknown_fields_are_refused() {
        let text = r##"[{"action":"goto","url":"/"},{"action":"click","selector":"#t"},
            {"action":"fill","selector":"#n","value":"x {{run_id}}"},{"action":"press","key":"Enter"},
            {"action":"select","selector":"#s","value":"a"},{"action":"expect_text","text":"Notes"},
            {"action":"expect_visible","selector":"h1"},{"action":"expect_url","url":"/"},
            {"action":"screenshot","name":"s"},{"action":"wait_for","ms":10},
            {"action":"reload","timeout_ms":5000},{"action":"accept_dialog","prompt_text":"Ada"},
            {"action":"click","selector":"#p"},{"action":"expect_dialog","type":"prompt"},
            {"action":"dismiss_dialog"},{"action":"click","selector":"#d"},
            {"action":"expect_count","selector":"li","count":2},
            {"action":"expect_count","selector":"li","min":1,"max":3},
            {"action":"expect_value","selector":"#n","value":"x {{run_id}}"},
            {"action":"expect_request","method":"DELETE","url":"/api/*","seen":false},
            {"action":"expect_request","url":"/api/*","status":204}]"##;
        let steps = from_answer(text).unwrap().steps;
        assert_eq!(steps.len(), 21);
        assert_eq!(steps[10].timeout_ms, Some(5000));
        assert_eq!(steps[10].action, Action::Reload {});
        let back: Vec<Step> =
            serde_json::from_str(&serde_json::to_string(&steps).unwrap()).unwrap();
        assert_eq!(back, steps);
        assert!(
            serde_json::to_string(&steps[10])
                .unwrap()
                .contains("\"timeout_ms\":5000")
        );
        let e = from_answer(r#"[{"action":"goto","url":"/","bogus":1}]"#).unwrap_err();
        assert!(e.0.contains("bogus"), "{e}");
        let e = from_answer(r#"[{"action":"hover","selector":"a"}]"#).unwrap_err();
        assert!(e.0.contains("hover"), "{e}");
        let e = from_answer(r#"[{"action":"goto","url":"/","timeout_ms":"5s"}]"#).unwrap_err();
        assert!(e.0.contains("timeout_ms"), "{e}");
    }

    #[test]
    fn answers_in_prose_with_a_fenced_block_or_an_object_are_read() {
        let text =
            "Here you go:\n```json\n{\"steps\": [{\"action\": \"goto\", \"url\": \"/\"}]}\n```\n";
        assert_eq!(from_answer(text).unwrap().steps.len(), 1);
        let text = "Sure. {\"steps\": [{\"action\": \"goto\", \"url\": \"/\"}]} Done.";
        assert_eq!(from_answer(text).unwrap().steps.len(), 1);
        assert!(from_answer("no json here").is_err());
    }

    #[test]
    fn a_case_that_cannot_be_expressed_keeps_no_steps_and_goes_back_to_the_author() {
        let answer = r#"{"steps": [{"action": "goto", "url": "/"}],
            "cannot_express": [{"step": "an email arrives", "reason": "no step reads a mailbox"}]}"#;
        let conv = from_answer(answer).unwrap();
        assert!(conv.steps.is_empty(), "no partial steps that could pass");
        assert_eq!(conv.cannot_express[0].reason, "no step reads a mailbox");
        let e = from_answer(r#"{"cannot_express": [{"step": "x", "reason": " "}]}"#).unwrap_err();
        assert!(e.0.contains("`reason`"), "{e}");
        let c = case();
        let mut file = StepsFile::default();
        file.cases.insert(
            c.id.clone(),
            CaseSteps {
                source: source_hash(&c),
                converted_by: None,
                steps: conv.steps,
                cannot_express: conv.cannot_express,
            },
        );
        assert_eq!(needs_conversion(Some(&file), &c), None, "not asked again");
        let problem = staleness(Some(&file), &c).unwrap();
        assert!(
            problem.contains("cannot be checked in a browser")
                && problem.contains("\"an email arrives\" (no step reads a mailbox)"),
            "{problem}"
        );
        let text = serde_json::to_string(&file).unwrap();
        assert_eq!(parse_file(&text).unwrap(), file);
    }

    #[test]
    fn validation_names_the_step_and_the_problem() {
        let steps: Vec<Step> = vec![
            Action::Click {
                selector: "#t".into(),
            }
            .into(),
            Action::WaitFor {
                selector: None,
                state: Some("gone".into()),
                ms: None,
            }
            .into(),
            Action::Goto {
                url: "ftp://x".into(),
            }
            .into(),
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

    /// Shapes converters wrote that are accepted (docs/spec-format.md lists them): an empty
    /// element (`expect_text` with `""` and `exact: true`), none left (`expect_count` with 0).
    /// An empty `text` without `exact` would hold on any page, and stays refused.
    #[test]
    fn an_empty_element_and_a_count_of_zero_are_accepted_an_empty_containment_is_not() {
        let parse = |json: &str| -> Vec<Step> { serde_json::from_str(json).unwrap() };
        let ok = parse(
            r##"[{"action":"goto","url":"/"},
                {"action":"expect_text","selector":"#error","text":"","exact":true},
                {"action":"expect_count","selector":"li:has-text(\"milk\")","count":0}]"##,
        );
        assert_eq!(validate(&ok), Vec::<String>::new());
        for bad in [
            r##"[{"action":"goto","url":"/"},{"action":"expect_text","selector":"#e","text":""}]"##,
            r#"[{"action":"goto","url":"/"},{"action":"expect_text","text":"","exact":false}]"#,
            r#"[{"action":"goto","url":"/"},{"action":"expect_text","text":" ","exact":true}]"#,
        ] {
            let p = validate(&parse(bad)).join("\n");
            assert!(p.contains("`text` is empty"), "{bad}: {p}");
        }
    }

    #[test]
    fn new_steps_are_checked_for_what_the_driver_could_never_hold() {
        let steps: Vec<Step> = vec![
            goto(),
            Action::ExpectDialog {
                kind: Some(DialogType::Confirm),
                message: None,
            }
            .into(),
            Action::ExpectCount {
                selector: "li".into(),
                count: Some(1),
                min: Some(1),
                max: None,
            }
            .into(),
            Action::ExpectCount {
                selector: "li".into(),
                count: None,
                min: Some(3),
                max: Some(2),
            }
            .into(),
            Action::ExpectRequest {
                method: Some("delete".into()),
                url: "/x".into(),
                status: Some(204),
                seen: Some(false),
            }
            .into(),
            Action::Fill {
                selector: "#n".into(),
                value: "{{user}}".into(),
            }
            .into(),
            Step {
                action: Action::Reload {},
                timeout_ms: Some(MAX_STEP_TIMEOUT_MS + 1),
            },
            Action::DismissDialog {}.into(),
        ];
        let p = validate(&steps).join("\n");
        for want in [
            "step 2 (expect_dialog): has no accept_dialog or dismiss_dialog before it",
            "step 3 (expect_count): gives `count` and `min`/`max`",
            "step 4 (expect_count): `min` 3 is greater than `max` 2",
            "step 5 (expect_request): `method` \"delete\" is not one of GET",
            "step 5 (expect_request): a request that must not be sent has no `status`",
            "step 6 (fill): `value` holds the placeholder `{{user}}`",
            "step 7 (reload): `timeout_ms` 60001 is not between 1 and the 60000 ms allowed",
            "step 8 (dismiss_dialog): is the last step",
        ] {
            assert!(p.contains(want), "{want}\n{p}");
        }
    }

    /// Every example the converter is shown parses with this parser: each `- {…}` line of the
    /// action list is a valid step, and each fenced answer is a usable conversion.
    #[test]
    fn every_example_in_the_conversion_template_parses() {
        let template = include_str!("../prompts/e2e_steps.md");
        let mut actions = std::collections::BTreeSet::new();
        for line in template.lines().filter(|l| l.starts_with("- {")) {
            let json = &line[2..=line.rfind('}').unwrap()];
            let step: Step = serde_json::from_str(json).unwrap_or_else(|e| panic!("{line}: {e}"));
            let problems = step.action.problems();
            assert!(problems.is_empty(), "{line}: {problems:?}");
            actions.insert(step.action.name());
        }
        assert_eq!(actions.len(), 18, "every action is shown: {actions:?}");
        let blocks: Vec<&str> = template
            .split("```json\n")
            .skip(1)
            .map(|b| b.split("```").next().unwrap())
            .collect();
        assert_eq!(blocks.len(), 1, "one answer for two cases");
        let ids = ["T-A03".to_string(), "T-A04".to_string()];
        let by = answer::cases_from_answer(blocks[0], &ids).unwrap();
        let steps = by["T-A03"].as_ref().expect("the steps example parses");
        assert_eq!(steps.steps.len(), 8);
        let unexpressed = by["T-A04"]
            .as_ref()
            .expect("the cannot_express example parses");
        assert_eq!(unexpressed.cannot_express.len(), 1);
    }

    /// The examples teach role and text locators, which survive the implementation's own ids
    /// and classes: every example that acts on, counts or reads an input uses one; CSS is
    /// shown only for reading a heading's text and waiting on an attribute's state.
    #[test]
    fn the_conversion_examples_prefer_role_and_text_locators() {
        let template = include_str!("../prompts/e2e_steps.md");
        for line in template.lines().filter(|l| l.starts_with("- {")) {
            let json = &line[2..=line.rfind('}').unwrap()];
            let step: Step = serde_json::from_str(json).unwrap();
            let Some(selector) = step.action.selector() else {
                continue;
            };
            let css_allowed = matches!(
                step.action,
                Action::ExpectText { .. } | Action::WaitFor { .. }
            );
            assert!(
                selector.contains("role=") || selector.contains("text=") || css_allowed,
                "{line}"
            );
        }
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
                steps: vec![goto()],
                cannot_express: Vec::new(),
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
