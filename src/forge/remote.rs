//! Fetching and pushing the work branch through the checkout's own `origin`, whatever URL it
//! has (github.com, GitHub Enterprise Server, a bare repository in a temp dir).
//!
//! For an http(s) origin the token is handed to git by a credential helper that reads it from
//! this process's memory (passed to the git child in its environment) and answers only for the
//! origin's own host. It is never written to `.git/config`, never put in a URL, never printed:
//! the workflow checks out with `persist-credentials: false`, so agents — which run arbitrary
//! code in the same checkout — find no token on disk. Configured helpers are reset for these
//! calls so that no `credential.helper=store` can save it either. Every call is a hardened
//! [`Git::command`] (no hooks, no program named by the checkout's config, a scrubbed
//! environment), and a checkout whose config could route the token elsewhere (URL rewrites, a
//! proxy, TLS checks off, a push URL) is refused.

use std::path::Path;
use std::process::Command;

use crate::error::{Error, Result};
use crate::git::Git;
use crate::secrets::Secret;

/// Variables of the job's own environment a remote call may need (a runner's proxy, an SSH
/// agent, a custom CA bundle for GitHub Enterprise Server); set by the job, not by agents.
const NETWORK_ENV: &[&str] = &[
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSH_AUTH_SOCK",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Local config keys (lower-cased, as `git config --get-regexp` prints them) that could send the
/// token or the pushed code somewhere other than origin.
const REFUSED: &str = r"^(url\..*\.(push)?insteadof|http\..*(proxy|sslverify|sslcainfo|sslcapath|curloptresolve|pinnedpubkey|cookiefile|savecookies)|remote\.origin\.(pushurl|proxy))$";

/// The helper git runs for `get`: it reads git's request, answers with the token only when the
/// host is the origin's, and ignores `store`/`erase`.
const HELPER: &str = r#"!f() { test "$1" = get || exit 0; h=; while IFS= read -r l && test -n "$l"; do case "$l" in host=*) h="${l#host=}";; esac; done; test -n "$SO_GIT_HOST" && test "$h" = "$SO_GIT_HOST" || exit 0; echo username=x-access-token; echo "password=$SO_GIT_TOKEN"; }; f"#;

/// The checkout's `origin`, with the credentials to reach it.
pub struct Remote {
    git: Git,
    token: Option<Secret>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("dir", &self.git.dir())
            .finish_non_exhaustive()
    }
}

/// `host[:port]` of an http(s) URL, as git names it to credential helpers; `None` for other
/// remotes (ssh, paths), which get no token.
pub fn credential_host(url: &str) -> Option<String> {
    let u = reqwest::Url::parse(url).ok()?;
    if u.scheme() != "https" && u.scheme() != "http" {
        return None;
    }
    let host = u.host_str()?;
    Some(
        u.port()
            .map_or_else(|| host.to_string(), |p| format!("{host}:{p}")),
    )
}

impl Remote {
    /// The origin of the checkout at `repo`; `token` is used only for an http(s) origin.
    pub fn new(repo: &Path, token: Option<Secret>) -> Remote {
        Remote {
            git: Git::new(repo),
            token,
        }
    }

    /// `remote.origin.url` as configured (no rewriting).
    pub fn origin_url(&self) -> Result<String> {
        // `git config --get` fails when the key is unset: that is the "no origin" answer.
        let url = self
            .git
            .run(&["config", "--get", "remote.origin.url"])
            .unwrap_or_default()
            .trim()
            .to_string();
        if url.is_empty() {
            return Err(Error::repo(
                self.git.dir(),
                format!(
                    "{} has no `origin` remote; the work branch is pushed to the checkout's origin (actions/checkout sets it)",
                    self.git.dir().display()
                ),
            )
            .with_help("add it with `git remote add origin URL`, or check out the repository with actions/checkout"));
        }
        Ok(url)
    }

