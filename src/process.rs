//! Running other programs: the one process-group spawner, the scrubbed environment they get,
//! and the path checks that keep what a spec names inside the repository.
//!
//! Agents, acceptance cases, the browser driver and the app under test all start here. Each
//! program leads its own process group, registered with [`crate::signals`] so that Ctrl-C stops
//! the whole group, and on Linux gets `PR_SET_PDEATHSIG`, so it never outlives a killed
//! orchestrator and keeps editing files that the resumed run is about to redo. A call's timeout
//! bounds the whole call, reading its output included, and when a call ends every process it
//! started is killed, also those that left its group ([`tree`]: descendant tracking and the
//! child-subreaper).
//!
//! This is a foundation module (layer 1 in `docs/architecture.md`): it knows nothing of agents'
//! configuration; callers describe the environment they want with [`env::EnvPolicy`].

pub mod capture;
pub mod env;
pub mod guard;
pub mod handoff;
pub mod identity;
pub mod leftovers;
pub mod paths;
pub mod reach;
pub mod stop;
pub mod tree;
mod unreached;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::process::{self as sys, Signal};

/// What a finished (or killed) program produced.
#[derive(Debug, Clone)]
pub struct ProcessOutput {
    /// Exit status; `None` when it was killed on timeout.
    pub status: Option<ExitStatus>,
    /// Captured stdout (lossy UTF-8).
    pub stdout: String,
    /// Captured stderr (lossy UTF-8).
    pub stderr: String,
    /// The timeout fired.
    pub timed_out: bool,
    /// Where stdout was cut to its head and tail (the note also in `stdout`); `None` when whole.
    pub stdout_cut: Option<String>,
    /// Where stderr was cut, likewise.
    pub stderr_cut: Option<String>,
}

impl ProcessOutput {
    /// Exit code, if the process exited normally.
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// How the program ended, in words a person reads in a case's detail or an error:
    /// `exit status 1`, `killed by signal 9`, or `stopped on timeout` (never `Some(1)`).
    pub fn ended(&self) -> String {
        use std::os::unix::process::ExitStatusExt as _;
        match self.status {
            Some(s) => match (s.code(), s.signal()) {
                (Some(code), _) => format!("exit status {code}"),
                (None, Some(sig)) => format!("killed by signal {sig}"),
                (None, None) => format!("ended with {s}"),
            },
            None => "stopped on timeout".into(),
        }
    }
}

/// Spawns `cmd` as the leader of a new process group that dies with the orchestrator (Linux), and
/// registers the group with the signal handler, which kills it on SIGINT/SIGTERM/SIGHUP. The
/// caller unregisters it ([`crate::signals::unregister`]) once the group is gone, and calls
/// [`disown`] once the child has been waited for.
pub fn spawn_group(cmd: &mut Command) -> std::io::Result<Child> {
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe and touches only the calling (child) process.
    unsafe {
        cmd.pre_exec(|| Ok(sys::set_parent_process_death_signal(Some(Signal::KILL))?));
    }
    // Before the spawn, so that a Ctrl-C arriving at any moment after it finds the handler.
    crate::signals::install();
    let child = tree::spawn_own(|| cmd.spawn())?;
    crate::signals::register(child.id() as i32);
    Ok(child)
}

/// Marks this process non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`): its `/proc/<pid>/environ`,
/// `mem`, `maps` and file descriptors then become readable only with `CAP_SYS_PTRACE`, which
/// neither a same-user agent of a local run nor a root agent under Docker's default capability
/// set has. Every orchestrator process (`action`, each `step`, `run`, …) calls it first thing,
/// because it holds the job's tokens and the model API keys (the proxy runs in-process). The
/// flag is reset by `execve`, so the programs it starts are unaffected.
pub fn forbid_inspection() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    sys::set_dumpable_behavior(sys::DumpableBehavior::NotDumpable)?;
    Ok(())
}

/// [`spawn_group`] for a program the orchestrator does not trust (an agent, an acceptance
/// command, the app under test, the browser driver): when the orchestrator runs as root it
/// starts as the separate identity ([`identity`]), with its own `HOME` and `TMPDIR`, in a
/// checkout lent to it.
///
/// A start the kernel refuses (the program, its working directory or its `#!` interpreter out
/// of the identity's reach) is an error saying as which uid it ran, which path it could not
/// reach, and how to fix it.
pub fn spawn_confined(cmd: &mut Command) -> std::io::Result<Child> {
    identity::confine(cmd)?;
    spawn_group(cmd).map_err(|e| unreached::explain(cmd, e))
}

