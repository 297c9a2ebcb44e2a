//! Running other programs: the one process-group spawner, the scrubbed environment they get,
//! and the path checks that keep what a spec names inside the repository.
//!
//! Agents, acceptance cases, the browser driver and the app under test all start here. Each
//! program leads its own process group, registered with [`crate::signals`] so that Ctrl-C stops
//! the whole group, and on Linux gets `PR_SET_PDEATHSIG`, so it never outlives a killed
//! orchestrator and keeps editing files that the resumed run is about to redo.
//!
//! This is a foundation module (layer 1 in `docs/architecture.md`): it knows nothing of agents'
//! configuration; callers describe the environment they want with [`env::EnvPolicy`].

pub mod env;
pub mod paths;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

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
}

impl ProcessOutput {
    /// Exit code, if the process exited normally.
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }
}

/// Spawns `cmd` as the leader of a new process group that dies with the orchestrator (Linux), and
/// registers the group with the signal handler, which kills it on SIGINT/SIGTERM/SIGHUP. The
/// caller unregisters it ([`crate::signals::unregister`]) once the group is gone.
pub fn spawn_group(cmd: &mut Command) -> std::io::Result<Child> {
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe and touches only the calling (child) process.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    // Before the spawn, so that a Ctrl-C arriving at any moment after it finds the handler.
    crate::signals::install();
    let child = cmd.spawn()?;
    crate::signals::register(child.id() as i32);
    Ok(child)
}

/// Runs `program args…` in `cwd` with exactly `env`, writing `stdin` to it, and kills its whole
/// group when it exits or when `timeout` passes.
pub fn run(
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
    stdin: &[u8],
    timeout: Duration,
) -> std::io::Result<ProcessOutput> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn_group(&mut cmd)?;
    let pid = child.id() as i32;
    let mut input = child.stdin.take();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        if let Some(mut w) = input.take() {
            // A program that does not read its stdin closes the pipe; that is not our error.
            let _ = w.write_all(&data);
        }
    });
    let reader = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            timed_out = true;
            kill_group(pid);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Whatever the agent left running in its group goes too: it must not outlive its call.
    kill_group(pid);
    crate::signals::unregister(pid);
    let _ = writer.join();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Ok(ProcessOutput {
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        timed_out,
    })
}

/// Sends SIGKILL to a process group.
pub fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: killpg has no memory-safety preconditions; a stale group id only yields ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// Finds an executable: a path containing `/` is taken relative to `base`; a bare name is looked
/// up on PATH.
pub fn find_executable(program: &str, base: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let is_exec = |p: &Path| {
        p.is_file()
            && std::fs::metadata(p)
                .map(|m| m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
    };
    if program.contains('/') {
        let p = if Path::new(program).is_absolute() {
            PathBuf::from(program)
        } else {
            base.join(program)
        };
        return is_exec(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_exec(p))
}
