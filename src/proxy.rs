//! The authenticating proxy for the model APIs: agents never hold a real key.
//!
//! An agent runs arbitrary code on text from an untrusted issue; with its vendor key in its
//! environment, an injected agent can send that key anywhere. Instead, the orchestrator runs
//! this proxy on loopback (random port) and gives each call a URL and a **per-call token**
//! derived from a per-run secret. The proxy checks the token, puts the real key in its place
//! (`x-api-key` for Anthropic, `Authorization: Bearer` for OpenAI), forwards to the real
//! upstream, and streams the answer back unchanged, chunk by chunk. On the way it meters the
//! tokens of every exchange ([`meter`]) and prices them, so a call's cost is known even for CLIs
//! that report none (codex), and it enforces `limits.budget_usd` at the wire: a request that
//! would pass what is left is refused before it is forwarded, and a stream whose bill passes it
//! is cut.
//!
//! One proxy serves the whole run (one thread with its own single-threaded tokio runtime for the
//! loopback server; the upstream leg is the crate's one client, [`crate::net::Http`]); it
//! starts at the first call that needs it, and [`shutdown`] stops and joins it at the end of the
//! run. A token is valid only while its call runs ([`Ticket`] revokes it when dropped).

pub mod forward;
pub mod meter;

use std::collections::HashMap;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::proxy::meter::Pricing;

/// How long [`shutdown`] waits for the proxy thread to end.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);
/// How long starting the proxy may take (bind and runtime).
const START_WAIT: Duration = Duration::from_secs(10);

/// The API family behind a call: it decides where the key goes and how usage is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    /// Anthropic Messages API: key in `x-api-key`.
    Anthropic,
    /// OpenAI Responses / Chat Completions: key as a bearer token.
    Openai,
}

/// What a call's token unlocks. Its `Debug` leaves the key out.
#[derive(Clone)]
#[allow(missing_docs)]
pub struct Route {
    /// Agent name (for messages).
    pub agent: String,
    pub vendor: Vendor,
    /// The real base URL, without a trailing `/` or `/v1`: the client's path (`/v1/…`) is
    /// appended to it.
    pub upstream: String,
    /// The real key. It never leaves this process except towards `upstream`.
    pub key: String,
    pub pricing: Pricing,
    /// What is left of `limits.budget_usd` for this call, if a budget is set.
    pub budget_left: Option<f64>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("agent", &self.agent)
            .field("vendor", &self.vendor)
            .field("upstream", &self.upstream)
            .field("key", &"<redacted>")
            .field("pricing", &self.pricing)
            .field("budget_left", &self.budget_left)
            .finish()
    }
}

/// What the proxy measured for one call (every exchange of it).
#[derive(Debug, Clone, Default, PartialEq)]
#[allow(missing_docs)]
pub struct Metered {
    /// Requests forwarded upstream.
    pub exchanges: u32,
    /// All input tokens, however billed.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Cost in USD of the priced exchanges.
    pub usd: f64,
    /// Every exchange was priced (its model had a price).
    pub priced: bool,
    /// Why the proxy refused or cut a request for the budget, if it did.
    pub budget_stop: Option<String>,
    /// Requests refused because they are not a model endpoint (`GET /v1/models`), in order;
    /// at most [`MAX_REFUSALS`] kept.
    pub refused: Vec<String>,
}

/// How many refused requests are kept per call (an agent that loops on them is not remembered
/// request by request).
pub const MAX_REFUSALS: usize = 20;

/// The model endpoints the proxy forwards for `vendor`: exactly what the supported CLIs
/// (`claude`, `codex`) and the HTTP kinds call, measured with the real CLIs in
/// `tests/cli/real_clis.rs`. Anything else the key could do (list models or files, batches,
/// the admin and organisation APIs, fine-tuning, uploads) is refused with 403 before it is
/// forwarded: a token is for one call's model requests, not for the account.
pub fn allowed(vendor: Vendor, method: &str, path: &str) -> bool {
    if method != "POST" {
        return false;
    }
    match vendor {
        // Messages (the CLI adds `?beta=true`; the query is not part of `path`) and token counting.
        Vendor::Anthropic => matches!(path, "/v1/messages" | "/v1/messages/count_tokens"),
        // Responses (codex, the `openai` kind) and Chat Completions (the documented family).
        Vendor::Openai => matches!(path, "/v1/responses" | "/v1/chat/completions"),
    }
}

/// One live call: its route and what it has cost so far.
#[derive(Debug)]
struct Slot {
    route: Route,
    metered: Metered,
}

/// State shared between the callers and the proxy thread.
#[derive(Debug, Default)]
struct Shared {
    slots: Mutex<HashMap<String, Slot>>,
}

impl Shared {
    fn slots(&self) -> MutexGuard<'_, HashMap<String, Slot>> {
        // A panic while holding the lock leaves consistent data (plain inserts and sums).
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The running proxy.
struct Running {
    addr: SocketAddr,
    secret: [u8; 32],
    counter: AtomicU64,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: std::sync::mpsc::Receiver<()>,
    thread: Option<JoinHandle<()>>,
}

static PROXY: Mutex<Option<Running>> = Mutex::new(None);

fn global() -> MutexGuard<'static, Option<Running>> {
    PROXY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why the proxy could not serve a call.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// No loopback port, no runtime, or no randomness for the secret.
    #[error("the model API proxy could not start: {0}")]
    Start(String),
}

