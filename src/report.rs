//! Reports rendered from records only: the PR body, the retrospective, and the shared tables.
//!
//! Reports never read agent prose. Every number and verdict here comes from `State` or from a
//! result file the harness wrote, so a PR body cannot claim more than the pipeline verified.

pub mod pr_body;
pub mod retrospective;
pub mod status;

use std::fmt::Write as _;

use crate::evidence::{EvaluateResult, ManifestRow};

/// Escapes a table cell.
pub fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// `| Case | Requirement | Method | Verdict | Evidence |`
pub fn acceptance_table(result: &EvaluateResult) -> String {
    let mut s = String::from(
        "| Case | Requirement | Method | Verdict | Evidence |\n|---|---|---|---|---|\n",
    );
    for c in &result.cases {
        let evidence = if c.evidence.is_empty() {
            "—".to_string()
        } else {
            c.evidence
                .iter()
                .map(|e| format!("`{e}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            c.id,
            cell(&c.requirement),
            c.method.map(|m| m.as_str()).unwrap_or("—"),
            c.verdict,
            evidence
        );
    }
    s
}

/// `| File | Bytes | sha256 |`
pub fn manifest_table(rows: &[ManifestRow]) -> String {
    let mut s = String::from("| File | Bytes | sha256 |\n|---|---|---|\n");
    for r in rows {
        let _ = writeln!(s, "| `{}` | {} | `{}` |", cell(&r.path), r.bytes, r.sha256);
    }
    s
}
