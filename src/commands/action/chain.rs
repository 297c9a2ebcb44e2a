//! The chain on the forge: who may drive a run, what the issue's status comment says of the
//! chain's head, and the dispatches that hand the chain to its next job.

use std::collections::BTreeMap;

use super::env::ActionEnv;
use super::plan::{
    actor_of, bot_refusal, is_this_workflow, permission_refusal, run_title, unknown_command,
};
use super::say;
use crate::config::GithubConfig;
use crate::error::{Error, Result};
use crate::forge::github::event::{Actor, Trigger};
use crate::forge::github::{Comment, DispatchedRun, GithubForge};
use crate::report::status;
use crate::types::ids::{IssueNumber, PrNumber, RunId};

/// What the issue's status comment says of the chain.
#[derive(Debug, Default)]
pub(super) struct Head {
    /// The comment, if the issue has one this token wrote.
    pub(super) comment: Option<Comment>,
    /// The run holding the chain's newest checkpoint (a run of this workflow).
    pub(super) checkpoint: Option<RunId>,
    /// The run the chain recorded as next.
    pub(super) next: Option<RunId>,
}

/// The chain's side of the forge for one job.
pub(super) struct Chain<'a> {
    pub(super) env: &'a ActionEnv,
    pub(super) github: &'a GithubConfig,
    pub(super) forge: &'a GithubForge,
}

