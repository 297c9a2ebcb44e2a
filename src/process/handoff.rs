//! Handing secrets to a child orchestrator process (`step`) through an inherited socket instead
//! of its environment or command line.
//!
//! A process's `/proc/<pid>/environ` is the environment it was started with, readable by any
//! process of the same user for as long as it is dumpable — and every program is dumpable from
//! `execve` until its `main` marks it otherwise ([`crate::process::forbid_inspection`]). A `step`
//! started with the model keys in its environment would show them through that window (and the
//! environment block never changes afterwards), and `/proc/<pid>/cmdline` is readable by
//! everyone. So the parent passes the keys through one end of a `socketpair` the child inherits
//! (its number in [`FD_VARIABLE`]):
//!
//! 1. the child marks itself non-dumpable, checks that no tracer attached during the window,
//!    and only then writes one byte to say it is ready;
//! 2. the parent, on that byte, writes the secrets (JSON, bounded) and closes its end;
//! 3. the child reads to the end and sets them in its own in-memory environment, where the code
//!    that reads keys at call time finds them. That environment is not `/proc/<pid>/environ`
//!    (which keeps showing the start-up block) and is never inherited by agents, which start
//!    from a scrubbed environment.
//!
//! A socket rather than a pipe, because a pipe end can be reopened through `/proc/<pid>/fd/<n>`
//! by whoever may inspect the process during its window, and a socket cannot; and the secrets
//! are written only after the child is ready, so nothing waits in the buffer during the window.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

/// The variable naming the inherited descriptor (a number, never a secret).
pub const FD_VARIABLE: &str = "SPEC_ORCHESTRATE_SECRETS_FD";

/// The most the parent sends and the child accepts: keys are short, and a bounded read cannot
/// be made to allocate without end.
const LIMIT: usize = 64 * 1024;

/// The byte the child writes once it is non-dumpable and untraced.
const READY: u8 = b'r';

/// Secrets to hand to one child, by the variable name it should find them under.
#[derive(Default)]
pub struct Handoff {
    secrets: BTreeMap<String, String>,
}

/// The parent's end, between [`Handoff::attach`] and the child's spawn.
pub struct Pending {
    ours: UnixStream,
    theirs: Option<OwnedFd>,
    payload: Vec<u8>,
}

impl Handoff {
    /// Nothing to hand over yet.
    pub fn new() -> Handoff {
        Handoff::default()
    }

    /// The child finds `value` as the variable `name` (also removed from what it inherits).
    pub fn pass(&mut self, name: &str, value: &str) {
        self.secrets.insert(name.to_string(), value.to_string());
    }

    /// Prepares `cmd`: every handed variable removed from its environment, the child's end of a
    /// fresh socket pair kept open across its `exec` (only in the child: in this process it stays
    /// close-on-exec, so no other program inherits it), and its number in [`FD_VARIABLE`]. Call
    /// [`Pending::send`] right after the spawn.
    pub fn attach(self, cmd: &mut Command) -> std::io::Result<Pending> {
        let payload = serde_json::to_vec(&self.secrets).map_err(std::io::Error::other)?;
        if payload.len() > LIMIT {
            return Err(std::io::Error::other(format!(
                "the secrets to hand over take {} bytes, more than {LIMIT}",
                payload.len()
            )));
        }
        let (ours, theirs) = UnixStream::pair()?;
        let theirs = OwnedFd::from(theirs);
        let fd = theirs.as_raw_fd();
        for name in self.secrets.keys() {
            cmd.env_remove(name);
        }
        cmd.env(FD_VARIABLE, fd.to_string());
        // SAFETY: fcntl is async-signal-safe and changes only the child's descriptor table.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(Pending {
            ours,
            theirs: Some(theirs),
            payload,
        })
    }
}

impl Pending {
    /// After the spawn: closes this process's copy of the child's end, waits (at most `wait`)
    /// for the child to say it is ready, then writes the secrets and closes. An error leaves the
    /// child without secrets; it then stops with its own error.
    pub fn send(mut self, wait: Duration) -> std::io::Result<()> {
        drop(self.theirs.take());
        self.ours.set_read_timeout(Some(wait))?;
        self.ours.set_write_timeout(Some(wait))?;
        let mut byte = [0u8; 1];
        self.ours.read_exact(&mut byte)?;
        if byte[0] != READY {
            return Err(std::io::Error::other(
                "the child process did not say it was ready for its secrets",
            ));
        }
        self.ours.write_all(&self.payload)?;
        self.ours.shutdown(std::net::Shutdown::Both)
    }
}

