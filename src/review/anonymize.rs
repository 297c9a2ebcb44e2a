//! Keeping debaters anonymous: no agent, vendor or model name reaches a debater's or the judge's
//! prompt.
//!
//! Knowing that the other side is "the big model" or "my own vendor" changes how a model argues;
//! the debate is only worth something if each side judges the other's findings on their merits.
//! The templates name nobody, and every value put into a debate prompt (the spec's context, the
//! other side's envelope, the positions shown to the judge) passes through [`Anonymizer::scrub`],
//! which replaces each configured agent name, model, backend kind and a fixed list of vendor and
//! product names (whole words, any case) with `[redacted]`.

use regex::Regex;

use crate::config::{Config, kind_name};

/// Vendor and product names that are always removed.
pub const VENDOR_WORDS: [&str; 10] = [
    "anthropic",
    "claude",
    "openai",
    "codex",
    "chatgpt",
    "gpt",
    "gemini",
    "google",
    "mistral",
    "llama",
];

/// What replaces a name.
pub const REDACTED: &str = "[redacted]";

/// Scrubs names out of text.
#[derive(Debug, Clone)]
pub struct Anonymizer {
    pattern: Option<Regex>,
    terms: Vec<String>,
}

impl Anonymizer {
    /// Collects the names of `config` (agents, models, kinds, binaries) plus [`VENDOR_WORDS`].
    pub fn from_config(config: &Config) -> Anonymizer {
        let mut terms: Vec<String> = VENDOR_WORDS.iter().map(|s| s.to_string()).collect();
        for (name, agent) in &config.agents {
            terms.push(name.clone());
            terms.push(kind_name(agent.kind).to_string());
            if let Some(m) = &agent.model {
                terms.push(m.clone());
            }
            if let Some(b) = &agent.binary {
                let file = std::path::Path::new(b)
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_else(|| b.clone());
                terms.push(file);
            }
        }
        Anonymizer::new(terms)
    }

    /// Scrubs exactly `terms` (empty ones ignored).
    pub fn new(terms: Vec<String>) -> Anonymizer {
        let mut terms: Vec<String> = terms
            .into_iter()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect();
        // Longest first, so `claude-cli` is replaced whole rather than as `[redacted]-cli`.
        terms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        terms.dedup();
        let alternatives: Vec<String> = terms.iter().map(|t| regex::escape(t)).collect();
        let pattern = (!alternatives.is_empty())
            .then(|| {
                Regex::new(&format!(
                    r"(?i)(^|[^\p{{L}}\p{{N}}_])({})($|[^\p{{L}}\p{{N}}_])",
                    alternatives.join("|")
                ))
                .ok()
            })
            .flatten();
        Anonymizer { pattern, terms }
    }

    /// `text` with every name replaced by [`REDACTED`].
    pub fn scrub(&self, text: &str) -> String {
        let Some(re) = &self.pattern else {
            return self.scrub_plainly(text);
        };
        // Adjacent names share a separator, so repeat until nothing matches any more.
        let mut out = text.to_string();
        for _ in 0..8 {
            let next = re
                .replace_all(&out, |c: &regex::Captures| {
                    format!("{}{REDACTED}{}", &c[1], &c[3])
                })
                .into_owned();
            if next == out {
                break;
            }
            out = next;
        }
        out
    }

    /// The fallback when the pattern could not be built (it always can for names of sane
    /// length): every occurrence, whole word or not, is replaced, so anonymity never depends on
    /// the regex engine.
    fn scrub_plainly(&self, text: &str) -> String {
        let mut out = text.to_string();
        for term in &self.terms {
            let needle = term.to_lowercase();
            let mut from = 0;
            loop {
                let lower = out.to_lowercase();
                // Lower-casing must keep byte offsets to splice by them; otherwise replace the
                // exact spelling only.
                if lower.len() != out.len() {
                    out = out.replace(term.as_str(), REDACTED);
                    break;
                }
                match lower.get(from..).and_then(|rest| rest.find(&needle)) {
                    Some(i) => {
                        let start = from + i;
                        out.replace_range(start..start + needle.len(), REDACTED);
                        // Continue after the replacement, so a name inside REDACTED cannot loop.
                        from = start + REDACTED.len();
                    }
                    None => break,
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_go_in_any_case_as_whole_words_only() {
        let a = Anonymizer::new(vec!["claude".into(), "gpt-5".into(), "claude-cli".into()]);
        assert_eq!(
            a.scrub("As Claude (claude-cli) I disagree with GPT-5, claude claude."),
            "As [redacted] ([redacted]) I disagree with [redacted], [redacted] [redacted]."
        );
        assert_eq!(a.scrub("claudette stays"), "claudette stays");
    }

    #[test]
    fn the_plain_fallback_also_removes_every_name() {
        let a = Anonymizer {
            pattern: None,
            terms: vec!["claude".into(), "gpt-5".into()],
        };
        assert_eq!(a.scrub("Claude and GPT-5"), "[redacted] and [redacted]");
        let b = Anonymizer {
            pattern: None,
            terms: vec!["red".into()],
        };
        assert_eq!(b.scrub("red, Red"), "[redacted], [redacted]");
    }

    #[test]
    fn config_names_and_vendors_are_covered() {
        let c = Config::default();
        let a = Anonymizer::from_config(&c);
        let text = a.scrub("codex-cli, OpenAI, Anthropic, codex and claude");
        assert!(!text.to_lowercase().contains("codex"), "{text}");
        assert!(!text.to_lowercase().contains("openai"), "{text}");
        assert!(!text.to_lowercase().contains("claude"), "{text}");
    }
}
