//! Kiro (`.kiro/specs/<name>/`): `requirements.md` holds `### Requirement N` (with a user story
//! and `#### Acceptance Criteria` in EARS form: `WHEN … THE SYSTEM SHALL …`, `IF … THEN …`,
//! `WHILE`, `WHERE`); `tasks.md` holds two-level tasks `- [ ] 2.1 …` whose `_Requirements: 2.1,
//! 3.3_` line names acceptance criteria; `design.md` is quoted.
//!
//! Requirement N becomes REQ-N (the number kept) and each criterion N.M one acceptance case.
//! A task with sub-tasks is a group (its title the phase heading); every other task is a task
//! of ours, in the order written (each waits for the one before it).

use std::path::PathBuf;
use std::sync::LazyLock;

use regex::Regex;

use super::{Format, Imported, Loc, Quote, Reader, Req, Source, Task};
use crate::error::Result;

static REQUIREMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^Requirement\s+(\d+)\s*(?:[:.–—-]\s*(.*))?$").expect("static regex")
});
static NUMBERED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(\d+)[.)]\s+(.*)$").expect("static regex"));
static TASK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\s*)[-*]\s+\[([ xX-])\]\*?\s+(\d+(?:\.\d+)*)\.?\s+(.*)$").expect("static regex")
});
static CRITERION_REF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(\d+)(?:\.(\d+))?\b").expect("static regex"));

/// Reads a Kiro spec directory.
pub fn read(r: &Reader) -> Result<Imported> {
    let reqs = r.required("requirements.md", Format::Kiro)?;
    let mut out = Imported::new(Format::Kiro, r.source());
    out.files.push(reqs.name.clone());
    read_requirements(&reqs, &mut out)?;
    r.design_and_tasks("design.md", &mut out, read_tasks)?;
    out.links = r.others(&["requirements.md", "design.md", "tasks.md"]);
    Ok(out)
}

fn read_requirements(src: &Source, out: &mut Imported) -> Result<()> {
    let lines = super::uncommented(&src.text);
    let mut heading = String::new();
    let mut current: Option<usize> = None;
    let mut in_criteria = false;
    let mut quote: Option<Quote> = None;
    let mut last_case: Option<usize> = None;
    for (i, raw) in lines.iter().enumerate() {
        if let Some((level, text)) = super::heading(raw) {
            super::render::flush(&mut quote, out);
            last_case = None;
            if level == 1 {
                continue;
            }
            heading = text.clone();
            in_criteria =
                current.is_some() && text.to_lowercase().starts_with("acceptance criteria");
            if in_criteria {
                continue;
            }
            current = None;
            if let Some(c) = REQUIREMENT.captures(&text) {
                let n: u32 = c[1].parse().unwrap_or(0);
                out.reqs.push(Req {
                    id: format!("REQ-{n:03}"),
                    label: format!("Requirement {n}"),
                    text: c
                        .get(2)
                        .map(|m| m.as_str().trim().to_string())
                        .unwrap_or_default(),
                    at: src.at(i),
                    group: "Requirements".into(),
                });
                current = Some(out.reqs.len() - 1);
            }
            continue;
        }
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(r) = current {
            if in_criteria && let Some(c) = NUMBERED.captures(raw) {
                let req = out.reqs[r].id.clone();
                let n = out.reqs[r]
                    .label
                    .trim_start_matches("Requirement ")
                    .to_string();
                add_criterion(out, &req, &format!("{n}.{}", &c[1]), c[2].trim(), src.at(i));
                last_case = Some(out.cases.len() - 1);
                continue;
            }
            if in_criteria
                && let Some(k) = last_case
                && raw.starts_with(' ')
            {
                // A criterion wrapped onto the next line.
                let case = &mut out.cases[k];
                case.expected.push(' ');
                case.expected.push_str(line);
                continue;
            }
            if !in_criteria {
                let req = &mut out.reqs[r];
                if !req.text.is_empty() {
                    req.text.push('\n');
                }
                req.text.push_str(line);
                continue;
            }
        }
        if heading.to_lowercase() == "introduction" {
            out.overview.push(line.to_string());
            continue;
        }
        super::render::keep(&mut quote, || heading.clone(), src.at(i), raw);
    }
    super::render::flush(&mut quote, out);
    if out.reqs.is_empty() {
        return Err(super::bad(
            PathBuf::from(&src.name),
            "holds no requirement heading (`### Requirement 1: Title`)",
            "write Kiro's shape (`### Requirement N` with `#### Acceptance Criteria` in EARS form), or name another format with --from",
        ));
    }
    Ok(())
}

