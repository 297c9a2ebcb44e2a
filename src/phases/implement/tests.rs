use super::prompt::{requirements_named, sparse_note, steps_for_task};
use super::*;
use crate::evidence::steps::{self, Action, CaseSteps, StepsFile};

#[test]
fn the_implementer_sees_the_steps_of_the_cases_its_task_touches_and_no_others() {
    let md = "## T-A01: [REQ-001] Delete\n- Steps: click Delete\n- Expected: gone\n- Verify: playwright\n\n## T-A02: [REQ-002] Other\n- Steps: open\n- Expected: x\n- Verify: playwright\n";
    let mut file = StepsFile::default();
    for c in crate::spec::cases::parse(md) {
        let selector = format!("role=button[name=\"{}\"]", c.id);
        file.cases.insert(
            c.id.clone(),
            CaseSteps {
                source: steps::source_hash(&c),
                converted_by: None,
                steps: vec![
                    Action::Goto { url: "/".into() }.into(),
                    Action::Click { selector }.into(),
                ],
                cannot_express: Vec::new(),
            },
        );
    }
    let text = steps_for_task(md, &file, &["REQ-001".into()], ".specs/x");
    assert!(text.contains(".specs/x/test.steps.json"), "{text}");
    assert!(
        text.contains("\"T-A01\"") && text.contains("name=\\\"T-A01\\\""),
        "{text}"
    );
    assert!(!text.contains("T-A02"), "{text}");
    assert_eq!(
        steps_for_task(md, &file, &["REQ-009".into()], ".specs/x"),
        ""
    );
}

/// The reviewer is shown the definitions of the requirements its task names and none of
/// the others (a later task's requirement is out of its scope), and is told so when the
/// task names none that requirement.md defines.
#[test]
fn the_task_reviewer_sees_only_the_requirements_its_task_names() {
    let md = "# Requirements\n\n- [REQ-001] Delete an entry.\n- [REQ-002] Export entries.\n  - [REQ-003] Only the owner deletes.\n";
    let named = ["REQ-001".to_string(), "REQ-003".to_string()];
    assert_eq!(
        requirements_named(md, &named),
        "- [REQ-001] Delete an entry.\n- [REQ-003] Only the owner deletes."
    );
    assert!(requirements_named(md, &["REQ-009".into()]).starts_with("(the task names no"));
}

/// The implementer and the reviewer of a task in a sparse tree are told how to read the files
/// left out of it; in a full tree (a small checkout, `limits.task_trees: full`, the checkout)
/// the prompts say nothing about it.
#[test]
fn only_a_sparse_trees_agents_are_told_how_to_read_the_files_outside_it() {
    let tmp = tempfile::tempdir().unwrap();
    for t in [Template::Implementer, Template::TaskReviewer] {
        let render = |sparse| {
            crate::prompts::render(tmp.path(), t, &[("sparse_note", sparse_note(sparse, t))])
        };
        let (sparse, full) = (render(true), render(false));
        assert!(sparse.contains("`git show HEAD:<path>`"), "{t:?}: {sparse}");
        assert!(sparse.contains("sparse"), "{t:?}");
        assert!(
            !full.contains("git show HEAD") && !full.contains("sparse"),
            "{t:?}: {full}"
        );
        assert!(
            !full.contains("{{sparse_note}}"),
            "{t:?}: the placeholder is filled"
        );
    }
}
