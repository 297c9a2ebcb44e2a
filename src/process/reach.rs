//! The way into a lent checkout for the agents' uid: search (`--x`) on each directory above it
//! that the uid could not enter, granted for the command and taken back exactly.
//!
//! A root CI container keeps its checkout where only root may go: under `/root` (mode 0700),
//! or in a private temp directory (`mktemp -d`, `tempfile`: 0700). The agents' uid
//! ([`super::identity`]) is handed the working tree itself, but cannot reach it through such a
//! directory. So before the first confined program of a command, each ancestor of the checkout
//! that uid cannot search (asked of the kernel by a probe running as that uid, so ACLs and
//! group bits count as they will for the agent) gets one POSIX ACL entry, `user:<uid>:--x`
//! (the mask gains `x` as well): search, never listing or writing, and for that uid only. On a
//! file system without ACLs the directory gets the search bit for others instead (`o+x`). Before
//! anything changes, the directory's device, inode, mode and ACL (as the kernel stores it, the
//! `system.posix_acl_access` attribute) are written to a record in the checkout's git directory
//! (owned by root, never lent); [`take_back`] puts each one back exactly (ACL, then mode) and
//! removes the record. It runs when the command ends, from the `action` process when its `step`
//! has ended (a step killed by SIGKILL cannot), and before the next grant in that checkout,
//! so a killed command's grant is taken back by the next command there, as the tree's
//! give-back is.
//!
//! Limits: a directory replaced since the grant (another inode) is left alone; two commands at
//! once in checkouts under the same private directory share its grant, and the first to end
//! takes it back.

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rustix::fs::{Mode, XattrFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

/// The record of what was opened, in the checkout's git directory.
pub const RECORD: &str = "spec-orchestrate-search-grants.json";

/// The extended attribute holding a directory's access ACL.
const ACL_ATTR: &str = "system.posix_acl_access";

/// How long the probe that asks the kernel may take.
const PROBE_WAIT: Duration = Duration::from_secs(20);

/// How search was granted on one directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum How {
    /// One ACL entry for the agents' uid.
    Acl,
    /// The search bit for others (no ACL support).
    Mode,
}

/// One directory opened, and what it was before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opened {
    /// The directory.
    pub path: PathBuf,
    /// Its device and inode when it was opened (a replaced directory is left alone).
    pub dev: u64,
    /// See `dev`.
    pub ino: u64,
    /// Its permission bits before (`07777`).
    pub mode: u32,
    /// Its access ACL before, hex of the kernel's attribute; `None` when it had none.
    pub acl: Option<String>,
    /// How search was granted.
    pub how: How,
}

/// Opens the way to `repo` for `uid`: takes back a grant a killed command left, then grants
/// search on each ancestor the uid cannot enter, recording each before it changes. `drop`
/// makes a command run as the uid (the probe). An error names the directory and the fix.
pub fn open_way(repo: &Path, uid: u32, drop: &dyn Fn(&mut Command)) -> io::Result<Vec<Opened>> {
    take_back(repo);
    let canon = std::fs::canonicalize(repo)?;
    let mut ancestors: Vec<PathBuf> = canon.ancestors().skip(1).map(Path::to_path_buf).collect();
    ancestors.reverse();
    let record = record_path(repo).ok_or_else(|| {
        io::Error::other(format!(
            "{} has no git directory owned by this user to record the grants in",
            repo.display()
        ))
    })?;
    let mut opened: Vec<Opened> = Vec::new();
    for _ in 0..=ancestors.len() {
        let Some(dir) = first_closed(&ancestors, drop)? else {
            return Ok(opened);
        };
        let fix = format!(
            "the agents' uid {uid} cannot enter {}, above the checkout {}",
            dir.display(),
            repo.display()
        );
        if opened.iter().any(|o| o.path == dir) {
            return Err(io::Error::other(format!(
                "{fix}, even after search was granted to it; move the checkout, or set `sandbox.identity: off`"
            )));
        }
        grant(&dir, uid, &record, &mut opened).map_err(|e| {
            io::Error::other(format!(
                "{fix}, and granting search failed ({e}); move the checkout, or run `setfacl -m u:{uid}:x {}`",
                dir.display()
            ))
        })?;
    }
    Ok(opened)
}

