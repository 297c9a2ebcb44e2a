use super::*;

fn failed() -> Vec<String> {
    vec!["T-A02".into(), "T-A25".into()]
}

/// The example the fix task shows is read by the parser the run uses.
#[test]
fn the_fix_prompts_example_parses_with_the_real_parser() {
    assert!(instructions().contains(EXAMPLE));
    let got = parse(EXAMPLE, &failed());
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].case, "T-A02");
    assert!(got[0].argument.starts_with("the case expects `Saved!`"));
    assert!(got[0].argument.contains("REQ-002"));
    assert!(
        got[0]
            .evidence
            .starts_with("$ python3 check.py T-A02\nSaved."),
        "{:?}",
        got[0].evidence
    );
}

/// Real models write the dispute in several shapes; each is one dispute of the failed case.
#[test]
fn common_shapes_of_a_dispute_are_read() {
    let shapes = [
        "Done.\nDISPUTE T-A25: the run writes the file itself",
        "DISPUTE T-A25\nThe acceptance run starts the app on the tracked file\nand never restores it.",
        "**DISPUTE T-A25** — the run writes the file itself",
        "- Dispute: `T-A25` - the run writes the file itself",
        "### dispute t-a25\nthe run writes the file itself",
    ];
    for text in shapes {
        let got = parse(text, &failed());
        assert_eq!(got.len(), 1, "{text}: {got:?}");
        assert_eq!(got[0].case, "T-A25", "{text}");
        assert!(
            got[0].argument.contains("the run writes the file itself")
                || got[0].argument.contains("never restores it"),
            "{text}: {:?}",
            got[0].argument
        );
    }
}

/// A bare `DISPUTE T-A25` closing an answer takes the prose before it as its argument; a
/// fenced block is the evidence when no `Evidence:` line says so.
#[test]
fn a_bare_dispute_line_takes_the_prose_before_it_and_fences_are_evidence() {
    let text = "T-A25 can't be fixed from the code: the acceptance run starts the app on the tracked file and never restores it.\n\nDISPUTE T-A25";
    let got = parse(text, &failed());
    assert!(
        got[0].argument.starts_with("T-A25 can't be fixed"),
        "{got:?}"
    );
    let text =
        "DISPUTE T-A02: prints the wrong word\n```\n$ ./check T-A02\nSaved.\n```\nthat is all";
    let got = parse(text, &failed());
    assert_eq!(got[0].argument, "prints the wrong word\nthat is all");
    assert_eq!(got[0].evidence, "```\n$ ./check T-A02\nSaved.\n```");
}

/// Only a case that failed can be disputed, a finding id or another case is not; the last
/// dispute of a case wins; two cases are two disputes.
#[test]
fn only_failed_cases_are_disputed_and_each_once() {
    let text = "DISPUTE F1: the reviewer is wrong\nDISPUTE T-A09: passes already\nDISPUTE T-A02: first\nDISPUTE T-A25: other\nDISPUTE T-A02: second";
    let got = parse(text, &failed());
    let cases: Vec<(&str, &str)> = got
        .iter()
        .map(|d| (d.case.as_str(), d.argument.as_str()))
        .collect();
    assert_eq!(cases, [("T-A25", "other"), ("T-A02", "second")]);
    assert!(parse("No disputes here. The dispute is settled.", &failed()).is_empty());
}

#[test]
fn arguments_and_evidence_are_bounded() {
    let text = format!(
        "DISPUTE T-A02: {}\nEvidence:\n{}",
        "a".repeat(10_000),
        "b".repeat(10_000)
    );
    let got = parse(&text, &failed());
    assert!(got[0].argument.chars().count() < MAX_ARGUMENT_CHARS + 40);
    assert!(got[0].evidence.chars().count() < MAX_EVIDENCE_CHARS + 40);
    assert!(got[0].argument.ends_with("characters cut]"));
}

/// The reviewer's rulings are read beside its envelope, in the words reviewers use; an unknown
/// word is no ruling.
#[test]
fn rulings_are_read_beside_the_envelope() {
    let text = r#"Reviewed.
```json
{"findings": [], "converged": true, "remaining_disputes": [],
 "rulings": [{"case": "T-A02", "ruling": "confirmed", "argument": "REQ-002 says Saved."},
             {"id": "T-A25", "decision": "Reject", "reason": "the app must restore the file"},
             {"case": "T-A03", "ruling": "perhaps"}]}
```"#;
    let r = parse_review(text).unwrap();
    assert!(r.envelope.findings.is_empty());
    assert_eq!(
        r.rulings,
        [
            RulingOf {
                case: "T-A02".into(),
                ruling: Ruling::Confirmed,
                argument: "REQ-002 says Saved.".into()
            },
            RulingOf {
                case: "T-A25".into(),
                ruling: Ruling::Rejected,
                argument: "the app must restore the file".into()
            }
        ]
    );
    let plain = parse_review("```json\n{\"findings\": []}\n```").unwrap();
    assert!(plain.rulings.is_empty());
    assert!(parse_review("no json").is_err());
}

