//! What the `anthropic` and `openai` backends share on top of the crate's one HTTP client
//! ([`crate::net::Http`]): a JSON POST under the agent's retry policy (its timeout as the
//! deadline of the whole call, its `max_retries` and `retry_base_ms`; 408, 409, 429, 500, 502,
//! 503, 504, 529 and dropped connections retried, `Retry-After` honoured), the vendors' error
//! objects read, and the errors that mean "the money ran out" recognised so that they are never
//! retried.
//!
//! Retrying a spend cap or an exhausted quota would only burn time (and, with some vendors,
//! money): those errors become [`BlockerCategory::QuotaExhausted`], which stops the run with a
//! draft instead of failing over to another agent. Everything reported here is secret-free: the
//! key travels in a header marked sensitive and is never part of a message.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;

use super::text_roles::Output;
use super::{AgentError, AgentReply, AgentRequest, CallUsage, Invocation, ReplyStatus};
use crate::net::{ClientSettings, CutShort, Http, LongWait, NetError, RetryPolicy};
use crate::pricing::Tokens;
use crate::types::kinds::BlockerCategory;
use crate::util::tail;

/// Retries when the agent does not configure `max_retries`.
pub const DEFAULT_MAX_RETRIES: u32 = 4;
/// First backoff delay when the agent does not configure `retry_base_ms`.
pub const DEFAULT_RETRY_BASE_MS: u64 = 1_000;
/// Upper bound of one `Retry-After` wait; a vendor asking for longer is not waited for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// One JSON POST to a model API.
#[derive(Debug)]
pub struct Post<'a> {
    /// Agent name, for messages.
    pub agent: &'a str,
    /// Vendor name for messages ("Anthropic Messages API", …).
    pub api: &'a str,
    /// Full URL.
    pub url: String,
    /// Headers; values marked sensitive are never logged or printed.
    pub headers: Vec<(&'static str, String, bool)>,
    /// JSON body.
    pub body: serde_json::Value,
    /// The environment variable holding the key (named in authentication errors).
    pub key_env: &'a str,
}

/// The error object both vendors put in a non-2xx body.
#[derive(Debug, Default, Deserialize)]
struct ErrorBody {
    error: Option<ErrorObject>,
}

#[derive(Debug, Default, Deserialize)]
struct ErrorObject {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    code: Option<serde_json::Value>,
    message: Option<String>,
    details: Option<serde_json::Value>,
}

/// What a failed response said, reduced to what decides retrying.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiFailure {
    /// HTTP status.
    pub status: u16,
    /// `error.type`, if any.
    pub kind: Option<String>,
    /// `error.code` or `error.details.error_code`, if any.
    pub code: Option<String>,
    /// `error.message`, or the start of the body.
    pub message: String,
}

impl ApiFailure {
    /// Reads a failed response body (any shape; a body that is not JSON is quoted).
    pub fn from_body(status: u16, body: &str) -> ApiFailure {
        let parsed: ErrorBody = serde_json::from_str(body).unwrap_or_default();
        let err = parsed.error.unwrap_or_default();
        let detail_code = err
            .details
            .as_ref()
            .and_then(|d| d.get("error_code"))
            .and_then(|c| c.as_str())
            .map(str::to_string);
        let code = detail_code.or_else(|| match err.code {
            Some(serde_json::Value::String(s)) => Some(s),
            Some(serde_json::Value::Number(n)) => Some(n.to_string()),
            _ => None,
        });
        ApiFailure {
            status,
            kind: err.kind,
            code,
            message: err.message.unwrap_or_else(|| tail(body, 300)),
        }
    }

    /// A spend cap, an exhausted quota or an empty credit balance: waiting will not help, and
    /// retrying only repeats the refusal.
    pub fn is_quota(&self) -> bool {
        const CODES: [&str; 5] = [
            "insufficient_quota",
            "enforced_spend_limit_reached",
            "billing_hard_limit_reached",
            "credit_balance_exhausted",
            "spend_limit_reached",
        ];
        let coded = |v: &Option<String>| v.as_deref().is_some_and(|c| CODES.contains(&c));
        coded(&self.code)
            || coded(&self.kind)
            || self.kind.as_deref() == Some("billing_error")
            || self.status == 402
            || is_quota_text(&self.message)
    }

    /// Whether trying again later can succeed.
    pub fn is_retryable(&self) -> bool {
        !self.is_quota() && matches!(self.status, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529)
    }
}

/// Recognises spend-cap and quota messages in free text (API bodies, CLI error output).
pub fn is_quota_text(text: &str) -> bool {
    let t = text.to_lowercase();
    [
        "insufficient_quota",
        "enforced_spend_limit_reached",
        "billing_hard_limit_reached",
        "credit_balance_exhausted",
        "exceeded your current quota",
        "quota exceeded",
        "credit balance is too low",
        "spend limit",
        "spending limit",
        "api usage limits",
        "usage limit reached",
    ]
    .iter()
    .any(|p| t.contains(p))
}

