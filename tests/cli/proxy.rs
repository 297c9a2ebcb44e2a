//! The model API proxy seen from a client: an answer streams through chunk by chunk (the client
//! holds the first event before the upstream sends the last), the upstream gets the real key
//! and never the token, and a token is refused once its call is over or if it was never issued.
//!
//! The upstream here is a plain socket server rather than wiremock, because the test needs to
//! hold the rest of the answer back until the client has proven it received the first part.

use spec_orchestrate::types::Role;
use spec_orchestrate::types::StopKind;
use spec_orchestrate::types::kinds::BlockerCategory;
use spec_orchestrate::types::kinds::CallRole;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use spec_orchestrate::proxy::meter::Pricing;
use spec_orchestrate::proxy::{self, Route, Vendor};

/// How long either side waits for the other before the test fails instead of hanging.
const WAIT: Duration = Duration::from_secs(20);

/// What the upstream saw.
#[derive(Debug, Default)]
struct Seen {
    /// `x-api-key` of the request.
    api_key: Option<String>,
    /// The whole request head (to look for the token).
    head: String,
    /// The client signalled it had the first event before the upstream sent the rest.
    first_before_last: bool,
}

fn event(name: &str, data: &str) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn chunk(data: &str) -> String {
    format!("{:x}\r\n{data}\r\n", data.len())
}

/// A one-request upstream: answers an SSE stream in two chunks and, between them, waits (at
/// most [`WAIT`]) for the client to say it has the first.
fn slow_upstream(got_first: mpsc::Receiver<()>) -> (String, std::thread::JoinHandle<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    listener.set_nonblocking(true).expect("nonblocking");
    let handle = std::thread::spawn(move || {
        let mut seen = Seen::default();
        let start = Instant::now();
        let mut stream = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(_) if start.elapsed() < WAIT => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => panic!("the proxy never connected: {e}"),
            }
        };
        stream.set_nonblocking(false).expect("blocking");
        stream.set_read_timeout(Some(WAIT)).expect("timeout");
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        while !buf.ends_with(b"\r\n\r\n") {
            let n = stream.read(&mut byte).expect("request head");
            assert!(n == 1, "the request ended early");
            buf.push(byte[0]);
        }
        seen.head = String::from_utf8_lossy(&buf).into_owned();
        let mut length = 0usize;
        for line in seen.head.lines() {
            if let Some((k, v)) = line.split_once(':') {
                match k.trim().to_ascii_lowercase().as_str() {
                    "x-api-key" => seen.api_key = Some(v.trim().to_string()),
                    "content-length" => length = v.trim().parse().unwrap_or(0),
                    _ => {}
                }
            }
        }
        let mut body = vec![0u8; length];
        stream.read_exact(&mut body).expect("request body");
        let start = event(
            "message_start",
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":1000,"output_tokens":1}}}"#,
        );
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        stream
            .write_all(format!("{head}{}", chunk(&start)).as_bytes())
            .expect("first chunk");
        stream.flush().expect("flush");
        seen.first_before_last = got_first.recv_timeout(WAIT).is_ok();
        let rest = [
            event(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"streamed"}}"#,
            ),
            event(
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":40}}"#,
            ),
            event("message_stop", r#"{"type":"message_stop"}"#),
        ]
        .concat();
        let _ = stream.write_all(format!("{}0\r\n\r\n", chunk(&rest)).as_bytes());
        let _ = stream.flush();
        seen
    });
    (base, handle)
}

fn route(upstream: &str, key: &str) -> Route {
    Route {
        agent: "streamer".into(),
        vendor: Vendor::Anthropic,
        upstream: upstream.into(),
        key: key.into(),
        pricing: Pricing {
            table: Default::default(),
            fallback: None,
        },
        budget_left: None,
    }
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(WAIT)
        .build()
        .expect("client")
}

const BODY: &str = r#"{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

