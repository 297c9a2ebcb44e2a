//! The separate identity every agent, acceptance command, app under test and browser driver runs
//! as when the orchestrator is root (the Docker action, a CI container).
//!
//! In a Docker action the orchestrator and everything it starts share one container, as root:
//! without a second identity an agent can read the orchestrator's memory and environment, write
//! the runner's file commands (`GITHUB_ENV`, `GITHUB_PATH`, …, applied to the job's later
//! steps) and the job's `HOME`. So, when the orchestrator runs as root, every program it starts
//! through [`crate::process::spawn_confined`] drops to an unprivileged uid/gid before `exec`
//! (supplementary groups cleared, then `setgid`, `setuid`, `PR_SET_NO_NEW_PRIVS`): a non-root
//! uid keeps no capability, and a setuid program cannot give one back. It gets a `HOME` and a
//! `TMPDIR` of its own (mode 0700, under the system temp directory), never the job's.
//!
//! The checkout it works in is lent to it ([`lend`]): before each confined program starts, the
//! working tree (not `.git`, which git's hardening and the rooms guard, and which an agent
//! never needs to write) is handed to the agent uid, and at the end of the command
//! ([`restore`]) every entry goes back to the owner of `.git` — the user who checked the
//! repository out — so the runner's post steps and later steps find the workspace as they
//! expect. The orchestrator's own git calls keep working on a tree another uid wrote:
//! `git::harden` passes `safe.directory=*` on the command line, the only protected scope it
//! reads, and no repository config runs code.
//!
//! Which uid: `SPEC_ORCHESTRATE_AGENT_USER` = `<uid>[:<gid>]`, default [`DEFAULT_UID`] (the
//! Docker image creates that user); `off` keeps agents as the orchestrator's user. Unset, the
//! identity is separated whenever the orchestrator is root — the Docker action, a CI container,
//! a developer's root shell alike: wherever root runs, it holds what an agent must not reach
//! (the job's tokens, the keys, root's own files), and nothing tells a CI container from the
//! runner's container reliably. Never uid 0, and never the uid that owns the runner's files
//! (`HOME`, `GITHUB_WORKSPACE`, the file-command files). When the identity cannot be separated
//! (not root, `setuid` refused, a refused uid), the run says so once and keeps working with the
//! other protections ([`describe`]).

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::util::locked;

/// The uid and gid agents run as by default (the Docker image's `agent` user; the same number
/// distroless images use for `nonroot`).
pub const DEFAULT_UID: u32 = 65532;

/// The variable that chooses the agents' identity.
pub const VARIABLE: &str = "SPEC_ORCHESTRATE_AGENT_USER";

/// The identity confined programs run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// User id (never 0).
    pub uid: u32,
    /// Group id.
    pub gid: u32,
    /// Its own `HOME` (0700, owned by it).
    pub home: PathBuf,
    /// Its own `TMPDIR` (0700, owned by it).
    pub tmp: PathBuf,
}

/// Whether agents run as a separate identity, and if not, why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Separation {
    /// Agents run as `Identity`.
    Separate(Identity),
    /// Agents run as the orchestrator's own user, for this reason.
    Shared(String),
}

/// What the configuration asks for (`sandbox` in `.specs/pipeline.yml`, handed down by
/// `config::SandboxConfig::apply`, since this layer does not read the configuration);
/// [`VARIABLE`] overrides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// `sandbox.identity: off`.
    pub off: bool,
    /// `sandbox.agent_user`'s uid.
    pub uid: u32,
    /// Its gid.
    pub gid: u32,
}

static SETTING: Mutex<Option<Setting>> = Mutex::new(None);

/// Records the configuration's setting; the identity is decided from it (unless [`VARIABLE`]
/// says otherwise) at the first confined spawn. A later call replaces an earlier one until then.
pub fn configure(setting: Setting) {
    *locked(&SETTING) = Some(setting);
}

/// `<uid>[:<gid>]` as numbers (a lone uid is also the gid).
pub fn parse_ids(text: &str) -> Option<(u32, u32)> {
    let v = text.trim();
    let (u, g) = v.split_once(':').unwrap_or((v, v));
    Some((u.parse().ok()?, g.parse().ok()?))
}