/// A call's access to the proxy: its base URL and token. Dropping it revokes the token.
#[derive(Debug)]
pub struct Ticket {
    base: String,
    token: String,
    shared: Arc<Shared>,
}

impl Ticket {
    /// `http://127.0.0.1:<port>`: the client appends its usual path (`/v1/messages`, …).
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// The per-call token the client sends instead of a key.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// What was measured so far.
    pub fn metered(&self) -> Metered {
        self.shared
            .slots()
            .get(&self.token)
            .map(|s| s.metered.clone())
            .unwrap_or_default()
    }

    /// Revokes the token and returns what the call cost.
    pub fn finish(self) -> Metered {
        self.metered()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.shared.slots().remove(&self.token);
    }
}

/// Opens a call through the proxy, starting the proxy if it is not running.
pub fn open(route: Route) -> Result<Ticket, ProxyError> {
    let mut guard = global();
    if guard.is_none() {
        *guard = Some(start()?);
    }
    let Some(running) = guard.as_ref() else {
        return Err(ProxyError::Start("not running".into()));
    };
    let n = running.counter.fetch_add(1, Ordering::Relaxed);
    let mut h = Sha256::new();
    h.update(running.secret);
    h.update(n.to_le_bytes());
    // Looks like a key to the CLIs that check a key's shape, and says what it is to a reader.
    let token = format!("sk-spec-orchestrate-proxy-{}", hex::encode(h.finalize()));
    running.shared.slots().insert(
        token.clone(),
        Slot {
            route,
            metered: Metered {
                priced: true,
                ..Metered::default()
            },
        },
    );
    Ok(Ticket {
        base: format!("http://{}", running.addr),
        token,
        shared: running.shared.clone(),
    })
}

/// Stops the proxy and joins its thread (bounded); a no-op when it is not running. Called at
/// the end of a run; the next call starts a fresh proxy with a fresh secret.
pub fn shutdown() {
    let Some(mut running) = global().take() else {
        return;
    };
    if let Some(stop) = running.stop.take() {
        let _ = stop.send(());
    }
    if running.done.recv_timeout(SHUTDOWN_WAIT).is_ok()
        && let Some(t) = running.thread.take()
    {
        let _ = t.join();
    } else {
        tracing::warn!("the model API proxy did not stop in time; its thread is left to exit");
    }
}

fn secret() -> Result<[u8; 32], ProxyError> {
    let mut s = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut s))
        .map_err(|e| ProxyError::Start(format!("no randomness for the proxy secret: {e}")))?;
    Ok(s)
}

fn start() -> Result<Running, ProxyError> {
    let secret = secret()?;
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| ProxyError::Start(format!("cannot listen on loopback: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ProxyError::Start(e.to_string()))?;
    let shared = Arc::new(Shared::default());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let thread_shared = shared.clone();
    let thread = std::thread::Builder::new()
        .name("model-api-proxy".into())
        .spawn(move || {
            forward::serve(listener, thread_shared, stop_rx, ready_tx);
            let _ = done_tx.send(());
        })
        .map_err(|e| ProxyError::Start(format!("cannot start the proxy thread: {e}")))?;
    match ready_rx.recv_timeout(START_WAIT) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(ProxyError::Start(e)),
        Err(_) => return Err(ProxyError::Start("the proxy thread did not start".into())),
    }
    Ok(Running {
        addr,
        secret,
        counter: AtomicU64::new(0),
        shared,
        stop: Some(stop_tx),
        done: done_rx,
        thread: Some(thread),
    })
}

/// The budget sentence of a refused or cut request (the run's budget stop quotes it).
pub fn budget_message(route: &Route, spent: f64, next: Option<f64>, cut: bool) -> String {
    let left = route.budget_left.unwrap_or(0.0);
    if cut {
        format!(
            "the model API proxy cut the answer to agent `{}`: this call has cost {spent:.4} USD, more than the {left:.4} USD left of limits.budget_usd",
            route.agent
        )
    } else {
        format!(
            "the model API proxy refused a request of agent `{}` before forwarding it: this call has cost {spent:.4} USD and the next request{} would pass the {left:.4} USD left of limits.budget_usd",
            route.agent,
            next.map(|n| format!(" (about {n:.4} USD of input)"))
                .unwrap_or_default()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route() -> Route {
        Route {
            agent: "unit".into(),
            vendor: Vendor::Anthropic,
            upstream: "http://127.0.0.1:9".into(),
            key: "sk-unit".into(),
            pricing: Pricing {
                table: Default::default(),
                fallback: None,
            },
            budget_left: None,
        }
    }

    #[test]
    fn tokens_differ_per_call_and_shutdown_closes_the_port() {
        let a = open(route()).expect("proxy");
        let b = open(route()).expect("proxy");
        assert_ne!(a.token(), b.token());
        assert!(a.token().starts_with("sk-spec-orchestrate-proxy-"));
        let addr = a.base_url().trim_start_matches("http://").to_string();
        assert!(std::net::TcpStream::connect(&addr).is_ok());
        shutdown();
        assert!(
            std::net::TcpStream::connect(&addr).is_err(),
            "the stopped proxy no longer listens"
        );
        let fresh = open(route()).expect("the next run starts a new proxy");
        let fresh_addr = fresh.base_url().trim_start_matches("http://").to_string();
        assert!(std::net::TcpStream::connect(&fresh_addr).is_ok());
    }
}