#[test]
fn proxy_streams_an_sse_answer_chunk_by_chunk_with_the_real_key_only_upstream() {
    let (got_first_tx, got_first_rx) = mpsc::channel();
    let (upstream, server) = slow_upstream(got_first_rx);
    let key = "sk-ant-upstream-only-key";
    let ticket = proxy::open(route(&upstream, key)).expect("proxy");
    let mut resp = client()
        .post(format!("{}/v1/messages", ticket.base_url()))
        .header("x-api-key", ticket.token())
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(BODY)
        .send()
        .expect("the proxy answers");
    assert_eq!(resp.status().as_u16(), 200);
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    // The first event arrives while the upstream still holds the rest back: a proxy that
    // buffered the answer whole would deliver nothing until the upstream gave up waiting.
    while !String::from_utf8_lossy(&received).contains("message_start") {
        let n = resp.read(&mut buf).expect("first event");
        assert!(n > 0, "the stream ended before its first event");
        received.extend_from_slice(&buf[..n]);
    }
    assert!(
        !String::from_utf8_lossy(&received).contains("message_stop"),
        "the last event cannot be here yet"
    );
    got_first_tx.send(()).expect("signal");
    resp.read_to_end(&mut received).expect("the rest");
    let text = String::from_utf8_lossy(&received).into_owned();
    let seen = server.join().expect("upstream thread");
    assert!(
        seen.first_before_last,
        "the client did not get the first event before the upstream sent the last"
    );
    assert!(
        text.contains("\"streamed\"") && text.contains("message_stop"),
        "{text}"
    );
    assert_eq!(seen.api_key.as_deref(), Some(key), "{}", seen.head);
    assert!(
        !seen.head.contains(ticket.token()),
        "the token never leaves for the upstream"
    );
    let metered = ticket.finish();
    assert_eq!(metered.exchanges, 1);
    assert_eq!((metered.input_tokens, metered.output_tokens), (1000, 40));
    let want = (1000.0 * 3.0 + 40.0 * 15.0) / 1e6;
    assert!((metered.usd - want).abs() < 1e-12, "{metered:?}");
}

#[test]
fn proxy_refuses_unknown_and_finished_tokens_without_calling_upstream() {
    // An upstream that must never be reached: nothing listens on it once it is dropped.
    let dead = TcpListener::bind("127.0.0.1:0").expect("bind");
    let upstream = format!("http://{}", dead.local_addr().expect("addr"));
    drop(dead);
    let ticket = proxy::open(route(&upstream, "sk-ant-never-sent")).expect("proxy");
    let base = ticket.base_url().to_string();
    let token = ticket.token().to_string();
    let post = |t: &str| {
        client()
            .post(format!("{base}/v1/messages"))
            .header("x-api-key", t)
            .body(BODY)
            .send()
            .expect("the proxy answers")
    };
    let forged = post("sk-ant-guessed-token");
    assert_eq!(forged.status().as_u16(), 401);
    assert!(
        forged
            .text()
            .unwrap_or_default()
            .contains("unknown or expired call token")
    );
    let metered = ticket.finish();
    assert_eq!(metered.exchanges, 0);
    assert_eq!(
        post(&token).status().as_u16(),
        401,
        "a token dies with its call"
    );
}

/// A hostile `claude` stand-in: it records its environment, then spends as much as it can in
/// one request (a 400 000-character prompt) through whatever `ANTHROPIC_BASE_URL` and key it was
/// given, and reports the API's answer the way the real CLI does.
const SPENDER: &str = r#"
import json, os, sys, urllib.request, urllib.error
sys.stdin.read()
with open(os.environ["DUMP"], "a") as f:
    f.write(json.dumps(dict(os.environ)) + "\n")
body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 64,
                   "messages": [{"role": "user", "content": "x" * 400000}]}).encode()
req = urllib.request.Request(os.environ.get("ANTHROPIC_BASE_URL", "") + "/v1/messages", data=body,
                             headers={"x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""),
                                      "content-type": "application/json",
                                      "anthropic-version": "2023-06-01"})
try:
    with urllib.request.urlopen(req, timeout=30) as r:
        r.read()
    print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                      "result": "{\"findings\": [], \"converged\": true, \"remaining_disputes\": []}",
                      "total_cost_usd": 0.0}))
except urllib.error.HTTPError as e:
    print(json.dumps({"type": "result", "subtype": "success", "is_error": True,
                      "result": "API Error: %d %s" % (e.code, e.read().decode())}))
    sys.exit(1)
"#;

