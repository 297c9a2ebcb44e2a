//! `evidence/<round>/report.html`: one self-contained page per evaluate round that a reviewer
//! can open offline or straight from GitHub — every case with its requirement, method, verdict,
//! browser steps (timings, errors), console and log excerpts, each screenshot inline, and the
//! size and sha256 of every evidence file.
//!
//! Self-contained means: inline CSS, screenshots as `data:` URIs, no script, and a
//! Content-Security-Policy that forbids loading anything else (`default-src 'none'`). Every text
//! comes from records the harness wrote, but some of it (details, step targets, console lines,
//! logs) was produced by the app under test or by agents, so all of it is HTML-escaped.
//!
//! How it relates to the manifest: the report is written *after* the manifest of the round's
//! other files, lists their hashes (a machine-readable block between the
//! [`MANIFEST_BEGIN`]/[`MANIFEST_END`] markers), and is then hashed itself; its row is added to
//! the round's manifest beside the others. So the manifest covers the report, and the report
//! covers every file — a PR body too short for a long manifest can still anchor all of them
//! through the report's hash (`verify --pr` follows that chain).

use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;

use super::Table;
use crate::evidence::{CaseResult, EvaluateResult, ManifestRow};
use crate::types::kinds::Verdict;

/// File name of the report inside `evidence/<round>/`.
pub const REPORT_FILE: &str = "report.html";

/// Opens the machine-readable manifest block inside the report.
pub const MANIFEST_BEGIN: &str = "<!-- spec-orchestrate:manifest -->";

/// Closes the machine-readable manifest block inside the report.
pub const MANIFEST_END: &str = "<!-- /spec-orchestrate:manifest -->";

/// The page may show images given inline and use its own style, nothing else.
pub const CSP: &str = "default-src 'none'; img-src data:; style-src 'unsafe-inline'";

/// Screenshots larger than this are listed but not inlined (the page must stay openable).
const INLINE_LIMIT: u64 = 8 << 20;

/// Last lines of a text evidence file shown in the report.
const EXCERPT_LINES: usize = 80;

/// Longest excerpt of a text evidence file, in bytes (its tail is shown).
const EXCERPT_BYTES: usize = 12 * 1024;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#1f2328}\
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #d0d7de}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #d0d7de;padding:.2em .5em;text-align:left;vertical-align:top}\
code,pre{font-family:ui-monospace,monospace;font-size:12px}pre{background:#f6f8fa;padding:.6em;overflow:auto;white-space:pre-wrap;word-break:break-all}\
.PASS{color:#1a7f37;font-weight:bold}.FAIL{color:#cf222e;font-weight:bold}.BLOCKED{color:#9a6700;font-weight:bold}\
figure{display:inline-block;margin:.5em;vertical-align:top}figure img{max-width:34em;border:1px solid #d0d7de}figcaption{font-size:12px;word-break:break-all;max-width:34em}";

/// HTML-escapes text for element content and quoted attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Reverses [`esc`] (for reading the manifest block back).
pub fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The anchor id of a case: letters, digits and `-` only, so no case id can break the attribute.
pub fn anchor(case_id: &str) -> String {
    let id: String = case_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("case-{id}")
}

/// The image type of `bytes` by its signature (never by the file name, which an agent chose).
pub fn image_mime(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() > 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Whether an evidence path names a screenshot (by extension; the content is checked on use).
pub fn is_image_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".png", ".jpg", ".jpeg", ".gif", ".webp"]
        .iter()
        .any(|e| lower.ends_with(e))
}

/// The `sha256  bytes  path` lines of a manifest (the format of the report's block and of the
/// PR body's manifest).
pub fn manifest_lines(rows: &[ManifestRow]) -> String {
    let mut s = String::new();
    for r in rows {
        let _ = writeln!(s, "{}  {}  {}", r.sha256, r.bytes, r.path);
    }
    s
}

/// Parses `sha256  bytes  path` lines; lines that do not have that shape are skipped.
pub fn parse_manifest_lines(text: &str) -> Vec<ManifestRow> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.trim_end().splitn(3, "  ");
            let sha = parts.next()?.trim();
            let bytes = parts.next()?.trim().parse().ok()?;
            let path = parts.next()?.trim();
            let hex_ok = sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit());
            (hex_ok && !path.is_empty()).then(|| ManifestRow {
                path: path.to_string(),
                bytes,
                sha256: sha.to_ascii_lowercase(),
            })
        })
        .collect()
}

