//! spec-kit (`specs/NNN-name/`): `spec.md` holds user stories with Given/When/Then acceptance
//! scenarios, functional requirements `- **FR-001**: System MUST …`, success criteria
//! `- **SC-001**: …` and assumptions; `tasks.md` holds `- [ ] T012 [P] [US1] Description with
//! path` under `## Phase N: …` headings; `plan.md` and the rest are the design, quoted or linked.
//!
//! FR-NNN becomes REQ-NNN and SC-NNN becomes NFR-NNN (the number kept); each user story becomes
//! a requirement numbered after the last FR, so its scenarios (cases) and `[USn]` tasks have one
//! to name. A scenario or success criterion that names an FR checks it too; an FR nothing names
//! has no testable criterion, which `inspect` reports at its line.

use std::collections::BTreeMap;

use super::{Format, Imported, Loc, Reader, Req, Source, Task};
use crate::error::Result;

/// A user story while it is read.
struct Story {
    n: u32,
    title: String,
    priority: String,
    text: Vec<String>,
    at: Loc,
    scenarios: Vec<(String, Loc)>,
}

/// The files `/speckit.plan` writes beside plan.md that are prose: quoted in design.md.
const NOTES: [&str; 3] = ["research.md", "data-model.md", "quickstart.md"];

/// Reads a spec-kit feature directory.
pub fn read(r: &Reader) -> Result<Imported> {
    let (spec, mut out) = r.start("spec.md", Format::SpecKit)?;
    let stories = read_spec(&spec, &mut out)?;
    r.design_and_tasks("plan.md", &mut out, |t, o| read_tasks(t, &stories, o))?;
    // The plan's companions hold no line shape of ours: quoted as written, with their places.
    for name in NOTES {
        if let Some(src) = r.optional(name)? {
            out.quote_sections(&src);
        }
    }
    let mut known = vec!["spec.md", "plan.md", "tasks.md"];
    known.extend(NOTES);
    out.links = r.others(&known);
    Ok(out)
}

/// `FR-007` → `REQ-007`.
fn ours(prefix: &str, n: u32) -> String {
    format!("{prefix}-{n:03}")
}

/// Reads spec.md; returns story number → our requirement id.
fn read_spec(spec: &Source, out: &mut Imported) -> Result<BTreeMap<u32, String>> {
    let mut section = String::new();
    let mut heading = String::new();
    let mut stories: Vec<Story> = Vec::new();
    let mut in_story = false;
    let mut assumptions = 0u32;
    let mut criteria: Vec<(u32, String, Loc)> = Vec::new();
    for (i, raw, head) in spec.lines() {
        let line = raw.trim_end();
        if let Some((level, text)) = head {
            out.flush();
            if level == 1 {
                out.title = text
                    .split_once(':')
                    .map(|(_, t)| t.trim())
                    .unwrap_or(&text)
                    .to_string();
                continue;
            }
            if level == 2 {
                section = text.to_lowercase();
            }
            heading = text.clone();
            in_story = false;
            if let Some(story) = story_heading(&text, spec.at(i)) {
                in_story = true;
                stories.push(story);
            }
            continue;
        }
        if line.trim().is_empty() || line.trim() == "---" {
            continue;
        }
        if let Some(c) = re!(r"^\s*[-*]\s+\*\*(FR|SC)-(\d+)\*\*\s*:?\s*(.*)$").captures(line) {
            let n: u32 = c[2].parse().unwrap_or(0);
            if &c[1] == "FR" {
                out.reqs.push(Req {
                    id: ours("REQ", n),
                    label: format!("FR-{:03}", n),
                    text: c[3].trim().to_string(),
                    at: spec.at(i),
                    group: "Functional requirements".into(),
                });
            } else {
                criteria.push((n, c[3].trim().to_string(), spec.at(i)));
            }
            continue;
        }
        if in_story && let Some(story) = stories.last_mut() {
            story_line(story, line, spec.at(i));
            continue;
        }
        if section.starts_with("assumptions")
            && let Some(item) = line.trim().strip_prefix("- ")
        {
            assumptions += 1;
            out.reqs.push(Req {
                id: ours("ASM", assumptions),
                label: format!("Assumption {assumptions}"),
                text: item.trim().to_string(),
                at: spec.at(i),
                group: "Assumptions".into(),
            });
            continue;
        }
        if out.reqs.is_empty() && stories.is_empty() && section.is_empty() {
            out.overview.push(line.trim().to_string());
            continue;
        }
        out.keep(|| heading.clone(), spec.at(i), &raw);
    }
    out.flush();
    if !out.reqs.iter().any(|r| r.id.starts_with("REQ-")) && stories.is_empty() {
        return Err(super::bad(
            &spec.name,
            "holds no functional requirement (`- **FR-001**: System MUST …`) and no user story (`### User Story 1 - Title (Priority: P1)`)",
            "write at least one functional requirement or user story in spec-kit's shape (its templates/spec-template.md), or name another format with --from",
        ));
    }
    let story_ids = add_stories(stories, out);
    add_criteria(criteria, out);
    Ok(story_ids)
}

