//! What `doctor --github` reads of a repository before a chain can run, read-only: the
//! repository and the token's access to it, a file on a branch, a label, the Actions settings of
//! workflow permissions, and a container package's visibility.

use reqwest::Method;

use crate::error::Result;

use super::models::{Package, Repository, WorkflowPermissions};
use super::{GithubForge, encode_query, segment};

/// The repository as the token sees it, with the scopes of a classic token.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct RepositoryAccess {
    pub repository: Repository,
    /// A classic token's scopes (`X-OAuth-Scopes`); fine-grained and installation tokens send
    /// none.
    pub scopes: Option<String>,
}

impl GithubForge {
    /// The repository (`GET /repos/{o}/{r}`): its default branch, visibility and what the
    /// token's user may do, and the scopes of a classic token.
    pub fn repository(&self) -> Result<RepositoryAccess> {
        let what = "read the repository";
        let reply = self
            .send(Method::GET, &self.repo_url(""), None, what, false)?
            .ok_or_else(|| self.odd_answer(format!("{what}: no answer")))?;
        Ok(RepositoryAccess {
            repository: self.decode(what, &reply)?,
            scopes: reply.header("x-oauth-scopes").map(str::to_string),
        })
    }

    /// Whether `path` exists on branch `git_ref` (`GET /contents/{path}?ref=…`).
    pub fn file_exists(&self, path: &str, git_ref: &str) -> Result<bool> {
        let route = format!("/contents/{}?ref={}", encode_query(path), segment(git_ref));
        self.exists(&route, "read a file")
    }

    /// Whether the label `name` exists (`GET /labels/{name}`).
    pub fn label_exists(&self, name: &str) -> Result<bool> {
        self.exists(&format!("/labels/{}", segment(name)), "read a label")
    }

    fn exists(&self, route: &str, what: &str) -> Result<bool> {
        let url = self.repo_url(route);
        Ok(self.send(Method::GET, &url, None, what, true)?.is_some())
    }

    /// The Actions settings of workflow permissions (`GET /actions/permissions/workflow`),
    /// readable with admin access only.
    pub fn workflow_permissions(&self) -> Result<WorkflowPermissions> {
        self.get(
            "/actions/permissions/workflow",
            "read the Actions workflow permissions",
        )
    }

    /// The visibility of the container package `name` of `owner`, an organisation's when
    /// `org`, else a user's (`GET /orgs|users/{owner}/packages/container/{name}`); `None` when
    /// there is no such package.
    pub fn package_visibility(&self, org: bool, owner: &str, name: &str) -> Result<Option<String>> {
        let what = "read the container package";
        let url = format!(
            "{}/{}/{}/packages/container/{}",
            self.target.api_url.trim_end_matches('/'),
            if org { "orgs" } else { "users" },
            segment(owner),
            segment(name)
        );
        let Some(reply) = self.send(Method::GET, &url, None, what, true)? else {
            return Ok(None);
        };
        let package: Package = self.decode(what, &reply)?;
        Ok(Some(package.visibility))
    }
}
