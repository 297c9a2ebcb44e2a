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
pub mod waves;

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

/// A table of a report: the header row, then a row per [`Table::row`]. The one way a report
/// writes a table, in Markdown (`| a | b |` under a `|---|` line) or in the evidence report's
/// HTML. Cells are written as given: recorded text goes through [`cell`] (Markdown) or
/// `html::esc` first; numbers, links and code spans the report made itself do not.
#[derive(Debug, Clone)]
pub struct Table {
    text: String,
    html: bool,
    rows: usize,
}

impl Table {
    /// A Markdown table with these column names (`"Round | Pass | Gate"`) and no rows yet.
    pub fn new(headers: &str) -> Table {
        let headers: Vec<&str> = headers.split('|').map(str::trim).collect();
        let mut text = String::from("|");
        for h in &headers {
            // An empty header is `| |`, as GitHub shows it, not a cell of one space.
            let _ = write!(text, "{}{h} |", if h.is_empty() { "" } else { " " });
        }
        let _ = writeln!(text, "\n|{}", "---|".repeat(headers.len()));
        Table {
            text,
            html: false,
            rows: 0,
        }
    }

    /// An HTML table (`<table>`, a `<th>` per column named in `headers`, as in [`Table::new`])
    /// with no rows yet.
    pub fn html(headers: &str) -> Table {
        let mut text = String::from("<table><tr>");
        for h in headers.split('|').map(str::trim) {
            let _ = write!(text, "<th>{h}</th>");
        }
        text.push_str("</tr>\n");
        Table {
            text,
            html: true,
            rows: 0,
        }
    }

    /// Adds a row, one cell per column.
    pub fn row(&mut self, cells: &[&dyn std::fmt::Display]) -> &mut Table {
        self.rows += 1;
        if self.html {
            self.text.push_str("<tr>");
            for c in cells {
                let _ = write!(self.text, "<td>{c}</td>");
            }
            self.text.push_str("</tr>\n");
        } else {
            self.text.push('|');
            for c in cells {
                let _ = write!(self.text, " {c} |");
            }
            self.text.push('\n');
        }
        self
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// A report's section: `heading`, then the table and a blank line, or `none` when it has no
    /// rows.
    pub fn section(&self, heading: &str, none: &str) -> String {
        if self.is_empty() {
            format!("{heading}{none}")
        } else {
            format!("{heading}{self}\n")
        }
    }

    /// A report's section that only a table with rows has: `heading`, then the table and a
    /// blank line; nothing at all without rows.
    pub fn titled(&self, heading: &str) -> String {
        if self.is_empty() {
            String::new()
        } else {
            format!("{heading}{self}\n")
        }
    }

    /// The table's lines, each ending in a newline.
    pub fn into_text(self) -> String {
        self.to_string()
    }
}

/// The table's lines, each ending in a newline: `writeln!(s, "{table}")` adds the table and the
/// blank line after it.
impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)?;
        if self.html {
            f.write_str("</table>\n")?;
        }
        Ok(())
    }
}

/// `| Agent | Calls | Input tokens | Output tokens | USD |`, a row per agent, then the total: the
/// one rendering of what a run cost, in the PR body, the status comment and the job summary.
pub fn usage_table(state: &State) -> String {
    let mut t = Table::new("Agent | Calls | Input tokens | Output tokens | USD");
    for (agent, u) in &state.usage {
        t.row(&[
            &agent,
            &u.calls,
            &u.input_tokens,
            &u.output_tokens,
            &format!("{:.4}", u.usd),
        ]);
    }
    let mut s = t.into_text();
    let _ = writeln!(s, "\nTotal: {:.4} USD.", state.total_usd());
    s
}

/// A commit in a table cell: its first ten hex digits as code, or `—` when there is none.
pub fn commit_cell(sha: Option<&str>) -> String {
    sha.map_or_else(|| "—".into(), |c| format!("`{}`", &c[..c.len().min(10)]))
}

/// `| File | Bytes | sha256 |`
pub fn manifest_table(rows: &[ManifestRow]) -> String {
    let mut t = Table::new("File | Bytes | sha256");
    for r in rows {
        t.row(&[
            &format!("`{}`", cell(&r.path)),
            &r.bytes,
            &format!("`{}`", r.sha256),
        ]);
    }
    t.into_text()
}

/// Which columns of the arbitration table a report shows: the status comment the short one
/// (`Loop | Signal | Decision | Note`), the PR body every column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArbitrationColumns {
    /// Loop, signal, decision, note.
    Short,
    /// Loop, signal, after round, decision, from, to, note.
    Full,
}

/// The one arbitration table: a row per arbitration in `state`, in the columns asked for.
pub fn arbitration_table(state: &State, columns: ArbitrationColumns) -> Table {
    let full = columns == ArbitrationColumns::Full;
    let mut t = Table::new(if full {
        "Loop | Signal | After round | Decision | From | To | Note"
    } else {
        "Loop | Signal | Decision | Note"
    });
    for a in &state.arbitrations {
        let [from, to] = [&a.from, &a.to].map(|n| n.as_deref().unwrap_or("—"));
        let note = cell(&a.note);
        let all: [&dyn std::fmt::Display; 7] = [
            &a.phase,
            &a.signal,
            &a.after_round,
            &a.decision,
            &from,
            &to,
            &note,
        ];
        t.row(&if full {
            all.to_vec()
        } else {
            [0, 1, 3, 6].map(|i| all[i]).to_vec()
        });
    }
    t
}

/// One arbitration in a line of prose (`status`, the demo, the retrospective):
/// `<loop> <signal> after round <n> → <decision> (<note>)`.
pub fn arbitration_line(a: &crate::state::Arbitration) -> String {
    format!(
        "{} {} after round {} → {} ({})",
        a.phase, a.signal, a.after_round, a.decision, a.note
    )
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
        let mut state = crate::state::tests::blank(crate::state::Mode::Auto);
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
