//! The review round in action mode, as jobs (docs/action-mode.md, "After the pull request"):
//! the job a review started checks the guards and routes the round into the issue's chain; the
//! chain's job has the machine take the round (`machine::answer::take_round`) into the state
//! it opened, and runs its phases like any other; the job that ends a round looks for reviews
//! submitted meanwhile and starts the next round.
//!
//! Decisions are the planner's (`plan.rs`, `plan/review.rs`) and the machine's; this file only
//! reads GitHub, dispatches and hands the review over.

use std::collections::BTreeSet;

use super::open::Opened;
use super::plan::review;
use super::plan::{Route, route};
use super::say;
use super::{Job, finish};
use crate::commands::Exit;
use crate::error::Result;
use crate::forge::github::event::{Actor, PullHead};
use crate::machine::answer::{Then, take_round};
use crate::review::feedback::Review;
use crate::state::job::Effect;
use crate::types::ids::{IssueNumber, PrNumber, RunId};

impl Job<'_> {
    /// The job of a review or a `/spec-orchestrate fix` comment on a pull request: the guards
    /// (our work branch, the same repository, the author's write access, an issue with a
    /// chain), then the round's first job dispatched into the issue's concurrency group.
    pub(super) fn review_job(
        &self,
        pr: PrNumber,
        head: Option<&PullHead>,
        actor: &Actor,
    ) -> Result<Exit> {
        let head = match head {
            Some(h) => h.clone(),
            None => self.chain.forge.pull_head(pr)?,
        };
        let issue = review::issue_of(pr, &head, &self.config.github.branch_prefix);
        let (refusal, chain) = match &issue {
            Ok(n) => match self.chain.refusal(actor)? {
                Some(reason) => (Some(reason), None),
                None => (None, self.chain.status_head(*n)?.checkpoint),
            },
            Err(_) => (None, None),
        };
        let route = route(pr, issue, refusal, chain);
        say(format!(
            "review of pull request #{pr} by @{}: {route:?}",
            actor.login
        ));
        match route {
            Route::End(ending) => self.end(pr.as_issue(), ending),
            Route::Into { issue, pr } => {
                let next = self.dispatch_review(issue, pr, Some(&head.base))?;
                let next_run = next.map(|n| n.to_string()).unwrap_or_default();
                finish(
                    self.env,
                    &next_run,
                    &format!(
                        "## spec-orchestrate\n\nA review round of pull request #{pr} was asked for by @{}: it runs in the chain of issue #{issue}{}.\n",
                        actor.login,
                        next.map(|n| format!(" (run {n})")).unwrap_or_default()
                    ),
                )
            }
        }
    }

    /// Dispatches a job of issue `issue`'s chain that takes a review round of pull request
    /// `pr`, continuing the newest checkpoint (an empty `parent_run`), on branch `base` (else
    /// on this run's own ref); returns its run id when GitHub says.
    pub(super) fn dispatch_review(
        &self,
        issue: IssueNumber,
        pr: PrNumber,
        base: Option<&str>,
    ) -> Result<Option<RunId>> {
        let what = "the review round";
        let run = (self.chain).dispatch_with(issue, String::new(), Some((pr, base)), what)?;
        say(format!(
            "dispatched the review round of pull request #{pr} into the chain of issue #{issue}{}",
            run.run_id.map(|n| format!(": run {n}")).unwrap_or_default()
        ));
        Ok(run.run_id)
    }

    /// Step: the review round of pull request `pr` taken into the run, or why not (the reason
    /// ends the job quietly): the run must have opened it, be done and have no round in flight,
    /// and someone who may write must have left something not yet taken.
    pub(super) fn take_review(&self, pr: PrNumber, r: &mut Opened) -> Result<Option<String>> {
        if let Some(why) = review::not_now(&r.state, pr) {
            return Ok(Some(why));
        }
        let taken = r.state.job.reviews_taken();
        let threads = self.chain.forge.review_threads(pr)?;
        let reviews = self.chain.forge.list_reviews(pr)?;
        let mut writers = BTreeSet::new();
        for login in review::authors(&threads, &reviews, taken) {
            let actor = Actor {
                is_bot: login.ends_with("[bot]"),
                login,
            };
            if self.chain.refusal(&actor)?.is_none() {
                writers.insert(actor.login);
            }
        }
        let resolved_by_us: BTreeSet<String> = r
            .state
            .rounds
            .pr_review
            .iter()
            .flat_map(|round| {
                round.items.iter().filter_map(|i| {
                    let fixed = round.answer(&i.finding.id).is_some_and(|a| a.resolves());
                    i.thread.clone().filter(|_| fixed)
                })
            })
            .collect();
        let intake = review::intake(
            &threads,
            &reviews,
            self.chain.forge.identity(),
            taken,
            &writers,
            &resolved_by_us,
        );
        if intake.comments.is_empty() {
            return Ok(Some(format!(
                "pull request #{pr} has no unresolved thread or review not yet taken from someone with write access"
            )));
        }
        let round = Review::gather(
            &r.dir,
            &crate::spec::spec_rel(&r.state.feature),
            r.state.rounds.next_review(),
            &format!("pull request #{pr}"),
            &intake.comments,
        );
        let applied = take_round(&r.state, self.config, round);
        r.state = applied.state;
        r.state
            .job
            .record(Effect::ReviewsTaken(intake.newest_review));
        match applied.then {
            Then::Run => {
                say(format!(
                    "review round taken: {} comment(s) of pull request #{pr}, starting at {}",
                    intake.comments.len(),
                    r.state.phase()
                ));
            }
            Then::Halt(message) => {
                if let Some(stopped) = r.state.rounds.pr_review.last() {
                    crate::phases::revise::write_answers(&r.dir, stopped)?;
                }
                r.halt = Some(message);
            }
        }
        Ok(None)
    }

    /// Whether a review submitted while the round ran waits to be taken: asked by the job
    /// whose `pr` phase ended a round, before it calls the run done.
    pub(super) fn review_pending(&self, state: &crate::state::State) -> Result<Option<PrNumber>> {
        let Some(pr) = state.pr.as_ref().and_then(|p| p.number) else {
            return Ok(None);
        };
        if state.rounds.pr_review.is_empty() {
            return Ok(None);
        }
        let reviews = self.chain.forge.list_reviews(pr)?;
        Ok(review::pending(&reviews, state.job.reviews_taken()).then_some(pr))
    }
}
