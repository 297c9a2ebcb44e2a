//! Local stand-ins for the Anthropic Messages API and the OpenAI Responses API.
//!
//! They are real HTTP servers (wiremock, each on its own thread) that speak the vendors' wire
//! formats: JSON bodies copied from the vendors' documented payloads (`tests/fixtures/anthropic`,
//! `tests/fixtures/openai`) and, for the real CLIs, Server-Sent Events streams. Every request is
//! recorded, with its arrival time, so tests can check what was sent and when.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// A running fake API and the runtime used to talk to wiremock's async interface (the server
/// itself runs on wiremock's own thread, so blocking clients in the test are fine).
pub struct Fake {
    rt: tokio::runtime::Runtime,
    /// The server.
    pub server: MockServer,
}

impl Fake {
    /// Starts a server on a free local port.
    pub fn start() -> Fake {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime for wiremock");
        let server = rt.block_on(MockServer::start());
        Fake { rt, server }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// Mounts a mock.
    pub fn mount(&self, mock: Mock) {
        self.rt.block_on(mock.mount(&self.server));
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.rt
            .block_on(self.server.received_requests())
            .unwrap_or_default()
    }

    /// Every request body, parsed as JSON (`null` when it is not JSON).
    pub fn bodies(&self) -> Vec<Value> {
        self.requests()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).unwrap_or(Value::Null))
            .collect()
    }

    /// Checks the `.expect(n)` of every mounted mock now (wiremock also does on drop).
    pub fn verify(&self) {
        self.rt.block_on(self.server.verify());
    }
}

/// Answers with the given responses in order, repeating the last one, and records when each
/// request arrived.
pub struct Script {
    replies: Mutex<VecDeque<ResponseTemplate>>,
    last: Mutex<Option<ResponseTemplate>>,
    /// Arrival times of the requests this script answered.
    pub times: Arc<Mutex<Vec<Instant>>>,
}

impl Script {
    /// A script of `replies`; returns it with a handle on the arrival times.
    pub fn new(replies: Vec<ResponseTemplate>) -> (Script, Arc<Mutex<Vec<Instant>>>) {
        let times = Arc::new(Mutex::new(Vec::new()));
        (
            Script {
                replies: Mutex::new(replies.into()),
                last: Mutex::new(None),
                times: times.clone(),
            },
            times,
        )
    }
}

impl Respond for Script {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        self.times.lock().expect("times lock").push(Instant::now());
        let next = self.replies.lock().expect("replies lock").pop_front();
        let mut last = self.last.lock().expect("last lock");
        match next {
            Some(r) => {
                *last = Some(r.clone());
                r
            }
            None => last
                .clone()
                .unwrap_or_else(|| ResponseTemplate::new(500).set_body_string("script is empty")),
        }
    }
}

/// A JSON response.
pub fn json_reply(status: u16, body: &Value) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("content-type", "application/json")
        .set_body_string(body.to_string())
}

