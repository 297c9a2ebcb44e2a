//! Process groups that must not outlive the orchestrator.
//!
//! Agents, the browser driver and the app under test each run in their own process group, so
//! that a timeout or the end of a round can kill everything they started. Their groups are also
//! registered here while they run: on SIGINT (Ctrl-C), SIGTERM or SIGHUP a handler SIGKILLs every
//! registered group and then lets the signal end the process as it would have, so an interrupted
//! run never leaves a dev server holding its port or an agent editing files. (The direct children
//! also get `PR_SET_PDEATHSIG` for the case no handler can catch, SIGKILL.)

use std::sync::atomic::{AtomicI32, Ordering};

/// Slots of live process groups, read by the signal handler (atomics only: a handler may not
/// lock or allocate).
static LIVE_GROUPS: [AtomicI32; 32] = [const { AtomicI32::new(0) }; 32];

extern "C" fn on_fatal_signal(sig: libc::c_int) {
    for slot in &LIVE_GROUPS {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: killpg is async-signal-safe.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
    // SAFETY: signal and raise are async-signal-safe; restoring the default action and raising
    // again ends the process the way the signal would have without this handler.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP (once per process). Call it before
/// spawning, so a signal arriving right after the spawn finds it.
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: the handler only touches atomics and async-signal-safe calls.
            unsafe {
                libc::signal(
                    sig,
                    on_fatal_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
                );
            }
        }
    });
}

/// Registers a live process group (ignored when every slot is taken: the group still has its
/// timeout and its child's parent-death signal).
pub fn register(pgid: i32) {
    install();
    for slot in &LIVE_GROUPS {
        if slot
            .compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
}

/// Forgets a process group that has been stopped.
pub fn unregister(pgid: i32) {
    for slot in &LIVE_GROUPS {
        let _ = slot.compare_exchange(pgid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}
