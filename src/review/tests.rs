//! Tests that the reviewer templates teach what the parsers read: every ```json example in a
//! review, panel, debate or judge template parses with the parser its answer meets, and every
//! reviewer prompt carries the rules a real model needs (an empty list is an answer, the
//! security lens, each persona's own style and LGTM line).

use crate::prompts::Template;
use crate::types::kinds::Persona;

/// The bodies of the ```json fences of `text` that are examples, not a placeholder the
/// pipeline fills in (`{{own}}`, `{{positions}}`).
fn json_examples(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```json\n") {
        let body = &rest[start + "```json\n".len()..];
        let Some(end) = body.find("\n```") else {
            break;
        };
        let example = body[..end].trim();
        if !(example.starts_with("{{") && example.ends_with("}}")) {
            out.push(example);
        }
        rest = &body[end + "\n```".len()..];
    }
    out
}

fn reviewer_templates() -> Vec<Template> {
    let mut all = vec![
        Template::SpecReviewer,
        Template::ReviewEnvelope,
        Template::DebateReview,
        Template::DebateRespond,
    ];
    all.extend(Persona::ALL.iter().map(|p| Template::Panel(*p)));
    all
}

/// Every example envelope in a reviewer template parses with the real envelope parser, and
/// the judge's example with the real ruling parser; a template whose example a parser
/// refused would teach real models to fail.
#[test]
fn every_template_example_parses_with_the_real_parser() {
    let mut seen = 0;
    for t in reviewer_templates() {
        for example in json_examples(t.builtin()) {
            super::envelope::parse_answer(example)
                .unwrap_or_else(|e| panic!("{t}: {e}\n{example}"));
            seen += 1;
        }
    }
    assert!(seen >= 7, "only {seen} examples found");
    // The round-2 example names the finding it re-raises, and the parser keeps the name.
    let reraise = |what: &str, text: &str| {
        json_examples(text)
            .into_iter()
            .filter_map(|e| super::envelope::parse_answer(e).ok())
            .flat_map(|env| env.findings)
            .find(|f| !f.still_open.is_empty())
            .unwrap_or_else(|| panic!("{what} shows no re-raise"))
    };
    assert_eq!(
        reraise("spec_reviewer", Template::SpecReviewer.builtin()).still_open,
        "F1"
    );
    // The contract reviewer's prompt as it is sent (its own template and the shared envelope
    // instructions) shows a round-2 answer on a case of test.md, which its parser reads.
    let dir = tempfile::tempdir().expect("temp dir");
    let vars = super::strategy::PromptVars::default();
    let contract = super::contract::prompt(dir.path(), &vars);
    let example = reraise("the contract review", &contract);
    assert_eq!(example.still_open, "F2");
    assert_eq!(example.file, "test.md");
    let parsed = json_examples(&contract)
        .into_iter()
        .filter_map(|e| super::contract::parse(e).ok())
        .count();
    assert_eq!(parsed, json_examples(&contract).len(), "{contract}");
    let judge = json_examples(Template::Judge.builtin());
    assert_eq!(judge.len(), 1, "the judge shows one example");
    let ruling =
        super::debate::ruling::parse_ruling(judge[0], false).expect("judge example parses");
    assert_eq!(ruling.decisions.len(), 2);
    assert!(ruling.decisions[0].adopted && !ruling.decisions[1].adopted);
}

/// The spec reviewer's and the shared envelope's "nothing found" examples are empty envelopes
/// that converge: a reviewer that finds nothing is shown how to say so.
#[test]
fn an_empty_findings_list_is_shown_as_a_valid_answer() {
    for t in [
        Template::SpecReviewer,
        Template::ReviewEnvelope,
        Template::DebateReview,
    ] {
        let empty = json_examples(t.builtin())
            .into_iter()
            .filter_map(|e| super::envelope::parse_answer(e).ok())
            .any(|env| env.findings.is_empty() && env.converged);
        assert!(empty, "{t} shows no empty, converged envelope");
    }
    for t in reviewer_templates() {
        let text = t.builtin().to_lowercase();
        assert!(
            text.contains("empty `findings` list") || text.contains("empty findings list"),
            "{t} does not say an empty findings list is a valid answer"
        );
    }
}

/// The default reviewer and the Paranoid persona check the security surface by name.
#[test]
fn the_default_reviewer_and_the_paranoid_check_security() {
    for t in [Template::SpecReviewer, Template::Panel(Persona::Paranoid)] {
        let text = t.builtin().to_lowercase();
        for topic in [
            "authentication",
            "authorisation and ownership",
            "csrf",
            "session",
            "injection",
            "secret",
            "tenant isolation",
        ] {
            assert!(text.contains(topic), "{t} does not check {topic}");
        }
    }
}

/// Each persona is a full prompt: who it is, its perspective, what it looks for, its style
/// (likelihood × impact) and an LGTM line of its own.
#[test]
fn every_persona_is_a_full_prompt_with_its_own_lgtm_line() {
    let mut lines = Vec::new();
    for p in Persona::ALL {
        let t = Template::Panel(p);
        let text = t.builtin();
        for part in [
            "You are the ",
            "perspective",
            "Look for:",
            "likelihood × impact",
        ] {
            assert!(text.contains(part), "{t} lacks {part:?}");
        }
        let lgtm = text
            .find("LGTM")
            .map(|at| {
                text[..at]
                    .rsplit('`')
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
            .unwrap_or_else(|| panic!("{t} has no LGTM line"));
        assert!(
            !lgtm.trim().is_empty(),
            "{t}: the LGTM line names no persona"
        );
        lines.push(lgtm);
    }
    let before = lines.len();
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), before, "two personas share an LGTM line");
}

/// The severities' definitions, word for word the spec reviewer's, in every prompt of a
/// debate: a debater or a judge reading other words would weigh findings by another rule.
#[test]
fn the_debate_prompts_define_the_severities_as_the_reviewers_do() {
    let reviewer = Template::SpecReviewer.builtin();
    let start = reviewer
        .find("- critical: built as written")
        .expect("the reviewer defines critical");
    let end = reviewer[start..]
        .find("- minor: worth noting, does not block.")
        .map(|e| start + e + "- minor: worth noting, does not block.".len())
        .expect("the reviewer defines minor");
    let definitions = &reviewer[start..end];
    assert!(definitions.contains("- improvement: blocks only when"));
    for t in [
        Template::DebateReview,
        Template::DebateRespond,
        Template::Judge,
    ] {
        let text = t.builtin();
        assert!(
            text.contains(definitions),
            "{t} defines severities otherwise"
        );
        assert!(text.contains("burden of proof"), "{t}");
    }
    let respond = Template::DebateRespond.builtin();
    assert!(respond.contains("Hold your position unless an argument convinces you"));
}

/// The answer to the other side shows a counter-argument: an entry naming the finding it
/// disputes, which the real parser reads without a severity of its own.
#[test]
fn the_respond_example_shows_a_counter_argument_the_parser_reads() {
    let counters: Vec<crate::types::Finding> = json_examples(Template::DebateRespond.builtin())
        .into_iter()
        .filter_map(|e| super::envelope::parse_answer(e).ok())
        .flat_map(|env| env.findings)
        .filter(|f| !f.disputes.is_empty())
        .collect();
    assert_eq!(counters.len(), 1, "one counter-argument shown");
    assert_eq!(counters[0].disputes, "B.F4");
    assert!(!counters[0].argument.is_empty());
}
