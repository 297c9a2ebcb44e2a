//! A pull request's reviews, their inline comments and the threads those comments open: what a
//! person said about the change, read so that a review round can act on it, answered in place,
//! and resolved once the fix holds (docs/action-mode.md, "After the pull request").
//!
//! REST serves reviews ("List reviews for a pull request"), review comments ("List review
//! comments on a pull request") and replies ("Create a reply for a review comment", which takes
//! only a thread's first comment: GitHub does not support replies to replies). Whether a thread
//! is resolved exists only in GraphQL (`PullRequestReviewThread.isResolved`), and so does
//! resolving it (`resolveReviewThread`), which GitHub allows only to someone with write access
//! to the repository or the pull request's author; an installation token (the workflow's
//! `GITHUB_TOKEN`, a GitHub App's) needs `contents: write` besides `pull-requests: write`, as
//! measured in github/gh-aw#35726 and oven-sh/bun#36959 (GitHub documents neither).

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::error::forge::{ForgeCause, ForgeFailure};
use crate::error::{Error, Result};

use super::GithubForge;
use super::answer::ODD_ANSWER_HELP;
use super::models::User;
use crate::types::ids::PrNumber;

/// What a review says of the change (REST `state`, GraphQL `PullRequestReviewState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReviewState {
    /// "Approve".
    Approved,
    /// "Request changes".
    ChangesRequested,
    /// "Comment".
    Commented,
    /// Dismissed by a maintainer: it no longer asks for anything.
    Dismissed,
    /// Not submitted yet (only its author sees it).
    Pending,
}

/// Which side of the diff an inline comment sits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Side {
    /// The base (a removed line).
    Left,
    /// The head (an added or kept line).
    Right,
}

impl Side {
    /// GitHub's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Left => "LEFT",
            Side::Right => "RIGHT",
        }
    }
}

/// A submitted review (REST "pull-request-review"; `user` is nullable for a deleted account).
#[derive(Debug, Clone, Deserialize)]
pub struct RawReview {
    /// Review id.
    pub id: u64,
    /// The reviewer.
    pub user: Option<User>,
    /// The review's own text (the summary above its inline comments).
    #[serde(default)]
    pub body: Option<String>,
    /// Approve, request changes, comment, …
    pub state: ReviewState,
    /// When it was submitted (absent while pending).
    #[serde(default)]
    pub submitted_at: Option<DateTime<Utc>>,
    /// The head commit it reviewed.
    #[serde(default)]
    pub commit_id: Option<String>,
    /// Link for people.
    pub html_url: String,
    /// `OWNER`, `MEMBER`, `COLLABORATOR`, `CONTRIBUTOR`, `NONE`, …
    #[serde(default)]
    pub author_association: Option<String>,
}

/// A review, as far as a review round cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    /// Review id.
    pub id: u64,
    /// The reviewer's login (`ghost` for a deleted account).
    pub author: String,
    /// Its own text.
    pub body: String,
    /// What it asks.
    pub state: ReviewState,
    /// When it was submitted.
    pub submitted_at: Option<DateTime<Utc>>,
    /// The head commit it reviewed.
    pub commit_id: Option<String>,
    /// Link for people.
    pub html_url: String,
}

impl From<RawReview> for Review {
    fn from(r: RawReview) -> Review {
        Review {
            id: r.id,
            author: r.user.map_or_else(|| "ghost".to_string(), |u| u.login),
            body: r.body.unwrap_or_default(),
            state: r.state,
            submitted_at: r.submitted_at,
            commit_id: r.commit_id,
            html_url: r.html_url,
        }
    }
}

/// An inline review comment (REST "pull-request-review-comment").
#[derive(Debug, Clone, Deserialize)]
pub struct RawReviewComment {
    /// Comment id.
    pub id: u64,
    /// The review it belongs to.
    #[serde(default)]
    pub pull_request_review_id: Option<u64>,
    /// The thread's first comment, when this one is a reply.
    #[serde(default)]
    pub in_reply_to_id: Option<u64>,
    /// The file it is about.
    pub path: String,
    /// The line in the diff's side (null once the line is outdated, or for a file comment).
    #[serde(default)]
    pub line: Option<u64>,
    /// The side of the diff.
    #[serde(default)]
    pub side: Option<Side>,
    /// The comment's text.
    pub body: String,
    /// The author; `null` when the account was deleted.
    pub user: Option<User>,
    /// Link for people.
    pub html_url: String,
}

/// A review comment, as far as a review round cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewComment {
    /// Comment id.
    pub id: u64,
    /// Its review.
    pub review_id: Option<u64>,
    /// The thread's first comment, when this one is a reply.
    pub in_reply_to: Option<u64>,
    /// The file.
    pub path: String,
    /// The line.
    pub line: Option<u64>,
    /// The side.
    pub side: Option<Side>,
    /// Its text.
    pub body: String,
    /// The author's login (`ghost` for a deleted account).
    pub author: String,
    /// Link for people.
    pub html_url: String,
}

