//! The browser-step vocabulary against a real app in a real Chromium (issue 21): a ledger whose
//! Delete button asks `confirm()`. Accepting removes the row (a DELETE is sent, the row stays
//! gone after a reload); cancelling keeps it and sends nothing; a dialog no step answers fails
//! its case; `{{run_id}}` fills a unique value the case can read back; a case the converter
//! could not express is never run. A build whose Delete does nothing fails the cancel case,
//! which Playwright's own dismiss-everything default would have passed.
//!
//! Like `evidence.rs`, these need `/usr/bin/chromium` (or `SPEC_ORCHESTRATE_BROWSER`) and the
//! driver's npm packages.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;
use spec_orchestrate::config::Config;
use spec_orchestrate::evidence::runners::{self, RunDirs};
use spec_orchestrate::evidence::steps::{self, CaseSteps, Step, StepsFile, Unexpressible};
use spec_orchestrate::evidence::{CaseResult, Verdict};
use spec_orchestrate::secrets::Redactor;
use spec_orchestrate::spec::cases;

/// The ledger: three rows, a Delete per row behind `confirm()`, a DELETE to the API that
/// really removes the row on the server. `BROKEN=1`: Delete does nothing at all.
const LEDGER: &str = r#"const http = require('http');
let rows = ['rent', 'food', 'coffee'];
const page = () => `<!doctype html><html><body><h1>Ledger</h1>
<form action="/"><label>Note <input id="note" name="note"></label></form>
<ul>${rows.map((r) => `<li><span>${r}</span> <button data-entry="${r}">Delete</button></li>`).join('')}</ul>
<script>
document.querySelectorAll('li button').forEach((b) => b.addEventListener('click', async () => {
  ${process.env.BROKEN ? 'return;' : ''}
  if (!confirm('Delete this entry?')) return;
  const r = await fetch('/api/entries/' + b.dataset.entry, { method: 'DELETE' });
  if (r.ok) b.closest('li').remove();
}));
</script></body></html>`;
http.createServer((req, res) => {
  if (req.method === 'DELETE' && req.url.startsWith('/api/entries/')) {
    const name = decodeURIComponent(req.url.slice('/api/entries/'.length));
    rows = rows.filter((r) => r !== name);
    res.writeHead(204);
    return res.end();
  }
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(page());
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`ready on http://127.0.0.1:${process.env.PORT}/`));
"#;

const TEST_MD: &str = "\
## T-A01: [REQ-001] Cancelling the confirmation keeps the row\n- Steps: open the ledger, click Delete on coffee, cancel the confirmation\n- Expected: the row stays and no DELETE request is sent\n- Verify: playwright\n\n\
## T-A02: [REQ-001] Confirming deletes the row\n- Steps: open the ledger, click Delete on rent, confirm, reload\n- Expected: the row is gone, also after a reload\n- Verify: playwright\n\n\
## T-A03: [REQ-001] Deleting without answering\n- Steps: open the ledger, click Delete on food\n- Expected: the row stays\n- Verify: playwright\n\n\
## T-A04: [REQ-002] A note keeps what was typed\n- Steps: type a note\n- Expected: the input holds it\n- Verify: playwright\n\n\
## T-A05: [REQ-003] The owner is emailed\n- Steps: delete a row\n- Expected: the owner receives an email\n- Verify: playwright\n\n\
## T-A07: [REQ-001] A button the design named\n- Steps: click Remove\n- Expected: gone\n- Verify: playwright\n\n\
## T-A06: [REQ-001] Cancelling, checked by what stays\n- Steps: click Delete on coffee, cancel\n- Expected: coffee stays\n- Verify: playwright\n";

fn delete_button(entry: &str) -> String {
    format!("li:has-text(\"{entry}\") >> role=button[name=\"Delete\"]")
}

