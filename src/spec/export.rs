//! Writing a feature's four documents back in spec-kit's or Kiro's shape (`docs/import.md`), so a
//! team can keep its own tool after the review. Ticked tasks stay ticked; an id imported from
//! that format gets its original label back (from `imported.json`). What round-trips exactly is
//! what the importer maps; the rest of design.md is carried as the plan or design prose.

use std::fmt::Write as _;

use super::SpecDocs;
use super::cases::{self, Case};
use super::import::{Format, ImportMap};
use super::tasks::{self, Task};

/// One requirement of requirement.md: our id, the text after the id (and the label in
/// parentheses, when the importer wrote one), continuation lines included.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    /// REQ-001…
    pub id: String,
    /// The original label, from `imported.json` or the `(label)` after the id.
    pub label: Option<String>,
    /// The text, continuation lines joined with `\n`.
    pub text: String,
}

/// The requirements of requirement.md, in order, with the heading each sits under.
pub fn requirements(docs: &SpecDocs) -> Vec<(String, Requirement)> {
    let mut out: Vec<(String, Requirement)> = Vec::new();
    let mut heading = String::new();
    let mut open = false;
    for line in docs.requirement.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            heading = h.trim().to_string();
            open = false;
            continue;
        }
        if let Some(id) = super::ids::requirement_definition(line) {
            let after = line
                .split_once(&format!("{id}]"))
                .map(|x| x.1)
                .unwrap_or(line);
            let after = after.trim_start_matches("**").trim();
            let (label, text) = match after.strip_prefix('(').and_then(|r| r.split_once(") ")) {
                Some((l, t)) => (Some(l.to_string()), t.to_string()),
                None => (None, after.to_string()),
            };
            out.push((heading.clone(), Requirement { id, label, text }));
            open = true;
            continue;
        }
        match (open, line.strip_prefix("  "), out.last_mut()) {
            (true, Some(more), Some((_, r))) if !more.trim().is_empty() => {
                r.text.push('\n');
                r.text.push_str(more);
            }
            _ => open = false,
        }
    }
    out
}

/// The label of an id: `imported.json`'s, else the one written beside it.
fn label(map: Option<&ImportMap>, r: &Requirement) -> Option<String> {
    map.and_then(|m| m.ids.get(&r.id))
        .map(|o| o.label.clone())
        .or_else(|| r.label.clone())
}

/// The tasks of tasks.md, each with the `## ` heading it sits under.
fn phased(text: &str) -> Vec<(String, Task)> {
    let lines: Vec<&str> = text.lines().collect();
    let phase = |t: &Task| {
        let above = lines[..t.line.saturating_sub(1).min(lines.len())]
            .iter()
            .rev();
        let heading = above.filter_map(|l| l.strip_prefix("## ")).next();
        heading.map(|h| h.trim().to_string()).unwrap_or_default()
    };
    tasks::parse(text)
        .into_iter()
        .map(|t| (phase(&t), t))
        .collect()
}

/// The detail lines of a task (`- detail: …`), as the importer kept them.
fn details(t: &Task) -> Vec<String> {
    t.text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- detail: ").map(str::to_string))
        .collect()
}

/// The overview paragraph of requirement.md.
fn overview(docs: &SpecDocs) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for l in docs.requirement.lines() {
        if l.starts_with("## ") {
            inside = l.trim() == "## Overview";
            continue;
        }
        if inside && !l.trim().is_empty() {
            out.push(l.to_string());
        }
    }
    out
}

/// The feature's title: requirement.md's `# Requirements: …` heading.
fn title(docs: &SpecDocs) -> String {
    docs.requirement
        .lines()
        .find_map(|l| l.strip_prefix("# "))
        .map(|t| {
            t.split_once(':')
                .map(|(_, r)| r.trim())
                .unwrap_or(t)
                .to_string()
        })
        .unwrap_or_default()
}