/// One EARS criterion: the trigger (`WHEN …`, `IF …`, `WHILE …`, `WHERE …`) is what to do, the
/// criterion as written is what must hold.
fn add_criterion(out: &mut Imported, req: &str, label: &str, text: &str, at: Loc) {
    let upper = text.to_uppercase();
    let cut = [" THEN ", ", THE ", " THE "]
        .iter()
        .filter_map(|k| upper.find(k))
        .min()
        .filter(|_| {
            ["WHEN", "IF", "WHILE", "WHERE"]
                .iter()
                .any(|k| upper.starts_with(k))
        });
    let steps = match cut {
        Some(c) => text[..c].trim().trim_end_matches(',').to_string(),
        None => format!("exercise what criterion {label} describes"),
    };
    let title = format!("{label}: {}", super::speckit::short(text));
    out.push_case(
        label.to_string(),
        vec![req.to_string()],
        title,
        steps,
        text.to_string(),
        at,
    );
}

/// A task line while tasks.md is read.
struct Line {
    indent: usize,
    done: bool,
    number: String,
    title: String,
    at: Loc,
    details: Vec<String>,
}

fn read_tasks(src: &Source, out: &mut Imported) {
    let lines = super::uncommented(&src.text);
    let mut items: Vec<Line> = Vec::new();
    let mut heading = String::new();
    let mut quote: Option<Quote> = None;
    for (i, raw) in lines.iter().enumerate() {
        if let Some((level, text)) = super::heading(raw) {
            super::render::flush(&mut quote, out);
            if level > 1 {
                heading = text;
            }
            continue;
        }
        if let Some(c) = TASK.captures(raw) {
            super::render::flush(&mut quote, out);
            items.push(Line {
                indent: c[1].len(),
                done: &c[2] == "x" || &c[2] == "X",
                number: c[3].to_string(),
                title: c[4].trim().to_string(),
                at: src.at(i),
                details: Vec::new(),
            });
            continue;
        }
        if raw.trim().is_empty() {
            continue;
        }
        if let Some(item) = items.last_mut()
            && raw.starts_with(' ')
            && quote.is_none()
        {
            item.details
                .push(raw.trim().trim_start_matches("- ").to_string());
            continue;
        }
        super::render::keep(&mut quote, || heading.clone(), src.at(i), raw);
    }
    super::render::flush(&mut quote, out);
    add_tasks(items, out);
}

/// Leaf tasks become ours, numbered T001… in order; a task with sub-tasks names the phase.
fn add_tasks(items: Vec<Line>, out: &mut Imported) {
    let every: Vec<String> = out.reqs.iter().map(|r| r.id.clone()).collect();
    let mut phase = String::new();
    let mut previous: Option<String> = None;
    for (k, item) in items.iter().enumerate() {
        let has_children = items.get(k + 1).is_some_and(|next| {
            next.indent > item.indent && next.number.starts_with(&format!("{}.", item.number))
        });
        if has_children {
            phase = format!("{}. {}", item.number, item.title);
            continue;
        }
        let id = format!("T{:03}", out.tasks.len() + 1);
        let text = format!("{} {}", item.title, item.details.join(" "));
        let files = super::paths(&text);
        let mut reqs = Vec::new();
        for d in &item.details {
            let flat = d.trim_matches('_').trim_matches('*');
            let lower = flat.to_lowercase();
            let Some(list) = lower
                .strip_prefix("requirements:")
                .or_else(|| lower.strip_prefix("validates: requirements"))
            else {
                continue;
            };
            if list.contains("all requirements") {
                reqs = every.clone();
                break;
            }
            for c in CRITERION_REF.captures_iter(list) {
                let rid = format!("REQ-{:03}", c[1].parse::<u32>().unwrap_or(0));
                if !reqs.contains(&rid) {
                    reqs.push(rid);
                }
            }
        }
        out.tasks.push(Task {
            id: id.clone(),
            label: item.number.clone(),
            kind: super::kind_of(&phase, &item.title, &files),
            title: item.title.clone(),
            done: item.done,
            reqs,
            depends: previous.iter().cloned().collect(),
            files,
            phase: phase.clone(),
            details: item.details.clone(),
            question: None,
            at: item.at.clone(),
        });
        previous = Some(id);
    }
}
