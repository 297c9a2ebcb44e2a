//! One module per phase, and the context they share.
//!
//! A phase reads what it needs from [`Ctx`], dispatches agents through [`Ctx::call_agent`]
//! (which records usage and failures and saves state after every call), writes its records,
//! and reports an [`Outcome`]. It never decides the next phase: that is `machine::transition`.

pub mod approval;
pub mod arbitration;
pub mod evaluate;
pub mod implement;
pub mod inspect;
pub mod intake;
pub mod lane;
pub mod loops;
pub mod pr;
pub mod retrospective;
pub mod revise;
pub mod spec_generate;
pub mod spec_review;

use std::path::{Path, PathBuf};

use crate::agents::rooms::Room;
use crate::agents::{AgentError, AgentReply, Failure, TaskInfo};
use crate::config::Config;
use crate::error::Result;
use crate::forge::local::LocalForge;
use crate::prompts::Template;
use crate::review::calls::{self, Answer, CallEnv, CallLog, FollowUp, Parse, ReviewCall};
use crate::review::envelope::{self, Envelope};
use crate::secrets::Redactor;
use crate::state::store::StateStore;
use crate::state::{AgentFailure, CallRecord, State};
use crate::types::ids::{AgentName, TaskId};
use crate::types::kinds::{BlockerCategory, CallRole};
use crate::types::{Outcome, Phase, RunStop, StopKind};
use crate::util;

/// Everything a phase may touch.
#[derive(Debug)]
pub struct Ctx {
    /// Repository root.
    pub repo: PathBuf,
    /// Validated configuration.
    pub config: Config,
    /// The run's state (saved through `store`).
    pub state: State,
    /// The locked state store.
    pub store: StateStore,
    /// Where branches and PRs go.
    pub forge: LocalForge,
    /// Known secret values.
    pub redactor: Redactor,
    /// Where `implement` runs its waves: here, or on the Action's matrix legs
    /// (`implement::legs`).
    pub waves: implement::legs::Waves,
}

/// Parameters of one agent call.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// Role played (`spec_author`, `task_reviewer`, …).
    pub role: CallRole,
    /// Agent name.
    pub agent: &'a str,
    /// Whether the role edits files.
    pub writes: bool,
    /// Loop round, if any.
    pub round: Option<u32>,
    /// Task, in implement.
    pub task: Option<TaskInfo>,
    /// The prompt.
    pub prompt: String,
}

impl Ctx {
    /// Saves state atomically.
    pub fn save(&mut self) -> Result<()> {
        self.store.save(&mut self.state)
    }

    /// Absolute feature directory.
    pub fn feature_dir(&self) -> &Path {
        self.store.dir()
    }

    /// `.specs/<feature>` relative to the repo.
    pub fn spec_rel(&self) -> String {
        crate::spec::spec_rel(&self.state.feature)
    }

    /// Calls an agent, retrying once on failure. Usage and every failure are recorded and state
    /// is saved after each attempt, so a crash loses at most the call in flight.
    ///
    /// The budget is checked before every attempt; a call that could exceed it, or a vendor
    /// refusing for spend-cap reasons, stops the run with [`crate::error::Error::Stopped`] (the driver
    /// lands a draft and `resume` continues here) instead of counting as an agent failure.
    pub fn call_agent(
        &mut self,
        call: &Call,
        phase: Phase,
    ) -> Result<Result<AgentReply, AgentError>> {
        Ok(self.call_in_room(call, phase)?.0)
    }

    /// [`Ctx::call_agent`], also returning the paths the agent changed inside its room (see
    /// [`rooms`]): after every attempt, what it changed outside the room is undone and
    /// recorded as a `sandbox_violation`.
    pub fn call_in_room(
        &mut self,
        call: &Call,
        phase: Phase,
    ) -> Result<(Result<AgentReply, AgentError>, Vec<String>)> {
        lane::call_in_room(&lane::Solo::new(self), call, phase)
    }

