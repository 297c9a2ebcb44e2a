//! The `anthropic` and `openai` backends through the real binary, against local fake APIs that
//! speak the vendors' wire formats: retries on 429 (honouring `Retry-After`) and 529, no retry
//! on a spend cap or an exhausted quota (the run stops with a draft), malformed bodies and
//! unfinished answers recorded as failures with their category, and an HTTP author whose file
//! blocks are written only inside the spec directory.

use std::time::Duration;

use serde_json::{Value, json};
use spec_orchestrate::events::Event;
use spec_orchestrate::state::State;
use spec_orchestrate::types::kinds::{BlockerCategory, CallRole, Gate};
use spec_orchestrate::types::{Phase, Role, Signal, StopKind};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

use crate::fakes::{self, EMPTY_ENVELOPE, Fake, Script, anthropic, openai};
use crate::support::{
    Demo, JSON_PROGRESS, config_with_api, demo_with_api, events_of, run_until_ok, stopped_messages,
};

/// A key that must be sent in the header and nowhere else.
pub const KEY: &str = "sk-ant-api03-LOCALTESTKEY-0123456789abcdefghij";

/// The demo whose spec reviewer is the HTTP agent `api` (its YAML flow-mapping body).
fn demo_reviewed_by(api: &str) -> Demo {
    demo_with_api(api, &[("spec_reviewer", "api")])
}

/// Runs `demo` up to spec_review with the key in `key_env`; the run must succeed.
fn run_until_review(demo: &Demo, key_env: &str) {
    run_until_ok(demo.run_cmd(), "spec_review", &[(key_env, KEY)]);
}

/// Mounts `script` on `route`, and a catch-all 500 that any other call hits (and fails on).
fn mount_script(fake: &Fake, route: &str, script: Script, expect: Option<u64>) {
    let mut mock = Mock::given(method("POST"))
        .and(path(route))
        .respond_with(script);
    if let Some(n) = expect {
        mock = mock.expect(n);
    }
    fake.mount(mock);
    fake.mount(
        Mock::given(wiremock::matchers::any())
            .respond_with(ResponseTemplate::new(500).set_body_string("unexpected call"))
            .with_priority(100)
            .expect(0),
    );
}

fn failures_of(state: &State, agent: &str) -> Vec<BlockerCategory> {
    state
        .agent_failures
        .iter()
        .filter(|f| f.agent == agent)
        .map(|f| f.category)
        .collect()
}