/// The user story a heading starts (`User Story 2 - Title (Priority: P1)`), if it is one.
fn story_heading(text: &str, at: Loc) -> Option<Story> {
    let c = re!(
        r"(?i)^User Story\s+(\d+)\s*(?:[-–—:]\s*)?(.*?)\s*(?:\(Priority:\s*(P\d+)\))?\s*(?:🎯.*)?$"
    )
    .captures(text)?;
    Some(Story {
        n: c[1].parse().unwrap_or(0),
        title: c[2].trim().to_string(),
        priority: c.get(3).map(|m| m.as_str().to_string()).unwrap_or_default(),
        text: Vec::new(),
        at,
        scenarios: Vec::new(),
    })
}

/// A line inside a user story: a numbered Given/When scenario, the `Acceptance Scenarios:`
/// label (dropped), or the story's prose.
fn story_line(story: &mut Story, line: &str, at: Loc) {
    match re!(r"^\s*\d+[.)]\s+(.*)$").captures(line) {
        Some(c)
            if super::plain(&c[1]).contains("Given") || super::plain(&c[1]).contains("When") =>
        {
            story.scenarios.push((c[1].trim().to_string(), at));
        }
        _ if super::plain(line).trim() == "Acceptance Scenarios:" => {}
        _ => story.text.push(line.trim().to_string()),
    }
}

/// FR ids a text names, as ours, when that FR exists.
fn fr_refs(text: &str, out: &Imported) -> Vec<String> {
    re!(r"\bFR-(\d+)\b")
        .captures_iter(text)
        .filter_map(|c| c[1].parse::<u32>().ok())
        .map(|n| ours("REQ", n))
        .filter(|id| out.reqs.iter().any(|r| &r.id == id))
        .collect()
}

/// Each story becomes a requirement numbered after the last FR; its scenarios become cases.
fn add_stories(stories: Vec<Story>, out: &mut Imported) -> BTreeMap<u32, String> {
    let last_fr = out
        .reqs
        .iter()
        .filter_map(|r| {
            r.id.strip_prefix("REQ-")
                .and_then(|n| n.parse::<u32>().ok())
        })
        .max()
        .unwrap_or(0);
    let mut ids = BTreeMap::new();
    for (k, story) in stories.into_iter().enumerate() {
        let id = ours("REQ", last_fr + k as u32 + 1);
        ids.insert(story.n, id.clone());
        let priority = if story.priority.is_empty() {
            String::new()
        } else {
            format!(" (Priority: {})", story.priority)
        };
        let mut text = format!("User story {}: {}{priority}", story.n, story.title);
        for l in &story.text {
            text.push('\n');
            text.push_str(l);
        }
        out.reqs.push(Req {
            id: id.clone(),
            label: format!("US{}", story.n),
            text,
            at: story.at.clone(),
            group: "User stories".into(),
        });
        for (j, (scenario, at)) in story.scenarios.into_iter().enumerate() {
            let flat = super::plain(&scenario);
            let (steps, expected) = match flat.find("Then") {
                Some(t) => (
                    flat[..t].trim().trim_end_matches(',').to_string(),
                    flat[t..].trim().to_string(),
                ),
                None => (flat.clone(), flat.clone()),
            };
            let mut reqs = vec![id.clone()];
            reqs.extend(fr_refs(&flat, out));
            let label = format!("US{}/AC{}", story.n, j + 1);
            let title = format!("{label}: {}", short(&expected));
            out.push_case(label, reqs, title, steps, expected, at);
        }
    }
    ids
}

/// Success criteria become NFRs, each with the case that measures it.
fn add_criteria(criteria: Vec<(u32, String, Loc)>, out: &mut Imported) {
    for (n, text, at) in criteria {
        let id = ours("NFR", n);
        let label = format!("SC-{n:03}");
        out.reqs.push(Req {
            id: id.clone(),
            label: label.clone(),
            text: text.clone(),
            at: at.clone(),
            group: "Success criteria".into(),
        });
        let mut reqs = vec![id];
        reqs.extend(fr_refs(&text, out));
        let title = format!("{label}: {}", short(&text));
        let steps = format!("measure the outcome {label} names");
        out.push_case(label, reqs, title, steps, text, at);
    }
}

/// The first words of a text, for a title.
pub fn short(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= 72 {
        return flat;
    }
    let cut: String = flat.chars().take(72).collect();
    match cut.rfind(' ') {
        Some(i) => format!("{}…", &cut[..i]),
        None => format!("{cut}…"),
    }
}

/// What a line of tasks.md is.
struct Parsed {
    done: bool,
    id: String,
    parallel: bool,
    story: Option<u32>,
    title: String,
}