fn header_map(post: &Post) -> Result<HeaderMap, AgentError> {
    let mut map = HeaderMap::new();
    for (name, value, sensitive) in &post.headers {
        let mut v = HeaderValue::from_str(value).map_err(|_| {
            AgentError::new(
                BlockerCategory::EnvError,
                if *sensitive {
                    format!(
                        "agent `{}`: the value of {} cannot be sent in an HTTP header (control characters or non-ASCII); check the variable",
                        post.agent, post.key_env
                    )
                } else {
                    format!("agent `{}`: header `{name}` has an invalid value", post.agent)
                },
            )
        })?;
        v.set_sensitive(*sensitive);
        map.insert(HeaderName::from_static(name), v);
    }
    Ok(map)
}

/// The retry policy of an agent's API calls: its `max_retries` and `retry_base_ms`, its timeout
/// as the deadline of the whole call, waits longer than [`MAX_RETRY_AFTER`] refused, and only
/// the statuses that mean "try again" retried (never a spend cap).
fn policy(inv: &Invocation) -> RetryPolicy {
    RetryPolicy {
        attempts: inv
            .agent
            .max_retries
            .unwrap_or(DEFAULT_MAX_RETRIES)
            .saturating_add(1),
        base_delay: Duration::from_millis(inv.agent.retry_base_ms.unwrap_or(DEFAULT_RETRY_BASE_MS)),
        max_retry_after: MAX_RETRY_AFTER,
        long_wait: LongWait::GiveUp,
        deadline: Some(Duration::from_secs(inv.timeout_s)),
        retryable: |status, body, _| ApiFailure::from_body(status, body).is_retryable(),
        resend_after_loss: true,
    }
}

/// Sends the POST through the crate's retrying client and returns the body of the 2xx response.
pub fn post_json(post: &Post, policy: RetryPolicy) -> Result<String, AgentError> {
    let timeout = policy.deadline.unwrap_or(ClientSettings::default().timeout);
    let headers = header_map(post)?;
    let body = serde_json::to_vec(&post.body).map_err(|e| {
        AgentError::new(
            BlockerCategory::EnvError,
            format!("request not serialisable: {e}"),
        )
    })?;
    let settings = ClientSettings {
        timeout,
        connect_timeout: Duration::from_secs(15).min(timeout),
    };
    let http = Http::with(settings, policy)
        .map_err(|e| net_error(post, timeout, e))?
        .named(post.api);
    let reply = http
        .send(post.agent, &post.url, |c| {
            c.post(&post.url)
                .headers(headers.clone())
                .header("content-type", "application/json")
                .body(body.clone())
        })
        .map_err(|e| net_error(post, timeout, e))?;
    let text = reply.text();
    if (200..300).contains(&reply.status) {
        return Ok(text);
    }
    Err(failure_error(
        post,
        &ApiFailure::from_body(reply.status, &text),
    ))
}

/// Turns what the client reports into a categorised, actionable error naming the agent.
fn net_error(post: &Post, timeout: Duration, e: NetError) -> AgentError {
    let (agent, api) = (post.agent, post.api);
    match e {
        NetError::Setup(detail) => AgentError::new(
            BlockerCategory::EnvError,
            format!("cannot build the HTTP client: {detail}"),
        ),
        NetError::Transport {
            timed_out: true, ..
        } => AgentError::new(
            BlockerCategory::Timeout,
            format!(
                "agent `{agent}`: the {api} did not answer within the agent's timeout ({} s)",
                timeout.as_secs()
            ),
        ),
        NetError::Transport { connect, cause, .. } => {
            let what = if connect {
                "could not connect to"
            } else {
                "lost the connection to"
            };
            AgentError::new(
                BlockerCategory::ToolUnavailable,
                format!(
                    "agent `{agent}`: {what} the {api} at {} ({cause}); check `base_url` and the network",
                    post.url
                ),
            )
        }
        NetError::Body {
            status,
            detail,
            timed_out,
            ..
        } => AgentError::new(
            if timed_out {
                BlockerCategory::Timeout
            } else {
                BlockerCategory::AgentError
            },
            format!(
                "agent `{agent}`: the {api} answered {status} but its body could not be read: {detail}"
            ),
        ),
        NetError::Status { status, body, .. } => {
            failure_error(post, &ApiFailure::from_body(status, &body))
        }
        too_large @ NetError::TooLarge { .. } => AgentError::new(
            BlockerCategory::AgentError,
            format!("agent `{agent}`: {too_large}"),
        ),
        NetError::CutShort { why, last } => {
            let error = net_error(post, timeout, *last);
            let why = match why {
                CutShort::RetryAfterTooLong(w) => format!(
                    "the API asks to retry after {} s, longer than this pipeline waits",
                    w.as_secs()
                ),
                CutShort::NoTimeLeft => {
                    "no time left within the agent's timeout to retry".to_string()
                }
            };
            AgentError {
                detail: format!("{} ({why})", error.detail),
                ..error
            }
        }
        NetError::NoTime { .. } => AgentError::new(
            BlockerCategory::Timeout,
            format!(
                "agent `{agent}`: no time left within the agent's timeout ({} s) to call the {api}",
                timeout.as_secs()
            ),
        ),
    }
}