/// The text of a Messages API request's user turn: its blocks (documents, then instructions)
/// joined.
fn user_text(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_array()
        .expect("the user turn is a list of blocks")
        .iter()
        .map(|b| b["text"].as_str().expect("a text block"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `text` quotes the file `path` in a sealed block: `<<<FILE-<12 hex> path`, closed by
/// the same marker (`FILE-<12 hex>>>>`).
pub fn quotes_file(text: &str, path: &str) -> bool {
    let open = regex::Regex::new(&format!(
        r"<<<FILE-([0-9a-f]{{12}}) {}\n",
        regex::escape(path)
    ))
    .expect("regex");
    open.captures(text)
        .is_some_and(|c| text.contains(&format!("\nFILE-{}>>>", &c[1])))
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn anthropic_429_with_retry_after_1_is_retried_after_at_least_a_second() {
    let fake = Fake::start();
    let (script, times) = Script::new(vec![
        fakes::json_reply(429, &anthropic::error("rate_limit")).insert_header("retry-after", "1"),
        anthropic::ok(EMPTY_ENVELOPE, 1500, 150),
    ]);
    mount_script(&fake, "/v1/messages", script, Some(2));
    // No base_url in the configuration: ANTHROPIC_BASE_URL points the agent at the fake.
    // A 20 s backoff base: the backoff's first wait (equal jitter) is 10 to 20 s, far above the
    // 1 s Retry-After, so the bound below tells them apart with room for a loaded machine.
    let demo = demo_reviewed_by("kind: anthropic, retry_base_ms: 20000");
    let uri = fake.uri();
    let env = [("ANTHROPIC_API_KEY", KEY), ("ANTHROPIC_BASE_URL", &uri)];
    let env = [env[0], env[1], JSON_PROGRESS];
    let events = events_of(&run_until_ok(demo.run_cmd(), "spec_review", &env));
    let times = times.lock().expect("times").clone();
    assert_eq!(times.len(), 2, "one 429, one retry");
    let gap = times[1] - times[0];
    assert!(
        gap >= Duration::from_secs(1),
        "Retry-After: 1 must be honoured, waited {gap:?}"
    );
    assert!(
        gap < Duration::from_secs(10),
        "Retry-After wins over the 20 s backoff base, waited {gap:?}"
    );
    let retries: Vec<(&str, f64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Retry {
                status, wait_secs, ..
            } => Some((status.as_str(), *wait_secs)),
            _ => None,
        })
        .collect();
    assert_eq!(retries, [("429", 1.0)], "{events:#?}");

    // What was sent: the documented headers, the key only in x-api-key, a JSON schema.
    let req = &fake.requests()[0];
    assert_eq!(req.headers.get("x-api-key").unwrap(), KEY);
    assert_eq!(req.headers.get("anthropic-version").unwrap(), "2023-06-01");
    let body: Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["output_config"]["format"]["type"], "json_schema");
    assert_eq!(
        body["output_config"]["format"]["schema"]["properties"]["findings"]["items"]["properties"]
            ["severity"]["enum"],
        json!(["critical", "improvement", "minor"])
    );
    let prompt = user_text(&body);
    assert!(
        quotes_file(&prompt, ".specs/add-a-dark-mode-toggle/requirement.md"),
        "the documents are quoted for a model that cannot read files"
    );
    assert!(
        prompt.contains("[REQ-001]"),
        "requirement.md content quoted"
    );
    assert!(!String::from_utf8_lossy(&req.body).contains(KEY));

    let state = demo.state();
    assert_eq!(state.rounds.spec_review[0].reviewer, "api");
    assert_eq!(state.rounds.spec_review[0].gate, Gate::Pass);
    assert!(
        failures_of(&state, "api").is_empty(),
        "a retried 429 is not a failure"
    );
    let usage = &state.usage["api"];
    assert_eq!(usage.calls, 1);
    assert_eq!(usage.input_tokens, 1500);
    assert_eq!(usage.output_tokens, 150);
    // claude-sonnet-4-5 list price: 3 USD in, 15 USD out per million tokens.
    let usd = usage.usd;
    assert!(
        (usd - (1500.0 * 3.0 + 150.0 * 15.0) / 1e6).abs() < 1e-9,
        "{usd}"
    );
    // calls: the spec author, the e2e_runner converting T-A05's browser steps, then the reviewer.
    let call = &state.calls[2];
    assert_eq!(call.role, CallRole::Role(Role::SpecReviewer));
    assert_eq!(call.agent, "api");
    assert_eq!(
        call.session_id.as_deref(),
        Some("msg_01XFDUDYJgAACzvnptvVoYEL")
    );
}

#[test]
fn anthropic_529_three_times_then_200_succeeds() {
    let fake = Fake::start();
    let overloaded = fakes::json_reply(529, &anthropic::error("overloaded"));
    let (script, times) = Script::new(vec![
        overloaded.clone(),
        overloaded.clone(),
        overloaded,
        anthropic::ok(EMPTY_ENVELOPE, 1500, 150),
    ]);
    mount_script(&fake, "/v1/messages", script, Some(4));
    let demo = demo_reviewed_by(&format!(
        "kind: anthropic, base_url: \"{}\", retry_base_ms: 40",
        fake.uri()
    ));
    run_until_review(&demo, "ANTHROPIC_API_KEY");
    let times = times.lock().expect("times").clone();
    assert_eq!(times.len(), 4);
    // Backoff doubles with jitter between half and all of 40, 80, 160 ms.
    for (i, min_ms) in [20u64, 40, 80].into_iter().enumerate() {
        let gap = times[i + 1] - times[i];
        assert!(gap >= Duration::from_millis(min_ms), "gap {i}: {gap:?}");
    }
    let state = demo.state();
    assert_eq!(state.rounds.spec_review[0].gate, Gate::Pass);
    assert!(failures_of(&state, "api").is_empty());
    assert_eq!(state.usage["api"].calls, 1);
}

#[test]
fn anthropic_still_overloaded_after_the_retries_is_a_rate_limited_failure() {
    let fake = Fake::start();
    let (script, _) = Script::new(vec![fakes::json_reply(
        529,
        &anthropic::error("overloaded"),
    )]);
    // 2 calls (the agent's try and its one retry) × (1 + max_retries 1) requests.
    mount_script(&fake, "/v1/messages", script, Some(4));
    let demo = demo_reviewed_by(&format!(
        "kind: anthropic, base_url: \"{}\", retry_base_ms: 10, max_retries: 1",
        fake.uri()
    ));
    run_until_review(&demo, "ANTHROPIC_API_KEY");
    let state = demo.state();
    assert_eq!(
        failures_of(&state, "api"),
        [BlockerCategory::RateLimited, BlockerCategory::RateLimited]
    );
    // The failed round is recorded as failed, and arbitration handed the role on.
    assert_eq!(state.rounds.spec_review[0].gate, Gate::Fail);
    assert!(
        state.rounds.spec_review[0]
            .failure
            .as_ref()
            .unwrap()
            .contains("529")
    );
    assert_eq!(state.arbitrations[0].signal, Signal::AgentFailure);
    assert_eq!(state.arbitrations[0].from.as_deref(), Some("api"));
}

#[test]
fn anthropic_spend_cap_429_stops_the_run_without_retry_and_lands_a_draft() {
    let fake = Fake::start();
    let (script, _) = Script::new(vec![fakes::json_reply(
        429,
        &anthropic::error("spend_limit"),
    )]);
    // Exactly one request: neither the HTTP retries nor the agent retry may repeat it.
    mount_script(&fake, "/v1/messages", script, Some(1));
    let demo = demo_reviewed_by(&format!(
        "kind: anthropic, base_url: \"{}\", retry_base_ms: 10",
        fake.uri()
    ));
    let out = demo
        .run_cmd()
        .env("ANTHROPIC_API_KEY", KEY)
        .env(JSON_PROGRESS.0, JSON_PROGRESS.1)
        .output()
        .expect("binary runs");
    let stderr = stderr_of(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a stopped run is a draft: {stderr}"
    );
    // The run stopped (and landed a draft); the words are what the person reads of why.
    let stopped = stopped_messages(&events_of(&stderr)).concat();
    assert!(stopped.contains("spend-cap or quota"), "{stderr}");
    assert!(stopped.contains("never retried"), "{stderr}");
    assert!(stopped.contains("enforced_spend_limit_reached"), "{stderr}");
    fake.verify();

    let state = demo.state();
    assert_eq!(state.stop.as_ref().unwrap().kind, StopKind::Quota);
    assert_eq!(state.stop.as_ref().unwrap().phase, Phase::SpecReview);
    assert_eq!(state.phase(), Phase::SpecReview, "resume continues here");
    assert_eq!(
        failures_of(&state, "api"),
        [BlockerCategory::QuotaExhausted]
    );
    assert!(
        state.arbitrations.is_empty(),
        "a spend cap is not handed to the opposite agent"
    );
    assert!(state.pr.as_ref().unwrap().draft);
    let body = std::fs::read_to_string(demo.feature_dir().join("pr-body.md")).unwrap();
    crate::support::assert_contains_all(
        &body,
        &["draft", "Run stopped at `spec_review`", "spend cap / quota"],
    );
}

#[test]
fn openai_insufficient_quota_429_stops_the_run_without_retry() {
    let fake = Fake::start();
    let (script, _) = Script::new(vec![fakes::json_reply(
        429,
        &openai::error("insufficient_quota"),
    )]);
    mount_script(&fake, "/v1/responses", script, Some(1));
    let demo = demo_reviewed_by("kind: openai, retry_base_ms: 10");
    // OPENAI_BASE_URL in the SDKs' spelling, ending in /v1.
    let out = demo
        .run_cmd()
        .env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.uri()))
        .output()
        .expect("binary runs");
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("insufficient_quota"), "{stderr}");
    fake.verify();
    let state = demo.state();
    assert_eq!(state.stop.as_ref().unwrap().kind, StopKind::Quota);
    assert_eq!(
        failures_of(&state, "api"),
        [BlockerCategory::QuotaExhausted]
    );
    let req = &fake.requests()[0];
    assert_eq!(
        req.headers.get("authorization").unwrap(),
        &format!("Bearer {KEY}")
    );
}

