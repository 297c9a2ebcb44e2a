//! Importing a spec written with another tool — spec-kit, Kiro or OpenSpec — into the four
//! documents, so `inspect`, the adversarial review and everything after run on it unchanged
//! (`docs/import.md`).
//!
//! Each format has its own reader (`speckit`, `kiro`, `openspec`) that turns the original files
//! into one [`Imported`] record: requirements, acceptance cases and tasks, each with its original
//! label and the file and line it came from, plus the text no line shape of ours can hold, which
//! is quoted, never rewritten. `render` writes the four documents and `imported.json` (the
//! [`ImportMap`]) from that record. Nothing here writes to the original files.

pub mod kiro;
pub mod openspec;
pub mod render;
pub mod speckit;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsx::Limit;
use crate::types::kinds::TaskKind;

/// The file beside the four documents that records where each imported id came from.
pub const MAP_FILE: &str = "imported.json";

/// The marker spec-kit writes for an open question (Kiro and OpenSpec texts may carry it too).
pub const CLARIFICATION: &str = "[NEEDS CLARIFICATION";

/// A spec format the importer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Format {
    /// GitHub's spec-kit: `specs/NNN-name/spec.md`, `plan.md`, `tasks.md`.
    #[serde(rename = "spec-kit")]
    SpecKit,
    /// Kiro: `.kiro/specs/<name>/requirements.md`, `design.md`, `tasks.md`.
    #[serde(rename = "kiro")]
    Kiro,
    /// OpenSpec: `openspec/changes/<id>/proposal.md`, `tasks.md`, `specs/<capability>/spec.md`.
    #[serde(rename = "openspec")]
    OpenSpec,
}

