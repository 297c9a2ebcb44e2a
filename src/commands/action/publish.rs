//! Publishing and reporting: the work branch pushed with its lease, the pull request, the
//! checkpoint, the status comment, the next dispatch, the step outputs and the job summary.

use std::path::Path;

use super::env::ActionEnv;
use super::open::Lease;
use super::plan::{
    AfterJob, PhaseEnd, PhaseFailure, Ran, ci_note, commit_message, exit_of, headline, pr_url_of,
    run_record, step_outputs,
};
use super::say;
use super::{Job, outputs, runner};
use crate::commands::Exit;
use crate::error::forge::ForgeCause;
use crate::error::{Error, Result};
use crate::forge::github::GithubForge;
use crate::forge::remote::Remote;
use crate::git::Git;
use crate::report::status::{self, View};
use crate::secrets::Redactor;
use crate::state::job::Effect;
use crate::state::store::StateStore;
use crate::state::{PrRef, State};
use crate::store::{Store, archive};
use crate::types::Phase;
use crate::types::ids::{CommentId, IssueNumber, RunId};
use crate::types::kinds::JobOutcome;
use crate::util;

/// Whether a failed pull-request call is GitHub's 403 when the repository setting "Allow GitHub
/// Actions to create and approve pull requests" is off and the token is the workflow's own:
/// read from GitHub's answer as data (the cause `forge/github/answer.rs` read from the status
/// and GitHub's documented refusal), never from the error's text; any other failure stays an
/// error.
fn actions_may_not_create_prs(e: &Error) -> bool {
    e.forge_failure()
        .is_some_and(|f| f.cause == ForgeCause::ActionsMayNotCreatePullRequests)
}

/// The run waits at `pr` for the repository setting (or another token): the status comment and
/// the job summary say which setting, and `continue` runs the `pr` phase again.
fn wait_for_pr_setting(state: &mut State, server_url: &str, repository: &str) {
    let message = format!(
        "GitHub refused to open the pull request: the repository setting \"Allow GitHub Actions to create and approve pull requests\" is off ({}/{repository}/settings/actions, Workflow permissions). Turn it on, or pass a GitHub App installation token or a fine-grained personal access token as `github_token`; then comment `/spec-orchestrate continue`",
        server_url.trim_end_matches('/')
    );
    say(message.clone());
    crate::machine::answer::wait_for_pr_permission(state, message);
}

/// What a job leaves on the forge: the work branch committed and pushed by lease, the pull
/// request, the checkpoint.
pub(super) struct Publisher<'a> {
    pub(super) env: &'a ActionEnv,
    pub(super) repo: &'a Path,
    pub(super) forge: &'a GithubForge,
    pub(super) remote: &'a Remote,
    pub(super) redactor: &'a Redactor,
}

impl Publisher<'_> {
    /// Publishes what the phase left — commit (never a half-done phase), push, pull
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

    /// Commits what phase `ran` left on the work branch (nothing before intake made one), and
    /// records the new head in `state`.
    pub(super) fn commit_phase(&self, state: &mut State, ran: Phase) -> Result<()> {
        let Some(branch) = state.branch.clone() else {
            return Ok(());
        };
        let git = Git::new(self.repo);
        if git.current_branch().ok().as_deref() != Some(branch.name.as_str()) {
            return Err(Error::repo(
                self.repo,
                format!(
                    "after {ran} the checkout is not on the work branch {}; refusing to commit elsewhere",
                    branch.name
                ),
            )
            .with_help("an agent switched branches; re-run the job to restore the branch from the checkpoint"));
        }
        let message = commit_message(state, ran);
        if let Some(sha) = git.commit_all(&message)?
            && let Some(b) = state.branch.as_mut()
        {
            b.head = Some(sha);
        }
        Ok(())
    }

    /// Pushes the work branch (if the run has one yet) to `origin` with `lease`, what this job
    /// saw there (looked up now when the job restored nothing), and records the push.
    pub(super) fn push_branch(&self, state: &mut State, lease: Lease) -> Result<()> {
        let Some(branch) = state.branch.clone() else {
            return Ok(());
        };
        let git = Git::new(self.repo);
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

    /// Opens or updates the pull request of the run (ready or draft as the state says) with
    /// the body the `pr` phase wrote, redacted; a refusal of the repository's settings leaves
    /// the run waiting at `pr`.
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
                Err(e) if actions_may_not_create_prs(&e) => {
                    wait_for_pr_setting(state, &self.env.server_url, &self.env.repository);
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
        say(format!(
            "pull request #{} {} ({})",
            pr.number,
            pr.html_url,
            if pr.draft { "draft" } else { "ready" }
        ));
        state.pr = Some(PrRef {
            number: Some(pr.number),
            url: pr.html_url,
            draft: pr.draft,
        });
        state.job.record(Effect::PullRequest(pr.number));
        // A review round the `pr` phase just answered gets its answers on the pull request
        // (replies, resolutions, the summary); nothing when no round waits for them.
        super::review_answers::answer_rounds(self.forge, self.redactor, state, pr.number)?;
        Ok(())
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
        let zip = archive::build(self.repo, &crate::spec::spec_rel(&state.feature))?;
        let saved = store.save(self.env.run_id.get(), checkpoint_name, &zip)?;
        say(format!(
            "checkpoint {} ({} bytes, {})",
            saved.name, saved.size, saved.digest
        ));
        drop(state_store);
        Ok(())
    }
}

