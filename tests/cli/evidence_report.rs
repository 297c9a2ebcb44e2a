//! The evidence report (`evidence/<round>/report.html`), the PR body's evidence section and its
//! size limit.
//!
//! The report is rendered from a fixture round (`tests/fixtures/reports/html/`, tiny real PNGs,
//! logs with markup in them) and snapshotted; separate assertions hold what must never change
//! whatever the snapshot says: nothing is loaded from elsewhere, agent text is escaped, every
//! screenshot is inline.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use sha2::Digest as _;
use spec_orchestrate::evidence::{EvaluateResult, ManifestRow};
use spec_orchestrate::report::{fit, html, links, pr_body};
use spec_orchestrate::state::{self, State};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports")
        .join(name)
}

fn html_round() -> EvaluateResult {
    let text = std::fs::read_to_string(fixture("html").join("evaluate-1.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn snapshot_evidence_report_html() {
    let dir = fixture("html");
    let result = html_round();
    let page = html::render(&dir, &result);
    insta::assert_snapshot!("evidence_report_html", page);
}

#[test]
fn the_report_is_self_contained_escaped_and_lists_every_hash() {
    let dir = fixture("html");
    let result = html_round();
    let page = html::render(&dir, &result);
    // Nothing is loaded from anywhere: a CSP that forbids it, no script, no external reference.
    assert!(page.contains(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        html::CSP
    )));
    assert_eq!(
        html::CSP,
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
    );
    let lower = page.to_ascii_lowercase();
    for banned in [
        "<script",
        "<link",
        "<iframe",
        "<object",
        "src=\"http",
        "href=\"http",
        "url(",
    ] {
        assert!(!lower.contains(banned), "the report contains {banned}");
    }
    for tag in lower.match_indices("<img ") {
        let rest = &lower[tag.0..];
        let src = rest.find("src=\"").map(|i| &rest[i + 5..]).unwrap();
        assert!(src.starts_with("data:image/png;base64,"), "{}", &src[..40]);
    }
    // Text from the app and the agents is escaped wherever it appears.
    assert!(!page.contains("<img src=x"), "notes are escaped");
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
    assert!(!page.contains("<script>alert"), "log excerpts are escaped");
    assert!(page.contains("&lt;script&gt;alert(&#39;log&#39;)&lt;/script&gt;"));
    assert!(
        !page.contains("<b>unescaped</b>"),
        "console lines are escaped"
    );
    // Each screenshot is inline, byte for byte.
    for row in result.manifest.iter().filter(|r| r.path.ends_with(".png")) {
        let bytes = std::fs::read(dir.join(&row.path)).unwrap();
        let uri = format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&bytes)
        );
        assert!(page.contains(&uri), "{} inline", row.path);
    }
    // Every case, its steps with timings, the rubric, and every file's size and hash.
    for case in &result.cases {
        assert!(
            page.contains(&format!("id=\"case-{}\"", case.id)),
            "{}",
            case.id
        );
    }
    assert!(page.contains("<td>210</td>"), "step timings");
    assert!(page.contains("design") && page.contains("7.63"), "rubric");
    assert_eq!(
        html::parse_report_manifest(&page),
        Some(result.manifest.clone())
    );
}

/// The round's report is written after the other files were hashed, lists them, and its own row
/// joins the manifest: what `evaluate` records is exactly what is on disk.
#[test]
fn the_written_report_is_in_the_manifest_beside_the_files_it_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let feature = tmp.path();
    let round_dir = feature.join("evidence/1");
    std::fs::create_dir_all(&round_dir).unwrap();
    for entry in std::fs::read_dir(fixture("html").join("evidence/1")).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, round_dir.join(p.file_name().unwrap())).unwrap();
    }
    let result = html_round();
    let row = html::write(
        feature,
        &round_dir,
        &result,
        &spec_orchestrate::secrets::Redactor::default(),
    )
    .unwrap();
    assert_eq!(row.path, "evidence/1/report.html");
    let bytes = std::fs::read(round_dir.join("report.html")).unwrap();
    assert_eq!(row.bytes, bytes.len() as u64);
    assert_eq!(row.sha256, hex::encode(sha2::Sha256::digest(&bytes)));
    let listed = html::parse_report_manifest(&String::from_utf8(bytes).unwrap()).unwrap();
    assert_eq!(listed, result.manifest);
}

fn ready() -> (State, EvaluateResult) {
    let dir = fixture("ready");
    let state = state::store::load_file(&dir.join(state::STATE_FILE)).unwrap();
    let result = pr_body::last_result(&dir, &state).unwrap();
    (state, result)
}

#[test]
fn the_body_manifest_block_parses_back_to_the_recorded_manifest() {
    let (state, result) = ready();
    let body = pr_body::render(&state, Some(&result));
    let mut parsed = links::parse_body_manifest(&body).expect("a manifest block");
    let mut want = result.manifest.clone();
    parsed.sort_by(|a, b| a.path.cmp(&b.path));
    want.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(parsed, want);
}

/// A thousand cases and a megabyte-long finding: the body still fits GitHub's limit, the cut
/// tables say so and link the report, and the manifest block keeps the report's hash first.
#[test]
fn a_body_with_1000_cases_and_a_1_mib_finding_fits_githubs_limit() {
    let (mut state, mut result) = ready();
    let template = result.cases[0].clone();
    result.cases = (0..1000)
        .map(|i| {
            let mut c = template.clone();
            c.id = format!("T-A{i:04}");
            c.evidence = vec![format!("evidence/1/T-A{i:04}-01-{}.png", "x".repeat(30))];
            c
        })
        .collect();
    result.manifest = result
        .cases
        .iter()
        .map(|c| ManifestRow {
            path: c.evidence[0].clone(),
            bytes: 4096,
            sha256: hex::encode(sha2::Sha256::digest(c.id.as_bytes())),
        })
        .collect();
    result.manifest.push(ManifestRow {
        path: "evidence/1/report.html".into(),
        bytes: 1234,
        sha256: "f".repeat(64),
    });
    let mut finding = state.open_findings.first().cloned().unwrap_or_else(|| {
        serde_json::from_value(serde_json::json!({
            "id": "F1", "requirement_id": "REQ-001", "severity": "critical", "file": "test.md",
            "section": "T-A01", "gist": "", "argument": "", "suggestion": ""
        }))
        .unwrap()
    });
    finding.gist = "é".repeat(1 << 20);
    state.open_findings = vec![finding];
    state.issue.title = "a long title ".repeat(100);
    let body = pr_body::render(&state, Some(&result));
    let chars = body.chars().count();
    assert!(chars <= fit::GITHUB_BODY_LIMIT, "{chars} characters");
    assert!(
        chars > fit::GITHUB_BODY_LIMIT / 2,
        "it was cut, not emptied: {chars}"
    );
    assert!(body.contains("more row(s) not shown"), "the cut says so");
    assert!(
        body.contains("evidence/1/report.html"),
        "and names the report"
    );
    let rows = links::parse_body_manifest(&body).unwrap();
    assert_eq!(
        rows[0].path, "evidence/1/report.html",
        "the report's row is kept first"
    );
    assert!(rows.len() > 10, "as many rows as fit are kept");
    assert!(
        body.contains("| T-A0000 |"),
        "the table keeps its first rows"
    );
    assert!(
        body.contains("### Usage"),
        "the sections after the cut tables stay"
    );
}
