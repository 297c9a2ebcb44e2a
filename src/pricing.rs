//! Prices of model tokens, and the cost of one call.
//!
//! The HTTP backends get token counts from the API but no bill, so their cost is computed here
//! from a price table: the built-in one below (list prices in USD per million tokens), overlaid
//! by `prices:` in `.specs/pipeline.yml`. The table exists so that `limits.budget_usd` can be
//! enforced before a call is made; a model without a price would make the budget meaningless,
//! which is why configuration validation refuses an HTTP agent whose model has none.
//!
//! The CLI backends are billed by the CLI itself where it says so (`claude` reports
//! `total_cost_usd`); `codex exec` reports tokens only, so its calls are priced here too.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The price of one model, in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Uncached input tokens.
    pub input: f64,
    /// Output tokens (reasoning tokens included, as the vendors bill them).
    pub output: f64,
    /// Input tokens read from the prompt cache; `input` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Input tokens written to the prompt cache (Anthropic); `input` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

impl Price {
    const fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Price {
        Price {
            input,
            output,
            cache_read: Some(cache_read),
            cache_write: Some(cache_write),
        }
    }
}

/// Token counts of one call, split the way the vendors bill them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tokens {
    /// Input tokens billed at the full input price.
    pub input: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
    /// Output tokens.
    pub output: u64,
}

impl Tokens {
    /// All input tokens, however billed (what `usage.input_tokens` in the state counts).
    pub fn total_input(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }

    /// The cost of these tokens at `price`, in USD.
    pub fn cost(&self, price: &Price) -> f64 {
        let per = |n: u64, p: f64| n as f64 * p / 1_000_000.0;
        per(self.input, price.input)
            + per(self.cache_read, price.cache_read.unwrap_or(price.input))
            + per(self.cache_write, price.cache_write.unwrap_or(price.input))
            + per(self.output, price.output)
    }
}

/// The built-in table: list prices of the models people are likely to configure. A dated model
/// id (`claude-sonnet-4-5-20250929`) is priced by its longest listed prefix.
pub const BUILTIN: [(&str, Price); 16] = [
    ("claude-opus-4-5", Price::new(5.0, 25.0, 0.5, 6.25)),
    ("claude-opus-4-1", Price::new(15.0, 75.0, 1.5, 18.75)),
    ("claude-opus-4", Price::new(15.0, 75.0, 1.5, 18.75)),
    ("claude-sonnet-4-5", Price::new(3.0, 15.0, 0.3, 3.75)),
    ("claude-sonnet-4", Price::new(3.0, 15.0, 0.3, 3.75)),
    ("claude-haiku-4-5", Price::new(1.0, 5.0, 0.1, 1.25)),
    ("claude-3-5-haiku", Price::new(0.8, 4.0, 0.08, 1.0)),
    ("gpt-5-codex", Price::new(1.25, 10.0, 0.125, 1.25)),
    ("gpt-5-mini", Price::new(0.25, 2.0, 0.025, 0.25)),
    ("gpt-5-nano", Price::new(0.05, 0.4, 0.005, 0.05)),
    ("gpt-5", Price::new(1.25, 10.0, 0.125, 1.25)),
    ("gpt-4.1-mini", Price::new(0.4, 1.6, 0.1, 0.4)),
    ("gpt-4.1", Price::new(2.0, 8.0, 0.5, 2.0)),
    ("gpt-4o-mini", Price::new(0.15, 0.6, 0.075, 0.15)),
    ("gpt-4o", Price::new(2.5, 10.0, 1.25, 2.5)),
    ("o3", Price::new(2.0, 8.0, 0.5, 2.0)),
];

/// The model the `anthropic` kind uses when `model` is null.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// The model the `openai` kind uses when `model` is null.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-5";
/// The model `codex exec` is priced as when `model` is null (codex's own default family).
pub const DEFAULT_CODEX_MODEL: &str = "gpt-5-codex";

/// Looks up `model`: the configured table first, then the built-in one; exact names before the
/// longest matching prefix. Returns the table key that matched and its price.
pub fn lookup(configured: &BTreeMap<String, Price>, model: &str) -> Option<(String, Price)> {
    if let Some(p) = configured.get(model) {
        return Some((model.to_string(), *p));
    }
    if let Some((k, p)) = BUILTIN.iter().find(|(k, _)| *k == model) {
        return Some((k.to_string(), *p));
    }
    let configured_prefix = configured
        .iter()
        .filter(|(k, _)| model.starts_with(k.as_str()))
        .max_by_key(|(k, _)| k.len())
        .map(|(k, p)| (k.clone(), *p));
    if configured_prefix.is_some() {
        return configured_prefix;
    }
    BUILTIN
        .iter()
        .filter(|(k, _)| model.starts_with(k))
        .max_by_key(|(k, _)| k.len())
        .map(|(k, p)| (k.to_string(), *p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dated_models_take_the_longest_prefix_and_configured_prices_win() {
        let none = BTreeMap::new();
        let (k, p) = lookup(&none, "claude-sonnet-4-5-20250929").unwrap();
        assert_eq!(k, "claude-sonnet-4-5");
        assert_eq!(p.input, 3.0);
        assert_eq!(
            lookup(&none, "gpt-5-mini-2025-08-07").unwrap().0,
            "gpt-5-mini"
        );
        assert_eq!(lookup(&none, "gpt-5").unwrap().0, "gpt-5");
        assert!(lookup(&none, "llama-3").is_none());
        let mut mine = BTreeMap::new();
        mine.insert("gpt-5".to_string(), Price::new(1.0, 1.0, 1.0, 1.0));
        assert_eq!(lookup(&mine, "gpt-5-2025").unwrap().1.input, 1.0);
    }

    #[test]
    fn cost_bills_each_kind_of_token_at_its_price() {
        let price = Price::new(3.0, 15.0, 0.3, 3.75);
        let t = Tokens {
            input: 1_000,
            cache_read: 10_000,
            cache_write: 2_000,
            output: 500,
        };
        let want = (1_000.0 * 3.0 + 10_000.0 * 0.3 + 2_000.0 * 3.75 + 500.0 * 15.0) / 1e6;
        assert!((t.cost(&price) - want).abs() < 1e-12);
        assert_eq!(t.total_input(), 13_000);
    }
}
