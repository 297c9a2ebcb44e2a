//! Fingerprints and class keys (SPEC §8), byte for byte.
//!
//! A fingerprint identifies "the same complaint" across rounds even when the reviewer rephrases
//! the tail of its gist or renumbers a section; a class key identifies "the same place". Stall
//! detection compares these sets, so the normalisation must never drift.

use sha2::{Digest, Sha256};

use super::envelope::Finding;

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

fn collapse_ws(s: &str) -> String {
    s.split(char::is_whitespace)
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Section heading: whitespace collapsed and trimmed, leading numbering (`4.`, `§4`, `4.1`)
/// removed, lower-cased.
pub fn norm_section(section: &str) -> String {
    let collapsed = collapse_ws(section);
    let stripped = strip_numbering(&collapsed);
    stripped.to_lowercase()
}

/// Applies `^(§\s*)?\d+(\.\d+)*\.?\s*` once at the start.
fn strip_numbering(s: &str) -> &str {
    let mut rest = s;
    if let Some(r) = rest.strip_prefix('§') {
        rest = r.trim_start_matches(char::is_whitespace);
    }
    let digits = |t: &str| t.chars().take_while(|c| c.is_ascii_digit()).count();
    let n = digits(rest);
    if n == 0 {
        return s;
    }
    rest = &rest[n..];
    loop {
        if let Some(r) = rest.strip_prefix('.') {
            let m = digits(r);
            if m > 0 {
                rest = &r[m..];
                continue;
            }
            rest = r;
        }
        break;
    }
    rest.trim_start_matches(char::is_whitespace)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::Severity;

    fn finding(req: &str, sev: Severity, file: &str, section: &str, gist: &str) -> Finding {
        Finding {
            id: "F1".into(),
            requirement_id: req.into(),
            severity: sev,
            file: file.into(),
            section: section.into(),
            gist: gist.into(),
            argument: String::new(),
            suggestion: String::new(),
            fingerprint: None,
            class_key: None,
        }
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

    #[test]
    fn numbering_and_paths_normalise() {
        assert_eq!(norm_section("§ 4.1. Module Design"), "module design");
        assert_eq!(norm_section("§4 Data"), "data");
        assert_eq!(norm_section("4. Data"), "data");
        assert_eq!(norm_section("4.1 Data"), "data");
        assert_eq!(norm_section("Data 4"), "data 4");
        assert_eq!(norm_path(".\\Specs\\./Design.MD"), "specs/design.md");
        assert_eq!(norm_path("./a/./b.md"), "a/b.md");
    }

    #[test]
    fn rephrasing_after_80_chars_keeps_fingerprint() {
        let base = "x".repeat(80);
        let a = finding(
            "REQ-1",
            Severity::Minor,
            "a.md",
            "S",
            &format!("{base} tail one"),
        );
        let b = finding(
            "REQ-1",
            Severity::Minor,
            "a.md",
            "S",
            &format!("{base} other"),
        );
        assert_eq!(fingerprint(&a), fingerprint(&b));
        let c = finding(
            "REQ-1",
            Severity::Minor,
            "a.md",
            "S",
            &format!("y{}", &base[1..]),
        );
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }

    #[test]
    fn non_ascii_gist_counts_scalar_values() {
        let gist: String = "é".repeat(85);
        assert_eq!(gist80(&gist).chars().count(), 80);
        assert_eq!(gist80("ÄÖÜ  Straße"), "äöü straße");
    }
}