#[test]
fn a_cli_agent_spending_past_the_budget_is_refused_at_the_proxy_and_the_run_stops_with_the_budget_message()
 {
    use crate::fakes::{Fake, anthropic};
    use crate::http_backends::KEY;
    use crate::support::config_with_api;
    use crate::support::{Demo, script};

    let fake = Fake::start();
    fake.mount(
        wiremock::Mock::given(wiremock::matchers::any()).respond_with(anthropic::ok(
            crate::fakes::EMPTY_ENVELOPE,
            100_000,
            10,
        )),
    );
    let demo = Demo::new();
    let spender = demo.tmp.path().join("bin/claude");
    script(&spender, &format!("#!/usr/bin/env python3\n{SPENDER}"));
    // Written by the agent, as the agents' identity when the tests run as root.
    let logs = demo.tmp.path().join("logs");
    crate::support::agent_writable(&logs);
    let dump = logs.join("spender.env");
    // The spender is a claude-cli agent without a model: the pipeline cannot price its call in
    // advance, so only the proxy can see what the request would cost.
    let config = config_with_api(
        &demo,
        &format!(
            "kind: claude-cli, binary: \"{}\", opposite: implementer, env: {{ DUMP: \"{}\" }}",
            spender.display(),
            dump.display()
        ),
        &[("spec_reviewer", "api")],
        "",
    )
    .replace("limits:\n", "limits:\n  budget_usd: 0.05\n");
    demo.write_config(&config);

    let out = demo
        .run_cmd()
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", fake.uri())
        .env(
            crate::support::JSON_PROGRESS.0,
            crate::support::JSON_PROGRESS.1,
        )
        .timeout(Duration::from_secs(300))
        .output()
        .expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "a budget stop: {stderr}");
    // One stop; its message (the person's) says which limit, who was refused, and the way on.
    let events = crate::support::events_of(&stderr);
    let stopped = crate::support::stopped_messages(&events);
    assert_eq!(stopped.len(), 1, "{stderr}");
    assert!(
        stopped[0].contains("reached what was left of limits.budget_usd")
            && stopped[0].contains(
                "the model API proxy refused a request of agent `api` before forwarding it"
            )
            && stopped[0].contains("spec-orchestrate resume"),
        "{stderr}"
    );
    assert!(
        fake.requests().is_empty(),
        "nothing reached the API: {:?}",
        fake.requests().len()
    );
    let state = demo.state();
    assert_eq!(
        state.stop.as_ref().unwrap().kind,
        StopKind::Budget,
        "{state:?}"
    );
    let envs = std::fs::read_to_string(&dump).expect("the spender ran");
    assert!(!envs.contains(KEY), "the agent never held the real key");
    for line in envs.lines() {
        let env: serde_json::Value = serde_json::from_str(line).expect("json");
        assert!(
            env["ANTHROPIC_API_KEY"]
                .as_str()
                .is_some_and(|k| k.starts_with("sk-spec-orchestrate-proxy-")),
            "{env}"
        );
        assert_ne!(env["ANTHROPIC_BASE_URL"], fake.uri().as_str());
    }
}

#[test]
fn an_http_agent_posts_through_the_proxy_and_is_refused_there_past_the_budget() {
    use crate::fakes::{EMPTY_ENVELOPE, Fake, anthropic};
    use spec_orchestrate::agents::{self, AgentRequest, CallLimits};
    use spec_orchestrate::config::Config;
    use spec_orchestrate::secrets::Redactor;
    use spec_orchestrate::types::kinds::BlockerCategory;

    let fake = Fake::start();
    fake.mount(
        wiremock::Mock::given(wiremock::matchers::any()).respond_with(anthropic::ok(
            EMPTY_ENVELOPE,
            10,
            2,
        )),
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let key = "sk-ant-http-agent-real-key";
    let yaml = format!(
        "agents:\n  claude: {{ kind: claude-cli }}\n  codex: {{ kind: codex-cli }}\n  api: {{ kind: anthropic, base_url: \"{}\", max_retries: 0, env: {{ ANTHROPIC_API_KEY: {key} }} }}\n",
        fake.uri()
    );
    let config = Config::parse(&yaml, &tmp.path().join(".specs/pipeline.yml")).expect("config");
    let request = AgentRequest {
        role: "spec_reviewer".into(),
        phase: "spec_review".into(),
        round: Some(1),
        attempt: 1,
        workdir: tmp.path().to_path_buf(),
        spec_dir: ".specs/x".into(),
        task: None,
        files: Vec::new(),
        prompt: "Review the spec.".into(),
        label: None,
        answer: Some(spec_orchestrate::agents::text_roles::Output::Envelope),
    };
    let call = |budget_left| {
        agents::call_noted(
            &config,
            &"api".into(),
            false,
            &request,
            &Redactor::default(),
            CallLimits { budget_left },
        )
        .result
    };
    let reply = call(None).expect("the call goes through");
    assert_eq!(reply.usage.input_tokens, 10);
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].headers.get("x-api-key").unwrap(), key);
    // The backend itself never checks a budget: only the proxy in front of it can refuse.
    let e = call(Some(1e-9)).expect_err("refused at the proxy");
    assert_eq!(e.category, BlockerCategory::BudgetExhausted, "{e}");
    assert!(
        e.detail
            .contains("refused a request of agent `api` before forwarding it"),
        "{e}"
    );
    assert_eq!(fake.requests().len(), 1, "the refused request never left");
}