static CURRENT: OnceLock<Separation> = OnceLock::new();
static LENT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// The lent checkouts whose way in is open to the identity ([`super::reach`]).
static OPENED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The identity of this process's confined programs, decided (and announced) once.
pub fn current() -> &'static Separation {
    CURRENT.get_or_init(|| {
        let decided = decide();
        crate::events::emit(crate::events::Event::Note {
            message: describe_separation(&decided),
        });
        decided
    })
}

/// One sentence on how agents are isolated: which identity, or why none and which protections
/// are in force (the run's output and the PR body carry it).
pub fn describe() -> String {
    describe_separation(current())
}

fn describe_separation(s: &Separation) -> String {
    match s {
        Separation::Separate(id) => format!(
            "Agents, acceptance commands, the app and the browser run as uid {}:{} without capabilities, with their own HOME and TMPDIR; the checkout is lent to them and given back to its owner at the end.",
            id.uid, id.gid
        ),
        Separation::Shared(why) => format!(
            "Agents run as the orchestrator's own user ({why}). In force: the scrubbed environment, the non-dumpable orchestrator, the model API proxy, rooms and the file-command guard; not in force: a separate uid (agents can write what this user can)."
        ),
    }
}

/// What the environment asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Wanted {
    /// Unset: separate whenever the orchestrator is root.
    Default,
    /// `off`.
    Off,
    /// `<uid>[:<gid>]`.
    Ids(u32, u32),
    /// Not understood.
    Invalid(String),
}

fn wanted(value: Option<&str>) -> Wanted {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Wanted::Default;
    };
    if v.eq_ignore_ascii_case("off") {
        return Wanted::Off;
    }
    match parse_ids(v) {
        Some((u, g)) => Wanted::Ids(u, g),
        None => Wanted::Invalid(v.to_string()),
    }
}

fn decide() -> Separation {
    let euid = rustix::process::geteuid().as_raw();
    let value = std::env::var(VARIABLE).ok();
    let setting = *locked(&SETTING);
    let (uid, gid) = match choose(euid, wanted(value.as_deref()), setting) {
        Ok(ids) => ids,
        Err(why) => return Separation::Shared(why),
    };
    if let Some(path) = owned_runner_file(uid) {
        return Separation::Shared(format!(
            "uid {uid} owns the runner's {}; choose another in {VARIABLE}",
            path.display()
        ));
    }
    match prepare(uid, gid) {
        Ok(id) => Separation::Separate(id),
        Err(e) => Separation::Shared(format!("setting up uid {uid} failed or was refused: {e}")),
    }
}

/// The uid/gid agents should run as for an orchestrator running as `euid`, or why they share
/// its user. Every root run separates unless told not to: the variable first, then the
/// configuration.
fn choose(euid: u32, asked: Wanted, setting: Option<Setting>) -> Result<(u32, u32), String> {
    let (uid, gid) = match (asked, setting) {
        (Wanted::Off, _) => return Err(format!("{VARIABLE}=off")),
        (Wanted::Invalid(v), _) => {
            return Err(format!(
                "{VARIABLE}={v:?} is neither `<uid>[:<gid>]` nor `off`"
            ));
        }
        (Wanted::Ids(u, g), _) => (u, g),
        (Wanted::Default, Some(s)) if s.off => {
            return Err("`sandbox.identity: off` in the configuration".into());
        }
        (Wanted::Default, Some(s)) => (s.uid, s.gid),
        (Wanted::Default, None) => (DEFAULT_UID, DEFAULT_UID),
    };
    if euid != 0 {
        return Err(format!(
            "the orchestrator does not run as root (uid {euid}), so it cannot start agents as another user"
        ));
    }
    if uid == 0 || gid == 0 {
        return Err(format!("{VARIABLE} may not name root (uid or gid 0)"));
    }
    Ok((uid, gid))
}

/// A runner file (the job's `HOME`, the workspace, a file-command file) owned by `uid`.
fn owned_runner_file(uid: u32) -> Option<PathBuf> {
    let names = [
        "HOME",
        "GITHUB_WORKSPACE",
        "GITHUB_ENV",
        "GITHUB_PATH",
        "GITHUB_OUTPUT",
        "GITHUB_STATE",
        "GITHUB_STEP_SUMMARY",
    ];
    names
        .iter()
        .filter_map(|n| std::env::var_os(n).map(PathBuf::from))
        .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.uid() == uid))
}

