//! Links to a round's evidence on GitHub, and the PR body's evidence section that uses them.
//!
//! In Action mode, after each evaluate round, the job uploads the round's `report.html` and its
//! screenshots as unzipped artifacts and records where they are under the state side effect
//! `evidence:<round>` ([`EvidenceLinks`], typed in `state::job`). The PR body's acceptance table links each case's
//! screenshots and the report from there; the status comment links the latest report. Locally
//! nothing is uploaded and the same section names the files instead.
//!
//! The body's manifest is a fenced block of `sha256  bytes  path` lines between
//! [`BODY_MANIFEST_BEGIN`] and [`BODY_MANIFEST_END`], the report's row first, so that
//! `verify --pr` can read back exactly what the reviewer sees.

use std::fmt::Write as _;

use crate::evidence::{EvaluateResult, ManifestRow};
use crate::state::State;
use crate::state::job::{EvidenceLinks, UploadedFile};

use super::html::{self, REPORT_FILE};
use super::{Table, cell};

/// Opens the manifest block in the PR body (the report's marker).
pub const BODY_MANIFEST_BEGIN: &str = html::MANIFEST_BEGIN;

/// Closes the manifest block in the PR body (the report's marker).
pub const BODY_MANIFEST_END: &str = html::MANIFEST_END;

impl EvidenceLinks {
    /// The links recorded for `round`, if its evidence was uploaded.
    pub fn of(state: &State, round: u32) -> Option<EvidenceLinks> {
        state.job.evidence(round).cloned()
    }

    /// The links of the newest round that has any.
    pub fn latest(state: &State) -> Option<EvidenceLinks> {
        state
            .rounds
            .evaluate
            .iter()
            .rev()
            .find_map(|r| Self::of(state, r.round))
    }

    /// The report's artifact, when it was uploaded.
    pub fn report(&self) -> Option<&UploadedFile> {
        self.files
            .iter()
            .find(|(p, _)| p.rsplit('/').next() == Some(REPORT_FILE))
            .map(|(_, f)| f)
    }
}

/// Path of a round's report relative to the feature directory.
pub fn report_path(round: u32) -> String {
    format!("evidence/{round}/{REPORT_FILE}")
}

/// The "Report:" line: a link on GitHub, the path otherwise.
pub fn report_line(round: u32, links: Option<&EvidenceLinks>) -> String {
    match links.and_then(EvidenceLinks::report) {
        Some(f) => format!(
            "Evidence report of round {round} (screenshots, steps, logs, hashes): [{REPORT_FILE}]({})",
            f.url
        ),
        None => format!(
            "Evidence report of round {round}: `{}` (in the run's checkpoint).",
            report_path(round)
        ),
    }
}

