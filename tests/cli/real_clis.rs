//! The REAL `claude` and `codex` CLIs (npm `@anthropic-ai/claude-code` and `@openai/codex`,
//! installed by `.ci/run` into `.tools/npm`), offline: each is pointed at a local fake of its
//! vendor's API that scripts one tool call writing a file and then a final answer. The tests
//! check that the file appeared and that the adapters parsed the CLIs' real output: the result
//! text, the cost, the tokens and the session id.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use spec_orchestrate::agents::{self, AgentRequest};
use spec_orchestrate::config::Config;
use spec_orchestrate::secrets::Redactor;
use wiremock::matchers::{method, path};
use wiremock::{Mock, Request, Respond, ResponseTemplate};

use crate::fakes::{Fake, anthropic, json_reply, openai, sse_reply};

/// The installed CLI `name`: `$SPEC_ORCHESTRATE_REAL_<NAME>` or `.tools/npm/node_modules/.bin`.
fn real_cli(name: &str) -> PathBuf {
    let var = format!("SPEC_ORCHESTRATE_REAL_{}", name.to_uppercase());
    if let Ok(p) = std::env::var(&var) {
        return PathBuf::from(p);
    }
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".tools/npm/node_modules/.bin")
        .join(name);
    assert!(
        p.exists(),
        "the real `{name}` CLI is not installed at {}: run `.ci/run` (it installs @anthropic-ai/claude-code and @openai/codex into .tools/npm), or point {var} at an installed `{name}`",
        p.display()
    );
    p
}

/// A git repository in a temp dir, plus a home directory for the CLI's own files (which the
/// CLI writes as the agents' identity when the tests run as root).
fn workspace() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = crate::support::tempdir();
    let repo = tmp.path().join("repo");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&repo).unwrap();
    crate::support::agent_writable(&home);
    crate::support::git(&repo, &["init", "-q"]);
    (tmp, repo, home)
}

/// `call` with `repo` lent to the agents' identity for its length, as every command that runs
/// agents lends its checkout (and gives it back at its end): the CLI's tools write there.
fn in_lent<T>(repo: &Path, call: impl FnOnce() -> T) -> T {
    let _loan = spec_orchestrate::process::identity::lend_for(repo);
    call()
}

fn request(repo: &Path, prompt: &str) -> AgentRequest {
    AgentRequest {
        role: "impl_backend".into(),
        phase: "implement".into(),
        round: Some(1),
        attempt: 1,
        workdir: repo.to_path_buf(),
        spec_dir: ".specs/real-cli".into(),
        task: None,
        files: Vec::new(),
        prompt: prompt.into(),
        label: None,
        answer: None,
    }
}

/// A real key no one else on this machine uses: the tests look for it everywhere.
fn unique_key(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{prefix}-real-{}-{nanos}", std::process::id())
}

/// What the environments of the machine's processes held while the fake answered a request:
/// the pids whose environment holds the real key, and whether one held the proxy's token in
/// `marker` (that is the CLI, alive and waiting for the answer).
#[derive(Debug, Clone, Default)]
struct EnvScan {
    with_key: Vec<u32>,
    with_token: bool,
}

/// Reads `/proc/<pid>/environ` of every process this user can read.
fn scan_environs(key: &str, marker: &str) -> EnvScan {
    let mut scan = EnvScan::default();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return scan;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let env = String::from_utf8_lossy(&env);
        if env.contains(key) {
            scan.with_key.push(pid);
        }
        if env.split('\0').any(|kv| kv.starts_with(marker)) {
            scan.with_token = true;
        }
    }
    scan
}

/// Files under `dirs` whose content holds `key`.
fn files_containing(dirs: &[&Path], key: &str) -> Vec<PathBuf> {
    dirs.iter()
        .flat_map(|d| walkdir::WalkDir::new(d).follow_links(false))
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            std::fs::read(e.path())
                .map(|b| String::from_utf8_lossy(&b).contains(key))
                .unwrap_or(false)
        })
        .map(|e| e.path().to_path_buf())
        .collect()
}

