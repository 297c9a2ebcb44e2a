//! Putting an agent behind the model API proxy ([`crate::proxy`]): where its real key and
//! upstream are, what its environment and arguments become, and what its call cost as measured
//! at the wire.
//!
//! The CLI kinds get the proxy's URL and a per-call token in the variables their vendor's
//! clients read (`ANTHROPIC_BASE_URL` + `ANTHROPIC_API_KEY` for claude; for codex a model
//! provider whose `base_url` is the proxy and whose key variable is `OPENAI_API_KEY`), and every
//! variable that could hold a real credential is removed. The HTTP kinds post to the proxy with
//! the token. An agent with no key to protect (a CLI logged in with its own session) runs as
//! configured; `proxy: false` turns fronting off for an endpoint the proxy cannot front.

use super::{AgentError, AgentReply, CallUsage};
use crate::config::{AgentConfig, AgentKind, Config};
use crate::proxy::meter::Pricing;
use crate::proxy::{self, Metered, Route, Ticket, Vendor};
use crate::types::kinds::BlockerCategory;

/// The codex model provider the proxy is declared as (`-c model_providers.<id>…`).
const CODEX_PROVIDER: &str = "spec-orchestrate-proxy";

/// Variables that may hold a real credential of each vendor (or, for OpenAI, point the client
/// past the proxy); none reaches a fronted agent.
const ANTHROPIC_SECRETS: [&str; 3] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
];
const OPENAI_REMOVED: [&str; 3] = ["OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL"];

/// A call fronted by the proxy.
#[derive(Debug)]
pub struct Fronting {
    /// The call's access to the proxy.
    pub ticket: Ticket,
    /// Variables removed from the agent's environment (credentials, the real key's variable).
    pub remove: Vec<String>,
    /// Variables set in the agent's environment (the proxy's URL and the token).
    pub set: Vec<(String, String)>,
    /// Extra CLI arguments (codex's provider declaration).
    pub args: Vec<String>,
}

/// The variable the vendor's clients read their key from.
fn key_var_of(vendor: Vendor) -> &'static str {
    match vendor {
        Vendor::Anthropic => "ANTHROPIC_API_KEY",
        Vendor::Openai => "OPENAI_API_KEY",
    }
}

fn vendor_of(kind: AgentKind) -> Option<Vendor> {
    match kind {
        AgentKind::ClaudeCli | AgentKind::Anthropic => Some(Vendor::Anthropic),
        AgentKind::CodexCli | AgentKind::Openai => Some(Vendor::Openai),
        AgentKind::Command => None,
    }
}

/// A variable of the agent: its own `env` first, then the orchestrator's environment.
fn var(agent: &AgentConfig, name: &str) -> Option<String> {
    agent
        .env
        .get(name)
        .cloned()
        .or_else(|| std::env::var(name).ok())
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The real upstream: `base_url`, else the vendor's base URL variable, else the vendor. A
/// trailing `/v1` is dropped: the clients' paths carry it. The HTTP kinds use it too when they
/// are not fronted.
pub(super) fn upstream(agent: &AgentConfig, vendor: Vendor) -> String {
    let (var_name, default) = match vendor {
        Vendor::Anthropic => ("ANTHROPIC_BASE_URL", super::anthropic::DEFAULT_BASE),
        Vendor::Openai => ("OPENAI_BASE_URL", super::openai::DEFAULT_BASE),
    };
    let base = agent
        .base_url
        .clone()
        .filter(|u| !u.trim().is_empty())
        .or_else(|| var(agent, var_name))
        .unwrap_or_else(|| default.to_string());
    let base = base.trim().trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base).to_string()
}