/// `| Case | Requirement | Method | Verdict | Evidence |` with screenshots linked when uploaded:
/// the one acceptance table, in the PR body and (with no links) in a round's `evaluate-<n>.md`.
pub fn acceptance_table(result: &EvaluateResult, links: Option<&EvidenceLinks>) -> String {
    let mut t = Table::new("Case | Requirement | Method | Verdict | Evidence");
    for c in &result.cases {
        let evidence = if c.evidence.is_empty() {
            "—".to_string()
        } else {
            c.evidence
                .iter()
                .map(|e| {
                    match links
                        .and_then(|l| l.files.get(e))
                        .filter(|_| html::is_image_path(e))
                    {
                        Some(f) => format!("[`{}`]({})", cell(e), f.url),
                        None => format!("`{}`", cell(e)),
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        t.row(&[
            &cell(&c.id),
            &cell(&c.requirement),
            &c.method.map(|m| m.as_str()).unwrap_or("—"),
            &c.verdict,
            &evidence,
        ]);
    }
    t.into_text()
}

/// The manifest rows in body order: the report first (it anchors every other file), then the
/// rest by path.
pub fn body_order(rows: &[ManifestRow]) -> Vec<&ManifestRow> {
    let mut out: Vec<&ManifestRow> = rows.iter().collect();
    out.sort_by_key(|r| {
        (
            !r.path.ends_with(&format!("/{REPORT_FILE}")),
            r.path.clone(),
        )
    });
    out
}

/// The fenced, marked manifest block of the PR body.
pub fn manifest_block(rows: &[ManifestRow]) -> String {
    let rows: Vec<ManifestRow> = body_order(rows).into_iter().cloned().collect();
    let lines = html::manifest_lines(&rows);
    format!("{BODY_MANIFEST_BEGIN}\n```text\n{lines}```\n{BODY_MANIFEST_END}\n")
}

/// The manifest rows printed in a PR body, or `None` when it has no manifest block.
///
/// The block is found by its marker *followed by its fence on the next line*: recorded text
/// (a case id, a task title) can quote the bare marker, but [`super::cell`] and [`super::line`]
/// turn its newlines into spaces, so only [`manifest_block`] writes the marker and the fence.
pub fn parse_body_manifest(body: &str) -> Option<Vec<ManifestRow>> {
    let open = format!("{BODY_MANIFEST_BEGIN}\n```text\n");
    let start = body.find(&open)? + open.len();
    let len = body[start..].find(BODY_MANIFEST_END)?;
    Some(html::parse_manifest_lines(&body[start..start + len]))
}

/// The body's "Acceptance evidence" section.
pub fn section(state: &State, result: Option<&EvaluateResult>) -> String {
    let mut s = String::from("### Acceptance evidence\n\n");
    let Some(r) = result else {
        s.push_str("No acceptance round ran.\n\n#### Evidence manifest\n\n");
        s.push_str(&manifest_block(&[]));
        s.push('\n');
        return s;
    };
    let links = EvidenceLinks::of(state, r.round);
    let _ = writeln!(s, "Round {}, gate **{}**.\n", r.round, r.gate);
    if let Some(isolation) = r.isolation {
        let _ = writeln!(s, "{}\n", isolation.describe());
    }
    let _ = writeln!(s, "{}\n", report_line(r.round, links.as_ref()));
    s.push_str(&acceptance_table(r, links.as_ref()));
    if let Some(score) = &r.rubric {
        let _ = writeln!(
            s,
            "\nRubric: **{:.2}** (pass mark {:.1}; {}), scored by {} from {} screenshot(s).",
            score.weighted,
            score.pass,
            score
                .scores
                .iter()
                .map(|(k, v)| format!("{k} {v:.1}"))
                .collect::<Vec<_>>()
                .join(", "),
            score.scored_by,
            score.screenshots.len()
        );
    }
    s.push_str("\n#### Evidence manifest\n\n`sha256  bytes  path`, paths relative to the feature directory; the report lists the same hashes.\n\n");
    s.push_str(&manifest_block(&r.manifest));
    s.push_str("\nEvidence files are kept out of git; `spec-orchestrate verify` re-checks them against this manifest, `spec-orchestrate verify --pr <number>` re-checks the uploaded ones.\n\n");
    s
}

/// The status comment's line linking the latest report, when one was uploaded.
pub fn status_line(state: &State) -> Option<String> {
    let links = EvidenceLinks::latest(state)?;
    let report = links.report()?;
    Some(format!(
        "Latest evidence report (evaluate round {}): [{REPORT_FILE}]({})",
        links.round, report.url
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without links (a local run, a round's `evaluate-<n>.md`) the table names the files, and
    /// every text an agent or a test command chose is escaped, the case id and file names too.
    #[test]
    fn the_table_without_links_names_the_files_and_escapes_every_cell() {
        let mut result: EvaluateResult = serde_json::from_str(include_str!(
            "../../tests/fixtures/reports/html/evaluate-1.json"
        ))
        .unwrap();
        result.cases.truncate(1);
        result.cases[0].id = "T|1".into();
        result.cases[0].requirement = "a | b".into();
        result.cases[0].evidence = vec!["evidence/1/a|b.log".into()];
        let table = acceptance_table(&result, None);
        let row = table.lines().nth(2).unwrap();
        assert!(row.starts_with("| T\\|1 | a \\| b | "), "{row}");
        assert!(row.ends_with(" | `evidence/1/a\\|b.log` |"), "{row}");
    }

    /// A marker quoted in recorded text before the real block is not taken for the manifest.
    #[test]
    fn a_marker_quoted_in_a_cell_does_not_stand_for_the_manifest() {
        let fake = format!(
            "{BODY_MANIFEST_BEGIN} {}  1  evidence/1/fake.png {BODY_MANIFEST_END}",
            "a".repeat(64)
        );
        let real = ManifestRow {
            path: "evidence/1/report.html".into(),
            bytes: 2,
            sha256: "b".repeat(64),
        };
        let body = format!(
            "| {} |\n\n{}",
            super::super::cell(&fake),
            manifest_block(std::slice::from_ref(&real))
        );
        assert_eq!(parse_body_manifest(&body), Some(vec![real]));
    }
}