fn steps_of(case: &str) -> Vec<Step> {
    let value = match case {
        "T-A01" => json!([
            {"action": "goto", "url": "/"},
            {"action": "expect_count", "selector": "role=listitem", "count": 3},
            {"action": "dismiss_dialog"},
            {"action": "click", "selector": delete_button("coffee")},
            {"action": "expect_dialog", "type": "confirm", "message": "Delete this entry?"},
            {"action": "expect_request", "method": "DELETE", "url": "/api/entries/*", "seen": false},
            {"action": "expect_count", "selector": "role=listitem", "count": 3},
            {"action": "screenshot", "name": "kept"}
        ]),
        "T-A02" => json!([
            {"action": "goto", "url": "/"},
            {"action": "accept_dialog"},
            {"action": "click", "selector": delete_button("rent")},
            {"action": "expect_dialog", "type": "confirm"},
            {"action": "expect_request", "method": "DELETE", "url": "/api/entries/rent", "status": 204},
            {"action": "expect_count", "selector": "role=listitem", "count": 2, "timeout_ms": 4000},
            {"action": "reload"},
            {"action": "expect_count", "selector": "li:has-text(\"rent\")", "count": 0},
            {"action": "screenshot", "name": "gone"}
        ]),
        "T-A03" => json!([
            {"action": "goto", "url": "/"},
            {"action": "click", "selector": delete_button("food")},
            {"action": "expect_count", "selector": "role=listitem", "min": 1},
            {"action": "screenshot", "name": "after"}
        ]),
        "T-A04" => json!([
            {"action": "goto", "url": "/"},
            {"action": "fill", "selector": "role=textbox[name=\"Note\"]", "value": "note {{run_id}}"},
            {"action": "expect_value", "selector": "#note", "value": "note {{run_id}}"},
            {"action": "screenshot", "name": "typed"},
            // The form sends what was typed: the placeholder really became the run's value.
            {"action": "press", "selector": "#note", "key": "Enter"},
            {"action": "expect_request", "method": "GET", "url": "/?note=note+r*"}
        ]),
        // What a converter may write for a cancel case: nothing in it looks for the dialog.
        "T-A06" => json!([
            {"action": "goto", "url": "/"},
            {"action": "dismiss_dialog"},
            {"action": "click", "selector": delete_button("coffee")},
            {"action": "expect_request", "method": "DELETE", "url": "/api/entries/*", "seen": false},
            {"action": "expect_count", "selector": "li:has-text(\"coffee\")", "count": 1},
            {"action": "screenshot", "name": "kept"}
        ]),
        "T-A07" => json!([
            {"action": "goto", "url": "/"},
            {"action": "click", "selector": "role=button[name=\"Remove\"]", "timeout_ms": 1500}
        ]),
        _ => json!([]),
    };
    serde_json::from_value(value).expect("steps parse")
}

struct Ledger {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    feature: PathBuf,
    round: PathBuf,
}

impl Ledger {
    fn new() -> Ledger {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().canonicalize().unwrap().join("repo");
        let feature = repo.join(".specs/ledger");
        std::fs::create_dir_all(&feature).unwrap();
        std::fs::write(repo.join("server.js"), LEDGER).unwrap();
        let round = feature.join("evidence/1");
        Ledger {
            _tmp: tmp,
            repo,
            feature,
            round,
        }
    }

    /// Runs every case of TEST_MD against the app `start` launches.
    fn run(&self, start: &str) -> BTreeMap<String, CaseResult> {
        let parsed = cases::parse(TEST_MD);
        let mut file = StepsFile::default();
        for c in &parsed {
            let mut entry = CaseSteps {
                source: steps::source_hash(c),
                converted_by: Some("e2e".into()),
                steps: steps_of(&c.id),
                cannot_express: Vec::new(),
            };
            if c.id == "T-A05" {
                entry.cannot_express = vec![Unexpressible {
                    step: "the owner receives an email".into(),
                    reason: "no browser step can read a mailbox".into(),
                }];
            }
            file.cases.insert(c.id.clone(), entry);
        }
        let yaml = format!(
            "app:\n  start: \"{start}\"\n  url: \"http://127.0.0.1:{{port}}/\"\n  ready_pattern: \"ready on http://\"\n  ready_timeout_s: 30\nevaluate:\n  step_timeout_s: 3\n"
        );
        let config = Config::parse(&yaml, Path::new("pipeline.yml")).expect("config");
        let results = runners::run_all(
            RunDirs {
                repo: &self.repo,
                feature_dir: &self.feature,
                round_dir: &self.round,
            },
            &parsed,
            &config,
            Ok(Some(&file)),
            &Redactor::default(),
            |_| {},
            &mut |_| Ok(()),
        );
        results.into_iter().map(|r| (r.id.clone(), r)).collect()
    }

    fn log(&self, id: &str) -> String {
        std::fs::read_to_string(self.round.join(format!("{id}.steps.log"))).unwrap_or_default()
    }
}

fn explain(r: &CaseResult) -> String {
    format!("{} {}: {:?}\n{:#?}", r.verdict, r.detail, r.notes, r.steps)
}

