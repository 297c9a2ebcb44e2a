//! Backend `anthropic`: `POST {base}/v1/messages` (the Messages API) with the answer constrained
//! by a JSON schema (`output_config.format`), for the text-only roles.
//!
//! The base URL is the agent's `base_url`, else `ANTHROPIC_BASE_URL`, else
//! `https://api.anthropic.com`, so that tests and proxies can stand in for the vendor. The key is
//! read from the agent's `api_key_env` (default `ANTHROPIC_API_KEY`) at call time and sent only
//! in the `x-api-key` header.

use serde::Deserialize;
use serde_json::json;

use super::http::{self, Post};
use super::text_roles::{self, Output};
use super::{AgentError, AgentReply, AgentRequest, CallUsage, Invocation};
use crate::types::kinds::BlockerCategory;
use crate::util::tail;

/// The vendor's endpoint when nothing overrides it.
pub const DEFAULT_BASE: &str = "https://api.anthropic.com";
/// The API version header every request carries.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when the agent does not set `max_output_tokens`.
pub const DEFAULT_MAX_TOKENS: u32 = 16_000;

#[derive(Deserialize)]
struct Message {
    id: Option<String>,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    content: Vec<Block>,
    stop_reason: Option<String>,
    usage: Option<super::VendorUsage>,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
}

/// The base URL in effect for `inv`.
pub fn base_url(inv: &Invocation) -> String {
    if let Some(f) = inv.fronted {
        return f.ticket.base_url().to_string();
    }
    super::fronted::upstream(inv.agent, crate::proxy::Vendor::Anthropic)
}

/// Calls the Messages API once (with retries on transient failures).
pub fn call(inv: &Invocation, req: &AgentRequest) -> Result<AgentReply, AgentError> {
    let output = text_only_output(inv, req)?;
    let (key_env, key) = api_key(inv)?;
    let model = inv.agent.effective_model().unwrap_or_default();
    let message = text_roles::message(req, output);
    // The stable part first, marked as a cache breakpoint: the system text and the quoted
    // documents are what a review loop resends unchanged every round, so from the second round
    // on they are read from the cache (a tenth of the input price) instead of billed in full.
    // The instructions after the breakpoint change every round and are never cached.
    let mut body = json!({
        "model": model,
        "max_tokens": inv.agent.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "system": text_roles::system(req),
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": message.documents, "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": message.instructions},
        ]}],
    });
    // A shape without a schema (steps, scores) is asked for in the instructions alone.
    if let Some(schema) = output.schema() {
        body["output_config"] = json!({"format": {"type": "json_schema", "schema": schema}});
    }
    let post = Post {
        agent: inv.name,
        api: "Anthropic Messages API",
        url: format!("{}/v1/messages", base_url(inv)),
        headers: vec![
            ("x-api-key", key, true),
            ("anthropic-version", API_VERSION.to_string(), false),
        ],
        body,
        key_env: &key_env,
    };
    http::exchange(inv, req, output, post, |text| parse(inv, text))
}

/// Reads a Messages API response: the text of its content, its usage priced with the agent's
/// price, and its id. `max_tokens`, `refusal` and other unfinished stops are failures with their
/// own category (the usage is kept: those tokens were billed).
fn parse(inv: &Invocation, text: &str) -> Result<(String, CallUsage, Option<String>), AgentError> {
    let msg: Message = http::decode(inv, "Messages API", "a message", text)?;
    if msg.kind != "message" {
        return Err(AgentError::new(
            BlockerCategory::MalformedOutput,
            format!(
                "agent `{}`: expected a `message` object, got type `{}`",
                inv.name, msg.kind
            ),
        ));
    }
    let tokens = msg.usage.unwrap_or_default().anthropic();
    let usage = http::usage_of(inv, &tokens);
    let answer: String = msg
        .content
        .iter()
        .filter(|b| b.kind == "text")
        .filter_map(|b| b.text.as_deref())
        .collect();
    let fail = |category, what: String| Err(http::unusable(inv, usage, category, what));
    match msg.stop_reason.as_deref() {
        Some("end_turn") | Some("stop_sequence") | None => {}
        Some("max_tokens") => {
            return fail(
                BlockerCategory::MaxTokens,
                format!(
                    "the answer was cut at max_tokens ({} output tokens); raise `max_output_tokens` for this agent",
                    tokens.output
                ),
            );
        }
        Some("refusal") => {
            return fail(
                BlockerCategory::Refusal,
                format!("the model refused to answer: {}", tail(&answer, 200)),
            );
        }
        Some(other) => {
            return fail(
                BlockerCategory::Incomplete,
                format!("the model stopped with stop_reason `{other}` before a final answer"),
            );
        }
    }
    if answer.trim().is_empty() {
        return fail(
            BlockerCategory::MalformedOutput,
            "the message has no text content".into(),
        );
    }
    Ok((answer, usage, msg.id))
}

/// The answer shape the request asks for, or a refusal when it asks for none a text-only model
/// can give (an implementer's call, which needs a working copy).
pub fn text_only_output(inv: &Invocation, req: &AgentRequest) -> Result<Output, AgentError> {
    req.answer.ok_or_else(|| {
        AgentError::new(
            BlockerCategory::ToolUnavailable,
            format!(
                "agent `{}` is an HTTP model and cannot play `{}`: that role edits code and runs commands; assign a CLI or command agent to it",
                inv.name, req.role
            ),
        )
    })
}

/// Reads the agent's API key from its environment variable.
pub fn api_key(inv: &Invocation) -> Result<(String, String), AgentError> {
    let env = inv.agent.key_env().unwrap_or_default();
    if let Some(f) = inv.fronted {
        // The real key stays with the proxy; this process sends the call's token.
        return Ok((env, f.ticket.token().to_string()));
    }
    match std::env::var(&env) {
        Ok(v) if !v.trim().is_empty() => Ok((env, v.trim().to_string())),
        _ => Err(AgentError::new(
            BlockerCategory::ToolUnavailable,
            format!(
                "agent `{}`: the API key variable {env} is not set; export it (in GitHub Actions pass the action's key input), or name another variable in `agents.{}.api_key_env`",
                inv.name, inv.name
            ),
        )),
    }
}
