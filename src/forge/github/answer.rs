//! A failed GitHub call as a forge error: the message a person reads (host, what failed, the
//! status and GitHub's message, a hint), the next step, and GitHub's answer as data
//! ([`ForgeFailure`]) classified by GitHub's documented signals.
//!
//! GitHub's REST reference ("Rate limits for the REST API", "Exceeding the rate limit"): the
//! primary limit answers 403 or 429 with `x-ratelimit-remaining: 0`, and calls succeed again at
//! `x-ratelimit-reset`; a secondary limit answers 403 or 429 with a message saying so, and with
//! `retry-after` when GitHub knows how long to wait. So a 403 is a permission refusal only when
//! it carries none of these signals.

use crate::error::Error;
use crate::error::forge::{ForgeCause, ForgeFailure};
use crate::net::NetError;
use crate::net::wait::Throttle;

use super::models::{ErrorBody, ErrorItem, decode};

/// Next step after GitHub could not be reached: nothing is lost, the run resumes.
pub(crate) const RETRY_HELP: &str = "check the network and GITHUB_API_URL, then run again (in Actions: Re-run failed jobs); the run resumes from its saved state";

/// Next step after a rate limit or a server error on GitHub's side.
pub(crate) const BUSY_HELP: &str = "GitHub is rate-limiting or failing; wait a few minutes and run again (in Actions: Re-run failed jobs); the run resumes from its saved state";

/// Next step after an answer that does not match GitHub's documented API.
pub(crate) const ODD_ANSWER_HELP: &str = "run again; if GitHub keeps answering this way, report it with the output of SPEC_ORCHESTRATE_LOG=debug";

/// Next step when the HTTP client itself could not be set up (TLS, runtime).
pub(crate) const SETUP_HELP: &str =
    "this machine could not set up a TLS client; check its certificates and resources";

/// GitHub's message when "Allow GitHub Actions to create and approve pull requests" is off and
/// the workflow's own token asks to open one: GitHub says it only in the message of a 403, so
/// this is the one place that reads it, turning it into
/// [`ForgeCause::ActionsMayNotCreatePullRequests`].
const ACTIONS_MAY_NOT_CREATE_PRS: &str =
    "GitHub Actions is not permitted to create or approve pull requests";

/// The phrase of GitHub's documented secondary rate-limit message ("You have exceeded a
/// secondary rate limit. Please wait a few minutes before you try again").
const SECONDARY_RATE_LIMIT: &str = "secondary rate limit";

/// GitHub's answer to a failed call, as data: status, class, message and codes.
pub fn failure_of(e: &NetError) -> ForgeFailure {
    match e {
        NetError::Setup(_) => ForgeFailure::of(ForgeCause::Setup),
        NetError::Transport { .. } | NetError::Body { .. } | NetError::NoTime { .. } => {
            ForgeFailure::of(ForgeCause::Unreachable)
        }
        NetError::TooLarge { status, .. } => ForgeFailure {
            status: Some(*status),
            ..ForgeFailure::of(ForgeCause::OddAnswer)
        },
        NetError::Status {
            status,
            body,
            throttle,
            ..
        } => classify(*status, body.as_bytes(), throttle),
        NetError::CutShort { last, .. } => failure_of(last),
    }
}

/// Classifies an error status with its body and throttling headers.
pub fn classify(status: u16, body: &[u8], throttle: &Throttle) -> ForgeFailure {
    let parsed: ErrorBody = decode(body).unwrap_or_default();
    let message = parsed.message.clone().or(parsed.msg.clone());
    let mut codes: Vec<String> = parsed
        .errors
        .iter()
        .filter_map(|e| match e {
            ErrorItem::Object { code, .. } => code.clone(),
            ErrorItem::Text(_) => None,
        })
        .collect();
    codes.extend(parsed.code.clone());
    let says = |phrase: &str| {
        message
            .as_deref()
            .is_some_and(|m| m.to_lowercase().contains(&phrase.to_lowercase()))
    };
    let limited = matches!(status, 403 | 429);
    let cause = if limited && throttle.remaining == Some(0) && !says(SECONDARY_RATE_LIMIT) {
        ForgeCause::PrimaryRateLimit {
            reset: throttle.reset,
        }
    } else if limited && (throttle.retry_after.is_some() || says(SECONDARY_RATE_LIMIT)) {
        ForgeCause::SecondaryRateLimit
    } else if status == 429 {
        // A 429 is a rate limit by definition, whatever the headers say.
        ForgeCause::SecondaryRateLimit
    } else {
        match status {
            401 => ForgeCause::BadCredentials,
            403 if says(ACTIONS_MAY_NOT_CREATE_PRS) => ForgeCause::ActionsMayNotCreatePullRequests,
            403 => ForgeCause::Forbidden,
            404 => ForgeCause::NotFound,
            400 | 422 => ForgeCause::Invalid,
            500.. => ForgeCause::Server,
            _ => ForgeCause::Other,
        }
    };
    ForgeFailure {
        status: Some(status),
        cause,
        message,
        codes,
        retry_after: throttle.retry_after,
    }
}

