//! Re-conversion against the built app. A case's steps are converted from the design, before
//! the code exists; when a step's selector matches nothing of the page that was built, the
//! evaluate phase asks the converter once more, showing it the old steps, the step that matched
//! nothing and what the page really holds. This module holds what that new version is checked
//! against before it may run, and how the replaced version is kept in `test.steps.json`.

use serde::{Deserialize, Serialize};

use super::{Action, Step};

/// A version of a case's steps that a re-conversion replaced, kept in `test.steps.json`
/// (`history`), so that what ran before and why it was replaced stays on record beside what
/// runs now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replaced {
    /// The version these steps were (1: converted from the design in `spec_generate`).
    pub version: u32,
    /// Evaluate round in which they were replaced.
    pub round: u32,
    /// Agent that had converted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub converted_by: Option<String>,
    /// The steps as they were.
    pub steps: Vec<Step>,
    /// Why they were replaced: the step whose selector matched nothing of the built page.
    pub because: String,
}

/// The checks a step makes (every `expect_*`, the dialog answers, a wait for an element): the
/// actions whose presence is what a case tests. A re-conversion may rewrite how a step finds
/// its element, never check less than the version it replaces.
fn check_of(action: &Action) -> Option<&'static str> {
    let name = action.name();
    let waits = matches!(
        action,
        Action::WaitFor {
            selector: Some(_),
            ..
        }
    );
    (name.starts_with("expect_") || name.ends_with("_dialog") || waits).then_some(name)
}

/// The review a re-converted version must pass before it runs (its steps were already
/// validated when the answer was read): it makes at least as many checks of each kind as the
/// version it replaces, so a converter cannot turn a failing case into a passing one by
/// dropping the check that failed. Returns what it dropped; empty means it may run.
pub fn review(previous: &[Step], new: &[Step]) -> Vec<String> {
    let count = |steps: &[Step]| {
        let mut by: std::collections::BTreeMap<&'static str, usize> = Default::default();
        for s in steps {
            if let Some(kind) = check_of(&s.action) {
                *by.entry(kind).or_default() += 1;
            }
        }
        by
    };
    let (before, after) = (count(previous), count(new));
    before
        .iter()
        .filter_map(|(kind, n)| {
            let m = after.get(kind).copied().unwrap_or(0);
            (m < *n).then(|| {
                format!("it has {m} `{kind}` step(s) where the version it replaces had {n}")
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(json: &str) -> Vec<Step> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_new_version_may_find_elements_differently_but_never_check_less() {
        let old = steps(
            r##"[{"action":"goto","url":"/"},{"action":"click","selector":"role=button[name=\"Remove\"]"},
                {"action":"expect_count","selector":"li","count":2},{"action":"wait_for","selector":"#done"},
                {"action":"wait_for","ms":100}]"##,
        );
        let same = steps(
            r#"[{"action":"goto","url":"/"},{"action":"click","selector":"role=button[name=\"Delete\"]"},
                {"action":"expect_count","selector":"role=listitem","count":2},{"action":"wait_for","selector":"text=Done"}]"#,
        );
        assert!(review(&old, &same).is_empty(), "{:?}", review(&old, &same));
        let weaker = steps(
            r#"[{"action":"goto","url":"/"},{"action":"click","selector":"role=button[name=\"Delete\"]"},
                {"action":"screenshot"}]"#,
        );
        let problems = review(&old, &weaker).join("; ");
        assert!(
            problems.contains("0 `expect_count` step(s) where the version it replaces had 1")
                && problems.contains("0 `wait_for`"),
            "{problems}"
        );
    }
}
