//! Checks of browser steps that serde cannot make: empty strings, numbers out of range, unknown
//! placeholders, and the order of dialog steps (a dialog nothing answers fails its case, so an
//! `expect_dialog` with no answer armed before it could never pass).

use super::{Action, MAX_STEP_TIMEOUT_MS, MAX_WAIT_MS, METHODS, RUN_ID, Step};

impl Action {
    /// Every string the step carries, with its key (for the placeholder check).
    fn strings(&self) -> Vec<(&'static str, &str)> {
        fn push<'a>(
            out: &mut Vec<(&'static str, &'a str)>,
            k: &'static str,
            v: Option<&'a String>,
        ) {
            if let Some(v) = v {
                out.push((k, v.as_str()));
            }
        }
        let mut out: Vec<(&'static str, &str)> = Vec::new();
        match self {
            Action::Goto { url } | Action::ExpectUrl { url } => push(&mut out, "url", Some(url)),
            Action::Click { selector } | Action::ExpectVisible { selector } => {
                push(&mut out, "selector", Some(selector))
            }
            Action::Fill { selector, value }
            | Action::Select { selector, value }
            | Action::ExpectValue { selector, value } => {
                push(&mut out, "selector", Some(selector));
                push(&mut out, "value", Some(value));
            }
            Action::Press { selector, key } => {
                push(&mut out, "selector", selector.as_ref());
                push(&mut out, "key", Some(key));
            }
            Action::ExpectText { selector, text, .. } => {
                push(&mut out, "selector", selector.as_ref());
                push(&mut out, "text", Some(text));
            }
            Action::ExpectImages { selector } | Action::WaitFor { selector, .. } => {
                push(&mut out, "selector", selector.as_ref())
            }
            Action::Screenshot { name, .. } => push(&mut out, "name", name.as_ref()),
            Action::AcceptDialog { prompt_text } => {
                push(&mut out, "prompt_text", prompt_text.as_ref())
            }
            Action::ExpectDialog { message, .. } => push(&mut out, "message", message.as_ref()),
            Action::ExpectCount { selector, .. } => push(&mut out, "selector", Some(selector)),
            Action::ExpectRequest { url, method, .. } => {
                push(&mut out, "url", Some(url));
                push(&mut out, "method", method.as_ref());
            }
            Action::Reload {} | Action::DismissDialog {} => {}
        }
        out
    }

    /// Problems with this step's values that serde cannot see (empty strings, bad states,
    /// numbers out of range, unknown placeholders).
    pub(super) fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        // `expect_text` with an empty `text` and `exact: true` asserts an empty element.
        let empty_element = matches!(
            self,
            Action::ExpectText {
                exact: Some(true),
                ..
            }
        );
        for (key, v) in self.strings() {
            let optional_text = matches!(key, "value" | "prompt_text" | "name")
                || (key == "text" && empty_element && v.is_empty());
            if v.trim().is_empty() && !optional_text {
                out.push(format!("`{key}` is empty"));
            }
            if let Some(p) = unknown_placeholder(v) {
                out.push(format!(
                    "`{key}` holds the placeholder `{p}`; the only one the driver fills in is `{RUN_ID}`"
                ));
            }
        }
        match self {
            Action::Goto { url } | Action::ExpectUrl { url } => {
                let relative = url.starts_with('/') || !url.contains(':');
                if !(relative || url.starts_with("http://") || url.starts_with("https://")) {
                    out.push(format!(
                        "`url` \"{url}\" is neither a path nor an http(s) URL"
                    ));
                }
            }
            Action::WaitFor {
                selector,
                state,
                ms,
            } => {
                match (selector, ms) {
                    (None, None) => out.push("needs `selector` or `ms`".into()),
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
            Action::ExpectCount {
                count, min, max, ..
            } => match (count, min, max) {
                (None, None, None) => out.push("needs `count`, or `min` and/or `max`".into()),
                (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                    out.push("gives `count` and `min`/`max`; use one or the other".into())
                }
                (None, Some(lo), Some(hi)) if lo > hi => {
                    out.push(format!("`min` {lo} is greater than `max` {hi}"))
                }
                _ => {}
            },
            Action::ExpectRequest {
                method,
                status,
                seen,
                ..
            } => {
                if let Some(m) = method
                    && !METHODS.contains(&m.as_str())
                {
                    out.push(format!(
                        "`method` \"{m}\" is not one of {}",
                        METHODS.join(", ")
                    ));
                }
                if let Some(code) = status
                    && !(100..=599).contains(code)
                {
                    out.push(format!("`status` {code} is not an HTTP status"));
                }
                if status.is_some() && *seen == Some(false) {
                    out.push("a request that must not be sent has no `status`".into());
                }
            }
            _ => {}
        }
        out
    }
}

/// Checks a list of steps; each problem names the step number and action.
pub fn validate(steps: &[Step]) -> Vec<String> {
    let mut out = Vec::new();
    if steps.is_empty() {
        out.push("there are no steps".into());
    }
    if !matches!(
        steps.first().map(|s| &s.action),
        Some(Action::Goto { .. }) | None
    ) {
        out.push("the first step must be `goto`, so the browser starts on the app".into());
    }
    let mut armed = false;
    for (i, s) in steps.iter().enumerate() {
        let mut problems = s.action.problems();
        if let Some(ms) = s.timeout_ms
            && !(1..=MAX_STEP_TIMEOUT_MS).contains(&ms)
        {
            problems.push(format!(
                "`timeout_ms` {ms} is not between 1 and the {MAX_STEP_TIMEOUT_MS} ms allowed"
            ));
        }
        match &s.action {
            Action::AcceptDialog { .. } | Action::DismissDialog {} => {
                armed = true;
                if i + 1 == steps.len() {
                    problems
                        .push("is the last step, so nothing can open the dialog it answers".into());
                }
            }
            // A dialog nothing answers is dismissed and fails the case, so expecting one
            // without arming an answer first can never pass.
            Action::ExpectDialog { .. } if !armed => problems.push(
                "has no accept_dialog or dismiss_dialog before it to answer the dialog".into(),
            ),
            _ => {}
        }
        for p in problems {
            out.push(format!("step {} ({}): {p}", i + 1, s.action.name()));
        }
    }
    out
}

/// The first `{{…}}` in `text` that is not [`RUN_ID`].
fn unknown_placeholder(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start..];
        let end = after.find("}}").map_or(after.len(), |e| e + 2);
        let found = &after[..end];
        if found != RUN_ID {
            return Some(found.to_string());
        }
        rest = &after[end..];
    }
    None
}
