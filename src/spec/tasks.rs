//! Tasks of `tasks.md`: parsing, dependency order, and ticking the checkbox.

use std::collections::{BTreeMap, BTreeSet};

use crate::types::kinds::TaskKind;

/// One task as written.
#[derive(Debug, Clone, PartialEq, Default)]
#[allow(missing_docs)]
pub struct Task {
    /// T001…
    pub id: String,
    pub title: String,
    pub done: bool,
    /// Every `kind:` value given (exactly one valid is expected).
    pub kinds: Vec<String>,
    pub requirements: Vec<String>,
    /// Task ids it depends on.
    pub depends: Vec<String>,
    pub files: Vec<String>,
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
    let c = re!(r"^\s*[-*] \[([ xX])\] \s*(?:\*\*)*(T[0-9]+)(?:\*\*)*[: \-—]*\s*(.*?)\s*$")
        .captures(line)?;
    Some((&c[1] != " ", c[2].to_string(), c[3].to_string()))
}

/// Parses every task.
pub fn parse(text: &str) -> Vec<Task> {
    let mut out: Vec<Task> = Vec::new();
    let mut current: Option<Task> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some((done, id, title)) = task_line(line) {
            out.extend(current.replace(Task {
                id,
                title,
                done,
                line: i + 1,
                text: line.to_string(),
                ..Task::default()
            }));
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

/// Two tasks the dependency graph would let run at once (neither depends on the other, directly
/// or through others) that name the same target files: `implement` runs them one after the
/// other, and `inspect` says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// The task first in `tasks.md`.
    pub first: String,
    /// The other task.
    pub second: String,
    /// The target files both name (as the first names them).
    pub files: Vec<String>,
    /// The line of the second task.
    pub line: usize,
}

/// A target file as compared: trimmed, without a leading `./` or a trailing `/`.
fn file_key(f: &str) -> &str {
    let f = f.trim();
    f.strip_prefix("./").unwrap_or(f).trim_end_matches('/')
}

/// Whether two target files name the same path, or one is a directory holding the other.
fn same_target(a: &str, b: &str) -> bool {
    let (a, b) = (file_key(a), file_key(b));
    !a.is_empty()
        && !b.is_empty()
        && (a == b
            || b.strip_prefix(a).is_some_and(|r| r.starts_with('/'))
            || a.strip_prefix(b).is_some_and(|r| r.starts_with('/')))
}

/// The target files of `a` that `b` names too (or holds, or that hold one of `b`'s).
pub fn shared_files(a: &Task, b: &Task) -> Vec<String> {
    a.files
        .iter()
        .filter(|f| b.files.iter().any(|g| same_target(f, g)))
        .cloned()
        .collect()
}

/// Every task id each task depends on, directly or through other tasks of `tasks`.
fn ancestors(tasks: &[Task]) -> BTreeMap<&str, BTreeSet<&str>> {
    let index = by_id(tasks);
    let mut out: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for t in tasks {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut stack: Vec<&str> = t.depends.iter().map(String::as_str).collect();
        while let Some(id) = stack.pop() {
            if let Some(dep) = index.get(id)
                && seen.insert(dep.id.as_str())
            {
                stack.extend(dep.depends.iter().map(String::as_str));
            }
        }
        out.insert(t.id.as_str(), seen);
    }
    out
}

/// The pairs of tasks that could be ready together but share target files (see [`Overlap`]),
/// in `tasks.md` order.
pub fn overlaps(tasks: &[Task]) -> Vec<Overlap> {
    let before = ancestors(tasks);
    let depends = |a: &Task, b: &Task| {
        before
            .get(a.id.as_str())
            .is_some_and(|s| s.contains(b.id.as_str()))
    };
    let mut out = Vec::new();
    for (i, a) in tasks.iter().enumerate() {
        for b in &tasks[i + 1..] {
            if a.done || b.done || depends(a, b) || depends(b, a) {
                continue;
            }
            let files = shared_files(a, b);
            if !files.is_empty() {
                out.push(Overlap {
                    first: a.id.clone(),
                    second: b.id.clone(),
                    files,
                    line: b.line,
                });
            }
        }
    }
    out
}

/// The next wave of `ordered` (tasks in dependency order, see [`order`]): the tasks not yet
/// `done` whose dependencies among `ordered` are all `done`, in that order, at most `limit`,
/// leaving out a task that shares a target file with one already in the wave (it runs in a
/// later wave, after that one).
pub fn next_wave<'a>(ordered: &'a [Task], done: &BTreeSet<String>, limit: usize) -> Vec<&'a Task> {
    let ids: BTreeSet<&str> = ordered.iter().map(|t| t.id.as_str()).collect();
    let mut wave: Vec<&Task> = Vec::new();
    for t in ordered {
        if wave.len() >= limit.max(1) {
            break;
        }
        let ready = !done.contains(&t.id)
            && t.depends
                .iter()
                .filter(|d| ids.contains(d.as_str()))
                .all(|d| done.contains(d));
        if ready && wave.iter().all(|w| shared_files(w, t).is_empty()) {
            wave.push(t);
        }
    }
    wave
}

