//! Issues and their comments: the issue read at intake, the status comment found by its marker
//! and edited (one per marker, ever), and the comments a person posted between jobs.

use crate::error::Result;
use crate::state::IssueRef;
use crate::types::ids::{CommentId, IssueNumber};

use super::models;
use super::{Comment, GithubForge, encode_query};

impl GithubForge {
    /// Reads issue `number`: title, body, labels, URL.
    pub fn read_issue(&self, number: IssueNumber) -> Result<IssueRef> {
        let issue: models::Issue = self.get(
            &format!("/issues/{number}"),
            &format!("reading issue #{number}"),
        )?;
        if issue.title.trim().is_empty() {
            return Err(self.odd_answer(format!(
                "GitHub answered for issue #{number} of {} with an empty title",
                self.target.full_name()
            )));
        }
        Ok(issue_ref(issue))
    }

    /// Every comment of issue `number`, oldest first (all pages): listed once per client, then
    /// as this client's own writes changed it (a job's view of its issue).
    pub fn list_comments(&self, number: IssueNumber) -> Result<Vec<Comment>> {
        if let Some(known) = self.known_comments().get(&number) {
            return Ok(known.clone());
        }
        self.fetch_comments(number)
    }

    /// [`GithubForge::list_comments`] read from GitHub now, whatever was listed before.
    pub fn fetch_comments(&self, number: IssueNumber) -> Result<Vec<Comment>> {
        let listed = self.pages(
            &format!("/issues/{number}/comments"),
            50,
            &format!("listing the comments of issue #{number}"),
        )?;
        self.known_comments().insert(number, listed.clone());
        Ok(listed)
    }

    /// The comment listings kept so far (a poisoned lock still holds a consistent map: every
    /// change to it is one insert or one assignment).
    fn known_comments(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<IssueNumber, Vec<Comment>>> {
        self.comments.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `comment` of issue `number` (new or edited) in the listing, when one is kept.
    fn remember(&self, number: Option<IssueNumber>, comment: &Comment) {
        let mut known = self.known_comments();
        for (issue, list) in known.iter_mut() {
            if let Some(old) = list.iter_mut().find(|c| c.id == comment.id) {
                *old = comment.clone();
                return;
            }
            if number == Some(*issue) {
                list.push(comment.clone());
                return;
            }
        }
    }

    /// The first comment of issue `number` whose body starts with `marker` — written by this
    /// token's identity once it is learnt, as anyone can write a marker.
    pub fn find_comment(&self, number: IssueNumber, marker: &str) -> Result<Option<Comment>> {
        Ok(self.list_comments(number)?.into_iter().find(|c| {
            c.body.trim_start().starts_with(marker)
                && self.identity().is_none_or(|me| c.author == me)
        }))
    }

    /// The issue comments of the whole repository updated since `since`, newest first
    /// (`GET /repos/{o}/{r}/issues/comments?sort=updated&direction=desc&since=…`, GitHub REST
    /// "List issue comments for a repository"), at most 1000.
    pub fn list_repo_comments(&self, since: chrono::DateTime<chrono::Utc>) -> Result<Vec<Comment>> {
        let since = since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        self.pages(
            &format!(
                "/issues/comments?sort=updated&direction=desc&since={}",
                encode_query(&since)
            ),
            10,
            &format!("listing the issue comments updated since {since}"),
        )
    }

    /// Posts a new comment. After a failure that leaves it unknown whether the comment was
    /// made, the issue's comments are searched for it (same body, by this token's identity
    /// once learnt) and the one found is kept, so a lost answer never posts it twice.
    pub fn create_comment(&self, number: IssueNumber, body: &str) -> Result<Comment> {
        let what = format!("commenting on issue #{number}");
        let made = self.post_checked::<Comment, _>(
            &what,
            &format!("/issues/{number}/comments"),
            &serde_json::json!({ "body": body }),
            || {
                Ok(self
                    .fetch_comments(number)?
                    .into_iter()
                    .rfind(|c| c.body == body && self.identity().is_none_or(|me| c.author == me)))
            },
        )?;
        self.remember(Some(number), &made);
        Ok(made)
    }

    /// Edits comment `id`; `None` when it no longer exists.
    pub fn edit_comment(&self, id: CommentId, body: &str) -> Result<Option<Comment>> {
        let what = format!("editing comment {id}");
        let edited = self.write(
            reqwest::Method::PATCH,
            &format!("/issues/comments/{id}"),
            &serde_json::json!({ "body": body }),
            &what,
            true,
        )?;
        match edited {
            Some(reply) => {
                let comment: Comment = self.decode(&what, &reply)?;
                self.remember(None, &comment);
                Ok(Some(comment))
            }
            None => Ok(None),
        }
    }

    /// Edits the comment of issue `number` that starts with `marker` (trying `known_id` first,
    /// then a search), or posts it when there is none: one comment per marker, ever.
    pub fn upsert_comment(
        &self,
        number: IssueNumber,
        marker: &str,
        body: &str,
        known_id: Option<CommentId>,
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
}

/// The issue as the pipeline records it.
pub(super) fn issue_ref(issue: models::Issue) -> IssueRef {
    IssueRef {
        number: Some(issue.number),
        title: issue.title,
        url: issue.html_url,
        body: issue.body.unwrap_or_default(),
        labels: issue.labels.iter().map(|l| l.name().to_string()).collect(),
    }
}
