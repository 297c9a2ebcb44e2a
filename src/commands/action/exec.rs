//! The executor: one job of the chain carried out as the planner (`plan.rs`) decided, as one
//! straight line whose every step takes the value the step before it returned (the run opened,
//! caught up, steered, its phases run), so the steps cannot be taken out of order; one state
//! store is held from the opening to the phase process.

use super::chain::Head;
use super::env::Part;
use super::evidence;
use super::open::{CaughtUp, Opened, Steered};
use super::phases::Steps;
use super::plan::{
    AfterJob, Ending, Facts, PhaseFailure, Plan, Ran, Source, Steer, child_error, decide_next,
    hand_out_or_dispatch, idle_jobs, outcome_of, plan, progress, skip_reason,
};
use super::say;
use super::{Job, finish};
use crate::commands::Exit;
use crate::error::{Error, ErrorKind, Result};
use crate::forge::github::event::Trigger;
use crate::state::job::Effect;
use crate::store::Store;
use crate::types::Phase;
use crate::types::ids::{CommentId, IssueNumber, PrNumber};

/// Why a chain job stops before its report: an ending only the run could tell (its command was
/// applied already, nothing is due, the command was rejected), or an error.
pub(super) enum Stop {
    /// End the job as the plan's endings do.
    End(Ending),
    Failed(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop::Failed(e)
    }
}

/// What a step of a chain job hands on: the value the next step takes, or why the job stops.
pub(super) type Flow<T> = std::result::Result<T, Stop>;

/// The phases of a chain job run and published, for its report.
pub(super) struct Phased {
    job: Ran,
    /// What the phases left, the state store still held.
    steps: Steps,
    /// How many jobs in a row reached their budget without progress.
    idle: u64,
}

