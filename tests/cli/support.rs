//! Shared helpers: the binary under test, demo repositories, and file helpers.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use spec_orchestrate::events::Event;
use spec_orchestrate::evidence::CaseResult;
use spec_orchestrate::evidence::steps::answer::Conversion;
use spec_orchestrate::state::{AgentFailure, State};
use spec_orchestrate::types::kinds::BlockerCategory;

/// The `spec-orchestrate` binary with a clean, deterministic environment.
pub fn bin() -> Command {
    let mut cmd = Command::cargo_bin("spec-orchestrate").expect("binary built by cargo");
    cmd.env_remove("SPEC_ORCHESTRATE_LOG");
    cmd.env_remove("SPEC_ORCHESTRATE_PROGRESS");
    cmd
}

/// A laid-out demo: `root/repo` (git, initial commit, `.specs/pipeline.yml`), `root/agents`,
/// `root/issue.md`.
pub struct Demo {
    /// Keeps the temp dir alive.
    pub tmp: tempfile::TempDir,
    /// The repository.
    pub repo: PathBuf,
    /// The issue file.
    pub issue: PathBuf,
}

impl Demo {
    /// Lays out the demo exactly as `spec-orchestrate demo` does.
    pub fn new() -> Demo {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (repo, issue) =
            spec_orchestrate::commands::demo::lay_out(tmp.path()).expect("demo lays out");
        Demo { tmp, repo, issue }
    }

    /// The demo's agents directory.
    pub fn agents(&self) -> PathBuf {
        self.tmp.path().join("agents")
    }

    /// The configuration file of the repository.
    pub fn config_path(&self) -> PathBuf {
        self.repo.join(".specs/pipeline.yml")
    }

    /// Replaces the repository's configuration.
    pub fn write_config(&self, text: &str) {
        std::fs::write(self.config_path(), text).expect("write config");
    }

    /// The configuration text.
    pub fn config(&self) -> String {
        std::fs::read_to_string(self.config_path()).expect("read config")
    }

    /// The feature directory of the demo issue.
    pub fn feature_dir(&self) -> PathBuf {
        self.repo.join(".specs/add-a-dark-mode-toggle")
    }

    /// The run's record, read as the orchestrator reads it.
    pub fn state(&self) -> State {
        spec_orchestrate::state::store::load_file(&self.feature_dir().join("pipeline-state.json"))
            .expect("the state loads")
    }

    /// The state file as JSON, for the tests of what the file itself says.
    pub fn state_json(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.feature_dir().join("pipeline-state.json"))
            .expect("state exists");
        serde_json::from_str(&text).expect("state is JSON")
    }

    /// `<command> --repo <repo>`: `resume`, `step`, `approve`, `status`, …
    pub fn cmd(&self, command: &str) -> Command {
        let mut c = bin();
        c.arg(command).arg("--repo").arg(&self.repo);
        c
    }

    /// `run --issue <issue> --repo <repo>` with extra args.
    pub fn run_cmd(&self) -> Command {
        self.run_issue_cmd(&self.issue)
    }

    /// `run --issue <issue> --repo <repo>` for another issue file than the demo's.
    pub fn run_issue_cmd(&self, issue: &Path) -> Command {
        let mut c = bin();
        c.arg("run")
            .arg("--issue")
            .arg(issue)
            .arg("--repo")
            .arg(&self.repo);
        c
    }

    /// `run` of the demo issue started in the background, its output dropped: for the tests
    /// that kill it part-way.
    pub fn spawn_run(&self) -> std::process::Child {
        std::process::Command::new(env!("CARGO_BIN_EXE_spec-orchestrate"))
            .env_remove("SPEC_ORCHESTRATE_LOG")
            .env_remove("SPEC_ORCHESTRATE_PROGRESS")
            .arg("run")
            .arg("--issue")
            .arg(&self.issue)
            .arg("--repo")
            .arg(&self.repo)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the run starts")
    }

    /// The configuration with one more `command` agent, `name`: the shell script `body`
    /// (written next to the demo), with `opposite` as the agent a swap moves its roles to.
    pub fn config_with_script_agent(&self, name: &str, body: &str, opposite: &str) -> String {
        let path = self.tmp.path().join(format!("{name}.sh"));
        script(&path, body);
        with_agent(
            &self.config(),
            name,
            &format!(
                "{{ kind: command, command: [\"{}\"], opposite: {opposite} }}",
                path.display()
            ),
        )
    }

    /// Commit subjects on the current branch, newest first.
    pub fn log(&self) -> Vec<String> {
        git(&self.repo, &["log", "--format=%s"])
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// The variable that asks the binary for `--progress json`: one event per stderr line.
pub const JSON_PROGRESS: (&str, &str) = ("SPEC_ORCHESTRATE_PROGRESS", "json");

/// The progress events of a run of the binary under [`JSON_PROGRESS`]: every stderr line that is
/// a JSON object, read back as the library's `Event` (lines that are not one, such as the final
/// error line, are skipped; a JSON line that is no event fails the test). Tests assert the typed
/// fact (which task, which status) rather than the sentence a person reads.
pub fn events_of(stderr: &str) -> Vec<Event> {
    stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not an event: {e}: {l}")))
        .collect()
}

/// The messages of the `Stopped` events in `events` (a limit stopped the run; a draft says why).
pub fn stopped_messages(events: &[Event]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Stopped { message, .. } => Some(message.as_str()),
            _ => None,
        })
        .collect()
}

