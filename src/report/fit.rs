//! Keeping a body under GitHub's limit: a pull request body (and an issue comment) holds at most
//! 65,536 characters, and GitHub refuses a longer one. A run with a thousand cases, or a finding
//! quoting a megabyte of log, must still publish its PR.
//!
//! [`cap`] cuts the largest table (or the manifest block) in half, again and again, each cut
//! marked with a line that says how many rows went and where they are (the evidence report,
//! which lists every case and every hash); the header rows and the manifest's first row (the
//! report's own hash, which anchors all the others) are always kept. Only if no table is left
//! to cut is the text itself truncated.

use super::links::{BODY_MANIFEST_BEGIN, BODY_MANIFEST_END};

/// GitHub's limit on a pull request body or comment, in characters.
pub const GITHUB_BODY_LIMIT: usize = 65_536;

/// A cuttable block: `[start, end)` line indices of its data rows.
#[derive(Debug, Clone, Copy)]
struct Block {
    start: usize,
    end: usize,
}

fn chars(lines: &[String]) -> usize {
    lines.iter().map(|l| l.chars().count() + 1).sum()
}

/// Tables (data rows after the `|---|` line) and the manifest block (rows after its first).
fn blocks(lines: &[String]) -> Vec<Block> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].starts_with(BODY_MANIFEST_BEGIN) {
            // marker, ```text, first row (kept), rows…, ```, end marker
            let start = i + 3;
            let mut j = start;
            while j < lines.len() && !lines[j].starts_with("```") {
                j += 1;
            }
            if j > start {
                out.push(Block { start, end: j });
            }
            while i < lines.len() && !lines[i].starts_with(BODY_MANIFEST_END) {
                i += 1;
            }
        } else if lines[i].starts_with('|')
            && lines.get(i + 1).is_some_and(|l| l.starts_with("|---"))
        {
            let start = i + 2;
            let mut j = start;
            while j < lines.len() && lines[j].starts_with('|') {
                j += 1;
            }
            if j > start {
                out.push(Block { start, end: j });
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// `body` itself when it fits in `limit` characters; otherwise the body with its largest tables
/// cut, each cut naming `see` (e.g. a link to the report) for the rows that were left out.
pub fn cap(body: String, limit: usize, see: &str) -> String {
    if body.chars().count() <= limit {
        return body;
    }
    let mut lines: Vec<String> = body.lines().map(str::to_string).collect();
    // Cut notes go after a table (a line inside it would end it) or inside the code block.
    let mut notes: Vec<(usize, usize)> = Vec::new(); // (line after the block's rows, rows cut)
    loop {
        let total = chars(&lines) + notes.len() * (see.chars().count() + 120);
        if total <= limit {
            break;
        }
        let largest = blocks(&lines)
            .into_iter()
            .filter(|b| b.end > b.start)
            .max_by_key(|b| chars(&lines[b.start..b.end]));
        let Some(b) = largest else {
            break;
        };
        let keep = (b.end - b.start) / 2;
        let cut = b.end - b.start - keep;
        lines.drain(b.start + keep..b.end);
        let at = b.start + keep;
        // Shift notes below the cut and merge with one already at this spot.
        for n in notes.iter_mut() {
            if n.0 > at {
                n.0 -= cut;
            }
        }
        match notes.iter_mut().find(|n| n.0 == at) {
            Some(n) => n.1 += cut,
            None => notes.push((at, cut)),
        }
    }
    notes.sort_by_key(|n| std::cmp::Reverse(n.0));
    for (at, cut) in notes {
        let in_code = lines.get(at).is_some_and(|l| l.starts_with("```"));
        let note = if in_code {
            format!("… {cut} more row(s) not shown to fit GitHub's limit: see {see}")
        } else {
            format!(
                "\n*… {cut} more row(s) not shown to fit GitHub's {GITHUB_BODY_LIMIT}-character limit: see {see}.*"
            )
        };
        lines.insert(at, note);
    }
    let mut out = lines.join("\n");
    out.push('\n');
    if out.chars().count() > limit {
        let tail = format!("\n\n*… cut to fit GitHub's limit: see {see}.*\n");
        let keep = limit.saturating_sub(tail.chars().count());
        out = out.chars().take(keep).collect::<String>() + &tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_table_is_cut_with_a_note_and_short_bodies_are_untouched() {
        let short = "## t\n\n| a |\n|---|\n| 1 |\n".to_string();
        assert_eq!(cap(short.clone(), 1000, "x"), short);
        let mut body = String::from("## t\n\n| a | b |\n|---|---|\n");
        for i in 0..2000 {
            body.push_str(&format!("| {i} | {} |\n", "y".repeat(40)));
        }
        body.push_str("\nend\n");
        let out = cap(body, 10_000, "[report](u)");
        assert!(out.chars().count() <= 10_000, "{}", out.len());
        assert!(out.contains("| 0 |"));
        assert!(out.contains("more row(s) not shown"), "{out}");
        assert!(out.ends_with("end\n"), "the text after the table stays");
    }

    #[test]
    fn text_without_tables_is_truncated_at_the_limit() {
        let out = cap("x".repeat(100_000), 1000, "r");
        assert!(out.chars().count() <= 1000);
        assert!(out.contains("cut to fit"));
    }
}
