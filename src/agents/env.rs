//! The scrubbed environment an agent runs in.
//!
//! Only `PATH`, `HOME`, locale and temp settings, the agent's own vendor variables and its
//! configured `env` pass; never `GITHUB_TOKEN`, `INPUT_*`, `ACTIONS_*` or another vendor's key.
//! The scrubbing itself is [`crate::process::env`]; this module knows which vendor variables
//! belong to which kind of agent.

use std::collections::BTreeMap;

use crate::config::{AgentConfig, AgentKind};
use crate::process::env::EnvPolicy;

fn vendor_prefixes(kind: AgentKind) -> &'static [&'static str] {
    match kind {
        AgentKind::ClaudeCli | AgentKind::Anthropic => &["ANTHROPIC_", "CLAUDE_"],
        AgentKind::CodexCli | AgentKind::Openai => &["OPENAI_", "CODEX_"],
        AgentKind::Command => &[],
    }
}

fn vendor_exact(kind: AgentKind) -> &'static [&'static str] {
    match kind {
        AgentKind::ClaudeCli => &["IS_SANDBOX", "DISABLE_TELEMETRY"],
        _ => &[],
    }
}

/// Builds the environment for `agent` from `vars` (normally `std::env::vars()`).
pub fn scrubbed(
    agent: &AgentConfig,
    vars: impl IntoIterator<Item = (String, String)>,
) -> BTreeMap<String, String> {
    let policy = EnvPolicy {
        prefixes: vendor_prefixes(agent.kind),
        exact: vendor_exact(agent.kind),
        api_key_env: agent.api_key_env.as_deref(),
        extra: Some(&agent.env),
    };
    crate::process::env::scrubbed(&policy, vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_of_others_never_pass() {
        let vars = [
            ("PATH", "/bin"),
            ("GITHUB_TOKEN", "ghs_x"),
            ("INPUT_GITHUB_TOKEN", "ghs_y"),
            ("ACTIONS_RUNTIME_TOKEN", "rt"),
            ("OPENAI_API_KEY", "sk-o"),
            ("ANTHROPIC_API_KEY", "sk-a"),
            ("LC_ALL", "C"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let claude = AgentConfig::of_kind(AgentKind::ClaudeCli);
        let env = scrubbed(&claude, vars.clone());
        assert_eq!(
            env.keys().cloned().collect::<Vec<_>>(),
            vec!["ANTHROPIC_API_KEY", "LC_ALL", "PATH"]
        );
        let mut cmd = AgentConfig::of_kind(AgentKind::Command);
        cmd.env.insert("MODE".into(), "x".into());
        let env = scrubbed(&cmd, vars);
        assert_eq!(
            env.keys().cloned().collect::<Vec<_>>(),
            vec!["LC_ALL", "MODE", "PATH"]
        );
    }
}