/// The messages of the `Warning` events in `events` (something is off but the command goes on).
pub fn warnings(events: &[Event]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Warning { message } => Some(message.as_str()),
            _ => None,
        })
        .collect()
}

/// `spec-orchestrate verify <dir>`: its exit code and what it printed, stdout then stderr.
pub fn verify(dir: &Path) -> (Option<i32>, String) {
    let out = bin()
        .arg("verify")
        .arg(dir)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("verify runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// Asserts that `text` contains every one of `needles`, naming the first one missing.
pub fn assert_contains_all(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "`{needle}` is missing from:\n{text}");
    }
}

/// Runs git and returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_with(std::process::Command::new("git"), dir, args)
}

/// Runs `git` (a command set up by the caller: environment, `-c` options) with `args` in `dir`,
/// asserts it succeeded and returns its stdout.
pub fn git_with(mut git: std::process::Command, dir: &Path, args: &[&str]) -> String {
    let out = git.args(args).current_dir(dir).output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Commits everything in `repo` (an acceptance round tests the commit, not the working tree).
pub fn commit_all(repo: &Path, message: &str) {
    git(repo, &["add", "-A"]);
    git(
        repo,
        &[
            "-c",
            "user.name=test",
            "-c",
            "user.email=test@example.test",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            message,
        ],
    );
}

/// A checkout as the acceptance runners get one, for tests that call `runners::run_all`
/// directly: `files` laid out and committed (a round runs the commit under test), and the
/// feature directory `.specs/<feature>`.
pub struct RoundLab {
    /// Keeps the temp dir alive.
    pub _tmp: tempfile::TempDir,
    /// The checkout.
    pub repo: PathBuf,
    /// `.specs/<feature>`.
    pub feature: PathBuf,
}

impl RoundLab {
    /// Lays out `files` (path, content) in a new repository and commits them.
    pub fn new(feature: &str, files: &[(&str, &str)]) -> RoundLab {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = tmp.path().canonicalize().expect("canonical").join("repo");
        let feature = repo.join(".specs").join(feature);
        std::fs::create_dir_all(&feature).expect("mkdir");
        git(&repo, &["init", "-q"]);
        for (path, content) in files {
            let path = repo.join(path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            std::fs::write(path, content).expect("write");
        }
        commit_all(&repo, "lab");
        RoundLab {
            _tmp: tmp,
            repo,
            feature,
        }
    }

    /// `evidence/<round>` of the feature.
    pub fn round_dir(&self, round: u32) -> PathBuf {
        self.feature.join(format!("evidence/{round}"))
    }

    /// Runs the cases of `test_md` as round `round` under the configuration `yaml`, with the
    /// stored conversion `entry` gives each case (`None`: no entry); results by case id.
    pub fn run(
        &self,
        test_md: &str,
        yaml: &str,
        round: u32,
        entry: impl Fn(&spec_orchestrate::spec::cases::Case) -> Option<Conversion>,
    ) -> std::collections::BTreeMap<String, CaseResult> {
        use spec_orchestrate::evidence::steps::{self, CaseSteps, StepsFile};
        let parsed = spec_orchestrate::spec::cases::parse(test_md);
        let mut file = StepsFile::default();
        for c in &parsed {
            if let Some(conversion) = entry(c) {
                let stored = CaseSteps {
                    source: steps::source_hash(c),
                    converted_by: Some("e2e".into()),
                    steps: conversion.steps,
                    cannot_express: conversion.cannot_express,
                };
                file.cases.insert(c.id.clone(), stored);
            }
        }
        let config = spec_orchestrate::config::Config::parse(yaml, Path::new("pipeline.yml"))
            .expect("config");
        let round_dir = self.round_dir(round);
        let results = spec_orchestrate::evidence::runners::run_all(
            spec_orchestrate::evidence::runners::RunDirs {
                repo: &self.repo,
                feature_dir: &self.feature,
                round_dir: &round_dir,
            },
            &parsed,
            &config,
            Ok(Some(&file)),
            &spec_orchestrate::secrets::Redactor::default(),
            |_| {},
            &mut |_| Ok(()),
        );
        results.into_iter().map(|r| (r.id.clone(), r)).collect()
    }
}

/// `config` with one more agent, `name`, whose YAML flow mapping is `entry`, first in `agents:`.
pub fn with_agent(config: &str, name: &str, entry: &str) -> String {
    let with = config.replacen("agents:\n", &format!("agents:\n  {name}: {entry}\n"), 1);
    assert_ne!(with, config, "no `agents:` section in:\n{config}");
    with
}

/// Adds `env: {K: "V", …}` to the one-line entry of agent `agent`.
pub fn with_agent_env(config: &str, agent: &str, vars: &[(&str, &str)]) -> String {
    let prefix = format!("  {agent}:");
    let env = vars
        .iter()
        .map(|(k, v)| format!("{k}: \"{v}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let out: Vec<String> = config
        .lines()
        .map(|l| {
            if l.starts_with(&prefix) && l.trim_end().ends_with('}') {
                let body = l.trim_end().trim_end_matches('}').trim_end();
                format!("{body}, env: {{ {env} }} }}")
            } else {
                l.to_string()
            }
        })
        .collect();
    let text = out.join("\n") + "\n";
    assert!(
        text.contains(&format!("env: {{ {env} }}")),
        "{agent} in:\n{config}"
    );
    text
}

/// The demo's configuration with one more agent, `api` (YAML flow mapping body), playing
/// `roles` (e.g. `spec_reviewer: api`), plus `extra` top-level YAML.
pub fn config_with_api(demo: &Demo, api: &str, roles: &[(&str, &str)], extra: &str) -> String {
    let agents = demo.agents();
    let a = agents.display();
    let mut role_map = [
        ("spec_author", "author"),
        ("spec_reviewer", "reviewer"),
        ("impl_ui", "implementer"),
        ("impl_backend", "implementer"),
        ("impl_test", "implementer"),
        ("e2e_runner", "author"),
        ("judge", "author"),
    ];
    for (role, agent) in roles {
        for r in role_map.iter_mut() {
            if r.0 == *role {
                r.1 = agent;
            }
        }
    }
    let roles_yaml: String = role_map
        .iter()
        .map(|(r, a)| format!("  {r}: {a}\n"))
        .collect();
    format!(
        "agents:\n  author:      {{ kind: command, command: [\"python3\", \"{a}/author.py\"], opposite: reviewer }}\n  reviewer:    {{ kind: command, command: [\"python3\", \"{a}/reviewer.py\"], opposite: implementer }}\n  implementer: {{ kind: command, command: [\"python3\", \"{a}/implementer.py\"], opposite: reviewer }}\n  api: {{ {api} }}\nroles:\n{roles_yaml}app:\n  start: \"node server.js\"\n  url: \"http://127.0.0.1:{{port}}/\"\n  ready_pattern: \"ready on http://\"\n  ready_timeout_s: 30\nlimits:\n  agent_timeout_s: 60\n{extra}"
    )
}

/// Each arbitration of `state`, as `<loop> <signal> <decision> <after round>`.
pub fn arbitrations(state: &State) -> Vec<String> {
    state
        .arbitrations
        .iter()
        .map(|a| format!("{} {} {} {}", a.phase, a.signal, a.decision, a.after_round))
        .collect()
}

/// The gates of the evaluate rounds in `state`, as the state file writes them (`PASS`, `FAIL`).
pub fn evaluate_gates(state: &State) -> Vec<String> {
    state
        .rounds
        .evaluate
        .iter()
        .map(|r| r.gate.to_string())
        .collect()
}

/// Asserts that the first spec_review round of `state` failed, its failure beginning with
/// `failure` (a failed round never passes).
pub fn assert_first_review_failed(state: &State, failure: &str) {
    let first = &state.rounds.spec_review[0];
    assert_eq!(first.gate, spec_orchestrate::types::kinds::Gate::Fail);
    let said = first.failure.as_deref().unwrap_or_default();
    assert!(said.starts_with(failure), "{first:?}");
}

/// Whether the run's pull request is a draft (panics when there is none).
pub fn pr_draft(state: &State) -> bool {
    state.pr.as_ref().expect("a pull request").draft
}

/// The agent playing `role`.
pub fn role_agent(state: &State, role: spec_orchestrate::types::Role) -> String {
    state.roles[&role].to_string()
}

/// The demo whose `roles` are played by the HTTP agent `api` (its YAML flow-mapping body).
pub fn demo_with_api(api: &str, roles: &[(&str, &str)]) -> Demo {
    let demo = Demo::new();
    demo.write_config(&config_with_api(&demo, api, roles, ""));
    demo
}

/// Runs `run` (a `run` command of a demo or scenario) up to `phase` with the variables `env`
/// (an API key, a base URL); the run must succeed. Its stderr.
pub fn run_until_ok(mut run: Command, phase: &str, env: &[(&str, &str)]) -> String {
    run.args(["--until", phase]);
    for (k, v) in env {
        run.env(k, v);
    }
    let out = run.output().expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// The agent failures recorded in `state` with category `category`, in order.
pub fn failures_in(state: &State, category: BlockerCategory) -> Vec<AgentFailure> {
    state
        .agent_failures
        .iter()
        .filter(|f| f.category == category)
        .cloned()
        .collect()
}

/// A temp directory the agents' identity may enter and write (mode 0777).
///
/// As root the orchestrator runs every agent, acceptance command, app and browser as a separate
/// uid (docs/security.md), and `tempfile::tempdir()` is 0700 root's: a scripted agent could not
/// read its fakes there nor write its request log. A checkout inside a private directory is
/// reached by the product itself (`process::reach`); files a test's agents use *outside* a
/// checkout are the test's to make reachable, as a user's would be theirs.
pub fn tempdir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    agent_writable(tmp.path());
    tmp
}

/// Sets the permission bits of `path` to `mode`.
pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Creates `dir` (and its parents) and lets the agents' identity write into it (mode 0777):
/// where a scripted agent logs its requests or keeps its counters, outside the checkout.
pub fn agent_writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).expect("chmod 0777");
}

/// Writes an executable script.
pub fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).expect("mkdir");
    }
    std::fs::write(path, body).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A `command` agent entry for the YAML config.
