//! Agent backends (docs/cli.md, README Agent kinds) against stand-in `claude` and `codex`
//! executables.
//!
//! The stand-ins (`tests/fixtures/agents/claude`, `tests/fixtures/agents/codex`) are small python
//! programs that print exactly what the real CLIs print (`claude -p --output-format json`: one
//! result object; `codex exec --json`: JSONL events plus the last message in the `-o` file) and
//! record their argv, stdin, working directory and environment. They are copied into a temp dir
//! and named `claude` / `codex`; the agent's `binary:` key points at them. Their behaviour is
//! chosen through the agent's `env:` key, the only way anything reaches a scrubbed agent.
//!
//! Unit-level calls go through `spec_orchestrate::agents::call`; the scenarios that need the
//! whole pipeline (scrubbed environment with real tokens in the caller's environment, missing
//! CLI, garbage reviewer, crashing implementer) run the real binary on the demo repository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use spec_orchestrate::agents::{self, AgentError, AgentReply, AgentRequest};
use spec_orchestrate::config::Config;
use spec_orchestrate::secrets::Redactor;
use spec_orchestrate::state::{AgentFailure, State, TaskStatus};
use spec_orchestrate::types::kinds::{BlockerCategory, CallRole, Decision, Gate};
use spec_orchestrate::types::{Phase, Role, Signal};

use crate::support::{self, Demo, script, with_agent_env};

const CLAUDE_STANDIN: &str = include_str!("../fixtures/agents/claude");
const CODEX_STANDIN: &str = include_str!("../fixtures/agents/codex");

/// A git repository plus the two stand-ins and a log directory, for library-level calls.
struct Lab {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    bin: PathBuf,
    log: PathBuf,
}

impl Lab {
    fn new() -> Lab {
        // Entered by the agents' identity when the tests run as root: the stand-ins and the log
        // directory they write are inside.
        let tmp = support::tempdir();
        let root = tmp.path().canonicalize().expect("canonical tempdir");
        let repo = root.join("repo");
        std::fs::create_dir_all(&repo).expect("mkdir repo");
        support::git(&repo, &["init", "--quiet"]);
        std::fs::write(repo.join("README.md"), "# lab\n").expect("write README");
        let bin = root.join("bin");
        install_standins(&bin);
        let log = root.join("log");
        support::agent_writable(&log);
        Lab {
            _tmp: tmp,
            repo,
            bin,
            log,
        }
    }

    /// A configuration whose default roles resolve: agents `claude` and `codex` pointing at the
    /// stand-ins in the given modes, plus `extra` agent lines (already indented).
    fn config(&self, claude_mode: &str, codex_mode: &str, extra: &str) -> Config {
        let text = format!(
            "agents:\n{}\n{}\n{extra}",
            self.agent_line("claude", "claude-cli", claude_mode, ""),
            self.agent_line("codex", "codex-cli", codex_mode, ""),
        );
        Config::parse(&text, &self.repo.join(".specs/pipeline.yml"))
            .unwrap_or_else(|e| panic!("test configuration is valid: {e}\n{text}"))
    }

    /// One agent entry on a stand-in; `more` is appended inside the braces (`, model: x`).
    fn agent_line(&self, name: &str, kind: &str, mode: &str, more: &str) -> String {
        let program = if kind == "claude-cli" {
            "claude"
        } else {
            "codex"
        };
        format!(
            "  {name}: {{ kind: {kind}, binary: \"{}\", env: {{ STANDIN_LOG: \"{}\", STANDIN_MODE: {mode} }}{more} }}",
            self.bin.join(program).display(),
            self.log.display()
        )
    }

    fn request(&self, role: &str, prompt: &str) -> AgentRequest {
        AgentRequest {
            role: role.to_string(),
            phase: "spec_review".to_string(),
            round: Some(1),
            attempt: 1,
            workdir: self.repo.clone(),
            spec_dir: ".specs/lab".to_string(),
            task: None,
            files: vec![],
            prompt: prompt.to_string(),
            label: None,
            answer: None,
        }
    }

    /// Every call the stand-ins recorded, oldest first.
    fn calls(&self) -> Vec<Value> {
        read_calls(&self.log)
    }
}

/// Writes the stand-ins as `bin/claude` and `bin/codex`. Their shebang names the real python
/// interpreter (not a launcher such as a pyenv shim, which would add variables of its own to the
/// environment the stand-in records) of the `python3` a confined program would find: with the
/// agents' identity, one under `/root` (pyenv's) is out of its reach and passed over.
fn install_standins(bin: &Path) {
    let python3 = spec_orchestrate::process::find_confined_executable("python3", Path::new("/"))
        .expect("a python3 the agents may run is on PATH");
    let out = std::process::Command::new(python3)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    let python = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        out.status.success() && !python.is_empty(),
        "python3 names its interpreter"
    );
    for (name, text) in [("claude", CLAUDE_STANDIN), ("codex", CODEX_STANDIN)] {
        let body = text
            .split_once('\n')
            .map(|(_, rest)| rest)
            .expect("stand-in has a shebang line");
        script(&bin.join(name), &format!("#!{python}\n{body}"));
    }
}

