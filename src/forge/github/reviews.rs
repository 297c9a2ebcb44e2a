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
use serde::{Deserialize, Deserializer};

use crate::error::forge::{ForgeCause, ForgeFailure};
use crate::error::{Error, Result};

use super::GithubForge;
use super::answer::odd_answer;
use super::models::{ghost, login, or_default};
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "UPPERCASE")]
#[strum(serialize_all = "UPPERCASE")]
pub enum Side {
    /// The base (a removed line).
    Left,
    /// The head (an added or kept line).
    Right,
}

impl Side {
    /// GitHub's word.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A submitted review (REST "pull-request-review"), as far as a review round cares.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[allow(missing_docs)]
pub struct Review {
    pub id: u64,
    /// The reviewer's login (`ghost` for a deleted account, whose `user` is `null`).
    #[serde(rename = "user", default = "ghost", deserialize_with = "login")]
    pub author: String,
    /// The review's own text (the summary above its inline comments).
    #[serde(default, deserialize_with = "or_default")]
    pub body: String,
    pub state: ReviewState,
    /// When it was submitted (absent while pending).
    pub submitted_at: Option<DateTime<Utc>>,
    /// The head commit it reviewed.
    pub commit_id: Option<String>,
    pub html_url: String,
}

/// An inline review comment (REST "pull-request-review-comment").
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[allow(missing_docs)]
pub struct ReviewComment {
    pub id: u64,
    #[serde(rename = "pull_request_review_id")]
    pub review_id: Option<u64>,
    /// The thread's first comment, when this one is a reply.
    #[serde(rename = "in_reply_to_id")]
    pub in_reply_to: Option<u64>,
    pub path: String,
    /// The line in the diff's side (null once the line is outdated, or for a file comment).
    pub line: Option<u64>,
    pub side: Option<Side>,
    pub body: String,
    /// The author's login (`ghost` for a deleted account, whose `user` is `null`).
    #[serde(rename = "user", default = "ghost", deserialize_with = "login")]
    pub author: String,
    pub html_url: String,
}

/// One comment of a thread, as GraphQL serves it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[allow(missing_docs)]
pub struct ThreadComment {
    /// The REST id (`databaseId`), which the reply endpoint takes.
    #[serde(rename = "databaseId")]
    pub id: Option<u64>,
    /// The author's login (`ghost` for a deleted account).
    #[serde(default = "ghost", deserialize_with = "login")]
    pub author: String,
    pub body: String,
}

/// A review thread (GraphQL `PullRequestReviewThread`): where it is, whether it is resolved,
/// and what was said in it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[allow(missing_docs)]
pub struct ReviewThread {
    /// GraphQL node id, which `resolveReviewThread` takes.
    #[serde(rename = "id")]
    pub node_id: String,
    /// Resolved by someone.
    #[serde(rename = "isResolved")]
    pub resolved: bool,
    /// The line it was left on has changed since.
    #[serde(rename = "isOutdated", default)]
    pub outdated: bool,
    pub path: String,
    /// The line (null once outdated).
    pub line: Option<u64>,
    #[serde(rename = "diffSide")]
    pub side: Side,
    /// Its comments, oldest first; the first one opened the thread.
    #[serde(deserialize_with = "nodes")]
    pub comments: Vec<ThreadComment>,
}

/// The `nodes` of a GraphQL connection read without its page (one page of 100 comments).
fn nodes<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(gql::Connection::deserialize(d)?.nodes)
}

/// GraphQL shapes of the thread query and the mutation.
mod gql {
    use serde::Deserialize;

    use super::ReviewThread;

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
        pub review_threads: Connection<ReviewThread>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Connection<T> {
        #[serde(default)]
        pub page_info: PageInfo,
        pub nodes: Vec<T>,
    }

    #[derive(Debug, Default, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct PageInfo {
        pub has_next_page: bool,
        pub end_cursor: Option<String>,
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
        self.pages(
            &format!("/pulls/{number}/reviews"),
            MAX_PAGES,
            &format!("listing the reviews of pull request #{number}"),
        )
    }

    /// Every inline review comment of pull request `number`, replies included, oldest first.
    pub fn list_review_comments(&self, number: PrNumber) -> Result<Vec<ReviewComment>> {
        self.pages(
            &format!("/pulls/{number}/comments?sort=created&direction=asc"),
            MAX_PAGES,
            &format!("listing the review comments of pull request #{number}"),
        )
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
        self.post_checked::<ReviewComment, _>(
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
            out.extend(page.nodes);
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
            _ => Err(odd_answer(
                &self.target.graphql_url,
                None,
                format!(
                    "GitHub GraphQL resolveReviewThread on {thread_id} did not report the thread resolved"
                ),
            )),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::github::models::decode;

    #[test]
    fn reviews_and_comments_read_as_github_documents_them() {
        let review: Review = decode(
            br#"{"id": 80, "user": null, "body": null, "state": "CHANGES_REQUESTED", "html_url": "h", "submitted_at": "2019-11-17T17:43:43Z"}"#,
        )
        .unwrap();
        assert_eq!(review.author, "ghost");
        assert_eq!(review.state, ReviewState::ChangesRequested);
        let e = decode::<Review>(br#"{"id": 80, "user": null, "state": "LGTM", "html_url": "h"}"#)
            .unwrap_err();
        assert!(e.starts_with("at `state`: unknown variant `LGTM`"), "{e}");
        let e =
            decode::<ReviewComment>(br#"{"id": 10, "path": "a.rs", "body": "b", "user": null}"#)
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
