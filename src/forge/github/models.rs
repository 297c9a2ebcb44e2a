//! GitHub's answers as typed structs, each read through `serde_path_to_error` so that an answer
//! lacking a field the pipeline needs is refused naming that field (`workflow_runs[3].id`),
//! instead of the field becoming `""` or `0`.
//!
//! Only the fields the pipeline reads are declared; everything else GitHub sends is ignored, so
//! a field GitHub adds cannot break a run. A field is `Option` exactly when GitHub documents it
//! as nullable or optional (REST reference, "Response schema"); a required field is required
//! here too. Modelled on octocrab's `models.rs` and release-plz's `forge.rs`.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::types::ids::{CommentId, IssueNumber, PrNumber, RunId};

/// Reads `body` as `T`. The error names the JSON path of the field that is missing or of
/// another type, and what serde expected there.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| describe(&e))
}

/// Reads an already parsed JSON value (the Actions event payload) as `T`, with the same
/// located errors as [`decode`].
pub fn decode_value<T: DeserializeOwned>(value: &serde_json::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| describe(&e))
}

fn describe<E: std::fmt::Display>(e: &serde_path_to_error::Error<E>) -> String {
    let path = e.path().to_string();
    if path == "." {
        e.inner().to_string()
    } else {
        format!("at `{path}`: {}", e.inner())
    }
}

/// A user or bot as REST and event payloads embed it (`simple-user`).
#[derive(Debug, Clone, Deserialize)]
pub struct User {
    /// Login.
    pub login: String,
    /// `User`, `Bot` or `Organization`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
}

/// An issue comment (REST "issue-comment"; `user` is nullable for a deleted account).
#[derive(Debug, Clone, Deserialize)]
pub struct IssueComment {
    /// Comment id.
    pub id: CommentId,
    /// Markdown body (optional in GitHub's schema).
    #[serde(default)]
    pub body: Option<String>,
    /// The author; `null` when the account was deleted.
    pub user: Option<User>,
    /// Link to the comment.
    pub html_url: String,
}

/// A label: an object in REST and event payloads, a plain name in some older payloads.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Label {
    /// `{"name": …}`.
    Object {
        /// The label's name.
        name: String,
    },
    /// `"name"`.
    Name(String),
}

impl Label {
    /// The label's name.
    pub fn name(&self) -> &str {
        match self {
            Label::Object { name } | Label::Name(name) => name,
        }
    }
}

/// An issue (REST "issue", and `issue` of the `issues` and `issue_comment` events).
#[derive(Debug, Clone, Deserialize)]
pub struct Issue {
    /// Issue number.
    pub number: IssueNumber,
    /// Title.
    pub title: String,
    /// Body; `null` when the issue has none.
    #[serde(default)]
    pub body: Option<String>,
    /// Link for people.
    #[serde(default)]
    pub html_url: Option<String>,
    /// Labels.
    #[serde(default)]
    pub labels: Vec<Label>,
    /// Present (an object) when the issue is a pull request.
    #[serde(default)]
    pub pull_request: Option<serde_json::Value>,
}

/// One end of a pull request.
#[derive(Debug, Clone, Deserialize)]
pub struct Branch {
    /// The branch name.
    #[serde(rename = "ref")]
    pub name: String,
}

/// A pull request (REST "pull-request" and "pull-request-simple").
#[derive(Debug, Clone, Deserialize)]
pub struct Pull {
    /// PR number.
    pub number: PrNumber,
    /// GraphQL node id.
    pub node_id: String,
    /// Link for people.
    pub html_url: String,
    /// Draft or ready (optional in GitHub's schema: absent means ready).
    #[serde(default)]
    pub draft: Option<bool>,
    /// Body; `null` when empty.
    #[serde(default)]
    pub body: Option<String>,
    /// The head branch.
    pub head: Branch,
}

