//! A review round's answers on the pull request: one reply per thread, the fixed threads
//! resolved, and one summary comment per round (docs/action-mode.md, "After the pull request").
//!
//! The round was answered by the `pr` phase (`phases::revise::settle`), which recorded each
//! comment's answer in the state (`rounds.pr_review`); the job posts them once that phase's pull
//! request is published. Every write is idempotent across re-runs, the way the status comment is:
//! - a reply is posted only when the round's record has none for the thread **and** the
//!   thread holds no comment of this token's identity starting with the round's hidden reply
//!   marker (a re-run from an earlier checkpoint has no record; a reply whose answer was lost is
//!   found by the forge's own lookup);
//! - a thread is resolved only when its comment was fixed (committed, reviewed, every case
//!   passed), and only if it is not resolved already; disputed and open threads stay open;
//! - the summary comment is found by its marker among this identity's comments and edited, or
//!   posted when there is none.
//!
//! What was posted is recorded in the round (`posted`), which the job's checkpoint keeps; a job
//! killed half-way leaves no checkpoint, and its re-run finds what it posted by the markers.

use super::say;
use crate::error::Result;
use crate::error::forge::ForgeCause;
use crate::forge::github::GithubForge;
use crate::forge::github::reviews::ReviewThread;
use crate::report::review_round;
use crate::secrets::Redactor;
use crate::state::State;
use crate::state::pr_review::{Answer, Item, PostedReply, PrReviewRound as Round, RoundStatus};
use crate::types::ids::{CommentId, PrNumber};

/// What answering did on the pull request, summed over the rounds answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answered {
    /// The rounds whose answers were completed now.
    pub rounds: Vec<u32>,
    /// Replies posted by this call.
    pub replied: usize,
    /// Replies found already there (an earlier attempt's), by their marker.
    pub adopted: usize,
    /// Threads resolved by this call.
    pub resolved: usize,
    /// Threads whose resolution GitHub refused (an installation token without `pull-requests:
    /// write` and `contents: write`).
    pub not_resolved: Vec<String>,
    /// The summary comments, by id.
    pub summaries: Vec<u64>,
}

/// Posts what the finished review rounds of `state` have not yet posted on pull request `pr`:
/// replies, resolutions, the summary, each recorded in its round. `None` when no round waits
/// for its answers (none was taken, or the one in flight has not reached `pr`). Every text
/// passes `redactor`.
pub fn answer_rounds(
    forge: &GithubForge,
    redactor: &Redactor,
    state: &mut State,
    pr: PrNumber,
) -> Result<Option<Answered>> {
    let rounds = &mut state.rounds.pr_review;
    let pending: Vec<usize> = rounds
        .iter()
        .enumerate()
        .filter(|(_, r)| r.status != RoundStatus::Running && !r.posted.done)
        .map(|(i, _)| i)
        .collect();
    if pending.is_empty() {
        return Ok(None);
    }
    let mut poster = Poster {
        forge,
        redactor,
        pr,
        threads: None,
        out: Answered::default(),
    };
    for i in pending {
        let n = rounds[i].round;
        let items: Vec<Item> = rounds[i].items.clone();
        let refused = poster.out.not_resolved.len();
        for item in &items {
            let Some(answer) = rounds[i].answer(&item.finding.id).cloned() else {
                continue;
            };
            if poster.threads.is_none() && needs_threads(&rounds[i], item, &answer) {
                poster.threads = Some(forge.review_threads(pr)?);
            }
            poster.reply(&mut rounds[i], item, &answer)?;
            poster.resolve(&mut rounds[i], item, &answer)?;
        }
        let out = &mut poster.out;
        let round = &rounds[i];
        let body = redactor.redact(&summary(round));
        let marker = review_round::summary_marker(n);
        let made = forge.upsert_comment(
            pr.as_issue(),
            &marker,
            &body,
            round.posted.summary.map(CommentId::from),
        )?;
        rounds[i].posted.summary = Some(made.id.get());
        // A refused resolution is tried again by the next job (the permission may be granted).
        rounds[i].posted.done = out.not_resolved.len() == refused;
        out.summaries.push(made.id.get());
        out.rounds.push(n);
    }
    let out = poster.out;
    say(format!(
        "review answers on #{pr}: round(s) {:?}, {} reply(ies) posted, {} found already, {} thread(s) resolved",
        out.rounds, out.replied, out.adopted, out.resolved
    ));
    Ok(Some(out))
}