/// Creates the identity's `HOME` and `TMPDIR` (in a fresh directory of the system temp dir, so
/// nothing planted there beforehand is reused, after removing those of processes that are gone:
/// [`super::leftovers`]) and checks that a program really starts as it.
fn prepare(uid: u32, gid: u32) -> std::io::Result<Identity> {
    use std::os::unix::fs::PermissionsExt;
    let temp = std::env::temp_dir();
    super::leftovers::sweep(&temp);
    let base = temp.join(super::leftovers::name(uid, &super::leftovers::random()?));
    std::fs::create_dir(&base)?;
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o711))?;
    let id = Identity {
        uid,
        gid,
        home: base.join("home"),
        tmp: base.join("tmp"),
    };
    for dir in [&id.home, &id.tmp] {
        std::fs::create_dir(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        std::os::unix::fs::lchown(dir, Some(uid), Some(gid))?;
    }
    // The agents' own git calls meet a repository owned by someone else; that is theirs to
    // allow (the orchestrator's git reads no global config at all).
    let gitconfig = id.home.join(".gitconfig");
    std::fs::write(&gitconfig, "[safe]\n\tdirectory = *\n")?;
    std::os::unix::fs::lchown(&gitconfig, Some(uid), Some(gid))?;
    let mut probe = Command::new("/bin/sh");
    probe
        .args(["-c", "test \"$(id -u)\" = \"$1\"", "sh", &uid.to_string()])
        .env_clear()
        .current_dir(&id.home);
    drop_to(&mut probe, uid, gid);
    super::reach::probe_output(&mut probe)
        .map_err(|e| std::io::Error::other(format!("a probe did not run as uid {uid}: {e}")))?;
    Ok(id)
}

/// Makes `cmd` drop to `uid`/`gid` between fork and exec: no supplementary groups, then the
/// group, then the user, then no way back through a setuid program.
pub(super) fn drop_to(cmd: &mut Command, uid: u32, gid: u32) {
    // SAFETY: setgroups, setgid, setuid and prctl are async-signal-safe system calls that touch
    // only the calling (child) process; nothing is allocated.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(gid) != 0
                || libc::setuid(uid) != 0
                || libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Prepares `cmd` to run as the separate identity, if there is one: its own `HOME` and `TMPDIR`
/// (unless the caller set other ones than the orchestrator's own, as an agent's `env` may), the
/// lent checkouts handed to it, and the drop of privileges before exec. Must be called before
/// [`crate::process::spawn_group`] adds its own `pre_exec` (the parent-death signal is reset by
/// a change of user, so it is set after). An error says which directory above a lent checkout
/// the identity cannot enter, and how to fix it.
pub fn confine(cmd: &mut Command) -> std::io::Result<()> {
    let Separation::Separate(id) = current() else {
        return Ok(());
    };
    for (name, own) in [("HOME", &id.home), ("TMPDIR", &id.tmp)] {
        let set = cmd
            .get_envs()
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| v.map(PathBuf::from));
        let inherited = std::env::var_os(name).map(PathBuf::from);
        if set.is_none() || set == inherited {
            cmd.env(name, own);
        }
    }
    hand_over(id)?;
    drop_to(cmd, id.uid, id.gid);
    Ok(())
}

/// Whether a confined program may execute `path`: always without a separate identity; with
/// one, as the kernel answers a probe running as it (the way to a lent checkout is opened
/// first, so a program inside it counts as the agent will find it).
pub fn may_execute(path: &Path) -> bool {
    let Separation::Separate(id) = current() else {
        return true;
    };
    // Only the way in is needed for the probe: the tree itself is handed over once, when the
    // program starts (a walk of the whole checkout per PATH candidate would be work done twice).
    if open_ways(id).is_err() {
        return false;
    }
    let drop = |c: &mut Command| drop_to(c, id.uid, id.gid);
    matches!(
        super::reach::first_closed(&[path.to_path_buf()], &drop),
        Ok(None)
    )
}

/// Registers `repo` as a checkout confined programs work in: its working tree is handed to the
/// separate identity before each of them starts, and back to its owner by [`restore`].
pub fn lend(repo: &Path) {
    let mut lent = locked(&LENT);
    if !lent.iter().any(|p| p == repo) {
        lent.push(repo.to_path_buf());
    }
}

/// Whether `repo` is lent now (by [`lend`] or a live [`Loan`]), however spelt: a tree that
/// stands in for it is lent too, so that its programs have the rights they had there.
pub fn is_lent(repo: &Path) -> bool {
    locked(&LENT).iter().any(|p| same_dir(p, repo))
}

