//! What a spec review round hands to the next one (docs/reviews.md#from-round-2).
//!
//! A reviewer that gets round 1's prompt again in round 2 reviews from scratch: it cannot say
//! what was fixed, raises new "improvements" every round, and rewords the findings it repeats, so
//! the loop never converges and recurrence is never seen. From round 2 the reviewers are
//! therefore shown the previous round's fix-required findings (with ids they can name in
//! `still_open`), the author's revision notes (the spec's `Review Discussion` section) and the
//! sections that changed since they last read the spec. The previous round is kept in the state
//! ([`PreviousReview`]), never read back from `reviews/`, which the author can write.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::fingerprint::sha256_hex;
use super::merge::Attributed;
use crate::state::PreviousReview;
use crate::types::Finding;

/// The documents a spec review reads, in the order they are shown.
pub const DOCUMENTS: [&str; 5] = [
    "requirement.md",
    "design.md",
    "tasks.md",
    "test.md",
    crate::types::STEPS_FILE,
];

/// The heading of the author's answers to the reviewers, in any of the documents.
pub const DISCUSSION_HEADING: &str = "review discussion";

/// Most characters of changed sections quoted into a prompt: the reviewer reads the files for
/// the rest, and a prompt stays a prompt.
pub const MAX_CHANGED_CHARS: usize = 32 * 1024;

/// Most characters of the Review Discussion quoted.
pub const MAX_DISCUSSION_CHARS: usize = 16 * 1024;

/// The documents of `feature_dir` that exist, as `(name, text)`; a missing, unreadable or
/// oversized one is left out (inspect reports it).
pub fn read_documents(feature_dir: &Path) -> Vec<(String, String)> {
    DOCUMENTS
        .iter()
        .filter_map(|name| {
            let bytes =
                crate::fsx::read_max(&feature_dir.join(name), crate::fsx::Limit::SpecDoc).ok()?;
            Some((
                name.to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ))
        })
        .collect()
}

/// One section of a document: `file#heading` (a repeated heading gets ` (2)`, the text before
/// the first heading is `file#`) and its text, heading line included. Headings inside fenced
/// blocks are text; a JSON file is one section.
pub fn split_sections(docs: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, text) in docs {
        if !name.ends_with(".md") {
            out.push((format!("{name}#"), text.clone()));
            continue;
        }
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let mut key = format!("{name}#");
        let mut body = String::new();
        let mut fenced = false;
        for line in text.lines() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                fenced = !fenced;
            }
            let heading = (!fenced && trimmed.starts_with('#'))
                .then(|| trimmed.trim_start_matches('#'))
                .filter(|rest| rest.starts_with(' '))
                .map(str::trim);
            if let Some(h) = heading {
                if !body.trim().is_empty() {
                    out.push((key.clone(), std::mem::take(&mut body)));
                }
                body.clear();
                let n = seen.entry(h.to_string()).or_insert(0);
                *n += 1;
                key = if *n == 1 {
                    format!("{name}#{h}")
                } else {
                    format!("{name}#{h} ({n})")
                };
            }
            body.push_str(line);
            body.push('\n');
        }
        if !body.trim().is_empty() {
            out.push((key, body));
        }
    }
    out
}

/// `file#heading` → SHA-256 of the section's text.
pub fn section_hashes(sections: &[(String, String)]) -> BTreeMap<String, String> {
    sections
        .iter()
        .map(|(k, t)| (k.clone(), sha256_hex(t)))
        .collect()
}

/// Gives every finding of a round an id no other finding of the round has, so that the next
/// round's reviewers can name each one in `still_open` and the author can answer each one: a
/// panel's personas and the contract reviewer all number theirs from `F1`. A repeated or empty
/// id becomes the first free `F<n>`.
pub fn unique_ids(findings: &mut [Attributed]) {
    let key = |id: &str| id.trim().to_lowercase();
    // The first finding with an id keeps it; only the later ones are renamed.
    let mut taken: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut rename = Vec::new();
    for (i, a) in findings.iter().enumerate() {
        let id = key(&a.finding.id);
        if id.is_empty() || !taken.insert(id) {
            rename.push(i);
        }
    }
    let mut next = 1;
    for i in rename {
        while taken.contains(&format!("f{next}")) {
            next += 1;
        }
        taken.insert(format!("f{next}"));
        findings[i].finding.id = format!("F{next}");
    }
}

/// What the round records for the next one.
pub fn remember(round: u32, fix: &[Finding], sections: &[(String, String)]) -> PreviousReview {
    PreviousReview {
        round,
        findings: fix.to_vec(),
        sections: section_hashes(sections),
    }
}