/// A Server-Sent Events body from (event name, data) pairs.
pub fn sse(events: &[(&str, Value)]) -> String {
    let mut out = String::new();
    for (name, data) in events {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    out
}

/// An SSE response.
pub fn sse_reply(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .insert_header("cache-control", "no-cache")
        .set_body_raw(body, "text/event-stream")
}

fn fixture(rel: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The answer of a reviewer with no findings.
pub const EMPTY_ENVELOPE: &str = r#"{"findings": [], "converged": true, "remaining_disputes": []}"#;

/// Anthropic Messages API payloads.
pub mod anthropic {
    use super::*;

    /// A `message` whose single text block is `text`, with the given usage and stop reason.
    pub fn message(text: &str, input: u64, output: u64, stop_reason: &str) -> Value {
        let mut m = fixture("anthropic/message.json");
        m["content"][0]["text"] = json!(text);
        m["usage"]["input_tokens"] = json!(input);
        m["usage"]["output_tokens"] = json!(output);
        m["stop_reason"] = json!(stop_reason);
        m
    }

    /// 200 with a finished message.
    pub fn ok(text: &str, input: u64, output: u64) -> ResponseTemplate {
        json_reply(200, &message(text, input, output, "end_turn"))
    }

    /// An error body from the fixtures (`overloaded`, `rate_limit`, `spend_limit`, …).
    pub fn error(name: &str) -> Value {
        fixture(&format!("anthropic/{name}.json"))
    }

    fn start(id: &str, model: &str, input: u64) -> (&'static str, Value) {
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": input, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "output_tokens": 1}}}),
        )
    }

    fn end(stop_reason: &str, output: u64) -> [(&'static str, Value); 2] {
        [
            (
                "message_delta",
                json!({"type": "message_delta",
                       "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                       "usage": {"output_tokens": output}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ]
    }

    /// A streamed message with one text block.
    pub fn stream_text(id: &str, model: &str, text: &str, input: u64, output: u64) -> String {
        let mut ev = vec![
            start(id, model, input),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "text", "text": ""}}),
            ),
            ("ping", json!({"type": "ping"})),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "text_delta", "text": text}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
        ];
        ev.extend(end("end_turn", output));
        sse(&ev)
    }

    /// A streamed message that calls one tool.
    pub fn stream_tool_use(
        id: &str,
        model: &str,
        tool_id: &str,
        tool: &str,
        input_json: &Value,
        input: u64,
        output: u64,
    ) -> String {
        let mut ev = vec![
            start(id, model, input),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "tool_use", "id": tool_id, "name": tool, "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "input_json_delta", "partial_json": input_json.to_string()}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
        ];
        ev.extend(end("tool_use", output));
        sse(&ev)
    }

    /// The prompt cache of the Messages API, as documented: the prompt is read in the order
    /// tools, system, messages; a block carrying `cache_control` (`{"type": "ephemeral"}`,
    /// optionally with `ttl` "5m" or "1h") marks the end of a cacheable prefix; at most four
    /// blocks may carry one (a fifth is a 400); a prefix shorter than the model's minimum is
    /// silently not cached. A prefix seen before is read from the cache
    /// (`cache_read_input_tokens`), a new one is written (`cache_creation_input_tokens`), and
    /// only what follows the breakpoint counts as `input_tokens`. Tokens are counted as four
    /// bytes each. Answers are given in order, the last one repeated.
    pub struct CachingApi {
        answers: Mutex<VecDeque<String>>,
        last: Mutex<String>,
        written: Mutex<Vec<String>>,
        min_tokens: u64,
        /// The marked prefix of every request, in order (empty when none was marked).
        pub prefixes: Arc<Mutex<Vec<String>>>,
    }

    impl CachingApi {
        /// A cache with the model's minimum cacheable length, answering `answers` in order.
        pub fn new(answers: &[&str], min_tokens: u64) -> (CachingApi, Arc<Mutex<Vec<String>>>) {
            let prefixes = Arc::new(Mutex::new(Vec::new()));
            (
                CachingApi {
                    answers: Mutex::new(answers.iter().map(|a| a.to_string()).collect()),
                    last: Mutex::new(EMPTY_ENVELOPE.to_string()),
                    written: Mutex::new(Vec::new()),
                    min_tokens,
                    prefixes: prefixes.clone(),
                },
                prefixes,
            )
        }
    }

    /// Tokens of `text`, at four bytes each (rounded up).
    pub fn tokens_of(text: &str) -> u64 {
        (text.len() as u64).div_ceil(4)
    }

    /// The prompt's blocks in the order the API reads them: (text, cache_control).
    fn blocks(body: &Value) -> Vec<(String, Option<Value>)> {
        let mut out = Vec::new();
        let mut push = |v: &Value| match v {
            Value::String(t) => out.push((t.clone(), None)),
            Value::Array(items) => {
                for b in items {
                    out.push((
                        b["text"].as_str().unwrap_or_default().to_string(),
                        b.get("cache_control").cloned(),
                    ));
                }
            }
            _ => {}
        };
        push(&body["system"]);
        for m in body["messages"].as_array().into_iter().flatten() {
            push(&m["content"]);
        }
        out
    }

    fn invalid(message: String) -> ResponseTemplate {
        json_reply(
            400,
            &json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}),
        )
    }

    impl Respond for CachingApi {
        fn respond(&self, request: &Request) -> ResponseTemplate {
            let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
                return invalid("the body is not JSON".into());
            };
            let blocks = blocks(&body);
            let marked: Vec<usize> = (0..blocks.len())
                .filter(|i| blocks[*i].1.is_some())
                .collect();
            if marked.len() > 4 {
                return invalid(format!(
                    "A maximum of 4 blocks with cache_control may be provided. Found {}.",
                    marked.len()
                ));
            }
            for i in &marked {
                let cc = blocks[*i].1.as_ref().expect("marked");
                let ttl_ok = cc.get("ttl").is_none_or(|t| t == "5m" || t == "1h");
                let keys_ok = cc
                    .as_object()
                    .is_some_and(|o| o.keys().all(|k| k == "type" || k == "ttl"));
                if cc["type"] != "ephemeral" || !ttl_ok || !keys_ok {
                    return invalid(format!("cache_control: invalid value {cc}"));
                }
                if blocks[*i].0.is_empty() {
                    return invalid("cache_control cannot be set for empty text blocks".into());
                }
            }
            let joined = |range: &[(String, Option<Value>)]| {
                range
                    .iter()
                    .map(|(t, _)| t.as_str())
                    .collect::<Vec<_>>()
                    .join("\u{1e}")
            };
            let end = marked.last().map(|i| i + 1).unwrap_or(0);
            let prefix = joined(&blocks[..end]);
            let rest = joined(&blocks[end..]);
            self.prefixes.lock().expect("prefixes").push(prefix.clone());
            let (mut input, mut read, mut write) = (tokens_of(&rest), 0, 0);
            let prefix_tokens = tokens_of(&prefix);
            if end == 0 || prefix_tokens < self.min_tokens {
                input += prefix_tokens;
            } else {
                let mut written = self.written.lock().expect("written");
                if written.contains(&prefix) {
                    read = prefix_tokens;
                } else {
                    write = prefix_tokens;
                    written.push(prefix);
                }
            }
            let answer = match self.answers.lock().expect("answers").pop_front() {
                Some(a) => {
                    *self.last.lock().expect("last") = a.clone();
                    a
                }
                None => self.last.lock().expect("last").clone(),
            };
            let mut m = message(&answer, input, 100, "end_turn");
            m["usage"]["cache_read_input_tokens"] = json!(read);
            m["usage"]["cache_creation_input_tokens"] = json!(write);
            json_reply(200, &m)
        }
    }
}

