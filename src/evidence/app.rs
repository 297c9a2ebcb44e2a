//! The app under test: started with `app.start` for the browser cases of one evaluate round,
//! stopped with its whole process group afterwards.
//!
//! Why a process group: `npm run dev` is a shell that starts npm that starts node that may start
//! a bundler; killing only the shell leaves the server holding its port and the next round
//! fails. Everything `app.start` spawns shares one group, and the group is signalled as a whole —
//! when the round ends, when the harness errors (the guard's `Drop`), and when the orchestrator
//! receives SIGINT/SIGTERM/SIGHUP (see `crate::signals`).
//!
//! Readiness: the app is ready as soon as `app.ready_pattern` matches a line of its output, or
//! `app.url` answers an HTTP request with a status below 500. Everything it prints is written,
//! with secrets redacted, to `app-startup.log` in the round's evidence directory. A start that
//! exits or does not become ready within `app.ready_timeout_s` is an [`AppError`] carrying the
//! log's tail, which the evaluate phase turns into BLOCKED cases.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::config::AppConfig;
use crate::process::tree::{GroupStamp, Tree};
use crate::secrets::Redactor;

/// Name of the app's log inside the round's evidence directory.
pub const STARTUP_LOG: &str = "app-startup.log";

/// The placeholder in `app.url` / `app.start` replaced by a free port chosen at start.
pub const PORT_PLACEHOLDER: &str = "{port}";

/// Lines of the log quoted in a finding when the app fails to start.
const TAIL_LINES: usize = 20;

/// Why the app could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppError {
    /// `app.start` or `app.url` is not configured.
    #[error(
        "app.{key} is not configured in .specs/pipeline.yml; browser cases need `app.start` (the command that serves the app) and `app.url` (where it answers), e.g. `start: \"npm run dev\"`, `url: \"http://127.0.0.1:{{port}}/\"`"
    )]
    NotConfigured {
        /// `start` or `url`.
        key: &'static str,
    },
    /// `app.url` cannot be used.
    #[error("app.url \"{url}\" {problem}")]
    BadUrl {
        /// The configured URL.
        url: String,
        /// What is wrong.
        problem: String,
    },
    /// Something already listens where the app should.
    #[error(
        "port {port} is already in use: {url} answers before app.start ran, so the browser would test another program. Stop whatever listens on {port}, or put `{{port}}` in app.url and app.start (e.g. `PORT={{port}} npm start`) to get a free port for every round"
    )]
    PortInUse {
        /// The port.
        port: u16,
        /// The URL that already answered.
        url: String,
    },
    /// The shell could not be started.
    #[error("app.start could not be started: {0}")]
    Spawn(String),
    /// The app exited before it was ready.
    #[error(
        "app.start exited with {status} before it was ready{hint}; last lines of {STARTUP_LOG}:\n{tail}"
    )]
    Exited {
        /// Exit status as text.
        status: String,
        /// Extra explanation (port in use …).
        hint: String,
        /// Last lines of the log.
        tail: String,
    },
    /// The app did not become ready in time.
    #[error(
        "the app was not ready within {timeout_s} s ({waited_for}); its process group was stopped; last lines of {STARTUP_LOG}:\n{tail}"
    )]
    Timeout {
        /// `app.ready_timeout_s`.
        timeout_s: u64,
        /// What readiness was waited for.
        waited_for: String,
        /// Last lines of the log.
        tail: String,
    },
}

impl AppError {
    /// One line for tables and fingerprints (no log tail, no timings that change every run).
    pub fn summary(&self) -> String {
        match self {
            AppError::NotConfigured { key } => format!("app.{key} is not configured"),
            AppError::BadUrl { .. } => "app.url cannot be used".into(),
            AppError::PortInUse { port, .. } => format!("port {port} of app.url is already in use"),
            AppError::Spawn(_) => "app.start could not be started".into(),
            AppError::Exited { .. } => "the app exited before it was ready".into(),
            AppError::Timeout { timeout_s, .. } => {
                format!("the app was not ready within {timeout_s} s")
            }
        }
    }
}

/// `app` settings with the port chosen and the URL parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppPlan {
    /// Shell command, `{port}` replaced.
    pub start: String,
    /// Base URL for the browser, `{port}` replaced.
    pub url: String,
    /// Host of the URL.
    pub host: String,
    /// Port of the URL.
    pub port: u16,
    /// Readiness regex.
    pub ready_pattern: Option<String>,
    /// Readiness timeout.
    pub ready_timeout: Duration,
    /// `auto` or a stop command.
    pub stop: String,
}