/// A hostile `claude` stand-in holding a per-call token: it asks the vendor for everything but a
/// model answer (models, files, batches, the admin API's keys and usage report), then makes the
/// one model request a reviewer needs and answers like the real CLI.
const PROBER: &str = r#"
import json, os, sys, urllib.request, urllib.error
sys.stdin.read()
base = os.environ.get("ANTHROPIC_BASE_URL", "")
key = os.environ.get("ANTHROPIC_API_KEY", "")
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"x-api-key": key, "content-type": "application/json",
                                          "anthropic-version": "2023-06-01"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
seen = {}
for method, path in [("GET", "/v1/models"), ("GET", "/v1/files"),
                     ("POST", "/v1/messages/batches"),
                     ("GET", "/v1/organizations/api_keys"),
                     ("GET", "/v1/organizations/usage_report/messages?starting_at=2025-01-01")]:
    seen[method + " " + path] = call(method, path, {} if method == "POST" else None)
with open(os.environ["DUMP"], "a") as f:
    f.write(json.dumps(seen) + "\n")
status, text = call("POST", "/v1/messages?beta=true",
                    {"model": "claude-sonnet-4-5", "max_tokens": 64,
                     "messages": [{"role": "user", "content": "review"}]})
answer = json.loads(text)["content"][0]["text"] if status == 200 else ""
print(json.dumps({"type": "result", "subtype": "success", "is_error": status != 200,
                  "result": answer, "total_cost_usd": 0.0}))
"#;

#[test]
fn non_model_endpoints_are_refused_at_the_proxy_without_forwarding_and_recorded_as_a_sandbox_violation()
 {
    use crate::fakes::{EMPTY_ENVELOPE, Fake, anthropic};
    use crate::http_backends::KEY;
    use crate::support::{Demo, assert_contains_all, config_with_api, failures_in, script};

    let fake = Fake::start();
    fake.mount(
        wiremock::Mock::given(wiremock::matchers::any()).respond_with(anthropic::ok(
            EMPTY_ENVELOPE,
            100,
            10,
        )),
    );
    let demo = Demo::new();
    let prober = demo.tmp.path().join("bin/claude");
    script(&prober, &format!("#!/usr/bin/env python3\n{PROBER}"));
    // Written by the agent, as the agents' identity when the tests run as root.
    let logs = demo.tmp.path().join("logs");
    crate::support::agent_writable(&logs);
    let dump = logs.join("prober.json");
    let config = config_with_api(
        &demo,
        &format!(
            "kind: claude-cli, binary: \"{}\", model: claude-sonnet-4-5, opposite: implementer, env: {{ DUMP: \"{}\" }}",
            prober.display(),
            dump.display()
        ),
        &[("spec_reviewer", "api")],
        "",
    );
    demo.write_config(&config);
    let out = demo
        .run_cmd()
        .arg("--until")
        .arg("spec_review")
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", fake.uri())
        .timeout(Duration::from_secs(300))
        .output()
        .expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");

    // Only model requests left the proxy, each with the real key.
    let requests = fake.requests();
    assert!(
        !requests.is_empty(),
        "the review's model request went through"
    );
    for r in &requests {
        assert_eq!((r.method.as_str(), r.url.path()), ("POST", "/v1/messages"));
        assert_eq!(r.headers.get("x-api-key").unwrap(), KEY);
    }
    // Every other request got 403 in Anthropic's error shape, naming the request.
    let seen = std::fs::read_to_string(&dump).expect("the prober ran");
    let first: serde_json::Value =
        serde_json::from_str(seen.lines().next().expect("a line")).expect("json");
    for (request, answer) in first.as_object().expect("object") {
        assert_eq!(answer[0], 403, "{request}: {answer}");
        let body: serde_json::Value =
            serde_json::from_str(answer[1].as_str().expect("text")).expect("error json");
        assert_eq!(body["error"]["type"], "permission_error", "{body}");
        assert!(!answer[1].as_str().unwrap().contains(KEY));
    }
    // And the run recorded them against the call.
    let state = demo.state();
    let found = failures_in(&state, BlockerCategory::SandboxViolation);
    assert!(!found.is_empty(), "{state:?}");
    let detail = &found[0].detail;
    assert_eq!(found[0].role, CallRole::Role(Role::SpecReviewer));
    assert_eq!(found[0].agent, "api");
    assert_contains_all(
        detail,
        &[
            "GET /v1/models",
            "GET /v1/files",
            "POST /v1/messages/batches",
            "GET /v1/organizations/api_keys",
            "GET /v1/organizations/usage_report/messages",
        ],
    );
    assert!(
        !detail.contains("starting_at"),
        "no query is recorded: {detail}"
    );
}

