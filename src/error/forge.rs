//! What GitHub answered when a call failed, as data: the HTTP status, GitHub's error code and
//! message, and the class of failure read from GitHub's documented signals.
//!
//! A caller that must react to one particular refusal (the repository setting that keeps the
//! workflow's token from opening pull requests, a secondary rate limit, a missing run) matches
//! on [`ForgeCause`] or on [`ForgeFailure::status`] and [`ForgeFailure::codes`], never on the
//! text of the error: the text is for people and may be reworded.

use std::time::Duration;

/// The class of a failed GitHub call (REST, GraphQL, the results service, storage).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForgeCause {
    /// Not classified (also: an error built by hand without an answer).
    #[default]
    Other,
    /// The HTTP client could not be set up (TLS, runtime).
    Setup,
    /// No answer: DNS, connect, a connection reset or dropped midway, a timeout.
    Unreachable,
    /// 401: the token was refused.
    BadCredentials,
    /// A real refusal: 403 without any rate-limit signal (the token lacks a permission).
    Forbidden,
    /// GitHub's 403 when "Allow GitHub Actions to create and approve pull requests" is off and
    /// the token is the workflow's own.
    ActionsMayNotCreatePullRequests,
    /// A secondary rate limit: 403 or 429 with `retry-after`, or with GitHub's documented
    /// message ("You have exceeded a secondary rate limit").
    SecondaryRateLimit,
    /// The primary rate limit: `x-ratelimit-remaining: 0`; GitHub accepts calls again at
    /// `reset` (Unix seconds, from `x-ratelimit-reset`).
    PrimaryRateLimit {
        /// `x-ratelimit-reset`, when GitHub sent it.
        reset: Option<u64>,
    },
    /// 404 (or GraphQL `NOT_FOUND`).
    NotFound,
    /// 400 or 422: GitHub rejected the request as invalid.
    Invalid,
    /// 5xx: GitHub failed (a 502 from its load balancers, a 503 while it is busy).
    Server,
    /// An answer that does not match GitHub's documented shape (a field missing or of another
    /// type), or a body larger than the client reads.
    OddAnswer,
}

impl ForgeCause {
    /// Whether the same call may succeed if tried again later without any change: rate limits,
    /// server errors and lost connections are GitHub's bad minutes, not the caller's mistake.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ForgeCause::Unreachable
                | ForgeCause::SecondaryRateLimit
                | ForgeCause::PrimaryRateLimit { .. }
                | ForgeCause::Server
        )
    }
}

/// GitHub's answer to a failed call, as far as it is data.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(missing_docs)]
pub struct ForgeFailure {
    /// The HTTP status of the answer; `None` when there was no answer, or when the answer was a
    /// 2xx that could not be used.
    pub status: Option<u16>,
    pub cause: ForgeCause,
    /// GitHub's `message` (REST), Twirp's `msg` (results service), the first GraphQL error's
    /// `message`, or storage's error code.
    pub message: Option<String>,
    /// Machine-readable codes: REST `errors[].code` (`invalid`, `already_exists`, `custom`, …),
    /// Twirp's `code` (`not_found`, `already_exists`, …), GraphQL `errors[].type` (`FORBIDDEN`,
    /// `NOT_FOUND`, `RATE_LIMITED`, …).
    pub codes: Vec<String>,
    /// The wait GitHub asked for (`retry-after`), when it asked.
    pub retry_after: Option<Duration>,
}

impl ForgeFailure {
    /// A failure of `cause` with no answer to describe (no connection, a setup problem).
    pub fn of(cause: ForgeCause) -> ForgeFailure {
        ForgeFailure {
            cause,
            ..ForgeFailure::default()
        }
    }

    /// Whether `code` is among the answer's codes.
    pub fn has_code(&self, code: &str) -> bool {
        self.codes.iter().any(|c| c == code)
    }
}
