//! Fingerprints and class keys, byte for byte as `docs/reviews.md` defines them.
//!
//! A fingerprint identifies "the same complaint" across rounds even when the reviewer rephrases
//! the tail of its gist or renumbers a section; a class key identifies "the same place". Stall
//! detection compares these sets, so the normalisation must never drift.

use std::sync::LazyLock;

use regex::Regex;
use sha2::{Digest, Sha256};

use crate::types::Finding;

const SEP: char = '\u{1F}';

/// Lower-hex SHA-256 of a string.
pub fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

/// Repo-relative path: forward slashes, `./` segments removed, lower-cased.
pub fn norm_path(path: &str) -> String {
    let slashed = path.trim().replace('\\', "/");
    let parts: Vec<&str> = slashed
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let mut out = parts.join("/");
    if slashed.starts_with('/') {
        out.insert(0, '/');
    }
    out.to_lowercase()
}

/// `s` on one line: every run of Unicode white space one space, none at either end.
pub fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Section heading: whitespace collapsed and trimmed, leading numbering (`4.`, `§4`, `4.1`)
/// removed, lower-cased.
pub fn norm_section(section: &str) -> String {
    let collapsed = collapse_ws(section);
    let stripped = strip_numbering(&collapsed);
    stripped.to_lowercase()
}

/// The numbering pattern of `docs/reviews.md`, used literally (so `\d` and `\s` have the regex
/// crate's Unicode meaning, as they do in most regex engines a second implementation would use).
static NUMBERING: LazyLock<Regex> = LazyLock::new(|| {
    // A constant pattern: it compiles, and a unit test runs it.
    Regex::new(r"^(§\s*)?\d+(\.\d+)*\.?\s*").expect("constant regex compiles")
});

/// Applies `^(§\s*)?\d+(\.\d+)*\.?\s*` once at the start.
fn strip_numbering(s: &str) -> &str {
    match NUMBERING.find(s) {
        Some(m) => &s[m.end()..],
        None => s,
    }
}

/// Gist: whitespace collapsed, trimmed, lower-cased, first 80 Unicode scalar values.
pub fn gist80(gist: &str) -> String {
    collapse_ws(gist).to_lowercase().chars().take(80).collect()
}

/// The fingerprint of a finding.
pub fn fingerprint(f: &Finding) -> String {
    let joined = [
        f.requirement_id.as_str(),
        f.severity.as_str(),
        &norm_path(&f.file),
        &norm_section(&f.section),
        &gist80(&f.gist),
    ]
    .join(&SEP.to_string());
    sha256_hex(&joined)
}

/// The class key (same file and section) of a finding.
pub fn class_key(f: &Finding) -> String {
    sha256_hex(&format!(
        "{}{SEP}{}",
        norm_path(&f.file),
        norm_section(&f.section)
    ))
}

/// Sets the fingerprint and class key of `f`: the orchestrator's, never a reviewer's.
pub fn stamp(f: &mut Finding) {
    f.fingerprint = Some(fingerprint(f));
    f.class_key = Some(class_key(f));
}

