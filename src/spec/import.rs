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

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsx::Limit;
use crate::types::kinds::TaskKind;

/// The file beside the four documents that records where each imported id came from.
pub const MAP_FILE: &str = "imported.json";

/// The marker spec-kit writes for an open question (Kiro and OpenSpec texts may carry it too).
pub const CLARIFICATION: &str = "[NEEDS CLARIFICATION";

/// A spec format the importer reads; written as the word of `--from` / `--to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
pub enum Format {
    /// GitHub's spec-kit: `specs/NNN-name/spec.md`, `plan.md`, `tasks.md`.
    #[serde(rename = "spec-kit")]
    #[strum(to_string = "spec-kit")]
    SpecKit,
    /// Kiro: `.kiro/specs/<name>/requirements.md`, `design.md`, `tasks.md`.
    #[serde(rename = "kiro")]
    #[strum(to_string = "kiro")]
    Kiro,
    /// OpenSpec: `openspec/changes/<id>/proposal.md`, `tasks.md`, `specs/<capability>/spec.md`.
    #[serde(rename = "openspec")]
    #[strum(to_string = "openspec")]
    OpenSpec,
}

impl Format {
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
                dir,
                "is not a spec directory this importer knows: expected `spec.md` (spec-kit), `requirements.md` (Kiro) or `proposal.md` (OpenSpec) in it",
                "point PATH at the feature's own directory (`specs/012-tags/`, `.kiro/specs/tags/`, `openspec/changes/add-tags/`), or name the format with --from",
            )),
            many => Err(bad(
                dir,
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

    /// The lines without HTML comments, each with its index and the heading it is, if any.
    pub fn lines(&self) -> impl Iterator<Item = (usize, String, Option<(usize, String)>)> {
        uncommented(&self.text)
            .into_iter()
            .enumerate()
            .map(|(i, l)| {
                let h = heading(&l);
                (i, l, h)
            })
    }
}

/// A requirement (or constraint, assumption) of ours made from one of the original.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct Req {
    /// Our id (`REQ-001`, `NFR-001`, `CON-001`, `ASM-001`).
    pub id: String,
    /// The original's label (`FR-001`, `Requirement 2`, an OpenSpec requirement name).
    pub label: String,
    pub text: String,
    pub at: Loc,
    /// The section of requirement.md it goes in (OpenSpec's ADDED/MODIFIED/REMOVED stay apart).
    pub group: String,
}

/// An acceptance case made from a scenario, an acceptance criterion or a success criterion.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct Case {
    /// Our id (`T-A01`).
    pub id: String,
    /// The original's label (`US1/AC2`, `2.3`, a scenario name).
    pub label: String,
    /// The requirements it checks (ours).
    pub reqs: Vec<String>,
    pub title: String,
    /// What to do (the Given/When part, the EARS trigger).
    pub steps: String,
    /// What must hold (the Then part, the criterion as written).
    pub expected: String,
    pub at: Loc,
}

/// A task of ours made from one of the original.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct Task {
    /// Our id (`T001`): spec-kit's own when it has one.
    pub id: String,
    /// The original's label (`T012 [P] [US1]`, `2.1`).
    pub label: String,
    pub title: String,
    pub done: bool,
    /// The requirements it serves (ours).
    pub reqs: Vec<String>,
    /// The tasks it waits for (ours).
    pub depends: Vec<String>,
    pub files: Vec<String>,
    /// Its kind, from its phase and paths.
    pub kind: TaskKind,
    /// The heading it sits under in tasks.md.
    pub phase: String,
    /// Detail lines of the original, kept as written.
    pub details: Vec<String>,
    /// A dependency the importer could not settle, as an open question.
    pub question: Option<String>,
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

impl Quote {
    /// The heading it is shown under.
    fn heading(&self) -> &str {
        if self.heading.is_empty() {
            "(no heading)"
        } else {
            &self.heading
        }
    }
}