impl From<RawReviewComment> for ReviewComment {
    fn from(c: RawReviewComment) -> ReviewComment {
        ReviewComment {
            id: c.id,
            review_id: c.pull_request_review_id,
            in_reply_to: c.in_reply_to_id,
            path: c.path,
            line: c.line,
            side: c.side,
            body: c.body,
            author: c.user.map_or_else(|| "ghost".to_string(), |u| u.login),
            html_url: c.html_url,
        }
    }
}

/// One comment of a thread, as GraphQL serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadComment {
    /// The REST id (`databaseId`), which the reply endpoint takes.
    pub id: Option<u64>,
    /// The author's login (`ghost` for a deleted account).
    pub author: String,
    /// Its text.
    pub body: String,
}

/// A review thread: where it is, whether it is resolved, and what was said in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewThread {
    /// GraphQL node id, which `resolveReviewThread` takes.
    pub node_id: String,
    /// Resolved by someone.
    pub resolved: bool,
    /// The line it was left on has changed since.
    pub outdated: bool,
    /// The file.
    pub path: String,
    /// The line (null once outdated).
    pub line: Option<u64>,
    /// The side.
    pub side: Side,
    /// Its comments, oldest first; the first one opened the thread.
    pub comments: Vec<ThreadComment>,
}

/// GraphQL shapes of the thread query and the mutation.
mod gql {
    use serde::Deserialize;

    use super::Side;
    use crate::forge::github::models::User;

