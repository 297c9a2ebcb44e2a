//! Kiro (`.kiro/specs/<name>/`): `requirements.md` holds `### Requirement N` (with a user story
//! and `#### Acceptance Criteria` in EARS form: `WHEN … THE SYSTEM SHALL …`, `IF … THEN …`,
//! `WHILE`, `WHERE`); `tasks.md` holds two-level tasks `- [ ] 2.1 …` whose `_Requirements: 2.1,
//! 3.3_` line names acceptance criteria; `design.md` is quoted.
//!
//! Requirement N becomes REQ-N (the number kept) and each criterion N.M one acceptance case.
//! A task with sub-tasks is a group (its title the phase heading); every other task is a task
//! of ours, in the order written (each waits for the one before it).

use super::{Format, Imported, Loc, Reader, Req, Source};
use crate::error::Result;

/// Reads a Kiro spec directory.
pub fn read(r: &Reader) -> Result<Imported> {
    let (reqs, mut out) = r.start("requirements.md", Format::Kiro)?;
    read_requirements(&reqs, &mut out)?;
    r.design_and_tasks("design.md", &mut out, read_tasks)?;
    out.links = r.others(&["requirements.md", "design.md", "tasks.md"]);
    Ok(out)
}

fn read_requirements(src: &Source, out: &mut Imported) -> Result<()> {
    let mut heading = String::new();
    let mut current: Option<usize> = None;
    let mut in_criteria = false;
    let mut last_case: Option<usize> = None;
    for (i, raw, head) in src.lines() {
        if let Some((level, text)) = head {
            out.flush();
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
            if let Some(c) = re!(r"(?i)^Requirement\s+(\d+)\s*(?:[:.–—-]\s*(.*))?$").captures(&text)
            {
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
            if in_criteria && let Some(c) = re!(r"^\s*(\d+)[.)]\s+(.*)$").captures(&raw) {
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
        out.keep(|| heading.clone(), src.at(i), &raw);
    }
    out.flush();
    if out.reqs.is_empty() {
        return Err(super::bad(
            &src.name,
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

/// Leaf tasks become ours, numbered T001… in order; a task with sub-tasks names the phase. A
/// `_Requirements: 2.1, 3.3_` detail names the requirements (by criterion) a task serves.
fn read_tasks(src: &Source, out: &mut Imported) {
    let task = re!(r"^(\s*)[-*]\s+\[([ xX-])\]\*?\s+(\d+(?:\.\d+)*)\.?\s+(.*)$");
    let every: Vec<String> = out.reqs.iter().map(|r| r.id.clone()).collect();
    for (item, phase) in super::numbered_tasks(src, out, task, true) {
        let files = super::paths(&format!("{} {}", item.title, item.details.join(" ")));
        let mut reqs = Vec::new();
        for d in &item.details {
            let lower = d.trim_matches('_').trim_matches('*').to_lowercase();
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
            for c in re!(r"\b(\d+)(?:\.(\d+))?\b").captures_iter(list) {
                let rid = format!("REQ-{:03}", c[1].parse::<u32>().unwrap_or(0));
                if !reqs.contains(&rid) {
                    reqs.push(rid);
                }
            }
        }
        item.push(out, phase, reqs, files);
    }
}