    /// Reports and records the paths a writing call changed outside its room (already undone):
    /// a `sandbox_violation` failure naming the role, the agent and the paths. The call itself
    /// keeps its outcome: what it did inside its room stands.
    fn record_room(&mut self, phase: Phase, call: &Call, room: &Room, outside: &[String]) {
        if outside.is_empty() {
            return;
        }
        let detail = self.redactor.redact(&format!(
            "{} ({}) changed {} outside its room ({}), undone: {}{}",
            call.role,
            call.agent,
            counted(outside.len(), "a path", "paths"),
            room.describe(),
            outside
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            if outside.len() > 5 { ", …" } else { "" },
        ));
        let paths = outside.iter().map(|p| self.redactor.redact(p)).collect();
        let task = call.task.as_ref().map(|t| t.id.as_str().into());
        self.push_violation(phase, call.role, call.agent.into(), task, detail, paths);
    }

    /// What is left of `limits.budget_usd`, if one is set.
    fn budget_left(&self) -> Option<f64> {
        self.config
            .limits
            .budget_usd
            .map(|b| b - self.state.total_usd())
    }

    /// The estimated cost of `agent`'s next call: its most expensive call so far, and at least
    /// the price of the prompt's input tokens (about four characters per token) when the agent
    /// has a price. `None` when nothing is known (an agent without price that never ran).
    pub fn estimate_call(&self, agent: &str, prompt: &str) -> Option<f64> {
        let recorded = self
            .state
            .usage
            .get(agent)
            .filter(|u| u.calls > 0)
            .map(|u| u.max_call_usd);
        let floor = self
            .config
            .agents
            .get(agent)
            .and_then(|a| self.config.price_of(a))
            .map(|(_, p)| prompt.len() as f64 / 4.0 * p.input / 1_000_000.0);
        match (recorded, floor) {
            (None, None) => None,
            (r, f) => Some(r.unwrap_or(0.0).max(f.unwrap_or(0.0))),
        }
    }

    /// Checks `limits.budget_usd` before the calls `(agent, prompt)` are made: when they could
    /// exceed it, the run stops with [`crate::error::Error::Stopped`] naming the budget, what is spent,
    /// the estimate and how to continue.
    pub fn ensure_budget(&self, phase: Phase, calls: &[(&str, &str)]) -> Result<()> {
        let Some(budget) = self.config.limits.budget_usd else {
            return Ok(());
        };
        let spent = self.state.total_usd();
        let mut estimate = 0.0;
        let mut unknown = false;
        for (agent, prompt) in calls {
            match self.estimate_call(agent, prompt) {
                Some(x) => estimate += x,
                None => unknown = true,
            }
        }
        let left = budget - spent;
        let over = left < 0.0 || estimate > left + 1e-12 || (unknown && left <= 0.0);
        if !over {
            return Ok(());
        }
        let agent = calls.first().map(|(a, _)| *a).unwrap_or_default();
        let names: Vec<&str> = calls.iter().map(|(a, _)| *a).collect();
        let config_file = self
            .state
            .config_path
            .clone()
            .unwrap_or_else(|| crate::config::CONFIG_PATH.to_string());
        let message = format!(
            "stopped: limits.budget_usd is {budget:.4} USD, {spent:.4} USD is spent, and the next call{} ({}) {} could exceed it. The state is saved at {} and a draft says so; raise `limits.budget_usd` in {config_file} and run `spec-orchestrate resume` to continue at {phase}.",
            if calls.len() > 1 { "s" } else { "" },
            names.join(" + "),
            if unknown {
                "of unknown cost".to_string()
            } else {
                format!("estimated at {estimate:.4} USD")
            },
            self.store.dir().join(crate::state::STATE_FILE).display(),
        );
        Err(crate::error::Error::Stopped(Box::new(RunStop {
            kind: StopKind::Budget,
            phase,
            agent: agent.into(),
            message,
            spent_usd: spent,
            budget_usd: Some(budget),
            next_call_usd: Some(estimate),
            ts: util::now(),
        })))
    }