#[test]
fn confirm_and_cancel_are_tested_for_real_and_every_dialog_is_recorded() {
    let lab = Ledger::new();
    let by = lab.run("node server.js");

    let cancel = &by["T-A01"];
    assert_eq!(cancel.verdict, Verdict::Pass, "{}", explain(cancel));
    let clicked = &cancel.steps[3];
    assert_eq!(clicked.dialogs.len(), 1, "{clicked:?}");
    assert_eq!(clicked.dialogs[0].kind, "confirm");
    assert_eq!(clicked.dialogs[0].message, "Delete this entry?");
    assert_eq!(clicked.dialogs[0].handled, "dismissed");
    assert!(
        lab.log("T-A01")
            .contains("dialog: confirm \"Delete this entry?\" dismissed"),
        "{}",
        lab.log("T-A01")
    );

    let confirm = &by["T-A02"];
    assert_eq!(confirm.verdict, Verdict::Pass, "{}", explain(confirm));
    assert_eq!(confirm.steps[2].dialogs[0].handled, "accepted");
    let log = lab.log("T-A02");
    assert!(
        log.contains("DELETE http://127.0.0.1:") && log.contains("/api/entries/rent -> 204"),
        "{log}"
    );

    // Nothing answered the dialog: it was dismissed so the page would not freeze, and the
    // step that opened it failed instead of passing on Playwright's default.
    let unanswered = &by["T-A03"];
    assert_eq!(unanswered.verdict, Verdict::Fail, "{}", explain(unanswered));
    assert!(
        unanswered.detail.starts_with("step 2 (click"),
        "{}",
        explain(unanswered)
    );
    let notes = unanswered.notes.as_deref().unwrap_or_default();
    assert!(notes.contains("unexpected confirm dialog"), "{notes}");
    assert!(!unanswered.steps[1].dialogs[0].expected);

    let typed = &by["T-A04"];
    assert_eq!(typed.verdict, Verdict::Pass, "{}", explain(typed));
    let log = lab.log("T-A04");
    let run_id = log
        .lines()
        .find_map(|l| l.strip_prefix("run_id: "))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(run_id.len() >= 8, "{log}");
    let sent = typed.steps.last().unwrap();
    assert_eq!(sent.action, "expect_request");

    let cancel = &by["T-A06"];
    assert_eq!(cancel.verdict, Verdict::Pass, "{}", explain(cancel));

    // The design said "Remove"; the page says "Delete": the failure says the selector found
    // nothing, which is what the implementer (or a re-conversion) needs to know.
    let renamed = &by["T-A07"];
    assert_eq!(renamed.verdict, Verdict::Fail, "{}", explain(renamed));
    assert!(renamed.steps[1].no_match, "{}", explain(renamed));
    assert!(
        renamed
            .notes
            .as_deref()
            .is_some_and(|n| n.contains("matches no element of the built page")),
        "{}",
        explain(renamed)
    );

    let email = &by["T-A05"];
    assert_eq!(email.verdict, Verdict::Blocked, "{}", explain(email));
    assert!(
        email.detail.contains("cannot be checked in a browser")
            && email.detail.contains("no browser step can read a mailbox"),
        "{}",
        email.detail
    );
    assert!(email.steps.is_empty(), "the case was not run");
}

#[test]
fn a_build_whose_delete_does_nothing_fails_the_cancel_case_and_the_confirm_case() {
    let lab = Ledger::new();
    let by = lab.run("BROKEN=1 node server.js");

    let cancel = &by["T-A01"];
    assert_eq!(cancel.verdict, Verdict::Fail, "{}", explain(cancel));
    assert!(
        cancel.detail.starts_with("step 5 (expect_dialog"),
        "{}",
        explain(cancel)
    );

    // Every later step held (the row stays, no DELETE): only the unused dismissal shows that
    // no confirmation was ever asked.
    let cancel = &by["T-A06"];
    assert_eq!(cancel.verdict, Verdict::Fail, "{}", explain(cancel));
    assert!(
        cancel.detail.starts_with("step 2 (dismiss_dialog"),
        "{}",
        explain(cancel)
    );
    assert!(
        cancel
            .notes
            .as_deref()
            .unwrap_or_default()
            .contains("no dialog opened after this step"),
        "{}",
        explain(cancel)
    );

    let confirm = &by["T-A02"];
    assert_eq!(confirm.verdict, Verdict::Fail, "{}", explain(confirm));
    assert!(
        confirm.detail.starts_with("step 4 (expect_dialog"),
        "{}",
        explain(confirm)
    );
}
