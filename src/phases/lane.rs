//! Where a writing call and its review run, and how they reach the run's record.
//!
//! A phase's calls run in the checkout, holding the [`Ctx`] throughout ([`Solo`]). The tasks of
//! one implement wave run at once, each in its own worktree ([`Shared`]): the run's record is
//! behind one lock, taken to check the budget and to record and save what a call did, and let
//! go while the agent works, so the calls of a wave overlap while every state save stays whole
//! (one [`crate::state::store::StateStore`], one writer at a time). Both go through the same
//! [`call_in_room`] and [`read_only`], so a task in a worktree is held to its room, its budget
//! and its retries exactly as in the checkout.

use std::cell::RefCell;
use std::sync::{Mutex, PoisonError};

use super::{Call, Ctx, counted};
use crate::agents::rooms::{self, Room};
use crate::agents::{self, AgentError, AgentReply, AgentRequest, Failure};
use crate::config::Config;
use crate::error::Result;
use crate::git::Git;
use crate::prompts::Template;
use crate::review::calls::{self, CallEnv, CallLog, FollowUp, Guard, ReviewCall};
use crate::secrets::Redactor;
use crate::types::Phase;
use crate::types::kinds::BlockerCategory;

/// The run's record and the checkout an agent works in, as one call sees them.
pub trait Hold {
    /// Runs `f` on the run's context (under the lock, for a task of a parallel wave). Never
    /// called again from inside `f`.
    fn with<R>(&self, f: impl FnOnce(&mut Ctx) -> R) -> R;
    /// Runs `f` with the configuration and the redactor, without holding the context: the
    /// agent call itself.
    fn free<R>(&self, f: impl FnOnce(&Config, &Redactor) -> R) -> R;
    /// The checkout the agent works in (its working tree is the agent's workdir).
    fn git(&self) -> &Git;
    /// Whether that checkout is the run's own (its commits are the work branch's).
    fn in_checkout(&self) -> bool;
    /// How many tasks run at once with this one: each call is handed that share of what is
    /// left of the budget (a CLI that can stops itself there, the model API proxy cuts there).
    fn width(&self) -> usize;
}

fn share(left: Option<f64>, width: usize) -> Option<f64> {
    left.map(|l| l / width.max(1) as f64)
}

/// The run's own checkout, the context held by one phase.
pub struct Solo<'a> {
    ctx: RefCell<&'a mut Ctx>,
    git: Git,
}

impl<'a> Solo<'a> {
    /// Holds `ctx` for calls in its checkout.
    pub fn new(ctx: &'a mut Ctx) -> Solo<'a> {
        let git = ctx.forge.git().clone();
        Solo {
            ctx: RefCell::new(ctx),
            git,
        }
    }
}

impl Hold for Solo<'_> {
    fn with<R>(&self, f: impl FnOnce(&mut Ctx) -> R) -> R {
        f(&mut self.ctx.borrow_mut())
    }
    fn free<R>(&self, f: impl FnOnce(&Config, &Redactor) -> R) -> R {
        let ctx = self.ctx.borrow();
        f(&ctx.config, &ctx.redactor)
    }
    fn git(&self) -> &Git {
        &self.git
    }
    fn in_checkout(&self) -> bool {
        true
    }
    fn width(&self) -> usize {
        1
    }
}

/// One task of a parallel wave: the context behind the wave's lock, the configuration and the
/// redactor copied for the calls, and the task's worktree.
#[allow(missing_docs)]
pub struct Shared<'a, 'c> {
    pub ctx: &'a Mutex<&'c mut Ctx>,
    /// The run's configuration (a copy: it does not change while the wave runs).
    pub config: &'a Config,
    /// The run's redactor (a copy).
    pub redactor: &'a Redactor,
    pub git: Git,
    /// How many tasks the wave runs at once.
    pub width: usize,
}

impl Hold for Shared<'_, '_> {
    fn with<R>(&self, f: impl FnOnce(&mut Ctx) -> R) -> R {
        let mut ctx = self.ctx.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut ctx)
    }
    fn free<R>(&self, f: impl FnOnce(&Config, &Redactor) -> R) -> R {
        f(self.config, self.redactor)
    }
    fn git(&self) -> &Git {
        &self.git
    }
    fn in_checkout(&self) -> bool {
        false
    }
    fn width(&self) -> usize {
        self.width
    }
}

