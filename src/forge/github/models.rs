//! GitHub's answers as typed structs, each read through `serde_path_to_error` so that an answer
//! lacking a field the pipeline needs is refused naming that field (`workflow_runs[3].id`),
//! instead of the field becoming `""` or `0`.
//!
//! Only the fields the pipeline reads are declared; everything else GitHub sends is ignored, so
//! a field GitHub adds cannot break a run. A field is `Option` exactly when GitHub documents it
//! as nullable or optional (REST reference, "Response schema"); a required field is required
//! here too. Modelled on octocrab's `models.rs` and release-plz's `forge.rs`.

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

use crate::types::ids::{IssueNumber, PrNumber, RunId};

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
    pub(crate) login: String,
    /// `User`, `Bot` or `Organization`.
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
}

/// The author of a comment or review from its `user`: the login, or `ghost` when `user` is
/// `null` or absent (a deleted account), as GitHub shows it.
pub(crate) fn login<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<User>::deserialize(d)?.map_or_else(ghost, |u| u.login))
}

/// The login GitHub shows for a deleted account.
pub(crate) fn ghost() -> String {
    "ghost".to_string()
}

/// A nullable field read as its type's default when `null`.
pub(crate) fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A label: an object in REST and event payloads, a plain name in some older payloads.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
#[allow(missing_docs)]
pub enum Label {
    /// `{"name": …}`.
    Object { name: String },
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
    pub(crate) number: IssueNumber,
    pub(crate) title: String,
    pub(crate) body: Option<String>,
    pub(crate) html_url: Option<String>,
    #[serde(default)]
    pub(crate) labels: Vec<Label>,
    /// Present (an object) when the issue is a pull request.
    pub(crate) pull_request: Option<serde_json::Value>,
}

/// One end of a pull request.
#[derive(Debug, Clone, Deserialize)]
pub struct Branch {
    #[serde(rename = "ref")]
    pub(crate) name: String,
}

/// A pull request (REST "pull-request" and "pull-request-simple").
#[derive(Debug, Clone, Deserialize)]
pub struct Pull {
    pub(crate) number: PrNumber,
    pub(crate) node_id: String,
    pub(crate) html_url: String,
    /// Optional in GitHub's schema: absent means ready.
    pub(crate) draft: Option<bool>,
    pub(crate) body: Option<String>,
    pub(crate) head: Branch,
}

/// The answer of "Get repository permissions for a user".
#[derive(Debug, Clone, Deserialize)]
pub struct CollaboratorPermission {
    pub(crate) permission: super::AccessLevel,
    /// The precise role; absent on older GitHub Enterprise Server.
    pub(crate) role_name: Option<String>,
}

/// A workflow run (REST "workflow-run").
#[derive(Debug, Clone, Deserialize)]
pub struct Run {
    pub(crate) id: RunId,
    /// The event that started it.
    pub(crate) event: String,
    /// The workflow's `run-name`.
    pub(crate) display_title: String,
    /// Nullable in GitHub's schema.
    pub(crate) status: Option<String>,
    pub(crate) conclusion: Option<String>,
    /// Its workflow file (`.github/workflows/x.yml`, maybe with `@ref`).
    pub(crate) path: Option<String>,
    pub(crate) html_url: String,
    pub(crate) created_at: DateTime<Utc>,
}

/// "List workflow runs for a workflow".
#[derive(Debug, Clone, Deserialize)]
pub struct Runs {
    pub(crate) workflow_runs: Vec<Run>,
}

/// The answer of a dispatch with `return_run_details: true` (200).
#[derive(Debug, Clone, Deserialize)]
pub struct DispatchDetails {
    pub(crate) workflow_run_id: RunId,
    pub(crate) html_url: Option<String>,
}

/// An artifact of a run (REST "artifact").
#[derive(Debug, Clone, Deserialize)]
pub struct Artifact {
    pub(crate) id: u64,
    pub(crate) name: String,
    /// Whether it has expired (its bytes are gone).
    pub(crate) expired: bool,
}

