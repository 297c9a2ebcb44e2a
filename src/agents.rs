//! Agents: the workers the orchestrator dispatches. It never writes specs, code or reviews
//! itself; it builds a request, runs a backend, and checks what comes back.
//!
//! Backends are a closed set (see [`crate::config::AgentKind`]); each turns an [`AgentRequest`]
//! into an [`AgentReply`] or an [`AgentError`] with a blocker category. They all run in a scrubbed
//! environment, because an agent runs arbitrary code and could exfiltrate whatever it can read.

pub mod anthropic;
pub mod claude_cli;
pub mod codex_cli;
pub mod command;
pub mod env;
pub mod fronted;
pub mod http;
pub mod openai;
pub mod roles;
pub mod rooms;
pub mod text_roles;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::{AgentConfig, AgentKind, Config};
use crate::pricing::{Price, Tokens};
use crate::secrets::Redactor;
use crate::types::ids::AgentName;
use crate::types::kinds::{BlockerCategory, TaskKind};

/// The request every backend receives (documented for `command` agents in `docs/cli.md`); fields
/// may be added, never renamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRequest {
    /// spec_author, spec_reviewer, impl_ui, …, task_reviewer.
    pub role: String,
    /// Phase of the call.
    pub phase: String,
    /// Loop round, in looping phases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// 1 for the first try, 2 for the retry.
    pub attempt: u32,
    /// Absolute repository path.
    pub workdir: PathBuf,
    /// `.specs/<feature>` relative to the repo.
    pub spec_dir: String,
    /// The task, in `implement`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskInfo>,
    /// Files the agent should read.
    pub files: Vec<String>,
    /// The full prompt.
    pub prompt: String,
    /// A/B for debaters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The shape of answer this call asks for (`envelope`, `steps`, `scores`, `decisions`,
    /// `classification`, `files`); absent for an implementer, which edits a working copy. A
    /// text-only model is held to it; chosen per call, since one role answers several shapes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<text_roles::Output>,
}

/// Task fields in a request: a task of `tasks.md` in `implement`, or the playwright cases whose
/// prose steps the `e2e_runner` converts in one call (`spec_generate`, again at `evaluate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskInfo {
    /// T001…, or the case ids (T-A…, space-separated) of a step conversion.
    pub id: String,
    /// What the work is.
    pub kind: TaskInfoKind,
    /// Title.
    pub title: String,
}

/// The `task.kind` of a request: a task's kind (`ui`, `backend`, `test`), or `playwright` for
/// the conversion of a playwright case's prose steps, which is not a task of `tasks.md` (so a
/// task's own kind in state can never be `playwright`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::VariantArray)]
#[serde(rename_all = "snake_case")]
pub enum TaskInfoKind {
    /// A `ui` task.
    Ui,
    /// A `backend` task.
    Backend,
    /// A `test` task.
    Test,
    /// A playwright case whose prose steps become `test.steps.json`.
    Playwright,
}

impl From<TaskKind> for TaskInfoKind {
    fn from(k: TaskKind) -> TaskInfoKind {
        match k {
            TaskKind::Ui => TaskInfoKind::Ui,
            TaskKind::Backend => TaskInfoKind::Backend,
            TaskKind::Test => TaskInfoKind::Test,
        }
    }
}

/// Whether the agent says it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyStatus {
    /// Finished.
    Done,
    /// Could not do it.
    Blocked,
}

/// Tokens and cost of one call.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CallUsage {
    /// Input tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Cost in USD.
    #[serde(default)]
    pub usd: f64,
}

/// Token counts as a vendor's reply names them: Anthropic's (and claude's) cache reads and writes
/// apart from `input_tokens`, OpenAI's (and codex's) cached part inside it
/// (`input_tokens_details.cached_tokens`). What a vendor does not send reads as 0.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct VendorUsage {
    /// `input_tokens`.
    #[serde(default)]
    pub input_tokens: u64,
    /// `output_tokens`.
    #[serde(default)]
    pub output_tokens: u64,
    /// Anthropic: `cache_creation_input_tokens` (may be `null`).
    pub cache_creation_input_tokens: Option<u64>,
    /// Anthropic: `cache_read_input_tokens` (may be `null`).
    pub cache_read_input_tokens: Option<u64>,
    /// OpenAI: `input_tokens_details`.
    pub input_tokens_details: Option<InputDetails>,
}

