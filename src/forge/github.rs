//! The GitHub forge: the only module (with the checkpoint store) that talks to GitHub.
//!
//! It uses octocrab against the REST base from `GITHUB_API_URL` (github.com, GitHub Enterprise
//! Server, or a local simulation alike). Payloads are read as JSON values and only the fields the
//! pipeline needs are taken, so that a field GitHub adds or drops cannot break a run. The token
//! never leaves the client: it is not logged, stored in state, or put in a URL.

use std::path::Path;

use crate::error::{Error, Result};
use crate::state::IssueRef;

/// Where GitHub is and who we are there.
#[derive(Debug, Clone)]
pub struct GithubTarget {
    /// REST base URL.
    pub api_url: String,
    /// Repository owner.
    pub owner: String,
    /// Repository name.
    pub repo: String,
}

impl GithubTarget {
    /// From `GITHUB_API_URL` (default `https://api.github.com`) and `GITHUB_REPOSITORY`, or else
    /// the checkout's `origin` remote.
    pub fn from_env(checkout: &Path) -> Result<GithubTarget> {
        let api_url =
            std::env::var("GITHUB_API_URL").unwrap_or_else(|_| "https://api.github.com".into());
        let full = match std::env::var("GITHUB_REPOSITORY") {
            Ok(r) if r.contains('/') => r,
            _ => {
                let url = crate::git::Git::new(checkout)
                    .run(&["remote", "get-url", "origin"])
                    .map_err(|_| {
                        Error::Usage(
                            "cannot tell which GitHub repository to read: set GITHUB_REPOSITORY=owner/name or add an `origin` remote".into(),
                        )
                    })?;
                repo_from_remote(&url).ok_or_else(|| {
                    Error::Usage(format!(
                        "the origin remote does not name a GitHub repository; set GITHUB_REPOSITORY=owner/name (origin: {})",
                        strip_credentials(&url)
                    ))
                })?
            }
        };
        let (owner, repo) = full
            .split_once('/')
            .map(|(o, r)| (o.to_string(), r.to_string()))
            .unwrap_or_default();
        Ok(GithubTarget {
            api_url,
            owner,
            repo,
        })
    }
}

/// `owner/name` from an https or ssh remote URL.
pub fn repo_from_remote(url: &str) -> Option<String> {
    let t = url.trim().trim_end_matches('/').trim_end_matches(".git");
    let path = if let Some(rest) = t.strip_prefix("git@") {
        rest.split_once(':')?.1.to_string()
    } else {
        let after_scheme = t.split_once("://")?.1;
        after_scheme.split_once('/')?.1.to_string()
    };
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    (parts.len() >= 2).then(|| format!("{}/{}", parts[parts.len() - 2], parts[parts.len() - 1]))
}

/// A URL with any `user:password@` removed, for messages.
pub fn strip_credentials(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(s), Some(a)) if a > s => format!("{}{}", &url[..s + 3], &url[a + 1..]),
        _ => url.to_string(),
    }
}

/// The token from `GITHUB_TOKEN`, `GH_TOKEN` or the Action input.
pub fn token_from_env() -> Option<String> {
    ["INPUT_GITHUB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.trim().is_empty())
}

/// A GitHub client bound to one repository.
pub struct GithubForge {
    client: octocrab::Octocrab,
    runtime: tokio::runtime::Runtime,
    target: GithubTarget,
}

impl std::fmt::Debug for GithubForge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the client: it holds the token.
        f.debug_struct("GithubForge")
            .field("target", &self.target)
            .finish()
    }
}

impl GithubForge {
    /// A client for `target` authenticated with `token`.
    pub fn new(target: GithubTarget, token: &str) -> Result<GithubForge> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Usage(format!("cannot start the async runtime: {e}")))?;
        let client = {
            let _guard = runtime.enter();
            octocrab::Octocrab::builder()
                .base_uri(target.api_url.as_str())
                .map_err(|e| {
                    Error::Usage(format!(
                        "GITHUB_API_URL `{}` is not a URL: {e}",
                        target.api_url
                    ))
                })?
                .personal_token(token.to_string())
                .build()
                .map_err(|e| Error::Usage(format!("cannot build the GitHub client: {e}")))?
        };
        Ok(GithubForge {
            client,
            runtime,
            target,
        })
    }

    /// Reads issue `number`: title, body, labels, URL.
    pub fn read_issue(&self, number: u64) -> Result<IssueRef> {
        let route = format!(
            "/repos/{}/{}/issues/{number}",
            self.target.owner, self.target.repo
        );
        let value: serde_json::Value = self
            .runtime
            .block_on(self.client.get(route.as_str(), None::<&()>))
            .map_err(|e| self.api_error(&format!("reading issue #{number}"), e))?;
        let title = value["title"].as_str().unwrap_or_default().to_string();
        if title.is_empty() {
            return Err(Error::Usage(format!(
                "GitHub answered for issue #{number} of {}/{} without a title",
                self.target.owner, self.target.repo
            )));
        }
        Ok(IssueRef {
            number: Some(value["number"].as_u64().unwrap_or(number)),
            title,
            url: value["html_url"].as_str().map(str::to_string),
            body: value["body"].as_str().unwrap_or_default().to_string(),
            labels: value["labels"]
                .as_array()
                .map(|ls| {
                    ls.iter()
                        .filter_map(|l| l["name"].as_str().or(l.as_str()).map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    fn api_error(&self, what: &str, e: octocrab::Error) -> Error {
        let detail = match &e {
            octocrab::Error::GitHub { source, .. } => {
                let status = source.status_code.as_u16();
                let hint = match status {
                    401 => " — the token was refused; check GITHUB_TOKEN",
                    403 => " — the token lacks permission (issues: read) or hit a rate limit",
                    404 => " — not found; check the number and GITHUB_REPOSITORY",
                    _ => "",
                };
                format!("HTTP {status}: {}{hint}", source.message)
            }
            other => other.to_string(),
        };
        Error::Usage(format!(
            "GitHub {}/{} ({}): {what} failed: {detail}",
            self.target.owner, self.target.repo, self.target.api_url
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_and_credentials() {
        assert_eq!(
            repo_from_remote("https://github.com/o/r.git").as_deref(),
            Some("o/r")
        );
        assert_eq!(
            repo_from_remote("git@github.com:o/r.git").as_deref(),
            Some("o/r")
        );
        assert_eq!(
            repo_from_remote("https://x:tok@ghe.example/o/r").as_deref(),
            Some("o/r")
        );
        assert_eq!(repo_from_remote("/local/path"), None);
        assert_eq!(
            strip_credentials("https://x:secret@host/o/r"),
            "https://host/o/r"
        );
    }
}
