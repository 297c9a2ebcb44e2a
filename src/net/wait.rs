//! How long the retry loop waits: the server's `Retry-After` when it sends one, else an
//! exponential backoff with jitter.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use reqwest::header::HeaderMap;

/// Upper bound of one computed backoff delay.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Exponential backoff for retry number `retry` (1-based) with "equal jitter": half the delay
/// fixed, half random, so that many runners hit by the same overload do not return in step.
pub fn backoff(base: Duration, retry: u32) -> Duration {
    let exp = base.saturating_mul(1u32 << retry.saturating_sub(1).min(16));
    let capped = exp.min(MAX_BACKOFF);
    let half = capped / 2;
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(retry);
    let unit = (h.finish() % 10_000) as f64 / 10_000.0;
    half + half.mul_f64(unit)
}

/// The longest wait [`retry_after`] reports: a server asking for more (or sending a number too
/// large for a `Duration`) is read as asking for a day, which every policy refuses or caps.
pub const RETRY_AFTER_CEILING: Duration = Duration::from_secs(24 * 60 * 60);

/// The wait a response asks for: `retry-after-ms` (OpenAI), else `Retry-After` in seconds
/// (fractions allowed) or as an HTTP date; a date in the past means now. Garbage is `None`, and
/// anything beyond [`RETRY_AFTER_CEILING`] is the ceiling.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let secs = |s: f64| (s.is_finite() && s >= 0.0).then(|| capped_secs(s));
    if let Some(wait) = get("retry-after-ms")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|ms| secs(ms / 1000.0))
    {
        return Some(wait);
    }
    let value = get("retry-after")?.trim();
    if let Ok(s) = value.parse::<f64>() {
        return secs(s);
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(
        delta
            .to_std()
            .unwrap_or(Duration::ZERO)
            .min(RETRY_AFTER_CEILING),
    )
}

fn capped_secs(s: f64) -> Duration {
    if s >= RETRY_AFTER_CEILING.as_secs_f64() {
        RETRY_AFTER_CEILING
    } else {
        Duration::from_secs_f64(s)
    }
}

/// What an answer's headers say about throttling: the wait asked for (`Retry-After`, read by
/// [`retry_after`]) and GitHub's primary rate-limit headers (`x-ratelimit-remaining`,
/// `x-ratelimit-reset`: Unix seconds), kept on an error status so that a caller can tell a
/// rate limit from a refusal by GitHub's documented signals, not by the status alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttle {
    /// `Retry-After` (or `retry-after-ms`).
    pub retry_after: Option<Duration>,
    /// `x-ratelimit-remaining`.
    pub remaining: Option<u64>,
    /// `x-ratelimit-reset`.
    pub reset: Option<u64>,
}

impl Throttle {
    /// The throttling headers of an answer.
    pub fn of(headers: &HeaderMap) -> Throttle {
        let number = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        Throttle {
            retry_after: retry_after(headers),
            remaining: number("x-ratelimit-remaining"),
            reset: number("x-ratelimit-reset"),
        }
    }
}

impl Throttle {
    /// The wait this answer asks for, and whether it is a rate-limit reset: `Retry-After` when
    /// sent, else the time until `x-ratelimit-reset` when `x-ratelimit-remaining` is 0 (a call
    /// before the reset fails again, so a reset is waited for whole or not at all). `now` is the
    /// current Unix time in seconds.
    pub fn asked(&self, now: u64) -> Option<(Duration, bool)> {
        if let Some(wait) = self.retry_after {
            return Some((wait, false));
        }
        match (self.remaining, self.reset) {
            (Some(0), Some(reset)) => Some((
                Duration::from_secs(reset.saturating_sub(now)).min(RETRY_AFTER_CEILING),
                true,
            )),
            _ => None,
        }
    }
}

/// Whether GitHub's error status is one of its bad minutes, worth another attempt (GitHub REST
/// docs, "Rate limits for the REST API" and "Troubleshooting"): a 5xx; a 429; a 403 that is a
/// rate limit — the primary one (`x-ratelimit-remaining: 0`) or a secondary one (`retry-after`,
/// or the documented message "You have exceeded a secondary rate limit"). Any other 403 is a
/// refusal, and asking again would not change it.
pub fn github_retryable(status: u16, body: &str, throttle: &Throttle) -> bool {
    status >= 500
        || status == 429
        || (status == 403
            && (throttle.retry_after.is_some()
                || throttle.remaining == Some(0)
                || body.to_lowercase().contains("secondary rate limit")))
}
