//! The GitHub forge: the only module (with the checkpoint store) that talks to GitHub.
//!
//! REST goes to the base from `GITHUB_API_URL` (github.com, GitHub Enterprise Server, or a
//! local simulation alike) and GraphQL — needed because REST cannot turn a draft pull request
//! ready — to `GITHUB_GRAPHQL_URL`, both through the crate's one retrying client
//! ([`crate::net::Http`]). Every answer is read into a typed struct (`models`) through
//! `serde_path_to_error`: only the fields the pipeline needs are declared, so a field GitHub adds
//! cannot break a run, and one it drops is an error naming the field, never an empty string. A
//! failed call is a forge error carrying GitHub's status, code and message as data (`answer`).
//! The token never leaves the client: it is not logged, stored in state, or put in a URL.
//!
//! Every write here is idempotent by lookup, because a failed job is re-run with the same inputs:
//! the status comment is found by its hidden marker and edited, the pull request is found by its
//! head branch and updated, and nothing is created twice.

pub mod answer;
mod comments;
pub mod event;
pub mod models;
mod pulls;
pub mod reviews;
mod runs;
pub mod settings;

use std::path::Path;

use reqwest::Method;
use serde::de::DeserializeOwned;

use crate::error::forge::{ForgeCause, ForgeFailure};
use crate::error::{Error, Result};
use crate::net::{Http, NetError, Reply, RetryPolicy};
use crate::secrets::Secret;
use crate::types::ids::{CommentId, IssueNumber, PrNumber, RunId};

use answer::{BUSY_HELP, ODD_ANSWER_HELP, RETRY_HELP, SETUP_HELP, failure_of, odd_answer};

/// Where GitHub is and who we are there.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct GithubTarget {
    pub api_url: String,
    pub graphql_url: String,
    pub owner: String,
    pub repo: String,
}

/// The GraphQL endpoint that goes with a REST base: `https://api.github.com/graphql` on
/// github.com, `https://HOST/api/graphql` on GitHub Enterprise Server (`/api/v3` is REST).
pub fn graphql_url_for(api_url: &str) -> String {
    let base = api_url.trim_end_matches('/');
    match base.strip_suffix("/api/v3") {
        Some(host) => format!("{host}/api/graphql"),
        None => format!("{base}/graphql"),
    }
}