/// Scans the environments at every request a fake answers.
#[derive(Clone)]
struct Probe {
    key: String,
    marker: &'static str,
    scans: Arc<Mutex<Vec<EnvScan>>>,
}

impl Probe {
    fn new(key: &str, marker: &'static str) -> Probe {
        Probe {
            key: key.to_string(),
            marker,
            scans: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn record(&self) {
        let scan = scan_environs(&self.key, self.marker);
        self.scans.lock().expect("lock").push(scan);
    }

    /// Asserts that at every request the CLI held the token and no process held the key.
    fn assert_clean(&self) {
        let scans = self.scans.lock().expect("lock").clone();
        assert!(!scans.is_empty(), "the fake was never called");
        for scan in scans {
            assert!(
                scan.with_token,
                "no process held the proxy token in {}",
                self.marker
            );
            assert!(
                scan.with_key.is_empty(),
                "processes {:?} held the real key in their environment",
                scan.with_key
            );
        }
    }
}

/// The Messages API as Claude Code drives it: streamed turns; the first asks for the `Write`
/// tool, the one carrying its `tool_result` gets the final answer.
struct ClaudeTurns {
    file: String,
    seen: Mutex<u32>,
    /// Input tokens the first turn reports.
    first_input: u64,
    probe: Option<Probe>,
}

impl Respond for ClaudeTurns {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let model = body["model"]
            .as_str()
            .unwrap_or("claude-sonnet-4-5")
            .to_string();
        let has_result = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_array())
            .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"));
        let n = {
            let mut seen = self.seen.lock().expect("lock");
            *seen += 1;
            *seen
        };
        let id = format!("msg_fake_{n}");
        if let Some(p) = &self.probe {
            p.record();
        }
        if body["stream"] != json!(true) {
            return json_reply(200, &anthropic::message("ok", 10, 2, "end_turn"));
        }
        if has_result {
            sse_reply(anthropic::stream_text(
                &id,
                &model,
                "Created made-by-claude.txt.",
                1200,
                15,
            ))
        } else {
            sse_reply(anthropic::stream_tool_use(
                &id,
                &model,
                "toolu_01A09q90qw90lq917835lq9",
                "Write",
                &json!({"file_path": self.file, "content": "written by the real claude CLI\n"}),
                self.first_input,
                40,
            ))
        }
    }
}

/// How the claude test agent is set up.
struct ClaudeSetup<'a> {
    key: &'a str,
    /// `agents.claude.proxy`, when set.
    proxy: Option<bool>,
    first_input: u64,
    probe: Option<Probe>,
}

impl Default for ClaudeSetup<'_> {
    fn default() -> Self {
        ClaudeSetup {
            key: "sk-ant-local-fake-key-000000",
            proxy: None,
            first_input: 1000,
            probe: None,
        }
    }
}

/// A fake Messages API scripted for Claude Code, and the configuration of a `claude` agent that
/// runs the real CLI against it.
fn claude_with(repo: &Path, home: &Path, target: &Path, setup: ClaudeSetup) -> (Fake, Config) {
    let claude = real_cli("claude");
    let fake = Fake::start();
    fake.mount(
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(ClaudeTurns {
                file: target.display().to_string(),
                seen: Mutex::new(0),
                first_input: setup.first_input,
                probe: setup.probe.clone(),
            }),
    );
    fake.mount(
        Mock::given(wiremock::matchers::any())
            .respond_with(ResponseTemplate::new(404).set_body_string("{}"))
            .with_priority(100),
    );
    // Everything the CLI needs offline reaches it through the agent's `env`: the fake's URL, a
    // key (the CLI refuses to start without one), a private HOME, and no telemetry or update
    // traffic.
    let proxy = setup
        .proxy
        .map(|p| format!("    proxy: {p}\n"))
        .unwrap_or_default();
    let yaml = format!(
        "agents:\n  claude:\n    kind: claude-cli\n    binary: \"{}\"\n    model: claude-sonnet-4-5\n    timeout_s: 180\n{proxy}    env:\n      ANTHROPIC_BASE_URL: \"{}\"\n      ANTHROPIC_API_KEY: {}\n      HOME: \"{}\"\n      DISABLE_TELEMETRY: \"1\"\n      DISABLE_AUTOUPDATER: \"1\"\n      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: \"1\"\n  codex: {{ kind: codex-cli }}\n",
        claude.display(),
        fake.uri(),
        setup.key,
        home.display()
    );
    let config = Config::parse(&yaml, &repo.join(".specs/pipeline.yml")).expect("valid config");
    (fake, config)
}