pub fn python_agent(agents: &Path, name: &str) -> String {
    format!("[\"python3\", \"{}/{name}.py\"]", agents.display())
}

/// The scripted test agent (`tests/fixtures/agents/scenario.py`).
pub fn scenario_agent() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents/scenario.py")
}

/// A debate of two rounds in which debater A raises one finding (`F1`, no keyboard shortcut)
/// and B disputes it, both converging in round 2: the scenario's `debate` entry.
pub fn one_finding_debate() -> serde_json::Value {
    let x = serde_json::json!({"id": "F1", "gist": "The toggle has no keyboard shortcut", "section": "Architecture"});
    serde_json::json!({
        "A": {"1": {"findings": [x]}, "2": {"findings": [x], "converged": true}},
        "B": {"1": {"findings": []}, "2": {"findings": [], "converged": true, "remaining_disputes": []}}
    })
}

/// A scripted `node` on a machine without network: Playwright's installer cannot reach its
/// download host (logged to `$NODE_LOG`), anything else is the real node.
pub const FAKE_NODE: &str = r#"#!/bin/sh
case "$*" in
  *"cli.js install chromium"*)
    echo "$@" >> "$NODE_LOG"
    echo "Error: getaddrinfo ENOTFOUND playwright.azureedge.net" >&2
    exit 1;;