/// The reviewer's block quotes the disputes as data and says how to answer.
#[test]
fn the_review_block_quotes_each_dispute() {
    assert_eq!(review_block(&[]), "");
    let block = review_block(&parse(EXAMPLE, &failed()));
    assert!(block.contains("<<<DISPUTES-"), "{block}");
    assert!(block.contains("DISPUTE T-A02: the case expects"), "{block}");
    assert!(block.contains("\"rulings\""), "{block}");
}

fn record(case: &str, hash: &str, end: DisputeEnd) -> DisputeRecord {
    DisputeRecord {
        case: case.into(),
        task: "FIX1".into(),
        after_round: 1,
        by: "alpha".into(),
        argument: "wrong word".into(),
        evidence: "$ run\nSaved.".into(),
        reviewer: "beta".into(),
        ruling: Ruling::Confirmed,
        answer: "agreed".into(),
        case_hash: hash.into(),
        end,
        decided_by: None,
    }
}

/// A confirmed dispute becomes one finding on test.md per case, with both arguments; a second
/// confirmed dispute of the same unchanged case is a stall, of a changed case is not.
#[test]
fn confirmed_disputes_go_to_the_spec_and_an_unchanged_repeat_stalls() {
    let mut state = crate::state::tests::blank(crate::state::Mode::Auto);
    state
        .disputes
        .push(record("T-A02", "h1", DisputeEnd::Waiting));
    state
        .disputes
        .push(record("T-A02", "h1", DisputeEnd::Waiting));
    let sent = findings_for_spec(&state);
    assert_eq!(sent.len(), 1, "one finding per case");
    let f = &sent[0];
    assert_eq!((f.file.as_str(), f.section.as_str()), ("test.md", "T-A02"));
    assert!(f.argument.contains("wrong word") && f.argument.contains("agreed"));
    assert!(f.argument.contains("Evidence:\n$ run"));
    assert!(f.fingerprint.is_some());
    state.disputes.truncate(1);

    state.disputes[0].end = DisputeEnd::Spec;
    assert!(unchanged_repeats(&state).is_empty(), "a first dispute");
    state.disputes[0].end = DisputeEnd::Revised;
    state.disputes.push(record("T-A02", "h2", DisputeEnd::Spec));
    assert!(
        unchanged_repeats(&state).is_empty(),
        "the case changed in between"
    );
    state.disputes[1].end = DisputeEnd::Unchanged;
    state.disputes.push(record("T-A02", "h2", DisputeEnd::Spec));
    assert_eq!(unchanged_repeats(&state), [2]);
    // A rejected dispute of the same text is no repeat of the spec loop.
    state.disputes[1].ruling = Ruling::Rejected;
    assert!(unchanged_repeats(&state).is_empty());
}

#[test]
fn a_case_sent_back_is_revised_when_its_text_changed() {
    let md = "## T-A02: [REQ-002] Save\n- Steps: save\n- Expected: Saved!\n- Verify: command\n";
    let d = record("T-A02", &case_hash(md, "T-A02").unwrap(), DisputeEnd::Spec);
    assert_eq!(settled(&d, md), DisputeEnd::Unchanged);
    assert_eq!(
        settled(&d, &md.replace("Saved!", "Saved.")),
        DisputeEnd::Revised
    );
}

#[test]
fn excerpts_are_one_line_and_cut() {
    assert_eq!(excerpt("a  b\nc", 10), "a b c");
    assert_eq!(excerpt("abcdefghij klm", 5), "abcde…");
}

#[test]
fn the_case_hash_follows_the_cases_text() {
    let md = "## T-A02: [REQ-002] Save\n- Steps: save\n- Expected: Saved!\n- Verify: command\n";
    let fixed = md.replace("Saved!", "Saved.");
    assert!(case_hash(md, "T-A02").is_some());
    assert_ne!(case_hash(md, "T-A02"), case_hash(&fixed, "T-A02"));
    assert_eq!(case_hash(md, "T-A09"), None);
}