/// [`Ctx::call_agent`] in `h`'s checkout: the agent called (one retry on failure), held to
/// its room there ([`rooms`]: what it changed outside undone and recorded as a
/// `sandbox_violation`), every attempt recorded and saved; with the reply, the paths it changed
/// inside its room, which are all a task commit stages.
pub fn call_in_room<H: Hold>(
    h: &H,
    call: &Call,
    phase: Phase,
) -> Result<(Result<AgentReply, AgentError>, Vec<String>)> {
    let spec_rel = h.with(|c| c.spec_rel());
    let room = Room::of(call.role, &spec_rel);
    let git = h.git();
    let workdir = git.dir().to_path_buf();
    let mut inside: Vec<String> = Vec::new();
    let mut last_err = None;
    for attempt in 1..=2u32 {
        let limits = h.with(|c| -> Result<agents::CallLimits> {
            c.ensure_budget(phase, &[(call.agent, call.prompt.as_str())])?;
            Ok(agents::CallLimits {
                budget_left: share(c.budget_left(), h.width()),
            })
        })?;
        let request = AgentRequest {
            role: call.role.to_string(),
            phase: phase.as_str().to_string(),
            round: call.round,
            attempt,
            workdir: workdir.clone(),
            spec_dir: spec_rel.clone(),
            task: call.task.clone(),
            files: crate::spec::spec_files(&workdir, &spec_rel),
            prompt: call.prompt.clone(),
            label: None,
            answer: agents::text_roles::Output::of_writer(call.role),
        };
        crate::events::emit(crate::events::Event::AgentCallStarted {
            role: call.role,
            agent: call.agent.into(),
            attempt,
        });
        let before = rooms::before(git, room.clone(), &spec_rel)?;
        let called = h.free(|config, redactor| {
            agents::call_noted(
                config,
                &call.agent.into(),
                call.writes,
                &request,
                redactor,
                limits,
            )
        });
        let settled = rooms::settle(git, &before)?;
        inside.extend(settled.inside);
        let log = CallLog::invocation(
            (call.role, call.agent, call.task.as_ref()),
            attempt,
            &called,
        );
        let result = called.result;
        h.with(|c| -> Result<()> {
            if !settled.outside.is_empty() {
                let outside = &settled.outside;
                let detail = format!(
                    "{} ({}) changed {} outside its room ({}), undone: {}{}",
                    call.role,
                    call.agent,
                    counted(outside.len(), "a path", "paths"),
                    room.describe(),
                    outside[..outside.len().min(5)].join(", "),
                    if outside.len() > 5 { ", …" } else { "" },
                );
                let task = call.task.as_ref().map(|t| t.id.as_str().into());
                c.violation(phase, (call.role, call.agent, task), &detail, outside);
            }
            c.record_log(phase, &log);
            c.save()?;
            if let Err(e) = &result
                && e.category.stops_the_run()
            {
                let detail = c.redactor.redact(&e.detail);
                crate::events::emit(crate::events::Event::AgentStopped {
                    agent: call.agent.into(),
                    detail: detail.clone(),
                });
                return Err(c.spend_stop(phase, call.agent, e.category, &detail));
            }
            Ok(())
        })?;
        match result {
            Ok(reply) => return Ok((Ok(reply), sorted(inside))),
            Err(e) => {
                crate::events::emit(crate::events::Event::AgentCallFailed {
                    agent: call.agent.into(),
                    error: e.to_string(),
                });
                last_err = Some(e);
            }
        }
    }
    let err = last_err
        .unwrap_or_else(|| AgentError::new(BlockerCategory::AgentError, "no attempt was made"));
    Ok((Err(err), sorted(inside)))
}

fn sorted(mut paths: Vec<String>) -> Vec<String> {
    paths.sort();
    paths.dedup();
    paths
}

/// One read-only call in `h`'s checkout, the way every reviewer is called (one retry, one
/// "only the JSON" follow-up when `parse` rejects the answer, the sandbox guard over that
/// checkout), `adjust` applied to its environment: its answer, or why it failed. A fix task's
/// review reads an envelope and more (its rulings on the disputed cases,
/// `review::dispute::parse_review`).
pub fn read_only<H: Hold, T: Send>(
    h: &H,
    call: &Call,
    phase: Phase,
    parse: calls::Parse<T>,
    adjust: impl FnOnce(&mut CallEnv),
) -> Result<Result<T, Failure>> {
    let one = ReviewCall {
        task: call.task.clone(),
        ..ReviewCall::new(call.role, call.agent, call.round, call.prompt.clone())
    };
    let git = h.git().clone();
    let (spec_rel, follow_up, budget_left) = h.with(|c| -> Result<_> {
        c.ensure_budget(phase, &[(call.agent, call.prompt.as_str())])?;
        Ok((
            c.spec_rel(),
            FollowUp::envelope(crate::prompts::template(&c.repo, Template::EnvelopeRetry)),
            share(c.budget_left(), h.width()),
        ))
    })?;
    let answer = h.free(|config, redactor| {
        let mut env = env_of(
            (config, redactor),
            &git,
            &spec_rel,
            follow_up,
            (budget_left, phase),
        );
        adjust(&mut env);
        calls::run_one(&env, one, parse)
    })?;
    h.with(|c| c.record_calls(phase, &answer.logs))?;
    Ok(answer.result)
}

/// The environment of read-only calls in `git`'s checkout: its working tree as workdir, the
/// spec documents as files, and a guard over that tree and the spec directory.
pub fn env_of<'a>(
    (config, redactor): (&'a Config, &'a Redactor),
    git: &Git,
    spec_rel: &str,
    follow_up: FollowUp,
    (budget_left, phase): (Option<f64>, Phase),
) -> CallEnv<'a> {
    CallEnv {
        config,
        redactor,
        workdir: git.dir().to_path_buf(),
        spec_dir: spec_rel.to_string(),
        files: crate::spec::doc_paths(spec_rel),
        phase: phase.as_str().to_string(),
        follow_up,
        budget_left,
        guard: Guard::Git {
            git: git.clone(),
            watch: vec![spec_rel.to_string()],
        },
    }
}