esac
exec node "$@"
"#;

/// The YAML flow mapping of a `command` agent playing the scenario in `dir` (its
/// `scenario.json`; requests logged to `requests.jsonl`, counters in `state`, call times in
/// `timing.jsonl`), with `opposite` as its opposite and `more` inside the braces (`model: x, `).
pub fn scenario_agent_entry(dir: &Path, opposite: &str, more: &str) -> String {
    format!(
        "{{ kind: command, {more}command: [\"python3\", \"{}\"], opposite: {opposite}, env: {{ SCENARIO: \"{}\", SCENARIO_LOG: \"{}\", SCENARIO_STATE: \"{}\", SCENARIO_TIMING: \"{}\" }} }}",
        scenario_agent().display(),
        dir.join("scenario.json").display(),
        dir.join("requests.jsonl").display(),
        dir.join("state").display(),
        dir.join("timing.jsonl").display(),
    )
}

/// The roles of a scenario: `alpha` writes and judges, `beta` reviews the spec.
pub const SCENARIO_ROLES: &str = "roles:\n  spec_author: alpha\n  spec_reviewer: beta\n  impl_ui: alpha\n  impl_backend: alpha\n  impl_test: alpha\n  e2e_runner: alpha\n  judge: alpha\n";

/// A demo repository whose agents (`alpha` and `beta`, opposites of each other) play a scenario
/// file round by round; every request they receive is logged.
pub struct Scenario {
    /// The repository, issue and temp dir.
    pub demo: Demo,
    /// Where the scenario, its request log and counters live.
    pub dir: PathBuf,
}

