//! What `doctor --github` reads of a repository before a chain can run, read-only: the
//! repository and the token's access to it, a file on a branch, a label, the Actions settings of
//! workflow permissions, and a container package's visibility.

use crate::error::Result;

use super::models::{Package, Repository, WorkflowPermissions};
use super::{GithubForge, Verb};

/// The repository as the token sees it, with the scopes of a classic token.
#[derive(Debug, Clone)]
pub struct RepositoryAccess {
    /// The repository.
    pub repository: Repository,
    /// A classic token's scopes (`X-OAuth-Scopes`); fine-grained and installation tokens send
    /// none.
    pub scopes: Option<String>,
}

/// Percent-encodes one path segment (a label name may hold spaces, `:` or `/`).
pub fn segment(s: &str) -> String {
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

impl GithubForge {
    /// The repository (`GET /repos/{o}/{r}`): its default branch, visibility and what the
    /// token's user may do, and the scopes of a classic token.
    pub fn repository(&self) -> Result<RepositoryAccess> {
        let what = "read the repository";
        let reply = self
            .send(Verb::Get, &self.repo_url(""), None, what, false)?
            .ok_or_else(|| self.odd_answer(format!("{what}: no answer")))?;
        Ok(RepositoryAccess {
            repository: self.decode(what, &reply)?,
            scopes: reply.header("x-oauth-scopes").map(str::to_string),
        })
    }

    /// Whether `path` exists on branch `git_ref` (`GET /contents/{path}?ref=…`).
    pub fn file_exists(&self, path: &str, git_ref: &str) -> Result<bool> {
        let route = format!(
            "/contents/{}?ref={}",
            path.split('/').map(segment).collect::<Vec<_>>().join("/"),
            segment(git_ref)
        );
        Ok(self
            .send(Verb::Get, &self.repo_url(&route), None, "read a file", true)?
            .is_some())
    }

    /// Whether the label `name` exists (`GET /labels/{name}`).
    pub fn label_exists(&self, name: &str) -> Result<bool> {
        let route = format!("/labels/{}", segment(name));
        Ok(self
            .send(
                Verb::Get,
                &self.repo_url(&route),
                None,
                "read a label",
                true,
            )?
            .is_some())
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
        let Some(reply) = self.send(Verb::Get, &url, None, what, true)? else {
            return Ok(None);
        };
        let package: Package = self.decode(what, &reply)?;
        Ok(Some(package.visibility))
    }
}