impl Format {
    /// The word of `--from` / `--to`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::SpecKit => "spec-kit",
            Format::Kiro => "kiro",
            Format::OpenSpec => "openspec",
        }
    }

    /// Parses the word of `--from` / `--to`.
    pub fn parse(word: &str) -> Option<Format> {
        [Format::SpecKit, Format::Kiro, Format::OpenSpec]
            .into_iter()
            .find(|f| f.as_str() == word)
    }

    /// The file that identifies a directory of this format.
    fn marker(self) -> &'static str {
        match self {
            Format::SpecKit => "spec.md",
            Format::Kiro => "requirements.md",
            Format::OpenSpec => "proposal.md",
        }
    }

    /// The format of a directory, from the file that identifies it; an error naming what was
    /// looked for when none or several match.
    pub fn detect(dir: &Path) -> Result<Format> {
        let found: Vec<Format> = [Format::SpecKit, Format::Kiro, Format::OpenSpec]
            .into_iter()
            .filter(|f| dir.join(f.marker()).is_file())
            .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(bad(
                dir.to_path_buf(),
                "is not a spec directory this importer knows: expected `spec.md` (spec-kit), `requirements.md` (Kiro) or `proposal.md` (OpenSpec) in it",
                "point PATH at the feature's own directory (`specs/012-tags/`, `.kiro/specs/tags/`, `openspec/changes/add-tags/`), or name the format with --from",
            )),
            many => Err(bad(
                dir.to_path_buf(),
                format!(
                    "holds the files of several formats ({}); the importer does not guess",
                    many.iter()
                        .map(|f| f.marker())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "name the format with --from spec-kit|kiro|openspec",
            )),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a piece of the original came from: the file (as shown to people: relative to the
/// repository when it lies inside it) and the 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Loc {
    /// The original file.
    pub file: String,
    /// 1-based line.
    pub line: usize,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One original file, read.
#[derive(Debug, Clone)]
pub struct Source {
    /// The name people see (relative to the repository when inside it).
    pub name: String,
    /// Its text.
    pub text: String,
}

impl Source {
    /// Where line `i` (0-based) of this file is.
    pub fn at(&self, i: usize) -> Loc {
        Loc {
            file: self.name.clone(),
            line: i + 1,
        }
    }
}

/// A requirement (or constraint, assumption) of ours made from one of the original.
#[derive(Debug, Clone, PartialEq)]
pub struct Req {
    /// Our id (`REQ-001`, `NFR-001`, `CON-001`, `ASM-001`).
    pub id: String,
    /// The original's label (`FR-001`, `Requirement 2`, an OpenSpec requirement name).
    pub label: String,
    /// Its text, as written.
    pub text: String,
    /// Where it is.
    pub at: Loc,
    /// The section of requirement.md it goes in (OpenSpec's ADDED/MODIFIED/REMOVED stay apart).
    pub group: String,
}

/// An acceptance case made from a scenario, an acceptance criterion or a success criterion.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Our id (`T-A01`).
    pub id: String,
    /// The original's label (`US1/AC2`, `2.3`, a scenario name).
    pub label: String,
    /// The requirements it checks (ours).
    pub reqs: Vec<String>,
    /// Its title.
    pub title: String,
    /// What to do (the Given/When part, the EARS trigger).
    pub steps: String,
    /// What must hold (the Then part, the criterion as written).
    pub expected: String,
    /// Where it is.
    pub at: Loc,
}

/// A task of ours made from one of the original.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Our id (`T001`): spec-kit's own when it has one.
    pub id: String,
    /// The original's label (`T012 [P] [US1]`, `2.1`).
    pub label: String,
    /// Its title.
    pub title: String,
    /// Ticked in the original.
    pub done: bool,
    /// The requirements it serves (ours).
    pub reqs: Vec<String>,
    /// The tasks it waits for (ours).
    pub depends: Vec<String>,
    /// The paths it names.
    pub files: Vec<String>,
    /// Its kind, from its phase and paths.
    pub kind: TaskKind,
    /// The heading it sits under in tasks.md.
    pub phase: String,
    /// Detail lines of the original, kept as written.
    pub details: Vec<String>,
    /// A dependency the importer could not settle, as an open question.
    pub question: Option<String>,
    /// Where it is.
    pub at: Loc,
}

/// Original text no line shape of ours holds: quoted in design.md with its place, never
/// rewritten.
#[derive(Debug, Clone, PartialEq)]
pub struct Quote {
    /// The heading it sat under.
    pub heading: String,
    /// Where it starts.
    pub at: Loc,
    /// The lines, as written.
    pub text: String,
}

/// A whole spec, read from the original files.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The format it was read as.
    pub format: Format,
    /// The directory it was read from (as shown to people).
    pub source: String,
    /// The files read, in order.
    pub files: Vec<String>,
    /// The feature's title.
    pub title: String,
    /// The overview paragraphs, as written.
    pub overview: Vec<String>,
    /// Requirements, constraints and assumptions.
    pub reqs: Vec<Req>,
    /// Acceptance cases.
    pub cases: Vec<Case>,
    /// Tasks.
    pub tasks: Vec<Task>,
    /// Text quoted, not mapped.
    pub quotes: Vec<Quote>,
    /// Files linked, not read (research notes, contracts).
    pub links: Vec<String>,
    /// What the importer chose or could not map, for `--dry-run` and the map file.
    pub notes: Vec<String>,
}

impl Imported {
    fn new(format: Format, source: String) -> Imported {
        Imported {
            format,
            source,
            files: Vec::new(),
            title: String::new(),
            overview: Vec::new(),
            reqs: Vec::new(),
            cases: Vec::new(),
            tasks: Vec::new(),
            quotes: Vec::new(),
            links: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Adds a case for `reqs`, numbering it.
    fn push_case(
        &mut self,
        label: String,
        reqs: Vec<String>,
        title: String,
        steps: String,
        expected: String,
        at: Loc,
    ) {
        let id = format!("T-A{:02}", self.cases.len() + 1);
        self.cases.push(Case {
            id,
            label,
            reqs,
            title,
            steps,
            expected,
            at,
        });
    }
}

/// What one imported id was, for inspection findings and the PR body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Origin {
    /// The original's label.
    pub label: String,
    /// Where it is.
    #[serde(flatten)]
    pub at: Loc,
    /// Its text when imported (a requirement's), to show what the review changed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// An open question carried over, with its place in the original.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// The marker as written (`[NEEDS CLARIFICATION: …]`).
    pub text: String,
    /// Where it is.
    #[serde(flatten)]
    pub at: Loc,
}

/// `imported.json`: where every imported id came from. Written once by `import`; read by
/// `inspect` (to name the original file and line) and the PR body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportMap {
    /// The format it was read as.
    pub format: Format,
    /// The directory it was read from.
    pub source: String,
    /// The files read.
    pub files: Vec<String>,
    /// Our id → the original.
    pub ids: BTreeMap<String, Origin>,
    /// Open questions carried over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<Question>,
}