#[test]
fn openai_malformed_json_body_is_a_recorded_failure() {
    let fake = Fake::start();
    let (script, _) = Script::new(vec![
        ResponseTemplate::new(200)
            .insert_header("content-type", "application/json")
            .set_body_string(
                "{\"id\": \"resp_1\", \"object\": \"response\", \"output\": [{\"type\": \"mess",
            ),
    ]);
    // The agent's try and its one retry; a 200 is never retried at the HTTP level.
    mount_script(&fake, "/v1/responses", script, Some(2));
    let demo = demo_reviewed_by(&format!(
        "kind: openai, model: gpt-5-mini, base_url: \"{}\"",
        fake.uri()
    ));
    run_until_review(&demo, "OPENAI_API_KEY");
    fake.verify();
    let state = demo.state();
    assert_eq!(
        failures_of(&state, "api"),
        [
            BlockerCategory::MalformedOutput,
            BlockerCategory::MalformedOutput
        ]
    );
    let detail = &state.agent_failures[0].detail;
    assert!(detail.contains("not a response"), "{detail}");
    assert_eq!(state.rounds.spec_review[0].gate, Gate::Fail);
    assert!(state.rounds.spec_review[0].failure.is_some());
    assert_eq!(state.usage["api"].calls, 2, "failed calls are counted");
    // The body sent: model, strict json_schema, the key only in the header.
    let body = &fake.bodies()[0];
    assert_eq!(body["model"], "gpt-5-mini");
    assert_eq!(body["text"]["format"]["type"], "json_schema");
    assert_eq!(body["text"]["format"]["strict"], true);
    assert_eq!(body["text"]["format"]["name"], "review_envelope");
}

