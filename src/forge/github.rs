//! The GitHub forge: the only module (with the checkpoint store) that talks to GitHub.
//!
//! REST goes to the base from `GITHUB_API_URL` (github.com, GitHub Enterprise Server, or a
//! local simulation alike) and GraphQL — needed because REST cannot turn a draft pull request
//! ready — to `GITHUB_GRAPHQL_URL`, both through the crate's one retrying client
//! ([`crate::net::Http`]). Payloads are read as JSON values and
//! only the fields the pipeline needs are taken, so that a field GitHub adds or drops cannot
//! break a run. The token never leaves the client: it is not logged, stored in state, or put in
//! a URL.
//!
//! Every write here is idempotent by lookup, because a failed job is re-run with the same inputs:
//! the status comment is found by its hidden marker and edited, the pull request is found by its
//! head branch and updated, and nothing is created twice.

pub mod event;

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::net::{Http, NetError};
use crate::secrets::Secret;
use crate::state::IssueRef;

/// Next step after GitHub could not be reached: nothing is lost, the run resumes.
pub(crate) const RETRY_HELP: &str = "check the network and GITHUB_API_URL, then run again (in Actions: Re-run failed jobs); the run resumes from its saved state";

/// Next step after a rate limit or a server error on GitHub's side.
pub(crate) const BUSY_HELP: &str = "GitHub is rate-limiting or failing; wait a few minutes and run again (in Actions: Re-run failed jobs); the run resumes from its saved state";

/// Next step after an answer that does not match GitHub's documented API.
pub(crate) const ODD_ANSWER_HELP: &str = "run again; if GitHub keeps answering this way, report it with the output of SPEC_ORCHESTRATE_LOG=debug";

/// Next step when the HTTP client itself could not be set up (TLS, runtime).
const SETUP_HELP: &str =
    "this machine could not set up a TLS client; check its certificates and resources";

/// A failed GitHub call made through [`crate::net::Http`], as a forge error naming the host,
/// with `hint` appended to the message (empty when there is none) and the next step that fits
/// the failure when the hint does not already give one.
pub(crate) fn net_error(e: &NetError, hint: &str) -> Error {
    let (endpoint, help) = endpoint_and_help(e);
    let error = Error::forge(endpoint, format!("{e}{hint}"));
    if hint.is_empty() {
        error.with_help(help)
    } else {
        error
    }
}

/// The host a failed call went to, and the next step that fits how it failed.
fn endpoint_and_help(e: &NetError) -> (String, &'static str) {
    match e {
        NetError::Setup(_) => (String::new(), SETUP_HELP),
        NetError::Transport { host, .. }
        | NetError::Body { host, .. }
        | NetError::NoTime { host, .. } => (host.clone(), RETRY_HELP),
        NetError::TooLarge { host, .. } => (host.clone(), ODD_ANSWER_HELP),
        NetError::Status { host, status, .. } => (
            host.clone(),
            if *status == 429 || *status >= 500 {
                BUSY_HELP
            } else {
                ODD_ANSWER_HELP
            },
        ),
        NetError::CutShort { last, .. } => endpoint_and_help(last),
    }
}

/// Where GitHub is and who we are there.
#[derive(Debug, Clone)]
pub struct GithubTarget {
    /// REST base URL.
    pub api_url: String,
    /// GraphQL endpoint.
    pub graphql_url: String,
    /// Repository owner.
    pub owner: String,
    /// Repository name.
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
        let api_url = std::env::var("GITHUB_API_URL")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| "https://api.github.com".into());
        let graphql_url = std::env::var("GITHUB_GRAPHQL_URL")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| graphql_url_for(&api_url));
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

/// An issue comment, as far as the pipeline cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    /// Comment id.
    pub id: u64,
    /// Markdown body.
    pub body: String,
    /// Author's login.
    pub author: String,
    /// Link to the comment.
    pub html_url: String,
}

impl Comment {
    fn from_json(v: &serde_json::Value) -> Option<Comment> {
        Some(Comment {
            id: v["id"].as_u64()?,
            body: text(v, "body"),
            author: text(&v["user"], "login"),
            html_url: text(v, "html_url"),
        })
    }
}