impl AppPlan {
    /// Resolves the configuration; `{port}` becomes a port that is free right now.
    pub fn from_config(app: Option<&AppConfig>) -> Result<AppPlan, AppError> {
        let app = app.ok_or(AppError::NotConfigured { key: "start" })?;
        let start = app
            .start
            .clone()
            .ok_or(AppError::NotConfigured { key: "start" })?;
        let url = app
            .url
            .clone()
            .ok_or(AppError::NotConfigured { key: "url" })?;
        let (mut url, mut start) = (url, start);
        if url.contains(PORT_PLACEHOLDER) || start.contains(PORT_PLACEHOLDER) {
            let port = free_port().map_err(|e| AppError::Spawn(format!("no free port: {e}")))?;
            url = url.replace(PORT_PLACEHOLDER, &port.to_string());
            start = start.replace(PORT_PLACEHOLDER, &port.to_string());
        }
        let (host, port) = host_port(&url).map_err(|problem| AppError::BadUrl {
            url: url.clone(),
            problem,
        })?;
        Ok(AppPlan {
            start,
            url,
            host,
            port,
            ready_pattern: app.ready_pattern.clone(),
            ready_timeout: Duration::from_secs(app.ready_timeout_s),
            stop: app.stop.clone(),
        })
    }
}

/// A port nobody listens on at this moment (bind 127.0.0.1:0 and let it go).
pub fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// Host and port of an http(s) URL (port defaults to 80/443).
fn host_port(url: &str) -> Result<(String, u16), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| "is not an http(s) URL".to_string())?;
    let default = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return Err("is not an http(s) URL".into()),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if authority.is_empty() {
        return Err("has no host".into());
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| "has an unclosed `[`".to_string())?;
            (host, after.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((host, p)) => (host, Some(p)),
            None => (authority, None),
        },
    };
    let port = match port {
        Some(p) => p
            .parse()
            .map_err(|_| format!("has port \"{p}\", which is not a number"))?,
        None => default,
    };
    Ok((host.to_string(), port))
}

fn addrs(host: &str, port: u16) -> Vec<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .map(|a| a.collect())
        .unwrap_or_default()
}

/// Whether something accepts TCP connections at host:port.
fn listening(host: &str, port: u16) -> bool {
    addrs(host, port)
        .iter()
        .any(|a| TcpStream::connect_timeout(a, Duration::from_millis(300)).is_ok())
}

/// `GET url` over plain HTTP/1.0; `Some(status)` when an HTTP answer came back.
pub fn http_status(url: &str, timeout: Duration) -> Option<u16> {
    let (host, port) = host_port(url).ok()?;
    if url.starts_with("https://") {
        // No TLS client here: an https app is ready when its port accepts connections.
        return listening(&host, port).then_some(200);
    }
    let path = url
        .split_once("://")
        .map(|(_, r)| r)
        .and_then(|r| r.find('/').map(|i| &r[i..]))
        .unwrap_or("/");
    let addr = *addrs(&host, port).first()?;
    let mut s = TcpStream::connect_timeout(&addr, timeout).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_write_timeout(Some(timeout)).ok()?;
    let req = format!("GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut head = [0u8; 64];
    let n = s.read(&mut head).ok()?;
    let line = String::from_utf8_lossy(&head[..n]);
    let mut parts = line.split_whitespace();
    let proto = parts.next()?;
    if !proto.starts_with("HTTP/") {
        return None;
    }
    parts.next()?.parse().ok()
}

/// Whether any process of the group is still alive (zombies do not count).
pub fn group_alive(pgid: i32) -> bool {
    if std::fs::metadata("/proc").is_err() {
        // SAFETY: signal 0 only probes.
        return unsafe { libc::killpg(pgid, 0) } == 0;
    }
    crate::process::tree::snapshot()
        .iter()
        .any(|p| p.pgrp == pgid && !p.zombie)
}

// ------------------------------------------------------------------------------------------
// The running app
// ------------------------------------------------------------------------------------------

/// A started app. Dropping it stops the whole process group.
#[derive(Debug)]
pub struct RunningApp {
    child: Option<Child>,
    pgid: i32,
    tree: Tree,
    /// The resolved plan (URL with the real port).
    pub plan: AppPlan,
    /// Absolute path of `app-startup.log`.
    pub log_path: PathBuf,
    readers: Vec<std::thread::JoinHandle<()>>,
    repo: PathBuf,
    env: BTreeMap<String, String>,
    /// The checkout, lent to the agents' identity while the app runs (it writes there).
    _loan: crate::process::identity::Loan,
}

/// Longest app output line kept in the log (and matched against the ready pattern).
const MAX_LINE_BYTES: usize = 64 * 1024;
/// Most of the app's output written to `app-startup.log`; an app that keeps printing past it is
/// noted once, not logged until the disk is full.
const MAX_LOG_BYTES: u64 = 16 * 1024 * 1024;
/// Most of the log's end read back for its tail.
const TAIL_READ_BYTES: u64 = 256 * 1024;

/// Last `n` lines of a file, for findings; only the file's last `TAIL_READ_BYTES` are read.
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = read_end(path, TAIL_READ_BYTES).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    let tail = lines[start..].join("\n");
    if tail.trim().is_empty() {
        "(the app printed nothing)".into()
    } else {
        tail
    }
}

