use super::*;

#[test]
fn extracts_fenced_block_before_braces() {
    let text = "Here {not json}\n```json\n{\"findings\": [], \"converged\": true}\n```\ntrailing }";
    let env = extract(text).unwrap();
    assert!(env.converged);
    assert!(env.findings.is_empty());
}

#[test]
fn extracts_braces_span_and_accepts_any_severity_case() {
    let text = "Sure! {\"findings\": [{\"severity\": \"CRITICAL\", \"gist\": \"x\"}]} done";
    let env = extract(text).unwrap();
    assert_eq!(env.findings[0].severity, Severity::Critical);
    assert_eq!(env.fix_required(), 1);
}

#[test]
fn garbage_and_unknown_severity_are_errors() {
    assert!(extract("I reviewed it, looks great!").is_err());
    assert!(extract("{\"findings\": [{\"severity\": \"huge\"}]}").is_err());
    assert!(extract("{\"findings\": 3}").is_err());
}

/// One bad field does not reject a review: a null or missing `requirement_id`, a numeric
/// `id` and extra keys are normalised, severities outside the three words go through the
/// table, and a finding whose severity is unknown is dropped and said so.
#[test]
fn one_bad_field_does_not_reject_the_review() {
    let text = r#"Here is my review.
```json
{"findings": [
  {"id": 1, "requirement_id": null, "severity": "blocker", "file": "design.md",
   "section": "Architecture", "gist": "no owner check", "argument": "anyone can delete",
   "suggestion": "check the owner", "confidence": 0.9, "still_open": "F1"},
  {"id": "F2", "severity": "Major", "gist": "vague", "requirement_id": ["REQ-001", "REQ-002"]},
  {"id": "F3", "severity": "nit", "gist": "typo"},
  {"id": "F4", "severity": "catastrophic", "gist": "unknown word"},
  {"id": "F5", "severity": "medium", "gist": "m"},
  {"id": "F6", "severity": "high", "gist": "h"},
  {"id": "F7", "severity": "low", "gist": "l"}
], "converged": "false", "remaining_disputes": [], "summary": "extra key"}
```"#;
    let env = extract(text).expect("the review is read");
    let sev: Vec<(&str, Severity)> = env
        .findings
        .iter()
        .map(|f| (f.id.as_str(), f.severity))
        .collect();
    assert_eq!(
        sev,
        [
            ("1", Severity::Critical),
            ("F2", Severity::Improvement),
            ("F3", Severity::Minor),
            ("F5", Severity::Improvement),
            ("F6", Severity::Critical),
            ("F7", Severity::Minor),
        ]
    );
    assert_eq!(env.findings[0].requirement_id, "");
    assert_eq!(env.findings[1].requirement_id, "REQ-001, REQ-002");
    assert_eq!(env.findings[0].gist, "no owner check");
    assert!(!env.converged);
    assert_eq!(env.dropped.len(), 1, "{:?}", env.dropped);
    assert!(
        env.dropped[0].contains("finding 4") && env.dropped[0].contains("catastrophic"),
        "{:?}",
        env.dropped
    );
    // The drop is said in the merged review.
    let merged = super::super::merge::MergedReview::merge(
        "single",
        vec![("spec_reviewer".into(), env.with_fingerprints())],
        vec![],
    );
    assert!(
        merged
            .notes
            .iter()
            .any(|n| n.starts_with("spec_reviewer: finding 4 dropped")),
        "{:?}",
        merged.notes
    );
    // Every documented word maps as the table says.
    for (word, want) in [
        ("blocker", Severity::Critical),
        ("HIGH", Severity::Critical),
        ("major", Severity::Improvement),
        ("medium", Severity::Improvement),
        ("low", Severity::Minor),
        ("nit", Severity::Minor),
    ] {
        assert_eq!(severity_of(word), Some(want), "{word}");
    }
}

/// The example the task reviewer's template shows is an envelope the real parser reads, with
/// one finding of a severity the gate counts (the spec reviewers' examples: `review::examples`).
#[test]
fn the_task_reviewer_template_example_parses() {
    let text = crate::prompts::Template::TaskReviewer.builtin();
    let start = text.find("```json\n").expect("an example") + "```json\n".len();
    let end = start + text[start..].find("```").expect("closed");
    let env = parse_answer(&text[start..end]).expect("the example parses");
    assert_eq!(env.findings.len(), 1);
    assert!(env.findings[0].severity.fix_required());
    assert!(env.dropped.is_empty());
}