/// The Messages API turns the fake received.
fn messages_turns(fake: &Fake) -> Vec<Request> {
    fake.requests()
        .into_iter()
        .filter(|r| r.url.path() == "/v1/messages")
        .collect()
}

/// Asks agent `agent` (with write access) to create `made-by-<agent>.txt` in `repo`, with
/// `budget_left` USD left of the run's budget.
fn create_file(
    config: &Config,
    agent: &str,
    repo: &Path,
    budget_left: f64,
) -> Result<agents::AgentReply, agents::AgentError> {
    in_lent(repo, || {
        agents::call_noted(
            config,
            &agent.into(),
            true,
            &request(
                repo,
                &format!("Create made-by-{agent}.txt in the repository root."),
            ),
            &Redactor::default(),
            agents::CallLimits {
                budget_left: Some(budget_left),
            },
        )
        .result
    })
}

#[test]
fn real_claude_cli_runs_a_scripted_tool_call_through_the_proxy_without_the_real_key() {
    let (_tmp, repo, home) = workspace();
    let target = repo.join("made-by-claude.txt");
    let key = unique_key("sk-ant");
    let probe = Probe::new(&key, "ANTHROPIC_API_KEY=sk-spec-orchestrate-proxy-");
    let (fake, config) = claude_with(
        &repo,
        &home,
        &target,
        ClaudeSetup {
            key: &key,
            probe: Some(probe.clone()),
            ..ClaudeSetup::default()
        },
    );
    let called = in_lent(&repo, || {
        agents::call_noted(
            &config,
            &"claude".into(),
            true,
            &request(&repo, "Create made-by-claude.txt in the repository root."),
            &Redactor::default(),
            agents::CallLimits::default(),
        )
    });
    let reply = called
        .result
        .clone()
        .expect("the real CLI finished the scripted turn");

    assert_eq!(
        std::fs::read_to_string(&target).expect("claude's Write tool created the file"),
        "written by the real claude CLI\n"
    );
    assert_eq!(reply.text, "Created made-by-claude.txt.");
    let turns = messages_turns(&fake);
    assert!(turns.len() >= 2, "a tool turn and a final turn");
    let session = turns[0]
        .headers
        .get("x-claude-code-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("claude sends its session id")
        .to_string();
    assert_eq!(reply.session_id.as_deref(), Some(session.as_str()));
    // Only the proxy→API leg carries the real key; the CLI held a per-call token, and neither
    // its environment nor any file it wrote holds the key.
    for turn in &turns {
        assert_eq!(turn.headers.get("x-api-key").unwrap(), key.as_str());
        assert!(turn.headers.get("authorization").is_none());
    }
    probe.assert_clean();
    // Everything the CLI asked of the API is on the proxy's allow-list (a refused request would
    // be here: 403, not forwarded).
    assert_eq!(called.refused, Vec::<String>::new());
    assert_eq!(
        files_containing(&[&home, &repo], &key),
        Vec::<PathBuf>::new(),
        "files holding the real key"
    );
    // The bill as metered at the wire (the CLI's own agrees): claude-sonnet-4-5 at 3 / 15 USD
    // per million tokens for 1000 + 1200 input and 40 + 15 output tokens.
    assert_eq!(reply.usage.input_tokens, 2200);
    assert_eq!(reply.usage.output_tokens, 55);
    let want = (2200.0 * 3.0 + 55.0 * 15.0) / 1e6;
    assert!(
        (reply.usage.usd - want).abs() < 1e-9,
        "cost {} != {want}",
        reply.usage.usd
    );
}

/// The Responses API as codex drives it: streamed; the first turn calls `exec_command`, the one
/// carrying its `function_call_output` gets the final message.
struct CodexTurns {
    seen: Mutex<u32>,
    probe: Option<Probe>,
}

impl Respond for CodexTurns {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let model = body["model"].as_str().unwrap_or("gpt-5").to_string();
        let has_output = body["input"]
            .as_array()
            .is_some_and(|i| i.iter().any(|x| x["type"] == "function_call_output"));
        let n = {
            let mut seen = self.seen.lock().expect("lock");
            *seen += 1;
            *seen
        };
        if let Some(p) = &self.probe {
            p.record();
        }
        let id = format!("resp_fake_{n}");
        if has_output {
            let message = json!({"type": "message", "id": format!("msg_fake_{n}"), "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Created made-by-codex.txt.", "annotations": []}]});
            sse_reply(openai::stream(&id, &model, &[message], 200, 7))
        } else {
            let call = json!({"type": "function_call", "id": format!("fc_fake_{n}"), "call_id": "call_fake_1",
                "name": "exec_command", "status": "completed",
                "arguments": json!({"cmd": "printf 'written by the real codex CLI\\n' > made-by-codex.txt"}).to_string()});
            sse_reply(openai::stream(&id, &model, &[call], 300, 30))
        }
    }
}