    /// The environment read-only calls of this run use: the repository as workdir, the spec
    /// documents as files, and a guard over the working tree and the spec directory.
    pub fn call_env(&self, phase: Phase) -> CallEnv<'_> {
        lane::env_of(
            (&self.config, &self.redactor),
            self.forge.git(),
            &self.spec_rel(),
            FollowUp::envelope(crate::prompts::template(
                &self.repo,
                Template::EnvelopeRetry,
            )),
            (self.budget_left(), phase),
        )
    }

    /// The stop of a run whose agent was refused for spend reasons: a vendor's spend cap or
    /// quota, or the agent stopping itself at what was left of the budget.
    fn spend_stop(
        &self,
        phase: Phase,
        agent: &str,
        category: BlockerCategory,
        detail: &str,
    ) -> crate::error::Error {
        let (kind, message) = if category == BlockerCategory::BudgetExhausted {
            (
                StopKind::Budget,
                format!(
                    "stopped: agent `{agent}` reached what was left of limits.budget_usd ({:.4} USD of {:.4} USD spent) and was stopped ({detail}). The state is saved and a draft says so; raise `limits.budget_usd` and run `spec-orchestrate resume`.",
                    self.state.total_usd(),
                    self.config.limits.budget_usd.unwrap_or_default()
                ),
            )
        } else {
            (
                StopKind::Quota,
                format!(
                    "stopped: the API behind agent `{agent}` refused the call for spend-cap or quota reasons, and that is never retried ({detail}). The state is saved and a draft says so; once the limit is raised or credits are added, run `spec-orchestrate resume`."
                ),
            )
        };
        crate::error::Error::Stopped(Box::new(RunStop {
            kind,
            phase,
            agent: agent.into(),
            message,
            spent_usd: self.state.total_usd(),
            budget_usd: self.config.limits.budget_usd,
            next_call_usd: None,
            ts: util::now(),
        }))
    }

    /// Records one call: its usage and a call record when the agent was invoked, an agent
    /// failure (redacted) when it failed. Every call of a run, writing or read-only, single or
    /// batched, enters the state here.
    fn record_log(&mut self, phase: Phase, log: &CallLog) {
        if log.invoked {
            self.state
                .usage
                .entry(log.agent.as_str().into())
                .or_default()
                .add(
                    log.usage.input_tokens,
                    log.usage.output_tokens,
                    log.usage.usd,
                );
            self.state.calls.push(CallRecord {
                agent: log.agent.as_str().into(),
                role: log.role,
                phase,
                attempt: log.attempt,
                input_tokens: log.usage.input_tokens,
                output_tokens: log.usage.output_tokens,
                usd: log.usage.usd,
                ok: log.failure.is_none(),
                session_id: log.session_id.clone(),
                task: log.task.clone(),
                ts: util::now(),
            });
        }
        if let Some(failure) = &log.failure {
            self.state.agent_failures.push(AgentFailure {
                phase,
                role: log.role,
                agent: log.agent.as_str().into(),
                category: failure.category,
                detail: self.redactor.redact(&failure.detail),
                paths: Vec::new(),
                task: log.task.clone(),
                ts: util::now(),
            });
        }
        if log.invoked {
            self.record_refused(phase, log);
        }
    }

    /// Records the requests the model API proxy refused to `log`'s agent as not a model
    /// endpoint (already answered 403, never forwarded): a `sandbox_violation`, since only an
    /// agent doing more than its call reaches for the vendor's other APIs.
    fn record_refused(&mut self, phase: Phase, log: &CallLog) {
        self.record_file_commands(phase, log);
        let refused = &log.refused;
        if refused.is_empty() {
            return;
        }
        let detail = self.redactor.redact(&format!(
            "{} ({}) asked the model API proxy for {} that is not a model endpoint, refused without forwarding: {}",
            log.role,
            log.agent,
            counted(refused.len(), "a request", "requests"),
            refused.join(", ")
        ));
        self.push_call_violation(phase, log, detail);
    }

    /// Announces and records a `sandbox_violation` of `agent`'s call as `role`: the paths of
    /// the checkout it changed outside its room (already undone), or none (a refused proxy
    /// request, a file command put back).
    fn push_violation(
        &mut self,
        phase: Phase,
        role: CallRole,
        agent: AgentName,
        task: Option<TaskId>,
        detail: String,
        paths: Vec<String>,
    ) {
        crate::events::emit(crate::events::Event::SandboxViolation {
            detail: detail.clone(),
        });
        self.state.agent_failures.push(AgentFailure {
            phase,
            role,
            agent,
            category: BlockerCategory::SandboxViolation,
            detail,
            paths,
            task,
            ts: util::now(),
        });
    }

    /// [`Ctx::push_violation`] for `log`'s call, which changed no path of the checkout.
    fn push_call_violation(&mut self, phase: Phase, log: &CallLog, detail: String) {
        let agent = log.agent.as_str().into();
        self.push_violation(phase, log.role, agent, log.task.clone(), detail, Vec::new());
    }

    /// Records what the file-command guard found changed around `log`'s call (already put
    /// back): a `sandbox_violation` naming the files, since only a program the orchestrator
    /// started writes the runner's file commands during a run (`process::guard`).
    fn record_file_commands(&mut self, phase: Phase, log: &CallLog) {
        let found = &log.file_commands;
        if found.is_empty() {
            return;
        }
        let detail = self.redactor.redact(&format!(
            "{} ({}) or a program it started changed the runner's file commands, put back: {}",
            log.role,
            log.agent,
            found.join("; ")
        ));
        self.push_call_violation(phase, log, detail);
    }

    /// Records what a batch of calls cost and every failure among them, then saves.
    pub fn record_calls(&mut self, phase: Phase, logs: &[CallLog]) -> Result<()> {
        let mut refused: Option<(String, BlockerCategory, String)> = None;
        for log in logs {
            self.record_log(phase, log);
            if let Some(failure) = &log.failure
                && failure.category.stops_the_run()
            {
                refused = Some((
                    log.agent.clone(),
                    failure.category,
                    self.redactor.redact(&failure.detail),
                ));
            }
        }
        self.save()?;
        if let Some((agent, category, detail)) = refused {
            // A vendor refused for spend reasons inside a concurrent batch: the run stops exactly
            // as it does for a single call.
            return Err(self.spend_stop(phase, &agent, category, &detail));
        }
        Ok(())
    }

    /// Runs `calls` as one read-only batch through [`calls::run_batch`] (budget checked first,
    /// `adjust` applied to this run's [`CallEnv`]), records every invocation and failure, and
    /// returns the answers in the order of `calls`.
    fn run_calls<T: Send>(
        &mut self,
        calls: &[ReviewCall],
        phase: Phase,
        adjust: impl FnOnce(&mut CallEnv),
        parse: Parse<T>,
    ) -> Result<Vec<Answer<T>>> {
        let planned: Vec<(&str, &str)> = calls
            .iter()
            .map(|c| (c.agent.as_str(), c.prompt.as_str()))
            .collect();
        self.ensure_budget(phase, &planned)?;
        let answers = {
            let mut env = self.call_env(phase);
            adjust(&mut env);
            calls::run_batch(&env, calls, parse)?
        };
        let logs: Vec<CallLog> = answers.iter().flat_map(|a| a.logs.clone()).collect();
        self.record_calls(phase, &logs)?;
        Ok(answers)
    }

    /// Calls one read-only agent the way every reviewer is called (see [`crate::review::calls`]:
    /// one retry on failure, the sandbox guard that undoes and reports edits, one `follow_up`
    /// when `parse` rejects the answer), pointed at the spec documents and the steps file, with
    /// what is left of the budget. `Err` carries why it failed.
    pub(crate) fn read_only_call<T: Send>(
        &mut self,
        call: &Call,
        phase: Phase,
        parse: Parse<T>,
        follow_up: FollowUp,
    ) -> Result<Result<T, Failure>> {
        let mut answers =
            self.read_only_batch(std::slice::from_ref(call), phase, parse, follow_up)?;
        Ok(answers
            .pop()
            .unwrap_or_else(|| Err(Failure::new(BlockerCategory::EnvError, "no answer"))))
    }

    /// [`Ctx::read_only_call`] for several calls at once: they run concurrently, and each answer
    /// is parsed (and followed up) on its own, so one unusable answer does not cost the others.
    /// The results come back in the order of `calls`.
    pub(crate) fn read_only_batch<T: Send>(
        &mut self,
        calls: &[Call],
        phase: Phase,
        parse: Parse<T>,
        follow_up: FollowUp,
    ) -> Result<Vec<Result<T, Failure>>> {
        let files = crate::spec::spec_files(&self.repo, &self.spec_rel());
        let batch: Vec<ReviewCall> = calls.iter().map(review_call_of).collect();
        let answers = self.run_calls(
            &batch,
            phase,
            |env| {
                env.files = files;
                env.follow_up = follow_up;
            },
            parse,
        )?;
        Ok(answers.into_iter().map(|a| a.result).collect())
    }

    /// Runs a batch of read-only calls whose answers are envelopes (see
    /// [`crate::review::calls`]), records them, and returns each envelope with fingerprints, or
    /// the reason the call failed.
    pub fn review_batch(
        &mut self,
        calls: &[ReviewCall],
        phase: Phase,
    ) -> Result<Vec<(ReviewCall, Result<Envelope, Failure>)>> {
        let answers = self.run_calls(calls, phase, |_| {}, &envelope::parse_answer)?;
        Ok(answers.into_iter().map(|a| (a.call, a.result)).collect())
    }

    /// Calls one reviewer and extracts its envelope (one retry on failure, one "only the JSON
    /// envelope" follow-up, sandbox check). `Err` carries why the call failed.
    pub fn review_call(&mut self, call: &Call, phase: Phase) -> Result<Result<Envelope, Failure>> {
        lane::review_call(&lane::Solo::new(self), call, phase)
    }

    /// Issue title and body for prompts.
    pub fn issue_vars(&self) -> (String, String) {
        (
            self.state.issue.title.clone(),
            self.state.issue.body.clone(),
        )
    }

    /// Agent playing `role` now.
    pub fn agent(&self, role: crate::types::Role) -> String {
        self.state
            .agent_for(role)
            .unwrap_or(self.config.roles.get(role))
            .to_string()
    }
}

