//! The proxy's HTTP side: a hyper HTTP/1 server on the loopback listener, one task per
//! connection, and for every request: check the token, check the budget, swap the token for the
//! real key, forward, and pump the answer back chunk by chunk while metering it.
//!
//! The upstream leg goes through the crate's one HTTP client, [`Http::open`]: it is blocking, so
//! the request and the reading of the answer run on the runtime's blocking threads, and the
//! chunks cross to the server side through a bounded channel. `open` returns at the answer's
//! head and leaves the body to be read as it arrives, so a streamed answer is passed on chunk by
//! chunk, never buffered whole.
//!
//! Every wait is bounded: reading a request head and body, connecting upstream, and each chunk of
//! the answer (an upstream that stops sending for [`CHUNK_WAIT`] ends the exchange).

use std::convert::Infallible;
use std::io::Read;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use super::meter::ExchangeMeter;
use super::{MAX_REFUSALS, Route, Shared, Vendor, allowed, budget_message};
use crate::net::{ClientSettings, Http, LongWait, RetryPolicy};

/// Largest request body accepted (model requests with quoted files are large, not this large).
const MAX_REQUEST: usize = 64 * 1024 * 1024;
/// Time to receive a request's head.
const HEAD_WAIT: Duration = Duration::from_secs(30);
/// Time to receive a whole request body from the local client.
const BODY_WAIT: Duration = Duration::from_secs(120);
/// Time to connect to the upstream.
const CONNECT_WAIT: Duration = Duration::from_secs(15);
/// Longest silence between two chunks of an answer (models think before they stream).
const CHUNK_WAIT: Duration = Duration::from_secs(600);
/// Chunks buffered between the upstream and a slow client before the pump waits.
const CHANNEL_DEPTH: usize = 32;
/// Largest chunk read from the upstream at once (a read returns what has arrived, up to this).
const READ_SIZE: usize = 16 * 1024;

/// One attempt per request: the proxy is transparent, so an error status (`Retry-After`
/// included) or a failed connection reaches the agent's own client, which retries as it always
/// does; retrying here as well would multiply its retries and could bill a request twice.
const RELAY: RetryPolicy = RetryPolicy {
    attempts: 1,
    base_delay: Duration::from_secs(1),
    max_retry_after: Duration::ZERO,
    long_wait: LongWait::GiveUp,
    deadline: None,
    retryable: |_, _, _| false,
    resend_after_loss: true,
};

type ProxyBody = BoxBody<Bytes, Infallible>;

/// A response body fed chunk by chunk from the pump task: nothing is buffered whole.
struct ChannelBody {
    rx: tokio::sync::mpsc::Receiver<Bytes>,
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx.poll_recv(cx).map(|c| c.map(|b| Ok(Frame::data(b))))
    }
}

/// Runs the server until `stop` fires; reports readiness (or why it cannot start) on `ready`.
pub(super) fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            let _ = ready.send(Err(format!("no runtime: {e}")));
            return;
        }
    };
    // Built (and, after the runtime, dropped) outside the runtime: the blocking client runs
    // its own and must not be created or torn down inside an async task.
    let http = match upstream_client() {
        Ok(h) => h,
        Err(e) => {
            let _ = ready.send(Err(format!("no HTTP client: {e}")));
            return;
        }
    };
    let client = http.clone();
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                let _ = ready.send(Err(format!("cannot use the listener: {e}")));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        loop {
            tokio::select! {
                _ = &mut stop => break,
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let shared = shared.clone();
                    let client = client.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            handle(req, shared.clone(), client.clone())
                        });
                        // A client that opens a connection and sends nothing is dropped.
                        let _ = hyper::server::conn::http1::Builder::new()
                            .timer(hyper_util::rt::TokioTimer::new())
                            .header_read_timeout(HEAD_WAIT)
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            }
        }
    });
    // Open exchanges are abandoned: the run is over.
    runtime.shutdown_timeout(Duration::from_secs(1));
    drop(http);
}

/// The crate's one client, with the proxy's timeouts: [`CHUNK_WAIT`] for the answer's head and
/// for each read of its body, [`CONNECT_WAIT`] to connect; redirects only within the upstream's
/// origin, so the real key never travels elsewhere.
fn upstream_client() -> Result<Http, crate::net::NetError> {
    let settings = ClientSettings {
        timeout: CHUNK_WAIT,
        connect_timeout: CONNECT_WAIT,
    };
    Ok(Http::with(settings, RELAY)?.named("model API (through the proxy)"))
}

/// The token a client sent: `x-api-key`, else a bearer `Authorization`.
fn token_of(headers: &HeaderMap) -> Option<String> {
    if let Some(v) = headers.get("x-api-key").and_then(|v| v.to_str().ok()) {
        return Some(v.trim().to_string());
    }
    let auth = headers.get("authorization")?.to_str().ok()?;
    auth.strip_prefix("Bearer ")
        .or_else(|| auth.strip_prefix("bearer "))
        .map(|t| t.trim().to_string())
}