/// A pull request, as far as the pipeline cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    /// PR number.
    pub number: u64,
    /// GraphQL node id (for `markPullRequestReadyForReview`).
    pub node_id: String,
    /// Link for people.
    pub html_url: String,
    /// Draft or ready.
    pub draft: bool,
    /// Body as GitHub holds it.
    pub body: String,
}

impl PullRequest {
    fn from_json(v: &serde_json::Value) -> Option<PullRequest> {
        Some(PullRequest {
            number: v["number"].as_u64()?,
            node_id: text(v, "node_id"),
            html_url: text(v, "html_url"),
            draft: v["draft"].as_bool().unwrap_or(false),
            body: text(v, "body"),
        })
    }
}

/// A user's access to the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    /// `admin`, `write`, `read` or `none` (GitHub folds maintain into write, triage into read).
    pub permission: String,
    /// The precise role: `admin`, `maintain`, `write`, `triage`, `read` or a custom role.
    pub role_name: String,
}

impl Permission {
    /// Write, maintain or admin: allowed to start runs and answer them (`docs/action-mode.md`).
    pub fn can_write(&self) -> bool {
        ["admin", "maintain", "write"].contains(&self.role_name.as_str())
            || ["admin", "write"].contains(&self.permission.as_str())
    }

    /// The most precise name of the access level.
    pub fn level(&self) -> &str {
        if self.role_name.is_empty() {
            &self.permission
        } else {
            &self.role_name
        }
    }
}

/// The run a dispatch started, when GitHub says (`return_run_details`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchedRun {
    /// `workflow_run_id`.
    pub run_id: Option<u64>,
    /// Link for people.
    pub html_url: Option<String>,
}

/// A workflow run, as far as the pipeline cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowRun {
    /// Its workflow file (`.github/workflows/x.yml`, maybe with `@ref`).
    pub path: Option<String>,
    /// `queued`, `in_progress`, `completed`, … (of the newest attempt).
    pub status: String,
    /// `success`, `failure`, `cancelled`, `timed_out`, … once completed.
    pub conclusion: Option<String>,
    /// Link for people.
    pub html_url: String,
}

/// A GitHub client bound to one repository.
pub struct GithubForge {
    target: GithubTarget,
    token: Secret,
    http: Http,
    /// The login the token acts as, once learnt ([`GithubForge::learn_identity`]): comments
    /// are then found only among the ones it wrote.
    me: Option<String>,
}

impl std::fmt::Debug for GithubForge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of debug output.
        f.debug_struct("GithubForge")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, Copy)]