/// A failed GitHub call made through [`crate::net::Http`], as a forge error naming the host,
/// with `hint` appended to the message (empty when there is none) and the next step that fits
/// the failure when the hint does not already give one.
pub(crate) fn net_error(e: &NetError, hint: &str) -> Error {
    let (endpoint, help) = endpoint_and_help(e);
    let error = Error::forge(endpoint, format!("{e}{hint}")).with_failure(failure_of(e));
    if hint.is_empty() {
        error.with_help(help)
    } else {
        error
    }
}

/// The host a failed call went to, and the next step that fits how it failed.
fn endpoint_and_help(e: &NetError) -> (String, &'static str) {
    match e {
        NetError::Setup(_) => (String::new(), SETUP_HELP),
        NetError::Transport { host, .. }
        | NetError::Body { host, .. }
        | NetError::NoTime { host, .. } => (host.clone(), RETRY_HELP),
        NetError::TooLarge { host, .. } => (host.clone(), ODD_ANSWER_HELP),
        NetError::Status { host, .. } => (
            host.clone(),
            if failure_of(e).cause.is_transient() {
                BUSY_HELP
            } else {
                ODD_ANSWER_HELP
            },
        ),
        NetError::CutShort { last, .. } => endpoint_and_help(last),
    }
}

/// GitHub (or the artifact service) at `endpoint` answered, but not as its API documents:
/// without a field it documents, or with JSON of another shape; `status` when it had one.
pub(crate) fn odd_answer(endpoint: &str, status: Option<u16>, message: impl Into<String>) -> Error {
    Error::forge(endpoint, message)
        .with_help(ODD_ANSWER_HELP)
        .with_failure(ForgeFailure {
            status,
            ..ForgeFailure::of(ForgeCause::OddAnswer)
        })
}

/// Sends of one non-idempotent write, the first included.
const WRITE_SENDS: u32 = 3;

/// Whether a failed write may have taken effect: the service failed (a 5xx can come after the
/// effect) or its answer was lost.
pub(crate) fn effect_unknown(e: &Error) -> bool {
    matches!(
        e.forge_cause(),
        ForgeCause::Server | ForgeCause::Unreachable
    )
}

/// A write that is not idempotent (`send`), made at most [`WRITE_SENDS`] times: after a failure
/// that leaves its effect unknown (`ambiguous`, told whether an earlier send was lost), `lookup`
/// says whether the write took effect, and what it made is adopted (`adopted` words the progress
/// line) instead of being made twice; only when nothing is found is the write sent again. Rate
/// limits are waited out inside `send` (the service refused before acting).
pub(crate) fn write_checked<T>(
    send: impl Fn() -> crate::error::Result<T>,
    lookup: impl Fn() -> crate::error::Result<Option<T>>,
    ambiguous: impl Fn(&Error, bool) -> bool,
    adopted: impl Fn(&Error, &T) -> String,
) -> crate::error::Result<T> {
    let mut sends = 1;
    loop {
        let error = match send() {
            Ok(made) => return Ok(made),
            Err(e) if ambiguous(&e, sends > 1) => e,
            Err(e) => return Err(e),
        };
        if let Some(found) = lookup()? {
            let message = adopted(&error, &found);
            crate::events::emit(crate::events::Event::Job { message });
            return Ok(found);
        }
        if sends >= WRITE_SENDS {
            return Err(error);
        }
        std::thread::sleep(crate::net::wait::backoff(
            std::time::Duration::from_secs(1),
            sends,
        ));
        sends += 1;
    }
}