/// Opens a fronted call for `agent`, or `None` when it is not fronted (command kind,
/// `proxy: false`, or no key to protect).
pub fn front(
    config: &Config,
    name: &str,
    agent: &AgentConfig,
    budget_left: Option<f64>,
) -> Result<Option<Fronting>, AgentError> {
    let Some(vendor) = vendor_of(agent.kind).filter(|_| agent.proxy != Some(false)) else {
        return Ok(None);
    };
    let key_var = agent
        .api_key_env
        .clone()
        .unwrap_or_else(|| key_var_of(vendor).into());
    let Some(key) = var(agent, &key_var) else {
        return Ok(None);
    };
    let route = Route {
        agent: name.to_string(),
        vendor,
        upstream: upstream(agent, vendor),
        key,
        pricing: Pricing {
            table: config.prices.clone(),
            fallback: config.price_of(agent).map(|(_, p)| p),
        },
        budget_left,
    };
    let ticket = proxy::open(route).map_err(|e| {
        AgentError::new(
            BlockerCategory::EnvError,
            format!(
                "agent `{name}`: {e}; set `agents.{name}.proxy: false` to run it with its own key"
            ),
        )
    })?;
    let base = ticket.base_url().to_string();
    let mut set = vec![(key_var_of(vendor).to_string(), ticket.token().to_string())];
    let (secrets, args): (&[&str], _) = match vendor {
        Vendor::Anthropic => {
            set.insert(0, ("ANTHROPIC_BASE_URL".to_string(), base));
            (&ANTHROPIC_SECRETS, Vec::new())
        }
        Vendor::Openai => (&OPENAI_REMOVED, codex_provider_args(&format!("{base}/v1"))),
    };
    let mut remove: Vec<String> = secrets.iter().map(|s| s.to_string()).collect();
    remove.push(key_var);
    Ok(Some(Fronting {
        ticket,
        remove,
        set,
        args,
    }))
}

/// `-c` overrides declaring the proxy as codex's model provider (Responses wire API, key in
/// `OPENAI_API_KEY`), so that codex's configured providers and login are not used.
fn codex_provider_args(base: &str) -> Vec<String> {
    let p = CODEX_PROVIDER;
    [
        format!("model_provider=\"{p}\""),
        format!("model_providers.{p}.name=\"spec-orchestrate model API proxy\""),
        format!("model_providers.{p}.base_url=\"{base}\""),
        format!("model_providers.{p}.env_key=\"OPENAI_API_KEY\""),
        format!("model_providers.{p}.wire_api=\"responses\""),
    ]
    .into_iter()
    .flat_map(|kv| ["-c".to_string(), kv])
    .collect()
}

/// The usage measured at the wire replaces the one the agent reported (tokens always; the cost
/// when every exchange was priced, else the agent's own figure).
fn usage(reported: CallUsage, m: &Metered) -> CallUsage {
    if m.exchanges == 0 {
        return reported;
    }
    CallUsage {
        input_tokens: m.input_tokens,
        output_tokens: m.output_tokens,
        usd: if m.priced { m.usd } else { reported.usd },
    }
}

/// Applies what the proxy measured to a call's result: the metered usage, and a budget stop
/// when the proxy refused or cut a request for the budget (whatever the agent made of it).
pub fn settle(
    result: Result<AgentReply, AgentError>,
    metered: &Metered,
) -> Result<AgentReply, AgentError> {
    let used = usage(
        result.as_ref().map_or_else(|e| e.usage, |r| r.usage),
        metered,
    );
    match (result, &metered.budget_stop) {
        (_, Some(stop)) => Err(AgentError {
            category: BlockerCategory::BudgetExhausted,
            detail: stop.clone(),
            usage: used,
        }),
        (Ok(r), None) => Ok(AgentReply { usage: used, ..r }),
        (Err(e), None) => Err(AgentError { usage: used, ..e }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fronted_agents_get_the_proxy_and_a_token_never_the_key() {
        let config = Config::default();
        let mut codex = AgentConfig::of_kind(AgentKind::CodexCli);
        codex
            .env
            .insert("OPENAI_API_KEY".into(), "sk-real-unit-key".into());
        codex
            .env
            .insert("OPENAI_BASE_URL".into(), "http://127.0.0.1:9/v1/".into());
        let f = front(&config, "codex", &codex, None)
            .expect("proxy starts")
            .expect("a key to protect");
        assert_eq!(upstream(&codex, Vendor::Openai), "http://127.0.0.1:9");
        assert!(f.remove.iter().any(|k| k == "OPENAI_API_KEY"));
        assert!(f.remove.iter().any(|k| k == "OPENAI_BASE_URL"));
        assert_eq!(
            f.set,
            vec![("OPENAI_API_KEY".to_string(), f.ticket.token().to_string())]
        );
        let base = format!("{}/v1", f.ticket.base_url());
        assert!(f.args.iter().any(|a| a.contains(&base)), "{:?}", f.args);
        assert!(
            !format!("{f:?}").contains("sk-real-unit-key"),
            "a debug print of a fronted call does not show the key"
        );
        codex.proxy = Some(false);
        assert!(front(&config, "codex", &codex, None).unwrap().is_none());
        let script = AgentConfig::of_kind(AgentKind::Command);
        assert!(front(&config, "s", &script, None).unwrap().is_none());
    }
}