fn read_calls(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log.join("calls.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).expect("stand-in wrote a JSON line"))
        .collect()
}

fn call(
    config: &Config,
    name: &str,
    writes: bool,
    req: &AgentRequest,
) -> Result<AgentReply, AgentError> {
    agents::call(config, name, writes, req, &Redactor::default())
}

fn argv_of(call: &Value) -> Vec<String> {
    call["argv"]
        .as_array()
        .expect("argv recorded")
        .iter()
        .map(|a| a.as_str().expect("argv is strings").to_string())
        .collect()
}

/// The value following `flag` in `argv`, if the flag is there.
fn flag_value<'a>(argv: &'a [String], flag: &str) -> Option<&'a str> {
    let i = argv.iter().position(|a| a == flag)?;
    argv.get(i + 1).map(String::as_str)
}

fn env_of(call: &Value) -> BTreeMap<String, String> {
    call["env"]
        .as_object()
        .expect("env recorded")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect()
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize()
        .unwrap_or_else(|e| panic!("canonicalize {}: {e}", p.display()))
}

// ---------------------------------------------------------------------------------------------
// claude-cli
// ---------------------------------------------------------------------------------------------

/// What one CLI backend is called with and answers, for the tests every backend passes alike.
struct Cli {
    /// The agent (and stand-in) name, and how its errors begin.
    name: &'static str,
    /// Its kind in the configuration.
    kind: &'static str,
    /// The first argument: claude's print mode, codex's subcommand.
    first: &'static str,
    /// Switches every call gets.
    switches: &'static [&'static str],
    /// A writer's flags with their values, and flags it never gets.
    writer: &'static [(&'static str, &'static str)],
    writer_never: &'static [&'static str],
    /// A reviewer's flags with their values (its model's flag last).
    reviewer: &'static [(&'static str, &'static str)],
    /// Arguments in all, for a writer without a model and a reviewer with one.
    writer_len: usize,
    reviewer_len: usize,
    /// What the stand-in's success reply holds: session, input and output tokens.
    session: &'static str,
    tokens: (u64, u64),
    /// The vendor's prefixes of variables the agent may see.
    vendor: [&'static str; 2],
    /// A failed result (mode) and what its error says.
    failed: (&'static str, &'static str),
    /// The exit code of the `exit` mode and what it printed on stderr.
    exit: (i32, &'static str),
}

const CLAUDE: Cli = Cli {
    name: "claude",
    kind: "claude-cli",
    first: "-p",
    switches: &[],
    writer: &[
        ("--output-format", "json"),
        ("--permission-mode", "acceptEdits"),
    ],
    writer_never: &["--disallowedTools", "--model"],
    reviewer: &[
        ("--output-format", "json"),
        ("--permission-mode", "plan"),
        ("--disallowedTools", "Write,Edit,NotebookEdit,Bash"),
        ("--model", "claude-opus-4-1"),
    ],
    writer_len: 5,
    reviewer_len: 9,
    // Input counts cache reads and cache creation, which Anthropic reports apart.
    session: "4f1c2b9e-7d3a-4c55-9a0e-5b8e2d1f6a70",
    tokens: (1200 + 300 + 4500, 420),
    vendor: ["ANTHROPIC_", "CLAUDE_"],
    failed: ("max-turns", "error_max_turns"),
    exit: (1, "Invalid API key"),
};

const CODEX: Cli = Cli {
    name: "codex",
    kind: "codex-cli",
    first: "exec",
    switches: &["--json", "--skip-git-repo-check"],
    writer: &[("--sandbox", "workspace-write")],
    writer_never: &["-m"],
    reviewer: &[("--sandbox", "read-only"), ("-m", "gpt-5-codex")],
    writer_len: 8,
    reviewer_len: 10,
    // `cached_input_tokens` is the cached part OF `input_tokens`, not an addition.
    session: "0199a213-81c0-7800-8aa1-bbab2a035a53",
    tokens: (24763, 122),
    vendor: ["OPENAI_", "CODEX_"],
    failed: ("turn-failed", "401 Unauthorized"),
    exit: (2, "unexpected argument"),
};

const CLIS: [Cli; 2] = [CLAUDE, CODEX];

impl Lab {
    /// A configuration in which `cli` runs in `mode` and the other stand-in succeeds.
    fn config_with(&self, cli: &Cli, mode: &str, extra: &str) -> Config {
        match cli.name {
            "claude" => self.config(mode, "success", extra),
            _ => self.config("success", mode, extra),
        }
    }
}

/// Variables a scrubbed CLI agent may see (README, Agent kinds): base, locale, its vendor's own,
/// and its configured `env` (here the STANDIN_* controls); claude's two switches.
fn allowed_for(cli: &Cli, key: &str) -> bool {
    ["PATH", "HOME", "LANG", "LANGUAGE", "TMPDIR", "TZ"].contains(&key)
        || key.starts_with("LC_")
        || cli.vendor.iter().any(|v| key.starts_with(v))
        || (cli.name == "claude" && ["IS_SANDBOX", "DISABLE_TELEMETRY"].contains(&key))
        || key.starts_with("STANDIN_")
}

/// The switches every call of `cli` gets; codex's last message goes to a file outside the
/// working tree (`-o`) and the prompt comes from stdin (`-`).
fn assert_common_args(cli: &Cli, argv: &[String], repo: &Path) {
    for switch in cli.switches {
        assert!(argv.iter().any(|a| a == switch), "{switch}: {argv:?}");
    }
    if cli.name == "codex" {
        assert_eq!(argv.last().map(String::as_str), Some("-"), "{argv:?}");
        let last = PathBuf::from(flag_value(argv, "-o").expect("-o LAST"));
        assert!(last.is_absolute(), "{argv:?}");
        assert!(
            !last.starts_with(repo),
            "the last-message file must not land in the working tree: {}",
            last.display()
        );
    }
}

#[test]
fn a_writer_gets_the_documented_command_line_prompt_on_stdin_cwd_repo_and_scrubbed_env() {
    for cli in &CLIS {
        let lab = Lab::new();
        let config = lab.config("success", "success", "");
        let prompt = "Write the four spec documents for issue 42.\nLine two of the prompt.";
        let reply = call(&config, cli.name, true, &lab.request("spec_author", prompt))
            .expect("a success result is a reply");

        // The reply is parsed: text, session and tokens.
        assert_eq!(reply.text, "Done.", "{}: the last message", cli.name);
        assert_eq!(
            reply.session_id.as_deref(),
            Some(cli.session),
            "{}",
            cli.name
        );
        let tokens = (reply.usage.input_tokens, reply.usage.output_tokens);
        assert_eq!(tokens, cli.tokens, "{}", cli.name);
        if cli.name == "claude" {
            assert_eq!(reply.usage.usd, 0.12, "claude reports its cost");
        }

        let calls = lab.calls();
        assert_eq!(calls.len(), 1, "one call, no retry on success");
        let argv = argv_of(&calls[0]);
        assert_eq!(argv[0], cli.first, "{argv:?}");
        for (flag, value) in cli.writer {
            let given = flag_value(&argv, flag);
            assert_eq!(given, Some(*value), "{flag}: {argv:?}");
        }
        for flag in cli.writer_never {
            assert!(!argv.iter().any(|a| a == flag), "{flag}: {argv:?}");
        }
        assert_eq!(argv.len(), cli.writer_len, "nothing else: {argv:?}");
        assert!(
            !argv.iter().any(|a| a.contains("spec documents")),
            "the prompt never goes on the command line: {argv:?}"
        );
        assert_common_args(cli, &argv, &lab.repo);
        assert_eq!(calls[0]["stdin"], prompt, "the prompt arrives on stdin");
        let cwd = canonical(Path::new(calls[0]["cwd"].as_str().unwrap()));
        assert_eq!(cwd, lab.repo, "{} runs in the repository", cli.name);

        // Scrubbed: only base, locale, vendor and configured variables reach the agent. The
        // test process certainly has others (cargo sets CARGO_* for tests); none may leak.
        let env = env_of(&calls[0]);
        let leaked: Vec<&String> = env.keys().filter(|k| !allowed_for(cli, k)).collect();
        assert!(
            leaked.is_empty(),
            "variables leaked to {}: {leaked:?}",
            cli.name
        );
        assert!(
            std::env::vars().any(|(k, _)| !allowed_for(cli, &k)),
            "precondition: the test process has variables an agent must not see"
        );
        assert_eq!(env.get("STANDIN_MODE").map(String::as_str), Some("success"));
        assert!(env.contains_key("PATH"), "PATH passes");
    }
}

#[test]
fn a_reviewer_cannot_edit_and_gets_its_model() {
    for cli in &CLIS {
        let lab = Lab::new();
        let (_, model) = cli.reviewer.last().expect("a model flag");
        let extra = lab.agent_line("critic", cli.kind, "success", &format!(", model: {model}"));
        let config = lab.config("success", "success", &extra);
        call(
            &config,
            "critic",
            false,
            &lab.request("spec_reviewer", "Review it."),
        )
        .expect("reply");
        let calls = lab.calls();
        assert_eq!(calls.len(), 1);
        let argv = argv_of(&calls[0]);
        assert_eq!(argv[0], cli.first, "{argv:?}");
        for (flag, value) in cli.reviewer {
            let given = flag_value(&argv, flag);
            assert_eq!(given, Some(*value), "{flag}: {argv:?}");
        }
        assert_eq!(argv.len(), cli.reviewer_len, "nothing else: {argv:?}");
        assert_common_args(cli, &argv, &lab.repo);
        assert_eq!(calls[0]["stdin"], "Review it.");
    }
}

#[test]
fn a_failed_result_is_an_agent_error_with_its_reason() {
    for cli in &CLIS {
        let lab = Lab::new();
        let (mode, reason) = cli.failed;
        let config = lab.config_with(cli, mode, "");
        let e = call(&config, cli.name, true, &lab.request("spec_author", "p"))
            .expect_err("a failed result is a failure");
        assert_eq!(e.category, BlockerCategory::AgentError, "{e}");
        assert!(e.detail.contains(reason), "{}: {}", cli.name, e.detail);
        if cli.name == "claude" {
            assert_eq!(e.usage.usd, 0.05, "the cost of a failed call is kept");
        }
    }
    // claude: `is_error: true` with the subtype `success` is still a failure.
    let lab = Lab::new();
    let extra = lab.agent_line("overloaded", "claude-cli", "api-error", "");
    let config = lab.config("success", "success", &extra);
    let e = call(
        &config,
        "overloaded",
        false,
        &lab.request("spec_reviewer", "p"),
    )
    .expect_err("is_error: true is a failure");
    assert_eq!(e.category, BlockerCategory::AgentError, "{e}");
    assert!(e.detail.contains("Overloaded"), "{}", e.detail);
}

#[test]
fn garbage_on_stdout_is_malformed_output() {
    for cli in &CLIS {
        let lab = Lab::new();
        let config = lab.config_with(cli, "garbage", "");
        let e = call(&config, cli.name, true, &lab.request("spec_author", "p"))
            .expect_err("text that is no result is not a reply");
        assert_eq!(
            e.category,
            BlockerCategory::MalformedOutput,
            "{}: {e}",
            cli.name
        );
    }
}

#[test]
fn a_nonzero_exit_is_an_agent_error_quoting_stderr_redacted() {
    for cli in &CLIS {
        let lab = Lab::new();
        let secret = "sk-standin-0123456789abcdef";
        let leaky = format!(
            "  leaky: {{ kind: {}, binary: \"{}\", env: {{ STANDIN_MODE: exit, STANDIN_SECRET: {secret} }} }}",
            cli.kind,
            lab.bin.join(cli.name).display()
        );
        let config = lab.config("success", "success", &leaky);
        let mut redactor = Redactor::default();
        redactor.add(secret);
        let req = lab.request("spec_author", "p");
        let e = agents::call(&config, "leaky", true, &req, &redactor).expect_err("a failure");
        assert_eq!(e.category, BlockerCategory::AgentError, "{e}");
        let (code, stderr) = cli.exit;
        let ended = format!("{} ended with exit status {code}:", cli.name);
        assert!(
            e.detail.starts_with(&ended),
            "how it ended reads as words, not as an Option: {}",
            e.detail
        );
        assert!(e.detail.contains(stderr), "stderr is quoted: {}", e.detail);
        assert!(!e.detail.contains(secret), "never the secret: {}", e.detail);
        assert!(
            e.detail.contains("***"),
            "the secret, redacted: {}",
            e.detail
        );
    }
}

/// Alive and not a zombie (a reparented child may stay a zombie when PID 1 does not reap).
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    if !exists {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
        Err(_) => false,
    }
}

