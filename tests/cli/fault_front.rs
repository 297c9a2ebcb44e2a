//! The fault mode of the simulated GitHub: a small TCP front before each wiremock server that,
//! for the requests a seed picks, answers as GitHub does in its bad minutes instead of passing
//! the request on — or passes it on and then loses the answer.
//!
//! wiremock answers every request it receives, so it cannot drop a connection or lose a reply
//! after the effect: the front does. It reads each HTTP/1.1 request whole (head and
//! `Content-Length` body), decides, and either forwards it to the server behind on a connection
//! of its own (`Connection: close`, so one request is one exchange) and relays the answer, or
//! plays one of the faults of [`FaultKind`]. Decisions come from the seed and the request's
//! number alone (the client under test sends one request at a time), so a seed replays.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the front does to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// A 502 from the load balancer; the request never reached the service.
    BadGatewayBefore,
    /// The request took effect, then a 502 came back instead of its answer.
    BadGatewayAfter,
    /// A secondary rate limit: 403 (REST, GraphQL) with `retry-after: 1` and GitHub's documented
    /// message, 429 `resource_exhausted` from the results service, 503 `ServerBusy` (with
    /// `Retry-After: 1`) from storage; nothing took effect.
    RateLimited,
    /// The connection reset before the request reached the service.
    ResetBefore,
    /// The request took effect, then the connection reset: the answer is lost.
    ResetAfter,
}

impl FaultKind {
    const ALL: [FaultKind; 5] = [
        FaultKind::BadGatewayBefore,
        FaultKind::BadGatewayAfter,
        FaultKind::RateLimited,
        FaultKind::ResetBefore,
        FaultKind::ResetAfter,
    ];

    /// Whether the service behind saw the request.
    pub fn applied(self) -> bool {
        matches!(self, FaultKind::BadGatewayAfter | FaultKind::ResetAfter)
    }
}

/// A fault for the next `times` requests whose method is `method` and whose path contains
/// `path_contains`, whatever the seed says.
#[derive(Debug, Clone)]
pub struct Scripted {
    pub method: String,
    pub path_contains: String,
    pub kind: FaultKind,
    pub times: u32,
}

/// One request the front saw.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `api` (REST, GraphQL, results service) or `blob` (storage).
    pub server: &'static str,
    pub method: String,
    pub path: String,
    pub fault: Option<FaultKind>,
}

/// The faults of one simulated GitHub: seeded ones at `per_mille`/1000 of requests, and
/// scripted ones; every request seen, in order.
#[derive(Debug, Default)]
pub struct Faults {
    pub seed: u64,
    pub per_mille: u64,
    counter: AtomicU64,
    pub scripted: Mutex<Vec<Scripted>>,
    pub seen: Mutex<Vec<Seen>>,
}

/// SplitMix64: a fixed, well-mixed function of its input (no state, no crate).
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Faults {
    /// Seeded faults at `per_mille` (no scripted ones).
    pub fn seeded(seed: u64, per_mille: u64) -> Faults {
        Faults {
            seed,
            per_mille,
            ..Faults::default()
        }
    }

    /// The fault for the next request (`method`, `path`), if any.
    fn decide(&self, method: &str, path: &str) -> Option<FaultKind> {
        let n = self.counter.fetch_add(1, Ordering::SeqCst);
        let mut scripted = self.scripted.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = scripted
            .iter_mut()
            .find(|s| s.times > 0 && s.method == method && path.contains(&s.path_contains))
        {
            s.times -= 1;
            return Some(s.kind);
        }
        let r = mix(self.seed ^ mix(n));
        (r % 1000 < self.per_mille)
            .then(|| FaultKind::ALL[((r / 1000) % FaultKind::ALL.len() as u64) as usize])
    }

    /// How many requests got `kind`.
    pub fn count(&self, kind: FaultKind) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.fault == Some(kind))
            .count()
    }
}