impl Chain<'_> {
    /// Why `actor` may not drive a run, if they may not.
    /// Bots are decided by the configuration alone; people by their access to the repository.
    pub(super) fn refusal(&self, actor: &Actor) -> Result<Option<String>> {
        if actor.is_bot {
            return Ok(bot_refusal(&self.github.allowed_bots, actor));
        }
        let p = self.forge.permission(&actor.login)?;
        Ok(permission_refusal(actor, &p))
    }

    /// Who may drive a run (write, maintain or admin; bots only when listed), and whether their
    /// command exists. Returns the reason to refuse, if any.
    pub(super) fn authorise(&self, trigger: &Trigger) -> Result<Option<String>> {
        if let Some(actor) = actor_of(trigger)
            && let Some(reason) = self.refusal(actor)?
        {
            return Ok(Some(reason));
        }
        Ok(unknown_command(trigger))
    }

    /// The reply to a refused job on issue (or pull request) `number`, once per run.
    pub(super) fn reply_refusal(&self, number: IssueNumber, reason: &str) -> Result<()> {
        let marker = format!("{} run={} -->", status::REFUSAL_MARKER, self.env.run_id);
        if self.forge.find_comment(number, &marker)?.is_none() {
            self.forge.create_comment(
                number,
                &format!("{marker}\nspec-orchestrate did not act: {reason}."),
            )?;
        }
        Ok(())
    }

    /// The issue's status comment (only one this token wrote counts) and the checkpoint it
    /// names — kept only if that run is a run of this workflow in this repository, so a marker
    /// copied or forged elsewhere steers nothing.
    pub(super) fn status_head(&self, issue: IssueNumber) -> Result<Head> {
        let comment = self.forge.find_comment(issue, status::MARKER)?;
        let Some(head) = comment
            .as_ref()
            .and_then(|c| status::parse_marker(&c.body))
            .and_then(|m| m.checkpoint)
        else {
            return Ok(Head {
                comment,
                ..Head::default()
            });
        };
        // This run is a run of this workflow; any other is asked of GitHub.
        if head != self.env.run_id {
            let path = self.forge.run_workflow_path(head)?;
            if !is_this_workflow(path.as_deref(), self.env.workflow_file.as_deref()) {
                say(format!(
                    "the status comment names run {head}, which is not a run of this workflow; ignoring it"
                ));
                return Ok(Head {
                    comment,
                    ..Head::default()
                });
            }
        }
        let next = comment.as_ref().and_then(|c| status::parse_next(&c.body));
        Ok(Head {
            comment,
            checkpoint: Some(head),
            next,
        })
    }

    /// Dispatches the next job; returns its run id (`None` when the forge did not say and the
    /// run could not be found by listing). A re-run (attempt 2 and up) first looks for the run
    /// an earlier attempt dispatched before its runner was lost (GitHub had accepted the
    /// dispatch, the status comment never got its `next=`) and adopts it, so a run never has
    /// two successors.
    pub(super) fn dispatch_next(&self, issue: IssueNumber) -> Result<Option<RunId>> {
        if self.env.run_attempt >= 2
            && let Some(file) = &self.env.workflow_file
            && let Some(found) =
                self.forge
                    .find_successor(file, &run_title(issue), self.env.run_id)?
            && let Some(id) = found.run_id
        {
            say(format!(
                "run {id} was dispatched by an earlier attempt of run {} and is queued or running; it continues the chain (not dispatching a second successor)",
                self.env.run_id
            ));
            return Ok(Some(id));
        }
        self.dispatch_from(issue, self.env.run_id)
    }

    /// Dispatches a job of `issue` continuing the checkpoint of run `parent`; returns its run id
    /// when known.
    pub(super) fn dispatch_from(&self, issue: IssueNumber, parent: RunId) -> Result<Option<RunId>> {
        // GitHub stamps `created_at` by its clock, in whole seconds: look a little earlier.
        let since = chrono::Utc::now() - chrono::Duration::seconds(10);
        let mut dispatched = self.dispatch(issue, parent)?;
        if dispatched.run_id.is_none()
            && let Some(file) = &self.env.workflow_file
            && let Some(found) =
                self.forge
                    .find_dispatched_run(file, since, &run_title(issue), self.env.run_id)?
        {
            dispatched = found;
        }
        let next_run = dispatched.run_id;
        say(match dispatched.run_id {
            Some(id) => format!(
                "dispatched the next run {id}{}",
                dispatched
                    .html_url
                    .map(|u| format!(": {u}"))
                    .unwrap_or_default()
            ),
            None => format!(
                "dispatched the next run; GitHub did not say which, and no run titled \"{}\" was listed",
                run_title(issue)
            ),
        });
        Ok(next_run)
    }

    /// Dispatches a job of `issue` continuing the checkpoint of run `parent`, as GitHub
    /// answered.
    pub(super) fn dispatch(&self, issue: IssueNumber, parent: RunId) -> Result<DispatchedRun> {
        self.dispatch_with(issue, parent.to_string(), None, "the next run")
    }

    /// Dispatches a job of `issue` with the inputs `parent_run` (empty: the newest checkpoint)
    /// and `review`, on `base` (else on this run's own ref); `what` names the job in the
    /// refusal when the runner did not say which workflow runs.
    pub(super) fn dispatch_with(
        &self,
        issue: IssueNumber,
        parent_run: String,
        review: Option<(PrNumber, Option<&str>)>,
        what: &str,
    ) -> Result<DispatchedRun> {
        let (Some(file), Some(own_ref)) = (&self.env.workflow_file, &self.env.workflow_ref) else {
            return Err(Error::usage(format!(
                "GITHUB_WORKFLOW_REF is not set, so {what} cannot be dispatched; the runner sets it for every job"
            ))
            .with_help("run spec-orchestrate as a step of a workflow job (see examples/workflow.yml), and do not clear GITHUB_WORKFLOW_REF in its env"));
        };
        let mut inputs = BTreeMap::from([
            ("issue".to_string(), issue.to_string()),
            ("parent_run".to_string(), parent_run),
        ]);
        let mut git_ref = own_ref.clone();
        if let Some((pr, base)) = review {
            inputs.insert("review".to_string(), pr.to_string());
            git_ref = base.map_or(git_ref, |b| format!("refs/heads/{b}"));
        }
        let title = run_title(issue);
        self.forge
            .dispatch(file, &git_ref, &inputs, &title, self.env.run_id)
    }
}