/// OpenAI Responses API payloads.
pub mod openai {
    use super::*;

    /// A completed `response` whose output text is `text`, with the given usage.
    pub fn response(text: &str, input: u64, output: u64) -> Value {
        let mut r = fixture("openai/response.json");
        r["output"][1]["content"][0]["text"] = json!(text);
        r["usage"]["input_tokens"] = json!(input);
        r["usage"]["output_tokens"] = json!(output);
        r["usage"]["total_tokens"] = json!(input + output);
        r
    }

    /// 200 with a completed response.
    pub fn ok(text: &str, input: u64, output: u64) -> ResponseTemplate {
        json_reply(200, &response(text, input, output))
    }

    /// An error body from the fixtures (`insufficient_quota`, `rate_limit`).
    pub fn error(name: &str) -> Value {
        fixture(&format!("openai/{name}.json"))
    }

    /// A streamed response (what `codex exec` reads) whose output is `items`.
    pub fn stream(id: &str, model: &str, items: &[Value], input: u64, output: u64) -> String {
        let mut ev = vec![(
            "response.created",
            json!({"type": "response.created", "sequence_number": 0, "response": {
                "id": id, "object": "response", "status": "in_progress", "model": model, "output": []}}),
        )];
        for (i, item) in items.iter().enumerate() {
            ev.push((
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": i, "item": item}),
            ));
        }
        ev.push((
            "response.completed",
            json!({"type": "response.completed", "response": {
                "id": id, "object": "response", "status": "completed", "model": model,
                "output": items,
                "usage": {"input_tokens": input, "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": input + output}}}),
        ));
        sse(&ev)
    }
}
