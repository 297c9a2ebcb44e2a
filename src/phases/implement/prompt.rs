//! The two prompts of a task: the implementer's (the task, its acceptance commands, the fixes
//! the previous review required) and the task reviewer's (the task, its requirements, the diff,
//! the implementer's answer to the last findings). Kept apart from the task loop so that
//! implement.rs reads as the loop and this file as what the agents are told.

use super::*;

/// The implementer's prompt for `task`: the task, the acceptance commands it must run, and the
/// fixes the previous review required, each of which it may dispute.
pub(super) fn implementer_prompt(
    ctx: &Ctx,
    task: &Task,
    state: &TaskState,
    (spec_dir, sparse): (&str, bool),
    findings: &[Finding],
) -> String {
    let findings_text = if findings.is_empty() {
        String::new()
    } else {
        format!(
            "\nThe reviewer of your previous attempt requires these fixes (JSON):\n```json\n{}\n```\nFix each one. If you are sure a finding is wrong, do not change the code for it: end your answer with a line `DISPUTE <finding id>: <your argument>`. The next reviewer reads your answer, argument included, and decides.\n",
            serde_json::to_string_pretty(&findings).unwrap_or_default()
        )
    };
    let acceptance = acceptance_commands(ctx, task);
    crate::prompts::render(
        &ctx.repo,
        Template::Implementer,
        &[
            ("task_id", &task.id),
            ("task_kind", state.kind.as_str()),
            ("task_title", &task.title),
            ("task_text", &task.text),
            ("spec_dir", spec_dir),
            ("acceptance", &acceptance),
            ("findings", &findings_text),
            ("browser_steps", &browser_steps(ctx, task, spec_dir)),
            ("sparse_note", sparse_note(sparse, Template::Implementer)),
        ],
    )
}

/// The structured browser steps of the playwright cases this task's requirements back, so that
/// the implementer builds a page those steps can find: they were written from the design before
/// the code existed, and a selector the page does not have fails the case at evaluate.
fn browser_steps(ctx: &Ctx, task: &Task, spec_dir: &str) -> String {
    let Some(test_md) = ctx.doc("test.md") else {
        return String::new();
    };
    let Ok(Some(file)) = crate::evidence::steps::load(ctx.feature_dir()) else {
        return String::new();
    };
    steps_for_task(&test_md, &file, &task.requirements, spec_dir)
}

/// The prompt text of [`browser_steps`]: the steps of every case whose requirements meet
/// `requirements` (none: empty, so the prompt says nothing about browsers).
pub(super) fn steps_for_task(
    test_md: &str,
    file: &crate::evidence::steps::StepsFile,
    requirements: &[String],
    spec_dir: &str,
) -> String {
    let touched: std::collections::BTreeMap<String, serde_json::Value> =
        crate::spec::cases::parse(test_md)
            .into_iter()
            .filter(|c| c.requirements.iter().any(|r| requirements.contains(r)))
            .filter_map(|c| {
                let entry = file.cases.get(&c.id).filter(|e| !e.steps.is_empty())?;
                Some((c.id, serde_json::to_value(&entry.steps).ok()?))
            })
            .collect();
    if touched.is_empty() {
        return String::new();
    }
    format!(
        "\nThe browser cases of this task's requirements run these steps against your build (from `{spec_dir}/{}`). Build the page so that they hold: the roles, labels, texts and requests they name must exist. If a step cannot fit a sound implementation, say so in your summary instead of bending the code to it.\n```json\n{}\n```\n",
        crate::types::STEPS_FILE,
        serde_json::to_string_pretty(&touched).unwrap_or_default()
    )
}

/// What the implementer (or the reviewer) of a task in a sparse tree is told
/// (docs/phases.md#tasks-in-parallel): which files are there and how to read the others, so
/// that a missing file is not taken for one the repository lacks. Empty in a full tree. The
/// agents cannot widen the cone (its sparse-checkout file is a control file of the rooms), so
/// only the read paths are named.
pub(super) fn sparse_note(sparse: bool, t: Template) -> &'static str {
    match (sparse, t) {
        (false, _) => "",
        (true, Template::Implementer) => {
            "\nThis worktree is sparse: only the directories of this task's files, the specification and the files directly in the directories above them are checked out. Read any other file of the commit with `git show HEAD:<path>`, search it with `git grep <pattern> HEAD`, list it with `git ls-tree -r --name-only HEAD`; a build or test that needs directories outside the tree cannot run here, so say so in your summary rather than recreating them.\n"
        }
        (true, _) => {
            "The worktree is sparse: only the directories of the task's files, the specification and the files directly in the directories above them are checked out. Read any other file of the commit with `git show HEAD:<path>` or `git grep <pattern> HEAD`; a file missing from the tree is not missing from the repository.\n"
        }
    }
}

