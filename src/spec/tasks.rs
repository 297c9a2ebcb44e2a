//! Tasks of `tasks.md`: parsing, dependency order, and ticking the checkbox.

use std::collections::{BTreeMap, BTreeSet};

use crate::types::kinds::TaskKind;

/// One task as written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Task {
    /// T001…
    pub id: String,
    /// Title after the colon.
    pub title: String,
    /// Checkbox ticked.
    pub done: bool,
    /// Every `kind:` value given (exactly one valid is expected).
    pub kinds: Vec<String>,
    /// Requirement ids.
    pub requirements: Vec<String>,
    /// Task ids it depends on.
    pub depends: Vec<String>,
    /// Target files.
    pub files: Vec<String>,
    /// Done criteria.
    pub done_criteria: String,
    /// 1-based line of the task.
    pub line: usize,
    /// The task's full text block.
    pub text: String,
}

impl Task {
    /// The task's kind, when exactly one valid kind is given.
    pub fn kind(&self) -> Option<TaskKind> {
        match self.kinds.as_slice() {
            [k] => TaskKind::parse(k),
            _ => None,
        }
    }
}

/// Recognises `- [ ] T001: title` (returns ticked, id, title).
pub fn task_line(line: &str) -> Option<(bool, String, String)> {
    let t = line.trim_start();
    let rest = t.strip_prefix("- [").or_else(|| t.strip_prefix("* ["))?;
    let mut chars = rest.chars();
    let mark = chars.next()?;
    let rest = chars.as_str().strip_prefix("] ")?;
    let done = match mark {
        ' ' => false,
        'x' | 'X' => true,
        _ => return None,
    };
    let rest = rest.trim_start().trim_start_matches("**");
    let id_len = rest
        .char_indices()
        .take_while(|(i, c)| {
            if *i == 0 {
                *c == 'T'
            } else {
                c.is_ascii_digit()
            }
        })
        .count();
    if id_len < 2 {
        return None;
    }
    let id = rest[..id_len].to_string();
    let title = rest[id_len..]
        .trim_start_matches("**")
        .trim_start_matches([':', ' ', '-', '—'])
        .trim()
        .to_string();
    Some((done, id, title))
}

/// Parses every task.
pub fn parse(text: &str) -> Vec<Task> {
    let mut out: Vec<Task> = Vec::new();
    let mut current: Option<Task> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some((done, id, title)) = task_line(line) {
            if let Some(t) = current.take() {
                out.push(t);
            }
            current = Some(Task {
                id,
                title,
                done,
                line: i + 1,
                text: line.to_string(),
                ..Task::default()
            });
            continue;
        }
        let Some(task) = current.as_mut() else {
            continue;
        };
        if line.trim_start().starts_with('#') {
            out.push(current.take().unwrap_or_default());
            continue;
        }
        task.text.push('\n');
        task.text.push_str(line);
        if let Some((key, value)) = super::field_line(line) {
            match key.as_str() {
                "kind" => task.kinds.extend(super::list(&value)),
                "requirements" | "requirement" | "reqs" => task
                    .requirements
                    .extend(super::ids::requirement_refs(&value)),
                "depends" | "dependencies" | "depends on" => {
                    task.depends.extend(super::list(&value))
                }
                "files" | "target files" | "file" => task.files.extend(super::list(&value)),
                "done" | "done criteria" => task.done_criteria = value,
                _ => {}
            }
        }
    }
    if let Some(t) = current {
        out.push(t);
    }
    out
}

/// Tasks in dependency order (stable: file order among ready tasks), or the ids on a cycle.
pub fn order(tasks: &[Task]) -> Result<Vec<Task>, Vec<String>> {
    let ids: BTreeSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    let mut done: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    let mut remaining: Vec<&Task> = tasks.iter().collect();
    while !remaining.is_empty() {
        let before = remaining.len();
        let mut next = Vec::new();
        for t in remaining {
            let ready = t
                .depends
                .iter()
                .filter(|d| ids.contains(d.as_str()))
                .all(|d| done.contains(d));
            if ready {
                done.insert(t.id.clone());
                out.push(t.clone());
            } else {
                next.push(t);
            }
        }
        if next.len() == before {
            return Err(next.iter().map(|t| t.id.clone()).collect());
        }
        remaining = next;
    }
    Ok(out)
}

/// Ticks the checkbox of `id` in the tasks text; unchanged if already ticked or absent.
pub fn tick(text: &str, id: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if let Some((false, tid, _)) = task_line(line)
            && tid == id
        {
            out.push_str(&line.replacen("[ ]", "[x]", 1));
            continue;
        }
        out.push_str(line);
    }
    out
}

/// Cycle detection for `inspect`: ids of tasks on or behind a cycle.
pub fn cycles(tasks: &[Task]) -> Vec<String> {
    order(tasks).err().unwrap_or_default()
}

/// Map id → task.
pub fn by_id(tasks: &[Task]) -> BTreeMap<&str, &Task> {
    tasks.iter().map(|t| (t.id.as_str(), t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "## Phase 1\n- [ ] T002: second\n  - kind: backend\n  - requirements: REQ-001\n  - depends: T001\n- [x] T001: first\n  - kind: ui\n  - requirements: REQ-001, NFR-001\n  - depends: none\n  - files: index.html, style.css\n";

    #[test]
    fn parse_order_and_tick() {
        let tasks = parse(TEXT);
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks[1].requirements, vec!["REQ-001", "NFR-001"]);
        assert_eq!(tasks[1].files, vec!["index.html", "style.css"]);
        assert!(tasks[1].done);
        let ordered: Vec<_> = order(&tasks).unwrap().into_iter().map(|t| t.id).collect();
        assert_eq!(ordered, vec!["T001", "T002"]);
        let ticked = tick(TEXT, "T002");
        assert!(ticked.contains("- [x] T002: second"));
        assert_eq!(tick(&ticked, "T002"), ticked);
    }

    #[test]
    fn cycle_is_reported() {
        let text =
            "- [ ] T001: a\n  - depends: T002\n- [ ] T002: b\n  - depends: T001\n- [ ] T003: c\n";
        assert_eq!(cycles(&parse(text)), vec!["T001", "T002"]);
    }
}
