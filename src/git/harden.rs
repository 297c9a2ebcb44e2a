//! What every git call runs with, so that nothing an agent wrote into the checkout runs code in
//! the orchestrator's name.
//!
//! Agents run arbitrary code in the same checkout as the orchestrator, under the same user. They
//! can write `.git/hooks/*`, `.git/config` (and any file it includes), `.gitattributes`, and the
//! user's `~/.gitconfig`. Git runs programs named there on ordinary commands (`add`, `commit`,
//! `checkout`, `diff`, `fetch`, `push`), with the caller's environment. So every git call of the
//! pipeline — phases and the Action's publish step alike — is made from [`command`]:
//!
//! - **Environment**: cleared, then only `PATH`, `TZ`, `LC_ALL=C`, `HOME`/`XDG_CONFIG_HOME` set to
//!   `/dev/null` (nothing can be created under it), and git's own switches:
//!   `GIT_CONFIG_NOSYSTEM` and `GIT_CONFIG_GLOBAL=/dev/null` (system and user config are not
//!   read: an agent running as root or as the user can write them), `GIT_ATTR_NOSYSTEM`,
//!   `GIT_TERMINAL_PROMPT=0`, `GIT_EDITOR`/`GIT_SEQUENCE_EDITOR=true`, `GIT_PAGER=cat`. No token,
//!   no API key: the push credential helper gets the token in its own two variables only
//!   (`forge::remote`).
//! - **Fixed overrides** (`-c`, command-line scope, which git reads last): see [`FIXED`].
//! - **Repository config**: git always reads `.git/config` and cannot be told not to, and a
//!   filter or diff driver has a name only the repository knows. So before each call the keys git
//!   would see are listed (`git config --list --name-only --show-scope --includes`, which runs no
//!   program) and every key that names a program gets a `-c` override with the same name, which
//!   wins: filter drivers (`clean`, `smudge`, `process` emptied, `required=false`), diff drivers
//!   (`command`, `textconv`), merge drivers, trailer commands, remote `uploadpack`/`receivepack`.
//!   A repository config that moves the work tree (`core.worktree`) is refused.
//! - **Diffs** (`diff`, `log`, `show`) also get `--no-ext-diff --no-textconv`.
//!
//! Aliases never run: the wrapper always names a real subcommand.

use std::path::Path;
use std::process::Command;

/// Overrides given to every call, whatever the repository says.
///
/// - `core.hooksPath=/dev/null`: no hook (pre-commit, post-commit, reference-transaction,
///   post-checkout, pre-push, …) can be found; `--no-verify` alone skips only some of them.
/// - `core.fsmonitor=false`: the fsmonitor "hook" is a program git runs on `status`/`add`.
/// - `core.sshCommand=ssh`, `core.askPass=`, `credential.helper=` (resets every configured
///   helper, URL-specific ones included; the push adds its own after it).
/// - `core.attributesFile=/dev/null`: no attributes from a file outside the tree.
/// - `diff.external=`: with `--no-ext-diff` never consulted; should a diff escape the flag, git
///   fails ("cannot run") instead of running a program.
/// - `protocol.allow=never` except file, http(s) and ssh: no `ext::` transport (runs a command)
///   and no `git://` (whose `core.gitProxy` runs one).
/// - signing off (`commit.gpgSign`, `tag.gpgSign`, `push.gpgSign`, `log.showSignature`,
///   `merge.verifySignatures`): `gpg.program` is a program.
/// - no submodule recursion, no automatic gc or maintenance.
/// - `safe.directory=*`: git's ownership check exists to stop a foreign repository's config from
///   running code; here no repository config runs code, and the system config that used to say
///   `*` (the Action image) is no longer read.
pub const FIXED: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.sshCommand=ssh",
    "core.askPass=",
    "core.attributesFile=/dev/null",
    "core.alternateRefsCommand=",
    "credential.helper=",
    "diff.external=",
    "protocol.allow=never",
    "protocol.file.allow=always",
    "protocol.http.allow=always",
    "protocol.https.allow=always",
    "protocol.ssh.allow=always",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "push.gpgSign=false",
    "log.showSignature=false",
    "merge.verifySignatures=false",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "push.recurseSubmodules=no",
    "gc.auto=0",
    "maintenance.auto=false",
    "safe.directory=*",
];

/// The variables of the orchestrator's own environment that reach git.
const PASSED: &[&str] = &["PATH", "TZ"];

/// A `git` command in `dir` with the scrubbed environment and the fixed overrides, but not yet
/// the overrides for the repository's own keys (see [`repository_overrides`]).
pub fn base(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir).env_clear();
    for k in PASSED {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    cmd.env("HOME", "/dev/null")
        .env("XDG_CONFIG_HOME", "/dev/null")
        .env("LC_ALL", "C")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_EDITOR", "true")
        .env("GIT_SEQUENCE_EDITOR", "true")
        .env("GIT_PAGER", "cat");
    for o in FIXED {
        cmd.arg("-c").arg(o);
    }
    cmd
}

