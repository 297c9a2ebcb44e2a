//! Commands are never lost: before its phase, every job reads the comments newer than
//! the last one the chain processed and applies the `/spec-orchestrate` commands among them, in
//! order, as if each had started its own job.
//!
//! GitHub may never start the job of a command comment — with the default concurrency queue a
//! newer run (the chain's own dispatch) cancels it while it waits — so a `stop` would otherwise
//! be lost and the chain would go on spending. The id of the newest comment processed travels in
//! the checkpoint (`comments-seen` in the state's record, `state::job`), so a job whose own trigger was a
//! command that an earlier job already applied does nothing twice.

use crate::forge::github::Comment;
use crate::forge::github::event::{Actor, Command, parse_command};
use crate::types::ids::CommentId;

/// A command found in a comment the chain has not processed yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The comment's id.
    pub id: CommentId,
    /// Who wrote it (checked for write access before it is applied).
    pub actor: Actor,
    /// The command.
    pub command: Command,
}

/// The commands among `comments` with an id above `seen` and below `before` (the job's own
/// command comment, applied by its own step), oldest first. Unknown words are left to their own
/// job's reply; comments are ordered by id, which GitHub hands out increasing.
pub fn pending(comments: &[Comment], seen: CommentId, before: Option<CommentId>) -> Vec<Pending> {
    let mut out: Vec<Pending> = comments
        .iter()
        .filter(|c| c.id > seen && before.is_none_or(|b| c.id < b))
        .filter_map(|c| {
            let Some(Ok(command)) = parse_command(&c.body) else {
                return None;
            };
            Some(Pending {
                id: c.id,
                actor: Actor {
                    login: c.author.clone(),
                    is_bot: c.author.ends_with("[bot]"),
                },
                command,
            })
        })
        .collect();
    out.sort_by_key(|p| p.id);
    out
}

/// The newest comment id among `comments` (0 when there is none): where a fresh run starts
/// reading, so that commands from before it never steer it.
pub fn newest(comments: &[Comment]) -> CommentId {
    comments.iter().map(|c| c.id).max().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment(id: u64, author: &str, body: &str) -> Comment {
        Comment {
            id: id.into(),
            body: body.into(),
            author: author.into(),
            html_url: String::new(),
        }
    }

    #[test]
    fn only_commands_newer_than_the_last_seen_and_older_than_the_trigger_are_pending() {
        let comments = [
            comment(10, "a", "/spec-orchestrate stop"),
            comment(12, "b", "/spec-orchestrate continue"),
            comment(11, "c", "nice"),
            comment(13, "d", "/spec-orchestrate aprove"),
            comment(14, "github-actions[bot]", "/spec-orchestrate draft"),
            comment(15, "e", "/spec-orchestrate stop"),
        ];
        let got = pending(&comments, 10.into(), Some(15.into()));
        let ids: Vec<(u64, Command, bool)> = got
            .iter()
            .map(|p| (p.id.get(), p.command, p.actor.is_bot))
            .collect();
        assert_eq!(
            ids,
            [(12, Command::Continue, false), (14, Command::Draft, true)]
        );
        assert_eq!(pending(&comments, 0.into(), None).len(), 4);
        assert_eq!(newest(&comments), 15);
        assert_eq!(newest(&[]), 0);
    }
}