/// The answer of "Get repository permissions for a user".
#[derive(Debug, Clone, Deserialize)]
pub struct CollaboratorPermission {
    /// `admin`, `write`, `read` or `none`.
    pub permission: super::AccessLevel,
    /// The precise role; absent on older GitHub Enterprise Server.
    #[serde(default)]
    pub role_name: Option<String>,
}

/// A workflow run (REST "workflow-run").
#[derive(Debug, Clone, Deserialize)]
pub struct Run {
    /// Run id.
    pub id: RunId,
    /// The event that started it.
    pub event: String,
    /// Its title (the workflow's `run-name`).
    pub display_title: String,
    /// `queued`, `in_progress`, `completed`, … (nullable in GitHub's schema).
    pub status: Option<String>,
    /// `success`, `failure`, … once completed.
    pub conclusion: Option<String>,
    /// Its workflow file (`.github/workflows/x.yml`, maybe with `@ref`).
    #[serde(default)]
    pub path: Option<String>,
    /// Link for people.
    pub html_url: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

/// "List workflow runs for a workflow".
#[derive(Debug, Clone, Deserialize)]
pub struct Runs {
    /// Runs matching the query, on all pages.
    pub total_count: u64,
    /// This page's runs.
    pub workflow_runs: Vec<Run>,
}

/// The answer of a dispatch with `return_run_details: true` (200).
#[derive(Debug, Clone, Deserialize)]
pub struct DispatchDetails {
    /// The new run's id.
    pub workflow_run_id: RunId,
    /// Link for people.
    #[serde(default)]
    pub html_url: Option<String>,
}

/// An artifact of a run (REST "artifact").
#[derive(Debug, Clone, Deserialize)]
pub struct Artifact {
    /// Artifact id.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Whether it has expired (its bytes are gone).
    pub expired: bool,
}

/// "List workflow run artifacts".
#[derive(Debug, Clone, Deserialize)]
pub struct Artifacts {
    /// Artifacts of the run, on all pages.
    pub total_count: u64,
    /// This page's artifacts.
    pub artifacts: Vec<Artifact>,
}

/// A repository (REST "full-repository"), as far as `doctor --github` reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct Repository {
    /// The default branch (where label events find their workflow).
    pub default_branch: String,
    /// Whether it is private.
    pub private: bool,
    /// What the token's user may do; absent for an anonymous read.
    #[serde(default)]
    pub permissions: Option<RepositoryPermissions>,
}

/// `permissions` of a repository: what the token's user may do.
#[derive(Debug, Clone, Deserialize)]
pub struct RepositoryPermissions {
    /// Write access.
    pub push: bool,
}

/// "Get default workflow permissions for a repository".
#[derive(Debug, Clone, Deserialize)]
pub struct WorkflowPermissions {
    /// `read` or `write`: what the workflow's `GITHUB_TOKEN` may do by default.
    pub default_workflow_permissions: String,
    /// "Allow GitHub Actions to create and approve pull requests".
    pub can_approve_pull_request_reviews: bool,
}

/// A package (REST "package"), as far as its visibility.
#[derive(Debug, Clone, Deserialize)]
pub struct Package {
    /// `public`, `private` or `internal`.
    pub visibility: String,
}

/// One entry of `errors` in a REST error answer: an object with a `code`, or a plain string.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ErrorItem {
    /// `{"resource": …, "field": …, "code": "invalid", "message": …}`.
    Object {
        /// `missing`, `missing_field`, `invalid`, `already_exists`, `unprocessable`, `custom`.
        #[serde(default)]
        code: Option<String>,
        /// Set with `code: custom`.
        #[serde(default)]
        message: Option<String>,
    },
    /// A bare message.
    Text(String),
}