/// A fake Responses API scripted for codex.
fn codex_fake(probe: Option<Probe>) -> Fake {
    let fake = Fake::start();
    fake.mount(
        Mock::given(method("POST"))
            .and(path("/v1/responses"))
            .respond_with(CodexTurns {
                seen: Mutex::new(0),
                probe,
            }),
    );
    fake.mount(
        Mock::given(wiremock::matchers::any())
            .respond_with(ResponseTemplate::new(404).set_body_string("{}"))
            .with_priority(100),
    );
    fake
}

/// The configuration of a `codex` agent running the real CLI with `env` (YAML lines).
fn codex_config(repo: &Path, home: &Path, codex_home: &Path, extra: &str) -> Config {
    let codex = real_cli("codex");
    let yaml = format!(
        "agents:\n  claude: {{ kind: claude-cli }}\n  codex:\n    kind: codex-cli\n    binary: \"{}\"\n    model: gpt-5\n    timeout_s: 180\n{extra}    env:\n      CODEX_HOME: \"{}\"\n      HOME: \"{}\"\n",
        codex.display(),
        codex_home.display(),
        home.display()
    );
    Config::parse(&yaml, &repo.join(".specs/pipeline.yml")).expect("valid config")
}

fn responses_turns(fake: &Fake) -> Vec<Request> {
    fake.requests()
        .into_iter()
        .filter(|r| r.url.path() == "/v1/responses")
        .collect()
}

