//! The REAL `claude` and `codex` CLIs (npm `@anthropic-ai/claude-code` and `@openai/codex`,
//! installed by `.ci/run` into `.tools/npm`), offline: each is pointed at a local fake of its
//! vendor's API that scripts one tool call writing a file and then a final answer. The tests
//! check that the file appeared and that the adapters parsed the CLIs' real output: the result
//! text, the cost, the tokens and the session id.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// A git repository in a temp dir, plus a home directory for the CLI's own files.
fn workspace() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    crate::support::git(&repo, &["init", "-q"]);
    (tmp, repo, home)
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
    }
}

/// The Messages API as Claude Code drives it: streamed turns; the first asks for the `Write`
/// tool, the one carrying its `tool_result` gets the final answer.
struct ClaudeTurns {
    file: String,
    seen: Mutex<u32>,
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
                1000,
                40,
            ))
        }
    }
}

/// A fake Messages API scripted for Claude Code, and the configuration of a `claude` agent that
/// runs the real CLI against it.
fn claude_against_fake(repo: &Path, home: &Path, target: &Path) -> (Fake, Config) {
    let claude = real_cli("claude");
    let fake = Fake::start();
    fake.mount(
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(ClaudeTurns {
                file: target.display().to_string(),
                seen: Mutex::new(0),
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
    let yaml = format!(
        "agents:\n  claude:\n    kind: claude-cli\n    binary: \"{}\"\n    model: claude-sonnet-4-5\n    timeout_s: 180\n    env:\n      ANTHROPIC_BASE_URL: \"{}\"\n      ANTHROPIC_API_KEY: sk-ant-local-fake-key-000000\n      HOME: \"{}\"\n      DISABLE_TELEMETRY: \"1\"\n      DISABLE_AUTOUPDATER: \"1\"\n      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: \"1\"\n  codex: {{ kind: codex-cli }}\n",
        claude.display(),
        fake.uri(),
        home.display()
    );
    let config = Config::parse(&yaml, &repo.join(".specs/pipeline.yml")).expect("valid config");
    (fake, config)
}

#[test]
fn real_claude_cli_runs_a_scripted_tool_call_against_a_local_messages_api() {
    let (_tmp, repo, home) = workspace();
    let target = repo.join("made-by-claude.txt");
    let (fake, config) = claude_against_fake(&repo, &home, &target);
    let reply = agents::call(
        &config,
        "claude",
        true,
        &request(&repo, "Create made-by-claude.txt in the repository root."),
        &Redactor::default(),
    )
    .expect("the real CLI finished the scripted turn");

    assert_eq!(
        std::fs::read_to_string(&target).expect("claude's Write tool created the file"),
        "written by the real claude CLI\n"
    );
    assert_eq!(reply.text, "Created made-by-claude.txt.");
    let requests = fake.requests();
    let turns: Vec<&Request> = requests
        .iter()
        .filter(|r| r.url.path() == "/v1/messages")
        .collect();
    assert!(turns.len() >= 2, "a tool turn and a final turn");
    let session = turns[0]
        .headers
        .get("x-claude-code-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("claude sends its session id")
        .to_string();
    assert_eq!(reply.session_id.as_deref(), Some(session.as_str()));
    assert_eq!(
        turns[0].headers.get("x-api-key").unwrap(),
        "sk-ant-local-fake-key-000000"
    );
    // The adapter takes the CLI's own bill: claude-sonnet-4-5 at 3 / 15 USD per million tokens
    // for 1000 + 1200 input and 40 + 15 output tokens.
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

#[test]
fn real_codex_cli_runs_a_scripted_tool_call_against_a_local_responses_api() {
    let codex = real_cli("codex");
    let (tmp, repo, home) = workspace();
    let fake = Fake::start();
    fake.mount(
        Mock::given(method("POST"))
            .and(path("/v1/responses"))
            .respond_with(CodexTurns {
                seen: Mutex::new(0),
            }),
    );
    fake.mount(
        Mock::given(wiremock::matchers::any())
            .respond_with(ResponseTemplate::new(404).set_body_string("{}"))
            .with_priority(100),
    );
    // codex reaches a non-OpenAI endpoint through a custom model provider in
    // $CODEX_HOME/config.toml, speaking the Responses wire API.
    let codex_home = tmp.path().join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model_provider = \"fake\"\n\n[model_providers.fake]\nname = \"Local fake Responses API\"\nbase_url = \"{}/v1\"\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n",
            fake.uri()
        ),
    )
    .unwrap();
    let yaml = format!(
        "agents:\n  claude: {{ kind: claude-cli }}\n  codex:\n    kind: codex-cli\n    binary: \"{}\"\n    model: gpt-5\n    timeout_s: 180\n    env:\n      CODEX_HOME: \"{}\"\n      HOME: \"{}\"\n      OPENAI_API_KEY: sk-local-fake-key-000000\n",
        codex.display(),
        codex_home.display(),
        home.display()
    );
    let config = Config::parse(&yaml, &repo.join(".specs/pipeline.yml")).expect("valid config");
    let reply = agents::call(
        &config,
        "codex",
        true,
        &request(&repo, "Create made-by-codex.txt in the repository root."),
        &Redactor::default(),
    )
    .expect("the real CLI finished the scripted turn");

    assert_eq!(
        std::fs::read_to_string(repo.join("made-by-codex.txt"))
            .expect("codex's exec_command created the file"),
        "written by the real codex CLI\n"
    );
    assert_eq!(reply.text, "Created made-by-codex.txt.");
    let requests = fake.requests();
    let turns: Vec<&Request> = requests
        .iter()
        .filter(|r| r.url.path() == "/v1/responses")
        .collect();
    assert_eq!(turns.len(), 2, "a tool turn and a final turn");
    assert_eq!(
        turns[0].headers.get("authorization").unwrap(),
        "Bearer sk-local-fake-key-000000"
    );
    let body: Value = serde_json::from_slice(&turns[0].body).unwrap();
    assert_eq!(body["model"], "gpt-5");
    let thread = turns[0]
        .headers
        .get("session-id")
        .and_then(|v| v.to_str().ok())
        .expect("codex sends its thread id")
        .to_string();
    assert_eq!(reply.session_id.as_deref(), Some(thread.as_str()));
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
fn real_claude_cli_stops_itself_at_what_is_left_of_the_budget() {
    let (_tmp, repo, home) = workspace();
    let target = repo.join("made-by-claude.txt");
    let (fake, config) = claude_against_fake(&repo, &home, &target);
    // The first turn alone costs 0.0036 USD; the pipeline has 0.001 USD left and says so with
    // `--max-budget-usd`.
    let e = agents::call_with(
        &config,
        "claude",
        true,
        &request(&repo, "Create made-by-claude.txt in the repository root."),
        &Redactor::default(),
        agents::CallLimits {
            budget_left: Some(0.001),
        },
    )
    .expect_err("the CLI stops at its budget");
    assert_eq!(e.category, agents::BlockerCategory::BudgetExhausted, "{e}");
    assert!(e.detail.contains("error_max_budget_usd"), "{e}");
    assert!(e.usage.usd > 0.001, "the spend is recorded: {:?}", e.usage);
    assert_eq!(
        fake.requests()
            .iter()
            .filter(|r| r.url.path() == "/v1/messages")
            .count(),
        1,
        "no turn after the budget ran out"
    );
}
