//! The pull request of a run (found by its head branch, so a re-run never opens a second one),
//! draft and ready through GraphQL, and the token's identity.

use crate::error::forge::{ForgeCause, ForgeFailure};
use crate::error::{Error, Result};

use super::answer::odd_answer;
use super::models::{self, Pull};
use super::{GithubForge, PullRequest, encode_query};
use crate::types::ids::PrNumber;

impl GithubForge {
    /// Learns the login this token acts as, from GraphQL's `viewer`: it answers for a personal
    /// access token, a GitHub App installation token (`<app>[bot]`) and the workflow's
    /// `GITHUB_TOKEN` (`github-actions[bot]`), where REST `GET /user` refuses installation
    /// tokens and `GET /app` needs the App's own JWT.
    pub fn learn_identity(&mut self) -> Result<String> {
        let data: models::ViewerData = self.graphql(
            "reading the token's identity",
            "query { viewer { login } }",
            serde_json::json!({}),
        )?;
        let login = data.viewer.login;
        if login.is_empty() {
            return Err(Error::forge(
                &self.target.graphql_url,
                "GitHub GraphQL answered `viewer` without a login".to_string(),
            )
            .with_failure(ForgeFailure::of(ForgeCause::OddAnswer)));
        }
        self.me = Some(login.clone());
        Ok(login)
    }

    /// The login the token acts as, once learnt.
    pub fn identity(&self) -> Option<&str> {
        self.me.as_deref()
    }

    /// The open pull request whose head is `branch` of this repository.
    pub fn find_pr(&self, branch: &str) -> Result<Option<PullRequest>> {
        let pulls: Vec<Pull> = self.get(
            &format!(
                "/pulls?head={}:{}&state=open&per_page=100",
                self.target.owner,
                encode_query(branch)
            ),
            &format!("looking for the pull request of {branch}"),
        )?;
        Ok(pulls
            .into_iter()
            .find(|p| p.head.name == branch)
            .map(PullRequest::from))
    }

    /// Opens a pull request. After a failure that leaves it unknown whether it was opened, the
    /// open pull request of `head` is looked up and kept, so a lost answer never opens two.
    pub fn create_pr(
        &self,
        title: &str,
        head: &str,
        base: &str,
        body: &str,
        draft: bool,
    ) -> Result<PullRequest> {
        let what = format!("opening a pull request from {head} into {base}");
        self.post_checked::<Pull, _>(
            &what,
            "/pulls",
            &serde_json::json!({
                "title": title, "head": head, "base": base, "body": body, "draft": draft,
            }),
            || self.find_pr(head),
        )
    }

    /// Replaces a pull request's title and body.
    pub fn update_pr(&self, number: PrNumber, title: &str, body: &str) -> Result<PullRequest> {
        let updated: Pull = self.write_as(
            reqwest::Method::PATCH,
            &format!("/pulls/{number}"),
            &serde_json::json!({ "title": title, "body": body }),
            &format!("updating pull request #{number}"),
        )?;
        Ok(updated.into())
    }

    /// Turns a pull request draft or ready. Only GraphQL can make a draft ready
    /// (`markPullRequestReadyForReview`); the way back is `convertPullRequestToDraft`.
    pub fn set_draft(&self, pr: &PullRequest, draft: bool) -> Result<()> {
        if pr.draft == draft {
            return Ok(());
        }
        let mutation = if draft {
            "convertPullRequestToDraft"
        } else {
            "markPullRequestReadyForReview"
        };
        let query = format!(
            "mutation($id: ID!) {{ {mutation}(input: {{pullRequestId: $id}}) {{ pullRequest {{ number isDraft }} }} }}"
        );
        let data: models::DraftData = self.graphql(
            &format!("{mutation} on #{}", pr.number),
            &query,
            serde_json::json!({ "id": pr.node_id }),
        )?;
        let payload = if draft {
            data.convert_pull_request_to_draft
        } else {
            data.mark_pull_request_ready_for_review
        };
        match payload {
            Some(p) if p.pull_request.is_draft == draft => Ok(()),
            _ => Err(odd_answer(
                &self.target.graphql_url,
                None,
                format!(
                    "GitHub GraphQL {mutation} on #{} did not report isDraft={draft}",
                    pr.number
                ),
            )),
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
            Some(existing) if existing.body != body => {
                self.update_pr(existing.number, title, body)?
            }
            Some(existing) => existing,
            None => self.create_pr(title, head, base, body, draft)?,
        };
        if pr.draft != draft {
            self.set_draft(&pr, draft)?;
            pr.draft = draft;
        }
        Ok(pr)
    }
}
