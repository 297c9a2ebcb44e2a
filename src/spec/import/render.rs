//! The shared mapping: an [`Imported`] spec written as our four documents and `imported.json`,
//! and the `--dry-run` report of what would be written and what could not be mapped.

use std::fmt::Write as _;

use super::{ImportMap, Imported, Loc, Origin, Question};

/// The four documents: (file name, text), in the order of [`crate::spec::DOCS`].
pub fn documents(spec: &Imported, verify: &str) -> Vec<(&'static str, String)> {
    vec![
        ("requirement.md", requirement(spec)),
        ("design.md", design(spec)),
        ("tasks.md", tasks(spec)),
        ("test.md", test(spec, verify)),
    ]
}

fn provenance(spec: &Imported) -> String {
    format!(
        "Imported from the {} spec `{}` by `spec-orchestrate import`; the original files are unchanged and each id keeps its original label beside ours (`imported.json` maps them).\n",
        spec.format, spec.source
    )
}

/// Continuation lines of a multi-line text, indented under the list item that opens it.
fn item(text: &str) -> String {
    let mut lines = text.lines();
    let mut s = lines.next().unwrap_or("").to_string();
    for l in lines {
        s.push_str("\n  ");
        s.push_str(l);
    }
    s
}

fn requirement(spec: &Imported) -> String {
    let mut s = format!("# Requirements: {}\n\n{}\n", spec.title, provenance(spec));
    if !spec.overview.is_empty() {
        s.push_str("## Overview\n\n");
        for l in &spec.overview {
            let _ = writeln!(s, "{l}");
        }
        s.push('\n');
    }
    let mut groups: Vec<&str> = Vec::new();
    for r in &spec.reqs {
        if !groups.contains(&r.group.as_str()) {
            groups.push(&r.group);
        }
    }
    for g in groups {
        let _ = writeln!(s, "## {g}\n");
        for r in spec.reqs.iter().filter(|r| r.group == g) {
            let _ = writeln!(s, "- [{}] ({}) {}", r.id, r.label, item(&r.text));
        }
        s.push('\n');
    }
    s
}

/// A table cell: the first words, open questions left to the requirement's own line (where
/// inspect reports them once).
fn cell(text: &str) -> String {
    let mut t = text.to_string();
    for q in super::questions(text) {
        t = t.replace(&q, "(open question)");
    }
    super::speckit::short(&t).replace('|', "\\|")
}

fn design(spec: &Imported) -> String {
    let mut s = format!("# Design: {}\n\n{}\n", spec.title, provenance(spec));
    s.push_str("## Traceability Matrix\n\n| Req ID | Requirement | Design Component | Original |\n|---|---|---|---|\n");
    for r in spec
        .reqs
        .iter()
        .filter(|r| r.id.starts_with("REQ-") || r.id.starts_with("NFR-"))
    {
        let by: Vec<&str> = spec
            .tasks
            .iter()
            .filter(|t| t.reqs.contains(&r.id))
            .map(|t| t.id.as_str())
            .collect();
        let component = if by.is_empty() {
            "no task names it".to_string()
        } else {
            format!("tasks {}", by.join(", "))
        };
        let _ = writeln!(
            s,
            "| {} | {} | {component} | {} (`{}`) |",
            r.id,
            cell(r.text.lines().next().unwrap_or("")),
            cell(&r.label),
            r.at
        );
    }
    if !spec.quotes.is_empty() {
        s.push_str("\n## Imported text (quoted, not rewritten)\n\nWhat follows had no place in the four documents; it is quoted as written, with where it is.\n");
        for q in &spec.quotes {
            let _ = writeln!(s, "\n### {} (`{}`)\n", q.heading(), q.at);
            for l in q.text.trim_end().lines() {
                let _ = writeln!(s, "> {}", l.trim_end());
            }
        }
    }
    if !spec.links.is_empty() {
        s.push_str("\n## Linked, not imported\n\n");
        for l in &spec.links {
            let _ = writeln!(s, "- `{l}`");
        }
    }
    s
}

fn tasks(spec: &Imported) -> String {
    let mut s = format!("# Tasks: {}\n\n{}", spec.title, provenance(spec));
    let mut phase: Option<&str> = None;
    for t in &spec.tasks {
        if phase != Some(t.phase.as_str()) {
            let name = if t.phase.is_empty() {
                "Tasks"
            } else {
                &t.phase
            };
            let _ = writeln!(s, "\n## {name}");
            phase = Some(&t.phase);
        }
        let tick = if t.done { "x" } else { " " };
        let _ = writeln!(s, "- [{tick}] {}: {}", t.id, t.title);
        let _ = writeln!(s, "  - kind: {}", t.kind.as_str());
        let _ = writeln!(s, "  - requirements: {}", t.reqs.join(", "));
        let depends = if t.depends.is_empty() {
            "none".to_string()
        } else {
            t.depends.join(", ")
        };
        let _ = writeln!(s, "  - depends: {depends}");
        if !t.files.is_empty() {
            let _ = writeln!(s, "  - files: {}", t.files.join(", "));
        }
        if let Some(q) = &t.question {
            let _ = writeln!(s, "  - dependency question: {q}");
        }
        for d in &t.details {
            let _ = writeln!(s, "  - detail: {d}");
        }
        let _ = writeln!(s, "  - original: {} (`{}`)", t.label, t.at);
    }
    s
}