impl Job<'_> {
    /// One job of the chain: read the event, authorise who caused it, read the status comment,
    /// plan the job ([`plan`]) and carry it out.
    pub(super) fn run(&self) -> Result<Exit> {
        if self.env.event_name == "schedule" {
            return self.chain.sweep();
        }
        match &self.env.part {
            Part::Leg(task) => return self.leg_job(task),
            Part::Join => return self.join_job(),
            Part::Chain { .. } => {}
        }
        let trigger = self.read_trigger()?;
        if let Trigger::Review {
            pr, head, actor, ..
        } = &trigger
        {
            return self.review_job(*pr, head.as_ref(), actor);
        }
        let Some(issue) = trigger.issue_number() else {
            let why = match &trigger {
                Trigger::Ignored(why) => why.clone(),
                _ => "the event names no issue".to_string(),
            };
            return self.end(IssueNumber::default(), Ending::Nothing(why));
        };
        let refusal = self.chain.authorise(&trigger)?;
        let head = match refusal {
            Some(_) => Head::default(),
            None => self.chain.status_head(issue)?,
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
        let plan = plan(&facts);
        say(format!("plan: {}", plan.describe()));
        let comment_id = head.comment.as_ref().map(|c| c.id);
        match plan {
            Plan::End(ending) => self.end(issue, ending),
            Plan::Chain { source, steer } => {
                let flow = self.chain_job(&trigger, issue, comment_id, &source, steer);
                self.settle(issue, flow)
            }
        }
    }

    /// The job's exit once its steps `flow`ed to their end: an ending only the run could tell
    /// ends it as the plan's endings do.
    pub(super) fn settle(&self, issue: IssueNumber, flow: Flow<Exit>) -> Result<Exit> {
        match flow {
            Ok(exit) => Ok(exit),
            Err(Stop::End(ending)) => self.end(issue, ending),
            Err(Stop::Failed(e)) => Err(e),
        }
    }

    /// A job of the chain, in order: the run opened from `source`, the comments caught up,
    /// the run steered as `steer` says, its phases run and published, the job reported.
    fn chain_job(
        &self,
        trigger: &Trigger,
        issue: IssueNumber,
        comment_id: Option<CommentId>,
        source: &Source,
        steer: Steer,
    ) -> Flow<Exit> {
        let store = self.store()?;
        let opened = self.open_run(&store, trigger, issue, source)?;
        self.wave_guard(trigger, &opened.state)?;
        let own = match trigger {
            Trigger::Command { comment_id, .. } if *comment_id != 0 => Some(*comment_id),
            _ => None,
        };
        let caught = self.catch_up(own, issue, opened)?;
        let steered = match steer {
            Steer::Chain => caught.go_on(),
            Steer::Command => self.command(trigger, caught)?,
            Steer::Review(pr) => self.review(pr, caught)?,
        };
        let phased = self.phases(&store, trigger, issue, steered, comment_id)?;
        Ok(self.report_job(&store, phased)?)
    }

    /// Step: the review round of pull request `pr` taken into the run, or why the job ends.
    fn review(&self, pr: PrNumber, caught: CaughtUp) -> Flow<Steered> {
        caught.steer(|run| match self.take_review(pr, run)? {
            Some(why) => Err(Stop::End(Ending::Nothing(why))),
            None => Ok(()),
        })
    }

    /// Step: the phases that are due, each in its own process, and what they left published.
    /// Ends the job when nothing is due; a failed check or phase is its error.
    pub(super) fn phases(
        &self,
        store: &Store,
        trigger: &Trigger,
        issue: IssueNumber,
        steered: Steered,
        comment_id: Option<CommentId>,
    ) -> Flow<Phased> {
        let Opened {
            dir,
            mut state,
            mut lease,
            restored,
            store: state_store,
            halt,
            ..
        } = steered.into_run();
        let halted = halt.is_some();
        if let Some(why) = skip_reason(&state, halted, trigger, issue) {
            return Err(Stop::End(Ending::Nothing(why)));
        }
        // The phase process reads the run from disk and takes the store itself.
        state_store.save(&mut state)?;
        drop(state_store);

        // The first job of a chain checks what the run needs (`doctor`'s local checks) before
        // any agent runs, so a missing key is on the status comment at once.
        let config = self.env.config.as_ref().map(|c| self.repo.join(c));
        let keys = [
            ("ANTHROPIC_API_KEY", self.env.anthropic_key.is_some()),
            ("OPENAI_API_KEY", self.env.openai_key.is_some()),
        ];
        let provided: Vec<&str> = keys.iter().filter(|k| k.1).map(|k| k.0).collect();
        if restored.is_none()
            && !halted
            && let Some(why) =
                crate::commands::doctor::action_preflight(self.repo, config.as_deref(), &provided)
        {
            let failure = PhaseFailure {
                kind: ErrorKind::Config,
                why,
            };
            let phase = state.phase();
            return Err(self
                .failed(issue, &state, comment_id, restored, phase, failure)
                .into());
        }
        let before = progress(&state);
        let mut steps = self.phase_steps(store, &dir, &state, halted, &mut lease)?;
        let job = Ran {
            issue,
            earlier: std::mem::take(&mut steps.earlier),
            phase: steps.phase,
            end: steps.end,
            halt,
            comment_id,
            pr_published: steps.pr_published,
        };
        if let Some(failure) = child_error(job.end) {
            let phase = job.phase;
            return Err(self
                .failed(issue, &steps.state, comment_id, restored, phase, failure)
                .into());
        }
        evidence::after_phase(
            store,
            self.env,
            &dir,
            &mut steps.state,
            issue,
            self.config.github.evidence_retention_days,
        );
        self.publisher
            .publish(&job, &dir, &mut steps.state, lease)?;
        // A job stopped at its time budget before any agent call finished would hand over
        // forever; after three such jobs in a row the chain waits for a larger budget.
        let idle = idle_jobs(&steps.state, job.end, before);
        Ok(Phased { job, steps, idle })
    }

    /// Step: what comes next decided, and the job reported (`publish.rs`).
    pub(super) fn report_job(&self, store: &Store, phased: Phased) -> Result<Exit> {
        let Phased { job, steps, idle } = phased;
        let Steps {
            store: state_store,
            mut state,
            ..
        } = steps;
        state.job.record(Effect::BudgetIdle(idle));
        let fan_out = self.env.part == Part::Chain { fan_out: true };
        let next = hand_out_or_dispatch(
            decide_next(&state, &job, idle, self.env.job_budget),
            fan_out,
        );
        if let (AfterJob::HandOut(_), Some(f)) = (&next, state.fanout.as_mut()) {
            // The wave is this run's: its legs restore this job's checkpoint.
            f.run = Some(self.env.run_id);
        }
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

    /// Ends the job without running anything, saying why; a refusal is answered on `number`
    /// (the issue, or the pull request a review came from) once per run.
    pub(super) fn end(&self, number: IssueNumber, ending: Ending) -> Result<Exit> {
        let (event, summary) = match &ending {
            Ending::Nothing(why) => (
                format!("nothing to do: {why}"),
                format!("Nothing to do: {why}"),
            ),
            Ending::Refuse(reason) => {
                self.chain.reply_refusal(number, reason)?;
                (format!("refused: {reason}"), format!("Refused: {reason}."))
            }
            Ending::NotNext(why) => (
                format!("not continuing the chain: {why}"),
                format!("Not continuing the chain: {why}."),
            ),
        };
        say(event);
        finish(self.env, "", &format!("## spec-orchestrate\n\n{summary}\n"))
    }
}