/// The manifest rows listed inside a report's block, or `None` when the page has no block.
pub fn parse_report_manifest(html: &str) -> Option<Vec<ManifestRow>> {
    let start = html.find(MANIFEST_BEGIN)? + MANIFEST_BEGIN.len();
    let len = html[start..].find(MANIFEST_END)?;
    let block = &html[start..start + len];
    let inner = block
        .trim()
        .trim_start_matches("<pre id=\"manifest\">")
        .trim_end_matches("</pre>");
    Some(parse_manifest_lines(&unescape(inner)))
}

/// The tail of a text file: at most [`EXCERPT_LINES`] lines and [`EXCERPT_BYTES`] bytes;
/// `cut` when the bytes given are already the file's tail ([`crate::fsx::read_tail`]).
fn excerpt(bytes: &[u8], cut: bool) -> String {
    let start = bytes.len().saturating_sub(EXCERPT_BYTES);
    let text = String::from_utf8_lossy(&bytes[start..]);
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(EXCERPT_LINES);
    let mut out = String::new();
    if cut || start > 0 || from > 0 {
        out.push_str("…\n");
    }
    out.push_str(&lines[from..].join("\n"));
    out
}

fn verdict_span(v: Verdict) -> String {
    format!("<span class=\"{v}\">{v}</span>")
}

/// Renders the report of `result` whose evidence files lie under `feature_dir`. `result.manifest`
/// must not yet contain the report itself.
pub fn render(feature_dir: &Path, result: &EvaluateResult) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Acceptance evidence, round {round}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>Acceptance evidence, round {round}</h1>\n",
        round = result.round
    );
    let count = |v| result.cases.iter().filter(|c| c.verdict == v).count();
    let _ = writeln!(
        s,
        "<p>Gate: <span class=\"{gate}\">{gate}</span>. {n} case(s): {p} pass, {f} fail, {b} blocked. \
         {files} evidence file(s) besides this report.</p>",
        gate = result.gate,
        n = result.cases.len(),
        p = count(Verdict::Pass),
        f = count(Verdict::Fail),
        b = count(Verdict::Blocked),
        files = result.manifest.len(),
    );
    if let Some(isolation) = result.isolation {
        let _ = writeln!(s, "<p>{}</p>", esc(isolation.describe()));
    }
    s.push_str(&rubric_section(result));
    s.push_str(&summary_table(result));
    for case in &result.cases {
        s.push_str(&case_section(feature_dir, case, &result.manifest));
    }
    s.push_str(&manifest_section(&result.manifest));
    s.push_str("</body>\n</html>\n");
    s
}

fn rubric_section(result: &EvaluateResult) -> String {
    let Some(r) = &result.rubric else {
        return String::new();
    };
    let mut t = Table::html("Criterion | Score");
    for (k, v) in &r.scores {
        t.row(&[&esc(k), &format!("{v:.1}")]);
    }
    format!(
        "<h2>Rubric</h2>\n<p>Weighted score <strong>{:.2}</strong> (pass mark {:.1}), scored by {}.</p>\n{t}",
        r.weighted,
        r.pass,
        esc(&r.scored_by)
    )
}

fn summary_table(result: &EvaluateResult) -> String {
    let mut t = Table::html("Case | Requirement | Method | Verdict | Detail");
    for c in &result.cases {
        t.row(&[
            &format!("<a href=\"#{}\">{}</a>", anchor(&c.id), esc(&c.id)),
            &esc(&c.requirement),
            &c.method.map(|m| m.as_str()).unwrap_or("—"),
            &verdict_span(c.verdict),
            &esc(&c.detail),
        ]);
    }
    format!("<h2>Cases</h2>\n{t}")
}

