//! Publishing and reporting: the work branch pushed with its lease, the pull request, the
//! checkpoint, the status comment, the next dispatch, the step outputs and the job summary.

use std::collections::BTreeMap;
use std::path::Path;

use super::Job;
use super::open::Lease;
use super::plan::{
    AfterJob, PhaseEnd, Ran, ci_note, exit_of, headline, pr_url_of, run_record, run_title,
    step_outputs,
};
use super::runner;
use crate::commands::Exit;
use crate::error::forge::ForgeCause;
use crate::error::{Error, ErrorKind, Result};
use crate::git::Git;
use crate::report::status::{self, View};
use crate::state::job::Effect;
use crate::state::store::StateStore;
use crate::state::{PrRef, State};
use crate::store::{Store, archive};
use crate::types::Phase;
use crate::types::kinds::JobOutcome;
use crate::util;

/// Why the forge refused to open the pull request, where the job decides something on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PrRefusal {
    /// GitHub's 403 when the repository setting "Allow GitHub Actions to create and approve pull
    /// requests" is off and the token is the workflow's own: the run waits for the setting.
    ActionsMayNotCreatePrs,
}

/// The classification of a failed pull-request call, from GitHub's answer as data (the cause
/// `forge/github/answer.rs` read from the status and GitHub's documented refusal), never from
/// the error's text; any other failure is no refusal and stays an error.
pub(super) fn pr_refusal(e: &Error) -> Option<PrRefusal> {
    e.forge_failure()
        .filter(|f| f.cause == ForgeCause::ActionsMayNotCreatePullRequests)
        .map(|_| PrRefusal::ActionsMayNotCreatePrs)
}

/// The run waits at `pr` for the repository setting (or another token): the status comment and
/// the job summary say which setting, and `continue` runs the `pr` phase again.
pub(super) fn wait_for_pr_setting(state: &mut State, server_url: &str, repository: &str) {
    let message = format!(
        "GitHub refused to open the pull request: the repository setting \"Allow GitHub Actions to create and approve pull requests\" is off ({}/{repository}/settings/actions, Workflow permissions). Turn it on, or pass a GitHub App installation token or a fine-grained personal access token as `github_token`; then comment `/spec-orchestrate continue`",
        server_url.trim_end_matches('/')
    );
    crate::events::emit(crate::events::Event::Job {
        message: message.clone(),
    });
    crate::machine::answer::wait_for_pr_permission(state, message);
}

