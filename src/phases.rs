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

use crate::agents::{self, AgentError, AgentReply, AgentRequest, BlockerCategory, TaskInfo};
use crate::config::Config;
use crate::error::Result;
use crate::forge::LocalForge;
use crate::machine::{Outcome, Phase};
use crate::review::envelope::{self, Envelope};
use crate::secrets::Redactor;
use crate::state::{AgentFailure, CallRecord, RunStop, State, StateStore, StopKind};
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
    ///
    /// The budget is checked before every attempt; a call that could exceed it, or a vendor
    /// refusing for spend-cap reasons, stops the run with [`crate::Error::Stopped`] (the driver
    /// lands a draft and `resume` continues here) instead of counting as an agent failure.
    pub fn call_agent(
        &mut self,
        call: &Call,
        phase: Phase,
    ) -> Result<Result<AgentReply, AgentError>> {
        let mut last_err = None;
        for attempt in 1..=2u32 {
            self.ensure_budget(phase, &[(call.agent, call.prompt.as_str())])?;
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
            let limits = agents::CallLimits {
                budget_left: self
                    .config
                    .limits
                    .budget_usd
                    .map(|b| b - self.state.total_usd()),
            };
            let result = agents::call_with(
                &self.config,
                call.agent,
                call.writes,
                &request,
                &self.redactor,
                limits,
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
            u.max_call_usd = u.max_call_usd.max(usage.usd);
            self.state.calls.push(CallRecord {
                agent: call.agent.to_string(),
                role: call.role.to_string(),
                phase,
                attempt,
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                usd: usage.usd,
                ok: result.is_ok(),
                session_id: result.as_ref().ok().and_then(|r| r.session_id.clone()),
                ts: util::now(),
            });
            match result {
                Ok(reply) => {
                    self.save()?;
                    return Ok(Ok(reply));
                }
                Err(e)
                    if matches!(
                        e.category,
                        BlockerCategory::QuotaExhausted | BlockerCategory::BudgetExhausted
                    ) =>
                {
                    let detail = self.redactor.redact(&e.detail);
                    eprintln!("    {} stopped: {detail}", call.agent);
                    self.state.agent_failures.push(AgentFailure {
                        phase,
                        role: call.role.to_string(),
                        agent: call.agent.to_string(),
                        category: e.category.as_str().to_string(),
                        detail: detail.clone(),
                        ts: util::now(),
                    });
                    self.save()?;
                    let (kind, message) = if e.category == BlockerCategory::BudgetExhausted {
                        (
                            StopKind::Budget,
                            format!(
                                "stopped: agent `{}` reached what was left of limits.budget_usd ({:.4} USD of {:.4} USD spent) and stopped itself ({detail}). The state is saved and a draft says so; raise `limits.budget_usd` and run `spec-orchestrate resume`.",
                                call.agent,
                                self.state.total_usd(),
                                self.config.limits.budget_usd.unwrap_or_default()
                            ),
                        )
                    } else {
                        (
                            StopKind::Quota,
                            format!(
                                "stopped: the API behind agent `{}` refused the call for spend-cap or quota reasons, and that is never retried ({detail}). The state is saved and a draft says so; once the limit is raised or credits are added, run `spec-orchestrate resume`.",
                                call.agent
                            ),
                        )
                    };
                    return Err(crate::Error::Stopped(Box::new(RunStop {
                        kind,
                        phase,
                        agent: call.agent.to_string(),
                        message,
                        spent_usd: self.state.total_usd(),
                        budget_usd: self.config.limits.budget_usd,
                        next_call_usd: None,
                        ts: util::now(),
                    })));
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
    /// exceed it, the run stops with [`crate::Error::Stopped`] naming the budget, what is spent,
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
        Err(crate::Error::Stopped(Box::new(RunStop {
            kind: StopKind::Budget,
            phase,
            agent: agent.to_string(),
            message,
            spent_usd: spent,
            budget_usd: Some(budget),
            next_call_usd: Some(estimate),
            ts: util::now(),
        })))
    }

    /// Calls a read-only agent and checks it left the working tree alone: a reviewer that edits
    /// files is a `sandbox_violation`, its edits are undone and the call is retried once.
    fn read_only_call(
        &mut self,
        call: &Call,
        phase: Phase,
    ) -> Result<Result<AgentReply, AgentError>> {
        let git = self.forge.git().clone();
        let spec_rel = self.spec_rel();
        let watch = [spec_rel.as_str()];
        for attempt in 1..=2 {
            let before = crate::git::Snapshot::take(&git, &watch)?;
            let reply = self.call_agent(call, phase)?;
            let changed: Vec<String> = before
                .changes(&git, &watch)?
                .into_iter()
                .filter(|p| !is_orchestrator_record(p))
                .collect();
            if changed.is_empty() {
                return Ok(reply);
            }
            before.restore(&git, &changed)?;
            let detail = format!(
                "reviewer edited {} (undone): {}",
                if changed.len() == 1 {
                    "a file"
                } else {
                    "files"
                },
                changed
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            eprintln!("    {} {detail}", call.agent);
            self.state.agent_failures.push(AgentFailure {
                phase,
                role: call.role.to_string(),
                agent: call.agent.to_string(),
                category: agents::BlockerCategory::SandboxViolation.as_str().into(),
                detail: detail.clone(),
                ts: util::now(),
            });
            self.save()?;
            if attempt == 2 {
                return Ok(Err(AgentError::new(
                    agents::BlockerCategory::SandboxViolation,
                    detail,
                )));
            }
        }
        Ok(Err(AgentError::new(
            agents::BlockerCategory::SandboxViolation,
            "no attempt was made",
        )))
    }

    /// Calls a reviewer and extracts its envelope, asking once more for "only the JSON envelope"
    /// when the first answer cannot be parsed. `Err` carries the reason the round failed.
    pub fn review_call(&mut self, call: &Call, phase: Phase) -> Result<Result<Envelope, String>> {
        let reply = match self.read_only_call(call, phase)? {
            Ok(r) => r,
            Err(e) => return Ok(Err(format!("{}: {}", e.category, e.detail))),
        };
        match envelope::extract(&reply.text) {
            Ok(env) => Ok(Ok(env.with_fingerprints())),
            Err(e) => {
                eprintln!(
                    "    {} answered without a usable envelope ({e}); asking once more",
                    call.agent
                );
                let retry =
                    crate::prompts::render(&self.repo, "envelope_retry", &[("error", &e.0)]);
                let again = Call {
                    prompt: format!("{}\n\n{}", call.prompt, retry),
                    ..call.clone()
                };
                let reply = match self.read_only_call(&again, phase)? {
                    Ok(r) => r,
                    Err(e) => return Ok(Err(format!("{}: {}", e.category, e.detail))),
                };
                match envelope::extract(&reply.text) {
                    Ok(env) => Ok(Ok(env.with_fingerprints())),
                    Err(e2) => {
                        let detail = format!("unusable review output twice: {e2}");
                        self.state.agent_failures.push(AgentFailure {
                            phase,
                            role: call.role.to_string(),
                            agent: call.agent.to_string(),
                            category: "malformed_output".into(),
                            detail: detail.clone(),
                            ts: util::now(),
                        });
                        self.save()?;
                        Ok(Err(format!("malformed_output: {detail}")))
                    }
                }
            }
        }
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

/// Files the orchestrator itself writes under `.specs/<feature>/` while an agent runs (state,
/// lock, temp files): never an agent's doing.
fn is_orchestrator_record(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name == crate::state::STATE_FILE
        || name == crate::state::LOCK_FILE
        || name.starts_with(".pipeline-state.json.tmp")
        || path.contains("/evidence/")
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