/// OpenAI's `input_tokens_details`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct InputDetails {
    /// The part of `input_tokens` read from the cache.
    #[serde(default)]
    pub cached_tokens: u64,
}

impl VendorUsage {
    /// The tokens as Anthropic counts them: cache reads and writes beside `input_tokens`.
    pub fn anthropic(&self) -> Tokens {
        Tokens {
            input: self.input_tokens,
            cache_read: self.cache_read_input_tokens.unwrap_or(0),
            cache_write: self.cache_creation_input_tokens.unwrap_or(0),
            output: self.output_tokens,
        }
    }

    /// The tokens as OpenAI counts them: the cached part inside `input_tokens`.
    pub fn openai(&self) -> Tokens {
        let cached = self
            .input_tokens_details
            .map_or(0, |d| d.cached_tokens)
            .min(self.input_tokens);
        Tokens {
            input: self.input_tokens - cached,
            cache_read: cached,
            cache_write: 0,
            output: self.output_tokens,
        }
    }
}

/// A successful call.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentReply {
    /// The answer text (review envelope, summary, …).
    pub text: String,
    /// Done or blocked.
    pub status: ReplyStatus,
    /// One-line summary, when the backend gives one.
    pub summary: Option<String>,
    /// Usage of the call.
    pub usage: CallUsage,
    /// Backend session id, when there is one.
    pub session_id: Option<String>,
}

/// A failed call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{category}: {detail}")]
pub struct AgentError {
    /// Category.
    pub category: BlockerCategory,
    /// Secret-free detail.
    pub detail: String,
    /// Usage spent before failing.
    pub usage: CallUsage,
}

impl AgentError {
    /// A failure with no usage.
    pub fn new(category: BlockerCategory, detail: impl Into<String>) -> Self {
        AgentError {
            category,
            detail: detail.into(),
            usage: CallUsage::default(),
        }
    }

    /// What the records keep of it: the category and the detail, not the cost (which is
    /// recorded as usage).
    pub fn failure(&self) -> Failure {
        Failure::new(self.category, self.detail.clone())
    }
}

/// Why a call failed, as it travels from the call to whoever records or reports it: a category
/// to act on and a detail for people. Rendered `category: detail`, never parsed back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{category}: {detail}")]
pub struct Failure {
    /// What kind of failure.
    pub category: BlockerCategory,
    /// Secret-free detail.
    pub detail: String,
}

impl Failure {
    /// A failure of `category`.
    pub fn new(category: BlockerCategory, detail: impl Into<String>) -> Failure {
        Failure {
            category,
            detail: detail.into(),
        }
    }
}

/// Everything a backend needs besides the request.
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    /// Agent name (for messages).
    pub name: &'a str,
    /// Its configuration.
    pub agent: &'a AgentConfig,
    /// Whether the role writes files.
    pub writes: bool,
    /// Timeout in seconds.
    pub timeout_s: u64,
    /// Secrets to redact from anything reported.
    pub redactor: &'a Redactor,
    /// Price of the agent's model, for backends that report tokens but no cost.
    pub price: Option<Price>,
    /// What is left of `limits.budget_usd`, passed to CLIs that can cap a call's spend.
    pub budget_left: Option<f64>,
    /// The model API proxy's URL, token and environment for this call, when it is fronted.
    pub fronted: Option<&'a fronted::Fronting>,
}

/// Per-call limits decided by the pipeline rather than the configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CallLimits {
    /// What is left of the budget, if one is set.
    pub budget_left: Option<f64>,
}

/// Runs one call of agent `name` without limits ([`call_noted`], what was noticed around the
/// call left out: for callers that record no run).
pub fn call(
    config: &Config,
    name: &str,
    writes: bool,
    request: &AgentRequest,
    redactor: &Redactor,
) -> Result<AgentReply, AgentError> {
    let limits = CallLimits::default();
    call_noted(config, &name.into(), writes, request, redactor, limits).result
}

