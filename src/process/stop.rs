//! Terminate with grace: the one way a process group is asked to stop.
//!
//! A program that is stopped on purpose (the Action job's phase at its time budget, the app under
//! test after its round, an app a killed run left behind) gets SIGTERM first, so it can save what
//! it holds (the phase saves its state after every agent call; a server closes its sockets), and
//! SIGKILL only when it has not gone after a grace period. Each caller knows best what "gone"
//! means — its child exited, the group has no live member — so it passes that test in; the
//! signals, the polling and the deadline are here once.

use std::time::{Duration, Instant};

/// How a [`terminate_group`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// Gone within the grace period after SIGTERM (or before it was sent).
    Terminated,
    /// Still there when the grace ran out: the group was sent SIGKILL.
    Killed,
}

/// How often `gone` is asked while the grace runs.
const POLL: Duration = Duration::from_millis(50);

/// Sends SIGTERM to process group `pgid`, asks `gone` every 50 ms until it says yes or `grace`
/// has passed, then sends SIGKILL to the group if it is not gone. A group id of 0 or 1 (ours or
/// init's, never a group we started) is never signalled: the call only reports it gone.
pub fn terminate_group(pgid: i32, grace: Duration, gone: impl FnMut() -> bool) -> Stopped {
    if pgid <= 1 {
        return Stopped::Terminated;
    }
    crate::signals::signal_group(pgid, rustix::process::Signal::TERM);
    if super::poll_until(super::deadline(Instant::now(), grace), POLL, gone) {
        return Stopped::Terminated;
    }
    super::kill_group(pgid);
    Stopped::Killed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn group(script: &str) -> std::process::Child {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(script);
        super::super::spawn_group(&mut cmd).expect("spawn")
    }

    /// Waits for `child`, which `sig` must have ended, and forgets its group.
    fn reaped(mut child: std::process::Child, sig: i32) {
        use std::os::unix::process::ExitStatusExt;
        let pid = child.id() as i32;
        let status = child.wait().expect("waited");
        assert_eq!(status.signal(), Some(sig));
        crate::process::tree::disown(pid);
        crate::signals::unregister(pid);
    }

    #[test]
    fn a_program_that_ends_on_sigterm_is_not_killed() {
        let mut child = group("sleep 30");
        let pid = child.id() as i32;
        let started = Instant::now();
        let how = terminate_group(pid, Duration::from_secs(10), || {
            child.try_wait().ok().flatten().is_some()
        });
        assert_eq!(how, Stopped::Terminated);
        assert!(started.elapsed() < Duration::from_secs(5));
        reaped(child, libc::SIGTERM);
    }

    #[test]
    fn a_program_that_ignores_sigterm_is_killed_after_the_grace() {
        // The shell ignores TERM and waits for its child, which ignores it too.
        let mut child = group("trap '' TERM; sleep 30 & wait; sleep 30");
        let pid = child.id() as i32;
        std::thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        let how = terminate_group(pid, Duration::from_millis(400), || {
            child.try_wait().ok().flatten().is_some()
        });
        assert_eq!(how, Stopped::Killed);
        assert!(started.elapsed() >= Duration::from_millis(400));
        reaped(child, libc::SIGKILL);
    }

    #[test]
    fn our_own_group_and_inits_are_never_signalled() {
        assert_eq!(
            terminate_group(0, Duration::ZERO, || false),
            Stopped::Terminated
        );
        assert_eq!(
            terminate_group(1, Duration::ZERO, || false),
            Stopped::Terminated
        );
    }
}