    /// The git command for a remote operation: a hardened [`Git::command`], credentials for an
    /// http(s) origin, the job's network settings.
    pub fn command(&self, args: &[&str]) -> Result<Command> {
        let url = self.origin_url()?;
        self.refuse_redirects()?;
        let mut cmd = self.git.command()?;
        for k in NETWORK_ENV {
            if let Some(v) = std::env::var_os(k) {
                cmd.env(k, v);
            }
        }
        cmd.args(["-c", "credential.useHttpPath=false"]);
        if let (Some(host), Some(token)) = (credential_host(&url), &self.token) {
            cmd.args(["-c", &format!("credential.helper={HELPER}")])
                .env("SO_GIT_HOST", host)
                .env("SO_GIT_TOKEN", token.expose());
        }
        cmd.args(args);
        Ok(cmd)
    }

    /// A checkout whose own config rewrites URLs (`url.*.insteadOf`), sets a proxy, turns TLS
    /// checks off, pins other certificates or resolves hosts elsewhere (`http.*`), or pushes to
    /// another URL (`remote.origin.pushurl`) could send the token or the code to another host
    /// than origin; such a config is refused.
    fn refuse_redirects(&self) -> Result<()> {
        // `--get-regexp` fails when nothing matches: nothing to refuse.
        let found = self
            .git
            .run(&["config", "--local", "--includes", "--get-regexp", REFUSED])
            .unwrap_or_default();
        if let Some(line) = found.lines().find(|l| !l.trim().is_empty()) {
            let key = line.split_whitespace().next().unwrap_or(line);
            return Err(Error::repo(
                self.git.dir(),
                format!(
                    "{}/.git/config sets `{key}`, which could send the token or the work branch to another host than origin (URL rewrites `url.*.insteadOf`, `http.*` proxies or TLS settings, `remote.origin.pushurl` are refused); refusing to push or fetch (an agent may have added it)",
                    self.git.dir().display()
                ),
            )
            .with_help(format!("remove it with `git config --unset-all {key}` and run again")));
        }
        Ok(())
    }

    fn run(&self, args: &[&str]) -> Result<String> {
        let hide: Vec<&str> = self.token.iter().map(Secret::expose).collect();
        self.git.output(self.command(args)?, args, &hide)
    }

    /// The sha of `branch` on origin, if it exists there.
    pub fn remote_head(&self, branch: &str) -> Result<Option<String>> {
        let out = self.run(&["ls-remote", "origin", &format!("refs/heads/{branch}")])?;
        Ok(out
            .lines()
            .find_map(|l| l.split_whitespace().next().map(str::to_string)))
    }

    /// Fetches `branch` into `refs/remotes/origin/<branch>`; returns its sha, or `None` when
    /// origin has no such branch.
    pub fn fetch_branch(&self, branch: &str) -> Result<Option<String>> {
        let Some(sha) = self.remote_head(branch)? else {
            return Ok(None);
        };
        self.run(&[
            "fetch",
            "--quiet",
            "--no-tags",
            "origin",
            &format!("+refs/heads/{branch}:refs/remotes/origin/{branch}"),
        ])?;
        Ok(Some(sha))
    }

    /// Makes origin's `branch` point at `sha`, provided it still points where this job saw it
    /// (`seen`, `None` = did not exist): a re-run replaces what a failed attempt pushed after the
    /// checkpoint it resumes from, and never overwrites anybody else's push. A no-op when the
    /// branch is already there.
    pub fn push(&self, branch: &str, sha: &str, seen: Option<&str>) -> Result<()> {
        if seen == Some(sha) {
            return Ok(());
        }
        let lease = format!(
            "--force-with-lease=refs/heads/{branch}:{}",
            seen.unwrap_or_default()
        );
        self.run(&[
            "push",
            "--quiet",
            "--no-verify",
            &lease,
            "origin",
            &format!("{sha}:refs/heads/{branch}"),
        ])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        Git::new(dir)
            .run(args)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    fn fill(remote: &Remote, host: &str) -> (bool, String) {
        use std::io::Write;
        let mut cmd = remote.command(&["credential", "fill"]).unwrap();
        let mut child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("protocol=https\nhost={host}\n\n").as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    /// A new repository whose `origin` is `url`.
    fn checkout_with_origin(url: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "--quiet"]);
        git(dir.path(), &["remote", "add", "origin", url]);
        dir
    }