impl Job<'_> {
    /// Step: publish what the phase left — commit (never a half-done phase), push, pull
    /// request.
    pub(super) fn publish(
        &self,
        job: &Ran,
        dir: &Path,
        state: &mut State,
        lease: Lease,
    ) -> Result<()> {
        let (ran, end) = (job.phase, job.end);
        if end != PhaseEnd::Budget && job.halt.is_none() {
            self.commit_phase(state, ran)?;
        }
        self.push_branch(state, lease)?;
        // The `pr` phase's body (unless it was published as soon as `pr` ended), or the draft a
        // budget or spend-cap stop landed.
        if !job.pr_published
            && (ran == Phase::Pr || state.stop.is_some())
            && end != PhaseEnd::Budget
            && job.halt.is_none()
        {
            self.publish_pr(dir, state)?;
        }
        Ok(())
    }

    /// Pushes the work branch (if the run has one yet) to `origin` with `lease`, what this job
    /// saw there (looked up now when the job restored nothing), and records the push.
    pub(super) fn push_branch(&self, state: &mut State, lease: Lease) -> Result<()> {
        let Some(branch) = state.branch.clone() else {
            return Ok(());
        };
        let git = Git::new(&self.repo);
        let sha = git.run(&["rev-parse", &format!("refs/heads/{}", branch.name)])?;
        let seen = match lease {
            Lease::At(sha) => Some(sha),
            Lease::Absent => None,
            Lease::Unknown => self.remote.remote_head(&branch.name)?,
        };
        self.remote.push(&branch.name, &sha, seen.as_deref())?;
        state.job.record(Effect::Push(sha.into()));
        Ok(())
    }

    /// Step: report the job — its record in the state, the status comment naming this run as
    /// the chain's head, the checkpoint, the next dispatch, step outputs and the job summary.
    pub(super) fn report(
        &self,
        job: &Ran,
        store: &Store,
        state_store: StateStore,
        mut state: State,
        next: &AfterJob,
        outcome: JobOutcome,
    ) -> Result<Exit> {
        let mut record = run_record(self.env, job.issue, job.phase, outcome);
        record.earlier = job.earlier.clone();
        let checkpoint_name = record.checkpoint.clone();
        state.job.record(Effect::Run(record));
        if let Some(id) = job.comment_id {
            state.job.record(Effect::StatusComment(id.into()));
        }
        // The checkpoint first: the status comment names a checkpoint only once it is
        // finalized, so a job that fails before (an upload refused, the runner lost) leaves the
        // chain's pointer at its parent and "Re-run failed jobs" resumes from there.
        self.checkpoint(store, state_store, &mut state, &checkpoint_name)?;

        // The status comment now names this run as the chain's head.
        let pr_url = pr_url_of(&state);
        let headline = headline(&state, &job.label(), outcome, next);
        let mut view = View {
            checkpoint: Some(self.env.run_id),
            headline: headline.clone(),
            pr_url: pr_url.clone(),
            notice: None,
            // Once there is a pull request to speak of.
            ci_note: pr_url.as_ref().and(ci_note(self.forge.identity())),
            next_run: None,
        };
        let body = self
            .redactor
            .redact(&status::render(job.issue, &state, &view));
        let comment =
            self.forge
                .upsert_comment(job.issue, status::MARKER, &body, job.comment_id)?;

        let mut next_run = String::new();
        if *next == AfterJob::Dispatch
            && let Some(id) = self.dispatch_next(job.issue)?
        {
            // The comment names the run expected to go on (`next=`), so a stall shows (the
            // sweep finds it) and any other run dispatched for the same step does no work. It
            // named this run as head first: the next job must see its parent as the head.
            next_run = id.to_string();
            view.next_run = Some((id, self.env.run_url(id)));
            let body = self
                .redactor
                .redact(&status::render(job.issue, &state, &view));
            self.forge.edit_comment(comment.id, &body)?;
        }

        let (phase_out, gate) = step_outputs(&state, job);
        self.outputs(
            phase_out,
            &gate,
            pr_url.as_deref().unwrap_or_default(),
            &next_run,
        )?;
        runner::add_summary(
            self.env.summary.as_deref(),
            &self.redactor.redact(&status::job_summary_of(
                &state,
                &if job.halt.is_none() {
                    job.phases()
                } else {
                    Vec::new()
                },
                &headline,
                pr_url.as_deref(),
            )),
        )?;
        crate::events::emit(crate::events::Event::Job {
            message: headline.to_string(),
        });
        Ok(exit_of(job.end))
    }

    /// The checkpoint: the state (with every side effect recorded so far) and the ignored
    /// files, saved under `checkpoint_name`; the state store is released afterwards.
    pub(super) fn checkpoint(
        &self,
        store: &Store,
        state_store: StateStore,
        state: &mut State,
        checkpoint_name: &str,
    ) -> Result<()> {
        state_store.save(state)?;
        let zip = archive::build(&self.repo, &crate::spec::spec_rel(&state.feature))?;
        let saved = store.save(self.env.run_id, checkpoint_name, &zip)?;
        crate::events::emit(crate::events::Event::Job {
            message: format!(
                "checkpoint {} ({} bytes, {})",
                saved.name, saved.size, saved.digest
            ),
        });
        drop(state_store);
        Ok(())
    }

    /// Dispatches the next job; returns its run id (`None` when the forge did not say and the
    /// run could not be found by listing). A re-run (attempt 2 and up) first looks for the run
    /// an earlier attempt dispatched before its runner was lost (GitHub had accepted the
    /// dispatch, the status comment never got its `next=`) and adopts it, so a run never has
    /// two successors.
    pub(super) fn dispatch_next(&self, issue: u64) -> Result<Option<u64>> {
        if self.env.run_attempt >= 2
            && let Some(file) = &self.env.workflow_file
            && let Some(found) =
                self.forge
                    .find_successor(file, &run_title(issue), self.env.run_id)?
            && let Some(id) = found.run_id
        {
            crate::events::emit(crate::events::Event::Job {
                message: format!(
                    "run {id} was dispatched by an earlier attempt of run {} and is queued or running; it continues the chain (not dispatching a second successor)",
                    self.env.run_id
                ),
            });
            return Ok(Some(id));
        }
        self.dispatch_from(issue, self.env.run_id)
    }

    /// Dispatches a job of `issue` continuing the checkpoint of run `parent`; returns its run id
    /// when known.
    pub(super) fn dispatch_from(&self, issue: u64, parent: u64) -> Result<Option<u64>> {
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
        crate::events::emit(crate::events::Event::Job {
            message: match dispatched.run_id {
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
            },
        });
        Ok(next_run)
    }

    pub(super) fn dispatch(
        &self,
        issue: u64,
        parent: u64,
    ) -> Result<crate::forge::github::DispatchedRun> {
        let (Some(file), Some(git_ref)) = (&self.env.workflow_file, &self.env.workflow_ref) else {
            return Err(Error::usage(
                "GITHUB_WORKFLOW_REF is not set, so the next run cannot be dispatched; the runner sets it for every job",
            )
            .with_help("run spec-orchestrate as a step of a workflow job (see examples/workflow.yml), and do not clear GITHUB_WORKFLOW_REF in its env"));
        };
        let inputs = BTreeMap::from([
            ("issue".to_string(), issue.to_string()),
            ("parent_run".to_string(), parent.to_string()),
        ]);
        self.forge
            .dispatch(file, git_ref, &inputs, &run_title(issue), self.env.run_id)
    }

    pub(super) fn publish_pr(&self, dir: &Path, state: &mut State) -> Result<()> {
        let Some(local) = state.pr.clone() else {
            return Ok(());
        };
        let Some(branch) = state.branch.clone() else {
            return Ok(());
        };
        let body_path = dir.join("pr-body.md");
        let mut body = self.redactor.redact(&util::read_to_string_max(
            &body_path,
            crate::fsx::Limit::PrBody,
        )?);
        if let Some(note) = ci_note(self.forge.identity()) {
            body = format!("> [!NOTE]\n> {note}\n\n{body}");
        }
        let base = state.job.base_branch().unwrap_or("main").to_string();
        let pr =
            match self
                .forge
                .publish_pr(&state.issue.title, &branch.name, &base, &body, local.draft)
            {
                Ok(pr) => pr,
                Err(e) if pr_refusal(&e) == Some(PrRefusal::ActionsMayNotCreatePrs) => {
                    wait_for_pr_setting(state, &self.env.server_url, &self.env.repository);
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
        crate::events::emit(crate::events::Event::Job {
            message: format!(
                "pull request #{} {} ({})",
                pr.number,
                pr.html_url,
                if pr.draft { "draft" } else { "ready" }
            ),
        });
        state.pr = Some(PrRef {
            number: Some(pr.number),
            url: pr.html_url,
            draft: pr.draft,
        });
        state.job.record(Effect::PullRequest(pr.number));
        // A review round the `pr` phase just answered gets its answers on the pull request
        // (replies, resolutions, the summary); nothing when no round waits for them.
        super::review_answers::answer_rounds(&self.forge, &self.redactor, state, pr.number)?;
        Ok(())
    }

    /// The phase failed: say so on the status comment (the checkpoint pointer stays at the
    /// parent, so re-running this job resumes from there) and fail the job with the kind of the
    /// phase's error.
    pub(super) fn failed(
        &self,
        issue: u64,
        state: &State,
        comment_id: Option<u64>,
        parent: Option<u64>,
        ran: Phase,
        (kind, why): (ErrorKind, String),
    ) -> Result<Exit> {
        let notice = format!(
            "Run {} (attempt {}) failed during {ran}: {why}. Use “Re-run failed jobs” on {} to resume from {}.",
            self.env.run_id,
            self.env.run_attempt,
            self.env.run_url(self.env.run_id),
            match parent {
                Some(p) => format!("the checkpoint of run {p}"),
                None => "the start".into(),
            }
        );
        let body = self.redactor.redact(&status::render(
            issue,
            state,
            &View {
                checkpoint: parent,
                headline: format!("{ran} failed in run {}", self.env.run_id),
                pr_url: state
                    .pr
                    .as_ref()
                    .filter(|p| p.number.is_some())
                    .map(|p| p.url.clone()),
                notice: Some(notice.clone()),
                ci_note: None,
                next_run: None,
            },
        ));
        if let Err(e) = self
            .forge
            .upsert_comment(issue, status::MARKER, &body, comment_id)
        {
            crate::events::emit(crate::events::Event::Job {
                message: format!("could not update the status comment: {e}"),
            });
        }
        self.outputs(ran.as_str(), "", "", "")?;
        runner::add_summary(
            self.env.summary.as_deref(),
            &format!("## spec-orchestrate\n\n{notice}\n"),
        )?;
        Err(Error::PhaseFailed {
            kind,
            message: notice,
        })
    }
}