impl Job<'_> {
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
            state.job.record(Effect::StatusComment(id));
        }
        // The checkpoint first: the status comment names a checkpoint only once it is
        // finalized, so a job that fails before (an upload refused, the runner lost) leaves the
        // chain's pointer at its parent and "Re-run failed jobs" resumes from there.
        self.publisher
            .checkpoint(store, state_store, &mut state, &checkpoint_name)?;

        // The status comment now names this run as the chain's head.
        let pr_url = pr_url_of(&state);
        let headline = headline(&state, &job.label(), outcome, next);
        let mut view = View {
            checkpoint: Some(self.env.run_id),
            headline: headline.clone(),
            pr_url: pr_url.clone(),
            // Once there is a pull request to speak of.
            ci_note: pr_url.as_ref().and(ci_note(self.chain.forge.identity())),
            ..View::default()
        };
        let body = self
            .redactor
            .redact(&status::render(job.issue, &state, &view));
        let comment =
            self.chain
                .forge
                .upsert_comment(job.issue, status::MARKER, &body, job.comment_id)?;

        let mut next_run = String::new();
        if *next == AfterJob::Dispatch
            && let Some(id) = self.chain.dispatch_next(job.issue)?
        {
            // The comment names the run expected to go on (`next=`), so a stall shows (the
            // sweep finds it) and any other run dispatched for the same step does no work. It
            // named this run as head first: the next job must see its parent as the head.
            next_run = id.to_string();
            view.next_run = Some((id, self.env.run_url(id)));
            let body = self
                .redactor
                .redact(&status::render(job.issue, &state, &view));
            self.chain.forge.edit_comment(comment.id, &body)?;
        }

        let (phase_out, gate) = step_outputs(&state, job);
        outputs(
            self.env,
            phase_out,
            &gate,
            pr_url.as_deref().unwrap_or_default(),
            &next_run,
        )?;
        if let AfterJob::HandOut(tasks) = next {
            // The matrix's input (`strategy.matrix.task: ${{ fromJSON(…wave) }}`): at most
            // `limits.parallel_tasks` task ids, far under GitHub's 1 MB of outputs per job.
            let out = self.env.output.as_deref();
            let wave = serde_json::to_string(tasks).unwrap_or_default();
            runner::set_output(out, "wave", &wave)?;
            let parallel = self.config.limits.parallel_tasks.max(1).to_string();
            runner::set_output(out, "parallel", &parallel)?;
        }
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
        say(headline.to_string());
        Ok(exit_of(job.end))
    }

    /// The phase failed: say so on the status comment (the checkpoint pointer stays at the
    /// parent, so re-running this job resumes from there); returns the job's error, of the kind
    /// of the phase's.
    pub(super) fn failed(
        &self,
        issue: IssueNumber,
        state: &State,
        comment_id: Option<CommentId>,
        parent: Option<RunId>,
        ran: Phase,
        PhaseFailure { kind, why }: PhaseFailure,
    ) -> Error {
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
                pr_url: pr_url_of(state),
                notice: Some(notice.clone()),
                ..View::default()
            },
        ));
        if let Err(e) = self
            .chain
            .forge
            .upsert_comment(issue, status::MARKER, &body, comment_id)
        {
            say(format!("could not update the status comment: {e}"));
        }
        let reported = outputs(self.env, ran.as_str(), "", "", "").and_then(|()| {
            runner::add_summary(
                self.env.summary.as_deref(),
                &format!("## spec-orchestrate\n\n{notice}\n"),
            )
        });
        match reported {
            Ok(()) => Error::PhaseFailed {
                kind,
                message: notice,
            },
            Err(e) => e,
        }
    }
}