/// Request headers that are not passed upstream: hop-by-hop ones, the credentials (replaced),
/// and `accept-encoding` (the proxy reads the answer, so it asks for it uncompressed).
fn skip_request_header(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host"
            | "content-length"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "x-api-key"
            | "authorization"
            | "accept-encoding"
    )
}

fn skip_response_header(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "content-length"
            | "trailer"
            | "upgrade"
    )
}

fn fixed(status: StatusCode, body: Value) -> Response<ProxyBody> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = status;
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    r
}

/// An error body in the vendor's own shape, so the client reports the message: `kind` is its
/// error type, `code` OpenAI's code.
fn error_body(vendor: Vendor, kind: &str, code: &str, message: &str) -> Value {
    match vendor {
        Vendor::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
        Vendor::Openai => json!({"error": {"message": message, "type": kind, "param": null,
                                           "code": code}}),
    }
}

impl Route {
    /// The proxy's own error answer to this route's client, whose OpenAI code has always been
    /// `budget_exceeded` whatever the kind (clients report the message).
    fn error(&self, status: StatusCode, kind: &str, message: &str) -> Response<ProxyBody> {
        fixed(
            status,
            error_body(self.vendor, kind, "budget_exceeded", message),
        )
    }
}

/// The SSE event that ends a cut stream with the budget message.
fn error_event(vendor: Vendor, message: &str) -> Bytes {
    let data = match vendor {
        Vendor::Anthropic => error_body(vendor, "invalid_request_error", "", message),
        Vendor::Openai => json!({"type": "error", "code": "budget_exceeded", "message": message,
                                 "param": null}),
    };
    Bytes::from(format!("event: error\ndata: {data}\n\n"))
}

async fn handle(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    client: Http,
) -> Result<Response<ProxyBody>, Infallible> {
    let found = token_of(req.headers())
        .and_then(|t| shared.slots().get(&t).map(|s| (t.clone(), s.route.clone())));
    let Some((token, route)) = found else {
        let message = "spec-orchestrate proxy: unknown or expired call token";
        let body = error_body(Vendor::Anthropic, "authentication_error", "", message);
        return Ok(fixed(StatusCode::UNAUTHORIZED, body));
    };
    if !allowed(route.vendor, req.method().as_str(), req.uri().path()) {
        return Ok(refuse(&shared, &token, &route, &req));
    }
    let (parts, body) = req.into_parts();
    let collected = tokio::time::timeout(BODY_WAIT, Limited::new(body, MAX_REQUEST).collect());
    let body = match collected.await {
        Ok(Ok(c)) => c.to_bytes(),
        _ => {
            let msg = "spec-orchestrate proxy: the request body could not be read in time or is too large";
            return Ok(route.error(StatusCode::BAD_REQUEST, "invalid_request_error", msg));
        }
    };
    let model = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("model").and_then(Value::as_str).map(str::to_string));
    if let Some(message) = precheck(&shared, &token, &route, body.len(), model.as_deref()) {
        return Ok(route.error(StatusCode::BAD_REQUEST, "invalid_request_error", &message));
    }
    let resp = match forward(client, &parts, body, &route).await {
        Ok(r) => r,
        Err(refused) => return Ok(refused),
    };
    Ok(relay(resp, shared, token, route, model))
}

/// The answer to a request for anything but a model endpoint: 403 in the vendor's shape, never
/// forwarded, and recorded against the call (the request line only: a path could carry data,
/// so at most 200 characters of it, and no query).
fn refuse(
    shared: &Shared,
    token: &str,
    route: &Route,
    req: &Request<Incoming>,
) -> Response<ProxyBody> {
    let path: String = req.uri().path().chars().take(200).collect();
    let request = format!("{} {path}", req.method());
    if let Some(slot) = shared.slots().get_mut(token)
        && slot.metered.refused.len() < MAX_REFUSALS
    {
        slot.metered.refused.push(request.clone());
    }
    tracing::warn!(agent = %route.agent, %request, "model API proxy refused a non-model endpoint");
    let message = format!(
        "spec-orchestrate proxy: {request} is not a model endpoint; only the model requests of one call are forwarded (refused, recorded)"
    );
    let (kind, code) = ("permission_error", "endpoint_not_allowed");
    fixed(
        StatusCode::FORBIDDEN,
        error_body(route.vendor, kind, code, &message),
    )
}

