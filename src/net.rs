//! The one blocking HTTP client of the crate: GitHub REST and GraphQL, the Actions results
//! service (its own bearer token), signed blob URLs (no token at all), and the model APIs of the
//! `anthropic` and `openai` backends all go through [`Http::send`]; the model API proxy's
//! upstream leg, which relays answers while they stream, goes through [`Http::open`].
//!
//! One retry loop serves them all, because every one of these services throttles under load and
//! each caller used to grow its own loop with its own `Retry-After` reading: a request is tried
//! again on a transport failure and on the statuses its [`RetryPolicy`] calls retryable, waiting
//! what the server asks (`Retry-After`, read by [`wait::retry_after`] only) or else an exponential
//! backoff with jitter. Redirects are followed only within the same origin: a token or an API key
//! never travels to another host on its own; a caller that must follow a redirect elsewhere
//! (a signed storage URL) does it itself, without credentials.

use std::time::{Duration, Instant};

use reqwest::blocking::{Client, RequestBuilder};
use reqwest::header::HeaderMap;

pub mod wait;

use wait::{Throttle, backoff};

/// What went wrong talking to a remote service, with enough context to act on.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)]
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
        attempts: u32,
        /// The transport error, every cause in order (never the URL).
        detail: String,
        /// The innermost cause alone (`Connection refused (os error 111)`).
        cause: String,
        /// The attempt ran out of time.
        timed_out: bool,
        /// No connection could be made (as opposed to one lost midway).
        connect: bool,
    },
    /// The server answered, but its body could not be read.
    #[error("{what}: the answer of {host} (HTTP {status}) could not be read: {detail}")]
    Body {
        what: String,
        host: String,
        status: u16,
        detail: String,
        /// The read ran out of time.
        timed_out: bool,
    },
    /// The server answered with a body larger than the client's cap ([`Http::with_body_cap`]):
    /// the read stopped at the cap instead of growing without end. Never retried: a server that
    /// answers an endless (or vast) body once will do it again.
    #[error("{what}: the answer of {host} (HTTP {status}) is larger than the {} this client reads{}; nothing of it was used. The server (or a proxy in front of it) is misbehaving, or the URL points at the wrong service: check it", crate::types::human_bytes(*.cap), .declared.map(|d| format!(" (it declares {})", crate::types::human_bytes(d))).unwrap_or_default())]
    TooLarge {
        what: String,
        host: String,
        status: u16,
        /// The cap, in bytes.
        cap: u64,
        /// The `Content-Length` the server announced, when it announced one.
        declared: Option<u64>,
    },
    /// The server answered with an error status (after retries for the retryable ones).
    #[error("{what}: {host} answered HTTP {status}{}: {detail}", if *.attempts > 1 { format!(" after {} attempts", .attempts) } else { String::new() })]
    Status {
        what: String,
        host: String,
        status: u16,
        attempts: u32,
        /// The start of the response body (GitHub's `message`, Twirp's `msg`, …).
        detail: String,
        /// The whole response body, for callers that read the vendor's error object.
        body: String,
        /// The answer's throttling headers (`Retry-After`, `x-ratelimit-*`).
        throttle: Box<Throttle>,
    },
    /// The loop stopped retrying before its attempts ran out; `last` is the last failure.
    #[error("{last} ({why})")]
    CutShort {
        why: CutShort,
        /// The failure that would otherwise have been retried.
        last: Box<NetError>,
    },
    /// The deadline passed before any attempt could be made.
    #[error("{what}: no time left to call {host}")]
    NoTime { what: String, host: String },
}

/// Why [`Http::send`] stopped retrying early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CutShort {
    /// The server asked to wait this long, beyond [`RetryPolicy::max_retry_after`], and the
    /// policy says to give up rather than cap the wait.
    #[error("the server asks to retry after {} s, longer than this client waits", .0.as_secs())]
    RetryAfterTooLong(Duration),
    /// The wait would end after the call's deadline.
    #[error("no time left before the deadline to retry")]
    NoTimeLeft,
}

/// The most [`Http::send`] reads of one answer unless told otherwise: every JSON API this client
/// talks to (GitHub REST and GraphQL, the artifact service, the model APIs) answers far less, so
/// a body beyond it is a misbehaving or hostile server, and reading on would only grow memory.
pub const JSON_BODY_CAP: u64 = 32 * 1024 * 1024;

/// The most read of an artifact download (a checkpoint or evidence zip, held in memory by its
/// readers): far above what a run uploads, far below what would exhaust a runner.
pub const DOWNLOAD_BODY_CAP: u64 = 512 * 1024 * 1024;

