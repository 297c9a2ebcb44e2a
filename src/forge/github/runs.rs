//! Workflow runs: who may drive one (the actor's permission), the run a job belongs to, and the
//! dispatch that starts the chain's next job, with the lookup that finds the run a dispatch
//! started when GitHub did not say.

use std::collections::BTreeMap;

use crate::error::forge::ForgeCause;
use crate::error::{Error, Result};

use super::models::{self, CollaboratorPermission};
use super::{DispatchedRun, GithubForge, Permission, WorkflowRun, encode_query};
use crate::types::ids::RunId;

impl GithubForge {
    /// `user`'s permission on the repository; a user GitHub does not know has `none`.
    pub fn permission(&self, user: &str) -> Result<Permission> {
        let found: Option<CollaboratorPermission> = self.get_as(
            &format!("/collaborators/{user}/permission"),
            &format!("checking the permission of @{user}"),
            true,
        )?;
        Ok(found.map_or(Permission::NONE, Permission::from))
    }

    /// The workflow file path (`.github/workflows/x.yml`) of run `run_id` of this repository,
    /// or `None` when the repository has no such run.
    pub fn run_workflow_path(&self, run_id: RunId) -> Result<Option<String>> {
        Ok(self.workflow_run(run_id)?.and_then(|r| r.path))
    }

    /// Run `run_id` as GitHub answers it, `None` when there is no such run.
    fn raw_run(&self, run_id: RunId) -> Result<Option<models::Run>> {
        self.get_as(
            &format!("/actions/runs/{run_id}"),
            &format!("reading workflow run {run_id}"),
            true,
        )
    }

    /// Run `run_id` of this repository (`GET /repos/{o}/{r}/actions/runs/{id}`, whose
    /// `status` and `conclusion` are those of its newest attempt), or `None` when there is no
    /// such run.
    pub fn workflow_run(&self, run_id: RunId) -> Result<Option<WorkflowRun>> {
        let Some(run) = self.raw_run(run_id)? else {
            return Ok(None);
        };
        // Nullable in GitHub's schema, but every run has a status; one without is not guessed.
        let status = run.status.ok_or_else(|| {
            self.odd_answer(format!(
                "GitHub answered workflow run {run_id} of {} without a status",
                self.target.full_name()
            ))
        })?;
        Ok(Some(WorkflowRun {
            path: run.path,
            status,
            conclusion: run.conclusion,
            html_url: run.html_url,
        }))
    }