/// Turns a failed response into a categorised, actionable error.
fn failure_error(post: &Post, f: &ApiFailure) -> AgentError {
    let what = match (&f.kind, &f.code) {
        (Some(k), Some(c)) => format!("{k}/{c}"),
        (Some(k), None) => k.clone(),
        (None, Some(c)) => c.clone(),
        (None, None) => "error".into(),
    };
    let said = format!(
        "agent `{}`: the {} answered {} {what}: {}",
        post.agent,
        post.api,
        f.status,
        tail(&f.message, 300)
    );
    let (category, help) = if f.is_quota() {
        (
            BlockerCategory::QuotaExhausted,
            "the account's spend cap or quota is exhausted; this is not retried. Raise the limit or add credits with the vendor, then run `spec-orchestrate resume`".to_string(),
        )
    } else {
        match f.status {
            401 | 403 => (
                BlockerCategory::EnvError,
                format!(
                    "check that {} holds a valid key with access to this model",
                    post.key_env
                ),
            ),
            404 => (
                BlockerCategory::EnvError,
                "check the agent's `model` and `base_url`".to_string(),
            ),
            429 | 529 => (
                BlockerCategory::RateLimited,
                "still rate limited or overloaded after the retries; try later or raise `max_retries`".to_string(),
            ),
            500..=599 | 408 | 409 => (
                BlockerCategory::AgentError,
                "the API kept failing after the retries".to_string(),
            ),
            _ => (
                BlockerCategory::AgentError,
                "the request was refused; see the message".to_string(),
            ),
        }
    };
    AgentError::new(category, format!("{said} — {help}"))
}

/// Decodes a 2xx body as the vendor's answer object; a body that is not one is
/// `malformed_output` quoting its start. `api` names the API (`Messages API`), `object` what the
/// body should have been (`a message`).
pub fn decode<T: serde::de::DeserializeOwned>(
    inv: &Invocation,
    api: &str,
    object: &str,
    text: &str,
) -> Result<T, AgentError> {
    serde_json::from_str(text).map_err(|e| {
        AgentError::new(
            BlockerCategory::MalformedOutput,
            format!(
                "agent `{}`: the {api} answered 2xx with a body that is not {object} ({e}): {}",
                inv.name,
                tail(text, 200)
            ),
        )
    })
}

/// The usage of a call, priced with the agent's price (free when it has none).
pub fn usage_of(inv: &Invocation, tokens: &Tokens) -> CallUsage {
    CallUsage {
        input_tokens: tokens.total_input(),
        output_tokens: tokens.output,
        usd: inv.price.map(|p| tokens.cost(&p)).unwrap_or(0.0),
    }
}

/// An answer that arrived but cannot be used (cut short, refused, failed): the error keeps the
/// usage, since those tokens were billed.
pub fn unusable(
    inv: &Invocation,
    usage: CallUsage,
    category: BlockerCategory,
    what: String,
) -> AgentError {
    AgentError {
        category,
        detail: format!("agent `{}`: {what}", inv.name),
        usage,
    }
}

/// What a vendor's response parser yields: the answer text, the priced usage, the response id.
pub type Parsed = Result<(String, CallUsage, Option<String>), AgentError>;

/// The part of a text-only HTTP call both vendors share: the agent's retry settings, the POST,
/// the vendor-specific `parse`, and turning the answer into the role's reply (a failure there
/// keeps the usage, since those tokens were billed).
pub fn exchange(
    inv: &Invocation,
    req: &AgentRequest,
    output: Output,
    post: Post,
    parse: impl Fn(&str) -> Parsed,
) -> Result<AgentReply, AgentError> {
    let text = post_json(&post, policy(inv))?;
    let (answer, usage, id) = parse(&text)?;
    let done = super::text_roles::finish(req, output, &answer, inv.redactor).map_err(|mut e| {
        e.usage = usage;
        e
    })?;
    Ok(AgentReply {
        text: done.text,
        status: ReplyStatus::Done,
        summary: done.summary,
        usage,
        session_id: id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_errors_are_never_retryable() {
        let anthropic = r#"{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your specified workspace API usage limits.","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
        let f = ApiFailure::from_body(429, anthropic);
        assert!(f.is_quota() && !f.is_retryable());
        let openai = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        assert!(ApiFailure::from_body(429, openai).is_quota());
        let limited = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#;
        let f = ApiFailure::from_body(429, limited);
        assert!(!f.is_quota() && f.is_retryable());
        let overloaded = ApiFailure::from_body(529, "not json at all");
        assert!(overloaded.is_retryable());
        assert_eq!(overloaded.message, "not json at all");
        assert!(!ApiFailure::from_body(400, "{}").is_retryable());
    }
}