fn task_line(line: &str) -> Option<Parsed> {
    let c = re!(r"^\s*[-*]\s+\[([ xX])\]\s+(T\d{2,})\b\s*(.*)$").captures(line)?;
    let mut rest = c[3].trim();
    let (mut parallel, mut story) = (false, None);
    loop {
        if let Some(r) = rest.strip_prefix("[P]") {
            parallel = true;
            rest = r.trim_start();
        } else if let Some(r) = rest.strip_prefix("[US")
            && let Some(end) = r.find(']')
        {
            story = r[..end].parse().ok();
            rest = r[end + 1..].trim_start();
        } else {
            break;
        }
    }
    Some(Parsed {
        done: &c[1] != " ",
        id: c[2].to_string(),
        parallel,
        story,
        title: rest.to_string(),
    })
}

/// Reads tasks.md: ids kept, `[P]` and the phase order give the dependencies.
fn read_tasks(src: &Source, stories: &BTreeMap<u32, String>, out: &mut Imported) {
    let every: Vec<String> = if stories.is_empty() {
        out.reqs
            .iter()
            .filter(|r| r.id.starts_with("REQ-"))
            .map(|r| r.id.clone())
            .collect()
    } else {
        stories.values().cloned().collect()
    };
    let (mut phase, mut sub) = (String::new(), String::new());
    let mut order = Order::default();
    for (i, raw, head) in src.lines() {
        if let Some((level, text)) = head {
            out.flush();
            match level {
                1 => {}
                2 => {
                    phase = text.clone();
                    sub.clear();
                    order.barrier();
                }
                _ => sub = text.clone(),
            }
            continue;
        }
        let Some(t) = task_line(&raw) else {
            if !raw.trim().is_empty() && raw.trim() != "---" {
                let under = if sub.is_empty() { &phase } else { &sub };
                out.keep(|| under.clone(), src.at(i), &raw);
            }
            continue;
        };
        out.flush();
        let files = super::paths(&t.title);
        let mut reqs = match t.story.and_then(|n| stories.get(&n)) {
            Some(id) => vec![id.clone()],
            None => every.clone(),
        };
        reqs.extend(fr_refs(&t.title, out));
        let mut depends = order.next(&t.id, t.parallel, &files);
        let question = order.conflict(&t.id, t.parallel, &files);
        for c in re!(r"(?i)depends on ((?:T\d+(?:,\s*|\s+and\s+)?)+)").captures_iter(&t.title) {
            depends.extend(
                re!(r"\bT\d{2,}\b")
                    .find_iter(&c[1])
                    .map(|m| m.as_str().to_string()),
            );
        }
        depends.dedup();
        let mut label = t.id.clone();
        if t.parallel {
            label.push_str(" [P]");
        }
        if let Some(n) = t.story {
            label.push_str(&format!(" [US{n}]"));
        }
        out.tasks.push(Task {
            id: t.id,
            label,
            kind: super::kind_of(&format!("{phase} {sub}"), &t.title, &files),
            title: t.title,
            done: t.done,
            reqs,
            depends,
            files,
            phase: phase.clone(),
            details: Vec::new(),
            question,
            at: src.at(i),
        });
    }
    out.flush();
}

/// spec-kit's order: tasks run in the order written, phase after phase; consecutive `[P]` tasks
/// of a phase run side by side (they wait for what the first of them waits for), and the task
/// after them waits for all of them.
#[derive(Default)]
struct Order {
    /// What the next sequential task waits for.
    wait: Vec<String>,
    /// The run of `[P]` tasks in progress, with what they wait for and the files they name.
    run: Vec<(String, Vec<String>)>,
    run_wait: Vec<String>,
}

impl Order {
    fn barrier(&mut self) {
        if !self.run.is_empty() {
            self.wait = self.run.drain(..).map(|(id, _)| id).collect();
        }
    }

    fn next(&mut self, id: &str, parallel: bool, files: &[String]) -> Vec<String> {
        if parallel {
            if self.run.is_empty() {
                self.run_wait = self.wait.clone();
            }
            self.run.push((id.to_string(), files.to_vec()));
            return self.run_wait.clone();
        }
        self.barrier();
        std::mem::replace(&mut self.wait, vec![id.to_string()])
    }

    /// Two `[P]` tasks of one run that name the same file: spec-kit's `[P]` means "different
    /// files, no dependencies", so which goes first is an open question.
    fn conflict(&self, id: &str, parallel: bool, files: &[String]) -> Option<String> {
        if !parallel {
            return None;
        }
        let (other, shared) = self
            .run
            .iter()
            .filter(|(o, _)| o != id)
            .find_map(|(o, fs)| fs.iter().find(|f| files.contains(f)).map(|f| (o, f)))?;
        Some(format!(
            "[NEEDS CLARIFICATION: {other} and {id} may run in parallel (spec-kit's P mark) but both change {shared}: which goes first?]"
        ))
    }
}