/// A directory a confined program writes a file into for the orchestrator to read back, such as
/// codex's `-o` last-message file; removed with everything in it when dropped.
///
/// With a separate identity the directory ([`Scratch::path`]) belongs to that uid (mode 0700),
/// which could not create a file in one of the orchestrator's. It sits inside a directory of the
/// orchestrator's own (0711): were it directly in the sticky, world-writable temp dir, its owner
/// could rename it and leave a link to another directory in its place, and the orchestrator's
/// read of `<dir>/<file>` would go through that link. Read what it holds with
/// [`crate::fsx::open_read`] (a regular file only: the program may plant a link or a FIFO as
/// the file itself).
pub fn scratch_dir() -> std::io::Result<Scratch> {
    use std::os::unix::fs::PermissionsExt;
    let outer = tempfile::Builder::new()
        .prefix("spec-orchestrate-")
        .tempdir()?;
    std::fs::set_permissions(outer.path(), std::fs::Permissions::from_mode(0o711))?;
    let path = outer.path().join("w");
    std::fs::create_dir(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
    if let identity::Separation::Separate(id) = identity::current() {
        std::os::unix::fs::lchown(&path, Some(id.uid), Some(id.gid))?;
    }
    Ok(Scratch {
        _outer: outer,
        path,
    })
}

/// What [`scratch_dir`] made: the writable directory, inside one only the orchestrator may change.
#[derive(Debug)]
pub struct Scratch {
    _outer: tempfile::TempDir,
    path: PathBuf,
}

impl Scratch {
    /// The directory the confined program may write.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `from + after`, or the latest instant representable when that overflows: a configured
/// timeout is bounded by validation, but no duration may make the arithmetic panic.
pub fn deadline(from: Instant, after: Duration) -> Instant {
    from.checked_add(after)
        .or_else(|| from.checked_add(MAX_WAIT))
        .unwrap_or(from)
}

/// The longest wait any deadline is given when a duration overflows: 7 days, also the upper
/// bound configuration validation puts on every duration key.
pub const MAX_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// Runs `program args…` in `cwd` with exactly `env` (confined: see [`spawn_confined`]), writing
/// `stdin` to it. `timeout` bounds the whole call: waiting for the exit *and* reading its output
/// to the end, since a descendant that keeps the pipes open would otherwise hold the call past
/// any deadline. When the program exits or the deadline passes, every process it started is
/// killed: its group, and every descendant that left the group (see [`tree`]). Output is kept
/// within [`capture::HEAD_BYTES`] + [`capture::TAIL_BYTES`] per stream; see [`Call::run_logged`].
pub fn run(
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
    stdin: &[u8],
    timeout: Duration,
) -> std::io::Result<ProcessOutput> {
    let call = Call {
        program,
        args,
        cwd,
        env,
        stdin,
    };
    call.run_with(timeout, [None, None], spawn_confined)
}

/// A program to run as [`run`] does, for the other ways of running it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The program (a path: see [`find_confined_executable`]).
    pub program: &'a Path,
    /// Its arguments.
    pub args: &'a [String],
    /// Its working directory.
    pub cwd: &'a Path,
    /// Its whole environment (nothing is inherited).
    pub env: &'a BTreeMap<String, String>,
    /// What it reads on stdin.
    pub stdin: &'a [u8],
}

impl Call<'_> {
    /// [`run`], writing the whole of stdout (`logs[0]`) and stderr (`logs[1]`) to those files
    /// when a stream outgrows what is kept in memory.
    pub fn run_logged(
        &self,
        timeout: Duration,
        logs: [Option<PathBuf>; 2],
    ) -> std::io::Result<ProcessOutput> {
        self.run_with(timeout, logs, spawn_confined)
    }

    /// [`run`] as the orchestrator's own user, never confined: only for the tools the
    /// orchestrator itself provisions with, on a person's behalf (the demo's `apt-get install
    /// chromium` as root, `npm ci` into the driver directory, Playwright's browser download),
    /// which write where the agents' identity may not. Never for anything an agent, a spec or
    /// the repository names.
    pub fn run_unconfined(&self, timeout: Duration) -> std::io::Result<ProcessOutput> {
        self.run_with(timeout, [None, None], spawn_group)
    }

    /// The one body of every run; `start` spawns the prepared command.
    fn run_with(
        &self,
        timeout: Duration,
        [out_log, err_log]: [Option<PathBuf>; 2],
        start: fn(&mut Command) -> std::io::Result<Child>,
    ) -> std::io::Result<ProcessOutput> {
        let deadline = deadline(Instant::now(), timeout);
        let mut cmd = Command::new(self.program);
        piped(cmd.args(self.args), self.cwd, self.env);
        let mut child = start(&mut cmd)?;
        let pid = child.id() as i32;
        let mut tree = tree::Tree::new(pid);
        let writer = feed(child.stdin.take(), self.stdin.to_vec());
        let out = Drain::start(child.stdout.take(), out_log);
        let err = Drain::start(child.stderr.take(), err_log);
        let mut status = None;
        let waited = tree.poll(deadline, || {
            status = child.try_wait()?;
            Ok(status.is_some())
        });
        // The output is read to its end within the same deadline; a pipe still open then is
        // held by a descendant, which the kill below closes.
        let finished = || Ok(out.finished() && err.finished());
        let drained = waited.is_ok() && tree.poll(deadline, finished).unwrap_or(false);
        // Whatever the program left running goes too: it must not outlive its call.
        tree.kill_all();
        if status.is_none() {
            let _ = child.wait();
        }
        tree::disown(pid);
        crate::signals::unregister(pid);
        drop(writer);
        let timed_out = status.is_none() || !drained;
        let _ = tree.poll(Instant::now() + Duration::from_secs(1), finished);
        waited?;
        let (stdout, stdout_cut) = out.take();
        let (stderr, stderr_cut) = err.take();
        Ok(ProcessOutput {
            status,
            stdout,
            stderr,
            timed_out,
            stdout_cut,
            stderr_cut,
        })
    }
}