    #[derive(Debug, Deserialize)]
    pub struct ThreadsData {
        pub repository: Option<Repository>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Repository {
        pub pull_request: Option<PullRequest>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct PullRequest {
        pub review_threads: Connection<Thread>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Connection<T> {
        #[serde(default = "no_page")]
        pub page_info: PageInfo,
        pub nodes: Vec<T>,
    }

    fn no_page() -> PageInfo {
        PageInfo {
            has_next_page: false,
            end_cursor: None,
        }
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct PageInfo {
        pub has_next_page: bool,
        pub end_cursor: Option<String>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Thread {
        pub id: String,
        pub is_resolved: bool,
        #[serde(default)]
        pub is_outdated: bool,
        pub path: String,
        pub line: Option<u64>,
        pub diff_side: Side,
        pub comments: Connection<Comment>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Comment {
        pub database_id: Option<u64>,
        pub body: String,
        pub author: Option<User>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ResolveData {
        pub resolve_review_thread: Option<ResolvePayload>,
    }

    #[derive(Debug, Deserialize)]
    pub struct ResolvePayload {
        pub thread: Resolved,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Resolved {
        pub id: String,
        pub is_resolved: bool,
    }
}

const THREADS_QUERY: &str = "query($owner: String!, $name: String!, $number: Int!, $after: String) { repository(owner: $owner, name: $name) { pullRequest(number: $number) { reviewThreads(first: 100, after: $after) { pageInfo { hasNextPage endCursor } nodes { id isResolved isOutdated path line diffSide comments(first: 100) { nodes { databaseId body author { login } } } } } } } }";

const RESOLVE_MUTATION: &str = "mutation($threadId: ID!) { resolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } } }";

/// Pages read of a list (100 items each): 5,000 reviews or comments on one pull request is past
/// anything a person writes, and a bound keeps a hostile or broken server from looping us.
const MAX_PAGES: u32 = 50;

impl GithubForge {
    /// Every review of pull request `number`, oldest first (all pages).
    pub fn list_reviews(&self, number: PrNumber) -> Result<Vec<Review>> {
        let what = format!("listing the reviews of pull request #{number}");
        let mut out = Vec::new();
        for page in 1..=MAX_PAGES {
            let items: Vec<RawReview> = self.get(
                &format!("/pulls/{number}/reviews?per_page=100&page={page}"),
                &what,
            )?;
            let short = items.len() < 100;
            out.extend(items.into_iter().map(Review::from));
            if short {
                break;
            }
        }
        Ok(out)
    }

    /// Every inline review comment of pull request `number`, replies included, oldest first.
    pub fn list_review_comments(&self, number: PrNumber) -> Result<Vec<ReviewComment>> {
        let what = format!("listing the review comments of pull request #{number}");
        let mut out = Vec::new();
        for page in 1..=MAX_PAGES {
            let items: Vec<RawReviewComment> = self.get(
                &format!(
                    "/pulls/{number}/comments?sort=created&direction=asc&per_page=100&page={page}"
                ),
                &what,
            )?;
            let short = items.len() < 100;
            out.extend(items.into_iter().map(ReviewComment::from));
            if short {
                break;
            }
        }
        Ok(out)
    }

    /// Replies `body` in the thread that review comment `comment_id` opened. GitHub takes only a
    /// thread's first comment here. After a failure that leaves it unknown whether the reply
    /// was made, the thread is searched for it (same body, by this token's identity once
    /// learnt), so a lost answer never posts it twice.
    pub fn reply_to_review_comment(
        &self,
        number: PrNumber,
        comment_id: u64,
        body: &str,
    ) -> Result<ReviewComment> {
        let what = format!("replying to review comment {comment_id} on pull request #{number}");
        self.post_checked::<RawReviewComment, _>(
            &what,
            &format!("/pulls/{number}/comments/{comment_id}/replies"),
            &serde_json::json!({ "body": body }),
            || {
                Ok(self.list_review_comments(number)?.into_iter().rfind(|c| {
                    c.in_reply_to == Some(comment_id)
                        && c.body == body
                        && self.identity().is_none_or(|me| c.author == me)
                }))
            },
        )
    }

    /// Every review thread of pull request `number`, resolved or not, with its comments.
    pub fn review_threads(&self, number: PrNumber) -> Result<Vec<ReviewThread>> {
        let what = format!("reading the review threads of pull request #{number}");
        let mut out = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let data: gql::ThreadsData = self.graphql(
                &what,
                THREADS_QUERY,
                serde_json::json!({
                    "owner": self.target.owner,
                    "name": self.target.repo,
                    "number": number,
                    "after": after,
                }),
            )?;
            let Some(pr) = data.repository.and_then(|r| r.pull_request) else {
                return Err(self.threads_missing(number));
            };
            let page = pr.review_threads;
            out.extend(page.nodes.into_iter().map(thread_of));
            match (page.page_info.has_next_page, page.page_info.end_cursor) {
                (true, Some(cursor)) => after = Some(cursor),
                _ => break,
            }
        }
        Ok(out)
    }

    /// Resolves review thread `thread_id`. GitHub refuses (`FORBIDDEN`) a token without write
    /// access that did not open the pull request; an answer that does not report the thread
    /// resolved is an error, so a thread is never recorded resolved that is not.
    pub fn resolve_thread(&self, thread_id: &str) -> Result<()> {
        let what = format!("resolving review thread {thread_id}");
        let data: gql::ResolveData = self.graphql(
            &what,
            RESOLVE_MUTATION,
            serde_json::json!({ "threadId": thread_id }),
        )?;
        match data.resolve_review_thread {
            Some(p) if p.thread.is_resolved && p.thread.id == thread_id => Ok(()),
            _ => Err(Error::forge(
                &self.target.graphql_url,
                format!("GitHub GraphQL resolveReviewThread on {thread_id} did not report the thread resolved"),
            )
            .with_help(ODD_ANSWER_HELP)
            .with_failure(ForgeFailure::of(ForgeCause::OddAnswer))),
        }
    }

    fn threads_missing(&self, number: PrNumber) -> Error {
        Error::forge(
            &self.target.graphql_url,
            format!(
                "GitHub GraphQL has no pull request #{number} in {}",
                self.target.full_name()
            ),
        )
        .with_failure(ForgeFailure::of(ForgeCause::NotFound))
    }
}

fn thread_of(t: gql::Thread) -> ReviewThread {
    ReviewThread {
        node_id: t.id,
        resolved: t.is_resolved,
        outdated: t.is_outdated,
        path: t.path,
        line: t.line,
        side: t.diff_side,
        comments: t
            .comments
            .nodes
            .into_iter()
            .map(|c| ThreadComment {
                id: c.database_id,
                author: c.author.map_or_else(|| "ghost".to_string(), |u| u.login),
                body: c.body,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::github::models::decode;

    #[test]
    fn reviews_and_comments_read_as_github_documents_them() {
        let review: RawReview = decode(
            br#"{"id": 80, "user": null, "body": null, "state": "CHANGES_REQUESTED", "html_url": "h", "submitted_at": "2019-11-17T17:43:43Z"}"#,
        )
        .unwrap();
        let review = Review::from(review);
        assert_eq!(review.author, "ghost");
        assert_eq!(review.state, ReviewState::ChangesRequested);
        let e =
            decode::<RawReview>(br#"{"id": 80, "user": null, "state": "LGTM", "html_url": "h"}"#)
                .unwrap_err();
        assert!(e.starts_with("at `state`: unknown variant `LGTM`"), "{e}");
        let e =
            decode::<RawReviewComment>(br#"{"id": 10, "path": "a.rs", "body": "b", "user": null}"#)
                .unwrap_err();
        assert!(e.contains("missing field `html_url`"), "{e}");
    }

    #[test]
    fn a_thread_without_its_side_is_refused_by_path() {
        let e = decode::<crate::forge::github::models::GraphqlReply<gql::ThreadsData>>(
            br#"{"data": {"repository": {"pullRequest": {"reviewThreads": {"nodes": [{"id": "T", "isResolved": false, "path": "a", "line": 1, "comments": {"nodes": []}}]}}}}}"#,
        )
        .unwrap_err();
        assert!(e.contains("reviewThreads.nodes[0]"), "{e}");
        assert!(e.contains("missing field `diffSide`"), "{e}");
    }
}
