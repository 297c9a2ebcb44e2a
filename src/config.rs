//! `.specs/pipeline.yml`: the schema, its defaults, and validation with precise errors.
//!
//! The file is optional. When present, every key is checked: unknown keys, wrong types, negative
//! or zero limits, roles that name no agent and regexes that do not compile are all refused with
//! the file, line, key path, the bad value and what is allowed, because a pipeline that silently
//! ignores a typo runs for an hour with the wrong reviewer.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use smart_default::SmartDefault;

use crate::error::ConfigError;
use crate::types::Role;
use crate::types::kinds::{Persona, Strategy};

mod bounds;
mod outline;
pub mod rubric;
mod validate;
mod yaml;

use rubric::Rubric;

/// Where the configuration lives inside a repository.
pub const CONFIG_PATH: &str = ".specs/pipeline.yml";

/// The whole configuration, with defaults filled in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[allow(missing_docs)]
pub struct Config {
    /// Named agent backends; roles refer to these names.
    pub agents: BTreeMap<String, AgentConfig>,
    pub roles: Roles,
    pub review: ReviewConfig,
    /// How to start the app for browser cases; absent when no case needs it.
    pub app: Option<AppConfig>,
    pub limits: Limits,
    pub evaluate: EvaluateConfig,
    pub github: GithubConfig,
    pub improve: ImproveConfig,
    /// Token prices per model (USD per million tokens), overlaid on the built-in table of
    /// `crate::pricing`; used to price HTTP calls and codex calls for the budget.
    pub prices: BTreeMap<String, crate::pricing::Price>,
    /// How agents are isolated from the orchestrator (docs/security.md, "The Docker action").
    pub sandbox: SandboxConfig,
}

impl Default for Config {
    fn default() -> Self {
        let mut agents = BTreeMap::new();
        agents.insert(
            "claude".to_string(),
            AgentConfig::of_kind(AgentKind::ClaudeCli),
        );
        agents.insert(
            "codex".to_string(),
            AgentConfig::of_kind(AgentKind::CodexCli),
        );
        Config {
            agents,
            roles: Roles::default(),
            review: ReviewConfig::default(),
            app: None,
            limits: Limits::default(),
            evaluate: EvaluateConfig::default(),
            github: GithubConfig::default(),
            improve: ImproveConfig::default(),
            prices: BTreeMap::new(),
            sandbox: SandboxConfig::default(),
        }
    }
}

/// The closed set of backends an agent can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum AgentKind {
    /// Anthropic's `claude` CLI in print mode.
    ClaudeCli,
    /// OpenAI's `codex exec`.
    CodexCli,
    /// Anthropic Messages API over HTTP (text-only roles).
    Anthropic,
    /// OpenAI Responses API over HTTP (text-only roles).
    Openai,
    /// Any program speaking the JSON-on-stdin protocol.
    Command,
}

impl AgentKind {
    /// The program looked up on PATH when `binary` is not set.
    pub fn default_binary(self) -> Option<&'static str> {
        match self {
            AgentKind::ClaudeCli => Some("claude"),
            AgentKind::CodexCli => Some("codex"),
            _ => None,
        }
    }
}

/// One named agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct AgentConfig {
    pub kind: AgentKind,
    /// Model name passed to the backend; `null` lets the backend choose.
    pub model: Option<String>,
    /// HTTP base URL override (HTTP kinds).
    pub base_url: Option<String>,
    /// Environment variable holding the API key (HTTP kinds).
    pub api_key_env: Option<String>,
    /// Program and arguments (kind `command`).
    pub command: Option<Vec<String>>,
    /// CLI path override (CLI kinds).
    pub binary: Option<String>,
    /// Per-call timeout; falls back to `limits.agent_timeout_s`.
    pub timeout_s: Option<u64>,
    /// Extra environment variables given to this agent only.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The agent that reviews this one's work and takes over its roles.
    pub opposite: Option<String>,
    /// Output token limit of one HTTP call (`max_tokens` / `max_output_tokens`); HTTP kinds only.
    pub max_output_tokens: Option<u32>,
    /// Retries of an HTTP call on 429/500/502/503/504/529 and connection failures (default 4);
    /// HTTP kinds only.
    pub max_retries: Option<u32>,
    /// First backoff delay in milliseconds, doubled per retry, with jitter (default 1000); HTTP
    /// kinds only. A `Retry-After` header overrides it.
    pub retry_base_ms: Option<u64>,
    /// Whether the agent reaches its model API through the orchestrator's authenticating proxy
    /// (default: yes for the CLI and HTTP kinds), so that it never holds the real key. `false`
    /// for an endpoint the proxy cannot front (a login session instead of a key, a custom
    /// provider the proxy does not speak).
    pub proxy: Option<bool>,
}