/// `cmd` set to run in `cwd` with exactly `env` (nothing inherited) and its three standard
/// streams piped: how a program the orchestrator feeds and reads is prepared to be spawned.
pub fn piped<'c>(
    cmd: &'c mut Command,
    cwd: &Path,
    env: &BTreeMap<String, String>,
) -> &'c mut Command {
    cmd.current_dir(cwd)
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
}

/// Writes `data` to the program's stdin on a thread of its own (a program that does not read
/// its stdin must not block the call); the thread is left to end when the pipe closes.
fn feed(input: Option<std::process::ChildStdin>, data: Vec<u8>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        if let Some(mut w) = input {
            // A program that does not read its stdin closes the pipe; that is not our error.
            let _ = w.write_all(&data);
        }
    })
}

/// Asks `done` every `every` until it says yes (true) or `deadline` has passed (false): the one
/// polling loop of every bounded wait.
pub(crate) fn poll_until(
    deadline: Instant,
    every: Duration,
    mut done: impl FnMut() -> bool,
) -> bool {
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(every);
    }
}

/// A stream read to its end on a thread of its own, into a bounded capture the call can take at
/// any time: the call never joins a reader that a descendant might block forever, and never
/// holds more than the capture's head and tail of it.
struct Drain {
    buf: Arc<Mutex<capture::BoundedCapture>>,
    done: Arc<AtomicBool>,
}