#[test]
fn real_codex_cli_runs_a_scripted_tool_call_through_the_proxy_without_the_real_key() {
    let (tmp, repo, home) = workspace();
    let key = unique_key("sk-proj");
    let probe = Probe::new(&key, "OPENAI_API_KEY=sk-spec-orchestrate-proxy-");
    let fake = codex_fake(Some(probe.clone()));
    // The real endpoint and key are the usual variables; the agent never sees either.
    let codex_home = tmp.path().join("codex-home");
    crate::support::agent_writable(&codex_home);
    let mut config = codex_config(&repo, &home, &codex_home, "");
    if let Some(a) = config.agents.get_mut("codex") {
        a.env
            .insert("OPENAI_BASE_URL".into(), format!("{}/v1", fake.uri()));
        a.env.insert("OPENAI_API_KEY".into(), key.clone());
    }
    let called = in_lent(&repo, || {
        agents::call_noted(
            &config,
            &"codex".into(),
            true,
            &request(&repo, "Create made-by-codex.txt in the repository root."),
            &Redactor::default(),
            agents::CallLimits::default(),
        )
    });
    let reply = called
        .result
        .clone()
        .expect("the real CLI finished the scripted turn");

    assert_eq!(
        std::fs::read_to_string(repo.join("made-by-codex.txt"))
            .expect("codex's exec_command created the file"),
        "written by the real codex CLI\n"
    );
    assert_eq!(reply.text, "Created made-by-codex.txt.");
    let turns = responses_turns(&fake);
    assert_eq!(turns.len(), 2, "a tool turn and a final turn");
    for turn in &turns {
        assert_eq!(
            turn.headers.get("authorization").unwrap(),
            format!("Bearer {key}").as_str(),
            "the proxy→API leg carries the real key"
        );
    }
    probe.assert_clean();
    assert_eq!(
        called.refused,
        Vec::<String>::new(),
        "everything codex asked of the API is on the proxy's allow-list"
    );
    assert_eq!(
        files_containing(&[&home, &repo, &codex_home], &key),
        Vec::<PathBuf>::new(),
        "files holding the real key"
    );
    let thread = turns[0]
        .headers
        .get("session-id")
        .and_then(|v| v.to_str().ok())
        .expect("codex sends its thread id")
        .to_string();
    assert_eq!(reply.session_id.as_deref(), Some(thread.as_str()));
    // codex reports no cost: the proxy metered both exchanges at the wire (300 + 200 input,
    // 30 + 7 output tokens) and priced them at gpt-5's list price, exactly.
    assert_eq!(reply.usage.input_tokens, 500);
    assert_eq!(reply.usage.output_tokens, 37);
    let want = (500.0 * 1.25 + 37.0 * 10.0) / 1e6;
    assert!(
        (reply.usage.usd - want).abs() < 1e-12,
        "cost {} != {want}",
        reply.usage.usd
    );
}

#[test]
fn real_codex_cli_with_proxy_off_uses_its_own_provider_and_key() {
    let (tmp, repo, home) = workspace();
    let fake = codex_fake(None);
    // codex reaches a non-OpenAI endpoint through a custom model provider in
    // $CODEX_HOME/config.toml, speaking the Responses wire API: the proxy cannot front what it
    // does not know, so the agent says `proxy: false` and keeps its key.
    let codex_home = tmp.path().join("codex-home");
    crate::support::agent_writable(&codex_home);
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model_provider = \"fake\"\n\n[model_providers.fake]\nname = \"Local fake Responses API\"\nbase_url = \"{}/v1\"\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n",
            fake.uri()
        ),
    )
    .unwrap();
    let mut config = codex_config(&repo, &home, &codex_home, "    proxy: false\n");
    if let Some(a) = config.agents.get_mut("codex") {
        a.env
            .insert("OPENAI_API_KEY".into(), "sk-local-fake-key-000000".into());
    }
    let reply = in_lent(&repo, || {
        agents::call(
            &config,
            "codex",
            true,
            &request(&repo, "Create made-by-codex.txt in the repository root."),
            &Redactor::default(),
        )
    })
    .expect("the real CLI finished the scripted turn");

    assert_eq!(reply.text, "Created made-by-codex.txt.");
    let turns = responses_turns(&fake);
    assert_eq!(turns.len(), 2, "a tool turn and a final turn");
    assert_eq!(
        turns[0].headers.get("authorization").unwrap(),
        "Bearer sk-local-fake-key-000000",
        "without the proxy the CLI sends its own key"
    );
    let body: Value = serde_json::from_slice(&turns[0].body).unwrap();
    assert_eq!(body["model"], "gpt-5");
    // codex reports tokens only; the adapter prices them with the gpt-5 list price.
    assert_eq!(reply.usage.output_tokens, 37);
    assert!(reply.usage.input_tokens >= 500, "{:?}", reply.usage);
    let want = (reply.usage.input_tokens as f64 * 1.25 + 37.0 * 10.0) / 1e6;
    assert!(
        (reply.usage.usd - want).abs() < 1e-9,
        "cost {} != {want}",
        reply.usage.usd
    );
}