fn case_section(feature_dir: &Path, case: &CaseResult, manifest: &[ManifestRow]) -> String {
    let mut s = format!(
        "<section id=\"{}\">\n<h2>{} {}</h2>\n<p>Requirement <strong>{}</strong>, method <code>{}</code>: {}</p>\n",
        anchor(&case.id),
        esc(&case.id),
        verdict_span(case.verdict),
        esc(&case.requirement),
        case.method.map(|m| m.as_str()).unwrap_or("none"),
        esc(&case.detail)
    );
    if let Some(notes) = &case.notes {
        let _ = writeln!(s, "<pre>{}</pre>", esc(notes));
    }
    if let Some(r) = &case.reconversion {
        s.push_str(&reconversion_section(r));
    }
    if !case.steps.is_empty() {
        let mut t = Table::html("# | Action | Target | Result | ms | Error");
        for st in &case.steps {
            t.row(&[
                &st.index,
                &esc(&st.action),
                &format!("<code>{}</code>", esc(&st.target)),
                &if st.ok {
                    verdict_span(Verdict::Pass).replace(">PASS<", ">ok<")
                } else {
                    verdict_span(Verdict::Fail)
                },
                &st.ms,
                &st.error.as_deref().map(esc).unwrap_or_default(),
            ]);
        }
        let _ = write!(s, "<h3>Steps</h3>\n{t}");
    }
    if !case.console.is_empty() {
        let _ = writeln!(
            s,
            "<h3>Browser console</h3>\n<pre>{}</pre>",
            esc(&case.console.join("\n"))
        );
    }
    s.push_str(&evidence_files(feature_dir, case, manifest));
    s.push_str("</section>\n");
    s
}

/// Both versions of a case's steps when the first matched nothing of the built page and the
/// case was converted again in this round (see `phases::evaluate`).
fn reconversion_section(r: &crate::evidence::Reconversion) -> String {
    let json = |steps: &[crate::evidence::steps::Step]| {
        esc(&serde_json::to_string_pretty(steps).unwrap_or_default())
    };
    let mut s = format!(
        "<h3>Steps converted again</h3>\n<p>Version {} of the steps matched nothing of the built page at step {} (<code>{}</code>): {}. {} converted the case again against the page.</p>\n",
        r.from_version,
        r.no_match_step,
        esc(&r.selector),
        esc(&r.previous_detail),
        esc(&r.converted_by)
    );
    if let Some(problem) = &r.problem {
        let _ = writeln!(s, "<p>{}</p>", esc(problem));
    }
    let _ = writeln!(
        s,
        "<details><summary>version {} (replaced)</summary><pre>{}</pre></details>",
        r.from_version,
        json(&r.previous)
    );
    if !r.steps.is_empty() {
        let _ = writeln!(
            s,
            "<details><summary>version {}</summary><pre>{}</pre></details>",
            r.from_version + 1,
            json(&r.steps)
        );
    }
    s
}

fn evidence_files(feature_dir: &Path, case: &CaseResult, manifest: &[ManifestRow]) -> String {
    if case.evidence.is_empty() {
        return "<p>No evidence file.</p>\n".into();
    }
    let row = |p: &str| manifest.iter().find(|r| r.path == p);
    let mut figures = String::new();
    let mut excerpts = String::new();
    let mut table = Table::html("File | Bytes | sha256");
    for path in &case.evidence {
        let (bytes, sha) = row(path)
            .map(|r| (r.bytes.to_string(), r.sha256.clone()))
            .unwrap_or_else(|| ("—".into(), "not in the manifest".into()));
        table.row(&[
            &format!("<code>{}</code>", esc(path)),
            &bytes,
            &format!("<code>{}</code>", esc(&sha)),
        ]);
        let full = feature_dir.join(path);
        if is_image_path(path) {
            figures.push_str(&figure(&full, path, &bytes, &sha));
        } else if let Ok((content, cut)) = crate::fsx::read_tail(&full, EXCERPT_BYTES as u64) {
            let _ = writeln!(
                excerpts,
                "<details open><summary><code>{}</code> (last lines)</summary>\n<pre>{}</pre></details>",
                esc(path),
                esc(&excerpt(&content, cut))
            );
        }
    }
    let mut s = String::new();
    if !figures.is_empty() {
        let _ = writeln!(s, "<h3>Screenshots</h3>\n<div>{figures}</div>");
    }
    let _ = write!(s, "{excerpts}<h3>Evidence files</h3>\n{table}");
    s
}

