//! The scrubbed environment a spawned program runs in.
//!
//! Only `PATH`, `HOME`, locale and temp settings pass, plus what the caller's [`EnvPolicy`] adds
//! (an agent's own vendor variables, its key variable, its configured `env`); never
//! `GITHUB_TOKEN`, `INPUT_*`, `ACTIONS_*` or another vendor's key.

use std::collections::BTreeMap;

const BASE: [&str; 6] = ["PATH", "HOME", "LANG", "LANGUAGE", "TMPDIR", "TZ"];

/// What passes beyond the base variables. Agents build one from their configuration
/// (`agents::env::scrubbed`); harness-run programs use the default, which adds nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnvPolicy<'a> {
    /// Variables starting with one of these pass (`ANTHROPIC_`, `OPENAI_`, …).
    pub prefixes: &'a [&'a str],
    /// Variables with exactly these names pass.
    pub exact: &'a [&'a str],
    /// The variable holding the program's API key, which passes.
    pub api_key_env: Option<&'a str>,
    /// Set on top of what passed, overriding it.
    pub extra: Option<&'a BTreeMap<String, String>>,
}

/// Builds the environment allowed by `policy` from `vars` (normally `std::env::vars()`).
pub fn scrubbed(
    policy: &EnvPolicy,
    vars: impl IntoIterator<Item = (String, String)>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (k, v) in vars {
        let keep = BASE.contains(&k.as_str())
            || k.starts_with("LC_")
            || policy.prefixes.iter().any(|p| k.starts_with(p))
            || policy.exact.contains(&k.as_str())
            || policy.api_key_env == Some(k.as_str());
        if keep {
            out.insert(k, v);
        }
    }
    for (k, v) in policy.extra.into_iter().flatten() {
        out.insert(k.clone(), v.clone());
    }
    out
}

/// The environment of a program the harness runs itself (case commands, the app, the browser
/// driver): the base variables only.
pub fn base(vars: impl IntoIterator<Item = (String, String)>) -> BTreeMap<String, String> {
    scrubbed(&EnvPolicy::default(), vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_keeps_only_path_home_locale() {
        let vars = [
            ("PATH", "/bin"),
            ("GITHUB_TOKEN", "ghs_x"),
            ("ANTHROPIC_API_KEY", "sk-a"),
            ("LC_ALL", "C"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let env = base(vars);
        assert_eq!(
            env.keys().cloned().collect::<Vec<_>>(),
            vec!["LC_ALL", "PATH"]
        );
    }
}