/// A whole spec, read from the original files.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct Imported {
    pub format: Format,
    /// The directory it was read from (as shown to people).
    pub source: String,
    /// The files read, in order.
    pub files: Vec<String>,
    pub title: String,
    /// The overview paragraphs, as written.
    pub overview: Vec<String>,
    /// Requirements, constraints and assumptions.
    pub reqs: Vec<Req>,
    pub cases: Vec<Case>,
    pub tasks: Vec<Task>,
    /// Text quoted, not mapped.
    pub quotes: Vec<Quote>,
    /// Files linked, not read (research notes, contracts).
    pub links: Vec<String>,
    /// What the importer chose or could not map, for `--dry-run` and the map file.
    pub notes: Vec<String>,
    /// The quote being gathered, line by line, until a heading or a mapped line ends it.
    open: Option<Quote>,
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
            open: None,
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

    /// Ends the quote being gathered (kept when it holds more than blanks).
    pub fn flush(&mut self) {
        if let Some(q) = self.open.take()
            && !q.text.trim().is_empty()
        {
            self.quotes.push(q);
        }
    }

    /// Adds a line of original text to the quote being gathered, starting one (under `heading`,
    /// at `at`) when none is.
    pub fn keep(&mut self, heading: impl FnOnce() -> String, at: Loc, raw: &str) {
        let q = self.open.get_or_insert_with(|| Quote {
            heading: heading(),
            at,
            text: String::new(),
        });
        q.text.push_str(raw);
        q.text.push('\n');
    }

    /// Quotes every section of a file the importer does not map (a design, a plan), under its
    /// own heading and place.
    pub fn quote_sections(&mut self, src: &Source) {
        self.files.push(src.name.clone());
        let mut heading = String::new();
        for (i, raw, head) in src.lines() {
            if let Some((level, text)) = head
                && level <= 3
            {
                self.flush();
                heading = text;
                continue;
            }
            if raw.trim().is_empty() && self.open.is_none() {
                continue;
            }
            self.keep(|| heading.clone(), src.at(i), &raw);
        }
        self.flush();
    }
}

