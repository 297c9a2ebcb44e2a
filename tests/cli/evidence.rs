//! Acceptance evidence (docs/architecture.md, issue 4) with real processes, a real Chromium driven
//! by the real Playwright driver in `driver/`, and real files: the browser case of the demo,
//! tampering
//! with its screenshots, an app that never gets ready, a port already taken, Ctrl-C during a
//! round, the command and file-check runners, redaction before hashing, the parallel manifest,
//! the evaluate loop with fix tasks and stalls, and the rubric restart.
//!
//! These tests need `/usr/bin/chromium` (or `SPEC_ORCHESTRATE_BROWSER`) and the driver's npm
//! packages; `.ci/run` installs both.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::Digest;
use spec_orchestrate::config::Config;
use spec_orchestrate::evidence::app::{self, AppError, AppPlan};
use spec_orchestrate::evidence::runners::{self, RunDirs};
use spec_orchestrate::evidence::{CaseResult, manifest};
use spec_orchestrate::secrets::Redactor;
use spec_orchestrate::spec::cases;
use spec_orchestrate::types::kinds::Verdict;

use crate::support::{
    Demo, evaluate_gates, failures_in, git, role_agent, script, verify, with_agent_env,
};
use spec_orchestrate::state::{State, TaskStatus};
use spec_orchestrate::types::kinds::{BlockerCategory, CallRole, Decision};
use spec_orchestrate::types::{Phase, Role, Signal};

const RUN_LIMIT: Duration = Duration::from_secs(300);

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

/// Alive and not a zombie (a reparented process may linger as a zombie until PID 1 reaps it).
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| {
                let state = rest.trim_start();
                !(state.starts_with('Z') || state.starts_with('X'))
            })
            .unwrap_or(false),
        Err(_) => false,
    }
}