#[test]
fn real_codex_cli_request_that_would_pass_the_budget_is_refused_at_the_proxy() {
    let (tmp, repo, home) = workspace();
    let key = unique_key("sk-proj");
    let fake = codex_fake(None);
    let codex_home = tmp.path().join("codex-home");
    crate::support::agent_writable(&codex_home);
    let mut config = codex_config(&repo, &home, &codex_home, "");
    if let Some(a) = config.agents.get_mut("codex") {
        a.env
            .insert("OPENAI_BASE_URL".into(), format!("{}/v1", fake.uri()));
        a.env.insert("OPENAI_API_KEY".into(), key.clone());
    }
    // codex has no spend flag: only the proxy can hold it to what is left of the budget. Its
    // first request (instructions, tools and prompt: thousands of tokens) passes 0.0001 USD.
    let e = create_file(&config, "codex", &repo, 0.0001).expect_err("the proxy refuses the call");
    assert_eq!(
        e.category,
        spec_orchestrate::types::kinds::BlockerCategory::BudgetExhausted,
        "{e}"
    );
    assert!(
        e.detail
            .contains("refused a request of agent `codex` before forwarding it")
            && e.detail.contains("limits.budget_usd"),
        "{e}"
    );
    assert!(responses_turns(&fake).is_empty(), "nothing reached the API");
    assert!(!repo.join("made-by-codex.txt").exists());
}

#[test]
fn real_claude_cli_stops_itself_at_what_is_left_of_the_budget() {
    let (_tmp, repo, home) = workspace();
    let target = repo.join("made-by-claude.txt");
    // Without the proxy (it would refuse the first request before it left), the CLI's own
    // spend flag is what holds it.
    let (fake, config) = claude_with(
        &repo,
        &home,
        &target,
        ClaudeSetup {
            proxy: Some(false),
            ..ClaudeSetup::default()
        },
    );
    // The first turn alone costs 0.0036 USD; the pipeline has 0.001 USD left and says so with
    // `--max-budget-usd`.
    let e = create_file(&config, "claude", &repo, 0.001).expect_err("the CLI stops at its budget");
    assert_eq!(
        e.category,
        spec_orchestrate::types::kinds::BlockerCategory::BudgetExhausted,
        "{e}"
    );
    assert!(e.detail.contains("error_max_budget_usd"), "{e}");
    assert!(e.usage.usd > 0.001, "the spend is recorded: {:?}", e.usage);
    assert_eq!(
        messages_turns(&fake).len(),
        1,
        "no turn after the budget ran out"
    );
}

#[test]
fn real_claude_cli_answer_that_passes_the_budget_is_cut_mid_stream_by_the_proxy() {
    let (_tmp, repo, home) = workspace();
    let target = repo.join("made-by-claude.txt");
    // The request itself is cheap enough to be forwarded, but the answer's `message_start`
    // bills 200 000 input tokens (0.60 USD) against 0.30 USD left: the proxy cuts the stream
    // there, so the tool call behind it never reaches the CLI.
    let (fake, config) = claude_with(
        &repo,
        &home,
        &target,
        ClaudeSetup {
            first_input: 200_000,
            ..ClaudeSetup::default()
        },
    );
    let e = create_file(&config, "claude", &repo, 0.3).expect_err("the proxy cuts the call");
    assert_eq!(
        e.category,
        spec_orchestrate::types::kinds::BlockerCategory::BudgetExhausted,
        "{e}"
    );
    assert!(
        e.detail.contains("cut the answer to agent `claude`")
            && e.detail.contains("limits.budget_usd"),
        "{e}"
    );
    assert!(
        e.usage.usd >= 0.6,
        "the cut answer is billed: {:?}",
        e.usage
    );
    assert!(!target.exists(), "the tool call after the cut never ran");
    assert_eq!(
        messages_turns(&fake).len(),
        1,
        "a retry after the cut is refused before it is forwarded"
    );
}