/// A REST error answer (`{"message": …, "errors": […], "documentation_url": …}`), or the
/// results service's Twirp error (`{"code": …, "msg": …}`). Every field is optional: an error
/// may come from a proxy in front of GitHub, and the status alone must still be reported.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ErrorBody {
    /// GitHub's message.
    #[serde(default)]
    pub message: Option<String>,
    /// Details, each with a code.
    #[serde(default)]
    pub errors: Vec<ErrorItem>,
    /// Twirp's error code.
    #[serde(default)]
    pub code: Option<String>,
    /// Twirp's message.
    #[serde(default)]
    pub msg: Option<String>,
}

/// A GraphQL answer: `data`, or `errors`, or both.
#[derive(Debug, Clone, Deserialize)]
#[serde(bound = "T: DeserializeOwned")]
pub struct GraphqlReply<T> {
    /// The result (`null` when the query failed as a whole).
    #[serde(default = "none")]
    pub data: Option<T>,
    /// What went wrong.
    #[serde(default)]
    pub errors: Vec<GraphqlError>,
}

fn none<T>() -> Option<T> {
    None
}

/// One GraphQL error.
#[derive(Debug, Clone, Deserialize)]
pub struct GraphqlError {
    /// What went wrong.
    pub message: String,
    /// `FORBIDDEN`, `NOT_FOUND`, `RATE_LIMITED`, … when GitHub classifies it.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
}

/// `query { viewer { login } }`.
#[derive(Debug, Clone, Deserialize)]
pub struct ViewerData {
    /// The token's identity.
    pub viewer: User,
}

/// The `pullRequest { number isDraft }` a draft/ready mutation returns.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DraftState {
    /// PR number.
    pub number: PrNumber,
    /// Whether it is a draft now.
    pub is_draft: bool,
}

/// The payload of a draft/ready mutation.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DraftPayload {
    /// The pull request after the change.
    pub pull_request: DraftState,
}

/// `data` of `markPullRequestReadyForReview` or `convertPullRequestToDraft`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DraftData {
    /// Set by `markPullRequestReadyForReview`.
    #[serde(default)]
    pub mark_pull_request_ready_for_review: Option<DraftPayload>,
    /// Set by `convertPullRequestToDraft`.
    #[serde(default)]
    pub convert_pull_request_to_draft: Option<DraftPayload>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_field_is_named_by_its_path() {
        let e = decode::<Runs>(
            br#"{"total_count": 1, "workflow_runs": [{"event": "push", "display_title": "t", "status": null, "conclusion": null, "html_url": "h", "created_at": "2026-01-01T00:00:00Z"}]}"#,
        )
        .unwrap_err();
        assert!(e.starts_with("at `workflow_runs[0]`"), "{e}");
        assert!(e.contains("missing field `id`"), "{e}");
        let e =
            decode::<IssueComment>(br#"{"id": "7", "user": null, "html_url": "h"}"#).unwrap_err();
        assert!(e.starts_with("at `id`: invalid type: string"), "{e}");
        let ok = decode::<IssueComment>(br#"{"id": 7, "user": null, "html_url": "h"}"#).unwrap();
        assert!(ok.user.is_none() && ok.body.is_none());
    }

    #[test]
    fn error_bodies_keep_their_codes_whatever_their_shape() {
        let rest: ErrorBody = decode(
            br#"{"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists"}, "plain"], "documentation_url": "d"}"#,
        )
        .unwrap();
        assert_eq!(rest.message.as_deref(), Some("Validation Failed"));
        assert!(
            matches!(&rest.errors[0], ErrorItem::Object { code: Some(c), .. } if c == "custom")
        );
        assert!(matches!(&rest.errors[1], ErrorItem::Text(t) if t == "plain"));
        let twirp: ErrorBody = decode(br#"{"code": "not_found", "msg": "no upload"}"#).unwrap();
        assert_eq!(twirp.code.as_deref(), Some("not_found"));
        let graphql: GraphqlReply<ViewerData> = decode(
            br#"{"data": null, "errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded"}]}"#,
        )
        .unwrap();
        assert!(graphql.data.is_none());
        assert_eq!(graphql.errors[0].kind.as_deref(), Some("RATE_LIMITED"));
    }
}