/// What the repository's config asks for that must not happen.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `key=value` pairs to pass with `-c`.
    pub set: Vec<String>,
    /// Keys that cannot be neutralised by an override; the call is refused.
    pub refused: Vec<String>,
}

/// Reads the names of the keys git sees in `dir` (outside the command line) and returns the
/// overrides that neutralise every one that names a program. Fails closed: a config git cannot
/// list is not guessed at, the call is not made (`Err` holds git's message).
pub fn repository_overrides(dir: &Path) -> Result<Overrides, String> {
    let mut cmd = base(dir);
    cmd.args([
        "config",
        "--list",
        "--name-only",
        "--show-scope",
        "--includes",
    ]);
    let listing =
        stdout(cmd).map_err(|e| format!("cannot read the repository's git config: {e}"))?;
    Ok(overrides_for(&listing))
}

/// Runs `cmd` and returns its stdout (lossy UTF-8, trailing whitespace trimmed); `Err` holds
/// git's trimmed stderr, or why it could not run.
pub(super) fn stdout(mut cmd: Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("could not run git: {e} (is git installed?)"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

/// The overrides for a `--name-only --show-scope` listing (`scope<TAB>key` lines).
pub fn overrides_for(listing: &str) -> Overrides {
    let mut out = Overrides::default();
    for line in listing.lines() {
        let Some((scope, key)) = line.split_once('\t') else {
            continue;
        };
        if scope == "command" {
            continue;
        }
        let lower = key.to_ascii_lowercase();
        if lower == "core.worktree" {
            out.refused.push(key.to_string());
            continue;
        }
        let Some((section, rest)) = key.split_once('.') else {
            continue;
        };
        let Some((sub, name)) = rest.rsplit_once('.') else {
            continue;
        };
        let section = section.to_ascii_lowercase();
        let name = name.to_ascii_lowercase();
        let set = |out: &mut Overrides, name: &str, value: &str| {
            let pair = format!("{section}.{sub}.{name}={value}");
            if !out.set.contains(&pair) {
                out.set.push(pair);
            }
        };
        match (section.as_str(), name.as_str()) {
            ("filter", _) => {
                for n in ["clean", "smudge", "process"] {
                    set(&mut out, n, "");
                }
                set(&mut out, "required", "false");
            }
            ("diff", "command" | "textconv") | ("merge", "driver") => set(&mut out, &name, ""),
            ("trailer", "command" | "cmd") => set(&mut out, &name, ""),
            ("remote", "uploadpack") => set(&mut out, &name, "git-upload-pack"),
            ("remote", "receivepack") => set(&mut out, &name, "git-receive-pack"),
            _ => {}
        }
    }
    out
}

/// Extra arguments after the subcommand: diffs never run an external program or a textconv.
pub fn subcommand_flags(subcommand: &str) -> &'static [&'static str] {
    match subcommand {
        "diff" | "log" | "show" => &["--no-ext-diff", "--no-textconv"],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_program_naming_key_gets_an_override_with_its_own_name() {
        let listing = "local\tfilter.Evil.clean\nlocal\tdiff.x.textconv\nlocal\tmerge.m.driver\n\
                       local\tremote.origin.uploadpack\nlocal\tuser.name\ncommand\tfilter.ours.clean\n\
                       local\tcore.worktree\nlocal\ttrailer.t.cmd\n";
        let o = overrides_for(listing);
        assert_eq!(
            o.set,
            [
                "filter.Evil.clean=",
                "filter.Evil.smudge=",
                "filter.Evil.process=",
                "filter.Evil.required=false",
                "diff.x.textconv=",
                "merge.m.driver=",
                "remote.origin.uploadpack=git-upload-pack",
                "trailer.t.cmd=",
            ]
        );
        assert_eq!(o.refused, ["core.worktree"]);
    }

    #[test]
    fn a_config_that_moves_the_work_tree_or_cannot_be_listed_stops_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let git = crate::git::Git::new(dir.path());
        git.run(&["init", "--quiet"]).unwrap();
        let config = dir.path().join(".git/config");
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(&config, format!("{text}[core]\n\tworktree = /\n")).unwrap();
        let e = git.run(&["status"]).unwrap_err().to_string();
        assert!(e.contains("core.worktree"), "{e}");
        std::fs::write(&config, "[core\n\tbroken").unwrap();
        let e = git.run(&["status"]).unwrap_err().to_string();
        assert!(e.contains("cannot read the repository's git config"), "{e}");
    }

    #[test]
    fn subsections_with_dots_keep_their_name() {
        let o = overrides_for("local\tfilter.a.b.c.smudge\n");
        assert!(o.set.contains(&"filter.a.b.c.smudge=".to_string()), "{o:?}");
    }
}