impl GithubTarget {
    /// From `GITHUB_API_URL` (default `https://api.github.com`), `GITHUB_GRAPHQL_URL` (default
    /// derived from the REST base) and `GITHUB_REPOSITORY`, or else the checkout's `origin`
    /// remote.
    pub fn from_env(checkout: &Path) -> Result<GithubTarget> {
        let set = |key| std::env::var(key).ok().filter(|v| !v.trim().is_empty());
        let api_url = set("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into());
        let graphql_url = set("GITHUB_GRAPHQL_URL").unwrap_or_else(|| graphql_url_for(&api_url));
        let full = match std::env::var("GITHUB_REPOSITORY") {
            Ok(r) if r.contains('/') => r,
            _ => {
                let url = crate::git::Git::new(checkout)
                    .run(&["remote", "get-url", "origin"])
                    .map_err(|_| {
                        Error::usage(
                            "cannot tell which GitHub repository to read: set GITHUB_REPOSITORY=owner/name or add an `origin` remote",
                        )
                    })?;
                repo_from_remote(&url).ok_or_else(|| {
                    Error::usage(format!(
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
            graphql_url,
            owner,
            repo,
        })
    }

    /// `owner/name`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.repo)
    }
}

/// `owner/name` from a remote URL: `scheme://host/…/owner/name(.git)` or the scp-like
/// `[user@]host:…/owner/name(.git)`; `None` for a local path.
pub fn repo_from_remote(url: &str) -> Option<String> {
    let t = url.trim().trim_end_matches('/').trim_end_matches(".git");
    let path = match t.split_once("://") {
        Some((_, rest)) => rest.split_once('/')?.1,
        None => t.split_once(':')?.1,
    };
    let mut parts = path.rsplit('/').filter(|p| !p.is_empty());
    let name = parts.next()?;
    let owner = parts.next()?;
    Some(format!("{owner}/{name}"))
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

/// An issue comment (REST "issue-comment"), as far as the pipeline cares.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[allow(missing_docs)]
pub struct Comment {
    pub id: CommentId,
    /// Markdown body (optional in GitHub's schema).
    #[serde(default, deserialize_with = "models::or_default")]
    pub body: String,
    /// Author's login (`ghost` for a deleted account, as GitHub shows it).
    #[serde(
        rename = "user",
        default = "models::ghost",
        deserialize_with = "models::login"
    )]
    pub author: String,
    pub html_url: String,
}

/// A pull request, as far as the pipeline cares.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct PullRequest {
    pub number: PrNumber,
    /// GraphQL node id (for `markPullRequestReadyForReview`).
    pub node_id: String,
    pub html_url: String,
    pub draft: bool,
    pub body: String,
}

impl From<models::Pull> for PullRequest {
    fn from(p: models::Pull) -> PullRequest {
        PullRequest {
            number: p.number,
            node_id: p.node_id,
            html_url: p.html_url,
            draft: p.draft.unwrap_or(false),
            body: p.body.unwrap_or_default(),
        }
    }
}

/// The `permission` GitHub reports for a user on a repository: the legacy level, into which
/// GitHub folds `maintain` (as write) and `triage` (as read).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, strum::IntoStaticStr, strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum AccessLevel {
    /// Full control.
    Admin,
    /// Push (and maintain).
    Write,
    /// Read (and triage).
    Read,
    /// No access, or a user GitHub does not know.
    None,
}

impl AccessLevel {
    /// The word GitHub uses.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl From<&str> for AccessLevel {
    /// GitHub's word; anything else is no access.
    fn from(word: &str) -> AccessLevel {
        let levels = <AccessLevel as strum::VariantArray>::VARIANTS
            .iter()
            .copied();
        levels
            .into_iter()
            .find(|l| l.as_str() == word)
            .unwrap_or(AccessLevel::None)
    }
}

/// The precise role (`role_name`) of a user on a repository.
#[derive(Debug, Clone, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
#[allow(missing_docs)]
pub enum Role {
    Admin,
    Maintain,
    Write,
    Triage,
    Read,
    /// An organisation's custom repository role, by its name.
    Custom(String),
    /// GitHub did not say (older GitHub Enterprise Server, or no access).
    Unstated,
}

impl Role {
    /// The name GitHub uses (empty when unstated).
    pub fn as_str(&self) -> &str {
        match self {
            Role::Custom(name) => name,
            Role::Unstated => "",
            known => known.into(),
        }
    }
}

impl From<&str> for Role {
    fn from(name: &str) -> Role {
        let known = [
            Role::Admin,
            Role::Maintain,
            Role::Write,
            Role::Triage,
            Role::Read,
        ];
        match known.into_iter().find(|r| r.as_str() == name) {
            Some(role) => role,
            None if name.is_empty() => Role::Unstated,
            None => Role::Custom(name.to_string()),
        }
    }
}

/// A user's access to the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Permission {
    /// The legacy level (`admin`, `write`, `read`, `none`).
    pub permission: AccessLevel,
    pub role_name: Role,
}

impl Permission {
    /// No access: what a user GitHub does not know has.
    pub const NONE: Permission = Permission {
        permission: AccessLevel::None,
        role_name: Role::Unstated,
    };

    /// Write, maintain or admin: allowed to start runs and answer them (`docs/action-mode.md`).
    /// A custom role counts by the level GitHub folds it into.
    pub fn can_write(&self) -> bool {
        matches!(self.role_name, Role::Admin | Role::Maintain | Role::Write)
            || matches!(self.permission, AccessLevel::Admin | AccessLevel::Write)
    }

    /// The most precise name of the access level.
    pub fn level(&self) -> &str {
        match &self.role_name {
            Role::Unstated => self.permission.as_str(),
            role => role.as_str(),
        }
    }
}

impl From<models::CollaboratorPermission> for Permission {
    fn from(p: models::CollaboratorPermission) -> Permission {
        Permission {
            permission: p.permission,
            role_name: Role::from(p.role_name.as_deref().unwrap_or_default()),
        }
    }
}

/// The run a dispatch started, when GitHub says (`return_run_details`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct DispatchedRun {
    /// `workflow_run_id`.
    pub run_id: Option<RunId>,
    pub html_url: Option<String>,
}