/// A checkout lent by [`lend_for`], for as long as this value lives.
#[must_use = "the checkout is given back when the loan is dropped"]
#[derive(Debug)]
pub struct Loan {
    /// The checkout this loan lent, and so gives back; `None` when it was lent already.
    repo: Option<PathBuf>,
    /// A tree removed when the loan ends ([`lend_disposable`]): its entries are not given back.
    disposable: bool,
}

/// [`lend`] for as long as the returned [`Loan`] lives, for a library entry point that starts
/// confined programs in a checkout (a round of acceptance cases, the app under test): its
/// caller cannot forget to lend it, and a checkout it lent is given back ([`give_back`]) when
/// the loan ends. A checkout already lent (a command's run lends it for the whole command) is
/// left as it is: the loan gives nothing back, [`restore`] does at the command's end.
pub fn lend_for(repo: &Path) -> Loan {
    lend_as(repo, false)
}

/// [`lend_for`] for a disposable tree that is removed as soon as the loan ends (an acceptance
/// round's, a concurrent reviewer's): the way in is taken back, but its entries are not handed
/// back one by one to their owner first — on a tree of 100,000 files that walk is seconds on
/// the critical path, for files about to go.
pub fn lend_disposable(tree: &Path) -> Loan {
    lend_as(tree, true)
}

fn lend_as(repo: &Path, disposable: bool) -> Loan {
    let mut lent = locked(&LENT);
    let fresh = !lent.iter().any(|p| same_dir(p, repo));
    if fresh {
        lent.push(repo.to_path_buf());
    }
    let repo = fresh.then(|| repo.to_path_buf());
    Loan { repo, disposable }
}

impl Drop for Loan {
    fn drop(&mut self) {
        let Some(repo) = self.repo.take() else {
            return;
        };
        locked(&LENT).retain(|p| p != &repo);
        locked(&OPENED).retain(|p| p != &repo);
        if self.disposable {
            super::reach::take_back(&repo);
        } else {
            give_back(&repo);
        }
    }
}

