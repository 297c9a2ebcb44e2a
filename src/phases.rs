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

use crate::agents::text_roles::Output;
use crate::agents::{AgentError, AgentReply, Failure, TaskInfo};
use crate::config::Config;
use crate::error::Result;
use crate::forge::local::LocalForge;
use crate::prompts::Template;
use crate::review::calls::{CallEnv, CallLog, FollowUp, Parse};
use crate::secrets::Redactor;
use crate::state::store::StateStore;
use crate::state::{AgentFailure, CallRecord, State, Waiting};
use crate::types::ids::TaskId;
use crate::types::kinds::{Answer, BlockerCategory, CallRole, WaitKind};
use crate::types::{Outcome, Phase, RunStop, StopKind};
use crate::util;

/// Everything a phase may touch.
#[derive(Debug)]
#[allow(missing_docs)]
pub struct Ctx {
    pub repo: PathBuf,
    pub config: Config,
    /// The run's state (saved through `store`).
    pub state: State,
    pub store: StateStore,
    /// Where branches and PRs go.
    pub forge: LocalForge,
    pub redactor: Redactor,
    /// Where `implement` runs its waves: here, or on the Action's matrix legs
    /// (`implement::legs`).
    pub waves: implement::legs::Waves,
}

/// Parameters of one agent call.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct Call<'a> {
    pub role: CallRole,
    pub agent: &'a str,
    /// Whether the role edits files.
    pub writes: bool,
    /// Loop round, if any.
    pub round: Option<u32>,
    /// Task, in implement.
    pub task: Option<TaskInfo>,
    pub prompt: String,
}

impl<'a> Call<'a> {
    /// A read-only call of `role` to `agent` in `round` (a writing one sets `writes`).
    pub fn new(role: impl Into<CallRole>, agent: &'a str, round: u32, prompt: String) -> Self {
        let (role, round) = (role.into(), Some(round));
        Call {
            role,
            agent,
            writes: false,
            round,
            task: None,
            prompt,
        }
    }
}

/// Who made a call, as its failures name it: role, agent, task.
type Who<'a> = (CallRole, &'a str, Option<TaskId>);

impl Ctx {
    /// Saves state atomically.
    pub fn save(&mut self) -> Result<()> {
        self.store.save(&mut self.state)
    }

    /// Absolute feature directory.
    pub fn feature_dir(&self) -> &Path {
        self.store.dir()
    }

    /// The feature's document `name` (`test.md`, …); `None` when it cannot be read (missing,
    /// or past [`crate::fsx::Limit::SpecDoc`]).
    pub fn doc(&self, name: &str) -> Option<String> {
        util::read_to_string_max(&self.feature_dir().join(name), crate::fsx::Limit::SpecDoc).ok()
    }

    /// `.specs/<feature>` relative to the repo.
    pub fn spec_rel(&self) -> String {
        crate::spec::spec_rel(&self.state.feature)
    }

    /// Calls an agent, retrying once on failure. Usage and every failure are recorded and state
    /// is saved after each attempt, so a crash loses at most the call in flight. After every
    /// attempt, what it changed outside its room ([`rooms`]) is undone and recorded as a
    /// `sandbox_violation`.
    ///
    /// The budget is checked before every attempt; a call that could exceed it, or a vendor
    /// refusing for spend-cap reasons, stops the run with [`crate::error::Error::Stopped`] (the driver
    /// lands a draft and `resume` continues here) instead of counting as an agent failure.
    pub fn call_agent(
        &mut self,
        call: &Call,
        phase: Phase,
    ) -> Result<Result<AgentReply, AgentError>> {
        Ok(lane::call_in_room(&lane::Solo::new(self), call, phase)?.0)
    }

    /// Records an agent failure of `who`'s call, its detail and `paths` redacted.
    pub(crate) fn fail(
        &mut self,
        phase: Phase,
        (role, agent, task): Who,
        category: BlockerCategory,
        detail: &str,
        paths: &[String],
    ) {
        let detail = self.redactor.redact(detail);
        let paths = paths.iter().map(|p| self.redactor.redact(p)).collect();
        let agent = agent.into();
        self.state.agent_failures.push(AgentFailure {
            phase,
            role,
            agent,
            category,
            detail,
            paths,
            task,
            ts: util::now(),
        });
    }

    /// Announces and records a `sandbox_violation` of `who`'s call: `detail` says what it did,
    /// `paths` the checkout's paths it changed outside its room (already undone), if any. The
    /// call itself keeps its outcome: what it did inside its room stands.
    pub(crate) fn violation(&mut self, phase: Phase, who: Who, detail: &str, paths: &[String]) {
        let detail = self.redactor.redact(detail);
        crate::events::emit(crate::events::Event::SandboxViolation {
            detail: detail.clone(),
        });
        self.fail(
            phase,
            who,
            BlockerCategory::SandboxViolation,
            &detail,
            paths,
        );
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
        let estimates: Vec<Option<f64>> = calls
            .iter()
            .map(|(a, p)| self.estimate_call(a, p))
            .collect();
        let estimate: f64 = estimates.iter().flatten().sum();
        let unknown = estimates.contains(&None);
        let left = budget - spent;
        let over = left < 0.0 || estimate > left + 1e-12 || (unknown && left <= 0.0);
        if !over {
            return Ok(());
        }
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
        let agent = names.first().copied().unwrap_or_default();
        Err(self.stop(StopKind::Budget, (phase, agent), message, Some(estimate)))
    }