fn read_pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Waits (a little) for every pid to be gone; returns the ones still alive.
fn survivors(pids: &[i32], within: Duration) -> Vec<i32> {
    let deadline = Instant::now() + within;
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An app that prints one line, starts two long sleeps (one in a nested shell), records every
/// pid (its own and its children's) in `pids`, and never prints a ready line nor listens. The
/// app runs as the agents' uid when the tests run as root, so `pids` lies in a directory of `dir`
/// that uid may write.
fn never_ready_app(dir: &Path) -> (PathBuf, PathBuf) {
    let writable = dir.join("app-pids");
    crate::support::agent_writable(&writable);
    let pids = writable.join("app.pids");
    let path = dir.join("never-ready.sh");
    script(
        &path,
        &format!(
            "#!/bin/sh\necho \"booting the never-ready app\"\necho \"token=sk-never-ready-secret-123\"\nsleep 300 &\necho $! >> '{p}'\nsh -c 'sleep 300' &\necho $! >> '{p}'\necho $$ >> '{p}'\nwait\n",
            p = pids.display()
        ),
    );
    (path, pids)
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn case<'a>(result: &'a Value, id: &str) -> &'a Value {
    result["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("{id} in {result}"))
}

/// Replaces one `key: value` line of the app section of the demo config.
fn with_app(config: &str, key: &str, value: &str) -> String {
    let mut out = String::new();
    let mut replaced = false;
    for line in config.lines() {
        if line.trim_start().starts_with(&format!("{key}:")) && line.starts_with("  ") && !replaced
        {
            out.push_str(&format!("  {key}: {value}\n"));
            replaced = true;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(replaced, "app.{key} in:\n{config}");
    out
}

/// A browser step that cannot succeed fails after 3 s instead of the default 10 s.
fn fast_steps(config: &str) -> String {
    let out = config.replacen("limits:", "evaluate:\n  step_timeout_s: 3\nlimits:", 1);
    assert!(out.contains("step_timeout_s: 3"), "{config}");
    out
}

fn run_demo(demo: &Demo) -> (Option<i32>, String) {
    let out = demo
        .run_cmd()
        .timeout(RUN_LIMIT)
        .output()
        .expect("binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

// ---------------------------------------------------------------------------------------------
// the demo's browser case
// ---------------------------------------------------------------------------------------------

#[test]
fn demo_browser_case_clicks_the_toggle_in_chromium_and_the_pr_body_lists_the_screenshots() {
    let demo = Demo::new();
    let (code, stderr) = run_demo(&demo);
    assert_eq!(code, Some(0), "the demo run is ready\n{stderr}");
    let dir = demo.feature_dir();

    // The prose was converted once, although the spec was generated twice (one send-back); the
    // other two e2e_runner calls are its contract reviews of test.md in the two review rounds.
    assert_eq!(
        stderr.matches("converting its prose steps").count(),
        1,
        "the steps are converted once per version of the prose\n{stderr}"
    );
    assert_eq!(
        stderr.matches("e2e_runner → author").count(),
        3,
        "one step conversion and two contract reviews\n{stderr}"
    );
    let steps = read_json(&dir.join("test.steps.json"));
    let t_a05 = &steps["cases"]["T-A05"];
    assert_eq!(t_a05["converted_by"], "author");
    assert_eq!(t_a05["steps"][0]["action"], "goto");
    // The steps file is part of the approved (committed) spec.
    let committed = git(&demo.repo, &["ls-files", ".specs"]);
    assert!(committed.contains("test.steps.json"), "{committed}");

    let result = read_json(&dir.join("evaluate-1.json"));
    let browser = case(&result, "T-A05");
    assert_eq!(browser["verdict"], "PASS", "{browser}");
    assert_eq!(browser["method"], "playwright");
    let evidence: Vec<&str> = browser["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    let shots: Vec<&&str> = evidence.iter().filter(|e| e.ends_with(".png")).collect();
    assert_eq!(
        shots.len(),
        3,
        "light, dark, dark after reload: {evidence:?}"
    );
    assert!(
        evidence.contains(&"evidence/1/T-A05.steps.log"),
        "{evidence:?}"
    );
    assert!(
        evidence.contains(&"evidence/1/app-startup.log"),
        "{evidence:?}"
    );

    // Real PNGs from a real browser: the dark screenshot differs from the light one.
    let light = std::fs::read(dir.join(shots[0])).unwrap();
    let dark = std::fs::read(dir.join(shots[1])).unwrap();
    assert!(light.starts_with(b"\x89PNG\r\n\x1a\n") && dark.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert_ne!(
        sha256_hex(&light),
        sha256_hex(&dark),
        "the click changed the page"
    );
    let log = std::fs::read_to_string(dir.join("evidence/1/T-A05.steps.log")).unwrap();
    assert!(log.contains("browser: "), "{log}");
    assert!(log.contains("ok   click #theme-toggle"), "{log}");
    let startup = std::fs::read_to_string(dir.join("evidence/1/app-startup.log")).unwrap();
    assert!(startup.contains("ready on http://127.0.0.1:"), "{startup}");

    // Every manifest row is the real file, and the PR body lists the screenshots with them.
    let body = std::fs::read_to_string(dir.join("pr-body.md")).unwrap();
    let rows = result["manifest"].as_array().unwrap();
    let on_disk = walk(&dir.join("evidence/1"));
    assert_eq!(rows.len(), on_disk.len(), "{rows:?} vs {on_disk:?}");
    for row in rows {
        let path = dir.join(row["path"].as_str().unwrap());
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(row["bytes"].as_u64().unwrap(), bytes.len() as u64);
        assert_eq!(row["sha256"].as_str().unwrap(), sha256_hex(&bytes));
        assert!(
            body.contains(&format!(
                "{}  {}  {}\n",
                sha256_hex(&bytes),
                bytes.len(),
                row["path"].as_str().unwrap(),
            )),
            "pr-body lists {row}"
        );
    }
    for shot in &shots {
        assert!(body.contains(**shot), "the PR body names {shot}");
    }
    // The app was stopped with its whole group: nothing serves the demo any more.
    let port = startup
        .rsplit(':')
        .next()
        .and_then(|p| p.trim().parse::<u16>().ok())
        .expect("port in the log");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the app still listens on {port}"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_pass_whose_screenshot_is_deleted_truncated_or_changed_becomes_fail_and_verify_exits_1() {
    let demo = Demo::new();
    let (code, stderr) = run_demo(&demo);
    assert_eq!(code, Some(0), "{stderr}");
    let dir = demo.feature_dir();
    assert_eq!(verify(&dir).0, Some(0), "an untouched run verifies");

    let result_path = dir.join("evaluate-1.json");
    let result: spec_orchestrate::evidence::EvaluateResult =
        serde_json::from_str(&std::fs::read_to_string(&result_path).unwrap()).unwrap();
    let shot_rel = result
        .cases
        .iter()
        .find(|c| c.id == "T-A05")
        .and_then(|c| c.evidence.iter().find(|e| e.ends_with("-dark.png")))
        .cloned()
        .expect("the dark screenshot backs T-A05");
    let shot = dir.join(&shot_rel);
    let original = std::fs::read(&shot).unwrap();

    // What the harness does after the runners: check + enforce turns the PASS into FAIL.
    let downgrade = |expect: &str| {
        let mut cases: Vec<CaseResult> = result.cases.clone();
        let mismatches = manifest::check(&dir, &cases, &result.manifest);
        let findings = manifest::enforce(&mut cases, &mismatches);
        let t = cases.iter().find(|c| c.id == "T-A05").unwrap();
        assert_eq!(t.verdict, Verdict::Fail, "{expect}: {t:?}");
        assert!(t.detail.contains(expect), "{}", t.detail);
        let f = findings
            .iter()
            .find(|f| f.id == "T-A05")
            .expect("a finding");
        assert_eq!(f.severity.as_str(), "critical");
        assert!(
            cases
                .iter()
                .filter(|c| c.id != "T-A05")
                .all(|c| c.verdict == Verdict::Pass),
            "only the tampered case changes"
        );
        let (code, stdout) = verify(&dir);
        assert_eq!(code, Some(1), "verify after `{expect}`:\n{stdout}");
        assert!(
            stdout.contains(&format!("FAIL T-A05 {shot_rel}")) && stdout.contains(expect),
            "{stdout}"
        );
        assert!(stdout.contains("would be FAIL: T-A05"), "{stdout}");
    };

    std::fs::remove_file(&shot).unwrap();
    downgrade("missing");
    std::fs::write(&shot, b"").unwrap();
    downgrade("empty");
    let mut changed = original.clone();
    let last = changed.len() - 1;
    changed[last] ^= 0xff; // same size, different bytes
    std::fs::write(&shot, &changed).unwrap();
    downgrade("sha256");
    std::fs::write(&shot, &original[..original.len() - 1]).unwrap();
    downgrade("size changed");

    std::fs::write(&shot, &original).unwrap();
    let (code, stdout) = verify(&dir);
    assert_eq!(code, Some(0), "restored evidence verifies again:\n{stdout}");

    // Evidence no PASS rests on is still guarded: a file slipped in afterwards is reported.
    std::fs::write(dir.join("evidence/1/extra.png"), b"not from the run").unwrap();
    let (code, stdout) = verify(&dir);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("CHANGED - evidence/1/extra.png"),
        "{stdout}"
    );
    std::fs::remove_file(dir.join("evidence/1/extra.png")).unwrap();
    assert_eq!(verify(&dir).0, Some(0));
}

#[test]
fn without_a_browser_the_browser_case_is_blocked_with_the_fix_in_the_finding() {
    let demo = Demo::new();
    let out = demo
        .run_cmd()
        .env("SPEC_ORCHESTRATE_BROWSER", "/nonexistent/chromium")
        .timeout(RUN_LIMIT)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a draft\n{stderr}");
    let result = read_json(&demo.feature_dir().join("evaluate-1.json"));
    let browser = case(&result, "T-A05");
    assert_eq!(browser["verdict"], "BLOCKED");
    assert_eq!(browser["detail"], "the browser harness is not available");
    let notes = browser["notes"].as_str().unwrap_or_default();
    assert!(
        notes.contains("no browser at /nonexistent/chromium")
            && notes.contains("apt-get install chromium"),
        "{notes}"
    );
    assert!(
        !demo
            .feature_dir()
            .join("evidence/1/app-startup.log")
            .exists(),
        "the app is not started when no browser can use it"
    );
}

#[test]
fn an_e2e_runner_without_usable_steps_is_an_agent_failure_and_the_role_is_swapped() {
    let demo = Demo::new();
    demo.write_config(&with_agent_env(
        &demo.config(),
        "author",
        &[("DEMO_E2E_MODE", "garbage")],
    ));
    let (code, stderr) = run_demo(&demo);
    assert_eq!(
        code,
        Some(0),
        "the opposite agent converts the steps\n{stderr}"
    );
    let state = demo.state();
    let failures = &state.agent_failures;
    assert!(
        failures
            .iter()
            .any(|f| f.role == CallRole::Role(Role::E2eRunner)
                && f.phase == Phase::SpecGenerate
                && f.category == BlockerCategory::MalformedOutput),
        "{failures:?}"
    );
    assert_e2e_runner_swapped_to_reviewer(&demo, &state, "author");
    let result = read_json(&demo.feature_dir().join("evaluate-1.json"));
    assert_eq!(case(&result, "T-A05")["verdict"], "PASS");
}

/// The e2e_runner role moved from `from` to its opposite, the reviewer, which converted the
/// browser steps.
fn assert_e2e_runner_swapped_to_reviewer(demo: &Demo, state: &State, from: &str) {
    let arb = &state.arbitrations;
    let swap = arb
        .iter()
        .find(|a| a.decision == Decision::Swap)
        .unwrap_or_else(|| panic!("{arb:?}"));
    assert_eq!(swap.signal, Signal::AgentFailure);
    assert_eq!(swap.from.as_ref().unwrap(), from);
    assert_eq!(swap.to.as_ref().unwrap(), "reviewer");
    assert_eq!(role_agent(state, Role::E2eRunner), "reviewer");
    let steps = read_json(&demo.feature_dir().join("test.steps.json"));
    assert_eq!(steps["cases"]["T-A05"]["converted_by"], "reviewer");
}

#[test]
fn an_e2e_runner_that_edits_the_spec_while_converting_steps_is_a_sandbox_violation_undone() {
    let demo = Demo::new();
    // An author that, asked to convert steps, also edits the design.
    let config = demo
        .config_with_script_agent(
            "evil",
            &format!(
                "#!/bin/sh\nreq=$(cat)\ncase \"$req\" in *'\"role\":\"e2e_runner\",\"phase\":\"spec_generate\"'*) echo 'EVIL EDIT' >> .specs/add-a-dark-mode-toggle/design.md ;; esac\nprintf '%s' \"$req\" | exec python3 {}/author.py\n",
                demo.agents().display()
            ),
            "reviewer",
        )
        .replace("e2e_runner: author", "e2e_runner: evil");
    demo.write_config(&config);
    let (code, stderr) = run_demo(&demo);
    assert_eq!(code, Some(0), "the reviewer converts the steps\n{stderr}");

    let state = demo.state();
    let violations = failures_in(&state, BlockerCategory::SandboxViolation);
    assert_eq!(
        violations.len(),
        2,
        "the call and its one re-run: {violations:?}"
    );
    for v in &violations {
        assert_eq!(v.agent, "evil");
        assert_eq!(v.role, CallRole::Role(Role::E2eRunner));
        assert_eq!(v.phase, Phase::SpecGenerate);
    }
    let design = std::fs::read_to_string(demo.feature_dir().join("design.md")).unwrap();
    assert!(!design.contains("EVIL EDIT"), "the edit was undone");
    assert_e2e_runner_swapped_to_reviewer(&demo, &state, "evil");
}

#[test]
fn browser_settings_are_validated_with_the_key_and_the_fix() {
    let file = Path::new(".specs/pipeline.yml");
    let e = Config::parse("evaluate:\n  browser: chromium\n", file).unwrap_err();
    assert_eq!(e.key, "evaluate.browser");
    assert!(
        e.help.contains("/usr/bin/chromium") && e.help.contains("bundled"),
        "{e}"
    );
    let e = Config::parse("evaluate:\n  step_timeout_s: 0\n", file).unwrap_err();
    assert_eq!(e.key, "evaluate.step_timeout_s");
    let ok = Config::parse("evaluate:\n  browser: bundled\n  step_timeout_s: 5\n", file).unwrap();
    assert_eq!(ok.evaluate.browser.as_deref(), Some("bundled"));
    let e = Config::parse("app:\n  start: x\n  url: \"localhost:3000\"\n", file).unwrap_err();
    assert_eq!(e.key, "app.url");
}

// ---------------------------------------------------------------------------------------------
// app lifecycle
// ---------------------------------------------------------------------------------------------

fn plan(start: String, port: u16, pattern: Option<&str>, timeout_s: u64) -> AppPlan {
    AppPlan {
        start,
        url: format!("http://127.0.0.1:{port}/"),
        host: "127.0.0.1".into(),
        port,
        ready_pattern: pattern.map(str::to_string),
        ready_timeout: Duration::from_secs(timeout_s),
        stop: "auto".into(),
    }
}

/// A checkout for the app to start in (git-initialised: it is lent to the agents' identity while
/// the app runs, and its way in is recorded in its git directory).
fn checkout() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    crate::support::git(tmp.path(), &["init", "-q"]);
    tmp
}

fn app_env() -> BTreeMap<String, String> {
    std::env::vars()
        .filter(|(k, _)| k == "PATH" || k == "HOME")
        .collect()
}

#[test]
fn an_app_that_never_prints_its_ready_pattern_is_stopped_at_ready_timeout_with_every_process_gone()
{
    let tmp = checkout();
    let (script_path, pids_path) = never_ready_app(tmp.path());
    let port = app::free_port().unwrap();
    let log = tmp.path().join("evidence/app-startup.log");
    let mut redactor = Redactor::default();
    redactor.add("sk-never-ready-secret-123");
    let started = Instant::now();
    let err = app::start(
        plan(
            format!("sh '{}'", script_path.display()),
            port,
            Some("^listening"),
            2,
        ),
        tmp.path(),
        &log,
        app_env(),
        &redactor,
        &mut |_| Ok(()),
    )
    .expect_err("never ready");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(2 + 7),
        "gave up at the ready timeout (plus at most the stop grace): {elapsed:?}"
    );
    match &err {
        AppError::Timeout {
            timeout_s, tail, ..
        } => {
            assert_eq!(*timeout_s, 2);
            assert!(tail.contains("booting the never-ready app"), "{tail}");
        }
        other => panic!("expected a timeout, got {other}"),
    }
    let message = err.to_string();
    assert!(message.contains("ready_pattern `^listening`"), "{message}");
    assert!(
        message.contains(&format!("http://127.0.0.1:{port}/")),
        "{message}"
    );
    let pids = read_pids(&pids_path);
    assert_eq!(pids.len(), 3, "the app recorded its pids: {pids:?}");
    assert_eq!(survivors(&pids, Duration::from_secs(2)), Vec::<i32>::new());
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(log_text.contains("booting"), "the log is kept: {log_text}");
    assert!(
        !log_text.contains("sk-never-ready-secret-123") && log_text.contains("token=***"),
        "secrets are redacted in the log: {log_text}"
    );
}

#[test]
fn a_never_ready_app_blocks_the_browser_case_with_the_log_tail_and_leaves_no_process() {
    let demo = Demo::new();
    let (script_path, pids_path) = never_ready_app(demo.tmp.path());
    let config = with_app(
        &demo.config(),
        "start",
        &format!("\"sh '{}'\"", script_path.display()),
    );
    let config = with_app(&config, "ready_timeout_s", "3");
    demo.write_config(&config);
    let (code, stderr) = run_demo(&demo);
    assert_eq!(code, Some(1), "a blocked case lands a draft\n{stderr}");
    let dir = demo.feature_dir();
    let result = read_json(&dir.join("evaluate-1.json"));
    let browser = case(&result, "T-A05");
    assert_eq!(browser["verdict"], "BLOCKED", "{browser}");
    assert_eq!(browser["detail"], "the app was not ready within 3 s");
    let finding = result["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "T-A05")
        .expect("a finding for the blocked case");
    let argument = finding["argument"].as_str().unwrap();
    assert!(
        argument.contains("booting the never-ready app"),
        "the finding quotes the log's tail: {argument}"
    );
    assert!(
        finding["fingerprint"]
            .as_str()
            .is_some_and(|f| f.len() == 64)
    );
    assert_eq!(
        case(&result, "T-A01")["verdict"],
        "PASS",
        "the other cases ran"
    );
    let state = demo.state();
    let arb = &state.arbitrations;
    assert!(
        arb.iter().any(|a| a.signal == Signal::Blocked),
        "a blocked case goes to arbitration, not to the implementer: {arb:?}"
    );
    assert!(
        !state.tasks.iter().any(|t| t.id.starts_with("FIX")),
        "no fix task for a configuration problem"
    );
    assert!(dir.join("evidence/1/app-startup.log").is_file());
    let pids = read_pids(&pids_path);
    assert_eq!(pids.len(), 3, "{pids:?}");
    assert_eq!(survivors(&pids, Duration::from_secs(2)), Vec::<i32>::new());
}

#[test]
fn a_port_already_in_use_is_a_clear_error_and_the_app_is_never_started() {
    let tmp = checkout();
    let squatter = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = squatter.local_addr().unwrap().port();
    let marker = tmp.path().join("started");
    let err = app::start(
        plan(format!("touch '{}'", marker.display()), port, None, 5),
        tmp.path(),
        &tmp.path().join("app-startup.log"),
        app_env(),
        &Redactor::default(),
        &mut |_| Ok(()),
    )
    .expect_err("the port is taken");
    assert_eq!(
        err,
        AppError::PortInUse {
            port,
            url: format!("http://127.0.0.1:{port}/")
        }
    );
    let message = err.to_string();
    assert!(
        message.contains(&format!("port {port} is already in use")) && message.contains("{port}"),
        "names the port and the fix: {message}"
    );
    assert!(!marker.exists(), "app.start did not run");
    drop(squatter);
}

#[test]
fn an_app_that_exits_early_reports_its_status_and_output() {
    let tmp = checkout();
    let port = app::free_port().unwrap();
    let err = app::start(
        plan(
            "echo 'Error: listen EADDRINUSE: address already in use' >&2; exit 3".into(),
            port,
            Some("^ready on "),
            10,
        ),
        tmp.path(),
        &tmp.path().join("app-startup.log"),
        app_env(),
        &Redactor::default(),
        &mut |_| Ok(()),
    )
    .expect_err("it exits");
    match &err {
        AppError::Exited { status, hint, tail } => {
            assert!(status.contains('3'), "{status}");
            assert!(hint.contains(&format!("port {port}")), "{hint}");
            assert!(tail.contains("[stderr] Error: listen EADDRINUSE"), "{tail}");
        }
        other => panic!("expected an early exit, got {other}"),
    }
}

#[test]
fn readiness_by_url_when_no_pattern_is_configured_and_stop_ends_the_group() {
    let tmp = checkout();
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo/app/server.js");
    let port = app::free_port().unwrap();
    let mut running = app::start(
        plan(format!("node '{}'", server.display()), port, None, 20),
        tmp.path(),
        &tmp.path().join("app-startup.log"),
        app_env(),
        &Redactor::default(),
        &mut |_| Ok(()),
    )
    .expect("server.js answers on its URL");
    assert_eq!(
        app::http_status(&running.plan.url, Duration::from_secs(2)),
        Some(200)
    );
    let pgid = running.pgid();
    assert!(app::group_alive(pgid));
    running.stop();
    assert!(!app::group_alive(pgid), "the group is gone after stop");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn ctrl_c_during_a_round_stops_the_app_group_with_the_orchestrator() {
    let demo = Demo::new();
    let (script_path, pids_path) = never_ready_app(demo.tmp.path());
    let config = with_app(
        &demo.config(),
        "start",
        &format!("\"sh '{}'\"", script_path.display()),
    );
    let config = with_app(&config, "ready_timeout_s", "120");
    demo.write_config(&config);
    let mut child = demo.spawn_run();
    let deadline = Instant::now() + Duration::from_secs(120);
    while read_pids(&pids_path).len() < 3 {
        assert!(Instant::now() < deadline, "the app never started");
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended before the app started: {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let pids = read_pids(&pids_path);
    assert!(
        pids.iter().all(|p| alive(*p)),
        "the app is running: {pids:?}"
    );
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().expect("wait");
    assert!(
        !status.success(),
        "the orchestrator was interrupted: {status}"
    );
    assert_eq!(
        survivors(&pids, Duration::from_secs(3)),
        Vec::<i32>::new(),
        "Ctrl-C took the app's whole process group down"
    );
}

// ---------------------------------------------------------------------------------------------
// command and file-check runners, redaction, manifest
// ---------------------------------------------------------------------------------------------

struct Lab {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    feature: PathBuf,
    round: PathBuf,
}

impl Lab {
    fn new() -> Lab {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().canonicalize().unwrap().join("repo");
        let feature = repo.join(".specs/lab");
        let round = feature.join("evidence/1");
        std::fs::create_dir_all(&feature).unwrap();
        // A checkout, as the runners get one: the round lends it to the agents' identity.
        crate::support::git(&repo, &["init", "-q"]);
        Lab {
            _tmp: tmp,
            repo,
            feature,
            round,
        }
    }

    fn dirs(&self) -> RunDirs<'_> {
        RunDirs {
            repo: &self.repo,
            feature_dir: &self.feature,
            round_dir: &self.round,
        }
    }

    /// Commits what the test laid out (the round runs the commit under test) and runs
    /// `test_md`'s cases.
    fn run(&self, test_md: &str, redactor: &Redactor) -> Vec<CaseResult> {
        crate::support::commit_all(&self.repo, "lab");
        let parsed = cases::parse(test_md);
        runners::run_all(
            self.dirs(),
            &parsed,
            &Config::default(),
            Ok(None),
            redactor,
            |_| {},
            &mut |_| Ok(()),
        )
    }
}

#[test]
fn command_cases_hold_exit_codes_markers_and_timeouts_and_kill_what_they_started() {
    let lab = Lab::new();
    let pid_file = lab.repo.join("sleeper.pid");
    let md = format!(
        "## T-A01: [REQ-001] exit 3 expected\n- Verify: command\n- Command: `echo done; exit 3`\n- Exit: 3\n- Output contains: done\n\n\
         ## T-A02: [REQ-001] wrong exit\n- Verify: command\n- Command: `exit 1`\n\n\
         ## T-A03: [REQ-001] marker missing\n- Verify: command\n- Command: `echo nothing`\n- Output contains: OK\n\n\
         ## T-A04: [REQ-001] too slow\n- Verify: command\n- Command: `sleep 300 & echo $! > '{}'; wait`\n- Timeout: 1\n\n\
         ## T-A05: [REQ-001] bad exit\n- Verify: command\n- Command: true\n- Exit: zero\n\n\
         ## T-A06: [REQ-001] killed\n- Verify: command\n- Command: `kill -9 $$`\n",
        pid_file.display()
    );
    let started = Instant::now();
    let r = lab.run(&md, &Redactor::default());
    assert!(started.elapsed() < Duration::from_secs(20));
    let by: BTreeMap<&str, &CaseResult> = r.iter().map(|c| (c.id.as_str(), c)).collect();
    assert_eq!(by["T-A01"].verdict, Verdict::Pass, "{:?}", by["T-A01"]);
    assert_eq!(by["T-A01"].evidence, ["evidence/1/T-A01.log"]);
    assert_eq!(by["T-A02"].verdict, Verdict::Fail);
    // Words a person reads, not `exit Some(1)`.
    assert_eq!(by["T-A02"].detail, "exit status 1, expected 0");
    assert_eq!(by["T-A06"].verdict, Verdict::Fail);
    assert_eq!(by["T-A06"].detail, "killed by signal 9, expected 0");
    assert_eq!(by["T-A03"].verdict, Verdict::Fail);
    assert!(by["T-A03"].detail.contains("lacks `OK`"));
    assert_eq!(by["T-A04"].verdict, Verdict::Fail);
    assert!(by["T-A04"].detail.contains("timed out after 1 s"));
    assert_eq!(by["T-A05"].verdict, Verdict::Blocked, "{:?}", by["T-A05"]);
    assert!(by["T-A05"].detail.contains("`Exit: zero` is not a number"));
    let sleeper = read_pids(&pid_file);
    assert_eq!(sleeper.len(), 1);
    assert_eq!(
        survivors(&sleeper, Duration::from_secs(2)),
        Vec::<i32>::new(),
        "the timed-out command's group was killed"
    );
    let log = std::fs::read_to_string(lab.round.join("T-A01.log")).unwrap();
    assert!(log.contains("# exit: 3") && log.contains("done"), "{log}");
    // The command wrote its pid file into the checkout, lent to it for the round (as root, it
    // runs as the agents' uid); afterwards the checkout is its owner's again.
    assert_given_back(&lab.repo);
}

/// Every entry of `repo` belongs to the owner of its `.git`.
fn assert_given_back(repo: &Path) {
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::symlink_metadata(repo.join(".git")).unwrap().uid();
    for entry in walkdir::WalkDir::new(repo) {
        let entry = entry.unwrap();
        assert_eq!(
            entry.metadata().unwrap().uid(),
            owner,
            "{} was not given back",
            entry.path().display()
        );
    }
}

#[test]
fn file_checks_refuse_paths_that_escape_the_repository_or_pass_through_a_symlink() {
    let lab = Lab::new();
    std::fs::create_dir_all(lab.repo.join("web")).unwrap();
    std::fs::write(lab.repo.join("web/index.html"), "<button id=\"t\">\n").unwrap();
    let outside = lab.repo.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "id=\"t\"\n").unwrap();
    std::os::unix::fs::symlink(&outside, lab.repo.join("linked")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), lab.repo.join("web/alias.html"))
        .unwrap();
    let md = "## T-A01: [REQ-001] inside\n- Verify: file-check\n- File: web/index.html\n- Contains: id=\"t\"\n\n\
              ## T-A02: [REQ-001] through a symlinked dir\n- Verify: file-check\n- File: linked/secret.txt\n- Contains: id=\"t\"\n\n\
              ## T-A03: [REQ-001] a symlinked file\n- Verify: file-check\n- File: web/alias.html\n- Contains: id=\"t\"\n\n\
              ## T-A04: [REQ-001] dot-dot\n- Verify: file-check\n- File: web/../../outside/secret.txt\n- Contains: id=\"t\"\n\n\
              ## T-A05: [REQ-001] absolute\n- Verify: file-check\n- File: /etc/hostname\n- Contains: a\n\n\
              ## T-A06: [REQ-001] marker absent\n- Verify: file-check\n- File: web/index.html\n- Contains: id=\"other\"\n";
    let r = lab.run(md, &Redactor::default());
    let by: BTreeMap<&str, &CaseResult> = r.iter().map(|c| (c.id.as_str(), c)).collect();
    assert_eq!(by["T-A01"].verdict, Verdict::Pass);
    for id in ["T-A02", "T-A03"] {
        assert_eq!(by[id].verdict, Verdict::Fail, "{:?}", by[id]);
        assert!(by[id].detail.contains("symlink"), "{}", by[id].detail);
        assert!(by[id].evidence.is_empty(), "nothing outside was copied");
    }
    assert!(by["T-A04"].detail.contains(".."), "{}", by["T-A04"].detail);
    assert!(
        by["T-A05"].detail.contains("absolute"),
        "{}",
        by["T-A05"].detail
    );
    assert_eq!(by["T-A06"].verdict, Verdict::Fail);
    let copied: String = walk(&lab.round)
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(!copied.contains("secret"), "{copied}");
}

#[test]
fn secrets_are_redacted_from_evidence_before_it_is_hashed() {
    let lab = Lab::new();
    let secret = "ghs_evidenceSecret0123456789";
    let mut redactor = Redactor::default();
    redactor.add(secret);
    let md = format!(
        "## T-A01: [REQ-001] prints a token\n- Verify: command\n- Command: `echo token={secret}`\n- Output contains: token=\n"
    );
    let r = lab.run(&md, &redactor);
    assert_eq!(r[0].verdict, Verdict::Pass, "{:?}", r[0]);
    // A log some other program wrote into the round (like an app's own log file).
    std::fs::write(lab.round.join("server.log"), format!("auth {secret}\n")).unwrap();
    let rows = manifest::build(&lab.feature, &lab.round, &redactor).unwrap();
    assert_eq!(rows.len(), 2);
    for row in &rows {
        let bytes = std::fs::read(lab.feature.join(&row.path)).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(secret), "{}: {text}", row.path);
        assert!(text.contains("***"), "{}: {text}", row.path);
        assert_eq!(row.sha256, sha256_hex(&bytes), "hash of the redacted file");
        assert_eq!(row.bytes, bytes.len() as u64);
    }
}

#[test]
fn the_parallel_manifest_matches_sha256sum_and_the_single_thread_walk() {
    let lab = Lab::new();
    let mut names = Vec::new();
    for i in 0..64u32 {
        let sub = lab.round.join(format!("d{}", i % 4));
        std::fs::create_dir_all(&sub).unwrap();
        let path = sub.join(format!("f{i:03}.bin"));
        let data: Vec<u8> = (0..(i * 977 + 13))
            .map(|b| (b.wrapping_mul(31) ^ i) as u8)
            .collect();
        std::fs::write(&path, data).unwrap();
        names.push(path);
    }
    std::fs::write(lab.round.join("empty.txt"), b"").unwrap();
    std::os::unix::fs::symlink("/etc/hostname", lab.round.join("link")).unwrap();
    let redactor = Redactor::default();
    let parallel = manifest::build_with_threads(&lab.feature, &lab.round, &redactor, 4).unwrap();
    let serial = manifest::build_with_threads(&lab.feature, &lab.round, &redactor, 1).unwrap();
    assert_eq!(parallel, serial);
    assert_eq!(
        parallel.len(),
        65,
        "files only; the symlink is not followed"
    );
    let mut sorted = parallel.clone();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(parallel, sorted, "rows are sorted by path");
    let out = std::process::Command::new("sha256sum")
        .args(&names)
        .output()
        .expect("sha256sum runs");
    let reference: BTreeMap<String, String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once("  "))
        .map(|(h, p)| (p.to_string(), h.to_string()))
        .collect();
    for row in parallel.iter().filter(|r| r.path.ends_with(".bin")) {
        let full = lab.feature.join(&row.path).display().to_string();
        assert_eq!(reference.get(&full), Some(&row.sha256), "{}", row.path);
    }
}

#[test]
fn inspect_checks_the_steps_file_of_every_playwright_case() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let test_md = "## T-A01: [REQ-001] Browser\n- Steps: open the page\n- Expected: it shows\n- Verify: playwright\n\n## T-A02: [REQ-001] Second browser\n- Steps: click\n- Expected: x\n- Verify: playwright\n";
    std::fs::write(dir.join("test.md"), test_md).unwrap();
    for d in ["requirement.md", "design.md", "tasks.md"] {
        std::fs::write(dir.join(d), "x\n").unwrap();
    }
    let parsed = cases::parse(test_md);
    let good = spec_orchestrate::evidence::steps::source_hash(&parsed[0]);
    std::fs::write(
        dir.join("test.steps.json"),
        format!(
            r##"{{"version": 1, "cases": {{
  "T-A01": {{"source": "{good}", "steps": [{{"action": "click", "selector": "#x"}}]}},
  "T-A09": {{"source": "x", "steps": [{{"action": "goto", "url": "/"}}]}}
}}}}"##
        ),
    )
    .unwrap();
    let docs = spec_orchestrate::spec::SpecDocs::read(dir);
    let checks = spec_orchestrate::phases::inspect::check(&docs, dir, true);
    let on_steps: Vec<String> = checks
        .iter()
        .filter(|c| c.file == "test.steps.json")
        .map(|c| format!("{:?} {}", c.level, c.message))
        .collect();
    let all = on_steps.join("\n");
    assert!(
        all.contains("Warning the steps of T-A01 in test.steps.json are invalid: the first step must be `goto`"),
        "{all}"
    );
    assert!(
        all.contains("Warning T-A02 has no structured steps in test.steps.json"),
        "{all}"
    );
    assert!(
        all.contains("Info T-A09 has steps but is not a playwright case"),
        "{all}"
    );
    std::fs::write(dir.join("test.steps.json"), "{ not json").unwrap();
    let docs = spec_orchestrate::spec::SpecDocs::read(dir);
    let checks = spec_orchestrate::phases::inspect::check(&docs, dir, true);
    assert!(
        checks
            .iter()
            .any(|c| c.file == "test.steps.json" && c.message.contains("is not a valid steps file")),
        "{checks:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// the evaluate loop
// ---------------------------------------------------------------------------------------------

#[test]
fn failed_cases_become_fingerprinted_findings_and_a_fix_task_that_makes_them_pass() {
    let demo = Demo::new();
    demo.write_config(&fast_steps(&with_agent_env(
        &demo.config(),
        "implementer",
        &[("DEMO_IMPL_FLAW", "unwired")],
    )));
    let (code, stderr) = run_demo(&demo);
    assert_eq!(code, Some(0), "fixed in the second round\n{stderr}");
    let state = demo.state();
    let rounds = &state.rounds.evaluate;
    assert_eq!(evaluate_gates(&state), ["FAIL", "PASS"]);
    assert_eq!(rounds[0].fail, 2, "T-A02 and the browser case T-A05");
    assert_eq!(rounds[0].fingerprints.len(), 2);

    let first = read_json(&demo.feature_dir().join("evaluate-1.json"));
    let browser = case(&first, "T-A05");
    assert_eq!(browser["verdict"], "FAIL");
    assert_eq!(
        browser["detail"], "step 6 (wait_for html[data-theme=\"dark\"]) failed",
        "the failing step is named: {browser}"
    );
    assert!(
        browser["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().ends_with("-failure.png")),
        "what the browser showed when it failed is kept: {browser}"
    );
    let findings = first["findings"].as_array().unwrap();
    let f = findings.iter().find(|f| f["id"] == "T-A05").unwrap();
    assert_eq!(f["severity"], "critical");
    assert_eq!(f["requirement_id"], "REQ-002");
    assert!(f["fingerprint"].as_str().is_some_and(|s| s.len() == 64));
    let fingerprint = f["fingerprint"].as_str().unwrap();
    assert!(
        rounds[0].fingerprints.iter().any(|p| p == fingerprint),
        "the round records the finding's fingerprint"
    );

    let fix = state
        .tasks
        .iter()
        .find(|t| t.id == "FIX1")
        .expect("a fix task from the failed round");
    assert_eq!(fix.status, TaskStatus::Done);
    assert!(
        demo.log()
            .iter()
            .any(|s| s.starts_with("FIX1: Fix the failing acceptance cases of round 1")),
        "{:?}",
        demo.log()
    );
    let second = read_json(&demo.feature_dir().join("evaluate-2.json"));
    assert_eq!(case(&second, "T-A05")["verdict"], "PASS");
}

#[test]
fn a_failure_that_keeps_recurring_stalls_the_evaluate_loop_and_the_opposite_agent_takes_over() {
    let demo = Demo::new();
    demo.write_config(&fast_steps(&with_agent_env(
        &demo.config(),
        "implementer",
        &[("DEMO_IMPL_FLAW", "stubborn")],
    )));
    let (code, stderr) = run_demo(&demo);
    assert_eq!(code, Some(0), "the swapped-in agent fixes it\n{stderr}");
    let state = demo.state();
    let rounds = &state.rounds.evaluate;
    assert_eq!(
        evaluate_gates(&state),
        ["FAIL", "FAIL", "FAIL", "PASS"],
        "{rounds:?}"
    );
    assert_eq!(
        rounds[0].fingerprints, rounds[2].fingerprints,
        "the same failures recur"
    );
    let arb = &state.arbitrations;
    assert_eq!(arb.len(), 1, "{arb:?}");
    assert_eq!(arb[0].phase, Phase::Evaluate);
    assert_eq!(arb[0].signal, Signal::S1);
    assert_eq!(arb[0].decision, Decision::Swap);
    assert_eq!(arb[0].from.as_ref().unwrap(), "implementer");
    assert_eq!(arb[0].to.as_ref().unwrap(), "reviewer");
    let fix3 = state.tasks.iter().find(|t| t.id == "FIX3").expect("FIX3");
    assert_eq!(fix3.implementer, "reviewer");
}

#[test]
fn a_rubric_score_that_plateaus_throws_the_implementation_away_once_and_restarts_from_the_spec() {
    let demo = Demo::new();
    let config = with_agent_env(&demo.config(), "author", &[("DEMO_RUBRIC_SCORES", "5,5,9")]);
    let config = config.replacen(
        "limits:",
        "evaluate:\n  rubric: { criteria: { design: 3, craft: 1 }, pass: 7.0 }\n  rubric_plateau_rounds: 1\nlimits:",
        1,
    );
    demo.write_config(&config);
    let (code, stderr) = run_demo(&demo);
    assert_eq!(
        code,
        Some(0),
        "the restarted implementation passes\n{stderr}"
    );
    let state = demo.state();
    let scores: Vec<Option<f64>> = state
        .rounds
        .evaluate
        .iter()
        .map(|r| r.rubric_score)
        .collect();
    assert_eq!(scores, [Some(5.0), Some(5.0), Some(9.0)]);
    assert_eq!(evaluate_gates(&state), ["FAIL", "FAIL", "PASS"]);

    // Below the pass mark is a finding, even though every case passed.
    let first = read_json(&demo.feature_dir().join("evaluate-1.json"));
    assert!(
        first["cases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["verdict"] == "PASS")
    );
    let f = &first["findings"].as_array().unwrap()[0];
    assert_eq!(f["section"], "rubric");
    assert_eq!(f["severity"], "improvement");
    assert!(
        f["gist"]
            .as_str()
            .unwrap()
            .contains("below the pass mark 7.0"),
        "{f}"
    );
    assert_eq!(first["rubric"]["weighted"], 5.0);
    assert_eq!(first["rubric"]["scored_by"], "author");

    let arb = &state.arbitrations;
    assert_eq!(arb.len(), 1, "{arb:?}");
    assert_eq!(arb[0].signal, Signal::RubricPlateau);
    assert_eq!(arb[0].decision, Decision::Restart);
    assert_eq!(arb[0].after_round, 2);

    // The branch was reset to the spec commit: the first implementation's commits are gone and
    // the tasks were implemented again on top of the spec.
    let base = state.implement_base.as_ref().expect("implement_base");
    let base = base.as_str();
    let subject = git(&demo.repo, &["log", "-1", "--format=%s", base]);
    assert!(subject.starts_with("spec: "), "{subject}");
    let since: Vec<String> = git(
        &demo.repo,
        &["log", "--format=%s", &format!("{base}..HEAD")],
    )
    .lines()
    .map(str::to_string)
    .collect();
    assert_eq!(
        since.iter().filter(|s| s.starts_with("T00")).count(),
        3,
        "each task once after the restart: {since:?}"
    );
    assert!(
        !since.iter().any(|s| s.starts_with("FIX1")),
        "the fix of the thrown-away implementation is gone: {since:?}"
    );
    let body = std::fs::read_to_string(demo.feature_dir().join("pr-body.md")).unwrap();
    assert!(
        body.contains("RUBRIC_PLATEAU") && body.contains("restart"),
        "{body}"
    );
}
