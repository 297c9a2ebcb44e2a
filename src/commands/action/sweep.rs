//! The scheduled sweep (`init --sweep` adds a `schedule:` trigger): finds chains whose next run
//! will never come and resumes them or says why on the issue.
//!
//! Every job that dispatches a successor names it in the status comment (`next=<run>` in the
//! marker). GitHub can end that run before it ever acts: a newer run evicts it from the
//! concurrency group (the default queue of GitHub Enterprise Server), someone cancels it, or it
//! fails before spec-orchestrate starts (the image cannot be pulled, the runner is lost, the job
//! exceeds `timeout-minutes`). Then nothing continues the chain, and nothing says so. The sweep
//! reads the status comments this token's identity updated lately, and for each whose next run
//! is completed without a re-run (`GET …/actions/runs/{id}` shows the newest attempt):
//! cancelled — it dispatches a new run continuing the same checkpoint and says so on the issue;
//! failed in any other way — it says so on the issue, with the run to re-run (agents cost money:
//! a failure is a person's call). A reply marked with the run it is about is written once.

use crate::error::Result;
use crate::forge::github::{Comment, WorkflowRun};
use crate::report::status::{self, Marker};
use crate::types::ids::RunId;

use super::chain::Chain;
use super::plan::is_this_workflow;
use super::say;
use super::{Exit, finish};

/// How every reply of the sweep begins; `next=<run>` follows, so it is written once per run.
pub const MARKER: &str = "<!-- spec-orchestrate:sweep";

/// How far back the sweep looks: a status comment not updated for this long belongs to a chain
/// that stalled long ago (resume it with `/spec-orchestrate continue`).
pub const DAYS: i64 = 14;

/// Most runs the sweep resumes for one issue: a chain cancelled again after as many resumes is
/// reported instead (a person cancelling each run means it; a loop of resumes spends unbounded).
pub const MAX_RESUMES: usize = 3;

/// Why a chain's next run will never continue it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stall {
    /// It was cancelled (evicted from the queue, or by a person) and not re-run.
    Cancelled,
    /// It completed with this conclusion (`failure`, `timed_out`, `startup_failure`, …) and was
    /// not re-run.
    Failed(String),
}

/// Whether `run`, expected to continue a chain, never will: it completed (its newest attempt,
/// so a re-run in progress is not a stall) and did not succeed. A run that succeeded acted on
/// the chain or said why not.
pub fn stall(run: &WorkflowRun) -> Option<Stall> {
    if run.status != "completed" {
        return None;
    }
    match run.conclusion.as_deref() {
        None | Some("success" | "neutral" | "skipped") => None,
        Some("cancelled") => Some(Stall::Cancelled),
        Some(other) => Some(Stall::Failed(other.to_string())),
    }
}

/// The reply about run `next` of a chain whose head checkpoint is run `head`; `resumed` is
/// `Some` when the sweep dispatched a run continuing it (with its id, when GitHub said).
pub fn reply(
    next: RunId,
    url: &str,
    head: Option<RunId>,
    stall: &Stall,
    resumed: Option<Option<RunId>>,
) -> String {
    let from = match head {
        Some(h) => format!("the checkpoint of run {h}"),
        None => "the start".to_string(),
    };
    let text = match (stall, resumed) {
        (Stall::Cancelled, Some(Some(new))) => format!(
            "Run {next} ({url}), which was to continue this chain, was cancelled and nobody re-ran it. The scheduled sweep resumed the chain from {from} in run {new}."
        ),
        (Stall::Cancelled, Some(None)) => format!(
            "Run {next} ({url}), which was to continue this chain, was cancelled and nobody re-ran it. The scheduled sweep dispatched a new run from {from}; GitHub did not say which."
        ),
        (Stall::Cancelled, None) => format!(
            "Run {next} ({url}), which was to continue this chain, was cancelled and nobody re-ran it. Comment `/spec-orchestrate continue` to resume from {from}."
        ),
        (Stall::Failed(conclusion), _) => format!(
            "Run {next} ({url}), which was to continue this chain, ended `{conclusion}` before spec-orchestrate could report, and nobody re-ran it: nothing continues the chain on its own. Use “Re-run failed jobs” on that run, or comment `/spec-orchestrate continue` to resume from {from}."
        ),
    };
    format!("{MARKER} next={next} -->\n{text}")
}

