//! OpenSpec (`openspec/changes/<id>/`): `proposal.md` (Why, What Changes, Impact), delta specs
//! `specs/<capability>/spec.md` with `## ADDED|MODIFIED|REMOVED|RENAMED Requirements`, each
//! `### Requirement: <name>` with `#### Scenario: <name>` bullets `- **WHEN** …`, `- **THEN** …`;
//! `tasks.md` with `- [ ] 1.1 …` under `## 1. Group`; `design.md` is quoted.
//!
//! ADDED and MODIFIED requirements become REQ-001… (keyed by capability and name), REMOVED ones
//! constraints (CON-001…: "no longer"), each section kept apart; RENAMED entries are quoted. A
//! scenario becomes one acceptance case. Tasks keep their numbers as labels and run in order.

use super::{Format, Imported, Loc, Quote, Reader, Req, Source};
use crate::error::Result;

/// Reads an OpenSpec change directory.
pub fn read(r: &Reader) -> Result<Imported> {
    let (proposal, mut out) = r.start("proposal.md", Format::OpenSpec)?;
    read_proposal(&proposal, &mut out);
    let specs = r.under("specs", "spec.md")?;
    for spec in &specs {
        out.files.push(spec.name.clone());
        read_delta(spec, &mut out);
    }
    if !out
        .reqs
        .iter()
        .any(|q| q.id.starts_with("REQ-") || q.id.starts_with("CON-"))
    {
        return Err(super::bad(
            r.dir.join("specs"),
            "holds no delta requirement (`## ADDED Requirements` then `### Requirement: <name>` in `specs/<capability>/spec.md`)",
            "import the change directory that holds the delta specs (`openspec/changes/<id>/`), or name another format with --from",
        ));
    }
    r.design_and_tasks("design.md", &mut out, read_tasks)?;
    let mut known = vec![
        "proposal.md".to_string(),
        "design.md".into(),
        "tasks.md".into(),
    ];
    known.extend(specs.iter().filter_map(|s| {
        s.name
            .rsplit_once("/specs/")
            .map(|(_, rest)| format!("specs/{rest}"))
    }));
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    out.links = r.others(&known);
    Ok(out)
}

fn read_proposal(src: &Source, out: &mut Imported) {
    let mut heading = String::new();
    for (i, raw, head) in src.lines() {
        if let Some((level, text)) = head {
            out.flush();
            if level == 1 {
                out.title = text;
            } else {
                heading = text;
            }
            continue;
        }
        if raw.trim().is_empty() {
            continue;
        }
        let h = heading.to_lowercase();
        if h == "why" || h == "what changes" {
            out.overview.push(raw.trim_end().to_string());
            continue;
        }
        out.keep(|| heading.clone(), src.at(i), &raw);
    }
    out.flush();
}