/// How task ids sort when tasks land: by their letters, then by their number (`T2` before
/// `T10`), then as written.
pub fn id_order(id: &str) -> (String, u64, String) {
    let letters: String = id.chars().take_while(|c| !c.is_ascii_digit()).collect();
    let digits: String = id[letters.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (letters, digits.parse().unwrap_or(u64::MAX), id.to_string())
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

    const FOUR: &str = "- [ ] T001: a\n  - files: a.txt, shared/\n- [ ] T002: b\n  - files: b.txt\n- [ ] T003: c\n  - files: ./shared/c.txt\n- [ ] T004: d\n  - depends: T001\n  - files: a.txt\n- [ ] T005: e\n";

    fn ids(wave: &[&Task]) -> Vec<String> {
        wave.iter().map(|t| t.id.clone()).collect()
    }

    /// Ready tasks share a wave up to the limit; a task sharing a target file with one already
    /// in it waits, and so does a task whose dependency is not done.
    #[test]
    fn waves_take_ready_tasks_that_share_no_file() {
        let tasks = order(&parse(FOUR)).unwrap();
        let mut done = BTreeSet::new();
        assert_eq!(ids(&next_wave(&tasks, &done, 4)), ["T001", "T002", "T005"]);
        assert_eq!(ids(&next_wave(&tasks, &done, 2)), ["T001", "T002"]);
        assert_eq!(ids(&next_wave(&tasks, &done, 1)), ["T001"]);
        done.insert("T001".to_string());
        assert_eq!(
            ids(&next_wave(&tasks, &done, 4)),
            ["T002", "T003", "T004", "T005"]
        );
        done.extend(["T002", "T003", "T004", "T005"].map(String::from));
        assert!(next_wave(&tasks, &done, 4).is_empty());
    }

    /// Only tasks the graph lets run together overlap: T004 depends on T001, so their common
    /// `a.txt` is no overlap; a directory holds the files under it.
    #[test]
    fn overlaps_are_pairs_the_graph_does_not_order() {
        let found = overlaps(&parse(FOUR));
        assert_eq!(
            found,
            vec![Overlap {
                first: "T001".into(),
                second: "T003".into(),
                files: vec!["shared/".into()],
                line: 5,
            }]
        );
        assert!(id_order("T2") < id_order("T10"));
        assert!(id_order("T009") < id_order("T010"));
    }

    #[test]
    fn cycle_is_reported() {
        let text =
            "- [ ] T001: a\n  - depends: T002\n- [ ] T002: b\n  - depends: T001\n- [ ] T003: c\n";
        assert_eq!(cycles(&parse(text)), vec!["T001", "T002"]);
    }
}