/// Puts back every directory the record of `repo` names, then removes the record. Only root
/// changes anything; a record not owned by this user, or a link, is not read.
pub fn take_back(repo: &Path) {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let Some(record) = record_path(repo) else {
        return;
    };
    let Some(opened) = read_record(&record) else {
        return;
    };
    for o in opened.iter().rev() {
        if let Err(e) = put_back(o) {
            tracing::warn!("taking back search on {} failed: {e}", o.path.display());
        }
    }
    let _ = std::fs::remove_file(&record);
}

/// The record's place: the checkout's git directory (`.git`, or the one a `.git` file names),
/// when it is a directory owned by this user.
fn record_path(repo: &Path) -> Option<PathBuf> {
    let dot = repo.join(".git");
    let meta = std::fs::symlink_metadata(&dot).ok()?;
    let dir = if meta.is_dir() {
        dot
    } else if meta.is_file() {
        let text = std::fs::read_to_string(&dot).ok()?;
        let named = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
        repo.join(named)
    } else {
        return None;
    };
    let m = std::fs::symlink_metadata(&dir).ok()?;
    (m.is_dir() && m.uid() == rustix::process::geteuid().as_raw()).then(|| dir.join(RECORD))
}

fn read_record(path: &Path) -> Option<Vec<Opened>> {
    let file = crate::fsx::open_read(path).ok()?;
    let m = file.metadata().ok()?;
    if m.uid() != rustix::process::geteuid().as_raw() || m.mode() & 0o022 != 0 {
        return None;
    }
    serde_json::from_reader(io::BufReader::new(file)).ok()
}

/// Saved whole or not at all (a temp file of mode 0600, renamed over the record).
fn write_record(path: &Path, opened: &[Opened]) -> io::Result<()> {
    let bytes = serde_json::to_vec(opened).map_err(io::Error::other)?;
    crate::fsx::write_atomic(path, &bytes).map_err(io::Error::other)
}

/// The first of `dirs` (top-down) the probe, running as the uid, cannot search (or, for a
/// file, execute).
pub(super) fn first_closed(
    dirs: &[PathBuf],
    drop: &dyn Fn(&mut Command),
) -> io::Result<Option<PathBuf>> {
    let mut probe = Command::new("/bin/sh");
    probe
        .args([
            "-c",
            "for d do test -x \"$d\" || { printf %s \"$d\"; exit 0; }; done",
            "sh",
        ])
        .args(dirs)
        .env_clear()
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    drop(&mut probe);
    let out = probe_output(&mut probe)?;
    Ok((!out.is_empty()).then(|| PathBuf::from(OsString::from_vec(out))))
}

/// Runs a probe (a shell test as the agents' uid) for at most [`PROBE_WAIT`]: its stdout, or
/// an error when it failed or did not end in time (it is then killed).
pub(super) fn probe_output(probe: &mut Command) -> io::Result<Vec<u8>> {
    let mut child = probe.spawn()?;
    let mut waited = Ok(None);
    super::poll_until(
        Instant::now() + PROBE_WAIT,
        Duration::from_millis(2),
        || {
            waited = child.try_wait();
            !matches!(waited, Ok(None))
        },
    );
    let status = waited?.ok_or_else(|| {
        let _ = child.kill();
        let _ = child.wait();
        io::Error::other("the probe did not end in 20 s")
    })?;
    let mut out = Vec::new();
    if let Some(mut s) = child.stdout.take() {
        io::Read::read_to_end(&mut s, &mut out)?;
    }
    if !status.success() {
        return Err(io::Error::other(format!("the probe failed ({status})")));
    }
    Ok(out)
}

fn open_dir(path: &Path) -> io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(path)
}