/// What one imported id was, for inspection findings and the PR body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Origin {
    /// The original's label.
    pub label: String,
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
#[allow(missing_docs)]
pub struct ImportMap {
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
            .find_map(|l| super::ids::defined_id(file, l))?;
        let o = self.ids.get(&id)?;
        Some(format!("`{}` ({})", o.at, o.label))
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
            dir,
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
    /// The path as people see it: relative to the repository when inside it.
    fn shown(&self, path: &Path) -> String {
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let path = canon(path);
        match path.strip_prefix(canon(&self.repo)) {
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    /// Reads `name`, which the format requires, and starts the record of the spec with it.
    pub fn start(&self, name: &str, format: Format) -> Result<(Source, Imported)> {
        let src = self.optional(name)?.ok_or_else(|| {
            bad(
                self.dir.join(name),
                format!("is missing: a {format} spec directory has one"),
                format!(
                    "pass the directory that holds `{name}`, or name another format with --from"
                ),
            )
        })?;
        let mut out = Imported::new(format, self.shown(&self.dir));
        out.files.push(src.name.clone());
        Ok((src, out))
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

    /// The `file` of each directory under `sub`, sorted by directory name.
    pub fn under(&self, sub: &str, file: &str) -> Result<Vec<Source>> {
        let Ok(entries) = std::fs::read_dir(self.dir.join(sub)) else {
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
            out.extend(self.optional(&format!("{sub}/{n}/{file}"))?);
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
            out.quote_sections(&d);
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

    /// Other Markdown files of the directory (at most three levels down), sorted, for linking.
    pub fn others(&self, known: &[&str]) -> Vec<String> {
        let mut out: Vec<String> = walkdir::WalkDir::new(&self.dir)
            .follow_links(false)
            .max_depth(3)
            .into_iter()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_file())
            .map(|e| e.into_path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
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

/// A numbered task line of Kiro's and OpenSpec's tasks.md (`- [ ] 2.1 Title`), as read.
#[allow(missing_docs)]
pub struct Numbered {
    pub done: bool,
    /// Its number (`2.1`), our task's label.
    pub number: String,
    pub title: String,
    pub at: Loc,
    /// The last heading above it.
    pub heading: String,
    /// Indented lines below it (when the format keeps them).
    pub details: Vec<String>,
    indent: usize,
}

/// Reads the numbered tasks of `src` (`task` captures indent, mark, number and title) and
/// returns the leaves, each with the last group above it (`2. Title`: a task with sub-tasks).
/// Other lines are quoted under their heading; with `details`, an indented line below a task
/// (while no quote is open) is one of its details instead.
pub fn numbered_tasks(
    src: &Source,
    out: &mut Imported,
    task: &Regex,
    details: bool,
) -> Vec<(Numbered, String)> {
    let mut items: Vec<Numbered> = Vec::new();
    let mut heading = String::new();
    for (i, raw, head) in src.lines() {
        if let Some((level, text)) = head {
            out.flush();
            if level > 1 {
                heading = text;
            }
            continue;
        }
        if let Some(c) = task.captures(&raw) {
            out.flush();
            items.push(Numbered {
                indent: c[1].len(),
                done: &c[2] == "x" || &c[2] == "X",
                number: c[3].to_string(),
                title: c[4].trim().to_string(),
                at: src.at(i),
                heading: heading.clone(),
                details: Vec::new(),
            });
            continue;
        }
        if raw.trim().is_empty() {
            continue;
        }
        if details
            && out.open.is_none()
            && raw.starts_with(' ')
            && let Some(item) = items.last_mut()
        {
            item.details
                .push(raw.trim().trim_start_matches("- ").to_string());
            continue;
        }
        out.keep(|| heading.clone(), src.at(i), &raw);
    }
    out.flush();
    let mut leaves = Vec::new();
    let mut group = String::new();
    let mut items = items.into_iter().peekable();
    while let Some(item) = items.next() {
        let parent = items.peek().is_some_and(|next| {
            next.indent > item.indent && next.number.starts_with(&format!("{}.", item.number))
        });
        if parent {
            group = format!("{}. {}", item.number, item.title);
        } else {
            leaves.push((item, group.clone()));
        }
    }
    leaves
}

impl Numbered {
    /// The leaf as a task of ours: numbered `T001…` in order, each waiting for the one before.
    pub fn push(self, out: &mut Imported, phase: String, reqs: Vec<String>, files: Vec<String>) {
        out.tasks.push(Task {
            id: format!("T{:03}", out.tasks.len() + 1),
            label: self.number,
            kind: kind_of(&phase, &self.title, &files),
            title: self.title,
            done: self.done,
            reqs,
            depends: out.tasks.last().map(|t| t.id.clone()).into_iter().collect(),
            files,
            phase,
            details: self.details,
            question: None,
            at: self.at,
        });
    }
}

/// Text without HTML comments (templates carry instructions in them), line numbers kept: a
/// commented line becomes empty.
pub fn uncommented(text: &str) -> Vec<String> {
    let blanked = re!(r"(?s)<!--.*?(?:-->|\z)").replace_all(text, |c: &regex::Captures| {
        "\n".repeat(c[0].matches('\n').count())
    });
    blanked.lines().map(str::to_string).collect()
}

/// A Markdown heading: (level, text).
pub fn heading(line: &str) -> Option<(usize, String)> {
    let c = re!(r"^(#{1,6}) (.*)$").captures(line.trim_end())?;
    Some((c[1].len(), c[2].trim().to_string()))
}

/// The repository-relative paths a task's text names: words with a directory or a file
/// extension (`src/models/tag.py`, `` `index.html` ``). URLs, absolute paths, `..`, version
/// numbers and abbreviations (`e.g.`) are left out.
pub fn paths(text: &str) -> Vec<String> {
    let path = re!(
        r"(?:^|[\s`(\[,])((?:[A-Za-z0-9_.@-]+/)*[A-Za-z0-9_@-][A-Za-z0-9_.@-]*\.[A-Za-z0-9]{1,8})(?:$|[\s`)\],:;])"
    );
    let mut out: Vec<String> = Vec::new();
    for c in path.captures_iter(text) {
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
