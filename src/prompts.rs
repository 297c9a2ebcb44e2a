//! Prompt templates. The built-in ones are compiled in (`src/prompts/*.md`); a repository can
//! override any of them with `.specs/prompts/<name>.md`, which is also the only place the
//! retrospective may propose changes (Tier 1).

use std::path::Path;

/// Built-in templates by name.
const BUILTIN: [(&str, &str); 9] = [
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