impl ImportMap {
    /// Reads `imported.json` from a feature directory; `None` when there is none or it does not
    /// parse (a spec that was not imported, or a hand-edited file: inspect then names our lines
    /// only).
    pub fn read(dir: &Path) -> Option<ImportMap> {
        let text = crate::util::read_to_string_max(&dir.join(MAP_FILE), Limit::SpecDoc).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The original place of what line `line` of our document `file` says: the open question
    /// on that line, else the imported id defined at or above it (a task's fields belong to its
    /// task line, a case's to its heading).
    pub fn origin(&self, docs: &super::SpecDocs, file: &str, line: usize) -> Option<String> {
        let text = docs.all().into_iter().find(|(f, _)| *f == file)?.1;
        let lines: Vec<&str> = text.lines().collect();
        let here = *lines.get(line.checked_sub(1)?)?;
        if let Some(q) = self.questions.iter().find(|q| here.contains(&q.text)) {
            return Some(format!("`{}`", q.at));
        }
        let id = lines[..line]
            .iter()
            .rev()
            .find_map(|l| defined_id(file, l))?;
        let o = self.ids.get(&id)?;
        Some(format!("`{}` ({})", o.at, o.label))
    }
}

/// The id a line of one of our documents defines.
fn defined_id(file: &str, line: &str) -> Option<String> {
    match file {
        "requirement.md" => super::ids::requirement_definition(line),
        "tasks.md" => super::tasks::task_line(line).map(|t| t.1),
        "test.md" => super::cases::case_heading(line).map(|c| c.0),
        _ => None,
    }
}

/// An error about one file of the import: which file, what was expected, and how to fix it.
pub fn bad(path: impl Into<PathBuf>, problem: impl Into<String>, fix: impl AsRef<str>) -> Error {
    Error::Input {
        path: path.into(),
        problem: format!("{}; {}", problem.into(), fix.as_ref()),
    }
}

/// Reads a spec directory in `format` (detected when `None`).
pub fn read(dir: &Path, repo: &Path, format: Option<Format>) -> Result<Imported> {
    if !dir.is_dir() {
        return Err(bad(
            dir.to_path_buf(),
            "no such directory",
            "pass the spec's directory: `specs/012-tags/`, `.kiro/specs/tags/` or `openspec/changes/add-tags/`",
        ));
    }
    let format = match format {
        Some(f) => f,
        None => Format::detect(dir)?,
    };
    let reader = Reader {
        dir: dir.to_path_buf(),
        repo: repo.to_path_buf(),
    };
    let mut out = match format {
        Format::SpecKit => speckit::read(&reader)?,
        Format::Kiro => kiro::read(&reader)?,
        Format::OpenSpec => openspec::read(&reader)?,
    };
    if out.title.trim().is_empty() {
        out.title = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
    }
    Ok(out)
}

/// Opens the files of one spec directory.
pub struct Reader {
    dir: PathBuf,
    repo: PathBuf,
}

impl Reader {
    /// The directory as people see it.
    pub fn source(&self) -> String {
        self.shown(&self.dir)
    }

