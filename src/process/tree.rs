//! Every process a call started, found and stopped when the call ends, including those that left
//! its process group.
//!
//! Killing a call's process group is not enough: an agent can `setsid` a child (a new session,
//! so a new group) and exit; the child then holds the agent's stdout open, or simply keeps
//! running after the run. Two mechanisms catch it:
//!
//! - **Descendant tracking.** While a call runs, [`Tree::scan`] walks `/proc/*/stat` and records
//!   (pid, start time) of every process whose parent chain leads to the call's root or that sits
//!   in the call's group. A process keeps its pid and start time whatever group or session it
//!   moves to, so a recorded descendant is still recognised at the end of the call — and a pid
//!   reused by an unrelated process is not, because its start time differs.
//! - **Child subreaper.** A descendant whose parent exits before a scan saw it is reparented to
//!   the nearest subreaper ancestor. The orchestrator makes itself one ([`become_subreaper`],
//!   `PR_SET_CHILD_SUBREAPER`), so such an orphan shows up as *our* child although we never
//!   spawned it. A scan claims these orphans (our children, outside our own process group, not
//!   spawned by us and not claimed by another live call), and the end of the call kills and reaps
//!   them. Only a subreaper claims: in a process that is not one (a test harness calling the
//!   library), an orphan belongs to whatever adopted it.
//!
//! We never `waitpid(-1)`: that would steal the exit status of a child a `std::process::Child`
//! elsewhere waits for. Only processes found here — reparented to us, not spawned by us — are
//! reaped, by pid.
//!
//! [`GroupStamp`] is the other use of the same `/proc` data: a process group recorded in state
//! (the app under test) is recognised after the orchestrator was killed, and stopped by the next
//! command, but only while it is still the same group.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::process as sys;
use serde::{Deserialize, Serialize};

use crate::util::locked;

/// One line of `/proc/<pid>/stat`, the fields this module needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Process id.
    pub pid: i32,
    /// Parent process id.
    pub ppid: i32,
    /// Process group id.
    pub pgrp: i32,
    /// Start time in clock ticks after boot (field 22): with the pid, identifies the process.
    pub start_ticks: u64,
    /// Exited, waiting to be reaped (state `Z` or `X`).
    pub zombie: bool,
}

/// Parses the text of `/proc/<pid>/stat`. The command name (field 2) may contain spaces and
/// parentheses, so fields are counted from the last `)`.
pub fn parse_stat(pid: i32, text: &str) -> Option<ProcStat> {
    let (_, rest) = text.rsplit_once(')')?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Field N of the man page is f[N - 3]: state is field 3, starttime field 22.
    Some(ProcStat {
        pid,
        zombie: matches!(*f.first()?, "Z" | "X"),
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        start_ticks: f.get(19)?.parse().ok()?,
    })
}

/// The process `pid`, if it exists.
pub fn stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

/// Every process visible in `/proc` (empty where there is no `/proc`).
pub fn snapshot() -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// Makes this process a child subreaper (Linux), so that whatever a spawned program leaves
/// behind when its parent exits is reparented to us instead of to init, and the call that
/// started it can kill it. Called once at the start of every command; a no-op elsewhere.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        let ok = sys::set_child_subreaper(Some(sys::getpid())).is_ok();
        SUBREAPER.store(ok, Ordering::SeqCst);
    }
}

/// Who is who among our children: the ones we spawned, and the orphans each live call claimed.
#[derive(Default)]
struct Registry {
    own: HashSet<i32>,
    claimed: HashMap<u64, HashSet<i32>>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);
static NEXT_TREE: AtomicU64 = AtomicU64::new(1);

/// Runs `spawn` and records the child it returns as ours, under the registry's lock, so that no
/// concurrent scan sees the new child before it is known and takes it for an orphan.
pub(crate) fn spawn_own(
    spawn: impl FnOnce() -> std::io::Result<std::process::Child>,
) -> std::io::Result<std::process::Child> {
    let mut reg = locked(&REGISTRY);
    let child = spawn()?;
    reg.get_or_insert_with(Registry::default)
        .own
        .insert(child.id() as i32);
    Ok(child)
}

/// Forgets a child spawned through [`spawn_own`] (by [`crate::process::spawn_group`]) once it
/// has been waited for (its pid may be reused).
pub fn disown(pid: i32) {
    if let Some(reg) = locked(&REGISTRY).as_mut() {
        reg.own.remove(&pid);
    }
}

/// The processes of one call: its root (the program we spawned, leader of its own group) and
/// every descendant seen so far.
#[derive(Debug)]
pub struct Tree {
    id: u64,
    root: i32,
    root_ticks: u64,
    seen: HashMap<i32, u64>,
}

