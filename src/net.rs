//! A small blocking HTTP client for the calls octocrab cannot make: the Actions results service
//! (its own bearer token), signed blob URLs (no token at all), redirects that must be followed
//! *without* the Authorization header, and GraphQL at `GITHUB_GRAPHQL_URL`.
//!
//! Every request is retried on 429 and 5xx (and on connection failures), honouring
//! `Retry-After` when the server sends it, because the artifact service and blob storage throttle
//! under load and a checkpoint that fails to upload ends the chain. Redirects are never followed
//! automatically: the caller decides where its credentials may go.

use std::time::Duration;

use reqwest::blocking::{Client, RequestBuilder};
use reqwest::header::HeaderMap;

/// What went wrong talking to a remote service, with enough context to act on.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The client could not be built (TLS set-up).
    #[error("cannot set up the HTTP client: {0}")]
    Setup(String),
    /// The request never got an answer (DNS, connect, timeout), after every retry.
    #[error("{what}: no answer from {host} after {attempts} attempt(s): {detail}")]
    Transport {
        /// The operation, e.g. `uploading checkpoint spec-orchestrate-42-intake-a1`.
        what: String,
        /// Scheme and host only: URLs may carry signatures.
        host: String,
        /// Attempts made.
        attempts: u32,
        /// The transport error.
        detail: String,
    },
    /// The server answered with an error status (after retries for 429/5xx).
    #[error("{what}: {host} answered HTTP {status}{}: {detail}", if *.attempts > 1 { format!(" after {} attempts", .attempts) } else { String::new() })]
    Status {
        /// The operation.
        what: String,
        /// Scheme and host only.
        host: String,
        /// HTTP status.
        status: u16,
        /// Attempts made.
        attempts: u32,
        /// The start of the response body (GitHub's `message`, Twirp's `msg`, …).
        detail: String,
    },
}

/// A response read whole: status, headers and body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: HeaderMap,
    /// Response body.
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as JSON, or `Value::Null` when it is empty or not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The retrying client.
#[derive(Debug, Clone)]
pub struct Http {
    client: Client,
    attempts: u32,
    backoff: Duration,
    max_wait: Duration,
}

/// Installs the ring crypto provider for rustls once per process (reqwest is built without a
/// provider of its own, so that one TLS stack serves octocrab and reqwest alike).
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl Http {
    /// A client with a per-request timeout, no automatic redirects, 5 attempts per request.
    pub fn new() -> Result<Http, NetError> {
        install_tls_provider();
        let client = Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(300))
            .connect_timeout(Duration::from_secs(30))
            .user_agent(concat!("spec-orchestrate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| NetError::Setup(e.to_string()))?;
        Ok(Http {
            client,
            attempts: 5,
            backoff: Duration::from_secs(2),
            max_wait: Duration::from_secs(60),
        })
    }

    /// The underlying client, to build requests with.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Sends the request made by `build` (called once per attempt) and returns the reply.
    /// 2xx and 3xx are returned; 429/5xx and transport failures are retried; any other status,
    /// or the last failed attempt, is an error naming `what` and the host.
    pub fn send(
        &self,
        what: &str,
        url: &str,
        build: impl Fn(&Client) -> RequestBuilder,
    ) -> Result<Reply, NetError> {
        let host = host_of(url);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= self.attempts;
            match build(&self.client).send() {
                Err(e) => {
                    if last {
                        return Err(NetError::Transport {
                            what: what.to_string(),
                            host,
                            attempts: attempt,
                            detail: without_url(&e),
                        });
                    }
                    let wait = self.backoff * 2u32.pow(attempt - 1);
                    tracing::warn!(what, attempt, ?wait, "transport error, retrying");
                    std::thread::sleep(wait.min(self.max_wait));
                }
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let headers = resp.headers().clone();
                    let body = resp.bytes().map(|b| b.to_vec()).unwrap_or_default();
                    if status < 400 {
                        return Ok(Reply {
                            status,
                            headers,
                            body,
                        });
                    }
                    let retryable = status == 429 || status >= 500;
                    if !retryable || last {
                        return Err(NetError::Status {
                            what: what.to_string(),
                            host,
                            status,
                            attempts: attempt,
                            detail: error_detail(&body),
                        });
                    }
                    let wait = retry_after(&headers)
                        .unwrap_or_else(|| self.backoff * 2u32.pow(attempt - 1))
                        .min(self.max_wait);
                    tracing::warn!(what, status, attempt, ?wait, "retrying");
                    eprintln!(
                        "    {what}: HTTP {status} from {host}; retrying in {} s",
                        wait.as_secs_f32()
                    );
                    std::thread::sleep(wait);
                }
            }
        }
    }
}

/// `Retry-After` as seconds or as an HTTP date.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let delta = at.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

/// `scheme://host[:port]` of a URL, for messages: the path and query of signed URLs carry
/// signatures and must not be printed.
pub fn host_of(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => match u.port() {
            Some(p) => format!("{}://{}:{p}", u.scheme(), u.host_str().unwrap_or("")),
            None => format!("{}://{}", u.scheme(), u.host_str().unwrap_or("")),
        },
        Err(_) => "(invalid URL)".into(),
    }
}

fn without_url(e: &reqwest::Error) -> String {
    // reqwest's Display includes the full URL (with a signed query); drop it.
    let mut inner: &dyn std::error::Error = e;
    let mut parts = Vec::new();
    while let Some(src) = inner.source() {
        parts.push(src.to_string());
        inner = src;
    }
    if parts.is_empty() {
        if e.is_timeout() {
            "timed out".into()
        } else if e.is_connect() {
            "connection failed".into()
        } else {
            "request failed".into()
        }
    } else {
        parts.join(": ")
    }
}

/// The useful part of an error body: GitHub's `message`, Twirp's `msg`, else the first 300
/// characters of the text.
fn error_detail(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        for key in ["message", "msg", "error"] {
            if let Some(m) = v.get(key).and_then(|m| m.as_str()) {
                return m.to_string();
            }
        }
    }
    let text = String::from_utf8_lossy(body);
    let t: String = text.trim().chars().take(300).collect();
    if t.is_empty() {
        "(empty body)".into()
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", "7".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO), "a past date: now");
        h.insert("retry-after", "soon".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn hosts_never_carry_paths_or_signatures() {
        assert_eq!(
            host_of("https://blob.example.net/c/a.zip?sig=SECRET&se=1"),
            "https://blob.example.net"
        );
        assert_eq!(host_of("http://127.0.0.1:8080/x"), "http://127.0.0.1:8080");
        assert_eq!(
            error_detail(br#"{"message":"Bad credentials"}"#),
            "Bad credentials"
        );
        assert_eq!(error_detail(br#"{"code":"internal","msg":"boom"}"#), "boom");
    }
}
