//! The review rounds after the pull request, as the state records them (`rounds.pr_review`):
//! what each round was given (a person's comments as findings), what it did about each one,
//! how it ended and what it posted on the pull request. Taking a round is the machine's
//! (`machine::answer::take_round`); the phases read the round in flight from here, like any
//! other input. Older builds kept this record in `review-rounds.json` beside the state; the
//! loader reads that file once, when it migrates a schema 1 document (`store`).

use serde::{Deserialize, Serialize};

use crate::types::Finding;

/// Where a comment sends the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Code (or any file that is not a spec document): the round's fix task.
    Code,
    /// One of the four spec documents: spec_generate, inspect and the adversarial spec review.
    Spec,
}

/// A comment as a finding of the round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Item {
    /// The finding (id `R<round>.C<n>`, fingerprint and class key set).
    pub finding: Finding,
    /// The reviewer's login.
    pub source: String,
    pub target: Target,
    /// The review thread, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// The thread's first comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment_id: Option<u64>,
}

impl Item {
    /// Where the comment is, for people: the file and its line, or the whole change.
    pub fn place(&self) -> String {
        match (self.finding.file.as_str(), self.finding.section.as_str()) {
            ("", _) => "the whole change".into(),
            (f, "") => f.into(),
            (f, s) => format!("{f} {s}"),
        }
    }
}

/// What the round did about one comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    /// Fixed in `commit`, reviewed, and every acceptance case passed again.
    Fixed {
        /// The fix's commit.
        commit: String,
        /// What was done, in the implementer's words.
        summary: String,
    },
    /// The agent disputes the comment; nothing was changed for it.
    Disputed {
        /// The agent's argument.
        reason: String,
    },
    /// Fixed, but the fix did not hold (review or evaluate), or the round stopped.
    Open {
        /// Why the thread stays open.
        reason: String,
    },
}

impl Answer {
    /// Whether the thread may be resolved: only a fix that was committed, reviewed and passed.
    pub fn resolves(&self) -> bool {
        matches!(self, Answer::Fixed { .. })
    }
}

/// Where a review round stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundStatus {
    /// Taken and not finished: the only round a pull request may have in flight.
    Running,
    /// Answered: every comment has its answer.
    Finished,
    /// Stopped by a stall after arbitration: its comments stay open, listed.
    Stopped,
}

/// One review round of the pull request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct PrReviewRound {
    /// 1, 2, …
    pub round: u32,
    /// Where the comments came from (`feedback file <name>`, `pull request #7`).
    pub from: String,
    pub status: RoundStatus,
    pub items: Vec<Item>,
    /// The fix task of the code comments (`REV<round>`), when there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The stall signal seen when the round was taken (the arbitration it led to is `swapped`
    /// or the stop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<crate::types::Signal>,
    /// The fix task went to the opposite agent (arbitration after a stall).
    #[serde(default)]
    pub swapped: bool,
    /// The implementer's answer of the fix task (untrusted; its `DISPUTE <id>: …` lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementer_answer: Option<String>,
    /// One answer per item, by finding id, once finished.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<(String, Answer)>,
    /// How the round ended, for people.
    #[serde(default)]
    pub ending: String,
    /// For a round with spec comments: each task of `tasks.md` when the round was taken, by id,
    /// as the hash of its text and its requirements' text, so that after the spec revision the
    /// tasks that changed (and only those) are implemented again.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub spec_baseline: std::collections::BTreeMap<String, String>,
    /// The tasks implemented again after the spec revision (set once, when implement starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reimplemented: Option<Vec<String>>,
    /// The commit the tasks implemented again start from: their earlier commits are before it,
    /// so only a commit after it is adopted as theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reimplement_base: Option<String>,
    /// What was posted for it on the pull request (Action mode), so a re-run adds nothing.
    #[serde(default, skip_serializing_if = "Posted::is_empty")]
    pub posted: Posted,
}

/// What a round posted on the pull request: one reply per thread, the threads it resolved and
/// its summary comment. A re-run reads it to post only what is missing; a re-run from an
/// earlier checkpoint (which does not hold it) finds the replies and the summary by their
/// hidden markers instead.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Posted {
    /// The replies, one per thread.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replies: Vec<PostedReply>,
    /// GraphQL ids of the threads resolved (only fixed comments' threads).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolved: Vec<String>,
    /// The id of the round's summary comment on the pull request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<u64>,
    /// Every reply, resolution and the summary are posted: nothing is left to do.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub done: bool,
}

impl Posted {
    /// Nothing posted yet (a local round, or one not answered on GitHub).
    pub fn is_empty(&self) -> bool {
        self == &Posted::default()
    }

    /// The reply recorded for the thread opened by comment `root`.
    pub fn reply_to(&self, root: u64) -> Option<&PostedReply> {
        self.replies.iter().find(|r| r.thread_root == root)
    }
}

/// One reply a round posted in a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostedReply {
    /// The comment's finding id (`R<round>.C<n>`).
    pub item: String,
    /// The REST id of the thread's first comment (what was replied to).
    pub thread_root: u64,
    /// The reply's REST id; `None` when the thread was gone and nothing could be posted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<u64>,
}

impl PrReviewRound {
    /// The answer of item `id`.
    pub fn answer(&self, id: &str) -> Option<&Answer> {
        self.answers.iter().find(|(i, _)| i == id).map(|(_, a)| a)
    }

    /// Every answered comment with its answer, in the round's order: the rows of the summary
    /// and of the replies, wherever they are written (the PR, or `review-round-<n>.md`).
    pub fn answered(&self) -> Vec<(&Item, &Answer)> {
        self.items
            .iter()
            .filter_map(|i| self.answer(&i.finding.id).map(|a| (i, a)))
            .collect()
    }
}