/// A response read whole: status, headers and body.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// What to do when a server asks, with `Retry-After`, for a longer wait than
/// [`RetryPolicy::max_retry_after`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LongWait {
    /// Wait the maximum and try again (a throttled artifact upload usually clears soon).
    Cap,
    /// Stop and report the wait (a model API asking for ten minutes will not be waited for).
    GiveUp,
}

/// When a request is tried again, and how long the loop waits in between.
#[derive(Debug, Clone, Copy)]
#[allow(missing_docs)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// First backoff delay (doubled on every retry, capped at [`wait::MAX_BACKOFF`], half of it
    /// random), used when the server says nothing.
    pub base_delay: Duration,
    /// The longest `Retry-After` honoured as asked.
    pub max_retry_after: Duration,
    pub long_wait: LongWait,
    /// Deadline of the whole call, retries and waits included. With a deadline, every attempt
    /// gets the time left as its timeout, so an attempt that times out ends the call.
    pub deadline: Option<Duration>,
    /// Whether an error status (400 and up) is worth another attempt, given the body and the
    /// answer's throttling headers.
    pub retryable: fn(u16, &str, &Throttle) -> bool,
    /// Whether a request whose answer was lost (the connection dropped or timed out after it
    /// was sent, or the body could not be read) is sent again. `false` for a write that is not
    /// idempotent, whose effect may have happened: its caller looks the effect up first. A
    /// request that never reached the server (no connection) is always sent again.
    pub resend_after_loss: bool,
}

impl RetryPolicy {
    /// The policy of the GitHub services (REST, GraphQL, artifacts, blob storage): five attempts,
    /// 2 s first backoff, 5xx, 429 and rate-limited 403s retried ([`wait::github_retryable`]),
    /// `Retry-After` followed up to a minute, a primary rate limit's reset waited for when it
    /// comes within that minute (else the call ends at once with the reset to report).
    pub fn services() -> RetryPolicy {
        RetryPolicy {
            attempts: 5,
            base_delay: Duration::from_secs(2),
            max_retry_after: Duration::from_secs(60),
            long_wait: LongWait::Cap,
            deadline: None,
            retryable: wait::github_retryable,
            resend_after_loss: true,
        }
    }

    /// The policy of a GitHub write that is not idempotent (a new comment, pull request,
    /// dispatch or artifact): rate limits waited out as [`RetryPolicy::services`] does, since
    /// GitHub refused the request before acting on it; but a server error or a lost answer is
    /// handed back at once, since the write may have taken effect (a 502 from GitHub's load
    /// balancers can come after it), and only a lookup can tell.
    pub fn writes() -> RetryPolicy {
        RetryPolicy {
            retryable: |status, body, throttle| {
                status < 500 && wait::github_retryable(status, body, throttle)
            },
            resend_after_loss: false,
            ..RetryPolicy::services()
        }
    }
}

/// The client's timeouts.
#[derive(Debug, Clone, Copy)]
pub struct ClientSettings {
    /// Timeout of one request (connect, send, read).
    pub timeout: Duration,
    /// Timeout of the connection alone.
    pub connect_timeout: Duration,
}

impl Default for ClientSettings {
    /// Large uploads and slow services: five minutes a request, thirty seconds to connect.
    fn default() -> ClientSettings {
        ClientSettings {
            timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(30),
        }
    }
}

/// The retrying client.
#[derive(Debug, Clone)]
pub struct Http {
    client: Client,
    policy: RetryPolicy,
    server: Option<String>,
    body_cap: u64,
}

/// Installs the ring crypto provider for rustls once per process (reqwest is built without a
/// provider of its own; installing twice is refused harmlessly).
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Follows a redirect only to the origin of the first request: credentials set on a request
/// stay with the host they were meant for.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if same && attempt.previous().len() < 10 {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

impl Http {
    /// A client for the GitHub services: [`ClientSettings::default`] and
    /// [`RetryPolicy::services`].
    pub fn new() -> Result<Http, NetError> {
        Http::with(ClientSettings::default(), RetryPolicy::services())
    }