fn figure(full: &Path, path: &str, bytes: &str, sha: &str) -> String {
    let caption = format!(
        "<figcaption><code>{}</code> · {bytes} bytes · sha256 <code>{}</code></figcaption>",
        esc(path),
        esc(sha)
    );
    // Evidence files are written where test commands run: never follow a link or open a FIFO.
    let too_big = std::fs::symlink_metadata(full).map(|m| m.len() > INLINE_LIMIT);
    let content = match too_big {
        Ok(false) => crate::fsx::read(full).ok(),
        _ => None,
    };
    match content
        .as_deref()
        .and_then(|c| image_mime(c).map(|m| (m, c)))
    {
        Some((mime, c)) => format!(
            "<figure><img alt=\"{}\" src=\"data:{mime};base64,{}\">{caption}</figure>\n",
            esc(path),
            base64::engine::general_purpose::STANDARD.encode(c)
        ),
        None => {
            let why = match too_big {
                Ok(true) => "too large to show inline",
                Ok(false) => "not a PNG, JPEG, GIF or WebP image",
                Err(_) => "missing",
            };
            format!("<figure><p>({why})</p>{caption}</figure>\n")
        }
    }
}

fn manifest_section(rows: &[ManifestRow]) -> String {
    format!(
        "<h2>Manifest</h2>\n<p>Every evidence file of this round (<code>sha256  bytes  path</code>, \
         paths relative to the feature directory). This report is hashed after it was written; its \
         own row is in <code>evaluate-&lt;round&gt;.json</code> and in the pull request's manifest.</p>\n\
         {MANIFEST_BEGIN}\n<pre id=\"manifest\">{}</pre>\n{MANIFEST_END}\n",
        esc(&manifest_lines(rows))
    )
}

/// Writes the report of `result` to `round_dir/report.html` and returns its manifest row (path
/// relative to `feature_dir`). The page is redacted like every other text evidence file. The
/// round directory is reachable by the agents' test commands, so the write goes through `fsx`:
/// a link or FIFO planted at `report.html` is refused instead of written through.
pub fn write(
    feature_dir: &Path,
    round_dir: &Path,
    result: &EvaluateResult,
    redactor: &crate::secrets::Redactor,
) -> crate::error::Result<ManifestRow> {
    let path = round_dir.join(REPORT_FILE);
    let page = redactor.redact(&render(feature_dir, result));
    crate::fsx::write_atomic(&path, page.as_bytes())?;
    let (bytes, sha256) = crate::evidence::manifest::hash_file(&path)
        .map_err(|e| crate::error::Error::io(&path, e))?;
    let rel = path
        .strip_prefix(feature_dir)
        .unwrap_or(&path)
        .to_string_lossy()
        .replace('\\', "/");
    Ok(ManifestRow {
        path: rel,
        bytes,
        sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_lines_round_trip_through_the_report_block() {
        let rows = vec![
            ManifestRow {
                path: "evidence/1/T-A01 <b>&.log".into(),
                bytes: 12,
                sha256: "ab".repeat(32),
            },
            ManifestRow {
                path: "evidence/1/x.png".into(),
                bytes: 0,
                sha256: "0".repeat(64),
            },
        ];
        let html = manifest_section(&rows);
        assert!(!html.contains("<b>"), "{html}");
        assert_eq!(parse_report_manifest(&html), Some(rows));
        assert_eq!(parse_manifest_lines("not  a  row\n"), Vec::new());
    }

    #[test]
    fn anchors_and_escapes_leave_no_markup() {
        assert_eq!(anchor("T-A01\"><script>"), "case-T-A01---script-");
        assert_eq!(
            esc("<img src=x onerror='a'>&"),
            "&lt;img src=x onerror=&#39;a&#39;&gt;&amp;"
        );
        assert_eq!(unescape(&esc("a<&>\"'b")), "a<&>\"'b");
    }
}
