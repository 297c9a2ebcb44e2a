//! The HTTP plumbing shared by the `anthropic` and `openai` backends: one POST with a deadline,
//! retries with exponential backoff and jitter on the statuses that mean "try again"
//! (429, 500, 502, 503, 504, 529 and dropped connections), `Retry-After` honoured, and the errors
//! that mean "the money ran out" recognised so that they are never retried.
//!
//! Retrying a spend cap or an exhausted quota would only burn time (and, with some vendors,
//! money): those errors become [`BlockerCategory::QuotaExhausted`], which stops the run with a
//! draft instead of failing over to another agent. Everything reported here is secret-free: the
//! key travels in a header marked sensitive and is never part of a message.

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;

use super::text_roles::Output;
use super::{
    AgentError, AgentReply, AgentRequest, BlockerCategory, CallUsage, Invocation, ReplyStatus, tail,
};

/// Retries when the agent does not configure `max_retries`.
pub const DEFAULT_MAX_RETRIES: u32 = 4;
/// First backoff delay when the agent does not configure `retry_base_ms`.
pub const DEFAULT_RETRY_BASE_MS: u64 = 1_000;
/// Upper bound of one computed backoff delay.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
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
    /// Deadline of the whole call, retries and waits included.
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff delay.
    pub base_delay: Duration,
    /// The environment variable holding the key (named in authentication errors).
    pub key_env: &'a str,
}

/// The error object both vendors put in a non-2xx body.
#[derive(Debug, Default, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: Option<ErrorObject>,
}

#[derive(Debug, Default, Deserialize)]
struct ErrorObject {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
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

/// The wait a response asks for: `retry-after-ms`, else `Retry-After` in seconds or as an
/// HTTP date.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = get("retry-after")?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

/// Exponential backoff for retry number `retry` (1-based) with "equal jitter": half the delay
/// fixed, half random, so that many runners hit by the same overload do not return in step.
pub fn backoff(base: Duration, retry: u32) -> Duration {
    let exp = base.saturating_mul(1u32 << retry.saturating_sub(1).min(16));
    let capped = exp.min(MAX_BACKOFF);
    let half = capped / 2;
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(retry);
    let unit = (h.finish() % 10_000) as f64 / 10_000.0;
    half + half.mul_f64(unit)
}

fn client(timeout: Duration) -> Result<reqwest::blocking::Client, AgentError> {
    // reqwest is built without a default crypto provider; use ring, which octocrab already
    // links. Installing twice is refused harmlessly.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::blocking::Client::builder()
        .connect_timeout(Duration::from_secs(15).min(timeout))
        .timeout(timeout)
        .user_agent(concat!("spec-orchestrate/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| {
            AgentError::new(
                BlockerCategory::EnvError,
                format!("cannot build the HTTP client: {e}"),
            )
        })
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

/// Sends the POST, retrying what can be retried, and returns the body of the 2xx response.
pub fn post_json(post: &Post) -> Result<String, AgentError> {
    let start = Instant::now();
    let deadline = start + post.timeout;
    let headers = header_map(post)?;
    let body = serde_json::to_vec(&post.body).map_err(|e| {
        AgentError::new(
            BlockerCategory::EnvError,
            format!("request not serialisable: {e}"),
        )
    })?;
    let client = client(post.timeout)?;
    let attempts = post.max_retries + 1;
    let mut last: Option<AgentError> = None;
    for attempt in 1..=attempts {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            break;
        }
        let failed = match send_once(post, &client, &headers, &body, remaining)? {
            Sent::Body(text) => return Ok(text),
            Sent::Failed(failed) => failed,
        };
        let (wait, error) = next_try(post, failed, attempt, attempts, deadline)?;
        last = Some(error);
        std::thread::sleep(wait);
    }
    Err(last.unwrap_or_else(|| {
        AgentError::new(
            BlockerCategory::Timeout,
            format!(
                "agent `{}`: no time left within the agent's timeout ({} s) to call the {}",
                post.agent,
                post.timeout.as_secs(),
                post.api
            ),
        )
    }))
}

/// How one POST ended when it did not end the call.
enum Sent {
    /// A 2xx response's body.
    Body(String),
    /// A failure that a retry may fix.
    Failed(Failed),
}

/// A failed POST: what the API said (when it answered), its `Retry-After`, and the error to
/// report if no retry follows.
struct Failed {
    failure: Option<ApiFailure>,
    wait_hint: Option<Duration>,
    error: AgentError,
}

/// Sends the POST once within `remaining`; a timeout ends the call (the agent's time is spent).
fn send_once(
    post: &Post,
    client: &reqwest::blocking::Client,
    headers: &HeaderMap,
    body: &[u8],
    remaining: Duration,
) -> Result<Sent, AgentError> {
    let sent = client
        .post(&post.url)
        .headers(headers.clone())
        .header("content-type", "application/json")
        .body(body.to_vec())
        .timeout(remaining)
        .send();
    let (failure, wait_hint, error) = match sent {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let wait = retry_after(resp.headers());
            let text = resp.text().map_err(|e| {
                AgentError::new(
                    if e.is_timeout() {
                        BlockerCategory::Timeout
                    } else {
                        BlockerCategory::AgentError
                    },
                    format!(
                        "agent `{}`: the {} answered {status} but its body could not be read: {e}",
                        post.agent, post.api
                    ),
                )
            });
            match text {
                Ok(t) if (200..300).contains(&status) => return Ok(Sent::Body(t)),
                Ok(t) => {
                    let f = ApiFailure::from_body(status, &t);
                    let e = failure_error(post, &f);
                    (Some(f), wait, e)
                }
                Err(e) => (None, wait, e),
            }
        }
        Err(e) if e.is_timeout() => {
            return Err(AgentError::new(
                BlockerCategory::Timeout,
                format!(
                    "agent `{}`: the {} did not answer within the agent's timeout ({} s)",
                    post.agent,
                    post.api,
                    post.timeout.as_secs()
                ),
            ));
        }
        Err(e) => {
            let what = if e.is_connect() {
                "could not connect to"
            } else {
                "lost the connection to"
            };
            let err = AgentError::new(
                BlockerCategory::ToolUnavailable,
                format!(
                    "agent `{}`: {what} the {} at {} ({}); check `base_url` and the network",
                    post.agent,
                    post.api,
                    post.url,
                    root_cause(&e)
                ),
            );
            (None, None, err)
        }
    };
    Ok(Sent::Failed(Failed {
        failure,
        wait_hint,
        error,
    }))
}