#[test]
fn the_proxy_forwards_exactly_the_model_endpoints_of_each_vendor() {
    use crate::fakes::{Fake, json_reply};
    let fake = Fake::start();
    fake.mount(
        wiremock::Mock::given(wiremock::matchers::any())
            .respond_with(json_reply(200, &serde_json::json!({"ok": true}))),
    );
    for (vendor, auth, allowed, refused) in [
        (
            Vendor::Anthropic,
            "x-api-key",
            &[
                "/v1/messages",
                "/v1/messages?beta=true",
                "/v1/messages/count_tokens",
            ][..],
            &[
                "/v1/models",
                "/v1/messages/batches",
                "/v1/files",
                "/v1/organizations/api_keys",
                "/v1/messages/../models",
                "/v1/complete",
            ][..],
        ),
        (
            Vendor::Openai,
            "authorization",
            &["/v1/responses", "/v1/chat/completions"][..],
            &[
                "/v1/models",
                "/v1/files",
                "/v1/batches",
                "/v1/fine_tuning/jobs",
                "/v1/organization/admin_api_keys",
                "/v1/responses/resp_1",
            ][..],
        ),
    ] {
        let mut r = route(&fake.uri(), "sk-real-key");
        r.vendor = vendor;
        let ticket = proxy::open(r).expect("proxy");
        let token = match vendor {
            Vendor::Anthropic => ticket.token().to_string(),
            Vendor::Openai => format!("Bearer {}", ticket.token()),
        };
        let before = fake.requests().len();
        for path in allowed {
            let resp = client()
                .post(format!("{}{path}", ticket.base_url()))
                .header(auth, &token)
                .body(BODY)
                .send()
                .expect("answer");
            assert_eq!(resp.status().as_u16(), 200, "{vendor:?} {path}");
        }
        // A model path with another method is not a model request either.
        let get = client()
            .get(format!("{}{}", ticket.base_url(), allowed[0]))
            .header(auth, &token)
            .send()
            .expect("answer");
        assert_eq!(get.status().as_u16(), 403, "{vendor:?} GET {}", allowed[0]);
        for path in refused {
            for post in [false, true] {
                let url = format!("{}{path}", ticket.base_url());
                let req = if post {
                    client().post(url).body(BODY)
                } else {
                    client().get(url)
                };
                let resp = req.header(auth, &token).send().expect("answer");
                assert_eq!(resp.status().as_u16(), 403, "{vendor:?} {path}");
            }
        }
        assert_eq!(
            fake.requests().len() - before,
            allowed.len(),
            "only the model requests reached the upstream"
        );
        let metered = ticket.finish();
        assert_eq!(metered.refused.len(), 1 + refused.len() * 2, "{metered:?}");
        assert!(metered.refused.contains(&"GET /v1/models".to_string()));
    }
}
