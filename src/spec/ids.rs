//! Requirement, task and case ids: where they are defined and where they are referenced.

use std::collections::BTreeMap;

use super::SpecDocs;

/// The requirement id a line of requirement.md defines, if it defines one: a list item
/// (bulleted or numbered) or heading that starts with the bracketed id (`- [REQ-001] …`,
/// `1. [REQ-001] …`, `- **[REQ-001]** …`, `### [REQ-001] …`), or a heading that starts with the
/// bare id followed by a colon, dash or nothing (`### REQ-001: …`). A bare id at the start of a
/// list item stays a reference (`- REQ-002 depends on REQ-001`).
pub fn requirement_definition(line: &str) -> Option<String> {
    let c = re!(
        r"^\s*(?:(?:[-*+]\s+|\d+[.)]\s+|#+\s+)?\**\[((?:REQ|NFR|CON|ASM)-\d{3,})\]|#+\s+\**((?:REQ|NFR|CON|ASM)-\d{3,})\**\s*(?:[:.–—-]|$))"
    )
    .captures(line)?;
    c.get(1)
        .or_else(|| c.get(2))
        .map(|m| m.as_str().to_string())
}

/// The id a line of one of our documents defines.
pub fn defined_id(file: &str, line: &str) -> Option<String> {
    match file {
        "requirement.md" => requirement_definition(line),
        "tasks.md" => super::tasks::task_line(line).map(|t| t.1),
        "test.md" => super::cases::case_heading(line).map(|c| c.0),
        _ => None,
    }
}

/// Where an id is defined: (file, 1-based line).
pub type Site = (&'static str, usize);

/// Every id defined and referenced across the four documents.
#[derive(Debug, Clone, Default)]
pub struct IdIndex {
    /// id → every definition site (more than one is a duplicate).
    pub defined: BTreeMap<String, Vec<Site>>,
    /// id → every reference site.
    pub referenced: BTreeMap<String, Vec<Site>>,
}

impl IdIndex {
    /// Builds the index.
    pub fn build(docs: &SpecDocs) -> IdIndex {
        let mut idx = IdIndex::default();
        for (file, text) in docs.all() {
            for (i, line) in text.lines().enumerate() {
                let site = (file, i + 1);
                let def_here = defined_id(file, line);
                if let Some(d) = &def_here {
                    idx.defined.entry(d.clone()).or_default().push(site);
                }
                let mut first_def_skipped = false;
                let refs = [
                    requirement_ref(),
                    re!(r"\b(T\d{2,})\b"),
                    re!(r"\b(T-A\d+)\b"),
                ];
                for re in refs {
                    for c in re.captures_iter(line) {
                        let id = c[1].to_string();
                        if def_here.as_deref() == Some(id.as_str()) && !first_def_skipped {
                            first_def_skipped = true;
                            continue;
                        }
                        idx.referenced.entry(id).or_default().push(site);
                    }
                }
            }
        }
        idx
    }

    /// Ids of requirement kinds (REQ, NFR) that are defined.
    pub fn requirements(&self) -> Vec<&str> {
        self.defined
            .keys()
            .filter(|k| k.starts_with("REQ-") || k.starts_with("NFR-"))
            .map(String::as_str)
            .collect()
    }
}

fn requirement_ref() -> &'static regex::Regex {
    re!(r"\b((?:REQ|NFR|CON|ASM)-\d{3,})\b")
}

/// Requirement ids mentioned in `text`.
pub fn requirement_refs(text: &str) -> Vec<String> {
    requirement_ref()
        .captures_iter(text)
        .map(|c| c[1].to_string())
        .collect()
}

/// REQ/NFR ids listed in the first column of the design traceability matrix.
pub fn design_matrix(design: &str) -> Vec<String> {
    let mut in_matrix = false;
    let mut out = Vec::new();
    for line in design.lines() {
        let t = line.trim();
        if !t.starts_with('|') {
            in_matrix = false;
            continue;
        }
        let first = t.trim_matches('|').split('|').next().unwrap_or("").trim();
        if first.eq_ignore_ascii_case("req id") {
            in_matrix = true;
            continue;
        }
        if in_matrix {
            out.extend(requirement_refs(first));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_and_references() {
        let docs = SpecDocs {
            requirement: "# R\n- [REQ-001] A thing (see NFR-001)\n- [NFR-001] fast\n".into(),
            design: "| Req ID | R | C |\n|---|---|---|\n| REQ-001 | a | b |\n".into(),
            tasks: "- [ ] T001: do\n  - requirements: REQ-001\n".into(),
            test: "## T-A01: [REQ-001] works\n".into(),
            missing: vec![],
            steps: None,
            refused: vec![],
            import: None,
        };
        let idx = IdIndex::build(&docs);
        assert_eq!(idx.defined["REQ-001"], vec![("requirement.md", 2)]);
        assert!(idx.defined.contains_key("T001"));
        assert!(idx.defined.contains_key("T-A01"));
        assert!(idx.referenced.contains_key("NFR-001"));
        assert_eq!(idx.referenced["REQ-001"].len(), 3);
        assert_eq!(design_matrix(&docs.design), vec!["REQ-001"]);
    }

    /// The shapes models commonly write for a requirement's definition are read as one; a bare
    /// id opening a list item stays a reference.
    #[test]
    fn requirement_definitions_in_the_shapes_models_write() {
        for (line, id) in [
            ("- [REQ-001] The page has a toggle.", "REQ-001"),
            ("1. [REQ-002] Numbered.", "REQ-002"),
            ("12) [NFR-003] Numbered with a parenthesis.", "NFR-003"),
            ("- **[REQ-004]** Bold.", "REQ-004"),
            ("### REQ-005: A heading with a bare id", "REQ-005"),
            ("## **CON-006** — bold heading with a dash", "CON-006"),
            ("### [ASM-007] Bracketed heading", "ASM-007"),
            ("#### REQ-008", "REQ-008"),
        ] {
            assert_eq!(requirement_definition(line).as_deref(), Some(id), "{line}");
        }
        for line in [
            "- REQ-002 depends on REQ-001",
            "The toggle (REQ-001) is in the header.",
            "### Requirements for REQ-001",
        ] {
            assert_eq!(requirement_definition(line), None, "{line}");
        }
    }
}