#[test]
fn claude_timeout_stops_the_agent_and_the_child_it_spawned() {
    let lab = Lab::new();
    let extra = format!(
        "  slow: {{ kind: claude-cli, binary: \"{}\", timeout_s: 1, env: {{ STANDIN_LOG: \"{}\", STANDIN_MODE: sleep }} }}",
        lab.bin.join("claude").display(),
        lab.log.display()
    );
    let config = lab.config("success", "success", &extra);
    let started = Instant::now();
    let e = call(&config, "slow", true, &lab.request("spec_author", "p"))
        .expect_err("a call past its timeout fails");
    let took = started.elapsed();
    assert_eq!(e.category, BlockerCategory::Timeout, "{e}");
    assert!(
        took < Duration::from_secs(30),
        "the call returned at the timeout, not when the agent finished (took {took:?})"
    );
    let pids = std::fs::read_to_string(lab.log.join("pids")).expect("the stand-in wrote its pids");
    let pids: Vec<i32> = pids
        .split_whitespace()
        .map(|p| p.parse().expect("pid"))
        .collect();
    assert_eq!(pids.len(), 2, "own pid and child pid");
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for pid in pids {
        let gone = std::process::Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .map(|s| !s.success())
            .unwrap_or(false);
        assert!(
            gone || !alive(pid),
            "process {pid} of the timed-out agent is still running"
        );
    }
}

