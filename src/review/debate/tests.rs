use super::*;

#[test]
fn ruling_needs_a_decision_word_and_the_spec_when_asked() {
    let ok = parse_ruling(
        "{\"decisions\": [{\"id\": \"A.F1\", \"decision\": \"Adopted\", \"reason\": \"right\"}], \"spec\": \"# S\\n\"}",
        true,
    )
    .unwrap();
    assert!(ok.decisions[0].adopted);
    assert_eq!(ok.spec.as_deref(), Some("# S\n"));
    assert!(parse_ruling("{\"decisions\": []}", true).is_err());
    assert!(parse_ruling("{\"decisions\": []}", false).is_ok());
    assert!(
        parse_ruling(
            "{\"decisions\": [{\"id\": \"A.F1\", \"decision\": \"maybe\"}]}",
            false
        )
        .unwrap_err()
        .contains("maybe")
    );
    let fenced = parse_ruling(
        "```json\n{\"decisions\": []}\n```\n```markdown\n# Final\n\nText\n```\n",
        true,
    )
    .unwrap();
    assert_eq!(fenced.spec.as_deref(), Some("# Final\n\nText"));
}

#[test]
fn ids_are_namespaced_and_disputes_resolved() {
    let env = envelope::parse_answer(
        "{\"findings\": [{\"id\": \"F1\", \"severity\": \"minor\"}, {\"severity\": \"minor\", \"gist\": \"g\"}], \"remaining_disputes\": [\"F3\", \"F9\"]}",
    )
    .unwrap();
    let env = namespace("A", "B", env, &["B.F3".into()]);
    assert_eq!(env.findings[0].id, "A.F1");
    assert_eq!(env.findings[1].id, "A.F2");
    assert_eq!(env.remaining_disputes, ["B.F3", "A.F9"]);
}