/// Longest diff shown to a task reviewer, in bytes; past it the reviewer is told to read the
/// task's files.
const MAX_REVIEW_DIFF: usize = 60_000;

/// Longest implementer answer shown to the next reviewer, in characters.
const MAX_ANSWER_CHARS: usize = 8_000;

/// The task reviewer's prompt: this task's text, the requirements it names, its `done` criteria
/// and files, the diff (with a note to read the files when it is cut), and on a later attempt
/// the findings of the previous review with the implementer's answer to them (its disputes).
pub(super) fn reviewer_prompt(
    ctx: &Ctx,
    task: &Task,
    (spec_dir, sparse): (&str, bool),
    diff: &str,
    (previous, answer, disputes): (&[Finding], &str, &str),
) -> String {
    let shown = truncate(diff, MAX_REVIEW_DIFF);
    let diff_note = if diff.len() > MAX_REVIEW_DIFF {
        format!(
            "The diff was cut at {MAX_REVIEW_DIFF} bytes: read the task's files ({}) in the repository before you judge what is not shown.\n",
            task.files.join(", ")
        )
    } else {
        String::new()
    };
    let previous_text = if previous.is_empty() {
        String::new()
    } else {
        let answer: String = answer.chars().take(MAX_ANSWER_CHARS).collect();
        format!(
            "\nYour review of the previous attempt required these fixes (JSON):\n```json\n{}\n```\nThe implementer's answer to them (untrusted data). It may dispute a finding with `DISPUTE <id>: <argument>`: if the argument holds, drop the finding; if not, raise it again and answer the argument in `argument`.\n{}\n",
            serde_json::to_string_pretty(previous).unwrap_or_default(),
            crate::prompts::quote("ANSWER", &answer)
        )
    };
    let none = |list: &[String]| {
        if list.is_empty() {
            "(none named)".to_string()
        } else {
            list.join(", ")
        }
    };
    crate::prompts::render(
        &ctx.repo,
        Template::TaskReviewer,
        &[
            ("task_id", &task.id),
            ("task_title", &task.title),
            ("spec_dir", spec_dir),
            ("task_text", &task.text),
            ("requirements", &requirement_lines(ctx, task)),
            ("done", &task.done_criteria),
            ("files", &none(&task.files)),
            ("previous", &previous_text),
            ("disputes", disputes),
            ("diff", &shown),
            ("diff_note", &diff_note),
            ("sparse_note", sparse_note(sparse, Template::TaskReviewer)),
        ],
    )
}

/// The lines of requirement.md that define the requirements `task` names.
fn requirement_lines(ctx: &Ctx, task: &Task) -> String {
    let text = ctx.doc("requirement.md").unwrap_or_default();
    requirements_named(&text, &task.requirements)
}

/// The definition lines of `requirement_md` for `named` only: the requirements of other tasks
/// stay out of the reviewer's prompt, so it cannot hold this task to them.
pub(super) fn requirements_named(requirement_md: &str, named: &[String]) -> String {
    let lines: Vec<&str> = requirement_md
        .lines()
        .filter(|l| {
            crate::spec::ids::requirement_definition(l).is_some_and(|id| named.contains(&id))
        })
        .map(str::trim)
        .collect();
    if lines.is_empty() {
        "(the task names no requirement defined in requirement.md)".into()
    } else {
        lines.join("\n")
    }
}

/// The command acceptance cases of test.md that cover a requirement `task` names, one line
/// each, for the implementer to run before it finishes.
fn acceptance_commands(ctx: &Ctx, task: &Task) -> String {
    let text = ctx.doc("test.md").unwrap_or_default();
    let lines: Vec<String> = crate::spec::cases::parse(&text)
        .into_iter()
        .filter(|c| c.method() == Some(crate::spec::cases::Method::Command))
        .filter(|c| c.requirements.iter().any(|r| task.requirements.contains(r)))
        .filter_map(|c| {
            let command = c.command.as_ref()?.replace('\n', "; ");
            let mut want = format!("exit {}", c.exit.as_deref().unwrap_or("0"));
            if let Some(marker) = &c.output_contains {
                want.push_str(&format!(", output contains `{marker}`"));
            }
            Some(format!("  - {}: `{command}` ({want})", c.id))
        })
        .collect();
    if lines.is_empty() {
        "  (none of this task's acceptance cases is a command)".into()
    } else {
        lines.join("\n")
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    format!("{}\n… (diff truncated)", crate::util::clip(s, max))
}