/// "List workflow run artifacts".
#[derive(Debug, Clone, Deserialize)]
pub struct Artifacts {
    /// Artifacts of the run, on all pages.
    pub(crate) total_count: u64,
    pub(crate) artifacts: Vec<Artifact>,
}

/// A repository (REST "full-repository"), as far as `doctor --github` reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct Repository {
    /// The default branch (where label events find their workflow).
    pub(crate) default_branch: String,
    pub(crate) private: bool,
    /// What the token's user may do; absent for an anonymous read.
    pub(crate) permissions: Option<RepositoryPermissions>,
}

/// `permissions` of a repository: what the token's user may do.
#[derive(Debug, Clone, Deserialize)]
pub struct RepositoryPermissions {
    /// Write access.
    pub(crate) push: bool,
}

/// "Get default workflow permissions for a repository".
#[derive(Debug, Clone, Deserialize)]
pub struct WorkflowPermissions {
    /// `read` or `write`: what the workflow's `GITHUB_TOKEN` may do by default.
    pub(crate) default_workflow_permissions: String,
    /// "Allow GitHub Actions to create and approve pull requests".
    pub(crate) can_approve_pull_request_reviews: bool,
}

/// A package (REST "package"), as far as its visibility.
#[derive(Debug, Clone, Deserialize)]
pub struct Package {
    pub(crate) visibility: String,
}

/// One entry of `errors` in a REST error answer: an object with a `code`, or a plain string.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ErrorItem {
    /// `{"resource": …, "field": …, "code": "invalid", "message": …}`.
    Object {
        /// `missing`, `missing_field`, `invalid`, `already_exists`, `unprocessable`, `custom`.
        code: Option<String>,
        /// Set with `code: custom`.
        message: Option<String>,
    },
    /// A bare message.
    Text(String),
}

/// A REST error answer (`{"message": …, "errors": […], "documentation_url": …}`), or the
/// results service's Twirp error (`{"code": …, "msg": …}`). Every field is optional: an error
/// may come from a proxy in front of GitHub, and the status alone must still be reported.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ErrorBody {
    /// GitHub's message.
    pub message: Option<String>,
    /// Details, each with a code.
    pub errors: Vec<ErrorItem>,
    /// Twirp's error code.
    pub code: Option<String>,
    /// Twirp's message.
    pub msg: Option<String>,
}

/// A GraphQL answer: `data` (`null` when the query failed as a whole), or `errors`, or both.
#[derive(Debug, Clone, Deserialize)]
#[serde(bound = "T: DeserializeOwned")]
pub struct GraphqlReply<T> {
    pub(crate) data: Option<T>,
    #[serde(default)]
    pub(crate) errors: Vec<GraphqlError>,
}

/// One GraphQL error.
#[derive(Debug, Clone, Deserialize)]
pub struct GraphqlError {
    pub(crate) message: String,
    /// `FORBIDDEN`, `NOT_FOUND`, `RATE_LIMITED`, … when GitHub classifies it.
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
}

/// `query { viewer { login } }`.
#[derive(Debug, Clone, Deserialize)]
pub struct ViewerData {
    pub(crate) viewer: User,
}

/// The `pullRequest { number isDraft }` a draft/ready mutation returns.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DraftState {
    pub(crate) is_draft: bool,
}

/// The payload of a draft/ready mutation.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DraftPayload {
    pub(crate) pull_request: DraftState,
}

/// `data` of `markPullRequestReadyForReview` or `convertPullRequestToDraft`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DraftData {
    pub(crate) mark_pull_request_ready_for_review: Option<DraftPayload>,
    pub(crate) convert_pull_request_to_draft: Option<DraftPayload>,
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
        let e = decode::<super::super::Comment>(br#"{"id": "7", "user": null, "html_url": "h"}"#)
            .unwrap_err();
        assert!(e.starts_with("at `id`: invalid type: string"), "{e}");
        let ok = decode::<super::super::Comment>(br#"{"id": 7, "user": null, "html_url": "h"}"#)
            .unwrap();
        assert!(ok.author == "ghost" && ok.body.is_empty());
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