    /// A client with these timeouts and this retry policy.
    pub fn with(settings: ClientSettings, policy: RetryPolicy) -> Result<Http, NetError> {
        install_tls_provider();
        let client = Client::builder()
            .redirect(same_origin_redirects())
            .timeout(settings.timeout)
            .connect_timeout(settings.connect_timeout)
            .user_agent(concat!("spec-orchestrate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| NetError::Setup(e.to_string()))?;
        Ok(Http {
            client,
            policy,
            server: None,
            body_cap: JSON_BODY_CAP,
        })
    }

    /// The same client reading at most `cap` bytes of an answer's body (default
    /// [`JSON_BODY_CAP`]; [`DOWNLOAD_BODY_CAP`] for artifact downloads). A longer body ends the
    /// call with [`NetError::TooLarge`] once `cap` bytes are read (at once when its
    /// `Content-Length` says so), so an endless answer costs `cap` bytes of memory, no more.
    pub fn with_body_cap(mut self, cap: u64) -> Http {
        self.body_cap = cap;
        self
    }

    /// The same client under another retry policy (the connection pool is shared).
    pub fn with_policy(mut self, policy: RetryPolicy) -> Http {
        self.policy = policy;
        self
    }

    /// Names the server in progress lines (`Anthropic Messages API answered 429`) instead of
    /// its host.
    pub fn named(mut self, server: &str) -> Http {
        self.server = Some(server.to_string());
        self
    }

    /// Sends the request made by `build` (called once per attempt) and returns the reply.
    /// Statuses below 400 are returned; transport failures and retryable statuses are tried
    /// again as the policy says; any other status, or the last failure, is an error naming
    /// `what` and the host.
    pub fn send(
        &self,
        what: &str,
        url: &str,
        build: impl Fn(&Client) -> RequestBuilder,
    ) -> Result<Reply, NetError> {
        let host = host_of(url);
        let policy = &self.policy;
        let deadline = policy
            .deadline
            .map(|d| crate::process::deadline(Instant::now(), d));
        let mut last = None;
        for attempt in 1..=policy.attempts.max(1) {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                break;
            }
            let mut request = build(&self.client);
            if let Some(left) = left {
                request = request.timeout(left);
            }
            let error = match self.attempt(request, what, &host, attempt) {
                Ok(reply) => return Ok(reply),
                Err(failed) => failed,
            };
            if !self.retryable(&error) || attempt >= policy.attempts {
                return Err(error);
            }
            let asked = match &error {
                NetError::Status { throttle, .. } => throttle.asked(unix_now()),
                _ => None,
            };
            let wait = match asked {
                // A rate-limit reset is waited for whole or not at all: a call before it fails.
                Some((w, true)) if w > policy.max_retry_after => {
                    return Err(cut_short(CutShort::RetryAfterTooLong(w), error));
                }
                Some((w, _)) if w > policy.max_retry_after => match policy.long_wait {
                    LongWait::Cap => policy.max_retry_after,
                    LongWait::GiveUp => {
                        return Err(cut_short(CutShort::RetryAfterTooLong(w), error));
                    }
                },
                Some((w, _)) => w,
                None => backoff(policy.base_delay, attempt),
            };
            if deadline.is_some_and(|d| d.saturating_duration_since(Instant::now()) <= wait) {
                return Err(cut_short(CutShort::NoTimeLeft, error));
            }
            self.report_retry(what, &host, &error, wait, attempt);
            last = Some(error);
            std::thread::sleep(wait);
        }
        Err(last.unwrap_or_else(|| NetError::NoTime {
            what: what.to_string(),
            host,
        }))
    }

    /// One attempt: the reply of a status below 400, or the failure (an error status carries
    /// the wait the server asked for in its [`Throttle`]).
    fn attempt(
        &self,
        request: RequestBuilder,
        what: &str,
        host: &str,
        attempt: u32,
    ) -> Result<Reply, NetError> {
        let resp = request
            .send()
            .map_err(|e| transport_error(&e, what, host, attempt))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = self.read_body(resp, what, host, status)?;
        if status < 400 {
            return Ok(Reply {
                status,
                headers,
                body,
            });
        }
        let error = NetError::Status {
            what: what.to_string(),
            host: host.to_string(),
            status,
            attempts: attempt,
            detail: error_detail(&body),
            body: String::from_utf8_lossy(&body).into_owned(),
            throttle: Box::new(Throttle::of(&headers)),
        };
        Err(error)
    }

    /// Reads an answer's body, at most `body_cap` bytes of it: a longer one (announced or not)
    /// is [`NetError::TooLarge`], read no further than one byte past the cap.
    fn read_body(
        &self,
        resp: reqwest::blocking::Response,
        what: &str,
        host: &str,
        status: u16,
    ) -> Result<Vec<u8>, NetError> {
        use std::io::Read;
        let cap = self.body_cap;
        let declared = resp.content_length();
        let too_large = |declared| NetError::TooLarge {
            what: what.to_string(),
            host: host.to_string(),
            status,
            cap,
            declared,
        };
        if declared.is_some_and(|n| n > cap) {
            return Err(too_large(declared));
        }
        let mut body = Vec::new();
        resp.take(cap.saturating_add(1))
            .read_to_end(&mut body)
            .map_err(|e| {
                let inner = e.get_ref().and_then(|i| i.downcast_ref::<reqwest::Error>());
                NetError::Body {
                    what: what.to_string(),
                    host: host.to_string(),
                    status,
                    detail: match inner {
                        Some(r) => transport_detail(r, &causes(r)),
                        None => e.to_string(),
                    },
                    timed_out: inner.is_some_and(reqwest::Error::is_timeout)
                        || e.kind() == std::io::ErrorKind::TimedOut,
                }
            })?;
        if body.len() as u64 > cap {
            return Err(too_large(declared));
        }
        Ok(body)
    }

    /// Sends the request made by `build` and returns the response as soon as its head arrives,
    /// whatever its status, with the body left to be read as it comes. This is for a relay that
    /// passes an answer on while it streams (the model API proxy): [`Http::send`] reads the body
    /// whole, which would hold a streamed answer back until its last byte.
    ///
    /// Statuses are the caller's: a relay hands an error status to its own client unchanged,
    /// `Retry-After` included, and that client decides whether to try again (retrying here too
    /// would multiply its retries). Transport failures are tried again as the policy says, with
    /// its backoff; the policy's deadline does not apply (an answer streams as long as it
    /// streams). Each read of the body is bounded by the client's timeout.
    pub fn open(
        &self,
        what: &str,
        url: &str,
        build: impl Fn(&Client) -> RequestBuilder,
    ) -> Result<reqwest::blocking::Response, NetError> {
        let host = host_of(url);
        let attempts = self.policy.attempts.max(1);
        let mut attempt = 1;
        loop {
            let error = match build(&self.client).send() {
                Ok(resp) => return Ok(resp),
                Err(e) => transport_error(&e, what, &host, attempt),
            };
            if attempt >= attempts || !self.retryable(&error) {
                return Err(error);
            }
            let wait = backoff(self.policy.base_delay, attempt);
            self.report_retry(what, &host, &error, wait, attempt);
            std::thread::sleep(wait);
            attempt += 1;
        }
    }

    /// Whether `error` may go away on another attempt.
    fn retryable(&self, error: &NetError) -> bool {
        match error {
            NetError::Status {
                status,
                body,
                throttle,
                ..
            } => (self.policy.retryable)(*status, body, throttle),
            // With a deadline the attempt's timeout was all the time left.
            NetError::Transport {
                timed_out, connect, ..
            } => {
                (*connect || self.policy.resend_after_loss)
                    && !(*timed_out && self.policy.deadline.is_some())
            }
            NetError::Body { .. } => self.policy.resend_after_loss,
            _ => false,
        }
    }

    fn report_retry(&self, what: &str, host: &str, error: &NetError, wait: Duration, attempt: u32) {
        let status = match error {
            NetError::Status { status, .. } => status.to_string(),
            _ => "connection failure".to_string(),
        };
        let server = self.server.as_deref().unwrap_or(host);
        tracing::warn!(what, server, status = %status, wait_ms = wait.as_millis() as u64, attempt, "retrying");
        crate::events::emit(crate::events::Event::Retry {
            what: what.to_string(),
            server: server.to_string(),
            status,
            wait_secs: wait.as_secs_f64(),
            attempt: attempt + 1,
            attempts: self.policy.attempts,
        });
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The error of an attempt that got no answer, every cause named, the URL left out.
fn transport_error(e: &reqwest::Error, what: &str, host: &str, attempt: u32) -> NetError {
    let causes = causes(e);
    NetError::Transport {
        what: what.to_string(),
        host: host.to_string(),
        attempts: attempt,
        detail: transport_detail(e, &causes),
        cause: causes.last().cloned().unwrap_or_else(|| e.to_string()),
        timed_out: e.is_timeout(),
        connect: e.is_connect(),
    }
}

fn cut_short(why: CutShort, last: NetError) -> NetError {
    NetError::CutShort {
        why,
        last: Box::new(last),
    }
}

/// `scheme://host[:port]` of a URL, for messages: the path and query of signed URLs carry
/// signatures and must not be printed.
pub fn host_of(url: &str) -> String {
    let Ok(u) = reqwest::Url::parse(url) else {
        return "(invalid URL)".into();
    };
    let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
    format!("{}://{}{port}", u.scheme(), u.host_str().unwrap_or(""))
}

/// The messages of an error's sources, outermost first: reqwest's own Display includes the full
/// URL (with a signed query), its sources do not.
fn causes(e: &reqwest::Error) -> Vec<String> {
    let mut inner: &dyn std::error::Error = e;
    let mut parts = Vec::new();
    while let Some(src) = inner.source() {
        parts.push(src.to_string());
        inner = src;
    }
    parts
}

fn transport_detail(e: &reqwest::Error, causes: &[String]) -> String {
    if !causes.is_empty() {
        causes.join(": ")
    } else if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "connection failed".into()
    } else {
        "request failed".into()
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
mod tests;
