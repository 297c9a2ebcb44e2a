//! Why a confined program could not start, in words a person can act on.
//!
//! When the orchestrator runs as root, a confined program starts as the agents' uid
//! ([`super::identity`]). A program, its working directory or the interpreter its `#!` line
//! names may sit where only root goes (under `/root`, in a private `mktemp -d` directory): the
//! kernel then refuses the start with a bare `Permission denied` (or `No such file or
//! directory` for an interpreter it cannot see), which names neither the uid nor the path. So a
//! refused start is asked of the kernel again, by a probe running as that uid: which of those
//! paths, and which directory on the way to it, it cannot reach. The error then says as which
//! uid the program ran, what it could not reach, and the two ways out (make it reachable, or run
//! agents as the orchestrator's own user).

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::identity::{self, Separation};

/// `err`, the refused start of `cmd`, explained for the separate identity; any other error, or
/// one without a separate identity, is returned as it is.
pub(super) fn explain(cmd: &Command, err: io::Error) -> io::Error {
    let Separation::Separate(id) = identity::current() else {
        return err;
    };
    if !matches!(
        err.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::NotFound
    ) {
        return err;
    }
    let uid = id.uid;
    let off = "or run agents as the orchestrator's own user: `sandbox.identity: off` in .specs/pipeline.yml, or SPEC_ORCHESTRATE_AGENT_USER=off";
    let message = match unreachable_part(cmd, id) {
        Some((what, path, closed)) => {
            let blocked = if closed != path {
                format!("uid {uid} cannot enter {}", closed.display())
            } else if path.is_dir() {
                format!("uid {uid} cannot enter it")
            } else {
                format!("uid {uid} may not execute it")
            };
            format!(
                "{err}: it runs as uid {uid} (the agents' identity), and {what} {} is out of its reach ({blocked}). Make it reachable for uid {uid} (move it out of private directories such as /root, or grant search: `setfacl -m u:{uid}:x {}`), {off}",
                path.display(),
                closed.display()
            )
        }
        None => format!(
            "{err}: it runs as uid {uid} (the agents' identity); make the program and what it needs reachable for uid {uid}, {off}"
        ),
    };
    io::Error::new(err.kind(), message)
}

/// The first of the program's working directory, the program and its interpreter that the
/// identity cannot reach: what it is, its path, and the first closed path on the way to it.
fn unreachable_part(
    cmd: &Command,
    id: &identity::Identity,
) -> Option<(&'static str, PathBuf, PathBuf)> {
    let path_var = cmd
        .get_envs()
        .find(|(k, _)| *k == OsStr::new("PATH"))
        .and_then(|(_, v)| v.map(OsStr::to_os_string))
        .or_else(|| std::env::var_os("PATH"));
    let cwd = cmd.get_current_dir().map(Path::to_path_buf);
    let program = locate(cmd.get_program(), path_var.as_deref(), cwd.as_deref());
    let interpreter = program
        .as_deref()
        .and_then(|p| interpreter_of(p, path_var.as_deref()));
    let parts = [
        ("its working directory", cwd),
        ("the program", program),
        ("the interpreter its `#!` line names,", interpreter),
    ];
    let drop = |c: &mut Command| identity::drop_to(c, id.uid, id.gid);
    parts.into_iter().find_map(|(what, path)| {
        let path = path.filter(|p| p.is_absolute())?;
        let mut chain: Vec<PathBuf> = path.ancestors().map(Path::to_path_buf).collect();
        chain.reverse();
        let closed = super::reach::first_closed(&chain, &drop).ok()??;
        Some((what, path, closed))
    })
}

/// Where `program` is: itself when it names a path (relative to `cwd`: what the kernel was
/// asked to run, whether or not it is there), else what [`super::find_executable`] finds on the
/// child's own `PATH` (`path_var`), as its `execvp` searched it.
fn locate(program: &OsStr, path_var: Option<&OsStr>, cwd: Option<&Path>) -> Option<PathBuf> {
    let p = Path::new(program);
    if p.components().count() > 1 || p.is_absolute() {
        return Some(match cwd {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p.to_path_buf(),
        });
    }
    super::find_executable_where(program.to_str()?, Path::new("/"), path_var, |_| true)
}

/// The interpreter a script's `#!` line names; for `#!/usr/bin/env name`, `name` as found on
/// `path_var`. Read as the orchestrator (root reads any file), only the first line, at most
/// 256 bytes.
fn interpreter_of(program: &Path, path_var: Option<&OsStr>) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = crate::fsx::open_read(program).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let first = PathBuf::from(words.next()?);
    if first.file_name() == Some(OsStr::new("env")) {
        let name = words.find(|w| !w.starts_with('-'))?;
        return locate(OsStr::new(name), path_var, None);
    }
    Some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::tests::temp_file;

    #[test]
    fn a_scripts_interpreter_is_its_first_line_or_what_env_finds() {
        let (dir, direct) = temp_file("direct", "#!/opt/py/bin/python3 -u\nprint(1)\n");
        assert_eq!(
            interpreter_of(&direct, None),
            Some(PathBuf::from("/opt/py/bin/python3"))
        );
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("node"), "").unwrap();
        // An executable, as `execvp` (and so the search) takes only those.
        std::fs::set_permissions(
            bin.join("node"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let via_env = dir.path().join("via-env");
        std::fs::write(&via_env, "#!/usr/bin/env -S node\n").unwrap();
        assert_eq!(
            interpreter_of(&via_env, Some(bin.as_os_str())),
            Some(bin.join("node"))
        );
        let binary = dir.path().join("binary");
        std::fs::write(&binary, b"\x7fELF").unwrap();
        assert_eq!(interpreter_of(&binary, None), None);
        assert_eq!(
            locate(OsStr::new("x/y"), None, Some(Path::new("/w"))),
            Some(PathBuf::from("/w/x/y"))
        );
    }
}
