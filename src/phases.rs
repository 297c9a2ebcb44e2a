//! One module per phase, and the context they share.
//!
//! A phase reads what it needs from [`Ctx`], dispatches agents through [`Ctx::call_agent`]
//! (which records usage and failures and saves state after every call), writes its records,
//! and reports an [`Outcome`]. It never decides the next phase: that is `machine::transition`.

pub mod approval;
pub mod evaluate;
pub mod implement;
pub mod inspect;
pub mod intake;
pub mod pr;
pub mod retrospective;
pub mod spec_generate;
pub mod spec_review;

use std::path::{Path, PathBuf};

use crate::agents::{self, AgentError, AgentReply, AgentRequest, TaskInfo};
use crate::config::Config;
use crate::error::Result;
use crate::forge::LocalForge;
use crate::machine::{Outcome, Phase};
use crate::review::calls::{self, CallEnv, CallLog, Guard, ReviewCall};
use crate::review::envelope::{self, Envelope};
use crate::secrets::Redactor;
use crate::state::{AgentFailure, State, StateStore};
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
}

/// Parameters of one agent call.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// Role name as sent in the request (`spec_author`, `task_reviewer`, …).
    pub role: &'a str,
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
    pub fn call_agent(
        &mut self,
        call: &Call,
        phase: Phase,
    ) -> Result<Result<AgentReply, AgentError>> {
        let mut last_err = None;
        for attempt in 1..=2u32 {
            let request = AgentRequest {
                role: call.role.to_string(),
                phase: phase.as_str().to_string(),
                round: call.round,
                attempt,
                workdir: self.repo.clone(),
                spec_dir: self.spec_rel(),
                task: call.task.clone(),
                files: crate::spec::doc_paths(&self.spec_rel()),
                prompt: call.prompt.clone(),
                label: None,
            };
            eprintln!("    {} → {} (attempt {attempt})", call.role, call.agent);
            let result = agents::call(
                &self.config,
                call.agent,
                call.writes,
                &request,
                &self.redactor,
            );
            let usage = match &result {
                Ok(r) => r.usage,
                Err(e) => e.usage,
            };
            let u = self.state.usage.entry(call.agent.to_string()).or_default();
            u.calls += 1;
            u.input_tokens += usage.input_tokens;
            u.output_tokens += usage.output_tokens;
            u.usd += usage.usd;
            match result {
                Ok(reply) => {
                    self.save()?;
                    return Ok(Ok(reply));
                }
                Err(e) => {
                    eprintln!("    {} failed: {e}", call.agent);
                    self.state.agent_failures.push(AgentFailure {
                        phase,
                        role: call.role.to_string(),
                        agent: call.agent.to_string(),
                        category: e.category.as_str().to_string(),
                        detail: self.redactor.redact(&e.detail),
                        ts: util::now(),
                    });
                    self.save()?;
                    last_err = Some(e);
                }
            }
        }
        Ok(Err(last_err.unwrap_or_else(|| {
            AgentError::new(agents::BlockerCategory::AgentError, "no attempt was made")
        })))
    }

    /// The environment read-only calls of this run use: the repository as workdir, the spec
    /// documents as files, and a guard over the working tree and the spec directory.
    pub fn call_env(&self, phase: Phase) -> CallEnv<'_> {
        let spec_rel = self.spec_rel();
        CallEnv {
            config: &self.config,
            redactor: &self.redactor,
            workdir: self.repo.clone(),
            spec_dir: spec_rel.clone(),
            files: crate::spec::doc_paths(&spec_rel),
            phase: phase.as_str().to_string(),
            retry_prompt: crate::prompts::template(&self.repo, "envelope_retry"),
            guard: Guard::Git {
                git: self.forge.git().clone(),
                watch: vec![spec_rel],
            },
        }
    }

    /// Records what a batch of calls cost and every failure among them, then saves.
    pub fn record_calls(&mut self, phase: Phase, logs: &[CallLog]) -> Result<()> {
        for log in logs {
            if log.invoked {
                let u = self.state.usage.entry(log.agent.clone()).or_default();
                u.calls += 1;
                u.input_tokens += log.usage.input_tokens;
                u.output_tokens += log.usage.output_tokens;
                u.usd += log.usage.usd;
            }
            if let Some((category, detail)) = &log.failure {
                self.state.agent_failures.push(AgentFailure {
                    phase,
                    role: log.role.clone(),
                    agent: log.agent.clone(),
                    category: category.clone(),
                    detail: self.redactor.redact(detail),
                    ts: util::now(),
                });
            }
        }
        self.save()
    }

    /// Runs a batch of read-only calls whose answers are envelopes (see
    /// [`crate::review::calls`]), records them, and returns each envelope with fingerprints, or
    /// the reason the call failed.
    pub fn review_batch(
        &mut self,
        calls: &[ReviewCall],
        phase: Phase,
    ) -> Result<Vec<(ReviewCall, Result<Envelope, String>)>> {
        let answers = {
            let env = self.call_env(phase);
            calls::run_batch(&env, calls, &envelope::parse_answer)?
        };
        let logs: Vec<CallLog> = answers.iter().flat_map(|a| a.logs.clone()).collect();
        self.record_calls(phase, &logs)?;
        Ok(answers.into_iter().map(|a| (a.call, a.result)).collect())
    }

    /// Calls one reviewer and extracts its envelope (one retry on failure, one "only the JSON
    /// envelope" follow-up, sandbox check). `Err` carries the reason the round failed.
    pub fn review_call(&mut self, call: &Call, phase: Phase) -> Result<Result<Envelope, String>> {
        let one = ReviewCall {
            role: call.role.to_string(),
            agent: call.agent.to_string(),
            label: None,
            round: call.round,
            task: call.task.clone(),
            prompt: call.prompt.clone(),
        };
        let mut answers = self.review_batch(&[one], phase)?;
        Ok(answers
            .pop()
            .map(|(_, r)| r)
            .unwrap_or_else(|| Err("env_error: no answer".into())))
    }

    /// Issue title and body for prompts.
    pub fn issue_vars(&self) -> (String, String) {
        (
            self.state.issue.title.clone(),
            self.state.issue.body.clone(),
        )
    }

    /// Agent playing `role` now.
    pub fn agent(&self, role: crate::config::Role) -> String {
        self.state
            .agent_for(role)
            .unwrap_or(self.config.roles.get(role))
            .to_string()
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
