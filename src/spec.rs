//! Reading the four spec documents (`requirement.md`, `design.md`, `tasks.md`, `test.md`).
//!
//! The author writes free Markdown; only the few line shapes documented in
//! `docs/spec-format.md` are parsed. Parsing never fails: what is missing or malformed is what
//! `inspect` reports, so the parsers return what they found and let the checks judge it.

/// A regex compiled once, the first time the line that names it runs.
macro_rules! re {
    ($pattern:literal) => {{
        static RE: std::sync::LazyLock<regex::Regex> =
            std::sync::LazyLock::new(|| regex::Regex::new($pattern).expect("static regex"));
        &*RE
    }};
}

pub mod cases;
pub mod export;
pub mod ids;
pub mod import;
pub mod tasks;

use std::path::{Path, PathBuf};

use crate::fsx::Limit;

/// The four documents, in the order they are written and reviewed.
pub const DOCS: [&str; 4] = ["requirement.md", "design.md", "tasks.md", "test.md"];

/// The texts of the four documents (empty when missing).
#[derive(Debug, Clone, Default)]
pub struct SpecDocs {
    /// requirement.md
    pub requirement: String,
    /// design.md
    pub design: String,
    /// tasks.md
    pub tasks: String,
    /// test.md
    pub test: String,
    /// Which documents are missing or empty.
    pub missing: Vec<&'static str>,
    /// `test.steps.json`, when present: the structured browser steps (not one of the four
    /// documents, but inspected and reviewed with them).
    pub steps: Option<String>,
    /// Documents (or the steps file) refused unread because they are larger than
    /// [`Limit::SpecDoc`] / [`Limit::Steps`], with the reason; their text is left empty.
    pub refused: Vec<(&'static str, String)>,
    /// `imported.json`, when the spec was imported from another tool's format: where each id
    /// came from, so inspection findings name the original file and line.
    pub import: Option<import::ImportMap>,
}

impl SpecDocs {
    /// Reads the documents from a feature directory.
    pub fn read(dir: &Path) -> SpecDocs {
        let mut refused = Vec::new();
        // A file larger than its limit is refused with the reason, without its leading
        // `<path>: ` (the inspection report names the file in its own column).
        let mut read = |name: &'static str, limit| match crate::util::read_to_string_max(
            &dir.join(name),
            limit,
        ) {
            Ok(text) => Some(text),
            Err(e) => {
                if let crate::error::Error::TooLarge { path, .. } = &e {
                    let text = e.to_string();
                    let reason = text.strip_prefix(&format!("{}: ", path.display()));
                    refused.push((name, reason.unwrap_or(&text).to_string()));
                }
                None
            }
        };
        let texts = DOCS.map(|name| read(name, Limit::SpecDoc));
        let steps = read(crate::types::STEPS_FILE, Limit::Steps);
        let missing = DOCS
            .into_iter()
            .zip(&texts)
            .filter(|(name, text)| match text {
                Some(text) => text.trim().is_empty(),
                None => !refused.iter().any(|(r, _)| r == name),
            })
            .map(|(name, _)| name)
            .collect();
        let [requirement, design, tasks, test] = texts.map(Option::unwrap_or_default);
        SpecDocs {
            requirement,
            design,
            tasks,
            test,
            missing,
            steps,
            refused,
            import: import::ImportMap::read(dir),
        }
    }

    /// (file name, text) pairs.
    pub fn all(&self) -> [(&'static str, &str); 4] {
        [
            ("requirement.md", &self.requirement),
            ("design.md", &self.design),
            ("tasks.md", &self.tasks),
            ("test.md", &self.test),
        ]
    }
}

/// docs/spec-format.md, whose complete example the spec author is shown: the documentation and
/// the prompt cannot drift apart, and a unit test parses the example with the real parsers.
const SPEC_FORMAT: &str = include_str!("../docs/spec-format.md");

/// The complete example of each document in docs/spec-format.md: (file name, text), in the
/// order of [`DOCS`]. Each is the fenced block after a `<!-- example: <file> -->` line.
pub fn examples() -> Vec<(&'static str, &'static str)> {
    DOCS.iter()
        .filter_map(|doc| {
            let marker = format!("<!-- example: {doc} -->");
            let after = &SPEC_FORMAT[SPEC_FORMAT.find(&marker)? + marker.len()..];
            let open = after.find("```")?;
            let body = &after[open..];
            let body = &body[body.find('\n')? + 1..];
            // The block ends at the first fence line of its own (the examples hold none inside).
            let end = body.find("\n```").map(|i| i + 1)?;
            Some((*doc, &body[..end]))
        })
        .collect()
}

/// The examples as the author's prompt shows them: one fenced block per document, headed by its
/// file name.
pub fn examples_text() -> String {
    examples()
        .into_iter()
        .map(|(doc, text)| format!("`{doc}`:\n````markdown\n{text}````\n"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Repository-relative paths of the four documents.
pub fn doc_paths(spec_rel: &str) -> Vec<String> {
    DOCS.iter().map(|d| format!("{spec_rel}/{d}")).collect()
}

/// The documents an agent is pointed at: the four, plus `test.steps.json` when it exists
/// (reviewers review the browser steps with the spec).
pub fn spec_files(repo: &Path, spec_rel: &str) -> Vec<String> {
    let mut files = doc_paths(spec_rel);
    let steps = format!("{spec_rel}/{}", crate::types::STEPS_FILE);
    if repo.join(&steps).is_file() {
        files.push(steps);
    }
    files
}

/// `.specs/<feature>` relative to the repository.
pub fn spec_rel(feature: &str) -> String {
    format!(".specs/{feature}")
}

/// Absolute feature directory.
pub fn spec_dir(repo: &Path, feature: &str) -> PathBuf {
    repo.join(".specs").join(feature)
}

/// Parses `- Key: value` / `Key: value` / `**Key**: value` into (lower-cased key, value).
pub fn field_line(line: &str) -> Option<(String, String)> {
    let t = line.trim().trim_start_matches(['-', '*', '+']).trim_start();
    let (k, v) = t.split_once(':')?;
    let key = k.trim().trim_matches('*').trim().to_lowercase();
    if key.is_empty() || key.len() > 40 || key.contains('`') {
        return None;
    }
    let value = v.trim().trim_start_matches("**").trim();
    Some((key, value.to_string()))
}

/// Splits a comma/space separated list, dropping `none`.
pub fn list(value: &str) -> Vec<String> {
    value
        .split([',', ' ', ';'])
        .map(|s| s.trim().trim_matches('`').trim_matches(['[', ']']))
        .filter(|s| !s.is_empty() && !s.eq_ignore_ascii_case("none") && *s != "-")
        .map(str::to_string)
        .collect()
}
