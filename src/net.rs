//! The one blocking HTTP client of the crate: GitHub REST and GraphQL, the Actions results
//! service (its own bearer token), signed blob URLs (no token at all), and the model APIs of the
//! `anthropic` and `openai` backends all go through [`Http::send`]; the model API proxy's
//! upstream leg, which relays answers while they stream, goes through [`Http::open`].
//!
//! One retry loop serves them all, because every one of these services throttles under load and
//! each caller used to grow its own loop with its own `Retry-After` reading: a request is tried
//! again on a transport failure and on the statuses its [`RetryPolicy`] calls retryable, waiting
//! what the server asks (`Retry-After`, read by [`retry_after`] only) or else an exponential
//! backoff with jitter. Redirects are followed only within the same origin: a token or an API key
//! never travels to another host on its own; a caller that must follow a redirect elsewhere
//! (a signed storage URL) does it itself, without credentials.

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

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
        /// The operation.
        what: String,
        /// Scheme and host only.
        host: String,
        /// HTTP status of the answer.
        status: u16,
        /// The read error.
        detail: String,
        /// The read ran out of time.
        timed_out: bool,
    },
    /// The server answered with a body larger than the client's cap ([`Http::with_body_cap`]):
    /// the read stopped at the cap instead of growing without end. Never retried: a server that
    /// answers an endless (or vast) body once will do it again.
    #[error("{what}: the answer of {host} (HTTP {status}) is larger than the {} this client reads{}; nothing of it was used. The server (or a proxy in front of it) is misbehaving, or the URL points at the wrong service: check it", crate::types::human_bytes(*.cap), .declared.map(|d| format!(" (it declares {})", crate::types::human_bytes(d))).unwrap_or_default())]
    TooLarge {
        /// The operation.
        what: String,
        /// Scheme and host only.
        host: String,
        /// HTTP status of the answer.
        status: u16,
        /// The cap, in bytes.
        cap: u64,
        /// The `Content-Length` the server announced, when it announced one.
        declared: Option<u64>,
    },
    /// The server answered with an error status (after retries for the retryable ones).
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
        /// The whole response body, for callers that read the vendor's error object.
        body: String,
    },
    /// The loop stopped retrying before its attempts ran out; `last` is the last failure.
    #[error("{last} ({why})")]
    CutShort {
        /// Why it stopped.
        why: CutShort,
        /// The failure that would otherwise have been retried.
        last: Box<NetError>,
    },
    /// The deadline passed before any attempt could be made.
    #[error("{what}: no time left to call {host}")]
    NoTime {
        /// The operation.
        what: String,
        /// Scheme and host only.
        host: String,
    },
}

/// Why [`Http::send`] stopped retrying early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutShort {
    /// The server asked to wait this long, beyond [`RetryPolicy::max_retry_after`], and the
    /// policy says to give up rather than cap the wait.
    RetryAfterTooLong(Duration),
    /// The wait would end after the call's deadline.
    NoTimeLeft,
}

impl std::fmt::Display for CutShort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CutShort::RetryAfterTooLong(w) => write!(
                f,
                "the server asks to retry after {} s, longer than this client waits",
                w.as_secs()
            ),
            CutShort::NoTimeLeft => f.write_str("no time left before the deadline to retry"),
        }
    }
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

/// Upper bound of one computed backoff delay.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// When a request is tried again, and how long the loop waits in between.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// First backoff delay (doubled on every retry, capped at [`MAX_BACKOFF`], half of it
    /// random), used when the server says nothing.
    pub base_delay: Duration,
    /// The longest `Retry-After` honoured as asked.
    pub max_retry_after: Duration,
    /// What happens beyond `max_retry_after`.
    pub long_wait: LongWait,
    /// Deadline of the whole call, retries and waits included. With a deadline, every attempt
    /// gets the time left as its timeout, so an attempt that times out ends the call.
    pub deadline: Option<Duration>,
    /// Whether an error status (400 and up) is worth another attempt, given the body.
    pub retryable: fn(u16, &str) -> bool,
}