/// A running front: its address, and a flag that stops it.
pub struct Front {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Front {
    /// Listens on a free loopback port, in front of `backend` (`server` names it in [`Seen`]).
    pub fn start(server: &'static str, backend: SocketAddr, faults: Arc<Faults>) -> Front {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let faults = faults.clone();
                std::thread::spawn(move || serve(server, conn, backend, &faults));
            }
        });
        Front { addr, stop }
    }

    pub fn uri(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

/// One request from `conn`: head and body, or `None` when the client closed first.
fn read_request(conn: &mut TcpStream) -> Option<(Vec<String>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = conn.read(&mut byte).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&byte[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let lines: Vec<String> = head.split("\r\n").map(str::to_string).collect();
    let header = |name: &str| {
        lines.iter().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    assert!(
        header("transfer-encoding").is_none(),
        "the fault front reads Content-Length bodies only: {head}"
    );
    let len: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = conn.read(&mut byte).ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&byte[..n]);
    }
    body.truncate(len);
    Some((lines, body))
}

/// Passes the request on (`Connection: close`) and returns the whole answer.
fn forward(backend: SocketAddr, lines: &[String], body: &[u8]) -> Vec<u8> {
    let mut head = String::new();
    head.push_str(&lines[0]);
    head.push_str("\r\n");
    for l in lines.iter().skip(1) {
        let name = l.split(':').next().unwrap_or_default().trim();
        if name.eq_ignore_ascii_case("connection") || name.eq_ignore_ascii_case("keep-alive") {
            continue;
        }
        head.push_str(l);
        head.push_str("\r\n");
    }
    head.push_str("Connection: close\r\n\r\n");
    let mut up = TcpStream::connect(backend).expect("the fake behind the front answers");
    up.write_all(head.as_bytes()).unwrap();
    up.write_all(body).unwrap();
    let mut answer = Vec::new();
    let _ = up.read_to_end(&mut answer);
    answer
}

/// An answer of the front itself.
fn answer(status: &str, headers: &[(&str, &str)], content_type: &str, body: &str) -> Vec<u8> {
    let mut s = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        s.push_str(&format!("{k}: {v}\r\n"));
    }
    s.push_str("\r\n");
    s.push_str(body);
    s.into_bytes()
}

/// GitHub's load balancer's 502.
fn bad_gateway(server: &str) -> Vec<u8> {
    if server == "blob" {
        return answer(
            "502 Bad Gateway",
            &[],
            "text/html",
            "<html><body><h1>502 Bad Gateway</h1></body></html>",
        );
    }
    answer(
        "502 Bad Gateway",
        &[],
        "application/json",
        r#"{"message":"Server Error"}"#,
    )
}

/// The secondary rate limit of each service (REST/GraphQL: "About secondary rate limits" in
/// GitHub's REST docs; storage: Azure's `ServerBusy`).
fn rate_limited(server: &str, path: &str) -> Vec<u8> {
    if server == "blob" {
        return answer(
            "503 Server Busy",
            &[("retry-after", "1"), ("x-ms-error-code", "ServerBusy")],
            "application/xml",
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>ServerBusy</Code><Message>The server is currently unable to receive requests. Please retry your request.</Message></Error>",
        );
    }
    if path.starts_with("/twirp/") {
        return answer(
            "429 Too Many Requests",
            &[("retry-after", "1")],
            "application/json",
            r#"{"code":"resource_exhausted","msg":"too many requests, retry later"}"#,
        );
    }
    answer(
        "403 Forbidden",
        &[
            ("retry-after", "1"),
            ("x-ratelimit-limit", "5000"),
            ("x-ratelimit-remaining", "4711"),
        ],
        "application/json",
        r#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 0000:1111:2222:3333.","documentation_url":"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits"}"#,
    )
}

/// Closes `conn` with a TCP reset (`SO_LINGER` 0), as a dropped connection looks to a client.
fn reset(conn: TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket and a `linger` of the right size.
    unsafe {
        libc::setsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    drop(conn);
}

fn serve(server: &'static str, mut conn: TcpStream, backend: SocketAddr, faults: &Faults) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(60)));
    let Some((lines, body)) = read_request(&mut conn) else {
        return;
    };
    let mut parts = lines[0].split(' ');
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default();
    let path = target.split('?').next().unwrap_or_default().to_string();
    let fault = faults.decide(&method, &path);
    faults
        .seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Seen {
            server,
            method,
            path: path.clone(),
            fault,
        });
    let reply = match fault {
        None => forward(backend, &lines, &body),
        Some(FaultKind::BadGatewayBefore) => bad_gateway(server),
        Some(FaultKind::BadGatewayAfter) => {
            forward(backend, &lines, &body);
            bad_gateway(server)
        }
        Some(FaultKind::RateLimited) => rate_limited(server, &path),
        Some(FaultKind::ResetBefore) => return reset(conn),
        Some(FaultKind::ResetAfter) => {
            forward(backend, &lines, &body);
            return reset(conn);
        }
    };
    let _ = conn.write_all(&reply);
    let _ = conn.flush();
}