/// Whether and when to retry after `failed` (attempt `attempt` of `attempts`): not for a
/// refusal that cannot change or a spent quota, not after a `Retry-After` longer than this
/// pipeline waits, not past the deadline. Announces the retry; returns the wait and the error
/// to report if every attempt fails.
fn next_try(
    post: &Post,
    failed: Failed,
    attempt: u32,
    attempts: u32,
    deadline: Instant,
) -> Result<(Duration, AgentError), AgentError> {
    let Failed {
        failure,
        wait_hint,
        error,
    } = failed;
    let retryable = failure.as_ref().is_none_or(ApiFailure::is_retryable)
        && error.category != BlockerCategory::QuotaExhausted;
    if !retryable || attempt == attempts {
        return Err(error);
    }
    let wait = match wait_hint {
        Some(w) if w > MAX_RETRY_AFTER => {
            return Err(AgentError {
                detail: format!(
                    "{} (the API asks to retry after {} s, longer than this pipeline waits)",
                    error.detail,
                    w.as_secs()
                ),
                ..error
            });
        }
        Some(w) => w,
        None => backoff(post.base_delay, attempt),
    };
    if Instant::now() + wait >= deadline {
        return Err(AgentError {
            detail: format!(
                "{} (no time left within the agent's timeout to retry)",
                error.detail
            ),
            ..error
        });
    }
    let status = failure
        .as_ref()
        .map(|f| f.status.to_string())
        .unwrap_or_else(|| "connection failure".into());
    tracing::warn!(agent = post.agent, status = %status, wait_ms = wait.as_millis() as u64, attempt, "retrying the API call");
    eprintln!(
        "    {}: {} answered {status}; retrying in {:.1} s (attempt {} of {attempts})",
        post.agent,
        post.api,
        wait.as_secs_f64(),
        attempt + 1
    );
    Ok((wait, error))
}

/// The innermost error message (reqwest's Display hides the useful part in its sources).
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
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

/// What a vendor's response parser yields: the answer text, the priced usage, the response id.
pub type Parsed = Result<(String, CallUsage, Option<String>), AgentError>;

/// The part of a text-only HTTP call both vendors share: the agent's retry settings, the POST,
/// the vendor-specific `parse`, and turning the answer into the role's reply (a failure there
/// keeps the usage, since those tokens were billed).
pub fn exchange(
    inv: &Invocation,
    req: &AgentRequest,
    output: Output,
    mut post: Post,
    parse: impl Fn(&str) -> Parsed,
) -> Result<AgentReply, AgentError> {
    post.max_retries = inv.agent.max_retries.unwrap_or(DEFAULT_MAX_RETRIES);
    post.base_delay =
        Duration::from_millis(inv.agent.retry_base_ms.unwrap_or(DEFAULT_RETRY_BASE_MS));
    post.timeout = Duration::from_secs(inv.timeout_s);
    let text = post_json(&post)?;
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

    #[test]
    fn retry_after_takes_seconds_milliseconds_and_dates() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut d = HeaderMap::new();
        d.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(
            retry_after(&d),
            Some(Duration::ZERO),
            "a past date means now"
        );
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn backoff_doubles_within_jitter_and_is_capped() {
        let base = Duration::from_millis(100);
        for retry in 1..=4u32 {
            let full = base * (1 << (retry - 1));
            let d = backoff(base, retry);
            assert!(d >= full / 2 && d <= full, "retry {retry}: {d:?}");
        }
        assert!(backoff(Duration::from_secs(10), 30) <= MAX_BACKOFF);
    }
}