/// Whether `item` still needs the threads read: a reply not recorded, or a resolution.
fn needs_threads(round: &Round, item: &Item, answer: &Answer) -> bool {
    let Some(root) = item.comment_id else {
        return false;
    };
    let unreplied = round.posted.reply_to(root).is_none();
    let unresolved = answer.resolves()
        && item
            .thread
            .as_ref()
            .is_some_and(|t| !round.posted.resolved.contains(t));
    unreplied || unresolved
}

/// Where answers go and what they leave: the forge, the redactor every text passes, the pull
/// request, its review threads once read, and the tally.
struct Poster<'a> {
    forge: &'a GithubForge,
    redactor: &'a Redactor,
    pr: PrNumber,
    /// Read once, when the first item needs them ([`needs_threads`]).
    threads: Option<Vec<ReviewThread>>,
    out: Answered,
}

impl Poster<'_> {
    /// The one reply of `item`'s thread in `round`: recorded, found by marker, or posted.
    fn reply(&mut self, round: &mut Round, item: &Item, answer: &Answer) -> Result<()> {
        let Some(root) = item.comment_id else {
            return Ok(());
        };
        if round.posted.reply_to(root).is_some() {
            return Ok(());
        }
        let (forge, pr) = (self.forge, self.pr);
        let marker = review_round::reply_marker(round.round);
        let thread = self
            .threads
            .as_deref()
            .unwrap_or_default()
            .iter()
            .find(|t| t.comments.first().and_then(|c| c.id) == Some(root));
        let mine = thread.and_then(|t| {
            t.comments.iter().skip(1).find(|c| {
                c.body.trim_start().starts_with(&marker)
                    && forge.identity().is_none_or(|me| c.author == me)
            })
        });
        let id = if let Some(found) = mine {
            self.out.adopted += 1;
            found.id
        } else {
            let task = round.task.clone().unwrap_or_else(|| "—".into());
            let text = self
                .redactor
                .redact(&review_round::reply_text(round.round, &task, answer));
            match forge.reply_to_review_comment(pr, root, &text) {
                Ok(made) => {
                    self.out.replied += 1;
                    Some(made.id)
                }
                // The comment that opened the thread was deleted: nothing to answer, and nothing
                // to try again.
                Err(e) if e.forge_cause() == ForgeCause::NotFound => {
                    say(format!(
                        "review comment {root} of #{pr} is gone; {} is answered in the summary only",
                        item.finding.id
                    ));
                    None
                }
                Err(e) => return Err(e),
            }
        };
        round.posted.replies.push(PostedReply {
            item: item.finding.id.clone(),
            thread_root: root,
            reply: id,
        });
        Ok(())
    }

    /// Resolves `item`'s thread when its comment was fixed, and only then.
    fn resolve(&mut self, round: &mut Round, item: &Item, answer: &Answer) -> Result<()> {
        let Some(node) = item.thread.as_ref() else {
            return Ok(());
        };
        if !answer.resolves() || round.posted.resolved.contains(node) {
            return Ok(());
        }
        let already = self
            .threads
            .as_deref()
            .unwrap_or_default()
            .iter()
            .any(|t| &t.node_id == node && t.resolved);
        if !already {
            match self.forge.resolve_thread(node) {
                Ok(()) => self.out.resolved += 1,
                Err(e) if e.forge_cause() == ForgeCause::Forbidden => {
                    say(format!(
                        "GitHub refused to resolve review thread {node} ({}): an installation token needs `pull-requests: write` and `contents: write` (the workflow's permissions); the thread stays open",
                        item.finding.id
                    ));
                    self.out.not_resolved.push(node.clone());
                    return Ok(());
                }
                Err(e) if e.forge_cause() == ForgeCause::NotFound => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        round.posted.resolved.push(node.clone());
        Ok(())
    }
}

/// The round's summary comment, from its record.
fn summary(round: &Round) -> String {
    let task = round.task.clone().unwrap_or_else(|| "—".into());
    let rows = round.answered();
    // A fixed comment whose thread is not recorded resolved was refused by GitHub (a thread
    // already resolved or gone is recorded as resolved).
    let refused: Vec<String> = rows
        .iter()
        .filter(|(i, a)| {
            a.resolves()
                && i.thread
                    .as_ref()
                    .is_some_and(|t| !round.posted.resolved.contains(t))
        })
        .map(|(i, _)| i.finding.id.clone())
        .collect();
    review_round::summary_comment_with(round.round, &task, &rows, &round.ending, &refused)
}
