//! Secret values and their redaction.
//!
//! API keys and tokens must never reach logs, evidence, state, PR bodies or error messages. The
//! redactor knows every configured secret *value* (not just names), so anything the pipeline
//! writes can be passed through it, including text an agent printed.

use std::collections::BTreeSet;

/// Environment variables that always hold secrets.
pub const SECRET_VARS: [&str; 8] = [
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "INPUT_GITHUB_TOKEN",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "INPUT_ANTHROPIC_API_KEY",
    "INPUT_OPENAI_API_KEY",
    "ACTIONS_RUNTIME_TOKEN",
];

/// What names further secret variables beyond [`SECRET_VARS`]: the configuration, through its
/// agents' `api_key_env`. A trait rather than the configuration type, so that this low module
/// does not import the (higher) configuration module.
pub trait SecretEnvNames {
    /// Names of environment variables whose values are secrets.
    fn secret_env_names(&self) -> Vec<String>;
}

/// The set of secret values known to this process.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    values: BTreeSet<String>,
}

impl Redactor {
    /// Collects secrets from the environment and the configured `api_key_env` variables.
    pub fn from_env(config: &impl SecretEnvNames) -> Redactor {
        let mut names: Vec<String> = SECRET_VARS.iter().map(|s| s.to_string()).collect();
        names.extend(config.secret_env_names());
        let mut r = Redactor::default();
        for n in names {
            if let Ok(v) = std::env::var(&n) {
                r.add(&v);
            }
        }
        r
    }

    /// Adds a secret value; very short values are ignored, as redacting them would shred text.
    pub fn add(&mut self, value: &str) {
        let v = value.trim();
        if v.len() >= 6 {
            self.values.insert(v.to_string());
        }
    }

    /// Whether no secret is known (redaction would change nothing).
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Replaces every known secret in `text` with `***`.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        // Longest first, so that a secret containing another is replaced whole.
        let mut values: Vec<&String> = self.values.iter().collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        for v in values {
            out = out.replace(v.as_str(), "***");
        }
        out
    }
}

/// A secret value (token, API key) that cannot be printed by accident: `Debug` and `Display`
/// show `***`, and the value is reached only through [`Secret::expose`], so every place that
/// hands it on is explicit and easy to audit.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value; `None` when it is empty or only whitespace (an unset Action input arrives
    /// as an empty string, which must behave like no secret at all).
    pub fn new(value: impl Into<String>) -> Option<Secret> {
        let v = value.into();
        (!v.trim().is_empty()).then(|| Secret(v.trim().to_string()))
    }

    /// The value, for the one place that must send it (an HTTP header, a child's environment).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_longest_first_and_ignores_tiny_values() {
        let mut r = Redactor::default();
        r.add("sk-abcdef");
        r.add("sk-abcdef-longer");
        r.add("x");
        assert_eq!(
            r.redact("a sk-abcdef-longer b sk-abcdef x"),
            "a *** b *** x"
        );
    }

    #[test]
    fn a_secret_never_prints_its_value() {
        let s = Secret::new(" ghs_value123 ").unwrap();
        assert_eq!(format!("{s:?} {s}"), "Secret(***) ***");
        assert_eq!(s.expose(), "ghs_value123");
        assert!(Secret::new("  ").is_none());
    }
}
