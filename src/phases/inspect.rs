//! inspect: the mechanical checks listed in `docs/spec-format.md`, with no model involved, so that
//! no reviewer tokens are spent on formatting defects. CRITICAL or WARNING findings send the spec
//! back to its author.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use super::Ctx;
use crate::error::Result;
use crate::process::paths::resolve_inside;
use crate::spec::cases::{self, Method};
use crate::spec::ids::{self, IdIndex};
use crate::spec::import::ImportMap;
use crate::spec::{SpecDocs, tasks};
use crate::state::InspectSummary;
use crate::types::kinds::Gate;
use crate::types::{Finding, Outcome, Severity, Signal};
use crate::util;

/// Severity of an inspection finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, strum::IntoStaticStr)]
#[strum(serialize_all = "UPPERCASE")]
pub enum Level {
    /// Blocks review.
    Critical,
    /// Blocks review.
    Warning,
    /// Reported only.
    Info,
}

/// One inspection finding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[allow(missing_docs)]
pub struct Check {
    pub level: Level,
    /// The document.
    pub file: String,
    /// 1-based line, 0 when not tied to one.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

const VAGUE: [&str; 8] = [
    "fast",
    "user-friendly",
    "robust",
    "intuitive",
    "seamless",
    "appropriate",
    "etc.",
    "as needed",
];
/// Placeholders: whole words of prose (not inside a code span or a fenced block, and not part
/// of an identifier such as `TODO_FILE` or `TBD2`), so that a project whose real setting is
/// called `TODO_FILE` can be specified plainly.
const PLACEHOLDER_WORDS: [&str; 2] = ["TBD", "TODO"];
/// Placeholder punctuation, matched anywhere in prose.
const PLACEHOLDER_MARKS: [&str; 1] = ["???"];
/// Tool-call residue, matched anywhere (code included): no document means to contain it.
const RESIDUE: [&str; 3] = ["</invoke>", "<invoke", "</function_calls>"];

/// Runs every check over the documents: ids, traceability, tasks, acceptance cases and their
/// steps, wording. The result is sorted and deduplicated.
pub fn check(docs: &SpecDocs, repo: &Path, app_configured: bool) -> Vec<Check> {
    let mut out = Vec::new();
    let mut push = |level: Level, file: &str, line: usize, message: String| {
        out.push(Check {
            level,
            file: file.to_string(),
            line,
            message,
        })
    };
    for m in &docs.missing {
        push(Level::Critical, m, 0, "document is missing or empty".into());
    }
    for (name, why) in &docs.refused {
        push(Level::Critical, name, 0, why.clone());
    }
    let idx = IdIndex::build(docs);
    check_ids(&idx, &mut push);
    let parsed_cases = cases::parse(&docs.test);
    check_traceability(docs, &idx, &parsed_cases, &mut push);
    check_tasks(docs, repo, &mut push);
    if parsed_cases.is_empty() && !docs.missing.contains(&"test.md") {
        push(
            Level::Critical,
            "test.md",
            0,
            "no acceptance case headings (`## T-A01: [REQ-001] title`) found".into(),
        );
    }
    let steps_file = check_steps_file(docs, &parsed_cases, &mut push);
    for c in &parsed_cases {
        check_case(c, steps_file.as_ref(), repo, app_configured, &mut push);
    }
    check_wording(docs, &mut push);
    if let Some(map) = &docs.import {
        check_imported(docs, map, &mut out);
    }
    out.sort();
    out.dedup();
    out
}

/// Ids defined twice, referenced but never defined, and requirements nobody references.
fn check_ids(idx: &IdIndex, push: &mut impl FnMut(Level, &str, usize, String)) {
    for (id, sites) in &idx.defined {
        if sites.len() > 1 {
            let ((f, l), n) = (sites[1], sites.len());
            push(Level::Critical, f, l, format!("{id} is defined {n} times"));
        }
    }
    for (id, sites) in &idx.referenced {
        if !idx.defined.contains_key(id) {
            let (f, l) = sites[0];
            let message = format!("{id} is referenced but never defined");
            push(Level::Critical, f, l, message);
        }
    }
    for (id, sites) in &idx.defined {
        let is_req = ["REQ-", "NFR-", "CON-", "ASM-"]
            .iter()
            .any(|p| id.starts_with(p));
        if is_req && !idx.referenced.contains_key(id) {
            let (f, l) = sites[0];
            push(
                Level::Info,
                f,
                l,
                format!("{id} is defined but never referenced"),
            );
        }
    }
}

/// Every requirement is in the design's traceability matrix and has an acceptance case.
fn check_traceability(
    docs: &SpecDocs,
    idx: &IdIndex,
    parsed_cases: &[cases::Case],
    push: &mut impl FnMut(Level, &str, usize, String),
) {
    let matrix: BTreeSet<String> = ids::design_matrix(&docs.design).into_iter().collect();
    let covered: BTreeSet<&str> = parsed_cases
        .iter()
        .flat_map(|c| c.requirements.iter().map(String::as_str))
        .collect();
    for id in idx.requirements() {
        let (f, l) = idx.defined[id][0];
        if !matrix.contains(id) {
            let message = format!("{id} is not in the design traceability matrix");
            push(Level::Warning, f, l, message);
        }
        if !covered.contains(id) {
            let message = format!("{id} has no acceptance case in test.md");
            push(Level::Warning, f, l, message);
        }
    }
}

/// Tasks: present, one kind each, naming a requirement, with target files inside the
/// repository, and no dependency cycle; tasks that share target files without an order between
/// them are reported (they cannot run in parallel).
fn check_tasks(docs: &SpecDocs, repo: &Path, push: &mut impl FnMut(Level, &str, usize, String)) {
    let mut push = |level, line, message| push(level, "tasks.md", line, message);
    let parsed_tasks = tasks::parse(&docs.tasks);
    if parsed_tasks.is_empty() && !docs.missing.contains(&"tasks.md") {
        let message = "no task lines (`- [ ] T001: title`) found".into();
        push(Level::Critical, 0, message);
    }
    for t in &parsed_tasks {
        if t.kind().is_none() {
            let message = format!(
                "{} needs exactly one kind (ui, backend or test), has {:?}",
                t.id, t.kinds
            );
            push(Level::Warning, t.line, message);
        }
        if t.requirements.is_empty() {
            push(
                Level::Warning,
                t.line,
                format!("{} names no requirement id", t.id),
            );
        }
        for e in t.files.iter().filter_map(|f| resolve_inside(repo, f).err()) {
            push(
                Level::Critical,
                t.line,
                format!("{}: target file {e}", t.id),
            );
        }
    }
    for o in tasks::overlaps(&parsed_tasks) {
        let message = format!(
            "{} and {} both name {} and neither depends on the other: implement runs them one after the other, not in parallel",
            o.first,
            o.second,
            o.files.join(", ")
        );
        push(Level::Info, o.line, message);
    }
    let on_cycle = tasks::cycles(&parsed_tasks);
    if !on_cycle.is_empty() {
        let message = format!(
            "task dependencies form a cycle through {}",
            on_cycle.join(", ")
        );
        push(Level::Warning, 0, message);
    }
}

/// The structured steps file: it parses, and its cases are the playwright cases of test.md.
/// Returns the parsed file for the per-case staleness check.
fn check_steps_file(
    docs: &SpecDocs,
    parsed_cases: &[cases::Case],
    push: &mut impl FnMut(Level, &str, usize, String),
) -> Option<crate::evidence::steps::StepsFile> {
    let name = crate::types::STEPS_FILE;
    let file = match crate::evidence::steps::parse_file(docs.steps.as_deref()?) {
        Ok(f) => f,
        Err(e) => {
            push(Level::Warning, name, 0, format!("{name} {e}"));
            return None;
        }
    };
    for id in file.cases.keys() {
        let is_browser_case = parsed_cases
            .iter()
            .any(|c| &c.id == id && c.method() == Some(Method::Playwright));
        if !is_browser_case {
            let message = format!("{id} has steps but is not a playwright case in test.md");
            push(Level::Info, name, 0, message);
        }
    }
    Some(file)
}

/// One acceptance case: fresh steps for a playwright case, a valid `Verify:` method with its
/// fields, an app to drive for playwright, and a file-check target inside the repository.
fn check_case(
    c: &cases::Case,
    steps_file: Option<&crate::evidence::steps::StepsFile>,
    repo: &Path,
    app_configured: bool,
    push: &mut impl FnMut(Level, &str, usize, String),
) {
    if c.method() == Some(Method::Playwright)
        && c.steps.is_some()
        && let Some(problem) = crate::evidence::steps::staleness(steps_file, c)
    {
        push(Level::Warning, crate::types::STEPS_FILE, 0, problem);
    }
    let mut push = |level, message| push(level, "test.md", c.line, message);
    let Some(m) = c.method() else {
        let got = c.verify.as_deref().unwrap_or("nothing");
        let message = format!(
            "{} has no valid `Verify:` (got {got:?}; use playwright, command or file-check)",
            c.id
        );
        return push(Level::Warning, message);
    };
    let missing = c.missing_fields();
    if !missing.is_empty() {
        let message = format!("{} ({}) lacks {}", c.id, m.as_str(), missing.join(", "));
        push(Level::Warning, message);
    }
    if m == Method::Playwright && !app_configured {
        let message = format!(
            "{} is a playwright case but app.start/app.url are not configured",
            c.id
        );
        push(Level::Warning, message);
    }
    if m == Method::FileCheck
        && let Some(f) = &c.file
        && let Err(e) = resolve_inside(repo, f)
    {
        push(Level::Critical, format!("{}: {e}", c.id));
    }
}

/// A spec imported from another tool (`docs/import.md`): a task the original gave no path, and
/// every finding tied to a line named with the original file and line it came from.
fn check_imported(docs: &SpecDocs, map: &ImportMap, out: &mut Vec<Check>) {
    for t in tasks::parse(&docs.tasks) {
        if t.files.is_empty() && map.ids.contains_key(&t.id) {
            out.push(Check {
                level: Level::Warning,
                file: "tasks.md".into(),
                line: t.line,
                message: format!(
                    "{} names no path (`- files:`): the original task says no file it changes",
                    t.id
                ),
            });
        }
    }
    for c in out.iter_mut().filter(|c| c.line > 0) {
        if let Some(origin) = map.origin(docs, &c.file, c.line) {
            c.message = format!("{} — imported from {origin}", c.message);
        }
    }
}

/// Leftover placeholders (warnings) and vague words (info), line by line in every document.
fn check_wording(docs: &SpecDocs, push: &mut impl FnMut(Level, &str, usize, String)) {
    for (file, text) in docs.all() {
        let mut fenced = false;
        for (i, line) in text.lines().enumerate() {
            let mut push = |level, message| push(level, file, i + 1, message);
            for r in RESIDUE.iter().filter(|r| line.contains(*r)) {
                push(Level::Warning, format!("leftover placeholder `{r}`"));
            }
            if cases::is_fence(line) {
                fenced = !fenced;
                continue;
            }
            if fenced {
                continue;
            }
            for q in crate::spec::import::questions(line) {
                let message = format!("unresolved clarification {q}: answer it in the text");
                push(Level::Warning, message);
            }
            for p in placeholders(line) {
                push(Level::Warning, format!("leftover placeholder `{p}`"));
            }
            let lower = line.to_lowercase();
            let words = lower.split(|c: char| !c.is_alphanumeric() && c != '-' && c != '.');
            for v in VAGUE.iter().filter(|v| words.clone().any(|w| w == **v)) {
                push(Level::Info, format!("vague word `{v}`"));
            }
        }
    }
}

/// The placeholders in the prose of one line (code spans left out): [`PLACEHOLDER_WORDS`] as
/// whole words, [`PLACEHOLDER_MARKS`] anywhere.
pub fn placeholders(line: &str) -> Vec<&'static str> {
    let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
    let part_of_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut found = Vec::new();
    for w in PLACEHOLDER_WORDS {
        let whole = prose.match_indices(w).any(|(at, _)| {
            !part_of_word(prose[..at].chars().next_back())
                && !part_of_word(prose[at + w.len()..].chars().next())
        });
        if whole {
            found.push(w);
        }
    }
    found.extend(PLACEHOLDER_MARKS.iter().filter(|m| prose.contains(*m)));
    found
}