/// Records `dir` as it is, then grants `uid` search on it.
fn grant(dir: &Path, uid: u32, record: &Path, opened: &mut Vec<Opened>) -> io::Result<()> {
    let f = open_dir(dir)?;
    let m = f.metadata()?;
    let before = get_acl(&f)?;
    let mode = m.mode() & 0o7777;
    let acl = with_search(before.as_deref(), mode, uid)?;
    // Recorded before anything changes, so that a kill at any moment leaves a record to take
    // back.
    opened.push(Opened {
        path: dir.to_path_buf(),
        dev: m.dev(),
        ino: m.ino(),
        mode,
        acl: before.as_deref().map(hex::encode),
        how: How::Acl,
    });
    write_record(record, opened)?;
    match set_acl(&f, &acl) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
            if let Some(last) = opened.last_mut() {
                last.how = How::Mode;
            }
            write_record(record, opened)?;
            Ok(rustix::fs::fchmod(&f, Mode::from_raw_mode(mode | 0o001))?)
        }
        Err(e) => Err(e),
    }
}

/// Puts one directory back as it was: its ACL (or none), then its mode.
fn put_back(o: &Opened) -> io::Result<()> {
    let f = open_dir(&o.path)?;
    let m = f.metadata()?;
    if (m.dev(), m.ino()) != (o.dev, o.ino) {
        return Err(io::Error::other(
            "another directory is there now; left alone",
        ));
    }
    match &o.acl {
        Some(h) => set_acl(&f, &hex::decode(h).map_err(io::Error::other)?)?,
        None => match rustix::fs::fremovexattr(&f, ACL_ATTR) {
            Ok(()) | Err(Errno::NODATA | Errno::OPNOTSUPP) => {}
            Err(e) => return Err(e.into()),
        },
    }
    Ok(rustix::fs::fchmod(&f, Mode::from_raw_mode(o.mode))?)
}