impl AgentConfig {
    /// An agent of `kind` with every option at its default.
    pub const fn of_kind(kind: AgentKind) -> Self {
        AgentConfig {
            kind,
            model: None,
            base_url: None,
            api_key_env: None,
            command: None,
            binary: None,
            timeout_s: None,
            env: BTreeMap::new(),
            opposite: None,
            max_output_tokens: None,
            max_retries: None,
            retry_base_ms: None,
            proxy: None,
        }
    }

    /// The model the backend is asked for (or priced as): the configured one, else the kind's
    /// default for HTTP kinds and codex; `None` for claude-cli (the CLI reports its own cost)
    /// and command agents.
    pub fn effective_model(&self) -> Option<String> {
        if let Some(m) = &self.model {
            return Some(m.clone());
        }
        match self.kind {
            AgentKind::Anthropic => Some(crate::pricing::DEFAULT_ANTHROPIC_MODEL.into()),
            AgentKind::Openai => Some(crate::pricing::DEFAULT_OPENAI_MODEL.into()),
            AgentKind::CodexCli => Some(crate::pricing::DEFAULT_CODEX_MODEL.into()),
            AgentKind::ClaudeCli | AgentKind::Command => None,
        }
    }

    /// The environment variable holding the API key of an HTTP agent: `api_key_env`, else the
    /// vendor's usual name.
    pub fn key_env(&self) -> Option<String> {
        if let Some(k) = &self.api_key_env {
            return Some(k.clone());
        }
        match self.kind {
            AgentKind::Anthropic => Some("ANTHROPIC_API_KEY".into()),
            AgentKind::Openai => Some("OPENAI_API_KEY".into()),
            _ => None,
        }
    }
}

impl AgentKind {
    /// Whether the kind calls a model over HTTP (text-only: it cannot edit files or run code).
    pub fn is_http(self) -> bool {
        matches!(self, AgentKind::Anthropic | AgentKind::Openai)
    }
}

/// Role → agent name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, SmartDefault)]
#[serde(deny_unknown_fields, default)]
#[allow(missing_docs)]
pub struct Roles {
    #[default("claude")]
    pub spec_author: String,
    #[default("codex")]
    pub spec_reviewer: String,
    #[default("claude")]
    pub impl_ui: String,
    #[default("codex")]
    pub impl_backend: String,
    #[default("codex")]
    pub impl_test: String,
    #[default("claude")]
    pub e2e_runner: String,
    #[default("claude")]
    pub judge: String,
}

impl Roles {
    /// The agent name configured for `role`.
    pub fn get(&self, role: Role) -> &str {
        match role {
            Role::SpecAuthor => &self.spec_author,
            Role::SpecReviewer => &self.spec_reviewer,
            Role::ImplUi => &self.impl_ui,
            Role::ImplBackend => &self.impl_backend,
            Role::ImplTest => &self.impl_test,
            Role::E2eRunner => &self.e2e_runner,
            Role::Judge => &self.judge,
        }
    }
}

/// Review strategy settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, SmartDefault)]
#[serde(deny_unknown_fields, default)]
#[allow(missing_docs)]
pub struct ReviewConfig {
    #[default(Strategy::Single)]
    pub strategy: Strategy,
    /// Panel personas, or `auto`.
    #[default(PanelSelection::List(vec![Persona::Architect, Persona::Paranoid, Persona::Simplifier]))]
    pub panel: PanelSelection,
}

/// `review.panel`: an explicit list or `auto`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PanelSelection {
    /// Chosen from a classification of the issue.
    Auto(AutoWord),
    /// Exactly these personas.
    List(Vec<Persona>),
}

// Written by hand rather than `#[serde(untagged)]`, whose only error is "data did not match any
// variant", so that a typo names the bad persona (`review.panel[1]: unknown variant `hacker``).
impl<'de> Deserialize<'de> for PanelSelection {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = PanelSelection;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`auto` or a list of personas")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<PanelSelection, E> {
                if v == "auto" {
                    Ok(PanelSelection::Auto(AutoWord::Auto))
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Str(v), &self))
                }
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<PanelSelection, A::Error> {
                let mut personas = Vec::new();
                while let Some(p) = seq.next_element::<Persona>()? {
                    personas.push(p);
                }
                Ok(PanelSelection::List(personas))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// The literal word `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoWord {
    /// `auto`.
    Auto,
}