#[test]
fn unfinished_answers_are_failures_with_their_category() {
    // Anthropic: stop_reason max_tokens, then refusal.
    let fake = Fake::start();
    let (script, _) = Script::new(vec![
        fakes::json_reply(
            200,
            &anthropic::message("{\"findings\": [{\"id\"", 1500, 16000, "max_tokens"),
        ),
        fakes::json_reply(200, &anthropic::message("", 1500, 5, "refusal")),
    ]);
    mount_script(&fake, "/v1/messages", script, Some(2));
    let demo = demo_reviewed_by(&format!("kind: anthropic, base_url: \"{}\"", fake.uri()));
    run_until_review(&demo, "ANTHROPIC_API_KEY");
    let state = demo.state();
    assert_eq!(
        failures_of(&state, "api"),
        [BlockerCategory::MaxTokens, BlockerCategory::Refusal]
    );
    // Truncated output was still billed.
    assert_eq!(state.usage["api"].output_tokens, 16005);

    // OpenAI: incomplete at max_output_tokens, then a refusal part.
    let fake = Fake::start();
    let mut incomplete = openai::response("{\"findings\": [", 1500, 32000);
    incomplete["status"] = json!("incomplete");
    incomplete["incomplete_details"] = json!({"reason": "max_output_tokens"});
    let mut refused = openai::response("", 1500, 20);
    refused["output"][1]["content"] =
        json!([{"type": "refusal", "refusal": "I can't help with that."}]);
    let (script, _) = Script::new(vec![
        fakes::json_reply(200, &incomplete),
        fakes::json_reply(200, &refused),
    ]);
    mount_script(&fake, "/v1/responses", script, Some(2));
    let demo = demo_reviewed_by(&format!("kind: openai, base_url: \"{}\"", fake.uri()));
    run_until_review(&demo, "OPENAI_API_KEY");
    let state = demo.state();
    assert_eq!(
        failures_of(&state, "api"),
        [BlockerCategory::MaxTokens, BlockerCategory::Refusal]
    );
}