#[test]
fn a_missing_cli_binary_is_tool_unavailable() {
    let lab = Lab::new();
    let text = "agents:\n  claude: { kind: claude-cli, binary: /nonexistent/claude }\n  codex: { kind: codex-cli, binary: /nonexistent/codex }\n";
    let config = Config::parse(text, &lab.repo.join(".specs/pipeline.yml")).expect("valid");
    for name in ["claude", "codex"] {
        let e = call(&config, name, true, &lab.request("spec_author", "p"))
            .expect_err("no program, no reply");
        assert_eq!(e.category, BlockerCategory::ToolUnavailable, "{name}: {e}");
        assert!(e.detail.contains("not found"), "{name}: {}", e.detail);
    }
}

// ---------------------------------------------------------------------------------------------
// whole pipeline through the binary
// ---------------------------------------------------------------------------------------------

const RUN_LIMIT: Duration = Duration::from_secs(240);

/// Roles exactly as in the demo's pipeline.yml.
const DEMO_ROLES: &str = "roles:\n  spec_author: author\n  spec_reviewer: reviewer\n  impl_ui: implementer\n  impl_backend: implementer\n  impl_test: implementer\n  e2e_runner: author\n  judge: author\napp:\n  start: \"node server.js\"\n  url: \"http://127.0.0.1:{port}/\"\n  ready_pattern: \"ready on http://\"\n  ready_timeout_s: 30\nlimits:\n  agent_timeout_s: 120\n";