/// How to run the app under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct AppConfig {
    /// Shell command that starts the app.
    pub start: Option<String>,
    pub url: Option<String>,
    /// Regex matched against the app's output to know it is ready.
    pub ready_pattern: Option<String>,
    #[serde(default = "default_ready_timeout")]
    pub ready_timeout_s: u64,
    /// `auto` (kill the process group) or a command.
    #[serde(default = "default_stop")]
    pub stop: String,
    /// How far apart the acceptance cases of a round run: `case` (default, each case in the
    /// committed state with an app of its own) or `round` (one app for the round).
    #[serde(default)]
    pub isolation: Isolation,
    /// Environment variables of the app and the command cases; `{case_dir}`, `{round_dir}`
    /// (fresh empty directories) and, for the app, `{port}` are replaced in each value.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Ignored dependency directories of the checkout (relative paths) made available in each
    /// round's tree without a reinstall: linked, never cleaned.
    #[serde(default = "default_dependencies")]
    pub dependencies: Vec<String>,
    /// Shell command run in the round's tree before each case (`case`) or once before the
    /// round's cases (`round`), to reset data the app keeps outside the files git knows.
    pub reset: Option<String>,
}

impl AppConfig {
    /// The isolation of `app` (absent: the default).
    pub fn isolation_of(app: Option<&AppConfig>) -> Isolation {
        app.map_or(Isolation::default(), |a| a.isolation)
    }

    /// The dependency directories of `app` (absent: the default list).
    pub fn dependencies_of(app: Option<&AppConfig>) -> Vec<String> {
        app.map_or_else(default_dependencies, |a| a.dependencies.clone())
    }
}

/// `app.isolation`: what a case may see of the cases before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Isolation {
    /// Every case starts from the committed files, with no file an earlier case wrote, its own
    /// `{case_dir}`, and (a browser case) an app started for it alone.
    #[default]
    Case,
    /// One app and one tree for the round's cases (for apps too slow to start per case).
    Round,
}

impl Isolation {
    /// The word of the configuration.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// One sentence for the reports: how the round's cases were kept apart.
    pub fn describe(self) -> &'static str {
        match self {
            Isolation::Case => {
                "Isolation: `case` (every case ran in a tree of the commit under test, from the committed files, with an app of its own)."
            }
            Isolation::Round => {
                "Isolation: `round` (the cases ran one after another in one tree of the commit under test, with one app for the round)."
            }
        }
    }
}