#[test]
fn http_author_returns_file_blocks_written_only_inside_the_spec_dir() {
    let demo = Demo::new();
    let spec = ".specs/add-a-dark-mode-toggle";
    let escaping = json!({"files": [
        {"path": "requirement.md", "content": "# must not be written\n"},
        {"path": "../../app.js", "content": "stolen();\n"}
    ], "summary": "tried to escape"});
    let good = json!({"files": [
        {"path": "requirement.md", "content": "# Requirements\n\n- [REQ-001] The page has a dark mode toggle.\n"},
        {"path": format!("{spec}/design.md"), "content": "# Design\n\n| Req ID | Requirement | Design Component |\n|---|---|---|\n| REQ-001 | toggle | index.html |\n"},
        {"path": "tasks.md", "content": "# Tasks\n\n- [ ] T001: Add the toggle\n  - kind: ui\n  - requirements: REQ-001\n"},
        {"path": "test.md", "content": "# Tests\n\n## T-A01: [REQ-001] Toggle exists\n- Verify: file-check\n- File: index.html\n- Contains: theme-toggle\n"}
    ], "summary": "Wrote the four documents"});
    let fake = Fake::start();
    let (script, _) = Script::new(vec![
        anthropic::ok(&escaping.to_string(), 900, 400),
        anthropic::ok(&good.to_string(), 900, 800),
    ]);
    mount_script(&fake, "/v1/messages", script, Some(2));
    demo.write_config(&config_with_api(
        &demo,
        &format!(
            "kind: anthropic, model: claude-haiku-4-5, base_url: \"{}\"",
            fake.uri()
        ),
        &[("spec_author", "api")],
        "",
    ));
    let app_before = std::fs::read_to_string(demo.repo.join("app.js")).unwrap();
    let out = demo
        .run_cmd()
        .args(["--until", "spec_generate"])
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .expect("binary runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        std::fs::read_to_string(demo.repo.join("app.js")).unwrap(),
        app_before,
        "a block outside the spec dir is never written"
    );
    let state = demo.state();
    assert_eq!(
        failures_of(&state, "api"),
        [BlockerCategory::SandboxViolation]
    );
    let detail = &state.agent_failures[0].detail;
    assert!(
        detail.contains("../../app.js") && detail.contains("nothing was written"),
        "{detail}"
    );
    let dir = demo.feature_dir();
    let req = std::fs::read_to_string(dir.join("requirement.md")).unwrap();
    assert!(
        req.contains("[REQ-001] The page has a dark mode toggle."),
        "{req}"
    );
    assert!(
        std::fs::read_to_string(dir.join("design.md"))
            .unwrap()
            .contains("| REQ-001 |")
    );
    assert!(dir.join("tasks.md").is_file() && dir.join("test.md").is_file());
    // The author's schema and the instructions that go with it.
    let body = &fake.bodies()[0];
    assert_eq!(body["model"], "claude-haiku-4-5");
    assert_eq!(
        body["output_config"]["format"]["schema"]["required"],
        json!(["files", "summary"])
    );
    let prompt = user_text(body);
    assert!(
        prompt.contains("Return every document you write or change"),
        "{prompt}"
    );
    assert!(prompt.contains("(this file does not exist yet)"));
}

#[test]
fn an_overridden_prompt_template_reaches_the_http_model() {
    let fake = Fake::start();
    let (script, _) = Script::new(vec![anthropic::ok(EMPTY_ENVELOPE, 100, 10)]);
    mount_script(&fake, "/v1/messages", script, None);
    let demo = demo_reviewed_by(&format!("kind: anthropic, base_url: \"{}\"", fake.uri()));
    let prompts = demo.repo.join(".specs/prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(
        prompts.join("http_envelope.md"),
        "HOUSE RULES FOR {{role}}\n{{prompt}}\nFILES:\n{{files}}",
    )
    .unwrap();
    std::fs::write(
        prompts.join("http_system.md"),
        "You are our reviewer ({{role}}).",
    )
    .unwrap();
    crate::support::git(&demo.repo, &["add", "-A"]);
    crate::support::git(&demo.repo, &["commit", "-qm", "house prompts"]);
    run_until_review(&demo, "ANTHROPIC_API_KEY");
    let body = &fake.bodies()[0];
    assert_eq!(body["system"], "You are our reviewer (spec_reviewer).");
    let prompt = user_text(body);
    let instructions = body["messages"][0]["content"][1]["text"].as_str().unwrap();
    assert!(
        instructions.starts_with("HOUSE RULES FOR spec_reviewer\n"),
        "{instructions}"
    );
    assert!(
        instructions.contains("FILES:\n(quoted above)"),
        "an override naming {{{{files}}}} points at the quoted block: {instructions}"
    );
    assert!(quotes_file(
        &prompt,
        ".specs/add-a-dark-mode-toggle/design.md"
    ));
}

