//! Reports rendered from records only: the PR body, the retrospective, and the shared tables.
//!
//! Reports never read agent prose. Every number and verdict here comes from `State` or from a
//! result file the harness wrote, so a PR body cannot claim more than the pipeline verified.

pub mod fit;
pub mod html;
pub mod links;
pub mod pr_body;
pub mod retrospective;
pub mod review_round;
pub mod status;

use std::fmt::Write as _;

use crate::evidence::ManifestRow;
use crate::state::State;

/// Longest text of one table cell, in characters: a megabyte of agent prose in one finding must
/// not crowd out the rest of a body (GitHub caps bodies at 65,536 characters).
pub const CELL_LIMIT: usize = 1_000;

/// Escapes a table cell (and shortens it to [`CELL_LIMIT`] characters).
pub fn cell(s: &str) -> String {
    shorten(s.replace('|', "\\|").replace('\n', " "), true)
}

/// One line of prose outside a table (a heading, a headline, a list item): newlines become
/// spaces so that recorded text cannot start a heading or a table of its own, and it is
/// shortened like a [`cell`]. Pipes stay as they are: outside a table `\|` would show its
/// backslash, inside a code span most of all.
pub fn line(s: &str) -> String {
    shorten(s.replace('\n', " "), false)
}

/// `s` cut to [`CELL_LIMIT`] characters, with `…` when it was longer.
fn shorten(s: String, in_table: bool) -> String {
    if s.chars().count() <= CELL_LIMIT {
        return s;
    }
    let mut out: String = s.chars().take(CELL_LIMIT).collect();
    // In a table, never end on a lone backslash, which would escape the cell's closing pipe.
    while in_table && out.ends_with('\\') {
        out.pop();
    }
    out.push('…');
    out
}

/// `| Agent | Calls | Input tokens | Output tokens | USD |`, a row per agent, then the total: the
/// one rendering of what a run cost, in the PR body, the status comment and the job summary.
pub fn usage_table(state: &State) -> String {
    let mut s = String::from(
        "| Agent | Calls | Input tokens | Output tokens | USD |\n|---|---|---|---|---|\n",
    );
    for (agent, u) in &state.usage {
        let _ = writeln!(
            s,
            "| {agent} | {} | {} | {} | {:.4} |",
            u.calls, u.input_tokens, u.output_tokens, u.usd
        );
    }
    let _ = writeln!(s, "\nTotal: {:.4} USD.", state.total_usd());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_are_escaped_in_cells_only() {
        let text = "answer `arbitrate <continue|swap>`\nnext";
        assert_eq!(cell(text), "answer `arbitrate <continue\\|swap>` next");
        assert_eq!(line(text), "answer `arbitrate <continue|swap>` next");
        let long = "x".repeat(CELL_LIMIT + 5);
        assert_eq!(line(&long).chars().count(), CELL_LIMIT + 1);
        assert!(line(&long).ends_with('…'));
    }

    #[test]
    fn the_usage_table_has_a_row_per_agent_and_the_total() {
        let mut state = State::new(
            "f",
            crate::state::IssueRef::default(),
            crate::state::Mode::Auto,
        );
        state
            .usage
            .entry("author".into())
            .or_default()
            .add(1200, 300, 0.0125);
        state
            .usage
            .entry("reviewer".into())
            .or_default()
            .add(800, 100, 0.5);
        assert_eq!(
            usage_table(&state),
            "| Agent | Calls | Input tokens | Output tokens | USD |\n|---|---|---|---|---|\n\
             | author | 1 | 1200 | 300 | 0.0125 |\n\
             | reviewer | 1 | 800 | 100 | 0.5000 |\n\
             \nTotal: 0.5125 USD.\n"
        );
    }
}