    /// The stop of the run at `phase` by `kind`, the call of `agent` being next.
    fn stop(
        &self,
        kind: StopKind,
        (phase, agent): (Phase, &str),
        message: String,
        next_call_usd: Option<f64>,
    ) -> crate::error::Error {
        crate::error::Error::Stopped(Box::new(RunStop {
            kind,
            phase,
            agent: agent.into(),
            message,
            spent_usd: self.state.total_usd(),
            budget_usd: self.config.limits.budget_usd,
            next_call_usd,
            ts: util::now(),
        }))
    }

    /// The follow-up of a read-only call whose answer is `answer` (`what` names it): the
    /// `envelope_retry` template, or its override.
    pub fn follow_up(&self, what: &str, answer: Output) -> FollowUp {
        let template = crate::prompts::template(&self.repo, Template::EnvelopeRetry);
        FollowUp::new(template, what, answer)
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
        self.stop(kind, (phase, agent), message, None)
    }

    /// Records one call: its usage and a call record when the agent was invoked, an agent
    /// failure (redacted) when it failed. Every call of a run, writing or read-only, single or
    /// batched, enters the state here.
    fn record_log(&mut self, phase: Phase, log: &CallLog) {
        let who = || (log.role, log.agent.as_str(), log.task.clone());
        let u = &log.usage;
        if log.invoked {
            let usage = self.state.usage.entry(log.agent.as_str().into());
            usage
                .or_default()
                .add(u.input_tokens, u.output_tokens, u.usd);
            self.state.calls.push(CallRecord {
                agent: log.agent.as_str().into(),
                role: log.role,
                phase,
                attempt: log.attempt,
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                usd: u.usd,
                ok: log.failure.is_none(),
                session_id: log.session_id.clone(),
                task: log.task.clone(),
                ts: util::now(),
            });
        }
        if let Some(failure) = &log.failure {
            self.fail(phase, who(), failure.category, &failure.detail, &[]);
        }
        if !log.invoked {
            return;
        }
        // What the file-command guard found changed around the call (already put back): only
        // a program the orchestrator started writes the runner's file commands during a run
        // (`process::guard`).
        if !log.file_commands.is_empty() {
            let detail = format!(
                "{} ({}) or a program it started changed the runner's file commands, put back: {}",
                log.role,
                log.agent,
                log.file_commands.join("; ")
            );
            self.violation(phase, who(), &detail, &[]);
        }
        // Requests the model API proxy refused as not a model endpoint (already answered 403,
        // never forwarded): only an agent doing more than its call reaches for the vendor's
        // other APIs.
        if !log.refused.is_empty() {
            let detail = format!(
                "{} ({}) asked the model API proxy for {} that is not a model endpoint, refused without forwarding: {}",
                log.role,
                log.agent,
                counted(log.refused.len(), "a request", "requests"),
                log.refused.join(", ")
            );
            self.violation(phase, who(), &detail, &[]);
        }
    }

    /// Records what a batch of calls cost and every failure among them, then saves.
    pub fn record_calls(&mut self, phase: Phase, logs: &[CallLog]) -> Result<()> {
        for log in logs {
            self.record_log(phase, log);
        }
        self.save()?;
        // A vendor refused for spend reasons inside a concurrent batch: the run stops exactly as
        // it does for a single call.
        let stops = |l: &'_ CallLog| l.failure.clone().filter(|f| f.category.stops_the_run());
        match logs.iter().rev().find_map(|l| Some((l, stops(l)?))) {
            Some((log, f)) => {
                let detail = self.redactor.redact(&f.detail);
                Err(self.spend_stop(phase, &log.agent, f.category, &detail))
            }
            None => Ok(()),
        }
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
        let files = crate::spec::spec_files(&self.repo, &self.spec_rel());
        lane::read_only(&lane::Solo::new(self), call, phase, parse, |env| {
            env.files = files;
            env.follow_up = follow_up;
        })
    }

    /// Issue title and body for prompts.
    pub fn issue_vars(&self) -> (String, String) {
        let issue = &self.state.issue;
        (issue.title.clone(), issue.body.clone())
    }

    /// Agent playing `role` now.
    pub fn agent(&self, role: crate::types::Role) -> String {
        agent_for(&self.state, &self.config, role)
    }
}

/// The run waits as `kind` for one of `choices` (none: a command other than an answer, such
/// as `approve`); `message` says what to do.
pub fn waiting(kind: WaitKind, message: String, choices: Vec<Answer>) -> Waiting {
    Waiting {
        kind,
        message,
        choices,
        phase: None,
        signal: None,
    }
}

/// The agent playing `role` in the run of `state`: the state's, else the configured one.
pub fn agent_for(state: &State, config: &Config, role: crate::types::Role) -> String {
    state
        .agent_for(role)
        .unwrap_or(config.roles.get(role))
        .to_string()
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