fn get_acl(f: &std::fs::File) -> io::Result<Option<Vec<u8>>> {
    let mut buf = vec![0u8; 4096];
    match rustix::fs::fgetxattr(f, ACL_ATTR, &mut buf[..]) {
        Ok(n) => Ok(Some(buf[..n].to_vec())),
        Err(Errno::NODATA | Errno::OPNOTSUPP) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn set_acl(f: &std::fs::File, acl: &[u8]) -> io::Result<()> {
    Ok(rustix::fs::fsetxattr(
        f,
        ACL_ATTR,
        acl,
        XattrFlags::empty(),
    )?)
}

const ACL_VERSION: u32 = 2;
const USER_OBJ: u16 = 0x01;
const USER: u16 = 0x02;
const GROUP_OBJ: u16 = 0x04;
const MASK: u16 = 0x10;
const OTHER: u16 = 0x20;
const UNDEFINED: u32 = u32::MAX;

/// `acl` (the kernel's form, or `None` for a directory with only its mode) with search for
/// `uid` added: its own entry gains `x`, and so does the mask that bounds it.
fn with_search(acl: Option<&[u8]>, mode: u32, uid: u32) -> io::Result<Vec<u8>> {
    let mut entries: Vec<(u16, u16, u32)> = match acl {
        Some(bytes) => parse(bytes)?,
        None => vec![
            (USER_OBJ, ((mode >> 6) & 7) as u16, UNDEFINED),
            (GROUP_OBJ, ((mode >> 3) & 7) as u16, UNDEFINED),
            (OTHER, (mode & 7) as u16, UNDEFINED),
        ],
    };
    match entries.iter_mut().find(|e| e.0 == USER && e.2 == uid) {
        Some(e) => e.1 |= 1,
        None => entries.push((USER, 1, uid)),
    }
    let group = entries.iter().find(|e| e.0 == GROUP_OBJ).map_or(0, |e| e.1);
    match entries.iter_mut().find(|e| e.0 == MASK) {
        Some(e) => e.1 |= 1,
        None => entries.push((MASK, group | 1, UNDEFINED)),
    }
    entries.sort_by_key(|e| (e.0, e.2));
    let mut out = ACL_VERSION.to_le_bytes().to_vec();
    for (tag, perm, id) in entries {
        out.extend(tag.to_le_bytes());
        out.extend(perm.to_le_bytes());
        out.extend(id.to_le_bytes());
    }
    Ok(out)
}

fn parse(bytes: &[u8]) -> io::Result<Vec<(u16, u16, u32)>> {
    let bad = || io::Error::other("an ACL this build does not understand");
    let (head, rest) = bytes.split_at_checked(4).ok_or_else(bad)?;
    if head != ACL_VERSION.to_le_bytes() || rest.len() % 8 != 0 {
        return Err(bad());
    }
    Ok(rest
        .chunks_exact(8)
        .map(|c| {
            (
                u16::from_le_bytes([c[0], c[1]]),
                u16::from_le_bytes([c[2], c[3]]),
                u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_is_one_entry_for_the_uid_and_the_mask() {
        let acl = with_search(None, 0o700, 65532).unwrap();
        assert_eq!(
            parse(&acl).unwrap(),
            vec![
                (USER_OBJ, 7, UNDEFINED),
                (USER, 1, 65532),
                (GROUP_OBJ, 0, UNDEFINED),
                (MASK, 1, UNDEFINED),
                (OTHER, 0, UNDEFINED),
            ]
        );
        // An ACL that already names the uid and others keeps them; the uid's entry and the
        // mask gain search only.
        let had = with_search(Some(&acl), 0o710, 42).unwrap();
        let again = with_search(Some(&had), 0o710, 65532).unwrap();
        assert_eq!(again, had);
        assert!(parse(&had).unwrap().contains(&(USER, 1, 42)));
        assert!(parse(b"junk").is_err());
    }

    /// Mode and ACL of `dir`, as the kernel has them.
    fn as_is(dir: &Path) -> (u32, Option<Vec<u8>>) {
        let f = open_dir(dir).unwrap();
        (f.metadata().unwrap().mode() & 0o7777, get_acl(&f).unwrap())
    }

    #[test]
    fn private_directories_above_a_checkout_are_opened_to_the_uid_and_put_back_exactly() {
        use std::os::unix::fs::PermissionsExt;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            // Only root can start a probe as another uid; the claim is held by root runs.
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let outer = tmp.path().join("private");
        let repo = outer.join("inner/repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::set_permissions(&outer, std::fs::Permissions::from_mode(0o2700)).unwrap();
        let inner = outer.join("inner");
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o750)).unwrap();
        // One of them already has an ACL of its own (for another uid), which must survive.
        let f = open_dir(&inner).unwrap();
        set_acl(&f, &with_search(None, 0o750, 4242).unwrap()).unwrap();
        let dirs = [tmp.path().to_path_buf(), outer.clone(), inner.clone()];
        let before: Vec<_> = dirs.iter().map(|d| as_is(d)).collect();
        let drop = |c: &mut Command| super::super::identity::drop_to(c, 65532, 65532);
        let opened = open_way(&repo, 65532, &drop).unwrap();
        let names: Vec<&Path> = opened.iter().map(|o| o.path.as_path()).collect();
        assert_eq!(names, dirs.iter().map(PathBuf::as_path).collect::<Vec<_>>());
        assert!(opened.iter().all(|o| o.how == How::Acl), "{opened:?}");
        let canon = std::fs::canonicalize(&repo).unwrap();
        let mut ancestors: Vec<PathBuf> =
            canon.ancestors().skip(1).map(Path::to_path_buf).collect();
        ancestors.reverse();
        assert_eq!(first_closed(&ancestors, &drop).unwrap(), None);
        assert!(repo.join(".git").join(RECORD).exists(), "recorded before");
        // Listing stays refused: search only.
        let mut ls = Command::new("/bin/ls");
        ls.arg(&outer)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        drop(&mut ls);
        assert!(!ls.status().unwrap().success());
        // A second open (a command after one that was killed) first takes the old grant back.
        open_way(&repo, 65532, &drop).unwrap();
        take_back(&repo);
        let after: Vec<_> = dirs.iter().map(|d| as_is(d)).collect();
        assert_eq!(after, before);
        assert!(!repo.join(".git").join(RECORD).exists());
    }
}
