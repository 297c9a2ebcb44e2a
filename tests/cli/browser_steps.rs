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
use spec_orchestrate::evidence::CaseResult;
use spec_orchestrate::evidence::steps::Step;
use spec_orchestrate::evidence::steps::answer::{Conversion, Unexpressible};
use spec_orchestrate::types::kinds::{BlockerCategory, CallRole, Verdict};
use spec_orchestrate::types::{Phase, Role};

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
    lab: crate::support::RoundLab,
    round: PathBuf,
}

impl Ledger {
    fn new() -> Ledger {
        let lab = crate::support::RoundLab::new("ledger", &[("server.js", LEDGER)]);
        let round = lab.round_dir(1);
        Ledger { lab, round }
    }

    /// Runs every case of TEST_MD against the app `start` launches; T-A05 could not be
    /// expressed (it is stored so, and never run).
    fn run(&self, start: &str) -> BTreeMap<String, CaseResult> {
        let yaml = format!(
            "app:\n  start: \"{start}\"\n  url: \"http://127.0.0.1:{{port}}/\"\n  ready_pattern: \"ready on http://\"\n  ready_timeout_s: 30\nevaluate:\n  step_timeout_s: 3\n"
        );
        self.lab.run(TEST_MD, &yaml, 1, |c| {
            let cannot_express = if c.id == "T-A05" {
                vec![Unexpressible {
                    step: "the owner receives an email".into(),
                    reason: "no browser step can read a mailbox".into(),
                }]
            } else {
                Vec::new()
            };
            Some(Conversion {
                steps: steps_of(&c.id),
                cannot_express,
            })
        })
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

// ---------------------------------------------------------------------------------------------
// re-conversion against the built app, through `run`
// ---------------------------------------------------------------------------------------------

/// The demo's agents, but the e2e_runner converted T-A05 from a design that named the toggle
/// "Switch theme" (the built page says "Toggle dark mode"). Asked again at evaluate, it reads
/// the page outline in its prompt and uses the name it finds there, unless `E2E_MODE` is
/// `still` (then it keeps the design's name, as a converter facing a page without the element
/// would). Every conversion prompt is logged.
fn renamed_toggle_converter(demo: &crate::support::Demo, mode: &str) -> PathBuf {
    let log = agent_log(demo, "e2e-prompts.jsonl");
    let agent = demo.tmp.path().join("e2e.py");
    std::fs::write(
        &agent,
        format!(
            r##"import json, os, sys
sys.dont_write_bytecode = True
sys.path.insert(0, {agents:?})
import demo_agents
req = demo_agents.read_request()
task = req.get("task") if isinstance(req.get("task"), dict) else {{}}
if req.get("role") == "e2e_runner" and task.get("kind") == "playwright":
    prompt = str(req.get("prompt") or "")
    with open({log:?}, "a") as fh:
        fh.write(json.dumps({{"phase": req.get("phase"), "prompt": prompt}}) + "\n")
    sees = 'button "Toggle dark mode"' in prompt and req.get("phase") == "evaluate"
    name = "Toggle dark mode" if sees and {mode:?} != "still" else "Switch theme"
    steps = []
    for s in demo_agents.BROWSER_STEPS[task["id"]]:
        s = dict(s)
        sel = s.get("selector", "")
        if sel == "#theme-toggle":
            s["selector"] = 'role=button[name="%s"]' % name
        elif sel.startswith("#theme-toggle["):
            s["selector"] = 'role=button[name="%s"][pressed=true]' % name
        steps.append(s)
    demo_agents.report("done", "steps of " + task["id"], output={{"steps": steps}})
else:
    demo_agents.dispatch(req)
"##,
            agents = demo.agents().display().to_string(),
            log = log.display().to_string(),
        ),
    )
    .unwrap();
    let config = crate::support::with_agent(
        &demo.config(),
        "e2e",
        &format!(
            "{{ kind: command, command: [\"python3\", \"{}\"], opposite: reviewer }}",
            agent.display()
        ),
    )
    .replace("e2e_runner: author", "e2e_runner: e2e")
    .replacen("limits:", "evaluate:\n  step_timeout_s: 3\nlimits:", 1);
    demo.write_config(&config);
    log
}

/// A log file a scripted agent appends to, in a directory beside the checkout that the agents'
/// uid (which they run as when the tests run as root) may write.
fn agent_log(demo: &crate::support::Demo, name: &str) -> PathBuf {
    let dir = demo.tmp.path().join("logs");
    crate::support::agent_writable(&dir);
    dir.join(name)
}

fn prompts(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn browser_case(result: &serde_json::Value) -> &serde_json::Value {
    result["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "T-A05")
        .unwrap_or_else(|| panic!("{result}"))
}

fn until_evaluate(demo: &crate::support::Demo) -> String {
    let out = demo
        .run_cmd()
        .arg("--until")
        .arg("evaluate")
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "paused after evaluate\n{stderr}"
    );
    stderr
}

/// `run --until implement`, then `step`: exactly one evaluate round (a failing round would go on
/// to fix tasks and more rounds).
fn one_evaluate_round(demo: &crate::support::Demo) -> String {
    let out = demo
        .run_cmd()
        .arg("--until")
        .arg("implement")
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    let mut stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "paused after implement\n{stderr}"
    );
    let out = demo
        .cmd("step")
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    stderr.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(
        demo.feature_dir().join("evaluate-1.json").is_file()
            && !demo.feature_dir().join("evaluate-2.json").exists(),
        "one evaluate round ({:?})\n{stderr}",
        out.status.code()
    );
    stderr
}

#[test]
fn a_selector_from_the_design_that_matches_nothing_is_converted_again_against_the_page_and_passes()
{
    let demo = crate::support::Demo::new();
    let log = renamed_toggle_converter(&demo, "fixed");
    let stderr = until_evaluate(&demo);
    let dir = demo.feature_dir();

    // Asked twice: from the prose in spec_generate, then once at evaluate with the page.
    let asked = prompts(&log);
    assert_eq!(asked.len(), 2, "{asked:?}\n{stderr}");
    assert_eq!(asked[0]["phase"], "spec_generate");
    assert_eq!(asked[1]["phase"], "evaluate");
    let again = asked[1]["prompt"].as_str().unwrap();
    for shown in [
        "step 3 (`expect_visible role=button[name=\"Switch theme\"]`) found no element",
        "\"selector\": \"role=button[name=\\\"Switch theme\\\"]\"",
        "button \"Toggle dark mode\"",
        "<<<PAGE-",
        "keep every check",
    ] {
        assert!(again.contains(shown), "{shown}\n{again}");
    }
    // The re-conversion's part of the prompt is template `e2e_reconvert`, as sent.
    insta::assert_snapshot!(
        "prompt_step_reconverter",
        crate::prompt_snapshots::normalised(again, demo.tmp.path())
    );

    let result = read_json(&dir.join("evaluate-1.json"));
    let case = browser_case(&result);
    assert_eq!(case["verdict"], "PASS", "{case:#}\n{stderr}");
    assert_eq!(result["gate"], "PASS", "{result:#}");
    let record = &case["reconversion"];
    assert_eq!(record["from_version"], 1, "{case:#}");
    assert_eq!(record["no_match_step"], 3);
    assert_eq!(record["selector"], "role=button[name=\"Switch theme\"]");
    assert_eq!(record["converted_by"], "e2e");
    assert_eq!(
        record["previous"][2]["selector"],
        "role=button[name=\"Switch theme\"]"
    );
    assert_eq!(
        record["steps"][4]["selector"],
        "role=button[name=\"Toggle dark mode\"]"
    );
    assert!(record["problem"].is_null(), "{record:#}");
    assert!(
        record["previous_detail"]
            .as_str()
            .unwrap()
            .starts_with("step 3 (expect_visible"),
        "{record:#}"
    );
    // Both versions' evidence is in the round: the first run's log, the new version's own.
    let evidence = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        evidence(&record["previous_evidence"]).contains(&"evidence/1/T-A05.steps.log".into()),
        "{record:#}"
    );
    assert!(
        evidence(&case["evidence"]).contains(&"evidence/1/T-A05.v2.steps.log".into()),
        "{case:#}"
    );
    assert!(dir.join("evidence/1/T-A05.steps.log").is_file());

    assert_new_version_stored_with_the_old_in_its_history(&dir);

    // The reports show it.
    let md = std::fs::read_to_string(dir.join("evaluate-1.md")).unwrap();
    assert!(
        md.contains("## Steps converted again against the built app")
            && md.contains("- T-A05: version 1 matched nothing at step 3")
            && md.contains("version 2 ran, PASS"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.join("evidence/1/report.html")).unwrap();
    assert!(
        html.contains("<h3>Steps converted again</h3>") && html.contains("version 1 (replaced)"),
        "report.html"
    );
}

/// The new version of T-A05 is what test.steps.json (in `dir`) holds now, the replaced one in
/// its history with the reason.
fn assert_new_version_stored_with_the_old_in_its_history(dir: &std::path::Path) {
    let steps = read_json(&dir.join("test.steps.json"));
    assert_eq!(
        steps["cases"]["T-A05"]["steps"][4]["selector"],
        "role=button[name=\"Toggle dark mode\"]"
    );
    let history = &steps["history"]["T-A05"];
    assert_eq!(history[0]["version"], 1, "{steps:#}");
    assert_eq!(history[0]["round"], 1);
    assert_eq!(
        history[0]["steps"][2]["selector"],
        "role=button[name=\"Switch theme\"]"
    );
    assert!(
        history[0]["because"]
            .as_str()
            .unwrap()
            .contains("matched no element of the built page"),
        "{history}"
    );
}

#[test]
fn a_case_whose_new_version_still_matches_nothing_fails_with_both_versions_recorded() {
    let demo = crate::support::Demo::new();
    let log = renamed_toggle_converter(&demo, "still");
    let stderr = one_evaluate_round(&demo);
    let dir = demo.feature_dir();

    assert_eq!(
        prompts(&log).len(),
        2,
        "once per case per evaluate\n{stderr}"
    );
    let result = read_json(&dir.join("evaluate-1.json"));
    let case = browser_case(&result);
    assert_eq!(case["verdict"], "FAIL", "{case:#}");
    let record = &case["reconversion"];
    assert_eq!(record["from_version"], 1, "{case:#}");
    assert_eq!(
        record["previous"][2]["selector"],
        "role=button[name=\"Switch theme\"]"
    );
    assert_eq!(
        record["steps"][2]["selector"],
        "role=button[name=\"Switch theme\"]"
    );
    // The verdict is the new version's, run under its own file names.
    assert!(
        case["detail"]
            .as_str()
            .unwrap()
            .starts_with("step 3 (expect_visible"),
        "{case:#}"
    );
    let notes = case["notes"].as_str().unwrap();
    assert!(
        notes.contains("matches no element of the built page")
            && notes.contains("this is version 2 of its steps"),
        "{notes}"
    );
    assert!(dir.join("evidence/1/T-A05.v2.steps.log").is_file());
    let steps = read_json(&dir.join("test.steps.json"));
    assert_eq!(steps["history"]["T-A05"][0]["version"], 1, "{steps:#}");
    // The finding the implementer gets says what the page lacks and that it was re-checked.
    let state = demo.state();
    let finding = state
        .open_findings
        .iter()
        .find(|f| f.id == "T-A05")
        .unwrap_or_else(|| panic!("{state:#?}"));
    assert!(
        finding.argument.contains("this is version 2 of its steps"),
        "{finding:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// one conversion call per round
// ---------------------------------------------------------------------------------------------

/// Three more playwright cases in the demo's test.md (appended by the author).
const MORE_CASES: &str = "\n## T-A06: [REQ-001] The toggle is in the header in a real browser\n- Steps: open the page and check that the header shows the toggle; take a screenshot\n- Expected: the toggle is visible in the header\n- Verify: playwright\n\n## T-A07: [REQ-002] The toggle reports its state in a real browser\n- Steps: open the page; click the toggle; check that it reports pressed\n- Expected: the toggle is pressed\n- Verify: playwright\n\n## T-A08: [REQ-001] The title is shown in a real browser\n- Steps: open the page and check the title\n- Expected: the header reads Notes\n- Verify: playwright\n";

/// The demo with the author appending `MORE_CASES` and an e2e_runner that answers, for every
/// case id a conversion call asks (the task id lists them), its steps, except for the ids in
/// `unusable`, whose entry it leaves out; a call asking only unusable ones gets prose. Every
/// conversion call is logged with its ids, its prompt and its time.
fn batch_converter(demo: &crate::support::Demo, unusable: &[&str]) -> PathBuf {
    let calls = agent_log(demo, "conversions.jsonl");
    let agent = demo.tmp.path().join("wrap.py");
    std::fs::write(
        &agent,
        format!(
            r##"import json, os, sys, time
sys.dont_write_bytecode = True
sys.path.insert(0, {agents:?})
import demo_agents
req = demo_agents.read_request()
task = req.get("task") if isinstance(req.get("task"), dict) else {{}}
if req.get("role") == "e2e_runner" and task.get("kind") == "playwright":
    start = time.time()
    time.sleep(0.5)
    ids = task["id"].split()
    known = {{
        "T-A06": [{{"action": "goto", "url": "/"}}, {{"action": "expect_visible", "selector": "role=button[name=\"Toggle dark mode\"]"}}, {{"action": "screenshot"}}],
        "T-A07": [{{"action": "goto", "url": "/"}}, {{"action": "click", "selector": "#theme-toggle"}}, {{"action": "expect_visible", "selector": "#theme-toggle[aria-pressed=\"true\"]"}}],
        "T-A08": [{{"action": "goto", "url": "/"}}, {{"action": "expect_text", "selector": "role=heading", "text": "Notes"}}],
    }}
    known.update(demo_agents.BROWSER_STEPS)
    cases = {{i: {{"steps": known[i]}} for i in ids if i in known and i not in {unusable:?}}}
    with open({calls:?}, "a") as fh:
        fh.write(json.dumps({{"ids": ids, "phase": req.get("phase"), "prompt": req.get("prompt"), "start": start, "end": time.time()}}) + "\n")
    if cases:
        demo_agents.report("done", "steps", output={{"cases": cases}})
    else:
        sys.stdout.write("Clicking a toggle is easy: just click it.\n")
else:
    demo_agents.dispatch(req)
    if req.get("role") == "spec_author":
        path = os.path.join(demo_agents.spec_dir_of(req), "test.md")
        text = open(path).read()
        if "T-A06" not in text:
            open(path, "a").write({more:?})
"##,
            agents = demo.agents().display().to_string(),
            calls = calls.display().to_string(),
            unusable = unusable.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            more = MORE_CASES,
        ),
    )
    .unwrap();
    let config = crate::support::with_agent(
        &demo.config(),
        "wrap",
        &format!(
            "{{ kind: command, command: [\"python3\", \"{}\"], opposite: reviewer }}",
            agent.display()
        ),
    )
    .replace("e2e_runner: author", "e2e_runner: wrap")
    .replace("spec_author: author", "spec_author: wrap");
    demo.write_config(&config);
    calls
}

fn until_spec_generate(demo: &crate::support::Demo) -> String {
    let out = demo
        .run_cmd()
        .arg("--until")
        .arg("spec_generate")
        .timeout(std::time::Duration::from_secs(240))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    stderr
}

/// Four stale playwright cases cost one conversion call, which quotes all four and is answered
/// with one steps object per case id; every case is stored.
#[test]
fn the_stale_cases_of_a_round_are_converted_in_one_call() {
    let demo = crate::support::Demo::new();
    let log = batch_converter(&demo, &[]);
    let stderr = until_spec_generate(&demo);
    let calls = prompts(&log);
    assert_eq!(calls.len(), 1, "one conversion call: {calls:?}\n{stderr}");
    assert_eq!(calls[0]["ids"], json!(["T-A05", "T-A06", "T-A07", "T-A08"]));
    let prompt = calls[0]["prompt"].as_str().unwrap();
    for id in ["T-A05", "T-A06", "T-A07", "T-A08"] {
        assert!(
            prompt.contains(&format!("Case {id}:\n<<<CASE-")),
            "{id}\n{prompt}"
        );
    }
    let steps = read_json(&demo.feature_dir().join("test.steps.json"));
    let stored: Vec<&String> = steps["cases"].as_object().unwrap().keys().collect();
    assert_eq!(stored, ["T-A05", "T-A06", "T-A07", "T-A08"], "{steps:#}");
}

/// The one call converts three of four; only the unusable one is asked again, in a call of its
/// own told why (followed up once when it answers prose), never two calls at once. The three
/// are kept, T-A07 is left without steps for inspect to report, and its unusable answer is on
/// record; not an agent failure of the whole batch.
#[test]
fn only_the_case_whose_answer_was_unusable_is_asked_again_while_the_others_are_kept() {
    let demo = crate::support::Demo::new();
    let log = batch_converter(&demo, &["T-A07"]);
    let mut stderr = until_spec_generate(&demo);
    let calls = prompts(&log);
    assert_eq!(
        calls[0]["ids"],
        json!(["T-A05", "T-A06", "T-A07", "T-A08"]),
        "{calls:?}"
    );
    assert!(calls.len() >= 2, "{calls:?}\n{stderr}");
    for later in &calls[1..] {
        assert_eq!(
            later["ids"],
            json!(["T-A07"]),
            "only the unusable one: {calls:?}"
        );
    }
    assert!(
        calls[1]["prompt"].as_str().unwrap().contains(
            "Your earlier answer for T-A07 was refused: the answer has no entry for T-A07"
        ),
        "{}",
        calls[1]["prompt"]
    );
    let at = |c: &serde_json::Value, f: &str| c[f].as_f64().unwrap();
    for pair in calls.windows(2) {
        assert!(
            at(&pair[1], "start") >= at(&pair[0], "end"),
            "one converter at a time: {calls:?}"
        );
    }
    let steps = read_json(&demo.feature_dir().join("test.steps.json"));
    let stored: Vec<&String> = steps["cases"].as_object().unwrap().keys().collect();
    assert_eq!(stored, ["T-A05", "T-A06", "T-A08"], "{steps:#}");
    assert!(
        stderr.contains("converted 3 of 4 browser case(s); not converted: T-A07"),
        "{stderr}"
    );
    let out = demo
        .cmd("step")
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    stderr.push_str(&String::from_utf8_lossy(&out.stderr));
    let state = demo.state();
    assert!(state.arbitrations.is_empty(), "{state:#?}");
    let failures = crate::support::failures_in(&state, BlockerCategory::MalformedOutput);
    let e2e_runner = CallRole::Role(Role::E2eRunner);
    assert!(
        failures
            .iter()
            .any(|f| f.role == e2e_runner && f.phase == Phase::SpecGenerate),
        "the unusable answer is on record: {failures:?}"
    );
    let findings = &state.open_findings;
    assert!(
        findings.iter().any(
            |f| f.file == "test.steps.json" && f.gist.contains("T-A07 has no structured steps")
        ),
        "{findings:#?}\n{stderr}"
    );
}