#[test]
fn prose_with_brackets_before_the_envelope() {
    let env = extract("About [REQ-001]: {\"findings\": [], \"converged\": true}").unwrap();
    assert!(env.converged);
}

#[test]
fn bare_array_is_accepted() {
    let env = extract("[{\"severity\": \"minor\"}]").unwrap();
    assert_eq!(env.findings.len(), 1);
    assert_eq!(env.fix_required(), 0);
}

#[test]
fn input_fingerprints_are_never_trusted() {
    let env = extract("{\"findings\": [{\"severity\": \"minor\", \"fingerprint\": \"forged\"}]}")
        .unwrap();
    assert_eq!(env.findings[0].fingerprint, None);
}

#[test]
fn a_code_sample_with_fences_and_braces_inside_a_string_does_not_end_the_block() {
    let text = "Prose first.\n```json\n{\"findings\": [{\"severity\": \"minor\", \"suggestion\": \"use\\n```rust\\nfn f() { let s = \\\"}\\\"; }\\n```\\n\"}], \"converged\": true}\n```\nDone.";
    let env = extract(text).unwrap();
    assert!(env.converged);
    assert_eq!(
        env.findings[0].suggestion,
        "use\n```rust\nfn f() { let s = \"}\"; }\n```\n"
    );
}

#[test]
fn prose_braces_before_a_bare_envelope_do_not_hide_it() {
    let env =
        extract("About {x} and {\"y\": 1}: {\"findings\": [], \"converged\": true} }").unwrap();
    assert!(env.converged);
    assert_eq!(
        json_candidate(
            "Ruling {draft} {\"a\": 1}: {\"decisions\": []} ok",
            "decisions"
        ),
        Some("{\"decisions\": []}")
    );
}

/// A small deterministic generator (xorshift): the corpus is the same on every run, so a
/// failure names a case that can be replayed.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    fn text(&mut self, items: &[&str], max: usize) -> String {
        (0..self.below(max + 1)).map(|_| self.pick(items)).collect()
    }
}

/// What reviewers put in strings: code samples with fences, braces, brackets, quotes,
/// backslashes, non-ASCII text.
const IN_STRINGS: &[&str] = &[
    "```",
    "```rust\n",
    "```json\n",
    "\n```\n",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    "\n",
    "`",
    "fn main() { println!(\"}\"); }",
    "{\"a\": [1, 2]}",
    "é",
    "→",
    " ",
    "word",
    ": ",
    ",",
    "\t",
    "\\\"",
    "}\n```\n",
];
/// What prose around an answer holds (never a ```json fence of its own).
const PROSE: &[&str] = &[
    "Here is my review",
    " ",
    "\n",
    "{",
    "}",
    "[",
    "]",
    "`",
    "```",
    "```rust\nx\n```",
    "[REQ-001]",
    "{curly}",
    "\"quoted\"",
    "é",
    ":",
    "{\"note\": 1}",
];

fn finding(g: &mut Gen) -> Finding {
    let sev = [Severity::Critical, Severity::Improvement, Severity::Minor];
    Finding {
        id: format!("F{}", g.below(9)),
        requirement_id: g.text(IN_STRINGS, 2),
        severity: sev[g.below(sev.len())],
        file: "design.md".into(),
        section: g.text(IN_STRINGS, 3),
        gist: g.text(IN_STRINGS, 6),
        argument: g.text(IN_STRINGS, 12),
        suggestion: g.text(IN_STRINGS, 20),
        fingerprint: None,
        class_key: None,
        still_open: String::new(),
        disputes: String::new(),
    }
}

fn envelope(g: &mut Gen) -> Envelope {
    Envelope {
        findings: (0..g.below(4)).map(|_| finding(g)).collect(),
        converged: g.below(2) == 0,
        remaining_disputes: (0..g.below(3)).map(|_| g.text(IN_STRINGS, 3)).collect(),
        dropped: Vec::new(),
    }
}