/// A workflow run, as far as the pipeline cares.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct WorkflowRun {
    /// Its workflow file (`.github/workflows/x.yml`, maybe with `@ref`).
    pub path: Option<String>,
    /// `queued`, `in_progress`, `completed`, … (of the newest attempt).
    pub status: String,
    /// `success`, `failure`, `cancelled`, `timed_out`, … once completed.
    pub conclusion: Option<String>,
    pub html_url: String,
}

/// A GitHub client bound to one repository.
pub struct GithubForge {
    target: GithubTarget,
    token: Secret,
    http: Http,
    /// The same client for writes that are not idempotent (`POST`): a lost answer is not
    /// re-sent, it is looked up ([`GithubForge::write_checked`]).
    writes: Http,
    /// The login the token acts as, once learnt ([`GithubForge::learn_identity`]): comments
    /// are then found only among the ones it wrote.
    me: Option<String>,
    /// Calls made to GitHub (REST and GraphQL, each counted once whatever its retries): the
    /// figure a job reports in its summary ([`GithubForge::calls`]).
    calls: std::sync::atomic::AtomicU64,
    /// The comments of each issue as this client last listed them, kept up to date by its own
    /// writes: a job reads the status comment and the commands posted since the last job from
    /// one listing instead of one each.
    comments: std::sync::Mutex<std::collections::HashMap<IssueNumber, Vec<Comment>>>,
}

impl std::fmt::Debug for GithubForge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of debug output.
        f.debug_struct("GithubForge")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// The REST API version the requests are written against.
const API_VERSION: &str = "2022-11-28";

impl GithubForge {
    /// A client for `target` authenticated with `token`.
    pub fn new(target: GithubTarget, token: &str) -> Result<GithubForge> {
        let token = Secret::new(token).ok_or_else(|| {
            Error::usage("the GitHub token is empty; pass github_token (defaults to ${{ github.token }}) or set GITHUB_TOKEN")
        })?;
        if let Err(e) = reqwest::Url::parse(&target.api_url) {
            return Err(Error::usage(format!(
                "GITHUB_API_URL `{}` is not a URL: {e}",
                target.api_url
            )));
        }
        let http = Http::new().map_err(|e| {
            Error::forge(&target.api_url, e.to_string())
                .with_help(SETUP_HELP)
                .with_failure(failure_of(&e))
        })?;
        let writes = http.clone().with_policy(RetryPolicy::writes());
        Ok(GithubForge {
            target,
            token,
            http,
            writes,
            me: None,
            calls: std::sync::atomic::AtomicU64::new(0),
            comments: std::sync::Mutex::default(),
        })
    }