/// One call's result and what the orchestrator noticed around it, carried with the call (never
/// looked up by agent name afterwards: two calls of the same agent may run at once, the tasks
/// of a wave or the personas of a panel, and each record must name what its own call did).
#[derive(Debug, Clone, PartialEq)]
pub struct Called {
    /// The reply or the failure.
    pub result: Result<AgentReply, AgentError>,
    /// Requests of this call the model API proxy refused as not a model endpoint
    /// (`METHOD /path`, oldest first).
    pub refused: Vec<String>,
    /// What the file-command guard found changed around this call, already put back
    /// ([`crate::process::guard::Watch`]).
    pub file_commands: Vec<String>,
}

/// Runs one call of agent `name` within `limits`. Whatever the backend, the reply's usage
/// carries a cost (priced from the configuration when the backend reports only tokens), a
/// failure that reads like a spend cap is categorised `quota_exhausted`, and every message is
/// redacted of known secrets.
pub fn call_noted(
    config: &Config,
    name: &AgentName,
    writes: bool,
    request: &AgentRequest,
    redactor: &Redactor,
    limits: CallLimits,
) -> Called {
    let failed = |e| Called {
        result: Err(e),
        refused: Vec::new(),
        file_commands: Vec::new(),
    };
    let Some(agent) = config.agents.get(name.as_str()) else {
        let detail = format!("agent `{name}` is not defined in the configuration");
        return failed(AgentError::new(BlockerCategory::ToolUnavailable, detail));
    };
    let name = name.as_str();
    let fronting = match fronted::front(config, name, agent, limits.budget_left) {
        Ok(f) => f,
        Err(e) => return failed(e),
    };
    let inv = Invocation {
        name,
        agent,
        writes,
        timeout_s: config.timeout_of(agent),
        redactor,
        price: config.price_of(agent).map(|(_, p)| p),
        budget_left: limits.budget_left,
        fronted: fronting.as_ref(),
    };
    // The runner's file commands as they were before the call (see `process::guard`).
    let watch = crate::process::guard::Watch::start();
    let result = match agent.kind {
        AgentKind::Command => command::call(&inv, request),
        AgentKind::ClaudeCli => claude_cli::call(&inv, request),
        AgentKind::CodexCli => codex_cli::call(&inv, request).map(|r| priced(&inv, r)),
        AgentKind::Anthropic => anthropic::call(&inv, request),
        AgentKind::Openai => openai::call(&inv, request),
    };
    let file_commands = watch.end();
    // What passed through the proxy is the call's bill, and a budget stop there ends the call.
    let (result, refused) = match fronting {
        Some(f) => {
            let metered = f.ticket.finish();
            (fronted::settle(result, &metered), metered.refused)
        }
        None => (result, Vec::new()),
    };
    let result = result
        .map(|mut r| {
            r.text = redactor.redact(&r.text);
            r.summary = r.summary.map(|s| redactor.redact(&s));
            r
        })
        .map_err(|mut e| {
            if e.category == BlockerCategory::AgentError && http::is_quota_text(&e.detail) {
                e.category = BlockerCategory::QuotaExhausted;
            }
            e.detail = redactor.redact(&e.detail);
            e
        });
    Called {
        result,
        refused,
        file_commands,
    }
}

/// Prices a reply whose backend reported tokens but no cost (`codex exec`). Cached input is not
/// reported apart by codex's totals here, so every input token is billed at the input price: an
/// upper bound, which is the safe side for a budget.
fn priced(inv: &Invocation, mut reply: AgentReply) -> AgentReply {
    if reply.usage.usd == 0.0
        && let Some(price) = inv.price
    {
        let tokens = Tokens {
            input: reply.usage.input_tokens,
            output: reply.usage.output_tokens,
            ..Default::default()
        };
        reply.usage.usd = tokens.cost(&price);
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::tests::keeps_words;
    use strum::VariantArray;

    /// `task.kind` of a request keeps its words: a task's kind, or `playwright` for a step
    /// conversion (which no task of `tasks.md` can have).
    #[test]
    fn task_info_kinds_keep_their_words() {
        keeps_words(TaskInfoKind::VARIANTS, "ui backend test playwright");
        for k in TaskKind::ALL {
            let json = serde_json::to_string(&TaskInfoKind::from(k)).unwrap();
            assert_eq!(json, format!("\"{}\"", k.as_str()));
        }
    }
}