/// The hint added to a REST error status, by its class: what the usual cause is.
pub(super) fn hint(cause: ForgeCause) -> &'static str {
    match cause {
        ForgeCause::BadCredentials => {
            " — the token was refused; check the github_token input / GITHUB_TOKEN"
        }
        ForgeCause::Forbidden => {
            " — the token lacks a permission (the workflow needs contents, issues, pull-requests and actions: write)"
        }
        ForgeCause::ActionsMayNotCreatePullRequests => {
            " — the repository does not let GitHub Actions open pull requests"
        }
        ForgeCause::SecondaryRateLimit => " — GitHub's secondary rate limit",
        ForgeCause::PrimaryRateLimit { .. } => " — the token's hourly rate limit is used up",
        ForgeCause::NotFound => " — not found; check the number and GITHUB_REPOSITORY",
        ForgeCause::Invalid => " — GitHub rejected the request as invalid",
        _ => "",
    }
}

/// The next step after an error status of this class; `None` when the hint says it.
pub(super) fn help(cause: ForgeCause) -> Option<&'static str> {
    match cause {
        ForgeCause::BadCredentials
        | ForgeCause::Forbidden
        | ForgeCause::ActionsMayNotCreatePullRequests
        | ForgeCause::NotFound => None,
        c if c.is_transient() => Some(BUSY_HELP),
        _ => Some(ODD_ANSWER_HELP),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn throttle(retry_after: Option<u64>, remaining: Option<u64>) -> Throttle {
        Throttle {
            retry_after: retry_after.map(Duration::from_secs),
            remaining,
            reset: remaining.map(|_| 1_900_000_000),
        }
    }

    #[test]
    fn a_403_is_a_refusal_only_without_a_rate_limit_signal() {
        let body =
            br#"{"message": "Resource not accessible by integration", "documentation_url": "d"}"#;
        let refused = classify(403, body, &throttle(None, Some(4999)));
        assert_eq!(refused.cause, ForgeCause::Forbidden);
        assert_eq!(refused.status, Some(403));
        assert_eq!(
            refused.message.as_deref(),
            Some("Resource not accessible by integration")
        );
        let secondary = br#"{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}"#;
        assert_eq!(
            classify(403, secondary, &throttle(None, Some(4000))).cause,
            ForgeCause::SecondaryRateLimit,
            "the documented message alone"
        );
        let waited = classify(403, body, &throttle(Some(1), None));
        assert_eq!(
            waited.cause,
            ForgeCause::SecondaryRateLimit,
            "retry-after alone"
        );
        assert_eq!(waited.retry_after, Some(Duration::from_secs(1)));
        assert_eq!(
            classify(429, b"", &Throttle::default()).cause,
            ForgeCause::SecondaryRateLimit
        );
        assert_eq!(
            classify(
                403,
                b"{\"message\": \"API rate limit exceeded\"}",
                &throttle(None, Some(0))
            )
            .cause,
            ForgeCause::PrimaryRateLimit {
                reset: Some(1_900_000_000)
            }
        );
        let prs = br#"{"message": "GitHub Actions is not permitted to create or approve pull requests."}"#;
        assert_eq!(
            classify(403, prs, &Throttle::default()).cause,
            ForgeCause::ActionsMayNotCreatePullRequests
        );
    }

    #[test]
    fn codes_come_from_rest_and_twirp_errors() {
        let rest = br#"{"message": "Validation Failed", "errors": [{"code": "already_exists"}]}"#;
        let f = classify(422, rest, &Throttle::default());
        assert_eq!(f.cause, ForgeCause::Invalid);
        assert!(f.has_code("already_exists"));
        let twirp = classify(
            404,
            br#"{"code": "not_found", "msg": "no upload"}"#,
            &Throttle::default(),
        );
        assert_eq!(twirp.cause, ForgeCause::NotFound);
        assert_eq!(twirp.message.as_deref(), Some("no upload"));
        assert!(twirp.has_code("not_found"));
        assert_eq!(
            classify(502, b"<html>bad gateway</html>", &Throttle::default()).cause,
            ForgeCause::Server
        );
    }
}