    /// How many calls this client made to GitHub so far (REST and GraphQL; a retried call once).
    pub fn calls(&self) -> u64 {
        self.calls.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The repository this client works on.
    pub fn target(&self) -> &GithubTarget {
        &self.target
    }

    /// The address of `route` on this repository (`route` is relative to
    /// `/repos/{owner}/{repo}`).
    fn repo_url(&self, route: &str) -> String {
        format!(
            "{}/repos/{}/{}{route}",
            self.target.api_url.trim_end_matches('/'),
            self.target.owner,
            self.target.repo
        )
    }

    /// One REST call to `url` through the crate's retrying client: the reply, or `None` for a
    /// 404 when `missing_ok` (lookups that may find nothing). Statuses of 400 and up are errors
    /// naming `what`, with a hint for the usual causes and GitHub's answer as data.
    fn send(
        &self,
        verb: Method,
        url: &str,
        body: Option<&serde_json::Value>,
        what: &str,
        missing_ok: bool,
    ) -> Result<Option<Reply>> {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // A POST creates something: sent once, and looked up after an ambiguous failure.
        let http = if verb == Method::POST {
            &self.writes
        } else {
            &self.http
        };
        let sent = http.send(what, url, |c| {
            let request = c
                .request(verb.clone(), url)
                .bearer_auth(self.token.expose())
                .header("Accept", "application/vnd.github+json")
                .header("X-GitHub-Api-Version", API_VERSION);
            match body {
                Some(b) => request.json(b),
                None => request,
            }
        });
        match sent {
            Ok(reply) => Ok(Some(reply)),
            Err(NetError::Status { status: 404, .. }) if missing_ok => Ok(None),
            Err(e @ NetError::Status { .. }) => Err(self.status_error(what, &e)),
            Err(e) => Err(self.transport_error(&e)),
        }
    }

    /// A GET whose answer is read as `T`; `None` for a 404 when `missing_ok`.
    fn get_as<T: DeserializeOwned>(
        &self,
        route: &str,
        what: &str,
        missing_ok: bool,
    ) -> Result<Option<T>> {
        match self.send(Method::GET, &self.repo_url(route), None, what, missing_ok)? {
            Some(reply) => self.decode(what, &reply).map(Some),
            None => Ok(None),
        }
    }

    /// A GET that must find something, read as `T`.
    fn get<T: DeserializeOwned>(&self, route: &str, what: &str) -> Result<T> {
        self.get_as(route, what, false)?
            .ok_or_else(|| self.odd_answer(format!("{what}: no answer")))
    }

    /// A POST or PATCH of `body`; the reply of a target that exists, `None` for a 404 when
    /// `missing_ok`.
    fn write(
        &self,
        verb: Method,
        route: &str,
        body: &serde_json::Value,
        what: &str,
        missing_ok: bool,
    ) -> Result<Option<Reply>> {
        self.send(verb, &self.repo_url(route), Some(body), what, missing_ok)
    }

    /// A POST or PATCH of `body` that must find its target, its answer read as `T`.
    fn write_as<T: DeserializeOwned>(
        &self,
        verb: Method,
        route: &str,
        body: &serde_json::Value,
        what: &str,
    ) -> Result<T> {
        let reply = self
            .write(verb, route, body, what, false)?
            .ok_or_else(|| self.odd_answer(format!("{what}: no answer")))?;
        self.decode(what, &reply)
    }

    /// [`answer::write_checked`] of a GitHub write described by `what`.
    fn write_checked<T>(
        &self,
        what: &str,
        send: impl Fn() -> Result<T>,
        lookup: impl Fn() -> Result<Option<T>>,
    ) -> Result<T> {
        let adopted = |error: &Error, _: &T| {
            let status = error.forge_failure().and_then(|f| f.status);
            format!(
                "{what}: GitHub's answer was lost ({}); found what the write made and kept it",
                status.map_or_else(|| "no answer".to_string(), |s| format!("HTTP {s}"))
            )
        };
        answer::write_checked(send, lookup, |e, _| answer::effect_unknown(e), adopted)
    }

    /// A `POST` of `body` to `route` that makes something, answered as `R` and kept as `T`:
    /// [`GithubForge::write_checked`] with `lookup`.
    fn post_checked<R: DeserializeOwned + Into<T>, T>(
        &self,
        what: &str,
        route: &str,
        body: &serde_json::Value,
        lookup: impl Fn() -> Result<Option<T>>,
    ) -> Result<T> {
        self.write_checked(
            what,
            || Ok(self.write_as::<R>(Method::POST, route, body, what)?.into()),
            lookup,
        )
    }

    /// Items of up to `pages` pages of 100 at `route`, stopping at the first short page: GitHub
    /// REST pagination without reading `Link` headers.
    fn pages<T: DeserializeOwned>(&self, route: &str, pages: u32, what: &str) -> Result<Vec<T>> {
        let sep = if route.contains('?') { '&' } else { '?' };
        let mut out = Vec::new();
        for page in 1..=pages {
            let items: Vec<T> = self.get(&format!("{route}{sep}per_page=100&page={page}"), what)?;
            let short = items.len() < 100;
            out.extend(items);
            if short {
                break;
            }
        }
        Ok(out)
    }

    /// The reply's body read as `T`, or an error naming the field GitHub's answer lacks.
    fn decode<T: DeserializeOwned>(&self, what: &str, reply: &Reply) -> Result<T> {
        models::decode(&reply.body).map_err(|e| {
            let message = format!(
                "GitHub {} answered {what} (HTTP {}) with JSON that does not match its documented shape {e}",
                self.target.full_name(),
                reply.status
            );
            odd_answer(&self.target.api_url, Some(reply.status), message)
        })
    }

    fn transport_error(&self, e: &NetError) -> Error {
        Error::forge(
            &self.target.api_url,
            format!(
                "GitHub {} ({}): {e}",
                self.target.full_name(),
                self.target.api_url
            ),
        )
        .with_help(RETRY_HELP)
        .with_failure(failure_of(e))
    }

    /// An error status of a REST call, with GitHub's message and a hint fitting its class.
    fn status_error(&self, what: &str, e: &NetError) -> Error {
        let failure = failure_of(e);
        let NetError::Status { status, body, .. } = e else {
            return self.transport_error(e);
        };
        let message = failure
            .message
            .clone()
            .unwrap_or_else(|| body.chars().take(200).collect());
        let error = Error::forge(
            &self.target.api_url,
            format!(
                "GitHub {} ({}): {what} failed: HTTP {status}: {message}{}",
                self.target.full_name(),
                self.target.api_url,
                answer::hint(failure.cause)
            ),
        );
        let error = match answer::help(failure.cause) {
            Some(help) => error.with_help(help),
            None => error,
        };
        error.with_failure(failure)
    }

    /// GitHub answered 2xx but without a field its API documents.
    fn odd_answer(&self, message: impl Into<String>) -> Error {
        odd_answer(&self.target.api_url, None, message)
    }

    /// One GraphQL call: `data` read as `T`. GraphQL answers 200 with `errors` when a query
    /// fails; the first error's `type` (`FORBIDDEN`, `NOT_FOUND`, `RATE_LIMITED`) is the code.
    fn graphql<T: DeserializeOwned>(
        &self,
        what: &str,
        query: &str,
        variables: serde_json::Value,
    ) -> Result<T> {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let url = self.target.graphql_url.clone();
        let body = serde_json::json!({ "query": query, "variables": variables });
        let reply = self
            .http
            .send(what, &url, |c| {
                c.post(&url)
                    .bearer_auth(self.token.expose())
                    .header("Content-Type", "application/json")
                    .json(&body)
            })
            .map_err(|e| {
                let help = match failure_of(&e).cause {
                    c if c.is_transient() => RETRY_HELP,
                    _ => ODD_ANSWER_HELP,
                };
                Error::forge(&url, format!("GitHub GraphQL ({url}): {e}"))
                    .with_help(help)
                    .with_failure(failure_of(&e))
            })?;
        let answer: models::GraphqlReply<T> = models::decode(&reply.body).map_err(|e| {
            let message = format!("GitHub GraphQL ({url}) answered {what} with JSON that does not match its documented shape {e}");
            odd_answer(&url, Some(reply.status), message)
        })?;
        if !answer.errors.is_empty() {
            return Err(graphql_error(&url, what, reply.status, &answer.errors));
        }
        answer.data.ok_or_else(|| {
            let message =
                format!("GitHub GraphQL ({url}) answered {what} with neither data nor errors");
            odd_answer(&url, None, message)
        })
    }
}

/// The error of a GraphQL answer with `errors`, classified by the first error's `type`.
fn graphql_error(url: &str, what: &str, status: u16, errors: &[models::GraphqlError]) -> Error {
    let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    let codes: Vec<String> = errors.iter().filter_map(|e| e.kind.clone()).collect();
    let cause = match codes.first().map(String::as_str) {
        Some("RATE_LIMITED") => ForgeCause::SecondaryRateLimit,
        Some("NOT_FOUND") => ForgeCause::NotFound,
        Some("FORBIDDEN") => ForgeCause::Forbidden,
        _ => ForgeCause::Other,
    };
    let error = Error::forge(
        url,
        format!(
            "GitHub GraphQL ({url}): {what} failed: {} — the token needs pull-requests: write",
            messages.join("; ")
        ),
    );
    let error = if cause.is_transient() {
        error.with_help(BUSY_HELP)
    } else {
        error
    };
    error.with_failure(ForgeFailure {
        status: Some(status),
        cause,
        message: messages.first().map(|m| m.to_string()),
        codes,
        retry_after: None,
    })
}

/// Percent-encodes one path segment or query value (a label name may hold spaces, `:` or `/`).
fn segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// [`segment`] of each part of a path or query value, its `/` kept.
fn encode_query(s: &str) -> String {
    s.split('/').map(segment).collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests;
