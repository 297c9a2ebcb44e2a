//! The simulated GitHub's pull request reviews: reviews, inline review comments and the threads
//! they open, served as GitHub serves them (REST "List reviews for a pull request", "List review
//! comments on a pull request", "Create a reply for a review comment"; GraphQL
//! `PullRequest.reviewThreads` and `resolveReviewThread`), from the documented payloads
//! `pull_request_review.json` and `pull_request_review_comment.json`.
//!
//! It is as strict as GitHub: a reply goes to a thread's first comment only ("replies to
//! replies are not supported"), needs a body, and names a comment of that pull request; a
//! thread may be resolved only by a token whose identity has write access to the repository or
//! opened the pull request, and an installation token only with `pull-requests: write` and
//! `contents: write` (GitHub gates the mutation on contents, as github/gh-aw#35726 measured).
//! Anything else is refused the way GitHub refuses it, and noted as a violation.
//!
//! Registered by `fake_github.rs` (its `World` holds a [`Reviews`], its router calls
//! [`mount`], its GraphQL endpoint hands thread queries to [`graphql`]).

use serde_json::{Value, json};
use wiremock::{Request, ResponseTemplate};

use super::{Delivery, FakeGithub, OWNER, REPO, World, fixture, github_error, now, query, segment};

/// A review thread: its first comment and whether someone resolved it.
#[derive(Debug, Clone)]
pub struct Thread {
    pub node_id: String,
    pub pr: u64,
    /// The id of the comment that opened it.
    pub root: u64,
    pub resolved: bool,
    pub resolved_by: Option<String>,
}

/// What the fake knows of reviews.
#[derive(Debug, Default)]
pub struct Reviews {
    /// (pull request, review)
    pub reviews: Vec<(u64, Value)>,
    /// (pull request, review comment), replies included, in the order they were made.
    pub comments: Vec<(u64, Value)>,
    pub threads: Vec<Thread>,
    pub next_id: u64,
    /// The workflow granted the token only `pull-requests: read`.
    pub token_read_only: bool,
    /// The workflow granted the token only `contents: read`: GitHub then refuses
    /// `resolveReviewThread` to an installation token even with `pull-requests: write`
    /// (github/gh-aw#35726, oven-sh/bun#36959: the mutation is gated on `contents: write`).
    pub token_contents_read_only: bool,
}

/// One inline comment of a review a person submits: path, line, side (`LEFT`/`RIGHT`), body.
pub type Inline<'a> = (&'a str, u64, &'a str, &'a str);

impl World {
    fn review_id(&mut self) -> u64 {
        if self.reviews.next_id == 0 {
            self.reviews.next_id = 9_000;
        }
        self.reviews.next_id += 1;
        self.reviews.next_id
    }

    fn pull(&self, pr: u64) -> Option<&Value> {
        self.pulls.iter().find(|p| p["number"] == json!(pr))
    }