/// The last `max` bytes of a regular file (lossy UTF-8), from the first whole line when the file
/// is longer.
fn read_end(path: &Path, max: u64) -> Option<String> {
    let (mut bytes, cut) = crate::fsx::read_tail(path, max).ok()?;
    if cut {
        let start = bytes.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
        bytes.drain(..start);
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// `app-startup.log` shared by the two readers, with what was written so far.
struct AppLog {
    file: std::fs::File,
    written: u64,
}

impl AppLog {
    /// Appends one line, until `MAX_LOG_BYTES`; then once a note that the rest is not logged.
    fn line(&mut self, prefix: &str, text: &str) {
        if self.written > MAX_LOG_BYTES {
            return;
        }
        let len = (prefix.len() + text.len() + 1) as u64;
        self.written += len;
        let _ = if self.written > MAX_LOG_BYTES {
            writeln!(
                self.file,
                "[… the app printed more than {MAX_LOG_BYTES} bytes; the rest is not logged …]"
            )
        } else {
            writeln!(self.file, "{prefix}{text}")
        };
        let _ = self.file.flush();
    }
}

enum Event {
    Line(String),
    Closed,
}

/// Starts the app in its own process group and waits until it is ready: the ready pattern and
/// the log first, then the process, its output readers, and the wait.
///
/// `env` is the app's whole environment (scrubbed by the caller); `PORT` is added. On any error
/// the group has already been stopped when this returns.
///
/// `on_spawned` gets the group's stamp while the start command is held at a gate (a shell that
/// waits for one line on its stdin before it `exec`s `app.start`): the caller saves it in state,
/// and only then does the app run. A killed orchestrator therefore never leaves an app group
/// that the state does not name; if `on_spawned` fails, the app never starts.
///
/// `repo` is lent to the agents' identity while the app runs
/// ([`crate::process::identity::lend_for`]): as root, the app runs as that uid and writes there.
pub fn start(
    plan: AppPlan,
    repo: &Path,
    log_path: &Path,
    env: BTreeMap<String, String>,
    redactor: &Redactor,
    on_spawned: &mut dyn FnMut(GroupStamp) -> Result<(), String>,
) -> Result<RunningApp, AppError> {
    if listening(&plan.host, plan.port) {
        return Err(AppError::PortInUse {
            port: plan.port,
            url: plan.url.clone(),
        });
    }
    let pattern = plan
        .ready_pattern
        .as_deref()
        .map(regex::Regex::new)
        .transpose();
    let pattern = pattern
        .map_err(|e| AppError::Spawn(format!("app.ready_pattern is not a valid regex: {e}")))?;
    // In the evidence directory, which test commands can write to: no planted link is followed.
    let log = crate::fsx::create(log_path).map_err(|e| AppError::Spawn(e.to_string()))?;
    let mut env = env;
    env.insert("PORT".into(), plan.port.to_string());
    let loan = crate::process::identity::lend_for(repo);
    let mut child = spawn_app(&plan, repo, &env)?;
    let pgid = child.id() as i32;
    let gate = child.stdin.take();
    let (rx, readers) = pipe_output(&mut child, log, redactor);
    let mut app = RunningApp {
        child: Some(child),
        pgid,
        tree: Tree::new(pgid),
        plan,
        log_path: log_path.to_path_buf(),
        readers,
        repo: repo.to_path_buf(),
        env,
        _loan: loan,
    };
    let recorded = GroupStamp::of(pgid)
        .ok_or_else(|| "the app's shell exited at once".to_string())
        .and_then(&mut *on_spawned);
    if let Err(e) = recorded {
        app.stop();
        return Err(AppError::Spawn(format!(
            "its process group could not be recorded in the state, so it was not started: {e}"
        )));
    }
    // The gated start command runs: one line, then end of input (the app's stdin is empty, as
    // it would be with no stdin at all). A start command that already died is found by the
    // readiness wait.
    if let Some(mut gate) = gate {
        let _ = gate.write_all(b"go\n");
    }
    wait_ready(app, pattern.as_ref(), &rx)
}

/// The start command under `/bin/sh` with exactly `env`, in its own process group (see
/// `process::spawn_group`).
fn spawn_app(
    plan: &AppPlan,
    repo: &Path,
    env: &BTreeMap<String, String>,
) -> Result<Child, AppError> {
    let mut cmd = Command::new("/bin/sh");
    // The gate: wait for the go (or exit on end of input), then become the start command, keeping
    // the pid, the group and the start time that were recorded.
    cmd.arg("-c")
        .arg("IFS= read -r _ || exit 0; exec /bin/sh -c \"$0\"")
        .arg(&plan.start);
    crate::process::piped(&mut cmd, repo, env);
    crate::process::spawn_confined(&mut cmd).map_err(|e| AppError::Spawn(e.to_string()))
}

/// Copies the app's stdout and stderr, redacted, into the log line by line, and forwards each
/// line to the returned channel (for the ready pattern); one reader thread per stream.
fn pipe_output(
    child: &mut Child,
    log: std::fs::File,
    redactor: &Redactor,
) -> (mpsc::Receiver<Event>, Vec<std::thread::JoinHandle<()>>) {
    let (tx, rx) = mpsc::channel::<Event>();
    let log = std::sync::Arc::new(std::sync::Mutex::new(AppLog {
        file: log,
        written: 0,
    }));
    let mut readers = Vec::new();
    let streams: Vec<(Box<dyn Read + Send>, &'static str)> = [
        child
            .stdout
            .take()
            .map(|s| (Box::new(s) as Box<dyn Read + Send>, "")),
        child
            .stderr
            .take()
            .map(|s| (Box::new(s) as Box<dyn Read + Send>, "[stderr] ")),
    ]
    .into_iter()
    .flatten()
    .collect();
    for (stream, prefix) in streams {
        let tx = tx.clone();
        let log = log.clone();
        let redactor = redactor.clone();
        readers.push(std::thread::spawn(move || {
            // Lines are bounded: an app printing one endless line costs `MAX_LINE_BYTES`.
            crate::process::capture::for_each_bounded_line(stream, MAX_LINE_BYTES, |line, cut| {
                let mut text = redactor.redact(&String::from_utf8_lossy(line));
                if cut > 0 {
                    text.push_str(&format!(" [… {cut} bytes of this line cut]"));
                }
                if let Ok(mut f) = log.lock() {
                    f.line(prefix, &text);
                }
                let _ = tx.send(Event::Line(text));
            });
            let _ = tx.send(Event::Closed);
        }));
    }
    drop(tx);
    (rx, readers)
}

/// Waits until the app's output matches `pattern` or its URL answers; stops it and says why if
/// it exits first or the ready timeout passes.
fn wait_ready(
    mut app: RunningApp,
    pattern: Option<&regex::Regex>,
    rx: &mpsc::Receiver<Event>,
) -> Result<RunningApp, AppError> {
    let deadline = crate::process::deadline(Instant::now(), app.plan.ready_timeout);
    let mut next_probe = Instant::now() + Duration::from_millis(200);
    loop {
        app.tree.scan();
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Event::Line(line)) => {
                if pattern.is_some_and(|p| p.is_match(&line)) {
                    return Ok(app);
                }
            }
            Ok(Event::Closed) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // Both streams closed; the exit check below decides.
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        if let Some(status) = app.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
            return Err(exited(&mut app, status));
        }
        if Instant::now() >= next_probe {
            next_probe = Instant::now() + Duration::from_millis(250);
            if http_status(&app.plan.url, Duration::from_millis(500)).is_some_and(|s| s < 500) {
                return Ok(app);
            }
        }
        if Instant::now() >= deadline {
            return Err(timed_out(&mut app));
        }
    }
}