impl Drain {
    fn start(stream: Option<impl Read + Send + 'static>, log: Option<PathBuf>) -> Drain {
        let buf = Arc::new(Mutex::new(capture::BoundedCapture::with_defaults(log)));
        let done = Arc::new(AtomicBool::new(false));
        let (b, d) = (buf.clone(), done.clone());
        std::thread::spawn(move || {
            if let Some(mut r) = stream {
                let mut chunk = vec![0u8; 64 * 1024];
                loop {
                    match r.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(n) => crate::util::locked(&b).push(&chunk[..n]),
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
            }
            d.store(true, Ordering::SeqCst);
        });
        Drain { buf, done }
    }

    fn finished(&self) -> bool {
        self.done.load(Ordering::SeqCst)
    }

    /// The kept text of what was read so far, and the note when it was cut.
    fn take(&self) -> (String, Option<String>) {
        let mut guard = crate::util::locked(&self.buf);
        let capture = std::mem::replace(&mut *guard, capture::BoundedCapture::new(0, 0, None));
        let note = capture.note();
        (capture.finish(), note)
    }
}

/// Sends SIGKILL to a process group (a stale group id only yields ESRCH).
pub fn kill_group(pgid: i32) {
    crate::signals::signal_group(pgid, Signal::KILL);
}

/// Finds an executable: a path containing `/` is taken relative to `base`; a bare name is looked
/// up on PATH.
pub fn find_executable(program: &str, base: &Path) -> Option<PathBuf> {
    let path_var = std::env::var_os("PATH");
    find_executable_where(program, base, path_var.as_deref(), |_| true)
}

/// [`find_executable`] for a program [`spawn_confined`] will start: when it runs as the
/// separate identity, a candidate that identity cannot execute (under `/root`, in a private
/// directory) is passed over, as its own `execvp` would pass it over, so a `python3` on PATH
/// under root's home gives way to the system's.
pub fn find_confined_executable(program: &str, base: &Path) -> Option<PathBuf> {
    let path_var = std::env::var_os("PATH");
    find_executable_where(program, base, path_var.as_deref(), identity::may_execute)
}

/// [`find_executable`] on the search path `path_var` (a child's own `PATH`, which may differ
/// from this process's), passing over what `allowed` refuses.
fn find_executable_where(
    program: &str,
    base: &Path,
    path_var: Option<&OsStr>,
    allowed: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let is_exec = |p: &Path| {
        p.is_file()
            && std::fs::metadata(p)
                .map(|m| m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
            && allowed(p)
    };
    if program.contains('/') {
        let p = if Path::new(program).is_absolute() {
            PathBuf::from(program)
        } else {
            base.join(program)
        };
        return is_exec(&p).then_some(p);
    }
    std::env::split_paths(path_var?)
        .map(|d| d.join(program))
        .find(|p| is_exec(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_directory_cannot_be_swapped_for_a_link_by_the_program_that_writes_it() {
        let scratch = scratch_dir().expect("scratch dir");
        let identity::Separation::Separate(id) = identity::current() else {
            // Not root: no other uid exists to try it; the claim is held by root runs.
            return;
        };
        use std::os::unix::fs::MetadataExt;
        let inner = std::fs::metadata(scratch.path()).expect("stat");
        assert_eq!((inner.uid(), inner.mode() & 0o777), (id.uid, 0o700));
        // As that uid: writing the file works, moving the directory away (to plant a link
        // in its place) does not.
        let script = "echo hi > \"$1/out\" && ! mv \"$1\" \"$1.gone\" 2>/dev/null";
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", script, "sh"]).arg(scratch.path());
        let ok = spawn_confined(&mut cmd).and_then(|mut c| c.wait());
        assert!(
            ok.is_ok_and(|s| s.success()),
            "{}",
            scratch.path().display()
        );
        assert!(scratch.path().join("out").is_file());
    }

    #[test]
    fn deadlines_never_overflow() {
        let now = Instant::now();
        assert_eq!(
            deadline(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        // u64::MAX seconds (a configured `18446744073709551615`) overflows `Instant + Duration`,
        // which panics; the deadline saturates at 7 days instead.
        let far = deadline(now, Duration::from_secs(u64::MAX));
        assert_eq!(far, now + MAX_WAIT);
        let far = deadline(now, Duration::MAX);
        assert!(far > now);
        assert!(now.checked_add(Duration::from_secs(u64::MAX)).is_none());
    }

    fn sh(script: &str) -> ProcessOutput {
        run(
            Path::new("/bin/sh"),
            &["-c".to_string(), script.to_string()],
            Path::new("/"),
            &BTreeMap::new(),
            b"",
            Duration::from_secs(30),
        )
        .unwrap()
    }

    #[test]
    fn how_a_program_ended_reads_as_words_not_as_an_option() {
        assert_eq!(sh("exit 1").ended(), "exit status 1");
        assert_eq!(sh("true").ended(), "exit status 0");
        assert_eq!(sh("kill -9 $$").ended(), "killed by signal 9");
        let timed_out = ProcessOutput {
            status: None,
            stdout: String::new(),
            stderr: String::new(),
            timed_out: true,
            stdout_cut: None,
            stderr_cut: None,
        };
        assert_eq!(timed_out.ended(), "stopped on timeout");
    }

    #[test]
    fn a_huge_timeout_runs_the_program_instead_of_panicking() {
        let out = run(
            Path::new("/bin/sh"),
            &["-c".to_string(), "echo hi".to_string()],
            Path::new("/"),
            &BTreeMap::new(),
            b"",
            Duration::from_secs(u64::MAX),
        )
        .unwrap();
        assert_eq!(out.code(), Some(0));
        assert_eq!(out.stdout.trim(), "hi");
        assert!(!out.timed_out);
    }
}