#[test]
fn configuration_refuses_unpriced_models_and_text_only_implementers() {
    use spec_orchestrate::config::Config;
    let file = std::path::Path::new("/repo/.specs/pipeline.yml");
    let unpriced = "agents:\n  claude: { kind: claude-cli }\n  codex: { kind: codex-cli }\n  api: { kind: openai, model: my-finetune }\n";
    let e = Config::parse(unpriced, file).unwrap_err();
    assert_eq!(e.key, "agents.api.model");
    assert_eq!(e.line, Some(4));
    assert!(
        e.problem.contains("\"my-finetune\"") && e.problem.contains("no price"),
        "{e}"
    );
    assert!(e.help.contains("prices: { my-finetune: { input:"), "{e}");
    let priced = format!("{unpriced}prices:\n  my-finetune: {{ input: 2.0, output: 8.0 }}\n");
    let c = Config::parse(&priced, file).expect("a configured price makes it valid");
    assert_eq!(c.price_of(&c.agents["api"]).unwrap().1.output, 8.0);

    let bad_price = "prices:\n  gpt-5: { input: -1, output: 10 }\n";
    let e = Config::parse(bad_price, file).unwrap_err();
    assert_eq!(e.key, "prices.gpt-5.input");

    let implementer = "agents:\n  claude: { kind: claude-cli }\n  codex: { kind: codex-cli }\n  api: { kind: anthropic }\nroles:\n  impl_backend: api\n";
    let e = Config::parse(implementer, file).unwrap_err();
    assert_eq!(e.key, "roles.impl_backend");
    assert!(e.problem.contains("cannot edit code"), "{e}");

    let cli_with_http_key =
        "agents:\n  claude: { kind: claude-cli, max_retries: 3 }\n  codex: { kind: codex-cli }\n";
    let e = Config::parse(cli_with_http_key, file).unwrap_err();
    assert_eq!(e.key, "agents.claude.max_retries");

    let key_in_file = "agents:\n  claude: { kind: claude-cli }\n  codex: { kind: codex-cli }\n  api: { kind: anthropic, api_key_env: \"sk-ant-123\" }\n";
    let e = Config::parse(key_in_file, file).unwrap_err();
    assert_eq!(e.key, "agents.api.api_key_env");
    assert!(e.help.contains("never put the key itself"), "{e}");
}

#[test]
fn a_missing_api_key_reassigns_the_role_in_auto_mode_and_says_so() {
    let demo = demo_reviewed_by(
        "kind: anthropic, base_url: \"http://127.0.0.1:9\", api_key_env: MY_TEAM_ANTHROPIC_KEY, opposite: reviewer",
    );
    let out = demo
        .run_cmd()
        .args(["--until", "intake"])
        .env_remove("MY_TEAM_ANTHROPIC_KEY")
        .env(JSON_PROGRESS.0, JSON_PROGRESS.1)
        .output()
        .expect("binary runs");
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "{stderr}");
    let state = demo.state();
    let o = &state.role_overrides[0];
    assert_eq!(o.role, Role::SpecReviewer);
    assert_eq!(o.from, "api");
    assert_eq!(o.to, "reviewer");
    assert_eq!(
        o.reason,
        "agent `api`: its API key variable MY_TEAM_ANTHROPIC_KEY is not set"
    );
    // The reassignment is told as it happens (the sentence warns of reduced assurance).
    assert!(
        events_of(&stderr).iter().any(|e| matches!(
            e,
            Event::RoleReassigned { role: Role::SpecReviewer, from, to, .. }
                if from == "api" && to == "reviewer"
        )),
        "{stderr}"
    );
}