    /// Asks GitHub to cancel run `run_id` (`POST /repos/{o}/{r}/actions/runs/{id}/cancel`,
    /// 202 Accepted). A cancelled run's jobs still pending do not start, and those running get
    /// SIGTERM; a job whose `if:` holds `always()` runs all the same (GitHub's docs, "Canceling
    /// a workflow"), so a wave's join still lands. A run that has completed answers 409, which
    /// is no failure here: there is nothing left to stop. Cancelling twice is harmless.
    pub fn cancel_run(&self, run_id: RunId) -> Result<()> {
        let what = format!("cancelling workflow run {run_id}");
        match self.write(
            reqwest::Method::POST,
            &format!("/actions/runs/{run_id}/cancel"),
            &serde_json::json!({}),
            &what,
            true,
        ) {
            Ok(_) => Ok(()),
            Err(e) if e.forge_failure().is_some_and(|f| f.status == Some(409)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Starts `workflow_file` on `git_ref` with `inputs` (strings, at most 25) and asks for the new
    /// run's id (`return_run_details`, github.com since February 2026: "Workflow dispatch API now
    /// returns run IDs", GitHub changelog 2026-02-19). GitHub Enterprise Server 3.20 and older
    /// refuse the unknown key (`"return_run_details" is not a permitted key.`, reported on 3.19 in
    /// benc-uk/workflow-dispatch#86; cli/cli#12672 names "GHES 3.20 or earlier"): then the
    /// dispatch is sent again without it. Either way, a server that answers `204 No Content`
    /// leaves `run_id` `None`; [`GithubForge::find_dispatched_run`] finds the run then.
    ///
    /// A dispatch is not idempotent (each one starts a run), so it is sent once; after a failure
    /// that leaves its effect unknown (a 5xx, an answer lost after GitHub created the run) the
    /// run is looked up as [`GithubForge::find_dispatched_run`] does — titled `title`, newer than
    /// `exclude` (the run asking) — and adopted, and the dispatch is sent again only when no
    /// such run shows: one job never starts two successors.
    pub fn dispatch(
        &self,
        workflow_file: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
        title: &str,
        exclude: RunId,
    ) -> Result<DispatchedRun> {
        if inputs.len() > 25 {
            return Err(Error::forge(
                &self.target.api_url,
                format!(
                    "a workflow_dispatch takes at most 25 inputs; {} were given",
                    inputs.len()
                ),
            )
            .with_help("GitHub refuses more; pass fewer inputs"));
        }
        // GitHub stamps `created_at` by its clock, in whole seconds: look a little earlier.
        let since = chrono::Utc::now() - chrono::Duration::seconds(10);
        let what = format!("dispatching {workflow_file} on {git_ref}");
        self.write_checked(
            &what,
            || self.dispatch_once(workflow_file, git_ref, inputs),
            || self.list_dispatched(workflow_file, since, title, exclude, &ADOPT_WAITS),
        )
    }

    /// One `POST …/dispatches` (and its plain form on a server that refuses
    /// `return_run_details`), not re-sent after a lost answer.
    fn dispatch_once(
        &self,
        workflow_file: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
    ) -> Result<DispatchedRun> {
        let route = format!(
            "/actions/workflows/{}/dispatches",
            encode_query(workflow_file)
        );
        let what = format!("dispatching {workflow_file} on {git_ref}");
        let asked = serde_json::json!({
            "ref": git_ref, "inputs": inputs, "return_run_details": true,
        });
        let reply = match self.write(reqwest::Method::POST, &route, &asked, &what, false) {
            Ok(reply) => reply,
            Err(e) if refuses_run_details(&e) => {
                crate::events::emit(crate::events::Event::Job {
                    message: "this GitHub does not return the dispatched run (GitHub Enterprise Server 3.20 or older); dispatching without asking for it".into(),
                });
                let plain = serde_json::json!({ "ref": git_ref, "inputs": inputs });
                self.write(reqwest::Method::POST, &route, &plain, &what, false)?
            }
            Err(e) => return Err(e),
        };
        match reply {
            // 204 No Content: GitHub did not say which run it started.
            Some(r) if r.status != 204 && !r.body.iter().all(u8::is_ascii_whitespace) => {
                let details: models::DispatchDetails = self.decode(&what, &r)?;
                Ok(DispatchedRun {
                    run_id: Some(details.workflow_run_id),
                    html_url: details.html_url,
                })
            }
            _ => Ok(DispatchedRun {
                run_id: None,
                html_url: None,
            }),
        }
    }

    /// The run a `workflow_dispatch` of `workflow_file` started, when the dispatch answered
    /// `204` without it: among the workflow's runs with event `workflow_dispatch` created since
    /// `since` (`GET /repos/{o}/{r}/actions/workflows/{file}/runs?event=…&created=>=…`, GitHub
    /// REST "List workflow runs for a workflow"; runs do not show their inputs), the newest whose
    /// `display_title` is `title` (the workflow's `run-name`) and whose id is greater than
    /// `exclude` (the run asking: neither it nor its parent is its successor). A workflow without that `run-name` has titles that tell no issue apart, and no run
    /// is found. The run may be listed a moment after the dispatch, so the listing is tried a few
    /// times; `None` when it never shows.
    pub fn find_dispatched_run(
        &self,
        workflow_file: &str,
        since: chrono::DateTime<chrono::Utc>,
        title: &str,
        exclude: RunId,
    ) -> Result<Option<DispatchedRun>> {
        self.list_dispatched(workflow_file, since, title, exclude, &[0, 1, 2, 4])
    }

    /// The run an earlier attempt of run `run_id` dispatched, when one is still to run: a
    /// `workflow_dispatch` of `workflow_file` titled `title`, created since run `run_id` was and
    /// newer than it, not completed. "Re-run failed jobs" repeats a job whose runner was lost
    /// after GitHub had accepted its dispatch but before the job wrote the new run's id into
    /// the status comment (`next=`); that run is adopted instead of dispatching a second
    /// successor. One listing: a re-run starts long after the dispatch it repeats. A completed
    /// run is not adopted: it ran and did not move the chain (it failed, or found nothing to
    /// do), so a new one goes on.
    pub fn find_successor(
        &self,
        workflow_file: &str,
        title: &str,
        run_id: RunId,
    ) -> Result<Option<DispatchedRun>> {
        let Some(this) = self.raw_run(run_id)? else {
            return Ok(None);
        };
        let runs = self.list_runs(workflow_file, this.created_at)?;
        let pending: Vec<models::Run> = runs
            .into_iter()
            .filter(|r| r.status.as_deref() != Some("completed"))
            .collect();
        Ok(pick_dispatched(&pending, title, run_id))
    }

    /// [`GithubForge::find_dispatched_run`], listing after each wait of `waits` (seconds).
    fn list_dispatched(
        &self,
        workflow_file: &str,
        since: chrono::DateTime<chrono::Utc>,
        title: &str,
        exclude: RunId,
        waits: &[u64],
    ) -> Result<Option<DispatchedRun>> {
        for wait in waits {
            std::thread::sleep(std::time::Duration::from_secs(*wait));
            let runs = self.list_runs(workflow_file, since)?;
            if let Some(found) = pick_dispatched(&runs, title, exclude) {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The runs of `workflow_file` with event `workflow_dispatch` created since `since`
    /// (`GET …/actions/workflows/{file}/runs?event=…&created=>=…`, newest first, one page of 100).
    fn list_runs(
        &self,
        workflow_file: &str,
        since: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<models::Run>> {
        let created = since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let route = format!(
            "/actions/workflows/{}/runs?event=workflow_dispatch&created={}&per_page=100",
            encode_query(workflow_file),
            encode_query(&format!(">={created}"))
        );
        let runs: models::Runs = self.get(
            &route,
            &format!("listing the runs of {workflow_file} dispatched since {created}"),
        )?;
        Ok(runs.workflow_runs)
    }
}

/// The listings of a lookup after a lost dispatch answer (seconds to wait before each): the run
/// may be listed a moment after GitHub created it, and a dispatch that did not take effect is
/// sent again only after the last.
const ADOPT_WAITS: [u64; 3] = [0, 1, 2];

/// GitHub Enterprise Server's refusal of `return_run_details`: a 400 or 422 whose message
/// names the key (GitHub gives it no code of its own).
fn refuses_run_details(e: &Error) -> bool {
    e.forge_failure().is_some_and(|f| {
        f.cause == ForgeCause::Invalid
            && f.message
                .as_deref()
                .is_some_and(|m| m.contains("return_run_details"))
    })
}

/// The newest of `runs` (a listing of one workflow's dispatched runs) titled `title` and newer
/// than `asker`, the run asking. A run is never guessed by its time alone: another issue's chain
/// may have dispatched at the same moment. Only a newer run, because run ids grow and the
/// listing reaches back ten seconds before the dispatch (GitHub's `created_at` is in whole
/// seconds, by its clock): the run that asks carries the same title, and so does its parent,
/// which a job shorter than those ten seconds still finds listed.
fn pick_dispatched(runs: &[models::Run], title: &str, asker: RunId) -> Option<DispatchedRun> {
    let chosen = runs
        .iter()
        .filter(|r| r.id > asker)
        .filter(|r| r.event == "workflow_dispatch")
        .filter(|r| r.display_title == title)
        .max_by_key(|r| (r.created_at, r.id))?;
    Some(DispatchedRun {
        run_id: Some(chosen.id),
        html_url: Some(chosen.html_url.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: u64, title: &str, secs_ago: i64) -> models::Run {
        models::Run {
            id: id.into(),
            event: "workflow_dispatch".into(),
            display_title: title.into(),
            status: Some("queued".into()),
            conclusion: None,
            path: Some(".github/workflows/spec-orchestrate.yml".into()),
            html_url: format!("https://github.com/o/r/actions/runs/{id}"),
            created_at: chrono::Utc::now() - chrono::Duration::seconds(secs_ago),
        }
    }

    const TITLE: &str = "spec-orchestrate: issue #7";

    #[test]
    fn a_parent_created_seconds_before_is_never_taken_for_the_successor() {
        // Run 40 dispatched run 41, which ran for 3 s and dispatched: the listing since ten
        // seconds before shows the parent (same title), the asker and nothing else yet.
        let listed = [run(41, TITLE, 1), run(40, TITLE, 4)];
        assert_eq!(pick_dispatched(&listed, TITLE, 41.into()), None);
        // Once the successor is listed, it is the one, whatever order the listing has.
        let listed = [run(40, TITLE, 4), run(42, TITLE, 0), run(41, TITLE, 1)];
        assert_eq!(
            pick_dispatched(&listed, TITLE, 41.into()).and_then(|d| d.run_id),
            Some(42.into())
        );
    }

    #[test]
    fn another_issue_or_event_is_never_taken() {
        let mut comment = run(43, TITLE, 0);
        comment.event = "issue_comment".into();
        let listed = [run(44, "spec-orchestrate: issue #8", 0), comment];
        assert_eq!(pick_dispatched(&listed, TITLE, 41.into()), None);
    }
}