/// The capability a delta spec belongs to: its directory's name.
fn capability(src: &Source) -> String {
    let path = src.name.trim_end_matches("/spec.md");
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// One delta spec: its sections kept apart, each requirement keyed by capability and name.
fn read_delta(src: &Source, out: &mut Imported) {
    let cap = capability(src);
    let mut section = String::new();
    let mut heading = String::new();
    let mut current: Option<usize> = None;
    let mut scenario: Option<(String, Vec<String>, Loc)> = None;
    for (i, raw, head) in src.lines() {
        if let Some((level, text)) = head {
            out.flush();
            end_scenario(&mut scenario, current, out);
            if level == 2 {
                section = text.split_whitespace().next().unwrap_or("").to_uppercase();
                current = None;
            }
            heading = text.clone();
            if level == 3
                && let Some(name) = text.strip_prefix("Requirement:")
            {
                current = add_requirement(out, &section, &cap, name.trim(), src.at(i));
            } else if level == 4
                && let Some(name) = text.strip_prefix("Scenario:")
            {
                scenario = current.map(|_| (name.trim().to_string(), Vec::new(), src.at(i)));
            } else if level <= 3 {
                current = None;
            }
            continue;
        }
        if raw.trim().is_empty() {
            continue;
        }
        if let Some((_, lines, _)) = scenario.as_mut() {
            lines.push(raw.trim().to_string());
            continue;
        }
        if let Some(r) = current {
            let req = &mut out.reqs[r];
            if !req.text.is_empty() {
                req.text.push('\n');
            }
            req.text.push_str(raw.trim());
            continue;
        }
        out.keep(|| format!("{cap}: {heading}"), src.at(i), &raw);
    }
    out.flush();
    end_scenario(&mut scenario, current, out);
}

/// ADDED and MODIFIED requirements are REQs, REMOVED ones CONs; RENAMED entries stay quoted.
fn add_requirement(
    out: &mut Imported,
    section: &str,
    cap: &str,
    name: &str,
    at: Loc,
) -> Option<usize> {
    let prefix = match section {
        "ADDED" | "MODIFIED" => "REQ",
        "REMOVED" => "CON",
        _ => return None,
    };
    let n = out.reqs.iter().filter(|r| r.id.starts_with(prefix)).count() + 1;
    let text = if prefix == "CON" {
        format!("Removed: {name}.")
    } else {
        String::new()
    };
    out.reqs.push(Req {
        id: format!("{prefix}-{n:03}"),
        label: format!("{cap}: {name}"),
        text,
        at,
        group: format!("{section} requirements ({cap})"),
    });
    Some(out.reqs.len() - 1)
}

/// A scenario's GIVEN/WHEN lines are what to do, its THEN/AND lines what must hold.
fn end_scenario(
    scenario: &mut Option<(String, Vec<String>, Loc)>,
    current: Option<usize>,
    out: &mut Imported,
) {
    let (Some((name, lines, at)), Some(r)) = (scenario.take(), current) else {
        return;
    };
    let (mut steps, mut expected) = (Vec::new(), Vec::new());
    let mut then = false;
    let raw = lines.clone();
    let lines: Vec<String> = lines
        .iter()
        .map(|l| super::plain(l.trim_start_matches("- ")))
        .collect();
    for l in lines {
        let upper = l.to_uppercase();
        if upper.starts_with("THEN") {
            then = true;
        }
        if then {
            expected.push(l)
        } else {
            steps.push(l)
        }
    }
    let req = out.reqs[r].clone();
    let label = format!("{} / {name}", req.label);
    if req.id.starts_with("CON-") {
        // A removed requirement's scenario says what no longer happens: kept as written, not
        // run as a check.
        out.quotes.push(Quote {
            heading: format!("{label} (removed)"),
            at,
            text: format!("{}\n", raw.join("\n")),
        });
        return;
    }
    let title = format!(
        "{}: {name}",
        req.label.split(": ").nth(1).unwrap_or(&req.label)
    );
    if expected.is_empty() {
        expected = steps.clone();
    }
    out.push_case(
        label,
        vec![req.id],
        title,
        steps.join("; "),
        expected.join("; "),
        at,
    );
}

/// Leaf tasks become ours under the heading above them, each serving the requirements of the
/// capabilities its title names (all of them when it names none).
fn read_tasks(src: &Source, out: &mut Imported) {
    let every: Vec<String> = out
        .reqs
        .iter()
        .filter(|r| r.id.starts_with("REQ-"))
        .map(|r| r.id.clone())
        .collect();
    let task = re!(r"^(\s*)[-*]\s+\[([ xX])\]\s+(\d+(?:\.\d+)*)\.?\s+(.*)$");
    for (item, _) in super::numbered_tasks(src, out, task, false) {
        let files = super::paths(&item.title);
        let named: Vec<String> = out
            .reqs
            .iter()
            .filter(|r| {
                r.id.starts_with("REQ-")
                    && r.label
                        .split(": ")
                        .next()
                        .is_some_and(|cap| item.title.contains(cap))
            })
            .map(|r| r.id.clone())
            .collect();
        let reqs = if named.is_empty() {
            every.clone()
        } else {
            named
        };
        let phase = item.heading.clone();
        item.push(out, phase, reqs, files);
    }
}