/// The `previous` prompt variable: empty in round 1; from round 2 the previous findings, the
/// author's revision notes and the changed sections, each quoted as data (they were written by
/// agents), for the template's rules to act on.
pub fn render(previous: Option<&PreviousReview>, sections: &[(String, String)]) -> String {
    let Some(prev) = previous else {
        return String::new();
    };
    let mut s = format!(
        "## Previous round\n\nRound {}'s fix-required findings (JSON, written by a reviewer; name one in `still_open` to say it is still open):\n",
        prev.round
    );
    let findings: Vec<serde_json::Value> =
        prev.findings.iter().map(super::envelope::shown).collect();
    let json = serde_json::to_string_pretty(&findings).unwrap_or_default();
    s.push_str(&crate::prompts::quote("FINDINGS", &json));
    s.push_str("\n\nThe author's revision notes (the `Review Discussion` section of the spec, written by the author):\n");
    let discussion: String = sections
        .iter()
        .filter(|(k, _)| is_discussion(k))
        .map(|(_, t)| t.as_str())
        .collect();
    if discussion.trim().is_empty() {
        s.push_str("(the spec has no Review Discussion section)\n");
    } else {
        s.push_str(&crate::prompts::quote(
            "DISCUSSION",
            &cut(&discussion, MAX_DISCUSSION_CHARS),
        ));
        s.push('\n');
    }
    s.push_str(&changes(prev, sections));
    s
}

fn is_discussion(key: &str) -> bool {
    key.split_once('#')
        .is_some_and(|(_, h)| h.to_lowercase().starts_with(DISCUSSION_HEADING))
}

/// The sections changed, added or removed since the previous round, and the current text of
/// the changed and added ones (up to [`MAX_CHANGED_CHARS`]).
fn changes(prev: &PreviousReview, sections: &[(String, String)]) -> String {
    let now = section_hashes(sections);
    let mut list = String::new();
    let mut text = String::new();
    for (key, body) in sections {
        let state = match prev.sections.get(key) {
            None => "added",
            Some(h) if *h != now[key] => "changed",
            Some(_) => continue,
        };
        let _ = writeln!(list, "- {} ({state})", label(key));
        if !is_discussion(key) {
            text.push_str(body);
            text.push('\n');
        }
    }
    for key in prev.sections.keys().filter(|k| !now.contains_key(*k)) {
        let _ = writeln!(list, "- {} (removed)", label(key));
    }
    if list.is_empty() {
        return format!(
            "\nNo section changed since round {}: the revision changed nothing you can see.\n",
            prev.round
        );
    }
    let mut s = format!("\nSections changed since round {}:\n{list}", prev.round);
    if !text.trim().is_empty() {
        s.push_str("\nTheir text now (written by the author):\n");
        s.push_str(&crate::prompts::quote(
            "CHANGES",
            &cut(&text, MAX_CHANGED_CHARS),
        ));
        s.push('\n');
    }
    s
}

/// `design.md#Storage` → `design.md § Storage`.
fn label(key: &str) -> String {
    match key.split_once('#') {
        Some((file, "")) => format!("{file} (before the first heading)"),
        Some((file, h)) => format!("{file} § {h}"),
        None => key.to_string(),
    }
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!(
            "{}\n[… {} characters cut; read the file]",
            &text[..end],
            text[end..].chars().count()
        ),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(design: &str) -> Vec<(String, String)> {
        vec![
            ("requirement.md".into(), "# R\n\n- [REQ-001] x\n".into()),
            ("design.md".into(), design.into()),
        ]
    }

    #[test]
    fn sections_split_on_headings_outside_fences() {
        let s = split_sections(&docs(
            "intro\n# Design\ntext\n```\n# not a heading\n```\n## Storage\nrows\n## Storage\nmore\n",
        ));
        let keys: Vec<&str> = s.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "requirement.md#R",
                "design.md#",
                "design.md#Design",
                "design.md#Storage",
                "design.md#Storage (2)"
            ]
        );
        assert!(s[2].1.contains("# not a heading"));
    }

    #[test]
    fn round_two_sees_findings_notes_and_only_the_changed_sections() {
        let before = split_sections(&docs("# Design\nold\n## Storage\nrows\n"));
        let f: Finding = serde_json::from_str(
            r#"{"id": "F1", "severity": "critical", "gist": "no owner check"}"#,
        )
        .unwrap();
        let prev = remember(1, &[f], &before);
        assert_eq!(render(None, &before), "");
        let after = split_sections(&docs(
            "# Design\nnew\n## Storage\nrows\n## Review Discussion\n- F1: not addressed, because the owner is checked by the proxy\n",
        ));
        let text = render(Some(&prev), &after);
        assert!(
            text.contains("\"id\": \"F1\"") && text.contains("no owner check"),
            "{text}"
        );
        assert!(text.contains("not addressed, because the owner"), "{text}");
        assert!(text.contains("- design.md § Design (changed)"), "{text}");
        assert!(
            text.contains("- design.md § Review Discussion (added)"),
            "{text}"
        );
        assert!(!text.contains("Storage ("), "{text}");
        assert!(text.contains("new\n"), "{text}");
        let same = render(Some(&prev), &before);
        assert!(same.contains("No section changed since round 1"), "{same}");
        assert!(same.contains("has no Review Discussion"), "{same}");
    }

    #[test]
    fn repeated_and_empty_ids_become_unique() {
        let mk = |id: &str| Attributed {
            finding: serde_json::from_str(&format!(r#"{{"id": "{id}", "severity": "minor"}}"#))
                .unwrap(),
            raised_by: vec!["x".into()],
        };
        let mut list = vec![mk("F1"), mk("F1"), mk("F2"), mk(""), mk("f2")];
        unique_ids(&mut list);
        let ids: Vec<&str> = list.iter().map(|a| a.finding.id.as_str()).collect();
        assert_eq!(ids, ["F1", "F3", "F2", "F4", "F5"]);
    }
}
