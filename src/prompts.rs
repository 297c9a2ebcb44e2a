//! Prompt templates. The built-in ones are compiled in (`src/prompts/*.md`); a repository can
//! override any of them with `.specs/prompts/<name>.md`, which is also the only place the
//! retrospective may propose changes (Tier 1).

use std::path::Path;

/// Built-in templates by name.
const BUILTIN: [(&str, &str); 21] = [
    ("spec_author", include_str!("prompts/spec_author.md")),
    ("spec_reviewer", include_str!("prompts/spec_reviewer.md")),
    ("implementer", include_str!("prompts/implementer.md")),
    ("task_reviewer", include_str!("prompts/task_reviewer.md")),
    ("envelope_retry", include_str!("prompts/envelope_retry.md")),
    // Wrappers of the text-only (HTTP) backends: system prompt and one per answer shape.
    ("http_system", include_str!("prompts/http_system.md")),
    ("http_files", include_str!("prompts/http_files.md")),
    ("http_envelope", include_str!("prompts/http_envelope.md")),
    (
        "http_classification",
        include_str!("prompts/http_classification.md"),
    ),
    (
        "review_envelope",
        include_str!("prompts/review_envelope.md"),
    ),
    (
        "panel_architect",
        include_str!("prompts/panel_architect.md"),
    ),
    ("panel_paranoid", include_str!("prompts/panel_paranoid.md")),
    ("panel_operator", include_str!("prompts/panel_operator.md")),
    (
        "panel_simplifier",
        include_str!("prompts/panel_simplifier.md"),
    ),
    (
        "panel_user_advocate",
        include_str!("prompts/panel_user_advocate.md"),
    ),
    (
        "panel_product_strategist",
        include_str!("prompts/panel_product_strategist.md"),
    ),
    ("classifier", include_str!("prompts/classifier.md")),
    (
        "contract_reviewer",
        include_str!("prompts/contract_reviewer.md"),
    ),
    ("debate_review", include_str!("prompts/debate_review.md")),
    ("debate_respond", include_str!("prompts/debate_respond.md")),
    ("judge", include_str!("prompts/judge.md")),
];

/// Names of the built-in templates.
pub fn names() -> Vec<&'static str> {
    BUILTIN.iter().map(|(n, _)| *n).collect()
}

/// The template text: the repository override if present, else the built-in one.
pub fn template(repo: &Path, name: &str) -> String {
    let over = repo.join(".specs/prompts").join(format!("{name}.md"));
    if let Ok(text) = std::fs::read_to_string(&over) {
        return text;
    }
    BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| t.to_string())
        .unwrap_or_default()
}

/// Renders `name` with `{{key}}` placeholders replaced; unknown placeholders are left as they
/// are so that a mistake in an override is visible in the prompt, not silently blank.
pub fn render(repo: &Path, name: &str, vars: &[(&str, &str)]) -> String {
    let mut text = template(repo, name);
    for (k, v) in vars {
        text = text.replace(&format!("{{{{{k}}}}}"), v);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every panel persona has its own focused template, and no built-in template names an
    /// agent, vendor or model (debaters and the judge must stay anonymous).
    #[test]
    fn personas_have_templates_and_templates_name_no_vendor() {
        for p in crate::config::Persona::ALL {
            let name = format!("panel_{p}");
            assert!(names().contains(&name.as_str()), "{name}");
        }
        for (name, text) in BUILTIN {
            let lower = text.to_lowercase();
            for word in crate::review::anonymize::VENDOR_WORDS {
                assert!(!lower.contains(word), "template {name} mentions {word}");
            }
        }
    }

    #[test]
    fn override_wins_and_vars_fill() {
        let dir = tempfile::tempdir().unwrap();
        let p = render(dir.path(), "envelope_retry", &[("error", "bad json")]);
        assert!(p.contains("(bad json)"));
        std::fs::create_dir_all(dir.path().join(".specs/prompts")).unwrap();
        std::fs::write(
            dir.path().join(".specs/prompts/envelope_retry.md"),
            "custom {{error}} {{other}}",
        )
        .unwrap();
        assert_eq!(
            render(dir.path(), "envelope_retry", &[("error", "E")]),
            "custom E {{other}}"
        );
    }
}
