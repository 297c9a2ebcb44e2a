//! Backend `openai`: `POST {base}/v1/responses` (the Responses API) with the answer constrained
//! by `text.format` of type `json_schema` (strict), for the text-only roles.
//!
//! The base URL is the agent's `base_url`, else `OPENAI_BASE_URL`, else
//! `https://api.openai.com`. A base that already ends in `/v1` (the OpenAI SDKs' convention for
//! `OPENAI_BASE_URL`) is used as it is, so both spellings work. The key is read from the agent's
//! `api_key_env` (default `OPENAI_API_KEY`) and sent only as a bearer token.

use serde::Deserialize;
use serde_json::json;

use super::anthropic::{api_key, text_only_output};
use super::http::{self, Post};
use super::{AgentError, AgentReply, AgentRequest, CallUsage, Invocation, text_roles};
use crate::types::kinds::BlockerCategory;
use crate::util::tail;

/// The vendor's endpoint when nothing overrides it.
pub const DEFAULT_BASE: &str = "https://api.openai.com";
/// `max_output_tokens` when the agent does not set it (reasoning tokens count against it).
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 32_000;

#[derive(Deserialize)]
struct Response {
    id: Option<String>,
    object: Option<String>,
    status: Option<String>,
    incomplete_details: Option<IncompleteDetails>,
    error: Option<ResponseError>,
    #[serde(default)]
    output: Vec<OutputItem>,
    usage: Option<super::VendorUsage>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    reason: Option<String>,
}

#[derive(Deserialize)]
struct ResponseError {
    code: Option<String>,
    message: Option<String>,
}

#[derive(Deserialize)]
struct OutputItem {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    content: Vec<ContentPart>,
}

#[derive(Deserialize)]
struct ContentPart {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    refusal: Option<String>,
}

/// The endpoint in effect for `inv`.
pub fn endpoint(inv: &Invocation) -> String {
    let base = match inv.fronted {
        Some(f) => f.ticket.base_url().to_string(),
        None => super::fronted::upstream(inv.agent, crate::proxy::Vendor::Openai),
    };
    format!("{base}/v1/responses")
}

/// The `prompt_cache_key` of every call for the feature in `spec_dir`: one key per feature, so
/// that its loop rounds land on the same cache. A digest rather than the feature's name, which
/// comes from the issue title and has no business in a routing field.
pub fn prompt_cache_key(spec_dir: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(spec_dir.trim_end_matches('/').as_bytes());
    format!("spec-orchestrate-{}", &hex::encode(digest)[..16])
}

/// The `text.format` of a call: the shape's strict JSON schema, or JSON mode (`json_object`) for
/// a shape whose keys belong to the call (steps, scores), which its own parser then reads.
fn text_format(output: text_roles::Output) -> serde_json::Value {
    match output.schema() {
        Some(schema) => json!({
            "type": "json_schema",
            "name": output.name(),
            "schema": schema,
            "strict": true,
        }),
        None => json!({"type": "json_object"}),
    }
}

/// Calls the Responses API once (with retries on transient failures).
pub fn call(inv: &Invocation, req: &AgentRequest) -> Result<AgentReply, AgentError> {
    let output = text_only_output(inv, req)?;
    let (key_env, key) = api_key(inv)?;
    let model = inv.agent.effective_model().unwrap_or_default();
    // OpenAI caches prompt prefixes by itself; what helps is a prefix that does not move (the
    // system text, then the quoted documents, then the instructions that change every round)
    // and a `prompt_cache_key` that routes one feature's calls to the same cache.
    let body = json!({
        "model": model,
        "instructions": text_roles::system(req),
        "input": text_roles::message(req, output).joined(),
        "prompt_cache_key": prompt_cache_key(&req.spec_dir),
        "max_output_tokens": inv.agent.max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS),
        "store": false,
        "text": {"format": text_format(output)},
    });
    let post = Post {
        agent: inv.name,
        api: "OpenAI Responses API",
        url: endpoint(inv),
        headers: vec![("authorization", format!("Bearer {key}"), true)],
        body,
        key_env: &key_env,
    };
    http::exchange(inv, req, output, post, |text| parse(inv, text))
}

/// Reads a Responses API response: the output text, usage priced with the agent's price, and the
/// response id. `incomplete` (max_output_tokens, content_filter), `failed` and refusals are
/// failures with their own category; the usage is kept because those tokens were billed.
fn parse(inv: &Invocation, text: &str) -> Result<(String, CallUsage, Option<String>), AgentError> {
    let resp: Response = http::decode(inv, "Responses API", "a response", text)?;
    if resp.object.as_deref().is_some_and(|o| o != "response") {
        return Err(AgentError::new(
            BlockerCategory::MalformedOutput,
            format!(
                "agent `{}`: expected a `response` object, got `{}`",
                inv.name,
                resp.object.unwrap_or_default()
            ),
        ));
    }
    let tokens = resp.usage.unwrap_or_default().openai();
    let usage = http::usage_of(inv, &tokens);
    let fail = |category, what: String| Err(http::unusable(inv, usage, category, what));
    let mut answer = String::new();
    let mut refusal = None;
    for part in resp
        .output
        .iter()
        .filter(|i| i.kind == "message")
        .flat_map(|i| &i.content)
    {
        match part.kind.as_str() {
            "output_text" => answer.push_str(part.text.as_deref().unwrap_or_default()),
            "refusal" => refusal = Some(part.refusal.clone().unwrap_or_default()),
            _ => {}
        }
    }
    match resp.status.as_deref() {
        Some("completed") | None => {}
        Some("incomplete") => {
            let reason = resp
                .incomplete_details
                .and_then(|d| d.reason)
                .unwrap_or_default();
            return match reason.as_str() {
                "max_output_tokens" => fail(
                    BlockerCategory::MaxTokens,
                    format!(
                        "the answer was cut at max_output_tokens ({} output tokens); raise `max_output_tokens` for this agent",
                        tokens.output
                    ),
                ),
                "content_filter" => fail(
                    BlockerCategory::Refusal,
                    "the answer was stopped by the content filter".into(),
                ),
                other => fail(
                    BlockerCategory::Incomplete,
                    format!("the response is incomplete (reason `{other}`)"),
                ),
            };
        }
        Some("failed") => {
            let e = resp.error.unwrap_or(ResponseError {
                code: None,
                message: None,
            });
            return fail(
                BlockerCategory::AgentError,
                format!(
                    "the response failed ({}): {}",
                    e.code.unwrap_or_default(),
                    e.message.unwrap_or_default()
                ),
            );
        }
        Some(other) => {
            return fail(
                BlockerCategory::Incomplete,
                format!("the response ended with status `{other}`"),
            );
        }
    }
    if let Some(r) = refusal {
        return fail(
            BlockerCategory::Refusal,
            format!("the model refused to answer: {}", tail(&r, 200)),
        );
    }
    if answer.trim().is_empty() {
        return fail(
            BlockerCategory::MalformedOutput,
            "the response has no output text".into(),
        );
    }
    Ok((answer, usage, resp.id))
}