    /// A person submits a review of pull request `pr`: `state` is the REST word
    /// (`CHANGES_REQUESTED`, `COMMENTED`, `APPROVED`), each inline comment opens a thread, and
    /// the `pull_request_review` `submitted` event is delivered. Returns the review.
    pub fn submit_review(
        &mut self,
        pr: u64,
        login: &str,
        association: &str,
        state: &str,
        body: &str,
        inline: &[Inline<'_>],
    ) -> Value {
        let id = self.review_id();
        let head = self.pull(pr).map(|p| p["head"]["sha"].clone());
        let mut r = fixture("pull_request_review.json");
        r["id"] = json!(id);
        r["node_id"] = json!(format!("PRR_fake{id}"));
        r["user"]["login"] = json!(login);
        r["user"]["type"] = json!(if login.ends_with("[bot]") {
            "Bot"
        } else {
            "User"
        });
        r["body"] = json!(body);
        r["state"] = json!(state);
        r["author_association"] = json!(association);
        r["submitted_at"] = json!(now());
        r["html_url"] = json!(format!(
            "https://github.com/{OWNER}/{REPO}/pull/{pr}#pullrequestreview-{id}"
        ));
        r["pull_request_url"] = json!(format!("{}/repos/{OWNER}/{REPO}/pulls/{pr}", self.api));
        if let Some(sha) = head {
            r["commit_id"] = sha;
        }
        self.reviews.reviews.push((pr, r.clone()));
        for (path, line, side, text) in inline {
            let c = self.review_comment(pr, Some(id), login, association, None, text);
            let cid = c["id"].as_u64().unwrap_or_default();
            let stored = self.stored_comment(cid);
            stored["path"] = json!(path);
            stored["line"] = json!(line);
            stored["original_line"] = json!(line);
            stored["side"] = json!(side);
            stored["start_line"] = Value::Null;
            stored["original_start_line"] = Value::Null;
            stored["start_side"] = Value::Null;
            self.reviews.threads.push(Thread {
                node_id: format!("PRRT_fake{cid}"),
                pr,
                root: cid,
                resolved: false,
                resolved_by: None,
            });
        }
        let pull = self.pull(pr).cloned().unwrap_or(Value::Null);
        let mut review_event = r.clone();
        review_event["state"] = json!(state.to_lowercase());
        self.deliveries.push(Delivery::Event(
            "pull_request_review".into(),
            json!({
                "action": "submitted",
                "review": review_event,
                "pull_request": pull,
                "repository": {"full_name": format!("{OWNER}/{REPO}"), "name": REPO, "owner": {"login": OWNER}},
                "sender": r["user"].clone(),
            }),
        ));
        r
    }

    /// A person answers in the thread opened by comment `root` (the web UI replies to the
    /// thread, as the API does).
    pub fn reply_as(&mut self, pr: u64, login: &str, root: u64, body: &str) -> Value {
        self.review_comment(pr, None, login, "COLLABORATOR", Some(root), body)
    }

    /// A person unresolves a thread ("Unresolve conversation").
    pub fn unresolve(&mut self, node_id: &str) {
        if let Some(t) = self
            .reviews
            .threads
            .iter_mut()
            .find(|t| t.node_id == node_id)
        {
            t.resolved = false;
            t.resolved_by = None;
        }
    }

    /// The thread opened by comment `root`.
    pub fn thread_of(&self, root: u64) -> Option<&Thread> {
        self.reviews.threads.iter().find(|t| t.root == root)
    }

    /// The replies in the thread opened by comment `root`, oldest first.
    pub fn replies_to(&self, root: u64) -> Vec<&Value> {
        self.reviews
            .comments
            .iter()
            .filter(|(_, c)| c["in_reply_to_id"] == json!(root))
            .map(|(_, c)| c)
            .collect()
    }

    fn stored_comment(&mut self, id: u64) -> &mut Value {
        let i = self
            .reviews
            .comments
            .iter()
            .position(|(_, c)| c["id"] == json!(id))
            .unwrap_or_default();
        &mut self.reviews.comments[i].1
    }

    /// A review comment by `login`: a new thread's first comment, or a reply in `root`'s thread
    /// (which then sits where its thread does).
    fn review_comment(
        &mut self,
        pr: u64,
        review: Option<u64>,
        login: &str,
        association: &str,
        root: Option<u64>,
        body: &str,
    ) -> Value {
        let id = self.review_id();
        let review = review.unwrap_or_else(|| self.review_id());
        let mut c = fixture("pull_request_review_comment.json");
        c["id"] = json!(id);
        c["node_id"] = json!(format!("PRRC_fake{id}"));
        c["pull_request_review_id"] = json!(review);
        c["body"] = json!(body);
        c["user"]["login"] = json!(login);
        c["user"]["type"] = json!(if login.ends_with("[bot]") {
            "Bot"
        } else {
            "User"
        });
        c["author_association"] = json!(association);
        c["created_at"] = json!(now());
        c["updated_at"] = json!(now());
        c["url"] = json!(format!(
            "{}/repos/{OWNER}/{REPO}/pulls/comments/{id}",
            self.api
        ));
        c["html_url"] = json!(format!(
            "https://github.com/{OWNER}/{REPO}/pull/{pr}#discussion_r{id}"
        ));
        c["pull_request_url"] = json!(format!("{}/repos/{OWNER}/{REPO}/pulls/{pr}", self.api));
        c["in_reply_to_id"] = match root {
            Some(r) => json!(r),
            None => Value::Null,
        };
        if let Some(r) = root
            && let Some((_, first)) = self
                .reviews
                .comments
                .iter()
                .find(|(_, c)| c["id"] == json!(r))
        {
            for k in [
                "path",
                "line",
                "original_line",
                "side",
                "diff_hunk",
                "commit_id",
            ] {
                c[k] = first[k].clone();
            }
        }
        self.reviews.comments.push((pr, c.clone()));
        c
    }

    /// Whether the token may resolve threads of `pr`: write access or the pull request's
    /// author, and for an installation token `pull-requests: write` and `contents: write`.
    fn may_resolve(&self, pr: u64) -> bool {
        let me = self.token_login.as_str();
        if me.ends_with("[bot]") {
            return !self.reviews.token_read_only && !self.reviews.token_contents_read_only;
        }
        let author = self
            .pull(pr)
            .and_then(|p| p["user"]["login"].as_str())
            .is_some_and(|a| a == me);
        let role = self.roles.get(me).map(String::as_str);
        author || matches!(role, Some("admin" | "maintain" | "write"))
    }
}

/// Mounts the REST endpoints.
pub fn mount(fake: &FakeGithub) {
    let repo = format!("^/repos/{OWNER}/{REPO}");
    fake.on(
        "api",
        "GET",
        &format!("{repo}/pulls/[0-9]+/reviews$"),
        list_reviews,
    );
    fake.on(
        "api",
        "GET",
        &format!("{repo}/pulls/[0-9]+/comments$"),
        list_review_comments,
    );
    fake.on(
        "api",
        "POST",
        &format!("{repo}/pulls/[0-9]+/comments/[0-9]+/replies$"),
        reply,
    );
}

fn page_of(req: &Request, all: Vec<Value>) -> ResponseTemplate {
    let per_page: usize = query(req, "per_page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
        .min(100);
    let page: usize = query(req, "page").and_then(|v| v.parse().ok()).unwrap_or(1);
    let items: Vec<Value> = all
        .into_iter()
        .skip((page.max(1) - 1) * per_page)
        .take(per_page)
        .collect();
    ResponseTemplate::new(200).set_body_json(Value::Array(items))
}

fn list_reviews(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let pr: u64 = segment(req, 1).parse().unwrap_or(0);
    if w.pull(pr).is_none() {
        return github_error(404, "Not Found");
    }
    let all = w
        .reviews
        .reviews
        .iter()
        .filter(|(p, _)| *p == pr)
        .map(|(_, r)| r.clone())
        .collect();
    page_of(req, all)
}

fn list_review_comments(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let pr: u64 = segment(req, 1).parse().unwrap_or(0);
    if w.pull(pr).is_none() {
        return github_error(404, "Not Found");
    }
    let mut all: Vec<Value> = w
        .reviews
        .comments
        .iter()
        .filter(|(p, _)| *p == pr)
        .map(|(_, c)| c.clone())
        .collect();
    if query(req, "direction").as_deref() == Some("desc") {
        all.reverse();
    }
    page_of(req, all)
}

/// `POST /repos/{o}/{r}/pulls/{n}/comments/{comment_id}/replies`.
fn reply(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let pr: u64 = segment(req, 3).parse().unwrap_or(0);
    let root: u64 = segment(req, 1).parse().unwrap_or(0);
    let Ok(b) = req.body_json::<Value>() else {
        return github_error(400, "Problems parsing JSON");
    };
    let Some(text) = b["body"].as_str().filter(|t| !t.trim().is_empty()) else {
        w.violation(format!("reply to review comment {root} without a body"));
        return github_error(422, "Validation Failed: body can't be blank");
    };
    let Some((_, first)) = w
        .reviews
        .comments
        .iter()
        .find(|(p, c)| *p == pr && c["id"] == json!(root))
    else {
        return github_error(404, "Not Found");
    };
    if !first["in_reply_to_id"].is_null() {
        w.violation(format!(
            "reply to review comment {root}, itself a reply: GitHub takes a thread's first comment"
        ));
        return github_error(
            422,
            "Validation Failed: replies to replies are not supported",
        );
    }
    let login = w.token_login.clone();
    let text = text.to_string();
    let c = w.review_comment(pr, None, &login, "NONE", Some(root), &text);
    ResponseTemplate::new(201).set_body_json(c)
}

/// The GraphQL queries of review threads; `None` when `query` is none of them.
pub fn graphql(w: &mut World, b: &Value, query: &str) -> Option<ResponseTemplate> {
    if query.contains("resolveReviewThread") {
        return Some(resolve(w, b));
    }
    if !query.contains("reviewThreads") {
        return None;
    }
    let v = &b["variables"];
    let right_repo = v["owner"] == json!(OWNER) && v["name"] == json!(REPO);
    let pr = v["number"].as_u64().unwrap_or(0);
    if !right_repo || w.pull(pr).is_none() {
        return Some(ResponseTemplate::new(200).set_body_json(json!({
            "data": {"repository": if right_repo { json!({"pullRequest": null}) } else { Value::Null }},
            "errors": [{"type": "NOT_FOUND", "path": ["repository"], "message": format!("Could not resolve to a PullRequest with the number of {pr}.")}]
        })));
    }
    let nodes: Vec<Value> = w
        .reviews
        .threads
        .iter()
        .filter(|t| t.pr == pr)
        .map(|t| thread_json(w, t))
        .collect();
    // 100 a page, with an opaque cursor: the thread's index.
    let start: usize = v["after"]
        .as_str()
        .and_then(|c| c.strip_prefix("cursor:"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let page: Vec<Value> = nodes.iter().skip(start).take(100).cloned().collect();
    let end = start + page.len();
    Some(ResponseTemplate::new(200).set_body_json(json!({
        "data": {"repository": {"pullRequest": {"reviewThreads": {
            "pageInfo": {"hasNextPage": end < nodes.len(), "endCursor": format!("cursor:{end}")},
            "nodes": page,
        }}}}
    })))
}

fn thread_json(w: &World, t: &Thread) -> Value {
    let in_thread: Vec<&Value> = w
        .reviews
        .comments
        .iter()
        .filter(|(_, c)| c["id"] == json!(t.root) || c["in_reply_to_id"] == json!(t.root))
        .map(|(_, c)| c)
        .collect();
    let first = in_thread.first().copied().cloned().unwrap_or(Value::Null);
    json!({
        "id": t.node_id,
        "isResolved": t.resolved,
        "isOutdated": false,
        "path": first["path"],
        "line": first["line"],
        "diffSide": first["side"],
        "comments": {"nodes": in_thread.iter().map(|c| json!({
            "databaseId": c["id"],
            "body": c["body"],
            "author": {"login": c["user"]["login"]},
        })).collect::<Vec<_>>()},
    })
}

fn resolve(w: &mut World, b: &Value) -> ResponseTemplate {
    let id = b["variables"]["threadId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let Some(pr) = w
        .reviews
        .threads
        .iter()
        .find(|t| t.node_id == id)
        .map(|t| t.pr)
    else {
        return ResponseTemplate::new(200).set_body_json(json!({
            "data": {"resolveReviewThread": null},
            "errors": [{"type": "NOT_FOUND", "path": ["resolveReviewThread"], "message": format!("Could not resolve to a node with the global id of '{id}'")}]
        }));
    };
    if !w.may_resolve(pr) {
        let me = w.token_login.clone();
        w.violation(format!(
            "resolveReviewThread {id} by {me}, who may not resolve threads of #{pr}"
        ));
        return ResponseTemplate::new(200).set_body_json(json!({
            "data": {"resolveReviewThread": null},
            "errors": [{"type": "FORBIDDEN", "path": ["resolveReviewThread"], "message": "Resource not accessible by integration"}]
        }));
    }
    let me = w.token_login.clone();
    if let Some(t) = w.reviews.threads.iter_mut().find(|t| t.node_id == id) {
        t.resolved = true;
        t.resolved_by = Some(me);
    }
    ResponseTemplate::new(200).set_body_json(json!({
        "data": {"resolveReviewThread": {"thread": {"id": id, "isResolved": true}}}
    }))
}
