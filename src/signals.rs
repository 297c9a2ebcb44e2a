//! Process groups that must not outlive the orchestrator.
//!
//! Agents, the browser driver and the app under test each run in their own process group, so
//! that a timeout or the end of a round can kill everything they started. Their groups are also
//! registered here while they run: on SIGINT (Ctrl-C), SIGTERM or SIGHUP a handler SIGKILLs every
//! registered group (after a SIGTERM and a short wait for a group led by a spec-orchestrate
//! process, [`forward`], so it stops its own groups) and then lets the signal end the process as
//! it would have, so an interrupted run never leaves a dev server holding its port or an agent
//! editing files. (The direct children also get `PR_SET_PDEATHSIG` for the case no handler can
//! catch, SIGKILL.)

use std::sync::atomic::{AtomicI32, Ordering};

// Raw system calls: async-signal-safe, as everything the handler calls must be.
use rustix::process as sys;

/// Slots of live process groups, read by the signal handler (atomics only: a handler may not
/// lock or allocate).
static LIVE_GROUPS: [AtomicI32; 32] = [const { AtomicI32::new(0) }; 32];

/// Slots of live groups led by a spec-orchestrate process of our own (the action's phase
/// `step`), which get SIGTERM before SIGKILL ([`forward`]).
static FORWARD_GROUPS: [AtomicI32; 4] = [const { AtomicI32::new(0) }; 4];

/// How long the handler waits for the leaders of [`FORWARD_GROUPS`] to end after SIGTERM, in
/// steps of 20 ms: their own handler only kills and re-raises, which takes milliseconds.
const FORWARD_STEPS: u32 = 150;

/// Whether the leader `pid` (a child of this process) has ended: exited, or already reaped. It
/// is not reaped here (`WNOWAIT`), so the thread that owns its `Child` still gets its status.
fn ended(pid: i32) -> bool {
    let Some(pid) = sys::Pid::from_raw(pid) else {
        return true;
    };
    let how = sys::WaitIdOptions::EXITED | sys::WaitIdOptions::NOHANG | sys::WaitIdOptions::NOWAIT;
    !matches!(sys::waitid(sys::WaitId::Pid(pid), how), Ok(None))
}

/// SIGTERM to each forwarded group, then a wait until every leader ended (at most 3 s).
fn forward_first() {
    let mut any = false;
    for slot in &FORWARD_GROUPS {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            signal_group(pgid, sys::Signal::TERM);
            any = true;
        }
    }
    for _ in 0..FORWARD_STEPS {
        if !any {
            return;
        }
        any = FORWARD_GROUPS.iter().any(|slot| {
            let pgid = slot.load(Ordering::SeqCst);
            pgid > 0 && !ended(pgid)
        });
        let pause = rustix::thread::Timespec {
            tv_sec: 0,
            tv_nsec: 20_000_000,
        };
        let _ = rustix::thread::nanosleep(&pause);
    }
}

extern "C" fn on_fatal_signal(sig: libc::c_int) {
    forward_first();
    for slot in &LIVE_GROUPS {
        signal_group(slot.load(Ordering::SeqCst), sys::Signal::KILL);
    }
    // SAFETY: signal and raise are async-signal-safe; restoring the default action and raising
    // again ends the process the way the signal would have without this handler.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Sends `signal` to process group `pgid`, if it names one (0 would be our own).
pub(crate) fn signal_group(pgid: i32, signal: sys::Signal) {
    if let Some(pgid) = sys::Pid::from_raw(pgid).filter(|_| pgid > 0) {
        let _ = sys::kill_process_group(pgid, signal);
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
    take_slot(&LIVE_GROUPS, pgid);
}

/// Marks a registered group whose leader is a spec-orchestrate process with this handler (the
/// action's phase `step`): on a fatal signal it gets SIGTERM first and up to 3 s to end, so its
/// own handler kills the groups it registered — the app under test, agents, the browser driver,
/// each in a group of its own that this process does not know — before SIGKILL. Without it a
/// job stopped by SIGTERM killed the step outright, and the app the step had started ran on.
pub fn forward(pgid: i32) {
    register(pgid);
    take_slot(&FORWARD_GROUPS, pgid);
}

/// Writes `pgid` into the first free slot of `slots`; with none free, nothing (see [`register`]).
fn take_slot(slots: &[AtomicI32], pgid: i32) {
    let free = |slot: &AtomicI32| {
        slot.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    };
    let _ = slots.iter().any(free);
}

/// Forgets a process group that has been stopped.
pub fn unregister(pgid: i32) {
    for slot in LIVE_GROUPS.iter().chain(&FORWARD_GROUPS) {
        let _ = slot.compare_exchange(pgid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}