/// design.md without its title, as the plan's or design's prose.
fn design_prose(docs: &SpecDocs) -> String {
    docs.design
        .lines()
        .skip_while(|l| !l.starts_with("## "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The files of an export: (relative path, text).
pub fn export(docs: &SpecDocs, format: Format) -> Vec<(String, String)> {
    let map = docs.import.as_ref().filter(|m| m.format == format);
    match format {
        Format::Kiro => kiro(docs, map),
        _ => spec_kit(docs, map),
    }
}

/// A case written back as a Given/When/Then sentence: the steps, then what is expected.
fn scenario(c: &Case) -> String {
    let steps = c.steps.clone().unwrap_or_default();
    let expected = c.expected.clone().unwrap_or_default();
    let text = if steps.is_empty() {
        expected
    } else {
        format!("{steps}, {expected}")
    };
    // spec-kit's own spelling: the keywords in bold.
    let bold = |w: &str| match w {
        "Given" | "When" | "Then" | "And" => format!("**{w}**"),
        w => w.to_string(),
    };
    text.split(' ').map(bold).collect::<Vec<_>>().join(" ")
}

fn spec_kit(docs: &SpecDocs, map: Option<&ImportMap>) -> Vec<(String, String)> {
    let reqs = requirements(docs);
    let all_cases = cases::parse(&docs.test);
    let mut spec = format!("# Feature Specification: {}\n\n", title(docs));
    for l in overview(docs) {
        let _ = writeln!(spec, "{l}");
    }
    user_scenarios(&mut spec, &reqs, &all_cases, map);
    spec.push_str("\n## Requirements *(mandatory)*\n\n### Functional Requirements\n\n");
    for (_, r) in reqs.iter().filter(|(_, r)| r.id.starts_with("REQ-")) {
        if label(map, r).is_some_and(|l| l.starts_with("US")) {
            continue;
        }
        let n = &r.id["REQ-".len()..];
        let _ = writeln!(spec, "- **FR-{n}**: {}", r.text.replace('\n', " "));
    }
    spec.push_str("\n## Success Criteria *(mandatory)*\n\n### Measurable Outcomes\n\n");
    for (_, r) in reqs.iter().filter(|(_, r)| r.id.starts_with("NFR-")) {
        let n = &r.id["NFR-".len()..];
        let _ = writeln!(spec, "- **SC-{n}**: {}", r.text.replace('\n', " "));
    }
    listed(&mut spec, &reqs, "ASM-", "Assumptions", |r| {
        r.text.replace('\n', " ")
    });
    listed(&mut spec, &reqs, "CON-", "Constraints", |r| {
        format!("{}: {}", r.id, r.text.replace('\n', " "))
    });
    vec![
        ("spec.md".into(), spec),
        (
            "plan.md".into(),
            format!(
                "# Implementation Plan: {}\n\n{}\n",
                title(docs),
                design_prose(docs)
            ),
        ),
        ("tasks.md".into(), spec_kit_tasks(docs, map)),
    ]
}

/// The cases whose first requirement is `req`, one numbered line each (`1. text`).
fn numbered(out: &mut String, all_cases: &[Case], req: &str, text: impl Fn(&Case) -> String) {
    let mine = all_cases
        .iter()
        .filter(|c| c.requirements.first().is_some_and(|id| id == req));
    for (k, c) in mine.enumerate() {
        let _ = writeln!(out, "{}. {}", k + 1, text(c));
    }
}

/// spec.md's `## heading` listing the requirements whose id starts with `prefix`, one `- line`
/// each; nothing at all when there is none.
fn listed(
    spec: &mut String,
    reqs: &[(String, Requirement)],
    prefix: &str,
    heading: &str,
    line: impl Fn(&Requirement) -> String,
) {
    let some: Vec<&Requirement> = reqs
        .iter()
        .map(|(_, r)| r)
        .filter(|r| r.id.starts_with(prefix))
        .collect();
    if !some.is_empty() {
        let _ = write!(spec, "\n## {heading}\n\n");
        for r in some {
            let _ = writeln!(spec, "- {}", line(r));
        }
    }
}

/// spec.md's user scenarios: each user story with its acceptance scenarios, then the cases of
/// functional requirements that are no story.
fn user_scenarios(
    spec: &mut String,
    reqs: &[(String, Requirement)],
    all_cases: &[Case],
    map: Option<&ImportMap>,
) {
    spec.push_str("\n## User Scenarios & Testing *(mandatory)*\n");
    for (_, r) in reqs {
        let lab = label(map, r).unwrap_or_default();
        let Some(n) = lab.strip_prefix("US") else {
            continue;
        };
        let mut lines = r.text.lines();
        let first = lines.next().unwrap_or("");
        let head = first.split_once(": ").map(|(_, t)| t).unwrap_or(first);
        let _ = writeln!(spec, "\n### User Story {n} - {head}\n");
        for l in lines {
            let _ = writeln!(spec, "{l}\n");
        }
        spec.push_str("**Acceptance Scenarios**:\n\n");
        numbered(spec, all_cases, &r.id, scenario);
    }
    // A case of a requirement that is no user story has no place in spec-kit's scenarios: it is
    // kept as a numbered check under its own heading (quoted when imported again), not dropped.
    let stories: Vec<&String> = reqs
        .iter()
        .filter(|(_, r)| label(map, r).is_some_and(|l| l.starts_with("US")))
        .map(|(_, r)| &r.id)
        .collect();
    let loose: Vec<&Case> = all_cases
        .iter()
        .filter(|c| {
            c.requirements
                .first()
                .is_some_and(|r| !stories.contains(&r) && !r.starts_with("NFR-"))
        })
        .collect();
    if !loose.is_empty() {
        spec.push_str("\n### Acceptance checks of functional requirements\n\n");
        for (k, c) in loose.iter().enumerate() {
            let fr = c.requirements.join(", ").replace("REQ-", "FR-");
            let _ = writeln!(spec, "{}. ({fr}) {}", k + 1, scenario(c));
        }
    }
}

fn spec_kit_tasks(docs: &SpecDocs, map: Option<&ImportMap>) -> String {
    let mut s = format!("# Tasks: {}\n", title(docs));
    let mut phase: Option<String> = None;
    for (p, t) in &phased(&docs.tasks) {
        if phase.as_ref() != Some(p) {
            let _ = writeln!(s, "\n## {p}\n");
            phase = Some(p.clone());
        }
        let tags = map
            .and_then(|m| m.ids.get(&t.id))
            .and_then(|o| o.label.split_once(' ').map(|(_, tags)| format!(" {tags}")))
            .unwrap_or_default();
        let tick = if t.done { "X" } else { " " };
        let mut title = t.title.clone();
        let named = super::import::paths(&title);
        let missing: Vec<&String> = t.files.iter().filter(|f| !named.contains(f)).collect();
        if !missing.is_empty() {
            let list: Vec<&str> = missing.iter().map(|f| f.as_str()).collect();
            let _ = write!(title, " in {}", list.join(", "));
        }
        let _ = writeln!(s, "- [{tick}] {}{tags} {title}", t.id);
    }
    s
}

fn kiro(docs: &SpecDocs, map: Option<&ImportMap>) -> Vec<(String, String)> {
    let reqs = requirements(docs);
    let all_cases = cases::parse(&docs.test);
    let mut r_md = String::from("# Requirements Document\n\n## Introduction\n\n");
    for l in overview(docs) {
        let _ = writeln!(r_md, "{l}");
    }
    r_md.push_str("\n## Requirements\n");
    let mut other = String::new();
    for (_, r) in &reqs {
        if !r.id.starts_with("REQ-") {
            let _ = writeln!(other, "- {}: {}", r.id, r.text.replace('\n', " "));
            continue;
        }
        let n: u32 = r.id["REQ-".len()..].parse().unwrap_or(0);
        let mut lines = r.text.lines();
        let first = lines.next().unwrap_or("");
        let _ = writeln!(r_md, "\n### Requirement {n}: {first}\n");
        for l in lines {
            let _ = writeln!(r_md, "{l}");
        }
        r_md.push_str("\n#### Acceptance Criteria\n\n");
        numbered(&mut r_md, &all_cases, &r.id, |c| {
            c.expected.clone().unwrap_or_default()
        });
    }
    if !other.is_empty() {
        let _ = write!(r_md, "\n## Other requirements\n\n{other}");
    }
    vec![
        ("requirements.md".into(), r_md),
        (
            "design.md".into(),
            format!("# Design Document\n\n{}\n", design_prose(docs)),
        ),
        ("tasks.md".into(), kiro_tasks(docs, map)),
    ]
}

fn kiro_tasks(docs: &SpecDocs, map: Option<&ImportMap>) -> String {
    let mut s = String::from("# Implementation Plan\n");
    let mut groups: Vec<(String, Vec<Task>)> = Vec::new();
    for (p, t) in phased(&docs.tasks) {
        match groups.last_mut() {
            Some((g, ts)) if *g == p => ts.push(t),
            _ => groups.push((p, vec![t])),
        }
    }
    for (g, (heading, ts)) in groups.iter().enumerate() {
        let number = heading
            .split_once(". ")
            .filter(|(n, _)| n.chars().all(|c| c.is_ascii_digit()))
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .unwrap_or_else(|| ((g + 1).to_string(), heading.clone()));
        let tick = |done: bool| if done { "x" } else { " " };
        let _ = writeln!(
            s,
            "\n- [{}] {}. {}",
            tick(ts.iter().all(|t| t.done)),
            number.0,
            number.1
        );
        for (k, t) in ts.iter().enumerate() {
            let label = map
                .and_then(|m| m.ids.get(&t.id))
                .map(|o| o.label.clone())
                .unwrap_or_else(|| format!("{}.{}", number.0, k + 1));
            let _ = writeln!(s, "  - [{}] {label} {}", tick(t.done), t.title);
            let ds = details(t);
            for d in &ds {
                let _ = writeln!(s, "    - {d}");
            }
            if !ds
                .iter()
                .any(|d| d.to_lowercase().contains("requirements:"))
                && !t.requirements.is_empty()
            {
                let nums: Vec<String> = t
                    .requirements
                    .iter()
                    .filter_map(|r| r.strip_prefix("REQ-"))
                    .filter_map(|n| n.parse::<u32>().ok())
                    .map(|n| n.to_string())
                    .collect();
                let _ = writeln!(s, "    - _Requirements: {}_", nums.join(", "));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spec our author wrote (no `imported.json`): its requirements become FRs with their
    /// cases kept as numbered checks in spec-kit, and Kiro requirements with one criterion per
    /// case; ticked tasks stay ticked in both.
    #[test]
    fn an_authored_spec_exports_without_losing_a_case_or_a_tick() {
        let ex = crate::spec::examples();
        let text = |d: &str| ex.iter().find(|(n, _)| *n == d).unwrap().1.to_string();
        let docs = SpecDocs {
            requirement: text("requirement.md"),
            design: text("design.md"),
            tasks: text("tasks.md").replacen("- [ ] T001", "- [x] T001", 1),
            test: text("test.md"),
            ..SpecDocs::default()
        };
        let files = export(&docs, Format::SpecKit);
        let spec = &files.iter().find(|(n, _)| n == "spec.md").unwrap().1;
        assert!(
            spec.contains(
                "- **FR-003**: `DELETE /api/entries/:id` deletes the entry only for its owner"
            ),
            "{spec}"
        );
        assert!(
            spec.contains("### Acceptance checks of functional requirements"),
            "{spec}"
        );
        assert!(spec.contains("3. (FR-003) run the route tests"), "{spec}");
        let tasks = &files.iter().find(|(n, _)| n == "tasks.md").unwrap().1;
        assert!(
            tasks.contains("- [X] T001 Add the owner-checked delete route"),
            "{tasks}"
        );
        assert!(
            tasks.contains(
                "- [ ] T002 Add the Delete button and its confirmation in public/entries.js"
            ),
            "{tasks}"
        );
        let files = export(&docs, Format::Kiro);
        let reqs = &files
            .iter()
            .find(|(n, _)| n == "requirements.md")
            .unwrap()
            .1;
        assert!(
            reqs.contains("### Requirement 3: `DELETE /api/entries/:id`"),
            "{reqs}"
        );
        assert!(
            reqs.contains("1. 204 for the owner; 403 for the other user"),
            "{reqs}"
        );
        let tasks = &files.iter().find(|(n, _)| n == "tasks.md").unwrap().1;
        assert!(
            tasks.contains("  - [x] 1.1 Add the owner-checked delete route"),
            "{tasks}"
        );
        assert!(tasks.contains("    - _Requirements: 3_"), "{tasks}");
    }
}