/// The ignored dependency directories linked into a round's tree when `app.dependencies` is
/// not set.
pub fn default_dependencies() -> Vec<String> {
    ["node_modules", ".venv", "venv"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The longest duration any key may name, in seconds: 7 days. Longer is a typo (or an attempt
/// to overflow the time arithmetic); no call, app start or retry of this pipeline waits that long.
pub const MAX_DURATION_S: u64 = crate::process::MAX_WAIT.as_secs();

fn default_ready_timeout() -> u64 {
    120
}
fn default_stop() -> String {
    "auto".into()
}

/// Loop and budget limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, SmartDefault)]
#[serde(deny_unknown_fields, default)]
#[allow(missing_docs)]
pub struct Limits {
    /// Automatic arbitration swaps per loop.
    #[default(1)]
    pub role_swap_max: u32,
    /// Implement attempts per task.
    #[default(3)]
    pub task_attempts: u32,
    /// Default per-call agent timeout.
    #[default(3600)]
    pub agent_timeout_s: u64,
    /// Stop (draft) when recorded cost would exceed this.
    pub budget_usd: Option<f64>,
    /// Ready tasks of `tasks.md` implemented at once, each in its own worktree (1: one after
    /// the other in the checkout).
    #[default(4)]
    pub parallel_tasks: u32,
    pub task_trees: TaskTrees,
}

/// `limits.task_trees`: what a parallel task's worktree holds (docs/phases.md#tasks-in-parallel).
/// A sparse tree keeps the cost of a tree to the task's own directories on a large checkout, but
/// a build or a test that needs sources outside them cannot run there: such a repository asks
/// for full trees and pays for writing every file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskTrees {
    /// Sparse on a checkout of at least `tree::SPARSE_FROM` files for a task that names its
    /// files, full otherwise.
    #[default]
    Auto,
    /// Every file of the commit, always.
    Full,
}

/// Acceptance-evaluation settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, SmartDefault)]
#[serde(deny_unknown_fields, default)]
#[allow(missing_docs)]
pub struct EvaluateConfig {
    pub rubric: Option<Rubric>,
    /// Rounds without rubric improvement before a restart.
    #[default(3)]
    pub rubric_plateau_rounds: u32,
    /// Browser for playwright cases: a Chromium executable, or `bundled` for Playwright's own;
    /// `null` = `/usr/bin/chromium` when present. `SPEC_ORCHESTRATE_BROWSER` overrides it, because
    /// where the browser lives is a property of the machine more than of the repository.
    pub browser: Option<String>,
    #[default(10)]
    pub step_timeout_s: u64,
}

/// Longest artifact retention GitHub accepts (private repositories; public ones stop at 90).
pub const MAX_RETENTION_DAYS: u32 = 400;

/// GitHub Action settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, SmartDefault)]
#[serde(deny_unknown_fields, default)]
#[allow(missing_docs)]
pub struct GithubConfig {
    /// Label that starts a run.
    #[default("spec-orchestrate")]
    pub trigger_label: String,
    /// Label that approves a spec in manual mode.
    #[default("spec-approved")]
    pub approve_label: String,
    /// Prefix of work branches.
    #[default("spec-orchestrate/")]
    pub branch_prefix: String,
    /// Bot accounts allowed to trigger.
    pub allowed_bots: Vec<String>,
    /// Days GitHub keeps the unzipped evidence artifacts (report, screenshots) of each evaluate
    /// round; `None` keeps the repository's default retention.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence_retention_days: Option<u32>,
    pub jobs: JobsMode,
}

/// How an Action chain cuts its phases into jobs (`github.jobs`). Every job pays a runner start,
/// an image pull and at least a billed minute, while the phases that call no agent take about a
/// second; so by default they ride along with the agent phase next to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobsMode {
    /// One phase that calls agents (or one round of a loop) per job, with the phases that call
    /// none before and after it, while the job's time budget allows.
    #[default]
    PerAgentPhase,
    /// Exactly one phase per job: the most checkpoints and status-comment updates, the most jobs.
    PerPhase,
}

/// Retrospective self-improvement settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, SmartDefault)]
#[serde(deny_unknown_fields, default)]
pub struct ImproveConfig {
    /// Apply Tier 1 proposals on their own branch.
    #[default(true)]
    pub auto_apply: bool,
    /// Maximum lines a prompt file may grow to.
    #[default(300)]
    pub line_budget: u32,
    /// Runs with the same failure before a proposal is made.
    #[default(2)]
    pub min_occurrences: u32,
}

/// Agent isolation: whether agents get a separate identity, and which.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, SmartDefault)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// `auto`: agents run as `agent_user` when the orchestrator can start them so (it is root);
    /// `off`: agents run as the orchestrator's own user.
    #[default(IdentityMode::Auto)]
    pub identity: IdentityMode,
    /// The uid agents run as, `65532` (the image's `agent` user), or `"uid:gid"`.
    #[default(AgentUser::Uid(crate::process::identity::DEFAULT_UID))]
    pub agent_user: AgentUser,
}

/// `sandbox.identity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IdentityMode {
    /// A separate identity whenever the orchestrator is root.
    Auto,
    /// Never: agents share the orchestrator's user.
    Off,
}

/// `sandbox.agent_user`: a number, or `uid:gid` as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AgentUser {
    /// A uid; the gid is the same number.
    Uid(u32),
    /// `uid:gid` (or a uid) as text.
    Text(String),
}

impl AgentUser {
    /// The uid and gid, if they are numbers and neither is root's.
    pub fn ids(&self) -> Option<(u32, u32)> {
        match self {
            AgentUser::Uid(u) => Some((*u, *u)),
            AgentUser::Text(t) => crate::process::identity::parse_ids(t),
        }
        .filter(|(u, g)| *u != 0 && *g != 0)
    }
}

impl SandboxConfig {
    /// Hands the setting to the process layer, which decides the identity at the first
    /// confined spawn (`SPEC_ORCHESTRATE_AGENT_USER` still overrides it).
    pub fn apply(&self) {
        let (uid, gid) = self.agent_user.ids().unwrap_or((
            crate::process::identity::DEFAULT_UID,
            crate::process::identity::DEFAULT_UID,
        ));
        crate::process::identity::configure(crate::process::identity::Setting {
            off: self.identity == IdentityMode::Off,
            uid,
            gid,
        });
    }
}

impl crate::secrets::SecretEnvNames for Config {
    fn secret_env_names(&self) -> Vec<String> {
        self.agents
            .values()
            .filter_map(|a| a.api_key_env.clone())
            .collect()
    }
}