impl Tree {
    /// Starts tracking the descendants of `root`, a child spawned by [`crate::process::spawn_group`].
    pub fn new(root: i32) -> Tree {
        let mut tree = Tree {
            id: NEXT_TREE.fetch_add(1, Ordering::SeqCst),
            root,
            root_ticks: stat(root).map_or(0, |s| s.start_ticks),
            seen: HashMap::new(),
        };
        tree.scan();
        tree
    }

    /// Asks `done` every 20 ms until it says yes (`Ok(true)`), fails, or `deadline` has passed
    /// (`Ok(false)`), scanning the descendants every 100 ms meanwhile.
    pub(crate) fn poll(
        &mut self,
        deadline: Instant,
        mut done: impl FnMut() -> std::io::Result<bool>,
    ) -> std::io::Result<bool> {
        let (mut ticks, mut failed) = (0u32, None);
        let ended = super::poll_until(deadline, Duration::from_millis(20), || {
            ticks += 1;
            if ticks.is_multiple_of(5) {
                self.scan();
            }
            done().unwrap_or_else(|e| {
                failed = Some(e);
                true
            })
        });
        failed.map_or(Ok(ended), Err)
    }

    /// Records every current descendant of the root: by parent chain, by membership of the
    /// root's group, and (in a subreaper) the unclaimed orphans reparented to us. Reaps claimed
    /// orphans that already exited.
    pub fn scan(&mut self) {
        let procs = snapshot();
        let me = std::process::id() as i32;
        let my_pgrp = sys::getpgrp().as_raw_nonzero().get();
        let claim = SUBREAPER.load(Ordering::SeqCst);
        let mut guard = locked(&REGISTRY);
        let reg = guard.get_or_insert_with(Registry::default);
        let others: HashSet<i32> = reg
            .claimed
            .iter()
            .filter(|(id, _)| **id != self.id)
            .flat_map(|(_, pids)| pids.iter().copied())
            .collect();
        self.seen.retain(|pid, ticks| {
            procs
                .iter()
                .any(|p| p.pid == *pid && p.start_ticks == *ticks)
        });
        loop {
            let before = self.seen.len();
            for p in &procs {
                if p.pid == me || self.seen.contains_key(&p.pid) {
                    continue;
                }
                // Started no earlier than the root: a pid or group id reused by an older
                // process is not ours.
                let ours = p.start_ticks >= self.root_ticks
                    && (p.pid == self.root
                        || p.pgrp == self.root
                        || self.seen.contains_key(&p.ppid));
                let orphan = claim
                    && p.ppid == me
                    && p.pgrp != my_pgrp
                    && !reg.own.contains(&p.pid)
                    && !reg.own.contains(&p.pgrp)
                    && !others.contains(&p.pid);
                if ours || orphan {
                    self.seen.insert(p.pid, p.start_ticks);
                }
            }
            if self.seen.len() == before {
                break;
            }
        }
        reg.claimed
            .insert(self.id, self.seen.keys().copied().collect());
        let zombies: Vec<i32> = procs
            .iter()
            .filter(|p| p.zombie && p.ppid == me && self.reapable(p.pid, reg))
            .map(|p| p.pid)
            .collect();
        drop(guard);
        for pid in zombies {
            reap(pid);
        }
    }

    /// A seen process that is our child but not one we spawned: reparented to us, ours to reap.
    fn reapable(&self, pid: i32, reg: &Registry) -> bool {
        pid != self.root && self.seen.contains_key(&pid) && !reg.own.contains(&pid)
    }