impl Chain<'_> {
    /// The job of a `schedule` event: every stalled chain resumed or reported.
    pub(super) fn sweep(&self) -> Result<Exit> {
        let since = chrono::Utc::now() - chrono::Duration::days(DAYS);
        let me = self.forge.identity().map(str::to_string);
        let mut done = Vec::new();
        for c in self.forge.list_repo_comments(since)? {
            if me.as_deref() != Some(c.author.as_str()) {
                continue;
            }
            let (Some(marker), Some(next)) =
                (status::parse_marker(&c.body), status::parse_next(&c.body))
            else {
                continue;
            };
            if let Some(line) = self.sweep_chain(&c, marker, next)? {
                done.push(line);
            }
        }
        let text = if done.is_empty() {
            "no stalled chain".to_string()
        } else {
            done.join("\n- ")
        };
        say(format!("sweep: {text}"));
        finish(
            self.env,
            "",
            &format!("## spec-orchestrate sweep\n\n- {text}\n"),
        )
    }

    /// One chain: its next run looked up, and if it stalled, the chain resumed (cancelled) or
    /// the stall reported, once. Returns what was done.
    fn sweep_chain(&self, c: &Comment, marker: Marker, next: RunId) -> Result<Option<String>> {
        let issue = marker.issue;
        let Some(run) = self.forge.workflow_run(next)? else {
            return Ok(None);
        };
        if !is_this_workflow(run.path.as_deref(), self.env.workflow_file.as_deref()) {
            return Ok(None);
        }
        let Some(stalled) = stall(&run) else {
            return Ok(None);
        };
        let reply_marker = format!("{MARKER} next={next} -->");
        // One listing of the issue: whether this run was answered, and how often the sweep
        // already replied (each resume is one reply), from this token's identity only.
        let me = self.forge.identity();
        let replies: Vec<Comment> = self
            .forge
            .list_comments(issue)?
            .into_iter()
            .filter(|r| me.is_some_and(|me| r.author == me))
            .filter(|r| r.body.trim_start().starts_with(MARKER))
            .collect();
        if replies
            .iter()
            .any(|r| r.body.trim_start().starts_with(&reply_marker))
        {
            return Ok(None);
        }
        let url = self.env.run_url(next);
        let resumed = match (&stalled, marker.checkpoint) {
            (Stall::Cancelled, Some(head)) if replies.len() < MAX_RESUMES => {
                let new = self.dispatch_from(issue, head)?;
                if let Some(id) = new {
                    // The status comment now names the new run as the one to continue.
                    let body = c
                        .body
                        .replacen(
                            &status::marker_with_next(marker, next),
                            &status::marker_with_next(marker, id),
                            1,
                        )
                        .replacen(
                            &status::next_line(next, &url),
                            &status::next_line(id, &self.env.run_url(id)),
                            1,
                        );
                    self.forge.edit_comment(c.id, &body)?;
                }
                Some(new)
            }
            _ => None,
        };
        let text = reply(next, &url, marker.checkpoint, &stalled, resumed);
        self.forge.create_comment(issue, &text)?;
        Ok(Some(format!(
            "issue #{issue}: run {next} {}",
            match (&stalled, resumed) {
                (Stall::Cancelled, Some(Some(id))) => format!("was cancelled; resumed in run {id}"),
                (Stall::Cancelled, Some(None)) => "was cancelled; resumed".to_string(),
                (Stall::Cancelled, None) => "was cancelled; reported".to_string(),
                (Stall::Failed(c), _) => format!("ended {c}; reported"),
            }
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(status: &str, conclusion: Option<&str>) -> WorkflowRun {
        WorkflowRun {
            path: Some(".github/workflows/spec-orchestrate.yml".into()),
            status: status.into(),
            conclusion: conclusion.map(str::to_string),
            html_url: String::new(),
        }
    }

    #[test]
    fn only_a_completed_run_that_did_not_succeed_stalls_its_chain() {
        assert_eq!(stall(&run("queued", None)), None);
        assert_eq!(stall(&run("in_progress", None)), None, "a re-run going on");
        assert_eq!(stall(&run("completed", Some("success"))), None);
        assert_eq!(
            stall(&run("completed", Some("cancelled"))),
            Some(Stall::Cancelled)
        );
        assert_eq!(
            stall(&run("completed", Some("startup_failure"))),
            Some(Stall::Failed("startup_failure".into()))
        );
    }

    #[test]
    fn a_reply_names_its_run_in_its_marker_and_says_what_to_do() {
        let r = reply(
            7.into(),
            "https://x/runs/7",
            Some(6.into()),
            &Stall::Failed("timed_out".into()),
            None,
        );
        assert!(
            r.starts_with("<!-- spec-orchestrate:sweep next=7 -->\n"),
            "{r}"
        );
        assert!(r.contains("Re-run failed jobs") && r.contains("checkpoint of run 6"));
    }
}