impl Scenario {
    /// Lays out the demo repository and configures the scenario agents: author, implementers,
    /// e2e_runner and judge on `alpha`, spec_reviewer on `beta`. `extra` is appended to the
    /// configuration (e.g. a `review:` or `limits:` section).
    pub fn new(scenario: serde_json::Value, extra: &str) -> Scenario {
        let demo = Demo::new();
        let dir = demo.tmp.path().join("scenario");
        agent_writable(&dir);
        std::fs::write(dir.join("scenario.json"), scenario.to_string()).expect("scenario");
        demo.write_config(&format!(
            "agents:\n  alpha: {}\n  beta: {}\n{SCENARIO_ROLES}{extra}",
            scenario_agent_entry(&dir, "beta", ""),
            scenario_agent_entry(&dir, "alpha", "")
        ));
        Scenario { demo, dir }
    }

    /// Every request the agents received, in order.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.dir.join("requests.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("request line is JSON"))
            .collect()
    }

    /// The requests made for `role`.
    pub fn requests_of(&self, role: &str) -> Vec<serde_json::Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["role"] == role)
            .collect()
    }

    /// The run's record.
    pub fn state(&self) -> State {
        self.demo.state()
    }

    /// The state file as JSON.
    pub fn state_json(&self) -> serde_json::Value {
        self.demo.state_json()
    }

    /// `run --issue … --repo …`.
    pub fn run_cmd(&self) -> Command {
        self.demo.run_cmd()
    }

    /// `run --until <phase>`, killed after `limit`; its output whatever its exit code.
    pub fn run_until(&self, phase: &str, limit: std::time::Duration) -> std::process::Output {
        self.run_cmd()
            .arg("--until")
            .arg(phase)
            .timeout(limit)
            .output()
            .expect("the run starts")
    }
}

/// The peak resident memory of the largest child the test process has waited for, in KiB
/// (`RUSAGE_CHILDREN`: every test of this binary counts, so the bound asserted must stay above
/// what any of them uses honestly).
pub fn children_peak_rss_kib() -> i64 {
    // SAFETY: rusage is plain data; all zeroes is a valid value of it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes into the struct it is given, which outlives the call.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss
}