/// The same directory, however spelt (a loan must not give back a tree a command lent under
/// another name, nor take back the way in that command still needs).
fn same_dir(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

/// Every entry of each lent working tree (`.git` excepted) not yet owned by the identity is
/// given to it, links themselves rather than their targets. Entries the orchestrator created
/// since the last program (an evidence directory, a saved state) are included. The first time,
/// the way to the tree is opened too ([`super::reach::open_way`]): search on each directory
/// above it the identity could not enter.
fn hand_over(id: &Identity) -> std::io::Result<()> {
    open_ways(id)?;
    let lent = locked(&LENT).clone();
    for repo in lent {
        chown_tree(&repo, id.uid, id.gid);
    }
    Ok(())
}

/// The way into each lent working tree, opened once per tree ([`super::reach::open_way`]).
fn open_ways(id: &Identity) -> std::io::Result<()> {
    // A checkout removed since it was lent (a finished test's, a deleted worktree's) has
    // nothing left to hand over; kept, its failing probe would refuse every later start.
    let lent = {
        let mut lent = locked(&LENT);
        lent.retain(|repo| std::fs::symlink_metadata(repo).is_ok());
        lent.clone()
    };
    let mut opened = locked(&OPENED);
    for repo in lent {
        if !opened.contains(&repo) {
            super::reach::open_way(&repo, id.uid, &|c| drop_to(c, id.uid, id.gid))?;
            opened.push(repo);
        }
    }
    Ok(())
}

/// Gives every lent working tree back to the owner of its `.git` (who checked it out). Called
/// when the command ends, whether or not a program was confined: as root, also a tree an earlier
/// run killed by SIGKILL left to the agent uid goes back here.
pub fn restore() {
    let lent = std::mem::take(&mut *locked(&LENT));
    for repo in lent {
        give_back(&repo);
    }
    locked(&OPENED).clear();
    remove_own_dirs();
}

/// Removes the `HOME` and `TMPDIR` this process made for its identity: nothing confined runs
/// after the command ends, and every command would otherwise leave one directory in the
/// system temp dir. `remove_dir_all` does not follow links an agent planted there.
fn remove_own_dirs() {
    if let Some(Separation::Separate(id)) = CURRENT.get()
        && let Some(base) = id.home.parent()
    {
        let _ = std::fs::remove_dir_all(base);
    }
}

/// Gives `repo`'s working tree back to the owner of its `.git`, whichever process lent it: the
/// `action` process calls it when its `step` child has ended, since a `step` killed by SIGKILL
/// (or any death that skips its [`restore`]) would otherwise leave the checkout to the agent
/// uid for the runner's post steps. Only root can change owners; otherwise nothing happens.
pub fn give_back(repo: &Path) {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let Ok(owner) = std::fs::symlink_metadata(repo.join(".git")) else {
        return;
    };
    chown_tree(repo, owner.uid(), owner.gid());
    // The directories above it, opened for the identity, as they were.
    super::reach::take_back(repo);
}

/// `lchown` of `root` and everything under it but `root/.git`, where not owned by `uid`:`gid`
/// already. Errors are skipped: an entry that vanished or cannot be changed stays as it is.
fn chown_tree(root: &Path, uid: u32, gid: u32) {
    let git = root.join(".git");
    let walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| e.path() != git);
    for entry in walk.flatten() {
        if let Ok(m) = entry.path().symlink_metadata()
            && (m.uid(), m.gid()) != (uid, gid)
        {
            let _ = std::os::unix::fs::lchown(entry.path(), Some(uid), Some(gid));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_names_an_identity_or_turns_it_off() {
        assert_eq!(wanted(None), Wanted::Default);
        assert_eq!(wanted(Some(" ")), Wanted::Default);
        assert_eq!(wanted(Some("OFF")), Wanted::Off);
        assert_eq!(wanted(Some("1234")), Wanted::Ids(1234, 1234));
        assert_eq!(wanted(Some("1234:99")), Wanted::Ids(1234, 99));
        assert!(matches!(wanted(Some("agent")), Wanted::Invalid(_)));
        assert!(matches!(wanted(Some("1:x")), Wanted::Invalid(_)));
    }

    #[test]
    fn every_root_run_separates_agents_unless_told_not_to() {
        let default = Ok((DEFAULT_UID, DEFAULT_UID));
        // Root with nothing set: the Docker action, a CI container, a root shell alike.
        assert_eq!(choose(0, Wanted::Default, None), default);
        let configured = Setting {
            off: false,
            uid: 1500,
            gid: 1600,
        };
        assert_eq!(
            choose(0, Wanted::Default, Some(configured)),
            Ok((1500, 1600))
        );
        // The variable wins over the configuration.
        assert_eq!(choose(0, Wanted::Ids(7, 8), Some(configured)), Ok((7, 8)));
        let off = Setting {
            off: true,
            ..configured
        };
        assert!(
            choose(0, Wanted::Default, Some(off))
                .is_err_and(|w| w.contains("sandbox.identity: off"))
        );
        assert!(choose(0, Wanted::Off, None).is_err_and(|w| w.contains("=off")));
        assert!(choose(0, Wanted::Ids(0, 5), None).is_err_and(|w| w.contains("may not name root")));
        // Not root: no other uid can be started, whatever is asked.
        assert!(choose(1000, Wanted::Default, None).is_err_and(|w| w.contains("uid 1000")));
        assert!(choose(1000, Wanted::Ids(65532, 65532), None).is_err());
    }

    #[test]
    fn a_lent_checkout_that_is_gone_does_not_refuse_the_next_start() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            // Only a root run lends checkouts to another uid; the claim is held by root runs.
            return;
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let gone = tmp.path().join("gone");
        std::fs::create_dir_all(gone.join(".git")).expect("mkdir");
        lend(&gone);
        std::fs::remove_dir_all(&gone).expect("rm");
        let started = crate::process::spawn_confined(&mut Command::new("/bin/true"))
            .and_then(|mut child| child.wait());
        assert!(
            started.is_ok_and(|s| s.success()),
            "a start after a removed checkout"
        );
    }

    #[test]
    fn a_shared_identity_says_why_and_what_is_still_in_force() {
        let s = describe_separation(&Separation::Shared("not root".into()));
        assert!(
            s.contains("not root") && s.contains("model API proxy") && s.contains("not in force")
        );
        let id = Identity {
            uid: 65532,
            gid: 65532,
            home: "/h".into(),
            tmp: "/t".into(),
        };
        assert!(describe_separation(&Separation::Separate(id)).contains("uid 65532:65532"));
    }
}