/// The app exited before it was ready: its status and log tail, with a hint when the port was
/// taken.
fn exited(app: &mut RunningApp, status: std::process::ExitStatus) -> AppError {
    // Let the readers drain what was printed last.
    app.stop();
    let tail = log_tail(&app.log_path, TAIL_LINES);
    let lower = tail.to_lowercase();
    let hint = if lower.contains("eaddrinuse") || lower.contains("address already in use") {
        format!(
            " (port {} is already in use by another program)",
            app.plan.port
        )
    } else {
        String::new()
    };
    AppError::Exited {
        status: status.to_string(),
        hint,
        tail,
    }
}

/// The app was not ready in time: what was waited for, and the log tail; the app is stopped.
fn timed_out(app: &mut RunningApp) -> AppError {
    let waited_for = match &app.plan.ready_pattern {
        Some(p) => format!(
            "its output never matched ready_pattern `{p}` and {} did not answer",
            app.plan.url
        ),
        None => format!("{} did not answer", app.plan.url),
    };
    let timeout_s = app.plan.ready_timeout.as_secs();
    app.stop();
    AppError::Timeout {
        timeout_s,
        waited_for,
        tail: log_tail(&app.log_path, TAIL_LINES),
    }
}

impl RunningApp {
    /// The process group id (= the shell's pid).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Stops the app: the configured stop command first (if not `auto`), then SIGTERM to the
    /// whole group, SIGKILL after 5 s, and waits for the output readers so the log is complete.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if self.plan.stop.trim() != "auto" {
            let _ = crate::process::run(
                Path::new("/bin/sh"),
                &["-c".to_string(), self.plan.stop.clone()],
                &self.repo,
                &self.env,
                b"",
                Duration::from_secs(30),
            );
        }
        let pgid = self.pgid;
        crate::process::stop::terminate_group(pgid, Duration::from_secs(5), || {
            let _ = child.try_wait();
            !group_alive(pgid)
        });
        // The group, and whatever left it (a daemonising start script's server).
        self.tree.kill_all();
        let _ = child.wait();
        crate::process::tree::disown(self.pgid);
        crate::signals::unregister(self.pgid);
        // A process that escaped the tree (and the subreaper) may still hold a pipe: the
        // readers are joined within a grace, never waited for without a deadline.
        let grace = crate::process::deadline(Instant::now(), Duration::from_secs(2));
        for r in self.readers.drain(..) {
            while !r.is_finished() && Instant::now() < grace {
                std::thread::sleep(Duration::from_millis(20));
            }
            if r.is_finished() {
                let _ = r.join();
            }
        }
    }
}