/// `paths` sorted, each once.
fn dedup(mut paths: Vec<String>) -> Vec<String> {
    paths.sort();
    paths.dedup();
    paths
}

/// The read-only call of a phase's [`Call`].
fn review_call_of(call: &Call) -> ReviewCall {
    ReviewCall {
        role: call.role,
        agent: call.agent.into(),
        label: None,
        round: call.round,
        task: call.task.clone(),
        prompt: call.prompt.clone(),
    }
}

/// Runs `phase`.
pub fn run(ctx: &mut Ctx, phase: Phase) -> Result<Outcome> {
    match phase {
        Phase::Intake => intake::run(ctx),
        Phase::SpecGenerate => spec_generate::run(ctx),
        Phase::Inspect => inspect::run(ctx),
        Phase::SpecReview => spec_review::run(ctx),
        Phase::Approval => approval::run(ctx),
        Phase::Implement => implement::run(ctx),
        Phase::Evaluate => evaluate::run(ctx),
        Phase::Pr => pr::run(ctx),
        Phase::Retrospective => retrospective::run(ctx),
        Phase::Done => Ok(Outcome::Ok),
    }
}

/// `one` for a single thing, else `n` and `many` ("a path", "3 paths").
fn counted(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        one.to_string()
    } else {
        format!("{n} {many}")
    }
}