impl Config {
    /// Loads the configuration of `repo`: `explicit` if given, else `.specs/pipeline.yml`, else
    /// the defaults.
    pub fn load(repo: &Path, explicit: Option<&Path>) -> Result<Config, Box<ConfigError>> {
        let path = match explicit {
            Some(p) if p.is_absolute() => p.to_path_buf(),
            Some(p) => std::env::current_dir()
                .map(|d| d.join(p))
                .unwrap_or_else(|_| p.to_path_buf()),
            None => repo.join(CONFIG_PATH),
        };
        if !path.exists() {
            if explicit.is_some() {
                return Err(at(
                    &path,
                    yaml::Located::at(
                        None,
                        "",
                        "the file does not exist",
                        "pass an existing file to --config, or drop --config to use .specs/pipeline.yml or the defaults",
                    ),
                ));
            }
            let config = Config::default();
            config.sandbox.apply();
            return Ok(config);
        }
        let text = bounds::read_bounded(&path).map_err(|refused| {
            at(
                &path,
                yaml::Located::at(None, "", refused.problem, refused.help),
            )
        })?;
        let config = Config::parse(&text, &path)?;
        // The agents' identity is the process layer's, decided at the first confined spawn;
        // every command that starts agents loads its configuration before that.
        config.sandbox.apply();
        Ok(config)
    }

    /// Parses and validates configuration text; `file` is used only in error messages.
    pub fn parse(text: &str, file: &Path) -> Result<Config, Box<ConfigError>> {
        let err = |l: yaml::Located| at(file, l);
        if text.len() as u64 > bounds::MAX_CONFIG_BYTES {
            let refused = bounds::too_large();
            return Err(err(yaml::Located::at(
                None,
                "",
                refused.problem,
                refused.help,
            )));
        }
        let Some((config, outline)) = yaml::read::<Config>(text).map_err(err)? else {
            return Ok(Config::default());
        };
        config.validate(&outline, file)?;
        Ok(config)
    }
}

impl Config {
    /// The price of `agent`'s calls, when it has a model with a price.
    pub fn price_of(&self, agent: &AgentConfig) -> Option<(String, crate::pricing::Price)> {
        let model = agent.effective_model()?;
        crate::pricing::lookup(&self.prices, &model)
    }

    /// The agent configured for `role`.
    pub fn agent_for(&self, role: Role) -> (&str, &AgentConfig) {
        let name = self.roles.get(role);
        // Validation guarantees the role names a defined agent; fall back to any agent so that a
        // hand-built Config cannot panic here.
        match self.agents.get_key_value(name) {
            Some((n, a)) => (n.as_str(), a),
            None => {
                let (n, a) = self
                    .agents
                    .iter()
                    .next()
                    .map(|(n, a)| (n.as_str(), a))
                    .unwrap_or(("claude", &DEFAULT_CLAUDE));
                (n, a)
            }
        }
    }

    /// The default per-call timeout of `agent`.
    pub fn timeout_of(&self, agent: &AgentConfig) -> u64 {
        agent.timeout_s.unwrap_or(self.limits.agent_timeout_s)
    }

    /// The agent that reviews `name`'s work and takes over its roles: its explicit `opposite`,
    /// else the other of the two agents holding the author/reviewer roles, else any other agent.
    pub fn opposite_of(&self, name: &str) -> Option<String> {
        if let Some(o) = self.agents.get(name).and_then(|a| a.opposite.clone()) {
            return Some(o);
        }
        let pair = [
            self.roles.spec_author.as_str(),
            self.roles.spec_reviewer.as_str(),
        ];
        if pair[0] != pair[1] {
            if name == pair[0] {
                return Some(pair[1].to_string());
            }
            if name == pair[1] {
                return Some(pair[0].to_string());
            }
        }
        self.agents.keys().find(|k| k.as_str() != name).cloned()
    }
}

/// The error of `file` at `l`.
fn at(file: &Path, l: yaml::Located) -> Box<ConfigError> {
    Box::new(ConfigError {
        file: file.to_path_buf(),
        line: l.line,
        key: l.key,
        problem: l.problem,
        help: l.help,
    })
}

static DEFAULT_CLAUDE: AgentConfig = AgentConfig::of_kind(AgentKind::ClaudeCli);

/// The YAML spelling of an agent kind.
pub fn kind_name(kind: AgentKind) -> &'static str {
    kind.into()
}

#[cfg(test)]
mod tests;