    fn shown(&self, path: &Path) -> String {
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let path = canon(path);
        match path.strip_prefix(canon(&self.repo)) {
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    /// Reads `name` inside the directory; `None` when it does not exist.
    pub fn optional(&self, name: &str) -> Result<Option<Source>> {
        let path = self.dir.join(name);
        if !path.is_file() {
            return Ok(None);
        }
        let text = crate::util::read_to_string_max(&path, Limit::SpecDoc)?;
        Ok(Some(Source {
            name: self.shown(&path),
            text,
        }))
    }

    /// Reads `name`, which the format requires.
    pub fn required(&self, name: &str, format: Format) -> Result<Source> {
        self.optional(name)?.ok_or_else(|| {
            bad(
                self.dir.join(name),
                format!("is missing: a {format} spec directory has one"),
                format!(
                    "pass the directory that holds `{name}`, or name another format with --from"
                ),
            )
        })
    }

    /// Files under `sub` ending in `suffix`, sorted, as (relative path, source).
    pub fn under(&self, sub: &str, file: &str) -> Result<Vec<Source>> {
        let root = self.dir.join(sub);
        let Ok(entries) = std::fs::read_dir(&root) else {
            return Ok(Vec::new());
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join(file).is_file())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        names.sort();
        let mut out = Vec::new();
        for n in names {
            if let Some(s) = self.optional(&format!("{sub}/{n}/{file}"))? {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// Quotes the design file (`plan.md`, `design.md`) when there is one, and reads `tasks.md`
    /// with the format's reader (its absence is noted: inspect reports the empty tasks.md).
    pub fn design_and_tasks(
        &self,
        design: &str,
        out: &mut Imported,
        read_tasks: impl FnOnce(&Source, &mut Imported),
    ) -> Result<()> {
        if let Some(d) = self.optional(design)? {
            out.files.push(d.name.clone());
            render::quote_sections(&d, out);
        }
        match self.optional("tasks.md")? {
            Some(tasks) => {
                out.files.push(tasks.name.clone());
                read_tasks(&tasks, out);
            }
            None => out
                .notes
                .push("no tasks.md: tasks.md of ours has no tasks, which inspect reports".into()),
        }
        Ok(())
    }

    /// Other Markdown files of the directory, sorted, for linking.
    pub fn others(&self, known: &[&str]) -> Vec<String> {
        let mut out: Vec<String> = walk_md(&self.dir)
            .into_iter()
            .filter(|p| {
                let rel = p.strip_prefix(&self.dir).unwrap_or(p);
                !known.iter().any(|k| rel == Path::new(k))
            })
            .map(|p| self.shown(&p))
            .collect();
        out.sort();
        out
    }
}

fn walk_md(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .max_depth(3)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect()
}

/// Text without HTML comments (templates carry instructions in them), line numbers kept: a
/// commented line becomes empty.
pub fn uncommented(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let mut kept = String::new();
        let mut rest = line;
        loop {
            if inside {
                match rest.find("-->") {
                    Some(i) => {
                        inside = false;
                        rest = &rest[i + 3..];
                    }
                    None => break,
                }
            } else {
                match rest.find("<!--") {
                    Some(i) => {
                        kept.push_str(&rest[..i]);
                        inside = true;
                        rest = &rest[i + 4..];
                    }
                    None => {
                        kept.push_str(rest);
                        break;
                    }
                }
            }
        }
        out.push(kept);
    }
    out
}

/// A Markdown heading: (level, text).
pub fn heading(line: &str) -> Option<(usize, String)> {
    let t = line.trim_end();
    let level = t.chars().take_while(|c| *c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &t[level..];
    if !rest.starts_with(' ') {
        return None;
    }
    Some((level, rest.trim().to_string()))
}

static PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s`(\[,])((?:[A-Za-z0-9_.@-]+/)*[A-Za-z0-9_@-][A-Za-z0-9_.@-]*\.[A-Za-z0-9]{1,8})(?:$|[\s`)\],:;])")
        .expect("static regex")
});

