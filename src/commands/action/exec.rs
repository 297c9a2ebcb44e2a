//! The executor: one job of the chain carried out step by step, as the planner (`plan.rs`)
//! decided, with one state store held from the opening to the phase process.

use super::answer::AfterCommand;
use super::evidence;
use super::open::Opened;
use super::phases::Steps;
use super::plan::{
    AfterJob, Facts, Ran, Step, child_error, decide_next, idle_jobs, outcome_of, plan, progress,
    skip_reason,
};
use super::{Head, Job, runner};
use crate::commands::Exit;
use crate::error::{Error, ErrorKind, Result};
use crate::forge::github::event::Trigger;
use crate::state::job::Effect;
use crate::store::Store;
use crate::types::Phase;

/// What a step tells the executor.
enum Then {
    /// Go on with the next step.
    Next,
    /// The job ends with this exit.
    End(Exit),
}

impl Job<'_> {
    /// One job of the chain: read the event, authorise who caused it, read the status comment,
    /// plan the steps ([`plan`]) and carry them out in order.
    pub(super) fn run(&self) -> Result<Exit> {
        if self.env.event_name == "schedule" {
            return self.sweep();
        }
        let trigger = self.read_trigger()?;
        if let Trigger::Review {
            pr, head, actor, ..
        } = &trigger
        {
            return self.review_job(*pr, head.as_ref(), actor);
        }
        let Some(issue) = trigger.issue_number() else {
            let Trigger::Ignored(why) = &trigger else {
                return self.nothing("the event names no issue");
            };
            return self.nothing(why);
        };
        let refusal = self.authorise(&trigger)?;
        let head = match refusal {
            Some(_) => Head::default(),
            None => self.status_head(issue)?,
        };
        let facts = Facts {
            trigger: &trigger,
            issue,
            refusal,
            head: head.checkpoint,
            next: head.next,
            run_id: self.env.run_id,
            attempt: self.env.run_attempt,
            trigger_label: &self.config.github.trigger_label,
        };
        let steps = plan(&facts);
        crate::events::emit(crate::events::Event::Job {
            message: format!("plan: {}", names(&steps)),
        });
        let comment_id = head.comment.as_ref().map(|c| c.id);
        let mut store: Option<Store> = None;
        let mut run: Option<Opened> = None;
        let mut ran: Option<(Ran, Steps, u64)> = None;
        for step in steps {
            let then = match (step, run.as_mut()) {
                (Step::Nothing(why), _) => Then::End(self.nothing(&why)?),
                (Step::Refuse(reason), _) => Then::End(self.refuse(issue, &reason)?),
                (Step::NotNext(why), _) => Then::End(self.not_next(&why)?),
                (Step::Open(source), None) => {
                    let s = self.store()?;
                    run = Some(self.open_run(&s, &trigger, issue, &source)?);
                    store = Some(s);
                    Then::Next
                }
                (Step::CatchUp, Some(r)) => {
                    let caught = self.catch_up(&trigger, issue, r)?;
                    r.seen = caught.seen;
                    r.halt = caught.halt;
                    match caught.done_already {
                        Some(why) => Then::End(self.nothing(&why)?),
                        None => Then::Next,
                    }
                }
                (Step::Command, Some(r)) => self.command_step(&trigger, issue, r)?,
                (Step::TakeReview(pr), Some(r)) => match self.take_review(pr, r)? {
                    Some(why) => Then::End(self.nothing(&why)?),
                    None => Then::Next,
                },
                (Step::Phases, Some(r)) => {
                    let s = store.as_ref().ok_or_else(out_of_order)?;
                    match self.phases_step(s, &trigger, issue, r, comment_id)? {
                        Ok(done) => {
                            ran = Some(done);
                            Then::Next
                        }
                        Err(exit) => Then::End(exit),
                    }
                }
                (Step::Report, Some(_)) => {
                    let s = store.as_ref().ok_or_else(out_of_order)?;
                    let (job, steps, idle) = ran.take().ok_or_else(out_of_order)?;
                    Then::End(self.report_step(s, job, steps, idle)?)
                }
                _ => return Err(out_of_order()),
            };
            if let Then::End(exit) = then {
                return Ok(exit);
            }
        }
        Err(out_of_order())
    }

    /// Step: the command of the comment that started the job, applied; the comments seen so far
    /// recorded.
    fn command_step(&self, trigger: &Trigger, issue: u64, r: &mut Opened) -> Result<Then> {
        r.halt = match self.apply_command(trigger, r)? {
            AfterCommand::Run => None,
            AfterCommand::Halt(message) => Some(message),
            AfterCommand::Reject(message) => return Ok(Then::End(self.refuse(issue, &message)?)),
        };
        if let Trigger::Command { comment_id, .. } = trigger {
            let seen_id = r.seen.max(*comment_id);
            r.state.job.record(Effect::CommentsSeen(seen_id.into()));
        }
        Ok(Then::Next)
    }

    /// Step: the phases that are due, each in its own process, and what they left published.
    /// Returns the job so far, or the exit when it ends here (nothing due, a failed check or
    /// phase).
    fn phases_step(
        &self,
        store: &Store,
        trigger: &Trigger,
        issue: u64,
        r: &mut Opened,
        comment_id: Option<u64>,
    ) -> Result<std::result::Result<(Ran, Steps, u64), Exit>> {
        let halted = r.halt.is_some();
        if let Some(why) = skip_reason(&r.state, halted, trigger, issue) {
            return Ok(Err(self.nothing(&why)?));
        }
        // The phase process reads the run from disk and takes the store itself.
        let state_store = r.store.take().ok_or_else(out_of_order)?;
        state_store.save(&mut r.state)?;
        drop(state_store);

        // The first job of a chain checks what the run needs (`doctor`'s local checks) before
        // any agent runs, so a missing key is on the status comment at once.
        let config = self.env.config.as_ref().map(|c| self.repo.join(c));
        let keys = [
            ("ANTHROPIC_API_KEY", self.env.anthropic_key.is_some()),
            ("OPENAI_API_KEY", self.env.openai_key.is_some()),
        ];
        let provided: Vec<&str> = keys.iter().filter(|k| k.1).map(|k| k.0).collect();
        if r.restored.is_none()
            && !halted
            && let Some(why) =
                crate::commands::doctor::action_preflight(&self.repo, config.as_deref(), &provided)
        {
            let failure = (ErrorKind::Config, why);
            let phase = r.state.phase();
            return self
                .failed(issue, &r.state, comment_id, r.restored, phase, failure)
                .map(Err);
        }
        let before = progress(&r.state);
        let mut steps = self.phase_steps(store, &r.dir, &r.state, halted, &mut r.lease)?;
        let job = Ran {
            issue,
            earlier: std::mem::take(&mut steps.earlier),
            phase: steps.phase,
            end: steps.end,
            halt: r.halt.clone(),
            comment_id,
            pr_published: steps.pr_published,
        };
        if let Some(failure) = child_error(job.end) {
            return self
                .failed(
                    issue,
                    &steps.state,
                    comment_id,
                    r.restored,
                    job.phase,
                    failure,
                )
                .map(Err);
        }
        evidence::after_phase(
            store,
            self.env,
            &r.dir,
            &mut steps.state,
            issue,
            self.config.github.evidence_retention_days,
        );
        let lease = std::mem::replace(&mut r.lease, super::open::Lease::Unknown);
        self.publish(&job, &r.dir, &mut steps.state, lease)?;
        // A job stopped at its time budget before any agent call finished would hand over
        // forever; after three such jobs in a row the chain waits for a larger budget.
        let idle = idle_jobs(&steps.state, job.end, before);
        Ok(Ok((job, steps, idle)))
    }

    /// Step: what comes next decided, and the job reported (`publish.rs`).
    fn report_step(&self, store: &Store, job: Ran, steps: Steps, idle: u64) -> Result<Exit> {
        let Steps {
            store: state_store,
            mut state,
            ..
        } = steps;
        state.job.record(Effect::BudgetIdle(idle));
        let next = decide_next(&state, &job, idle, self.env.job_budget);
        let outcome = outcome_of(&state, &job);
        // A round that ended here: a review submitted while it ran starts the next one.
        let pending = if next == AfterJob::Done && job.phases().contains(&Phase::Pr) {
            self.review_pending(&state)?
        } else {
            None
        };
        let exit = self.report(&job, store, state_store, state, &next, outcome)?;
        if let Some(pr) = pending {
            self.dispatch_review(job.issue, pr, None)?;
        }
        Ok(exit)
    }

    /// Ends the job of a run that is not the chain's next: no agent call, the summary says why.
    fn not_next(&self, why: &str) -> Result<Exit> {
        crate::events::emit(crate::events::Event::Job {
            message: format!("not continuing the chain: {why}"),
        });
        self.outputs("", "", "", "")?;
        runner::add_summary(
            self.env.summary.as_deref(),
            &format!("## spec-orchestrate\n\nNot continuing the chain: {why}.\n"),
        )?;
        Ok(Exit::Ok)
    }
}

/// The steps' names, for the log.
fn names(steps: &[Step]) -> String {
    let names: Vec<&str> = steps
        .iter()
        .map(|s| match s {
            Step::Nothing(_) => "nothing",
            Step::Refuse(_) => "refuse",
            Step::NotNext(_) => "not-next",
            Step::Open(_) => "open",
            Step::CatchUp => "catch-up",
            Step::Command => "command",
            Step::Route { .. } => "route",
            Step::TakeReview(_) => "take-review",
            Step::Phases => "phases",
            Step::Report => "report",
        })
        .collect();
    names.join(" → ")
}

/// A plan whose steps do not follow one another (a bug in `plan`, not in the run).
fn out_of_order() -> Error {
    Error::State {
        path: "the job's plan".into(),
        problem: "its steps ran out of order (a step before the run was opened, or none that ends the job)".into(),
        help: "this is a bug in spec-orchestrate; report it with this job's log".into(),
    }
}
