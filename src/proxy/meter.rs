//! Metering what passes through the proxy: the tokens of one exchange, read from the response
//! as it streams (a JSON body's `usage`, or the usage carried by SSE events: Anthropic's
//! `message_start` / `message_delta`, OpenAI's `response.completed` / `response.incomplete` /
//! `response.failed`), and their cost at the configured price of the model that answered.
//!
//! While a stream runs, its output is not billed yet (Anthropic reports output tokens at the
//! end, OpenAI reports everything at the end), so the text of the deltas seen so far stands in
//! for it (about four characters per token) until the usage arrives. That keeps a long answer
//! from running far past the budget before its bill is known.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Vendor;
use crate::pricing::{Price, Tokens};

/// Characters per token when the text seen so far stands in for an unreported output count.
const CHARS_PER_TOKEN: usize = 4;
/// Upper bound of a non-streamed body kept for reading its usage (the body itself is passed on
/// whole regardless).
const MAX_JSON_BODY: usize = 8 * 1024 * 1024;

/// How one exchange is priced.
#[derive(Debug, Clone)]
pub struct Pricing {
    /// The configured `prices:` table (overlaying the built-in one).
    pub table: BTreeMap<String, Price>,
    /// The agent's configured model price, used when the answering model has none.
    pub fallback: Option<Price>,
}

impl Pricing {
    /// The price of `model` (the table first, then the agent's own).
    pub fn of(&self, model: Option<&str>) -> Option<Price> {
        model
            .and_then(|m| crate::pricing::lookup(&self.table, m).map(|(_, p)| p))
            .or(self.fallback)
    }
}

/// The meter of one request/response exchange.
#[derive(Debug)]
pub struct ExchangeMeter {
    vendor: Vendor,
    sse: bool,
    /// Bytes of a partial SSE line carried to the next chunk.
    pending: Vec<u8>,
    /// Non-streamed body, kept to read its usage at the end.
    body: Vec<u8>,
    /// Model named by the request, until the response names one.
    model: Option<String>,
    input: u64,
    cached: u64,
    cache_write: u64,
    output: u64,
    /// Characters of generated text seen so far (stands in for `output` until it is reported).
    streamed_chars: usize,
    /// A usage object was seen.
    reported: bool,
}

impl ExchangeMeter {
    /// A meter for a response of `vendor`; `sse` when the response is an event stream;
    /// `request_model` is the `model` of the request body.
    pub fn new(vendor: Vendor, sse: bool, request_model: Option<String>) -> ExchangeMeter {
        ExchangeMeter {
            vendor,
            sse,
            pending: Vec::new(),
            body: Vec::new(),
            model: request_model,
            input: 0,
            cached: 0,
            cache_write: 0,
            output: 0,
            streamed_chars: 0,
            reported: false,
        }
    }