/// A spec review loop against an `anthropic` reviewer whose API caches like the real one: the
/// spec does not change between rounds, so every round sends the same marked prefix (system
/// text and quoted documents), byte for byte; the first round writes it to the cache, the next
/// two read it, and each call is priced at the cache prices of what the API reported.
#[test]
fn three_review_rounds_of_an_unchanged_spec_send_one_cached_prefix_priced_as_cache_reads() {
    let fake = Fake::start();
    let finding = |section: &str| {
        json!({"findings": [{"id": "F1", "requirement_id": "REQ-001", "severity": "critical",
            "file": "design.md", "section": section, "gist": format!("{section} is vague"),
            "argument": "it cannot be built as written", "suggestion": "say what it does"}],
            "converged": false, "remaining_disputes": []})
        .to_string()
    };
    let answers = [
        finding("Architecture"),
        finding("Glossary"),
        EMPTY_ENVELOPE.to_string(),
    ];
    let answers: Vec<&str> = answers.iter().map(String::as_str).collect();
    // claude-sonnet-4-5 caches prefixes of 1,024 tokens and more.
    let (api, prefixes) = anthropic::CachingApi::new(&answers, 1024);
    fake.mount(
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(api)
            .expect(3),
    );
    // A spec as long as real ones are: the author appends a few kilobytes of notes.
    let notes: String = (1..=60)
        .map(|n| format!("- Note {n}: the check tool keeps behaviour {n} as described above.\n"))
        .collect();
    let sc = crate::support::Scenario::new(
        json!({"requirement_appendix": format!("\n## Notes\n\n{notes}")}),
        "",
    );
    let config = std::fs::read_to_string(sc.demo.repo.join(".specs/pipeline.yml")).unwrap();
    let config = config
        .replace(
            "agents:\n",
            &format!(
                "agents:\n  api: {{ kind: anthropic, base_url: \"{}\" }}\n",
                fake.uri()
            ),
        )
        .replace("spec_reviewer: beta", "spec_reviewer: api");
    sc.demo.write_config(&config);
    run_until_ok(sc.run_cmd(), "spec_review", &[("ANTHROPIC_API_KEY", KEY)]);
    fake.verify();

    let state = sc.state();
    let gates: Vec<Gate> = state.rounds.spec_review.iter().map(|r| r.gate).collect();
    assert_eq!(gates, [Gate::Fail, Gate::Fail, Gate::Pass], "three rounds");

    // Every round marked the same prefix: the system text and the documents, nothing else.
    let prefixes = prefixes.lock().unwrap().clone();
    assert_eq!(prefixes.len(), 3);
    assert!(
        prefixes.iter().all(|p| p == &prefixes[0]),
        "the marked prefix changed between rounds"
    );
    assert!(
        quotes_file(&prefixes[0], ".specs/add-a-dark-mode-toggle/requirement.md"),
        "{}",
        prefixes[0]
    );
    assert!(
        prefixes[0].contains("Note 60"),
        "the whole spec is in the prefix"
    );
    for (i, body) in fake.bodies().iter().enumerate() {
        let content = body["messages"][0]["content"].as_array().unwrap();
        assert_eq!(content.len(), 2, "documents, then instructions");
        assert_eq!(content[0]["cache_control"], json!({"type": "ephemeral"}));
        assert!(content[1].get("cache_control").is_none());
        let instructions = content[1]["text"].as_str().unwrap();
        assert!(
            !instructions.contains("<<<FILE"),
            "round {}: the documents are sent once, before the breakpoint",
            i + 1
        );
        assert!(instructions.contains("findings envelope"), "{instructions}");
    }

    assert_priced_as_cache_reads(&state, &prefixes[0]);
}

/// The cost of each call of agent `api` is what the API reported, at claude-sonnet-4-5's prices:
/// 3 USD per million input tokens, 3.75 written to the cache (`prefix`, the first round), 0.30
/// read from it, 15 out; less in all than without the cache.
fn assert_priced_as_cache_reads(state: &State, prefix: &str) {
    let prefix_tokens = anthropic::tokens_of(prefix) as f64;
    let calls: Vec<_> = state.calls.iter().filter(|c| c.agent == "api").collect();
    assert_eq!(calls.len(), 3);
    let mut total = 0.0;
    for (i, call) in calls.iter().enumerate() {
        let input = call.input_tokens as f64;
        assert!(
            input > prefix_tokens,
            "input_tokens counts cached tokens too"
        );
        let uncached = input - prefix_tokens;
        let cache = if i == 0 { 3.75 } else { 0.30 };
        let want = (uncached * 3.0 + prefix_tokens * cache + 100.0 * 15.0) / 1e6;
        let usd = call.usd;
        assert!(
            (usd - want).abs() < 1e-9,
            "round {}: recorded {usd}, the cache prices give {want}",
            i + 1
        );
        total += usd;
    }
    let full_price = calls
        .iter()
        .map(|c| (c.input_tokens as f64 * 3.0 + 100.0 * 15.0) / 1e6)
        .sum::<f64>();
    assert!(total < full_price, "{total} < {full_price}");
    let usage = state.usage["api"].usd;
    assert!((usage - total).abs() < 1e-9, "{usage} vs {total}");
}