/// An answer carrying `json` the way models write them.
fn answer(g: &mut Gen, json: &str) -> String {
    let before = g.text(PROSE, 6);
    let after = g.text(PROSE, 6);
    match g.below(4) {
        0 => format!("{before}\n```json\n{json}\n```\n{after}"),
        1 => format!("```json\n{json}\n```"),
        // Bare: prose after may hold anything; prose before has no quotes that could pair
        // with the answer's own.
        2 => format!("{}\n{json}\n{after}", before.replace('"', "'")),
        _ => json.to_string(),
    }
}

#[test]
fn generated_answers_with_hostile_strings_round_trip() {
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    for case in 0..3000 {
        let env = envelope(&mut g);
        let json = if g.below(2) == 0 {
            serde_json::to_string(&env).unwrap()
        } else {
            serde_json::to_string_pretty(&env).unwrap()
        };
        let text = answer(&mut g, &json);
        let got = extract(&text).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        assert_eq!(got, env, "case {case}:\n{text}");
        let candidate = json_candidate(&text, "findings").expect("a candidate");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(candidate).unwrap(),
            serde_json::to_value(&env).unwrap(),
            "case {case}:\n{text}"
        );
    }
}

#[test]
fn generated_garbage_never_panics_and_bracketless_prose_is_never_an_envelope() {
    let mut g = Gen(0xD1B5_4A32_D192_ED03);
    for _ in 0..3000 {
        let text = g.text(&[PROSE, IN_STRINGS].concat(), 40);
        if let Ok(env) = extract(&text) {
            // Only a real envelope (or findings array) is accepted, never prose alone.
            assert!(text.contains("findings") || text.contains('['), "{text}");
            let _ = env;
        }
        let _ = json_candidate(&text, "findings");
    }
}

#[test]
fn unbalanced_hostile_output_is_bounded_work() {
    let text = "{".repeat(200_000) + &"\"".repeat(1000);
    let started = std::time::Instant::now();
    assert!(extract(&text).is_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn an_envelope_keeps_at_most_max_findings_in_order_with_a_note() {
    let findings: Vec<_> = (0..MAX_FINDINGS + 300)
        .map(|i| serde_json::json!({"severity": "minor", "gist": format!("g{i}")}))
        .collect();
    let text = serde_json::json!({ "findings": findings }).to_string();
    #[derive(Default)]
    struct Notes(std::sync::Mutex<Vec<crate::events::Event>>);
    impl crate::events::Reporter for Notes {
        fn report(&self, event: &crate::events::Event) {
            self.0.lock().unwrap().push(event.clone());
        }
    }
    let notes = std::sync::Arc::new(Notes::default());
    let env = crate::events::scoped(notes.clone(), || extract(&text).unwrap());
    let events = notes.0.lock().unwrap().clone();
    assert_eq!(env.findings.len(), MAX_FINDINGS);
    assert_eq!(
        env.findings[MAX_FINDINGS - 1].gist,
        format!("g{}", MAX_FINDINGS - 1)
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, crate::events::Event::Note { message }
                if message.contains("answered 500 findings") && message.contains("300 dropped"))),
        "{events:?}"
    );
}

#[test]
fn oversized_fields_are_cut_with_a_note() {
    let big = "é".repeat(1024 * 1024);
    let text = serde_json::json!({"findings": [{
            "severity": "critical", "gist": big, "argument": big, "suggestion": big,
            "section": big, "id": "F1"
        }], "remaining_disputes": [big]})
    .to_string();
    let env = extract(&text).unwrap();
    let f = &env.findings[0];
    assert!(f.gist.starts_with(&"é".repeat(MAX_GIST_CHARS)));
    assert!(f.gist.ends_with(&format!(
        " [… {} characters cut]",
        1024 * 1024 - MAX_GIST_CHARS
    )));
    assert!(f.gist.chars().count() < MAX_GIST_CHARS + 40);
    assert!(f.argument.chars().count() < MAX_TEXT_CHARS + 40);
    assert!(f.suggestion.chars().count() < MAX_TEXT_CHARS + 40);
    assert!(f.section.chars().count() < MAX_LABEL_CHARS + 40);
    assert!(env.remaining_disputes[0].chars().count() < MAX_LABEL_CHARS + 40);
    assert_eq!(f.id, "F1");
}