    #[test]
    fn the_helper_answers_only_for_the_origin_host_and_writes_nothing() {
        let dir = checkout_with_origin("https://ghe.example.com:8443/o/r.git");
        let config_before = std::fs::read_to_string(dir.path().join(".git/config")).unwrap();
        let token = "ghs_helperTestToken0123456789";
        let remote = Remote::new(dir.path(), Secret::new(token));

        let (ok, out) = fill(&remote, "ghe.example.com:8443");
        assert!(ok);
        assert!(out.contains("username=x-access-token"), "{out}");
        assert!(out.contains(&format!("password={token}")), "{out}");

        // Another host (a rewritten URL, a redirect) gets nothing; git cannot prompt, so fails.
        let (ok, out) = fill(&remote, "evil.example.net");
        assert!(!ok);
        assert!(!out.contains(token));

        let config_after = std::fs::read_to_string(dir.path().join(".git/config")).unwrap();
        assert_eq!(config_before, config_after, ".git/config is untouched");
        let mut cmd = remote.command(&["push"]).unwrap();
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(
            args.iter().all(|a| !a.contains(token)),
            "no token on the command line"
        );
        let _ = cmd.env_clear();
    }

    #[test]
    fn url_rewrites_in_the_checkout_are_refused_and_paths_get_no_token() {
        let dir = checkout_with_origin("https://github.com/o/r");
        git(
            dir.path(),
            &[
                "config",
                "url.https://evil.example.net/.insteadOf",
                "https://github.com/",
            ],
        );
        let remote = Remote::new(dir.path(), Secret::new("ghs_tokenValue123"));
        let e = remote.command(&["fetch"]).unwrap_err().to_string();
        assert!(e.contains("insteadOf"), "{e}");

        assert_eq!(credential_host("/tmp/origin.git"), None);
        assert_eq!(credential_host("git@github.com:o/r.git"), None);
        assert_eq!(
            credential_host("https://github.com/o/r").as_deref(),
            Some("github.com")
        );
    }

    #[test]
    fn push_moves_the_branch_only_from_where_it_was_seen() {
        let root = tempfile::tempdir().unwrap();
        let origin = root.path().join("origin.git");
        let work = root.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        git(
            root.path(),
            &["init", "--quiet", "--bare", origin.to_str().unwrap()],
        );
        git(&work, &["init", "--quiet", "--initial-branch=main"]);
        git(
            &work,
            &["remote", "add", "origin", origin.to_str().unwrap()],
        );
        let commit = |msg: &str| {
            git(
                &work,
                &[
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "commit",
                    "--quiet",
                    "--allow-empty",
                    "-m",
                    msg,
                ],
            );
            git(&work, &["rev-parse", "HEAD"]).trim().to_string()
        };
        let a = commit("a");
        let remote = Remote::new(&work, None);
        assert_eq!(remote.fetch_branch("w").unwrap(), None);
        remote.push("w", &a, None).unwrap();
        assert_eq!(
            remote.fetch_branch("w").unwrap().as_deref(),
            Some(a.as_str())
        );
        let b = commit("b");
        remote.push("w", &b, Some(&a)).unwrap();
        remote.push("w", &b, Some(&b)).unwrap(); // no-op
        // A stale view (someone else moved the branch) is refused.
        let c = commit("c");
        let e = remote.push("w", &c, Some(&a)).unwrap_err().to_string();
        assert!(e.contains("stale") || e.contains("rejected"), "{e}");
        assert_eq!(
            remote.remote_head("w").unwrap().as_deref(),
            Some(b.as_str())
        );
    }
}