/// Exact recurrence (docs/reviews.md#recurrence): a finding whose `still_open` names a finding
/// of `previous` (by id, any case; a bare number `1` names `F1`) takes that finding's
/// fingerprint and class key, whatever its new wording, section or severity, so S1 sees a
/// reworded re-raise as the same complaint. Returns one note per `still_open` that names no
/// previous finding (that finding keeps its own fingerprint: it counts as new).
pub fn carry_over(findings: &mut [Finding], previous: &[Finding]) -> Vec<String> {
    let mut notes = Vec::new();
    for f in findings.iter_mut() {
        let named = f.still_open.trim();
        if named.is_empty() {
            continue;
        }
        let earlier = previous.iter().find(|p| {
            let id = p.id.trim();
            id.eq_ignore_ascii_case(named)
                || (named.chars().all(|c| c.is_ascii_digit())
                    && id.eq_ignore_ascii_case(&format!("F{named}")))
        });
        match earlier {
            Some(p) => {
                f.fingerprint = Some(p.fingerprint.clone().unwrap_or_else(|| fingerprint(p)));
                f.class_key = Some(p.class_key.clone().unwrap_or_else(|| class_key(p)));
            }
            None => notes.push(format!(
                "finding `{}` says it is still open `{named}`, which the previous round did not raise; it counts as a new finding",
                f.id
            )),
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Severity;

    fn finding(req: &str, sev: Severity, file: &str, section: &str, gist: &str) -> Finding {
        Finding {
            id: "F1".into(),
            requirement_id: req.into(),
            file: file.into(),
            section: section.into(),
            gist: gist.into(),
            ..Finding::new(sev)
        }
    }

    /// [`finding`] in section `S` of `a.md`, where the gist is what a test varies.
    fn in_a_md(req: &str, sev: Severity, gist: &str) -> Finding {
        finding(req, sev, "a.md", "S", gist)
    }

    /// Vectors computed outside this code with
    /// `printf 'REQ-003\x1fcritical\x1fdesign.md\x1fmodule design\x1fcache has no eviction' | sha256sum`
    /// and `printf 'design.md\x1fmodule design' | sha256sum`.
    #[test]
    fn hand_computed_vectors() {
        let f = finding(
            "REQ-003",
            Severity::Critical,
            "./Design.md",
            "4. Module  Design",
            "  Cache has NO eviction ",
        );
        assert_eq!(
            fingerprint(&f),
            "2160900ff8c94c565f386f2e2a02b2b8a92370403985354ada011b516539b135"
        );
        assert_eq!(
            class_key(&f),
            "335f24dabb954c10a1da863b11de96d9152f7b64106a605b92c27d577e3897cf"
        );
    }

    /// More vectors, each computed outside this code from the *normalised* tuple written out by
    /// hand (Python: `hashlib.sha256("\x1f".join(parts).encode()).hexdigest()`), so that a drift
    /// in any normalisation step changes a hash here.
    #[test]
    fn hand_computed_vectors_for_every_normalisation() {
        // `\` and `./` in the path, `§ 4.1.` numbering and upper case in the section, a
        // non-ASCII gist: ("REQ-002", "improvement", "specs/design.md", "persistence",
        // "le thème n'est pas mémorisé après un rechargement").
        let f = finding(
            "REQ-002",
            Severity::Improvement,
            ".\\Specs\\./Design.MD",
            "§ 4.1.  PERSISTENCE",
            "Le thème n'est pas   mémorisé après un rechargement",
        );
        assert_eq!(
            fingerprint(&f),
            "0e72752b93d2da149cd2fcf846240415d784b0975404a74c881d12bec89d7f38"
        );
        assert_eq!(
            class_key(&f),
            "6f27414c5a8165f4295489c4da45b29057f6c95d3dd9d323bcf410ebb2413b0c"
        );
        // The same place written four other ways has the same class key.
        for (file, section) in [
            ("specs/design.md", "Persistence"),
            ("./specs/design.md", "4. Persistence"),
            ("SPECS\\DESIGN.md", "§4 persistence"),
            ("specs//design.md", "  4.1   Persistence "),
        ] {
            let g = finding("REQ-002", Severity::Improvement, file, section, "x");
            assert_eq!(class_key(&g), class_key(&f), "{file} / {section}");
        }
        // A gist of 95 scalar values with non-ASCII letters: the first 80 after lower-casing,
        // which end in a space ("ünïcödé " ten times).
        let f = finding(
            "REQ-010",
            Severity::Minor,
            "test.md",
            "7 Edge Cases",
            &"Ünïcödé ".repeat(12),
        );
        assert_eq!(
            fingerprint(&f),
            "c4f1e2bebb8c9d76a6477980c35ff3492bfb7b2b4c3db72383b88d360dd6eec1"
        );
        // Missing fields count as empty strings: ("", "minor", "", "", "").
        let f: Finding = serde_json::from_str(r#"{"severity": "MINOR"}"#).unwrap();
        assert_eq!(
            fingerprint(&f),
            "bef678a2faa701fa97e3784086d8fe98bb352c30a15e6d773d7e425d79678ff1"
        );
        assert_eq!(
            class_key(&f),
            "ffe679bb831c95b67dc17819c63c5090d221aac6f4c7bf530f594ab43d21fa1e"
        );
        // Unicode White_Space (no-break space, ideographic space, tab, newline) collapses:
        // ("NFR-001", "critical", "requirement.md", "non-functional requirements", "a b c").
        let f = finding(
            "NFR-001",
            Severity::Critical,
            "Requirement.md",
            "2.\u{3000}Non-functional\u{a0}Requirements",
            "\u{a0}A\u{a0}\u{a0}b\u{3000}\t\nC ",
        );
        assert_eq!(
            fingerprint(&f),
            "77a0f439bc3d24f4132235d0e44e4d23d270cf9a0f947e61717d4f2daa7b4468"
        );
        // Full Unicode lower-casing happens before the cut: "İ" lower-cases to two scalar
        // values ("i" + U+0307), so 80 of them keep 40: ("REQ-001", "critical", "a.md", "s",
        // "i\u{307}" * 40).
        let f = finding("REQ-001", Severity::Critical, "a.md", "S", &"İ".repeat(80));
        assert_eq!(
            fingerprint(&f),
            "deb0fa3c6a9cf2693137e71513cc01a98bd8c2c4def541d812ff85977236beb6"
        );
        // The numbering regex is applied as written, so `\d` is any Unicode digit:
        // "٤. Persistence" (Arabic-Indic four) → ("design.md", "persistence").
        let f = finding("", Severity::Minor, "design.md", "٤. Persistence", "");
        assert_eq!(
            class_key(&f),
            "273a5241c4df1cba5ed848b3628d3b84fb7caa8fd733d086ea9a659d4f4e8192"
        );
    }

    #[test]
    fn rephrasing_a_non_ascii_gist_after_80_scalars_keeps_the_fingerprint() {
        let head = "é".repeat(79) + "x";
        let a = in_a_md("R", Severity::Critical, &format!("{head}, première fin"));
        let b = in_a_md("R", Severity::Critical, &format!("{head}; autre fin"));
        assert_eq!(fingerprint(&a), fingerprint(&b));
        // One byte-heavy character changed inside the first 80 changes it.
        let c = in_a_md("R", Severity::Critical, &format!("ê{}", &head[2..]));
        assert_ne!(fingerprint(&a), fingerprint(&c));
        // Severity is part of the fingerprint but not of the class key.
        let d = in_a_md("R", Severity::Improvement, &format!("{head}, première fin"));
        assert_ne!(fingerprint(&a), fingerprint(&d));
        assert_eq!(class_key(&a), class_key(&d));
    }

    #[test]
    fn a_re_raise_that_names_its_finding_keeps_the_fingerprint_in_new_words() {
        use Severity::{Critical, Improvement};
        let mut first = finding("REQ-1", Critical, "design.md", "Delete", "no owner check");
        stamp(&mut first);
        let gist = "The server still lets anyone delete any entry";
        let mut again = finding("REQ-1", Improvement, "requirement.md", "Ownership", gist);
        again.still_open = "f1".into();
        again.fingerprint = Some(fingerprint(&again));
        let mut numbered = again.clone();
        numbered.still_open = "1".into();
        let mut stray = again.clone();
        stray.id = "F7".into();
        stray.still_open = "F9".into();
        let mut list = vec![again, numbered, stray];
        let notes = carry_over(&mut list, std::slice::from_ref(&first));
        assert_eq!(list[0].fingerprint, first.fingerprint);
        assert_eq!(list[0].class_key, first.class_key);
        assert_eq!(list[1].fingerprint, first.fingerprint);
        assert_ne!(list[2].fingerprint, first.fingerprint);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("`F7`") && notes[0].contains("`F9`"),
            "{notes:?}"
        );
    }

    #[test]
    fn numbering_and_paths_normalise() {
        for (heading, key) in [
            ("§ 4.1. Module Design", "module design"),
            ("§4 Data", "data"),
            ("4. Data", "data"),
            ("4.1 Data", "data"),
            ("Data 4", "data 4"),
        ] {
            assert_eq!(norm_section(heading), key, "{heading}");
        }
        assert_eq!(norm_path(".\\Specs\\./Design.MD"), "specs/design.md");
        assert_eq!(norm_path("./a/./b.md"), "a/b.md");
    }

    #[test]
    fn rephrasing_after_80_chars_keeps_fingerprint() {
        let base = "x".repeat(80);
        let a = in_a_md("REQ-1", Severity::Minor, &format!("{base} tail one"));
        let b = in_a_md("REQ-1", Severity::Minor, &format!("{base} other"));
        assert_eq!(fingerprint(&a), fingerprint(&b));
        let c = in_a_md("REQ-1", Severity::Minor, &format!("y{}", &base[1..]));
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }

    #[test]
    fn non_ascii_gist_counts_scalar_values() {
        let gist: String = "é".repeat(85);
        assert_eq!(gist80(&gist).chars().count(), 80);
        assert_eq!(gist80("ÄÖÜ  Straße"), "äöü straße");
    }
}
