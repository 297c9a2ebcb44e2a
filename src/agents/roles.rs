//! Role resolution: which agent actually plays each role.
//!
//! A role whose agent cannot run here (CLI not installed, program missing) is reassigned to the
//! opposite agent in auto mode and the override is recorded, because the PR must say that it was
//! built with reduced cross-model assurance. Manual mode refuses and asks the person to decide.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::{AgentConfig, AgentKind, Config};
use crate::error::{Error, Result};
use crate::process::find_confined_executable;
use crate::state::{Mode, RoleOverride};
use crate::types::Role;
use crate::util;

/// Why an agent cannot run here, or `None` when it can.
pub fn unavailable_reason(name: &str, agent: &AgentConfig, repo: &Path) -> Option<String> {
    match agent.kind {
        AgentKind::ClaudeCli | AgentKind::CodexCli => {
            let bin = agent
                .binary
                .clone()
                .or_else(|| agent.kind.default_binary().map(str::to_string))
                .unwrap_or_default();
            find_confined_executable(&bin, repo)
                .is_none()
                .then(|| format!("{bin} CLI not found"))
        }
        AgentKind::Command => {
            let program = agent
                .command
                .as_ref()
                .and_then(|c| c.first())
                .cloned()
                .unwrap_or_default();
            find_confined_executable(&program, repo)
                .is_none()
                .then(|| format!("agent `{name}`: program `{program}` not found"))
        }
        AgentKind::Anthropic | AgentKind::Openai => {
            let var = agent.key_env().unwrap_or_default();
            let set = std::env::var(&var).is_ok_and(|v| !v.trim().is_empty());
            (!set).then(|| format!("agent `{name}`: its API key variable {var} is not set"))
        }
    }
}

/// Resolves every role to an available agent, returning the role map and the overrides made.
pub fn resolve(
    config: &Config,
    repo: &Path,
    mode: Mode,
) -> Result<(BTreeMap<Role, String>, Vec<RoleOverride>)> {
    let mut map = BTreeMap::new();
    let mut overrides = Vec::new();
    let mut reasons: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut reason_of = |name: &str| -> Option<String> {
        reasons
            .entry(name.to_string())
            .or_insert_with(|| {
                config
                    .agents
                    .get(name)
                    .and_then(|a| unavailable_reason(name, a, repo))
            })
            .clone()
    };
    for role in Role::ALL {
        let wanted = config.roles.get(role).to_string();
        let Some(reason) = reason_of(&wanted) else {
            map.insert(role, wanted);
            continue;
        };
        if mode == Mode::Manual {
            return Err(Error::agent(
                wanted.clone(),
                format!(
                    "role {role} is assigned to `{wanted}`, but {reason}. Install it, assign another agent under `roles.{role}` in .specs/pipeline.yml, or run with --mode auto to let the pipeline reassign it (recorded as reduced cross-model assurance)"
                ),
            ));
        }
        let mut candidates: Vec<String> = config.opposite_of(&wanted).into_iter().collect();
        candidates.extend(config.agents.keys().filter(|k| **k != wanted).cloned());
        // A text-only (HTTP) agent cannot take over a role that edits code.
        let can_play = |c: &String| {
            !(matches!(role, Role::ImplUi | Role::ImplBackend | Role::ImplTest)
                && config.agents.get(c).is_some_and(|a| a.kind.is_http()))
        };
        let replacement = candidates
            .into_iter()
            .filter(can_play)
            .find(|c| reason_of(c).is_none());
        let Some(to) = replacement else {
            return Err(Error::agent(
                wanted.clone(),
                format!(
                    "no agent can play {role}: `{wanted}`: {reason}, and no other configured agent is available. Install the claude or codex CLI, or configure a `command` agent in .specs/pipeline.yml"
                ),
            ));
        };
        tracing::warn!(role = %role, from = %wanted, to = %to, "role reassigned: {reason}");
        crate::events::emit(crate::events::Event::RoleReassigned {
            role,
            from: wanted.clone().into(),
            to: to.clone().into(),
            reason: reason.to_string(),
        });
        overrides.push(RoleOverride {
            role,
            from: wanted.into(),
            to: to.clone().into(),
            reason,
            ts: util::now(),
        });
        map.insert(role, to);
    }
    Ok((map, overrides))
}