    /// Feeds the next chunk of the response body.
    pub fn feed(&mut self, chunk: &[u8]) {
        if !self.sse {
            if self.body.len() + chunk.len() <= MAX_JSON_BODY {
                self.body.extend_from_slice(chunk);
            }
            return;
        }
        self.pending.extend_from_slice(chunk);
        while let Some(nl) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=nl).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\r', '\n']);
            if let Some(data) = line.strip_prefix("data:")
                && let Ok(v) = serde_json::from_str::<Value>(data.trim_start())
            {
                self.event(&v);
            }
        }
    }

    /// The body ended: a JSON body is read for its usage.
    pub fn finish(&mut self) {
        if !self.sse && !self.body.is_empty() {
            if let Ok(v) = serde_json::from_slice::<Value>(&self.body) {
                self.event(&v);
            }
            self.body.clear();
        }
    }

    fn event(&mut self, v: &Value) {
        let holders = [v, &v["message"], &v["response"]];
        for h in holders {
            if let Some(m) = h.get("model").and_then(Value::as_str) {
                self.model = Some(m.to_string());
            }
            if let Some(u) = h.get("usage").filter(|u| u.is_object()) {
                self.usage(u);
            }
        }
        // Generated text seen so far: Anthropic's `content_block_delta`, OpenAI's `*.delta`.
        let delta = &v["delta"];
        let text = [
            delta.as_str(),
            delta["text"].as_str(),
            delta["partial_json"].as_str(),
            delta["thinking"].as_str(),
        ];
        self.streamed_chars += text.iter().flatten().map(|t| t.len()).sum::<usize>();
    }

    fn usage(&mut self, u: &Value) {
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        let nested = |a: &str, b: &str| u.get(a).and_then(|d| d.get(b)).and_then(Value::as_u64);
        self.reported = true;
        match self.vendor {
            Vendor::Anthropic => {
                // `message_delta` repeats or completes what `message_start` said: the counts
                // are cumulative, so the largest value of each is the bill.
                self.input = self.input.max(n("input_tokens").unwrap_or(0));
                self.cached = self.cached.max(n("cache_read_input_tokens").unwrap_or(0));
                self.cache_write = self
                    .cache_write
                    .max(n("cache_creation_input_tokens").unwrap_or(0));
                self.output = self.output.max(n("output_tokens").unwrap_or(0));
            }
            Vendor::Openai => {
                // Responses (`input_tokens`) or Chat Completions (`prompt_tokens`); the cached
                // tokens are part of the input count.
                let input = n("input_tokens").or(n("prompt_tokens")).unwrap_or(0);
                let cached = nested("input_tokens_details", "cached_tokens")
                    .or(nested("prompt_tokens_details", "cached_tokens"))
                    .unwrap_or(0);
                self.input = self.input.max(input);
                self.cached = self.cached.max(cached.min(input));
                let output = n("output_tokens").or(n("completion_tokens")).unwrap_or(0);
                self.output = self.output.max(output);
            }
        }
    }

    /// The tokens so far, split the way the vendors bill them; output not yet reported is
    /// estimated from the streamed text.
    pub fn tokens(&self) -> Tokens {
        let (input, cache_read) = match self.vendor {
            Vendor::Anthropic => (self.input, self.cached),
            Vendor::Openai => (self.input - self.cached, self.cached),
        };
        let estimated = (self.streamed_chars / CHARS_PER_TOKEN) as u64;
        Tokens {
            input,
            cache_read,
            cache_write: self.cache_write,
            output: self.output.max(estimated),
        }
    }

    /// The model that answered (else the one asked for).
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// Whether the response reported its usage.
    pub fn reported(&self) -> bool {
        self.reported
    }

    /// The cost so far at `pricing`; `None` when the model has no price.
    pub fn cost(&self, pricing: &Pricing) -> Option<f64> {
        pricing.of(self.model()).map(|p| self.tokens().cost(&p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pricing() -> Pricing {
        Pricing {
            table: BTreeMap::new(),
            fallback: None,
        }
    }

    #[test]
    fn anthropic_stream_split_across_chunks() {
        let stream = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":1000,\"cache_read_input_tokens\":200,\"output_tokens\":1}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"abcdefgh\"}}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":40}}\n\n",
        );
        let mut m = ExchangeMeter::new(Vendor::Anthropic, true, None);
        for part in stream.as_bytes().chunks(7) {
            m.feed(part);
        }
        m.finish();
        let t = m.tokens();
        assert_eq!((t.input, t.cache_read, t.output), (1000, 200, 40));
        let want = (1000.0 * 3.0 + 200.0 * 0.3 + 40.0 * 15.0) / 1e6;
        assert!((m.cost(&pricing()).unwrap() - want).abs() < 1e-12);
    }

    #[test]
    fn openai_json_and_streamed_estimate() {
        let mut m = ExchangeMeter::new(Vendor::Openai, false, Some("gpt-5".into()));
        m.feed(br#"{"object":"response","model":"gpt-5-2025-08-07","usage":{"input_tokens":500,"input_tokens_details":{"cached_tokens":100},"output_tokens":30}}"#);
        m.finish();
        let t = m.tokens();
        assert_eq!((t.input, t.cache_read, t.output), (400, 100, 30));
        assert_eq!(m.model(), Some("gpt-5-2025-08-07"));
        let mut s = ExchangeMeter::new(Vendor::Openai, true, Some("gpt-5".into()));
        s.feed(
            b"data: {\"type\":\"response.output_text.delta\",\"delta\":\"0123456789abcdef\"}\n\n",
        );
        assert_eq!(s.tokens().output, 4, "16 characters stand in for 4 tokens");
        assert!(!s.reported());
    }
}