enum Verb {
    Get,
    Post,
    Patch,
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
        let http = Http::new()
            .map_err(|e| Error::forge(&target.api_url, e.to_string()).with_help(SETUP_HELP))?;
        Ok(GithubForge {
            target,
            token,
            http,
            me: None,
        })
    }

    /// The repository this client works on.
    pub fn target(&self) -> &GithubTarget {
        &self.target
    }

    /// One REST call on this repository (`route` is relative to `/repos/{owner}/{repo}`)
    /// through the crate's retrying client: the JSON body (`Null` when empty), or `None` for a
    /// 404 when `missing_ok` (lookups that may find nothing). Statuses of 400 and up are errors
    /// naming `what`, with a hint for the usual causes.
    fn rest(
        &self,
        verb: Verb,
        route: &str,
        body: Option<serde_json::Value>,
        what: &str,
        missing_ok: bool,
    ) -> Result<Option<serde_json::Value>> {
        let url = format!(
            "{}/repos/{}/{}{route}",
            self.target.api_url.trim_end_matches('/'),
            self.target.owner,
            self.target.repo
        );
        let sent = self.http.send(what, &url, |c| {
            let request = match verb {
                Verb::Get => c.get(&url),
                Verb::Post => c.post(&url),
                Verb::Patch => c.patch(&url),
            }
            .bearer_auth(self.token.expose())
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", API_VERSION);
            match &body {
                Some(b) => request.json(b),
                None => request,
            }
        });
        match sent {
            Ok(reply) => Ok(Some(json_or_text(&reply.text()))),
            Err(NetError::Status { status: 404, .. }) if missing_ok => Ok(None),
            Err(NetError::Status { status, body, .. }) => {
                Err(self.status_error(what, status, &json_or_text(&body)))
            }
            Err(e) => Err(self.transport_error(e)),
        }
    }

    /// A GET that must find something.
    fn get(&self, route: &str, what: &str) -> Result<serde_json::Value> {
        Ok(self
            .rest(Verb::Get, route, None, what, false)?
            .unwrap_or_default())
    }

    /// A POST or PATCH of `body` that must find its target.
    fn write(
        &self,
        verb: Verb,
        route: &str,
        body: serde_json::Value,
        what: &str,
    ) -> Result<serde_json::Value> {
        Ok(self
            .rest(verb, route, Some(body), what, false)?
            .unwrap_or_default())
    }

    /// The error of an answer that lacks what the call exists for (`the new comment on #3`,
    /// `an id`).
    fn incomplete(&self, answer: &str, lacking: &str) -> Error {
        self.odd_answer(format!(
            "GitHub answered {answer} of {} without {lacking}",
            self.target.full_name()
        ))
    }

    fn transport_error(&self, e: NetError) -> Error {
        Error::forge(
            &self.target.api_url,
            format!(
                "GitHub {} ({}): {e}",
                self.target.full_name(),
                self.target.api_url
            ),
        )
        .with_help(RETRY_HELP)
    }

    fn status_error(&self, what: &str, status: u16, body: &serde_json::Value) -> Error {
        let message = body["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| body.to_string().chars().take(200).collect());
        let hint = match status {
            401 => " — the token was refused; check the github_token input / GITHUB_TOKEN",
            403 => {
                " — the token lacks a permission (the workflow needs contents, issues, pull-requests and actions: write) or hit a rate limit"
            }
            404 => " — not found; check the number and GITHUB_REPOSITORY",
            422 => " — GitHub rejected the request as invalid",
            _ => "",
        };
        let error = Error::forge(
            &self.target.api_url,
            format!(
                "GitHub {} ({}): {what} failed: HTTP {status}: {message}{hint}",
                self.target.full_name(),
                self.target.api_url
            ),
        );
        match status {
            // The hint above already says what to do.
            401 | 403 | 404 => error,
            429 | 500.. => error.with_help(BUSY_HELP),
            _ => error.with_help(ODD_ANSWER_HELP),
        }
    }

    /// GitHub answered 2xx but without a field its API documents.
    fn odd_answer(&self, message: impl Into<String>) -> Error {
        Error::forge(&self.target.api_url, message).with_help(ODD_ANSWER_HELP)
    }

    /// Reads issue `number`: title, body, labels, URL.
    pub fn read_issue(&self, number: u64) -> Result<IssueRef> {
        let value = self.get(
            &format!("/issues/{number}"),
            &format!("reading issue #{number}"),
        )?;
        issue_from_json(&value, number)
            .ok_or_else(|| self.incomplete(&format!("for issue #{number}"), "a title"))
    }

    /// Every comment of issue `number`, oldest first (all pages).
    pub fn list_comments(&self, number: u64) -> Result<Vec<Comment>> {
        self.comment_pages(
            &format!("/issues/{number}/comments?per_page=100"),
            50,
            &format!("listing the comments of issue #{number}"),
        )
    }

    /// Comments from up to `pages` pages of 100 at `path` (which already carries `per_page=100`),
    /// stopping at the first short page: GitHub REST pagination without reading `Link` headers.
    fn comment_pages(&self, path: &str, pages: u32, what: &str) -> Result<Vec<Comment>> {
        let mut out = Vec::new();
        for page in 1..=pages {
            let v = self.get(&format!("{path}&page={page}"), what)?;
            let items = v.as_array().cloned().unwrap_or_default();
            out.extend(items.iter().filter_map(Comment::from_json));
            if items.len() < 100 {
                break;
            }
        }
        Ok(out)
    }

    /// The first comment of issue `number` whose body starts with `marker` — written by this
    /// token's identity once it is learnt, as anyone can write a marker.
    pub fn find_comment(&self, number: u64, marker: &str) -> Result<Option<Comment>> {
        Ok(self.list_comments(number)?.into_iter().find(|c| {
            c.body.trim_start().starts_with(marker)
                && self.me.as_deref().is_none_or(|me| c.author == me)
        }))
    }

    /// Learns the login this token acts as, from GraphQL's `viewer`: it answers for a personal
    /// access token, a GitHub App installation token (`<app>[bot]`) and the workflow's
    /// `GITHUB_TOKEN` (`github-actions[bot]`), where REST `GET /user` refuses installation
    /// tokens and `GET /app` needs the App's own JWT.
    pub fn learn_identity(&mut self) -> Result<String> {
        let v = self.graphql(
            "reading the token's identity",
            "query { viewer { login } }",
            serde_json::json!({}),
        )?;
        let login = v["viewer"]["login"]
            .as_str()
            .filter(|l| !l.is_empty())
            .ok_or_else(|| {
                Error::forge(
                    &self.target.graphql_url,
                    "GitHub GraphQL answered `viewer` without a login".to_string(),
                )
            })?
            .to_string();
        self.me = Some(login.clone());
        Ok(login)
    }

    /// The login the token acts as, once learnt.
    pub fn identity(&self) -> Option<&str> {
        self.me.as_deref()
    }

    /// The workflow file path (`.github/workflows/x.yml`) of run `run_id` of this repository,
    /// or `None` when the repository has no such run.
    pub fn run_workflow_path(&self, run_id: u64) -> Result<Option<String>> {
        Ok(self.workflow_run(run_id)?.and_then(|r| r.path))
    }

    /// Run `run_id` of this repository (`GET /repos/{o}/{r}/actions/runs/{id}`, whose
    /// `status` and `conclusion` are those of its newest attempt), or `None` when there is no
    /// such run.
    pub fn workflow_run(&self, run_id: u64) -> Result<Option<WorkflowRun>> {
        let found = self.rest(
            Verb::Get,
            &format!("/actions/runs/{run_id}"),
            None,
            &format!("reading workflow run {run_id}"),
            true,
        )?;
        Ok(found.map(|v| WorkflowRun {
            path: v["path"].as_str().map(str::to_string),
            status: text(&v, "status"),
            conclusion: v["conclusion"].as_str().map(str::to_string),
            html_url: text(&v, "html_url"),
        }))
    }

    /// The issue comments of the whole repository updated since `since`, newest first
    /// (`GET /repos/{o}/{r}/issues/comments?sort=updated&direction=desc&since=…`, GitHub REST
    /// "List issue comments for a repository"), at most 1000.
    pub fn list_repo_comments(&self, since: chrono::DateTime<chrono::Utc>) -> Result<Vec<Comment>> {
        let since = since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        self.comment_pages(
            &format!(
                "/issues/comments?sort=updated&direction=desc&since={}&per_page=100",
                encode_query(&since)
            ),
            10,
            &format!("listing the issue comments updated since {since}"),
        )
    }

    /// Posts a new comment.
    pub fn create_comment(&self, number: u64, body: &str) -> Result<Comment> {
        let v = self.write(
            Verb::Post,
            &format!("/issues/{number}/comments"),
            serde_json::json!({ "body": body }),
            &format!("commenting on issue #{number}"),
        )?;
        Comment::from_json(&v)
            .ok_or_else(|| self.incomplete(&format!("the new comment on #{number}"), "an id"))
    }

    /// Edits comment `id`; `None` when it no longer exists.
    pub fn edit_comment(&self, id: u64, body: &str) -> Result<Option<Comment>> {
        let edited = self.rest(
            Verb::Patch,
            &format!("/issues/comments/{id}"),
            Some(serde_json::json!({ "body": body })),
            &format!("editing comment {id}"),
            true,
        )?;
        Ok(edited.as_ref().and_then(Comment::from_json))
    }

    /// Edits the comment of issue `number` that starts with `marker` (trying `known_id` first,
    /// then a search), or posts it when there is none: one comment per marker, ever.
    pub fn upsert_comment(
        &self,
        number: u64,
        marker: &str,
        body: &str,
        known_id: Option<u64>,
    ) -> Result<Comment> {
        if let Some(id) = known_id
            && let Some(c) = self.edit_comment(id, body)?
        {
            return Ok(c);
        }
        if let Some(existing) = self.find_comment(number, marker)?
            && let Some(c) = self.edit_comment(existing.id, body)?
        {
            return Ok(c);
        }
        self.create_comment(number, body)
    }

    /// `user`'s permission on the repository; a user GitHub does not know has `none`.
    pub fn permission(&self, user: &str) -> Result<Permission> {
        let found = self.rest(
            Verb::Get,
            &format!("/collaborators/{user}/permission"),
            None,
            &format!("checking the permission of @{user}"),
            true,
        )?;
        let Some(v) = found else {
            return Ok(Permission {
                permission: "none".into(),
                role_name: String::new(),
            });
        };
        Ok(Permission {
            permission: v["permission"].as_str().unwrap_or("none").to_string(),
            role_name: text(&v, "role_name"),
        })
    }

    /// The open pull request whose head is `branch` of this repository.
    pub fn find_pr(&self, branch: &str) -> Result<Option<PullRequest>> {
        let v = self.get(
            &format!(
                "/pulls?head={}:{}&state=open&per_page=100",
                self.target.owner,
                encode_query(branch)
            ),
            &format!("looking for the pull request of {branch}"),
        )?;
        Ok(v.as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["head"]["ref"].as_str().is_none_or(|r| r == branch))
            .find_map(PullRequest::from_json))
    }

    /// Opens a pull request.
    pub fn create_pr(
        &self,
        title: &str,
        head: &str,
        base: &str,
        body: &str,
        draft: bool,
    ) -> Result<PullRequest> {
        let v = self.write(
            Verb::Post,
            "/pulls",
            serde_json::json!({
                "title": title, "head": head, "base": base, "body": body, "draft": draft,
            }),
            &format!("opening a pull request from {head} into {base}"),
        )?;
        PullRequest::from_json(&v)
            .ok_or_else(|| self.incomplete("the new pull request", "a number"))
    }

    /// Replaces a pull request's title and body.
    pub fn update_pr(&self, number: u64, title: &str, body: &str) -> Result<PullRequest> {
        let v = self.write(
            Verb::Patch,
            &format!("/pulls/{number}"),
            serde_json::json!({ "title": title, "body": body }),
            &format!("updating pull request #{number}"),
        )?;
        PullRequest::from_json(&v)
            .ok_or_else(|| self.incomplete(&format!("the update of #{number}"), "a number"))
    }

    fn graphql(
        &self,
        what: &str,
        query: &str,
        variables: serde_json::Value,
    ) -> Result<serde_json::Value> {
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
                Error::forge(&url, format!("GitHub GraphQL ({url}): {e}")).with_help(RETRY_HELP)
            })?;
        let v = reply.json();
        if let Some(errors) = v["errors"].as_array().filter(|e| !e.is_empty()) {
            let messages: Vec<&str> = errors
                .iter()
                .filter_map(|e| e["message"].as_str())
                .collect();
            return Err(Error::forge(
                &url,
                format!(
                    "GitHub GraphQL ({url}): {what} failed: {} — the token needs pull-requests: write",
                    messages.join("; ")
                ),
            ));
        }
        Ok(v["data"].clone())
    }

    /// Turns a pull request draft or ready. Only GraphQL can make a draft ready
    /// (`markPullRequestReadyForReview`); the way back is `convertPullRequestToDraft`.
    pub fn set_draft(&self, pr: &PullRequest, draft: bool) -> Result<()> {
        if pr.draft == draft {
            return Ok(());
        }
        let (mutation, field) = if draft {
            ("convertPullRequestToDraft", "convertPullRequestToDraft")
        } else {
            (
                "markPullRequestReadyForReview",
                "markPullRequestReadyForReview",
            )
        };
        let query = format!(
            "mutation($id: ID!) {{ {mutation}(input: {{pullRequestId: $id}}) {{ pullRequest {{ number isDraft }} }} }}"
        );
        let data = self.graphql(
            &format!("{mutation} on #{}", pr.number),
            &query,
            serde_json::json!({ "id": pr.node_id }),
        )?;
        match data[field]["pullRequest"]["isDraft"].as_bool() {
            Some(d) if d == draft => Ok(()),
            _ => Err(Error::forge(
                &self.target.graphql_url,
                format!(
                    "GitHub GraphQL {mutation} on #{} did not report isDraft={draft}",
                    pr.number
                ),
            )
            .with_help(ODD_ANSWER_HELP)),
        }
    }

    /// Creates or updates the pull request of `head` (found by head branch, so a re-run never
    /// opens a second one) and sets draft/ready.
    pub fn publish_pr(
        &self,
        title: &str,
        head: &str,
        base: &str,
        body: &str,
        draft: bool,
    ) -> Result<PullRequest> {
        let mut pr = match self.find_pr(head)? {
            Some(existing) => {
                let mut updated = if existing.body != body {
                    self.update_pr(existing.number, title, body)?
                } else {
                    existing.clone()
                };
                // Keep the node id and draft flag we know if the update's answer lacks them.
                if updated.node_id.is_empty() {
                    updated.node_id = existing.node_id;
                }
                updated
            }
            None => self.create_pr(title, head, base, body, draft)?,
        };
        if pr.draft != draft {
            self.set_draft(&pr, draft)?;
            pr.draft = draft;
        }
        Ok(pr)
    }

    /// Starts `workflow_file` on `git_ref` with `inputs` (strings, at most 25) and asks for the new
    /// run's id (`return_run_details`, github.com since February 2026: "Workflow dispatch API now
    /// returns run IDs", GitHub changelog 2026-02-19). GitHub Enterprise Server 3.20 and older
    /// refuse the unknown key (`"return_run_details" is not a permitted key.`, reported on 3.19 in
    /// benc-uk/workflow-dispatch#86; cli/cli#12672 names "GHES 3.20 or earlier"): then the
    /// dispatch is sent again without it. Either way, a server that answers `204 No Content`
    /// leaves `run_id` `None`; [`GithubForge::find_dispatched_run`] finds the run then.
    pub fn dispatch(
        &self,
        workflow_file: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
    ) -> Result<DispatchedRun> {
        if inputs.len() > 25 {
            return Err(Error::forge(
                &self.target.api_url,
                format!(
                    "a workflow_dispatch takes at most 25 inputs; {} were given",
                    inputs.len()
                ),
            )
            .with_help("GitHub refuses more; pass fewer inputs"));
        }
        let route = format!(
            "/actions/workflows/{}/dispatches",
            encode_query(workflow_file)
        );
        let what = format!("dispatching {workflow_file} on {git_ref}");
        let v = match self.write(
            Verb::Post,
            &route,
            serde_json::json!({
                "ref": git_ref, "inputs": inputs, "return_run_details": true,
            }),
            &what,
        ) {
            Ok(v) => v,
            Err(e) if refuses_run_details(&e) => {
                crate::events::emit(crate::events::Event::Job {
                    message: "this GitHub does not return the dispatched run (GitHub Enterprise Server 3.20 or older); dispatching without asking for it".into(),
                });
                self.write(
                    Verb::Post,
                    &route,
                    serde_json::json!({ "ref": git_ref, "inputs": inputs }),
                    &what,
                )?
            }
            Err(e) => return Err(e),
        };
        Ok(DispatchedRun {
            run_id: v["workflow_run_id"].as_u64(),
            html_url: v["html_url"].as_str().map(str::to_string),
        })
    }

    /// The run a `workflow_dispatch` of `workflow_file` started, when the dispatch answered
    /// `204` without it: among the workflow's runs with event `workflow_dispatch` created since
    /// `since` (`GET /repos/{o}/{r}/actions/workflows/{file}/runs?event=…&created=>=…`, GitHub
    /// REST "List workflow runs for a workflow"; runs do not show their inputs), the newest whose
    /// `display_title` is `title` (the workflow's `run-name`), other than `exclude` (the run
    /// asking). A workflow without that `run-name` has titles that tell no issue apart, and no run
    /// is found. The run may be listed a moment after the dispatch, so the listing is tried a few
    /// times; `None` when it never shows.
    pub fn find_dispatched_run(
        &self,
        workflow_file: &str,
        since: chrono::DateTime<chrono::Utc>,
        title: &str,
        exclude: u64,
    ) -> Result<Option<DispatchedRun>> {
        let created = since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let route = format!(
            "/actions/workflows/{}/runs?event=workflow_dispatch&created={}&per_page=100",
            encode_query(workflow_file),
            encode_query(&format!(">={created}"))
        );
        for wait in [0u64, 1, 2, 4] {
            std::thread::sleep(std::time::Duration::from_secs(wait));
            let v = self.get(
                &route,
                &format!("listing the runs of {workflow_file} dispatched since {created}"),
            )?;
            let runs: Vec<&serde_json::Value> = v["workflow_runs"]
                .as_array()
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            if let Some(found) = pick_dispatched(&runs, title, exclude) {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }
}

/// GitHub Enterprise Server's refusal of `return_run_details` (a 400 or 422 naming the key).
fn refuses_run_details(e: &Error) -> bool {
    matches!(e, Error::Forge { message, .. }
        if (message.contains("HTTP 422") || message.contains("HTTP 400"))
            && message.contains("return_run_details"))
}

/// The newest of `runs` (a listing of one workflow's dispatched runs) titled `title`, other than
/// `exclude`. A run is never guessed by its time alone: another issue's chain may have
/// dispatched at the same moment.
fn pick_dispatched(
    runs: &[&serde_json::Value],
    title: &str,
    exclude: u64,
) -> Option<DispatchedRun> {
    let chosen = runs
        .iter()
        .filter(|r| r["id"].as_u64().is_some_and(|id| id != exclude))
        .filter(|r| r["event"].as_str() == Some("workflow_dispatch"))
        .filter(|r| r["display_title"].as_str() == Some(title))
        .max_by_key(|r| {
            (
                r["created_at"].as_str().unwrap_or_default().to_string(),
                r["id"].as_u64().unwrap_or(0),
            )
        })?;
    Some(DispatchedRun {
        run_id: chosen["id"].as_u64(),
        html_url: chosen["html_url"].as_str().map(str::to_string),
    })
}

/// An issue from a REST or webhook payload.
pub fn issue_from_json(value: &serde_json::Value, number: u64) -> Option<IssueRef> {
    let title = value["title"].as_str().unwrap_or_default().to_string();
    if title.is_empty() {
        return None;
    }
    Some(IssueRef {
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

/// The string field `key` of `v`, empty when absent: GitHub omits or nulls fields freely.
fn text(v: &serde_json::Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

/// A body as JSON; text that is not JSON as a JSON string, and nothing as `Null`.
fn json_or_text(text: &str) -> serde_json::Value {
    if text.trim().is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_string()))
    }
}

/// Percent-encodes what may not appear raw in a path segment or query value.
fn encode_query(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
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

    #[test]
    fn graphql_endpoint_follows_the_rest_base() {
        assert_eq!(
            graphql_url_for("https://api.github.com"),
            "https://api.github.com/graphql"
        );
        assert_eq!(
            graphql_url_for("https://ghe.example.com/api/v3/"),
            "https://ghe.example.com/api/graphql"
        );
    }

    #[test]
    fn only_write_maintain_and_admin_may_drive_a_run() {
        let p = |permission: &str, role: &str| Permission {
            permission: permission.into(),
            role_name: role.into(),
        };
        assert!(p("admin", "admin").can_write());
        assert!(p("write", "maintain").can_write());
        assert!(p("write", "write").can_write());
        assert!(p("write", "").can_write());
        assert!(!p("read", "triage").can_write());
        assert!(!p("read", "read").can_write());
        assert!(!p("none", "").can_write());
        assert_eq!(
            encode_query("spec-orchestrate/42-x y"),
            "spec-orchestrate/42-x%20y"
        );
    }
}
