//! The executor: one job of the chain carried out step by step, as the planner (`plan.rs`)
//! decided, under one open state store.

use super::Job;
use super::answer::AfterCommand;
use super::evidence;
use super::phases::Steps;
use super::plan::{
    Ran, Resume, child_error, decide_next, idle_jobs, outcome_of, progress, resume_from,
    skip_reason,
};
use crate::commands::Exit;
use crate::error::{ErrorKind, Result};
use crate::forge::github::event::Trigger;
use crate::state::StateStore;
use crate::state::job::Effect;

impl Job<'_> {
    /// One job of the chain, in the order its steps run: read the event, authorise who caused
    /// it, find which checkpoint to continue, restore (or start) the run, apply a command, run
    /// one phase, publish its work, decide what comes next and report.
    pub(super) fn run(&self) -> Result<Exit> {
        if self.env.event_name == "schedule" {
            return self.sweep();
        }
        let trigger = self.read_trigger()?;
        let Some(issue) = trigger.issue_number() else {
            let Trigger::Ignored(why) = &trigger else {
                return self.nothing("the event names no issue");
            };
            return self.nothing(why);
        };
        if let Some(reason) = self.authorise(&trigger)? {
            return self.refuse(issue, &reason);
        }

        let (status_comment, head) = self.status_head(issue)?;
        let parent = match resume_from(
            &trigger,
            issue,
            head,
            self.env.run_id,
            &self.config.github.trigger_label,
        ) {
            Resume::From(parent) => parent,
            Resume::Nothing(why) => return self.nothing(&why),
            Resume::Refuse(reason) => return self.refuse(issue, &reason),
        };

        let store = self.store()?;
        let (dir, mut state, mut lease) = self.open_run(&store, &trigger, issue, parent)?;
        let caught = self.catch_up(&trigger, issue, &dir, &mut state)?;
        if let Some(why) = caught.done_already {
            return self.nothing(&why);
        }
        let command_halt = match self.apply_command(&trigger, &dir, &mut state)? {
            AfterCommand::Run if matches!(trigger, Trigger::Command { .. }) => None,
            AfterCommand::Run => caught.halt,
            AfterCommand::Halt(message) => Some(message),
            AfterCommand::Reject(message) => return self.refuse(issue, &message),
        };
        if let Trigger::Command { comment_id, .. } = trigger {
            let seen_id = caught.seen.max(comment_id);
            state.job.record(Effect::CommentsSeen(seen_id));
        }
        if let Some(why) = skip_reason(&state, command_halt.is_some(), &trigger, issue) {
            return self.nothing(&why);
        }
        {
            let store = StateStore::open(&dir)?;
            store.save(&mut state)?;
        }

        // The first job of a chain checks what the run needs (`doctor`'s local checks) before
        // any agent runs, so a missing key is on the status comment at once.
        let config = self.env.config.as_ref().map(|c| self.repo.join(c));
        let keys = [
            ("ANTHROPIC_API_KEY", self.env.anthropic_key.is_some()),
            ("OPENAI_API_KEY", self.env.openai_key.is_some()),
        ];
        let provided: Vec<&str> = keys.iter().filter(|k| k.1).map(|k| k.0).collect();
        if parent.is_none()
            && command_halt.is_none()
            && let Some(why) =
                crate::commands::doctor::action_preflight(&self.repo, config.as_deref(), &provided)
        {
            let comment = status_comment.as_ref().map(|c| c.id);
            return self.failed(
                issue,
                &state,
                comment,
                parent,
                state.phase,
                (ErrorKind::Config, why),
            );
        }
        let before = progress(&state);
        let Steps {
            pr_published,
            earlier,
            phase: ran,
            end,
            store: state_store,
            mut state,
        } = self.phase_steps(&store, &dir, &state, command_halt.is_some(), &mut lease)?;
        let job = Ran {
            issue,
            earlier,
            phase: ran,
            end,
            halt: command_halt,
            comment_id: status_comment.as_ref().map(|c| c.id),
            pr_published,
        };
        if let Some(failure) = child_error(end) {
            return self.failed(issue, &state, job.comment_id, parent, ran, failure);
        }
        evidence::after_phase(
            &store,
            self.env,
            &dir,
            &mut state,
            issue,
            self.config.github.evidence_retention_days,
        );
        self.publish(&job, &dir, &mut state, lease)?;

        // A job stopped at its time budget before any agent call finished would hand over
        // forever; after three such jobs in a row the chain waits for a larger budget.
        let idle = idle_jobs(&state, end, before);
        state.job.record(Effect::BudgetIdle(idle));
        let next = decide_next(&state, &job, idle, self.env.job_budget);
        let outcome = outcome_of(&state, &job);
        self.report(&job, &store, state_store, state, &next, outcome)
    }
}