/// In the child, first thing after [`crate::process::forbid_inspection`] and before any thread
/// starts: if the parent handed secrets over ([`FD_VARIABLE`] is set), refuses them while a
/// tracer is attached, says it is ready, reads them (bounded, at most `wait`) and sets them in
/// this process's environment. Without the variable, nothing happens.
pub fn receive(wait: Duration) -> std::io::Result<()> {
    let Some(value) = std::env::var_os(FD_VARIABLE) else {
        return Ok(());
    };
    // SAFETY: called from `main` before any other thread exists (see the function's contract).
    unsafe { std::env::remove_var(FD_VARIABLE) };
    let fd: RawFd = value
        .to_str()
        .and_then(|v| v.parse().ok())
        .filter(|fd| *fd > 2)
        .ok_or_else(|| std::io::Error::other(format!("{FD_VARIABLE} is not a descriptor")))?;
    if !is_socket(fd) {
        return Err(std::io::Error::other(format!(
            "{FD_VARIABLE} names descriptor {fd}, which is not the socket the parent opened"
        )));
    }
    // SAFETY: the descriptor was inherited for this purpose, is a socket (checked above) and
    // nothing else in this process owns it.
    let mut stream = UnixStream::from(unsafe { OwnedFd::from_raw_fd(fd) });
    // Close-on-exec again, so no program this process starts inherits it.
    rustix::io::fcntl_setfd(&stream, rustix::io::FdFlags::CLOEXEC)?;
    if let Some(tracer) = tracer()? {
        return Err(std::io::Error::other(format!(
            "process {tracer} traces this one; its secrets are not received"
        )));
    }
    stream.set_read_timeout(Some(wait))?;
    stream.set_write_timeout(Some(wait))?;
    stream.write_all(&[READY])?;
    let mut payload = Vec::new();
    (&mut stream)
        .take(LIMIT as u64 + 1)
        .read_to_end(&mut payload)?;
    if payload.len() > LIMIT {
        return Err(std::io::Error::other(
            "the handed secrets are over the limit",
        ));
    }
    let secrets: BTreeMap<String, String> =
        serde_json::from_slice(&payload).map_err(|e| std::io::Error::other(e.to_string()))?;
    for (name, value) in secrets {
        if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
            return Err(std::io::Error::other(format!(
                "a handed secret has an unusable name {name:?} or value"
            )));
        }
        // SAFETY: still before any other thread exists.
        unsafe { std::env::set_var(name, value) };
    }
    Ok(())
}

fn is_socket(fd: RawFd) -> bool {
    // SAFETY: fstat writes only into the buffer it is given.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFSOCK
    }
}

/// The pid tracing this process, if any (`TracerPid` of `/proc/self/status`). A tracer that
/// attached before the process became non-dumpable would keep reading its memory afterwards.
fn tracer() -> std::io::Result<Option<u32>> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    Ok(status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|pid| *pid != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secrets_leave_the_environment_and_reach_the_child_only_after_it_is_ready() {
        // bash, not sh: the descriptor may be past 9, which dash cannot redirect.
        let mut cmd = Command::new("bash");
        // The child plays `receive` by hand: it must write the ready byte before anything comes.
        cmd.args([
            "-c",
            "fd=$SPEC_ORCHESTRATE_SECRETS_FD; env | grep -c KEY_UNDER_TEST; printf r >&$fd; cat <&$fd",
        ])
        .env("KEY_UNDER_TEST", "inherited")
        .stdout(std::process::Stdio::piped());
        let mut h = Handoff::new();
        h.pass("KEY_UNDER_TEST", "sk-handed-over");
        let pending = h.attach(&mut cmd).unwrap();
        let child = cmd.spawn().unwrap();
        pending.send(Duration::from_secs(10)).unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text, "0\n{\"KEY_UNDER_TEST\":\"sk-handed-over\"}", "{text}");
    }

    #[test]
    fn a_child_that_never_says_it_is_ready_gets_nothing_and_the_wait_ends() {
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "sleep 5"]);
        let mut h = Handoff::new();
        h.pass("K", "v");
        let pending = h.attach(&mut cmd).unwrap();
        let mut child = cmd.spawn().unwrap();
        let started = std::time::Instant::now();
        assert!(pending.send(Duration::from_millis(200)).is_err());
        assert!(started.elapsed() < Duration::from_secs(3));
        let _ = child.kill();
        let _ = child.wait();
    }
}