/// The `openai` backend keeps the same order (system text as `instructions`, then the documents,
/// then the instructions of the round) and routes a feature's calls to one cache with a
/// `prompt_cache_key` that does not name the feature; cached input is priced as such.
#[test]
fn openai_calls_keep_the_documents_first_and_one_cache_key_per_feature() {
    let fake = Fake::start();
    let mut reply = openai::response(EMPTY_ENVELOPE, 5000, 100);
    reply["usage"]["input_tokens_details"] = json!({"cached_tokens": 4096});
    let (script, _) = Script::new(vec![fakes::json_reply(200, &reply)]);
    mount_script(&fake, "/v1/responses", script, Some(1));
    let demo = demo_reviewed_by(&format!("kind: openai, base_url: \"{}\"", fake.uri()));
    run_until_review(&demo, "OPENAI_API_KEY");
    let body = &fake.bodies()[0];
    let key = body["prompt_cache_key"].as_str().unwrap();
    assert!(key.starts_with("spec-orchestrate-"), "{key}");
    assert!(
        !key.contains("dark-mode"),
        "the key does not name the feature: {key}"
    );
    let input = body["input"].as_str().unwrap();
    let documents = input.find("<<<FILE").expect("documents quoted");
    let how = input.find("How to answer").expect("instructions");
    assert!(documents < how, "documents first: {input}");
    let state = demo.state();
    // gpt-5: 1.25 USD per million input tokens, 0.125 cached, 10 out.
    let usd = state.usage["api"].usd;
    let want = (904.0 * 1.25 + 4096.0 * 0.125 + 100.0 * 10.0) / 1e6;
    assert!((usd - want).abs() < 1e-9, "{usd} vs {want}");
}

/// A hostile model API: every connection is answered `200` with a chunked body that never ends
/// (64 KiB chunks until the client hangs up). Returns its URL, the bytes it sent and the
/// connections it served.
fn endless_api() -> (
    String,
    std::sync::Arc<std::sync::atomic::AtomicU64>,
    std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (sent, served) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (bytes, conns) = (sent.clone(), served.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            conns.fetch_add(1, Ordering::Relaxed);
            let bytes = bytes.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 2 {
                    line.clear();
                }
                let mut out = stream;
                // A JSON answer that opens a text block and never closes it.
                let start = r#"{"id":"msg_1","type":"message","content":[{"type":"text","text":""#;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{start}\r\n",
                    start.len()
                );
                if out.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let chunk = format!("10000\r\n{}\r\n", "a".repeat(0x10000));
                while out.write_all(chunk.as_bytes()).is_ok() {
                    bytes.fetch_add(0x10000, Ordering::Relaxed);
                }
            });
        }
    });
    (url, sent, served)
}

#[test]
fn a_model_api_answering_an_endless_body_fails_the_call_at_the_cap() {
    let (url, sent, served) = endless_api();
    let demo = demo_reviewed_by(&format!(
        "kind: anthropic, model: claude-sonnet-4-5, base_url: \"{url}\""
    ));
    let started = std::time::Instant::now();
    run_until_review(&demo, "ANTHROPIC_API_KEY");
    let took = started.elapsed();
    let state = demo.state();
    let failures = failures_of(&state, "api");
    assert!(!failures.is_empty(), "{:?}", state.agent_failures);
    let agent_error = |c: &BlockerCategory| *c == BlockerCategory::AgentError;
    assert!(failures.iter().all(agent_error), "{failures:?}");
    let detail = &state.agent_failures[0].detail;
    assert!(
        detail.contains("agent `api`")
            && detail.contains("larger than the 32 MiB this client reads"),
        "{detail}"
    );
    assert_eq!(state.rounds.spec_review[0].gate, Gate::Fail);
    // Each call stopped reading at the cap: the server got no further than the cap plus what
    // the sockets buffer, per connection.
    let per_call = sent.load(std::sync::atomic::Ordering::Relaxed)
        / served.load(std::sync::atomic::Ordering::Relaxed).max(1);
    assert!(
        per_call < 48 * 1024 * 1024,
        "{per_call} bytes sent per call"
    );
    assert!(took < Duration::from_secs(50), "took {took:?}");
    let peak_mib = crate::support::children_peak_rss_kib() / 1024;
    assert!(peak_mib < 512, "peak RSS of a child: {peak_mib} MiB");
}