fn test(spec: &Imported, verify: &str) -> String {
    let mut s = format!("# Acceptance tests: {}\n\n{}", spec.title, provenance(spec));
    for c in &spec.cases {
        let reqs = c.reqs.join(", ");
        let _ = writeln!(s, "\n## {}: [{reqs}] {}", c.id, c.title);
        let _ = writeln!(s, "- Steps: {}", one_line(&c.steps));
        let _ = writeln!(s, "- Expected: {}", one_line(&c.expected));
        let _ = writeln!(s, "- Verify: {verify}");
        let _ = writeln!(s, "- Original: {} (`{}`)", c.label, c.at);
    }
    s
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every id of ours with the original's label, place and (a requirement's) text.
fn origins(spec: &Imported) -> impl Iterator<Item = (&str, &str, &Loc, &str)> {
    let reqs = spec
        .reqs
        .iter()
        .map(|r| (&*r.id, &*r.label, &r.at, &*r.text));
    let cases = spec.cases.iter().map(|c| (&*c.id, &*c.label, &c.at, ""));
    let tasks = spec.tasks.iter().map(|t| (&*t.id, &*t.label, &t.at, ""));
    reqs.chain(cases).chain(tasks)
}

/// `imported.json`: every id of ours → the original label and place, and the open questions.
pub fn map(spec: &Imported) -> ImportMap {
    let ids = origins(spec)
        .map(|(id, label, at, text)| {
            let (label, at, text) = (label.to_string(), at.clone(), text.to_string());
            (id.to_string(), Origin { label, at, text })
        })
        .collect();
    // Every text that may carry an open question, with its place.
    let line = |at: &Loc, k: usize| Loc {
        file: at.file.clone(),
        line: at.line + k,
    };
    let reqs = spec.reqs.iter().map(|r| (r.text.as_str(), r.at.clone()));
    let cases = (spec.cases.iter()).flat_map(|c| {
        [
            (c.steps.as_str(), c.at.clone()),
            (&c.expected, c.at.clone()),
        ]
    });
    let tasks = spec.tasks.iter().flat_map(|t| {
        let texts = [&t.title].into_iter().chain(&t.question).chain(&t.details);
        texts.map(|text| (text.as_str(), t.at.clone()))
    });
    let quotes = (spec.quotes.iter())
        .flat_map(|q| q.text.lines().enumerate().map(|(k, l)| (l, line(&q.at, k))));
    let first = Loc {
        file: spec.files.first().cloned().unwrap_or_default(),
        line: 0,
    };
    let overview = spec.overview.iter().map(|l| (l.as_str(), first.clone()));
    let questions = reqs
        .chain(cases)
        .chain(tasks)
        .chain(quotes)
        .chain(overview)
        .flat_map(|(text, at)| {
            super::questions(text)
                .into_iter()
                .map(move |text| Question {
                    text,
                    at: at.clone(),
                })
        })
        .collect();
    ImportMap {
        format: spec.format,
        source: spec.source.clone(),
        files: spec.files.clone(),
        ids,
        questions,
    }
}

/// What `import --dry-run` prints: the files it would write, the ids it would map, the choices
/// it made and the text it could not map.
pub fn dry_run(
    spec: &Imported,
    target: &str,
    docs: &[(&'static str, String)],
    verify: &str,
) -> String {
    let mut s = format!(
        "Would import the {} spec `{}` into `{target}/`:\n",
        spec.format, spec.source
    );
    for (name, text) in docs {
        let _ = writeln!(s, "  {target}/{name}  ({} lines)", text.lines().count());
    }
    let _ = writeln!(
        s,
        "  {target}/{}  (where each id came from)",
        super::MAP_FILE
    );
    let _ = writeln!(s, "\nRead: {}", spec.files.join(", "));
    let _ = writeln!(
        s,
        "\nIds ({} requirements, {} acceptance cases, {} tasks):",
        spec.reqs.len(),
        spec.cases.len(),
        spec.tasks.len()
    );
    for (id, label, at, _) in origins(spec) {
        let _ = writeln!(s, "  {id} <- {label}  ({at})");
    }
    let _ = writeln!(s, "\nChosen by the importer (the original does not say):");
    if !spec.cases.is_empty() {
        let _ = writeln!(
            s,
            "  Verify: {verify} for all {} cases (change it with --verify, or let the review change it)",
            spec.cases.len()
        );
    }
    let _ = writeln!(
        s,
        "  task kinds from their phase and paths; dependencies from the order written"
    );
    for n in &spec.notes {
        let _ = writeln!(s, "  {n}");
    }
    let questions = map(spec).questions;
    if !questions.is_empty() {
        let _ = writeln!(s, "\nOpen questions carried over (inspect reports each):");
        for q in &questions {
            let _ = writeln!(s, "  {}  {}", q.at, q.text);
        }
    }
    let _ = writeln!(
        s,
        "\nNot mapped, quoted in design.md as written ({}):",
        spec.quotes.len()
    );
    for q in &spec.quotes {
        let n = q.text.trim_end().lines().count();
        let lines = if n == 1 { "line" } else { "lines" };
        let _ = writeln!(s, "  {}  {}  ({n} {lines})", q.at, q.heading());
    }
    if !spec.links.is_empty() {
        let _ = writeln!(s, "\nLinked, not read:");
        for l in &spec.links {
            let _ = writeln!(s, "  {l}");
        }
    }
    s
}
