//! The decisions of a review round in action mode, pure like the rest of the planner: whether
//! a review trigger may start anything (the guards), whether the run can take a round now, and
//! which threads and review bodies the round takes (docs/action-mode.md, "After the pull
//! request").
//!
//! A review trigger never runs the round in its own job: its workflow run cannot join the
//! issue's concurrency group (GitHub's expressions cannot read the issue number out of the head
//! branch), so it only checks the guards and dispatches the round's first job with inputs
//! `issue` and `review`, which joins the issue's group and waits behind any job of that chain.

use std::collections::BTreeSet;

use crate::forge::github::event::{self, PullHead};
use crate::forge::github::reviews::{Review, ReviewState, ReviewThread};
use crate::review::feedback::Comment;
use crate::state::State;
use crate::types::Phase;
use crate::types::ids::{IssueNumber, PrNumber};

/// The issue whose run a review of pull request `pr` with head `head` asks a round of, or why it
/// starts nothing: the head branch must be a work branch of this pipeline
/// (`<branch_prefix><issue>-<feature>`) in the base repository, never a fork's.
pub fn issue_of(pr: PrNumber, head: &PullHead, prefix: &str) -> Result<IssueNumber, String> {
    let Some(issue) = event::issue_of_branch(&head.branch, prefix) else {
        return Err(format!(
            "pull request #{pr} is not a spec-orchestrate pull request: its head branch is not `{prefix}<issue>-<feature>`"
        ));
    };
    if !head.same_repo {
        return Err(format!(
            "pull request #{pr} comes from a fork: review rounds run only on a work branch of this repository"
        ));
    }
    Ok(issue)
}

/// Why the run cannot take a round for pull request `pr` now, if it cannot: the run must have
/// opened that pull request, be done, and have no round in flight (the next round takes what
/// arrives meanwhile).
pub fn not_now(state: &State, pr: PrNumber) -> Option<String> {
    let issue = state.issue.number.unwrap_or_default();
    if state.pr.as_ref().and_then(|p| p.number) != Some(pr) {
        return Some(format!(
            "the run of issue #{issue} did not open pull request #{pr}; nothing to revise"
        ));
    }
    if let Some(r) = state.rounds.review_running() {
        return Some(format!(
            "review round {} of pull request #{pr} is still in flight; what was posted since is taken when it ends",
            r.round
        ));
    }
    if state.phase() != Phase::Done {
        return Some(format!(
            "the run of issue #{issue} is at {}; a review round starts once it is done",
            state.phase()
        ));
    }
    None
}

/// Whether a review asks for a round: "Request changes", or "Comment" with
/// `/spec-orchestrate fix` on a line of its body.
pub fn asks_round(r: &Review) -> bool {
    match r.state {
        ReviewState::ChangesRequested => true,
        ReviewState::Commented => r.body.lines().any(event::asks_fix),
        _ => false,
    }
}

/// What one round takes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Intake {
    /// The comments, threads first, then review bodies.
    pub comments: Vec<Comment>,
    /// The newest review id taken (or seen), to record.
    pub newest_review: u64,
}

/// What the round takes from the pull request: every unresolved thread opened by someone who
/// may write, unless the last word in it is ours and we did not resolve it before (a reply
/// waiting for the person; a thread we resolved and someone reopened is taken again), and the
/// bodies of the reviews newer than `taken` that ask for a round, by people who may write
/// (`writers`), without their `/spec-orchestrate` lines. `me` is the token's identity,
/// `resolved_by_us` the threads an earlier round resolved.
pub fn intake(
    threads: &[ReviewThread],
    reviews: &[Review],
    me: Option<&str>,
    taken: u64,
    writers: &BTreeSet<String>,
    resolved_by_us: &BTreeSet<String>,
) -> Intake {
    let mut comments = Vec::new();
    for t in threads.iter().filter(|t| !t.resolved) {
        let Some(first) = t.comments.first() else {
            continue;
        };
        if !writers.contains(&first.author) {
            continue;
        }
        let last_is_ours = t
            .comments
            .last()
            .is_some_and(|c| Some(c.author.as_str()) == me);
        if last_is_ours && !resolved_by_us.contains(&t.node_id) {
            continue;
        }
        let mut body = first.body.clone();
        for c in t.comments.iter().skip(1) {
            if Some(c.author.as_str()) != me {
                body.push_str(&format!("\n\n@{} replied: {}", c.author, c.body));
            }
        }
        comments.push(Comment {
            source: first.author.clone(),
            path: Some(t.path.clone()),
            line: t.line,
            side: Some(t.side.as_str().to_string()),
            body,
            thread: Some(t.node_id.clone()),
            comment_id: first.id,
        });
    }
    let mut newest_review = taken;
    for r in reviews.iter().filter(|r| r.id > taken) {
        newest_review = newest_review.max(r.id);
        if !asks_round(r) || !writers.contains(&r.author) {
            continue;
        }
        let body: Vec<&str> = r
            .body
            .lines()
            .filter(|l| event::parse_command(l).is_none())
            .collect();
        let body = body.join("\n").trim().to_string();
        if body.is_empty() {
            continue;
        }
        comments.push(Comment {
            source: r.author.clone(),
            path: None,
            line: None,
            side: None,
            body,
            thread: None,
            comment_id: None,
        });
    }
    Intake {
        comments,
        newest_review,
    }
}

/// The logins whose permission the intake needs: the openers of unresolved threads and the
/// authors of the reviews newer than `taken` that ask for a round.
pub fn authors(threads: &[ReviewThread], reviews: &[Review], taken: u64) -> BTreeSet<String> {
    threads
        .iter()
        .filter(|t| !t.resolved)
        .filter_map(|t| t.comments.first().map(|c| c.author.clone()))
        .chain(
            reviews
                .iter()
                .filter(|r| r.id > taken && asks_round(r))
                .map(|r| r.author.clone()),
        )
        .collect()
}

/// Whether a review newer than `taken` asks for a round: what the job that ends a round looks
/// for before it calls the run done, so a review submitted while the round ran is taken by the
/// next one.
pub fn pending(reviews: &[Review], taken: u64) -> bool {
    reviews.iter().any(|r| r.id > taken && asks_round(r))
}

#[cfg(test)]
mod tests;