/// Renders `inspection-report.md`.
pub fn render(checks: &[Check], summary: &InspectSummary) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Inspection report\n");
    let _ = writeln!(
        s,
        "Gate: **{}** — {} critical, {} warning, {} info\n",
        summary.gate, summary.critical, summary.warning, summary.info
    );
    if checks.is_empty() {
        s.push_str("No findings.\n");
        return s;
    }
    let mut table = crate::report::Table::new("Severity | File | Line | Finding");
    for c in checks {
        let line = if c.line == 0 {
            "-".into()
        } else {
            c.line.to_string()
        };
        let message = c.message.replace('|', "\\|");
        let level: &str = c.level.into();
        table.row(&[&level, &c.file, &line, &message]);
    }
    s + &table.into_text()
}

/// Runs inspect.
pub fn run(ctx: &mut Ctx) -> Result<Outcome> {
    let docs = SpecDocs::read(ctx.feature_dir());
    let app_configured = ctx
        .config
        .app
        .as_ref()
        .is_some_and(|a| a.start.is_some() && a.url.is_some());
    let checks = check(&docs, &ctx.repo, app_configured);
    let count = |l| checks.iter().filter(|c| c.level == l).count() as u32;
    let (critical, warning, info) = (
        count(Level::Critical),
        count(Level::Warning),
        count(Level::Info),
    );
    let gate = if critical + warning > 0 {
        Gate::Fail
    } else {
        Gate::Pass
    };
    let runs = ctx.state.inspect.as_ref().map(|i| i.runs).unwrap_or(0) + 1;
    let summary = InspectSummary {
        critical,
        warning,
        info,
        gate,
        runs,
    };
    util::write_text(
        &ctx.feature_dir().join("inspection-report.md"),
        &render(&checks, &summary),
    )?;
    crate::events::emit(crate::events::Event::Inspection {
        critical,
        warning,
        info,
        gate,
    });
    let blocking: Vec<Finding> = checks
        .iter()
        .filter(|c| c.level != Level::Info)
        .map(|c| Finding {
            id: format!("I{}", c.line),
            file: c.file.clone(),
            section: "inspect".into(),
            gist: c.message.clone(),
            argument: "mechanical inspection (no model)".into(),
            ..Finding::new(if c.level == Level::Critical {
                Severity::Critical
            } else {
                Severity::Improvement
            })
        })
        .collect();
    let fingerprints: Vec<String> = blocking
        .iter()
        .map(crate::review::fingerprint::fingerprint)
        .collect();
    ctx.state.inspect = Some(summary);
    if gate == Gate::Pass {
        ctx.state.inspect_history.clear();
        return Ok(Outcome::Ok);
    }
    ctx.state.inspect_history.push(fingerprints.clone());
    ctx.state.open_findings = blocking;
    // The author could not fix the same mechanical findings three times in a row: that is a
    // stall of the author, handed to arbitration rather than looped forever.
    let h = &ctx.state.inspect_history;
    if h.len() >= 3 {
        let last3 = &h[h.len() - 3..];
        let recurring = last3[2]
            .iter()
            .any(|f| last3[0].contains(f) && last3[1].contains(f));
        if recurring {
            ctx.state.inspect_history.clear();
            return Ok(Outcome::Stall(Signal::S1));
        }
    }
    Ok(Outcome::SendBack)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of docs/spec-format.md (what the author is shown) parses with the real
    /// parsers, names every field they read, and passes `inspect` (the playwright cases' steps
    /// are converted later, so only their absence is reported).
    #[test]
    fn the_documented_example_parses_and_passes_inspect() {
        let ex = crate::spec::examples();
        let names: Vec<&str> = ex.iter().map(|(d, _)| *d).collect();
        assert_eq!(names, crate::spec::DOCS);
        let text = |d: &str| ex.iter().find(|(n, _)| *n == d).unwrap().1.to_string();
        let docs = SpecDocs {
            requirement: text("requirement.md"),
            design: text("design.md"),
            tasks: text("tasks.md"),
            test: text("test.md"),
            ..SpecDocs::default()
        };
        let repo = tempfile::tempdir().unwrap();
        let blocking: Vec<Check> = check(&docs, repo.path(), true)
            .into_iter()
            .filter(|c| c.level != Level::Info && c.file != crate::types::STEPS_FILE)
            .collect();
        assert!(blocking.is_empty(), "{blocking:?}");
        let idx = IdIndex::build(&docs);
        for id in [
            "REQ-001", "REQ-002", "REQ-003", "NFR-001", "CON-001", "ASM-001", "T001", "T002",
            "T003", "T-A01", "T-A04",
        ] {
            assert!(idx.defined.contains_key(id), "{id} is defined");
        }
        assert_eq!(ids::design_matrix(&docs.design).len(), 4);
        let ts = tasks::parse(&docs.tasks);
        assert_eq!(ts.len(), 3);
        for t in &ts {
            assert!(t.kind().is_some() && !t.requirements.is_empty(), "{t:?}");
            assert!(!t.files.is_empty() && !t.done_criteria.is_empty(), "{t:?}");
        }
        assert_eq!(ts[1].depends, ["T001"]);
        let cs = cases::parse(&docs.test);
        assert_eq!(cs.len(), 4);
        assert_eq!(
            cs[1].steps.as_deref().map(|s| s.lines().count()),
            Some(3),
            "the numbered list is T-A02's steps"
        );
        let command = &cs[2];
        assert_eq!(command.command.as_deref(), Some("node test/delete.test.js"));
        assert_eq!(command.exit.as_deref(), Some("0"));
        assert_eq!(command.output_contains.as_deref(), Some("delete: ok"));
        assert_eq!(command.timeout.as_deref(), Some("60"));
        let file = &cs[3];
        assert_eq!(file.method(), Some(Method::FileCheck));
        assert_eq!(file.file.as_deref(), Some("server/store.js"));
        assert_eq!(file.contains.as_deref(), Some("renameSync"));
        assert!(cs.iter().all(|c| c.missing_fields().is_empty()));
    }

    /// A placeholder is a whole word of prose; identifiers, code spans and fenced blocks that
    /// contain the word are left alone.
    #[test]
    fn placeholders_are_words_of_prose_not_substrings() {
        for line in [
            "TODO: decide the limit",
            "The limit is TBD.",
            "- (TODO) write this",
            "What happens then???",
            "Retry count: TBD, see `config`",
        ] {
            assert!(!placeholders(line).is_empty(), "{line}");
        }
        for line in [
            "The file is named by `TODO_FILE`.",
            "Set TODO_FILE to the list's path.",
            "TBD2 is the second build",
            "a todo list CLI",
            "`TODO` is the marker the linter looks for",
            "run `grep -c TODO src/` and expect 0",
        ] {
            assert!(
                placeholders(line).is_empty(),
                "{line}: {:?}",
                placeholders(line)
            );
        }
        let docs = SpecDocs {
            test: "## T-A01: [REQ-001] x\n- Command:\n  ```sh\n  TODO=1 ./run # TODO later ???\n  ```\nTODO: real\n".into(),
            ..SpecDocs::default()
        };
        let mut found = Vec::new();
        check_wording(&docs, &mut |l, f, n, m: String| {
            found.push((l, f.to_string(), n, m))
        });
        let warnings: Vec<usize> = found
            .iter()
            .filter(|c| c.0 == Level::Warning)
            .map(|c| c.2)
            .collect();
        assert_eq!(warnings, [6], "only the prose line: {found:?}");
    }
}