fn pr_body(demo: &Demo) -> String {
    std::fs::read_to_string(demo.feature_dir().join("pr-body.md")).expect("pr-body.md written")
}

/// The text of the Markdown section whose heading contains `title`, up to the next heading.
fn section(md: &str, title: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in md.lines() {
        if line.starts_with('#') {
            if inside {
                break;
            }
            inside = line.contains(title);
            continue;
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The "Why this is a draft:" list under the PR body's status line.
fn draft_reasons(body: &str) -> String {
    body.split("Why this is a draft:")
        .nth(1)
        .unwrap_or_default()
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A round that failed must never count as a pass.
fn assert_no_failed_round_passes(state: &State) {
    for r in &state.rounds.spec_review {
        if r.failure.is_some() {
            assert_eq!(
                r.gate,
                Gate::Fail,
                "a failed round counted as a pass: {r:?}"
            );
        }
    }
}

const TOKENS: [(&str, &str); 5] = [
    ("GITHUB_TOKEN", "ghs_scrubtestGithubToken0123456789abcdef"),
    (
        "INPUT_GITHUB_TOKEN",
        "ghs_scrubtestInputToken0123456789abcdef",
    ),
    (
        "ACTIONS_RUNTIME_TOKEN",
        "eyJscrubtestActionsRuntimeToken.0123456789",
    ),
    (
        "OPENAI_API_KEY",
        "sk-proj-scrubtestOpenaiKey0123456789abcdef",
    ),
    (
        "ANTHROPIC_API_KEY",
        "sk-ant-api03-scrubtestAnthropicKey0123456789",
    ),
];

fn token(name: &str) -> &'static str {
    TOKENS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .expect("known token")
}

/// Asserts that none of the named tokens' values occurs in `text`.
fn assert_no_tokens(what: &str, text: &str, names: &[&str]) {
    for name in names {
        assert!(
            !text.contains(token(name)),
            "the value of {name} appears in {what}"
        );
    }
}

/// Every file of the repository (git objects are compressed, so they are skipped; the git
/// config, refs and logs are read).
fn repo_files(repo: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(repo)
        .into_iter()
        .filter_entry(|e| e.path() != repo.join(".git/objects"))
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect()
}

#[test]
fn agents_run_with_a_scrubbed_environment_and_no_token_reaches_them_or_the_records() {
    let demo = Demo::new();
    let root = demo.tmp.path().to_path_buf();
    let bin = root.join("bin");
    install_standins(&bin);
    let log = root.join("log");
    // The wrapped agents and the stand-ins log here, as the agents' identity when it is on.
    support::agent_writable(&log);
    // The demo's author and implementer, wrapped: dump the environment and .git/config (the
    // agent's cwd is the repository), then become the real demo agent.
    for agent in ["author", "implementer"] {
        script(
            &root.join(format!("wrap/{agent}")),
            &format!(
                "#!/usr/bin/env bash\n{{ echo '=== env'; env; echo '=== .git/config'; cat .git/config; }} >> '{dump}'\nexec python3 '{real}'\n",
                dump = log.join(format!("{agent}.dump")).display(),
                real = demo.agents().join(format!("{agent}.py")).display(),
            ),
        );
    }
    // The spec reviewer is a claude-cli agent and the task reviewer a codex-cli agent, both
    // stand-ins that approve; so every backend kind runs inside one real pipeline.
    let config = format!(
        "agents:\n  author: {{ kind: command, command: [\"{wrap}/author\"], opposite: reviewer }}\n  reviewer: {{ kind: claude-cli, binary: \"{bin}/claude\", opposite: author, env: {{ STANDIN_LOG: \"{log}/claude\", STANDIN_MODE: review }} }}\n  implementer: {{ kind: command, command: [\"{wrap}/implementer\"], opposite: checker }}\n  checker: {{ kind: codex-cli, binary: \"{bin}/codex\", opposite: implementer, env: {{ STANDIN_LOG: \"{log}/codex\", STANDIN_MODE: review }} }}\n{DEMO_ROLES}",
        wrap = root.join("wrap").display(),
        bin = bin.display(),
        log = log.display(),
    );
    demo.write_config(&config);

    let mut cmd = demo.run_cmd();
    for (k, v) in TOKENS {
        cmd.env(k, v);
    }
    let out = cmd.timeout(RUN_LIMIT).output().expect("binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the run completes\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let all: Vec<&str> = TOKENS.iter().map(|(k, _)| *k).collect();

    assert_command_agents_saw_no_token(&log, &all);

    assert_claude_got_only_a_proxy_token(&log, &demo.repo);
    // codex-cli: the same, with OPENAI_API_KEY holding its proxy token.
    let codex_calls = read_calls(&log.join("codex"));
    assert!(
        codex_calls.len() >= 3,
        "the codex stand-in reviewed every task's diff ({} calls)",
        codex_calls.len()
    );
    for c in &codex_calls {
        let env = env_of(c);
        let dump = serde_json::to_string(c).expect("json");
        assert_no_tokens(
            "the codex agent's environment",
            &dump,
            &[
                "GITHUB_TOKEN",
                "INPUT_GITHUB_TOKEN",
                "ACTIONS_RUNTIME_TOKEN",
                "ANTHROPIC_API_KEY",
                "OPENAI_API_KEY",
            ],
        );
        assert!(
            env.get("OPENAI_API_KEY")
                .is_some_and(|k| k.starts_with("sk-spec-orchestrate-proxy-")),
            "codex gets a proxy token: {:?}",
            env.get("OPENAI_API_KEY")
        );
        assert_eq!(flag_value(&argv_of(c), "--sandbox"), Some("read-only"));
    }

    assert_nothing_written_holds_a_token(&demo, &stdout, &stderr, &all);
}

/// claude-cli (its calls logged under `log`): nobody's token passes, not even its own vendor
/// key: it gets the model API proxy's URL and a per-call token instead, plans only, in `repo`.
fn assert_claude_got_only_a_proxy_token(log: &Path, repo: &Path) {
    let claude_calls = read_calls(&log.join("claude"));
    assert!(
        !claude_calls.is_empty(),
        "the claude stand-in reviewed the spec"
    );
    for c in &claude_calls {
        let env = env_of(c);
        let dump = serde_json::to_string(c).expect("json");
        assert_no_tokens(
            "the claude agent's environment",
            &dump,
            &[
                "GITHUB_TOKEN",
                "INPUT_GITHUB_TOKEN",
                "ACTIONS_RUNTIME_TOKEN",
                "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY",
            ],
        );
        assert!(
            env.get("ANTHROPIC_API_KEY")
                .is_some_and(|k| k.starts_with("sk-spec-orchestrate-proxy-")),
            "claude gets a proxy token: {:?}",
            env.get("ANTHROPIC_API_KEY")
        );
        assert!(
            env.get("ANTHROPIC_BASE_URL")
                .is_some_and(|u| u.starts_with("http://127.0.0.1:")),
            "claude is pointed at the loopback proxy"
        );
        assert!(
            c["git_config"].is_string(),
            "the claude stand-in read .git/config"
        );
        let argv = argv_of(c);
        assert_eq!(
            flag_value(&argv, "--permission-mode"),
            Some("plan"),
            "{argv:?}"
        );
        assert_eq!(
            canonical(Path::new(c["cwd"].as_str().unwrap())),
            canonical(repo)
        );
    }
}

/// Command agents: no token at all, and not even the names.
fn assert_command_agents_saw_no_token(log: &Path, all: &[&str]) {
    for agent in ["author", "implementer"] {
        let dump = std::fs::read_to_string(log.join(format!("{agent}.dump")))
            .unwrap_or_else(|_| panic!("the {agent} wrapper ran"));
        assert!(
            dump.contains("=== .git/config"),
            "{agent} dumped .git/config"
        );
        assert_no_tokens(&format!("the {agent} agent's dump"), &dump, all);
        for name in all.iter().chain(["INPUT_", "ACTIONS_"].iter()) {
            assert!(
                !dump.lines().any(|l| l.starts_with(name)),
                "{name}… is in the {agent} agent's environment"
            );
        }
    }
}

/// Nothing the pipeline wrote or printed holds any token: state, pr-body, reviews, evidence,
/// retrospective, metrics, .git/config, refs.
fn assert_nothing_written_holds_a_token(demo: &Demo, stdout: &str, stderr: &str, all: &[&str]) {
    assert_no_tokens("stdout", stdout, all);
    assert_no_tokens("stderr", stderr, all);
    let files = repo_files(&demo.repo);
    for must in [
        demo.feature_dir().join("pipeline-state.json"),
        demo.feature_dir().join("pr-body.md"),
        demo.repo.join(".git/config"),
    ] {
        assert!(files.contains(&must), "{} was scanned", must.display());
    }
    for f in files {
        let bytes = std::fs::read(&f).expect("read");
        let text = String::from_utf8_lossy(&bytes);
        assert_no_tokens(&f.display().to_string(), &text, all);
    }
}

fn ghost_config(demo: &Demo) -> String {
    let config = demo.config();
    let config = config.replacen(
        "roles:",
        "  ghost: { kind: claude-cli, binary: /nonexistent/claude, opposite: reviewer }\nroles:",
        1,
    );
    let config = config.replacen("spec_reviewer: reviewer", "spec_reviewer: ghost", 1);
    assert!(config.contains("spec_reviewer: ghost"), "{config}");
    config
}

#[test]
fn a_missing_cli_is_overridden_in_auto_mode_and_the_pr_body_says_so() {
    let demo = Demo::new();
    demo.write_config(&ghost_config(&demo));
    let out = demo.run_cmd().timeout(RUN_LIMIT).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "the run completes\n{stderr}");
    let state = demo.state();
    assert_eq!(state.phase(), Phase::Done);
    let overrides = &state.role_overrides;
    let o = overrides
        .iter()
        .find(|o| o.role == Role::SpecReviewer)
        .unwrap_or_else(|| panic!("spec_reviewer override recorded: {overrides:?}"));
    assert_eq!(o.from, "ghost");
    assert_eq!(o.to, "reviewer", "the configured opposite takes over");
    assert!(o.reason.contains("not found"), "reason: {o:?}");
    assert_eq!(support::role_agent(&state, Role::SpecReviewer), "reviewer");
    let rounds = &state.rounds.spec_review;
    assert!(!rounds.is_empty());
    for r in rounds {
        assert_eq!(
            r.reviewer, "reviewer",
            "every round ran on the override: {r:?}"
        );
    }
    let body = pr_body(&demo);
    let sec = section(&body, "Role overrides");
    assert!(
        sec.contains("Reduced cross-model assurance"),
        "the Role overrides section warns:\n{sec}\n---\n{body}"
    );
    let row = sec
        .lines()
        .find(|l| l.contains("spec_reviewer"))
        .unwrap_or_else(|| panic!("override row in:\n{sec}"));
    assert!(
        row.contains("ghost") && row.contains("reviewer") && row.contains("not found"),
        "{row}"
    );
}

#[test]
fn a_missing_cli_in_manual_mode_stops_and_names_the_role() {
    let demo = Demo::new();
    demo.write_config(&ghost_config(&demo));
    let out = demo
        .run_cmd()
        .args(["--mode", "manual"])
        .timeout(RUN_LIMIT)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(7),
        "an agent error, not a run\n{stderr}"
    );
    // The error names the role and the agent, and suggests auto mode.
    support::assert_contains_all(&stderr, &["spec_reviewer", "ghost", "--mode auto"]);
    assert!(
        !demo.feature_dir().join("requirement.md").exists(),
        "no agent ran before the person decided"
    );
}

#[test]
fn a_reviewer_printing_garbage_fails_its_round_and_is_swapped_never_passing() {
    let demo = Demo::new();
    demo.write_config(&with_agent_env(
        &demo.config(),
        "reviewer",
        &[("DEMO_REVIEWER_MODE", "garbage")],
    ));
    let out = demo.run_cmd().timeout(RUN_LIMIT).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    assert!(
        matches!(code, Some(0) | Some(1)),
        "the run ends (done or draft), it does not error or spin: {code:?}\n{stderr}"
    );
    let state = demo.state();
    assert_eq!(state.phase(), Phase::Done, "the run finished");

    let rounds = &state.rounds.spec_review;
    let first = rounds.first().expect("a spec_review round is recorded");
    assert_eq!(first.reviewer, "reviewer");
    assert_eq!(first.gate, Gate::Fail, "{first:?}");
    assert!(
        first
            .failure
            .as_deref()
            .unwrap_or_default()
            .contains("malformed_output"),
        "the failed round says why: {first:?}"
    );
    for r in rounds.iter().filter(|r| r.reviewer == "reviewer") {
        assert_eq!(
            r.gate,
            Gate::Fail,
            "the garbage reviewer never passes a spec: {r:?}"
        );
        assert!(r.failure.is_some(), "{r:?}");
    }
    assert_no_failed_round_passes(&state);
    assert!(
        rounds.len() <= 6,
        "no loop on failures: {} rounds",
        rounds.len()
    );

    let failures = &state.agent_failures;
    assert!(
        failures.iter().any(|f| f.phase == Phase::SpecReview
            && f.role == CallRole::Role(Role::SpecReviewer)
            && f.agent == "reviewer"
            && f.category == BlockerCategory::MalformedOutput),
        "{failures:?}"
    );
    let arbitrations = &state.arbitrations;
    let swap = arbitrations
        .iter()
        .find(|a| a.phase == Phase::SpecReview && a.decision == Decision::Swap)
        .unwrap_or_else(|| panic!("an arbitration swapped the role: {arbitrations:?}"));
    assert_eq!(swap.from.as_ref().unwrap(), "reviewer");
    assert_eq!(
        swap.to.as_ref().unwrap(),
        "implementer",
        "reviewer's configured opposite"
    );
    assert_eq!(swap.signal, Signal::AgentFailure);
    assert!(
        rounds.iter().skip(1).all(|r| r.reviewer == "implementer"),
        "after the swap the opposite reviews: {rounds:?}"
    );

    let body = pr_body(&demo);
    let draft = body.contains("draft — not verified");
    assert_eq!(
        code == Some(1),
        draft,
        "exit 1 exactly when the PR is a draft\n{body}"
    );
    let review_section = section(&body, "spec_review");
    let row1 = review_section
        .lines()
        .find(|l| l.starts_with("| 1 |"))
        .unwrap_or_else(|| panic!("round 1 in the PR body:\n{review_section}"));
    assert!(
        row1.contains("FAIL") && row1.contains("malformed_output"),
        "{row1}"
    );
    assert!(
        section(&body, "Arbitrations").contains("AGENT_FAILURE"),
        "the arbitration is in the PR body"
    );
}

#[test]
fn a_garbage_reviewer_whose_opposite_also_fails_lands_a_draft_without_spinning() {
    let demo = Demo::new();
    let config = with_agent_env(
        &demo.config(),
        "reviewer",
        &[("DEMO_REVIEWER_MODE", "garbage")],
    );
    let config = with_agent_env(
        &config,
        "implementer",
        &[("DEMO_IMPL_MODE", "garbage-exit")],
    );
    demo.write_config(&config);
    let started = Instant::now();
    let out = demo.run_cmd().timeout(RUN_LIMIT).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a draft\n{stderr}");
    assert!(started.elapsed() < Duration::from_secs(120));
    let state = demo.state();
    assert_eq!(state.phase(), Phase::Done);
    let rounds = &state.rounds.spec_review;
    assert!(
        rounds
            .iter()
            .all(|r| r.gate == Gate::Fail && r.failure.is_some()),
        "every round failed and none passed: {rounds:?}"
    );
    assert!(rounds.len() <= 3, "no loop on failures: {rounds:?}");
    let completed = &state.completed_phases;
    assert!(
        !completed.contains(&Phase::Approval) && !completed.contains(&Phase::Implement),
        "an unreviewed spec is never approved: {completed:?}"
    );
    let decisions: Vec<Decision> = state.arbitrations.iter().map(|a| a.decision).collect();
    assert_eq!(
        decisions,
        [Decision::Swap, Decision::Draft],
        "swap once, then land a draft"
    );
    assert!(!state.draft_reasons.is_empty());
    let body = pr_body(&demo);
    assert!(body.contains("draft — not verified"), "{body}");
    let why = draft_reasons(&body);
    assert!(
        why.contains("spec_review") && why.contains("AGENT_FAILURE"),
        "the draft names the failure:\n{body}"
    );
}

#[test]
fn an_implementer_exiting_nonzero_blocks_its_task_and_the_run_lands_as_draft() {
    let demo = Demo::new();
    demo.write_config(&with_agent_env(
        &demo.config(),
        "implementer",
        &[("DEMO_IMPL_MODE", "garbage-exit")],
    ));
    let out = demo.run_cmd().timeout(RUN_LIMIT).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "finished as draft\n{stderr}");
    let state = demo.state();
    let t001 = state
        .tasks
        .iter()
        .find(|t| t.id == "T001")
        .expect("T001 in state");
    assert_eq!(t001.status, TaskStatus::Blocked, "{t001:?}");
    assert_eq!(t001.blocker, Some(BlockerCategory::AgentError), "{t001:?}");
    assert!(t001.commit.is_none(), "{t001:?}");
    let failures: Vec<&AgentFailure> = state
        .agent_failures
        .iter()
        .filter(|f| f.phase == Phase::Implement && f.role == CallRole::Role(Role::ImplUi))
        .collect();
    assert!(
        failures.len() >= 2,
        "the failed call was retried once before blocking: {failures:?}"
    );
    assert!(
        failures
            .iter()
            .all(|f| f.category == BlockerCategory::AgentError && f.agent == "implementer"),
        "{failures:?}"
    );
    assert!(
        !demo.log().iter().any(|s| s.starts_with("T001")),
        "nothing was committed for T001"
    );
    let reasons = &state.draft_reasons;
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("T001") && r.contains("agent_error")),
        "{reasons:?}"
    );
    let body = pr_body(&demo);
    assert!(
        body.contains("draft — not verified"),
        "the PR is a draft:\n{body}"
    );
    let why = draft_reasons(&body);
    assert!(
        why.contains("T001") && why.contains("agent_error"),
        "the draft lists the reason:\n{body}"
    );
}