/// The repository-relative paths a task's text names: words with a directory or a file
/// extension (`src/models/tag.py`, `` `index.html` ``). URLs, absolute paths, `..`, version
/// numbers and abbreviations (`e.g.`) are left out.
pub fn paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in PATH.captures_iter(text) {
        let p = c[1].trim_end_matches('.').to_string();
        let ext = p.rsplit('.').next().unwrap_or("");
        let plausible = ext.chars().any(|c| c.is_ascii_alphabetic())
            && !p.contains("..")
            && (!p.starts_with('.') || p.starts_with(".github/"));
        let word_like = p.matches('.').count() == 1 && !p.contains('/') && p.len() <= 4;
        if plausible && !word_like && !text.contains(&format!("://{p}")) && !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// The kind of a task: `test` when its heading or title says so or every path it names is a
/// test; `ui` when it names a page, a style or a component; else `backend`.
pub fn kind_of(heading: &str, title: &str, files: &[String]) -> TaskKind {
    let words = |s: &str| -> Vec<String> {
        s.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .map(str::to_string)
            .collect()
    };
    let says_test = |s: &str| words(s).iter().any(|w| w == "test" || w == "tests");
    let test_path = |f: &String| {
        let l = f.to_lowercase();
        l.starts_with("test")
            || l.contains("/test")
            || l.contains("_test.")
            || l.contains(".test.")
            || l.contains(".spec.")
    };
    if says_test(heading) || says_test(title) || (!files.is_empty() && files.iter().all(test_path))
    {
        return TaskKind::Test;
    }
    let ui = [".html", ".css", ".scss", ".tsx", ".jsx", ".vue", ".svelte"];
    let ui_dir = [
        "frontend/",
        "components/",
        "pages/",
        "public/",
        "website/",
        "ui/",
    ];
    if files
        .iter()
        .any(|f| ui.iter().any(|x| f.ends_with(x)) || ui_dir.iter().any(|d| f.contains(d)))
    {
        return TaskKind::Ui;
    }
    TaskKind::Backend
}

/// Strips Markdown emphasis markers (`**`, `_`) around words, for matching keywords.
pub fn plain(text: &str) -> String {
    text.replace("**", "").replace("__", "")
}

/// The open questions (`[NEEDS CLARIFICATION: …]`) in `text`, as written.
pub fn questions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(CLARIFICATION) {
        let tail = &rest[i..];
        let end = tail.find(']').map(|e| e + 1).unwrap_or(tail.len());
        out.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_the_words_that_name_files() {
        assert_eq!(
            paths("Create [Entity1] model in src/models/tag.py (depends on T012)"),
            ["src/models/tag.py"]
        );
        assert_eq!(
            paths("Add `src/core/list.ts` and update README.md, e.g. the docs"),
            ["src/core/list.ts", "README.md"]
        );
        assert!(paths("see https://example.org/a.html and version 1.2 or /etc/passwd").is_empty());
        assert!(paths("Add validation and error handling").is_empty());
    }

    #[test]
    fn kinds_come_from_the_heading_the_title_and_the_paths() {
        let f = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            kind_of("Tests for User Story 1", "Contract test", &[]),
            TaskKind::Test
        );
        assert_eq!(
            kind_of("Setup", "Write it", &f(&["tests/unit/test_tag.py"])),
            TaskKind::Test
        );
        assert_eq!(
            kind_of("Setup", "Add the page", &f(&["web/index.html"])),
            TaskKind::Ui
        );
        assert_eq!(
            kind_of("Setup", "Add the model", &f(&["src/tag.py"])),
            TaskKind::Backend
        );
    }

    #[test]
    fn comments_are_blanked_and_lines_kept() {
        let lines = uncommented("a\n<!--\n  hidden\n-->\nb <!-- x --> c\n");
        assert_eq!(lines, ["a", "", "", "", "b  c"]);
    }

    #[test]
    fn questions_are_cut_at_their_bracket() {
        assert_eq!(
            questions(
                "via [NEEDS CLARIFICATION: auth method?] and [NEEDS CLARIFICATION: how long]"
            ),
            [
                "[NEEDS CLARIFICATION: auth method?]",
                "[NEEDS CLARIFICATION: how long]"
            ]
        );
    }
}