impl RetryPolicy {
    /// The policy of the GitHub services (REST, GraphQL, artifacts, blob storage): five attempts,
    /// 2 s first backoff, 429 and 5xx retried, `Retry-After` followed up to a minute.
    pub fn services() -> RetryPolicy {
        RetryPolicy {
            attempts: 5,
            base_delay: Duration::from_secs(2),
            max_retry_after: Duration::from_secs(60),
            long_wait: LongWait::Cap,
            deadline: None,
            retryable: |status, _| status == 429 || status >= 500,
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
            let (error, asked) = match self.attempt(request, what, &host, attempt) {
                Ok(reply) => return Ok(reply),
                Err(failed) => failed,
            };
            if !self.retryable(&error) || attempt >= policy.attempts {
                return Err(error);
            }
            let wait = match asked {
                Some(w) if w > policy.max_retry_after => match policy.long_wait {
                    LongWait::Cap => policy.max_retry_after,
                    LongWait::GiveUp => {
                        return Err(cut_short(CutShort::RetryAfterTooLong(w), error));
                    }
                },
                Some(w) => w,
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

    /// One attempt: the reply of a status below 400, or the failure with the wait the server
    /// asked for.
    fn attempt(
        &self,
        request: RequestBuilder,
        what: &str,
        host: &str,
        attempt: u32,
    ) -> Result<Reply, (NetError, Option<Duration>)> {
        let resp = request
            .send()
            .map_err(|e| (transport_error(&e, what, host, attempt), None))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let asked = retry_after(&headers);
        let body = self
            .read_body(resp, what, host, status)
            .map_err(|error| (error, asked))?;
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
        };
        Err((error, asked))
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
            NetError::Status { status, body, .. } => (self.policy.retryable)(*status, body),
            // With a deadline the attempt's timeout was all the time left.
            NetError::Transport { timed_out, .. } => {
                !(*timed_out && self.policy.deadline.is_some())
            }
            NetError::Body { .. } => true,
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

/// The longest wait [`retry_after`] reports: a server asking for more (or sending a number too
/// large for a `Duration`) is read as asking for a day, which every policy refuses or caps.
pub const RETRY_AFTER_CEILING: Duration = Duration::from_secs(24 * 60 * 60);

/// The wait a response asks for: `retry-after-ms` (OpenAI), else `Retry-After` in seconds
/// (fractions allowed) or as an HTTP date; a date in the past means now. Garbage is `None`, and
/// anything beyond [`RETRY_AFTER_CEILING`] is the ceiling.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let secs = |s: f64| (s.is_finite() && s >= 0.0).then(|| capped_secs(s));
    if let Some(wait) = get("retry-after-ms")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|ms| secs(ms / 1000.0))
    {
        return Some(wait);
    }
    let value = get("retry-after")?.trim();
    if let Ok(s) = value.parse::<f64>() {
        return secs(s);
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(
        delta
            .to_std()
            .unwrap_or(Duration::ZERO)
            .min(RETRY_AFTER_CEILING),
    )
}

fn capped_secs(s: f64) -> Duration {
    if s >= RETRY_AFTER_CEILING.as_secs_f64() {
        RETRY_AFTER_CEILING
    } else {
        Duration::from_secs_f64(s)
    }
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
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn open_hands_an_error_status_back_at_once_with_its_body_unread() {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let mut served = 0;
            // One connection is expected; a second (a retry) would be counted.
            listener.set_nonblocking(false).unwrap();
            let (stream, _) = listener.accept().unwrap();
            served += 1;
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap() > 2 {
                line.clear();
            }
            let mut out = stream;
            out.write_all(b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 7\r\ncontent-length: 4\r\nconnection: close\r\n\r\nslow").unwrap();
            listener.set_nonblocking(true).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            served + usize::from(listener.accept().is_ok())
        });
        let http = Http::with(ClientSettings::default(), RetryPolicy::services()).unwrap();
        let url = format!("http://{addr}/v1/messages");
        let mut resp = http
            .open("relaying", &url, |c| c.post(&url).body("{}"))
            .expect("an error status is an answer, not an error");
        assert_eq!(resp.status().as_u16(), 429);
        assert_eq!(retry_after(resp.headers()), Some(Duration::from_secs(7)));
        let mut body = String::new();
        resp.read_to_string(&mut body).unwrap();
        assert_eq!(body, "slow");
        assert_eq!(
            server.join().unwrap(),
            1,
            "statuses are not retried by open"
        );
    }

    /// A server answering every connection with `head` then, for a chunked head, 64 KiB chunks
    /// until the client hangs up; returns its address and the bytes it managed to send.
    fn endless_server(
        head: &'static str,
    ) -> (
        std::net::SocketAddr,
        std::sync::Arc<std::sync::atomic::AtomicU64>,
    ) {
        use std::io::{BufRead, BufReader, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = sent.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let counter = counter.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    while reader.read_line(&mut line).unwrap_or(0) > 2 {
                        line.clear();
                    }
                    let mut out = stream;
                    if out.write_all(head.as_bytes()).is_err() || !head.contains("chunked") {
                        return;
                    }
                    let chunk = format!("10000\r\n{}\r\n", "x".repeat(0x10000));
                    while out.write_all(chunk.as_bytes()).is_ok() {
                        counter.fetch_add(0x10000, Ordering::Relaxed);
                    }
                });
            }
        });
        (addr, sent)
    }

    #[test]
    fn an_endless_body_ends_at_the_cap_with_a_typed_error() {
        let (addr, sent) = endless_server(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
        );
        let http = Http::with(ClientSettings::default(), RetryPolicy::services())
            .unwrap()
            .with_body_cap(1024 * 1024);
        let url = format!("http://{addr}/api");
        let e = http
            .send("listing things", &url, |c| c.get(&url))
            .unwrap_err();
        assert!(
            matches!(
                e,
                NetError::TooLarge {
                    cap: 1048576,
                    declared: None,
                    status: 200,
                    ..
                }
            ),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(
            text.contains("listing things") && text.contains("larger than the 1 MiB"),
            "{text}"
        );
        std::thread::sleep(Duration::from_millis(200));
        let sent = sent.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            sent < 16 * 1024 * 1024,
            "the client read on: {sent} bytes sent"
        );
    }

    #[test]
    fn a_declared_length_over_the_cap_is_refused_before_reading() {
        let (addr, _) = endless_server("HTTP/1.1 200 OK\r\ncontent-length: 99999999999\r\n\r\n");
        let http = Http::with(ClientSettings::default(), RetryPolicy::services()).unwrap();
        let url = format!("http://{addr}/zip");
        let started = Instant::now();
        let e = http.send("downloading", &url, |c| c.get(&url)).unwrap_err();
        assert!(
            matches!(
                e,
                NetError::TooLarge {
                    cap: JSON_BODY_CAP,
                    declared: Some(99999999999),
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("(it declares 95367.4 MiB)"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(10), "not retried");
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn retry_after_reads_seconds_fractions_and_milliseconds() {
        let wait = |pairs| retry_after(&headers(pairs));
        assert_eq!(wait(&[("retry-after", "7")]), Some(Duration::from_secs(7)));
        assert_eq!(wait(&[("retry-after", " 0 ")]), Some(Duration::ZERO));
        assert_eq!(
            wait(&[("retry-after", "1.5")]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            wait(&[("retry-after", "2"), ("retry-after-ms", "250")]),
            Some(Duration::from_millis(250)),
            "the finer header wins"
        );
        assert_eq!(
            wait(&[("retry-after", "2"), ("retry-after-ms", "soon")]),
            Some(Duration::from_secs(2)),
            "a garbled retry-after-ms falls back to Retry-After"
        );
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn retry_after_reads_http_dates() {
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Wed, 21 Oct 2015 07:28:00 GMT"
            )])),
            Some(Duration::ZERO),
            "a past date means now"
        );
        let soon = (chrono::Utc::now() + chrono::Duration::seconds(30)).to_rfc2822();
        let wait = retry_after(&headers(&[("retry-after", &soon)])).unwrap();
        assert!(
            wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
    }

    #[test]
    fn retry_after_refuses_garbage() {
        for garbage in ["soon", "-3", "NaN", "inf", "", "1e", "Wed, 99 Foo 2015"] {
            assert_eq!(
                retry_after(&headers(&[("retry-after", garbage)])),
                None,
                "{garbage:?}"
            );
        }
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "-1")])),
            None,
            "a negative retry-after-ms with no Retry-After"
        );
    }

    #[test]
    fn retry_after_caps_huge_values_instead_of_overflowing() {
        for huge in [
            "86401",
            "1e300",
            "99999999999999999999999",
            "18446744073709551615",
        ] {
            assert_eq!(
                retry_after(&headers(&[("retry-after", huge)])),
                Some(RETRY_AFTER_CEILING),
                "{huge}"
            );
        }
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "1e300")])),
            Some(RETRY_AFTER_CEILING)
        );
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Fri, 31 Dec 9999 23:59:59 GMT"
            )])),
            Some(RETRY_AFTER_CEILING)
        );
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