    /// Kills every process of the call that is still running (the root's group and every
    /// recorded descendant, wherever it moved), and reaps those reparented to us. Repeats the
    /// scan until nothing is left, since a process may fork between a scan and its kill.
    /// Returns how many processes other than the root were killed.
    pub fn kill_all(&mut self) -> usize {
        let mut killed = HashSet::new();
        for _ in 0..20 {
            crate::process::kill_group(self.root);
            self.scan();
            let live: Vec<(i32, u64)> = self
                .seen
                .iter()
                .map(|(p, t)| (*p, *t))
                .filter(|(pid, ticks)| {
                    stat(*pid).is_some_and(|s| s.start_ticks == *ticks && !s.zombie)
                })
                .collect();
            if live.is_empty() {
                break;
            }
            for (pid, _) in live {
                // The pid was just checked to be the recorded process (same start time).
                if let Some(p) = sys::Pid::from_raw(pid) {
                    let _ = sys::kill_process(p, sys::Signal::KILL);
                }
                if pid != self.root {
                    killed.insert(pid);
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.reap_all();
        killed.len()
    }

    /// Waits (up to 2 s each) for the killed processes that were reparented to us.
    fn reap_all(&mut self) {
        let me = std::process::id() as i32;
        let pids: Vec<i32> = {
            let guard = locked(&REGISTRY);
            let Some(reg) = guard.as_ref() else { return };
            self.seen
                .keys()
                .copied()
                .filter(|pid| self.reapable(*pid, reg))
                .filter(|pid| stat(*pid).is_some_and(|s| s.ppid == me))
                .collect()
        };
        for pid in pids {
            let until = Instant::now() + Duration::from_secs(2);
            super::poll_until(until, Duration::from_millis(10), || reap(pid));
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if let Some(reg) = locked(&REGISTRY).as_mut() {
            reg.claimed.remove(&self.id);
        }
    }
}

/// Reaps `pid` if it has exited; true when it is gone (reaped now, or not our child).
fn reap(pid: i32) -> bool {
    // Never `waitpid(-1)` (any child) or a group: only this pid.
    let Some(pid) = sys::Pid::from_raw(pid).filter(|_| pid > 0) else {
        return true;
    };
    !matches!(sys::waitpid(Some(pid), sys::WaitOptions::NOHANG), Ok(None))
}

/// A process group as recorded in state: its id and its leader's start time, so that a later
/// command can tell the same group from a new one that happens to get the same id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupStamp {
    /// Process group id (the leader's pid).
    pub pgid: i32,
    /// The leader's start time, clock ticks after boot (`/proc/<pid>/stat` field 22).
    pub start_ticks: u64,
    /// The machine's boot (`/proc/sys/kernel/random/boot_id`): pids and start times mean
    /// nothing on another machine or after a reboot (a checkpoint resumed on a new runner).
    #[serde(default)]
    pub boot_id: String,
}

/// This boot's id (empty where the kernel does not say).
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

impl GroupStamp {
    /// The stamp of the group led by `pid`.
    pub fn of(pid: i32) -> Option<GroupStamp> {
        let s = stat(pid)?;
        Some(GroupStamp {
            pgid: s.pgrp,
            start_ticks: s.start_ticks,
            boot_id: boot_id(),
        })
    }

    /// The live members of the group if it is still the recorded one: its leader runs with the
    /// recorded start time, or the leader is gone (a killed orchestrator's shell dies with it)
    /// and every member started after the recorded leader. A pid cannot be reused while a group
    /// of that id exists, so members without a leader belong to the recorded group.
    pub fn live_members(&self) -> Vec<i32> {
        if self.boot_id.is_empty() || self.boot_id != boot_id() {
            return Vec::new();
        }
        let procs = snapshot();
        let members: Vec<&ProcStat> = procs
            .iter()
            .filter(|p| p.pgrp == self.pgid && !p.zombie)
            .collect();
        let same = match procs.iter().find(|p| p.pid == self.pgid) {
            Some(leader) => leader.start_ticks == self.start_ticks,
            None => members.iter().all(|p| p.start_ticks >= self.start_ticks),
        };
        if same {
            members.iter().map(|p| p.pid).collect()
        } else {
            Vec::new()
        }
    }

    /// Stops the group if it is still the recorded one: SIGTERM, then SIGKILL after `grace`.
    /// Returns how many processes it had (0: nothing left, or another group now has the id).
    pub fn stop_leftover(&self, grace: Duration) -> usize {
        let members = self.live_members();
        if members.is_empty() || self.pgid <= 1 {
            return 0;
        }
        super::stop::terminate_group(self.pgid, grace, || self.live_members().is_empty());
        members.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let line = "4242 (a (weird) name) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200";
        let s = parse_stat(4242, line).unwrap();
        assert_eq!(
            (s.ppid, s.pgrp, s.start_ticks, s.zombie),
            (17, 4242, 987654, false)
        );
        let z = parse_stat(7, "7 (x) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0").unwrap();
        assert!(z.zombie);
        assert!(parse_stat(1, "garbage").is_none());
    }

    #[test]
    fn a_stamp_matches_only_the_same_group() {
        let me = std::process::id() as i32;
        let mine = stat(me).unwrap();
        let stamp = GroupStamp {
            pgid: mine.pgrp,
            start_ticks: stat(mine.pgrp).map(|s| s.start_ticks).unwrap_or(0),
            boot_id: boot_id(),
        };
        assert!(!stamp.live_members().is_empty());
        let other = GroupStamp {
            start_ticks: stamp.start_ticks + 1,
            ..stamp.clone()
        };
        if stat(stamp.pgid).is_some() {
            assert!(
                other.live_members().is_empty(),
                "a different start time is another group"
            );
        }
        let elsewhere = GroupStamp {
            boot_id: "another-machine".into(),
            ..stamp
        };
        assert!(
            elsewhere.live_members().is_empty(),
            "another boot's stamp never matches"
        );
    }
}