impl Drop for RunningApp {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::tests::temp_path;

    #[test]
    fn the_log_stops_at_its_cap_with_a_note_and_its_tail_reads_only_the_end() {
        let (_dir, path) = temp_path("app-startup.log");
        let mut log = AppLog {
            file: std::fs::File::create(&path).unwrap(),
            written: 0,
        };
        let line = "y".repeat(1023);
        for _ in 0..(MAX_LOG_BYTES / 1024 + 100) {
            log.line("", &line);
        }
        log.line("[stderr] ", "never logged");
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len <= MAX_LOG_BYTES + 200, "{len}");
        let tail = log_tail(&path, 2);
        assert!(tail.ends_with("the rest is not logged …]"), "{tail}");
        assert!(!tail.contains("never logged"));
        let end = read_end(&path, 5000).unwrap();
        assert!(end.len() <= 5000 && end.starts_with('y'), "{}", end.len());
    }

    #[test]
    fn urls_give_host_and_port() {
        for (url, host, port) in [
            ("http://127.0.0.1:4173/x", "127.0.0.1", 4173),
            ("http://localhost", "localhost", 80),
            ("https://example.test/a", "example.test", 443),
            ("http://[::1]:8080/", "::1", 8080),
        ] {
            assert_eq!(host_port(url).unwrap(), (host.to_string(), port), "{url}");
        }
        assert!(host_port("http://h:abc/").unwrap_err().contains("abc"));
        assert!(host_port("ftp://h/").is_err());
    }

    #[test]
    fn the_port_placeholder_gets_a_free_port_in_url_and_start() {
        let app = AppConfig {
            start: Some("PORT={port} node server.js".into()),
            url: Some("http://127.0.0.1:{port}/".into()),
            ready_pattern: None,
            ready_timeout_s: 5,
            stop: "auto".into(),
            isolation: Default::default(),
            env: Default::default(),
            dependencies: Vec::new(),
            reset: None,
        };
        let plan = AppPlan::from_config(Some(&app)).unwrap();
        assert!(plan.port > 0);
        assert_eq!(plan.url, format!("http://127.0.0.1:{}/", plan.port));
        assert_eq!(plan.start, format!("PORT={} node server.js", plan.port));
        let missing = AppPlan::from_config(None).unwrap_err();
        assert!(missing.to_string().contains("app.start"), "{missing}");
    }
}