/// Sends the request upstream with the real key in place of the token (on a blocking thread:
/// the client is blocking) and returns the answer at its head, or the error response the client
/// gets instead.
async fn forward(
    client: Http,
    parts: &hyper::http::request::Parts,
    body: Bytes,
    route: &Route,
) -> Result<reqwest::blocking::Response, Response<ProxyBody>> {
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let url = format!("{}{path}", route.upstream);
    let (key_name, key) = match route.vendor {
        Vendor::Anthropic => ("x-api-key", route.key.clone()),
        Vendor::Openai => ("authorization", format!("Bearer {}", route.key)),
    };
    let Ok(mut key) = HeaderValue::from_str(&key) else {
        let msg = "spec-orchestrate proxy: the real API key cannot be sent in a header";
        return Err(route.error(StatusCode::BAD_GATEWAY, "api_error", msg));
    };
    key.set_sensitive(true);
    let method = parts.method.clone();
    let headers = parts.headers.clone();
    let what = format!("relaying a model API request of agent `{}`", route.agent);
    let sent = tokio::task::spawn_blocking(move || {
        client.open(&what, &url, |c| {
            let mut up = c.request(method.clone(), &url);
            for (name, value) in &headers {
                if !skip_request_header(name) {
                    up = up.header(name, value);
                }
            }
            up.header(key_name, key.clone())
                .header("accept-encoding", "identity")
                .body(body.clone())
        })
    })
    .await;
    match sent {
        Ok(Ok(resp)) => Ok(resp),
        Ok(Err(e)) => {
            let connect = matches!(e, crate::net::NetError::Transport { connect: true, .. });
            let msg = format!(
                "spec-orchestrate proxy: could not reach the upstream API for agent `{}` ({})",
                route.agent,
                if connect { "connect" } else { "send" }
            );
            Err(route.error(StatusCode::BAD_GATEWAY, "api_error", &msg))
        }
        Err(_) => {
            let msg = "spec-orchestrate proxy: the upstream request was abandoned";
            Err(route.error(StatusCode::BAD_GATEWAY, "api_error", msg))
        }
    }
}

/// Refuses a request before it is forwarded when the call has no budget left, or when the
/// request's input alone (about four bytes per token of its body) would pass what is left.
fn precheck(
    shared: &Shared,
    token: &str,
    route: &Route,
    body_len: usize,
    model: Option<&str>,
) -> Option<String> {
    let left = route.budget_left?;
    let mut slots = shared.slots();
    let slot = slots.get_mut(token)?;
    let spent = slot.metered.usd;
    let estimate = route
        .pricing
        .of(model)
        .map(|p| body_len as f64 / 4.0 * p.input / 1_000_000.0);
    let over = spent >= left || estimate.is_some_and(|e| spent + e > left + 1e-12);
    if !over {
        return None;
    }
    let message = budget_message(route, spent, estimate, false);
    // The first stop is the cause; a retry refused after a cut keeps the cut's sentence.
    slot.metered.budget_stop.get_or_insert(message.clone());
    Some(message)
}

/// Starts pumping the upstream answer to the client and returns the streamed response.
fn relay(
    resp: reqwest::blocking::Response,
    shared: Arc<Shared>,
    token: String,
    route: Route,
    model: Option<String>,
) -> Response<ProxyBody> {
    let status = resp.status();
    let mut headers = HeaderMap::new();
    for (name, value) in resp.headers() {
        if !skip_response_header(name) {
            headers.append(name.clone(), value.clone());
        }
    }
    let sse = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"));
    let (tx, rx) = tokio::sync::mpsc::channel(CHANNEL_DEPTH);
    let meter = ExchangeMeter::new(route.vendor, sse, model);
    let exchange = Exchange {
        shared,
        token,
        route,
        sse,
    };
    tokio::task::spawn_blocking(move || pump(resp, tx, meter, exchange));
    let mut out = Response::new(ChannelBody { rx }.boxed());
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    out
}

/// The call an answer belongs to, for the pump.
struct Exchange {
    shared: Arc<Shared>,
    token: String,
    route: Route,
    sse: bool,
}

/// Passes the answer on chunk by chunk (each read returns what has arrived), metering each chunk
/// first; cuts the stream when its cost passes what is left of the budget. Records the
/// exchange's usage at the end. Runs on a blocking thread: the upstream client is blocking.
fn pump(
    mut resp: reqwest::blocking::Response,
    tx: tokio::sync::mpsc::Sender<Bytes>,
    mut meter: ExchangeMeter,
    exchange: Exchange,
) {
    let Exchange {
        shared,
        token,
        route,
        sse,
    } = exchange;
    let before = shared
        .slots()
        .get(&token)
        .map(|s| s.metered.usd)
        .unwrap_or(0.0);
    let mut buf = vec![0u8; READ_SIZE];
    loop {
        let chunk = match resp.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => Bytes::copy_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A silent or broken upstream ends the exchange; the client sees the answer end.
            Err(_) => break,
        };
        meter.feed(&chunk);
        if let Some(left) = route.budget_left {
            let spent = before + meter.cost(&route.pricing).unwrap_or(0.0);
            if spent > left + 1e-12 {
                let message = budget_message(&route, spent, None, true);
                if let Some(slot) = shared.slots().get_mut(&token) {
                    slot.metered.budget_stop.get_or_insert(message.clone());
                }
                if sse {
                    let _ = tx.blocking_send(error_event(route.vendor, &message));
                }
                break;
            }
        }
        if tx.blocking_send(chunk).is_err() {
            // The client went away; dropping the upstream response ends that side too.
            break;
        }
    }
    meter.finish();
    if let Some(slot) = shared.slots().get_mut(&token) {
        let tokens = meter.tokens();
        let m = &mut slot.metered;
        m.exchanges += 1;
        m.input_tokens += tokens.total_input();
        m.output_tokens += tokens.output;
        match meter.cost(&route.pricing) {
            Some(usd) => m.usd += usd,
            None if meter.reported() => m.priced = false,
            None => {}
        }
    }
}
