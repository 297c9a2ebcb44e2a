//! What started this job: the Actions event, read from `GITHUB_EVENT_NAME` and the payload at
//! `GITHUB_EVENT_PATH`.
//!
//! Three events drive a run (`docs/action-mode.md`): the trigger label added to an issue, a
//! `/spec-orchestrate <command>` comment, and the `workflow_dispatch` the chain sends itself.
//! Everything else is ignored with a reason. Issue text in the payload is untrusted data: it is
//! stored and handed to agents inside delimited blocks, never interpreted here beyond the
//! command word.

use serde::Deserialize;

use crate::state::IssueRef;

use super::comments::issue_ref;
use super::models::{self, decode_value};

/// A person or bot who caused the event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// Login.
    pub login: String,
    /// `type: Bot` in the payload (or a `[bot]` login).
    pub is_bot: bool,
}

impl From<models::User> for Actor {
    fn from(u: models::User) -> Actor {
        let is_bot = u.kind.as_deref() == Some("Bot") || u.login.ends_with("[bot]");
        Actor {
            login: u.login,
            is_bot,
        }
    }
}

/// The `action` of an `issues` or `issue_comment` payload, read first: only `labeled` and
/// `created` are read further, so another action's payload is ignored whatever its shape.
#[derive(Deserialize)]
struct Action {
    action: String,
}

/// The `issues` event payload (`labeled`).
#[derive(Deserialize)]
struct IssuesEvent {
    label: models::Label,
    issue: models::Issue,
    sender: models::User,
    #[serde(default)]
    repository: Option<Repository>,
}

/// The repository of an event payload.
#[derive(Deserialize)]
struct Repository {
    #[serde(default)]
    default_branch: Option<String>,
}

/// The `issue_comment` event payload (`created`).
#[derive(Deserialize)]
struct CommentEvent {
    issue: models::Issue,
    comment: EventComment,
    #[serde(default)]
    sender: Option<models::User>,
}

/// The comment of an `issue_comment` payload; its user is nullable (a deleted account).
#[derive(Deserialize)]
struct EventComment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    user: Option<models::User>,
}

/// The `workflow_dispatch` event payload: inputs arrive as strings (and absent when unset).
#[derive(Deserialize)]
struct DispatchEvent {
    #[serde(default)]
    inputs: DispatchInputs,
    #[serde(default)]
    sender: Option<models::User>,
}

#[derive(Deserialize, Default)]
struct DispatchInputs {
    #[serde(default)]
    issue: Option<String>,
    #[serde(default)]
    parent_run: Option<String>,
}

/// The answers a person can give in an issue comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Approve the spec (manual mode), or accept it at an arbitration.
    Approve,
    /// Go on: re-run the stalled phase, or resume a stopped chain.
    Continue,
    /// Swap the stalled role to the opposite agent.
    Swap,
    /// Stop the loop and land a draft pull request.
    Draft,
    /// Stop the chain (no more runs until `continue`).
    Stop,
}

impl Command {
    /// Every command word, for help texts.
    pub const ALL: [Command; 5] = [
        Command::Approve,
        Command::Continue,
        Command::Swap,
        Command::Draft,
        Command::Stop,
    ];

    /// The word as typed.
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Approve => "approve",
            Command::Continue => "continue",
            Command::Swap => "swap",
            Command::Draft => "draft",
            Command::Stop => "stop",
        }
    }
}

/// The comment prefix of every command.
pub const COMMAND_PREFIX: &str = "/spec-orchestrate";

/// Reads a command from a comment body: its first non-empty line must be
/// `/spec-orchestrate <word>`. `None` when the comment is not addressed to us; `Some(Err(word))`
/// when it is but the word is unknown.
pub fn parse_command(body: &str) -> Option<Result<Command, String>> {
    let line = body.lines().map(str::trim).find(|l| !l.is_empty())?;
    let rest = line.strip_prefix(COMMAND_PREFIX)?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None; // `/spec-orchestrateX`
    }
    let word = rest
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_lowercase();
    Some(
        Command::ALL
            .into_iter()
            .find(|c| c.as_str() == word)
            .ok_or(word),
    )
}

/// What this job was started for.
#[derive(Debug, Clone, PartialEq)]
pub enum Trigger {
    /// The trigger label was added to an issue.
    Labeled {
        /// The issue as the payload has it.
        issue: IssueRef,
        /// Who added the label.
        actor: Actor,
        /// The repository's default branch (the pull request's base).
        default_branch: Option<String>,
    },
    /// A `/spec-orchestrate` comment on an issue, or the approve label (which is `approve`).
    Command {
        /// Issue number.
        issue: u64,
        /// The command, or the unknown word.
        command: Result<Command, String>,
        /// Who wrote the comment or added the label.
        actor: Actor,
        /// The comment's id (0 for a label).
        comment_id: u64,
    },
    /// The chain's own dispatch (or a person's, from the Actions tab).
    Dispatch {
        /// Issue number.
        issue: u64,
        /// The run whose checkpoint to continue; none for a fresh start.
        parent_run: Option<u64>,
        /// Who dispatched.
        actor: Option<Actor>,
    },
    /// Nothing for us; the reason is printed.
    Ignored(String),
}

impl Trigger {
    /// The issue number, if the event concerns one.
    pub fn issue_number(&self) -> Option<u64> {
        match self {
            Trigger::Labeled { issue, .. } => issue.number,
            Trigger::Command { issue, .. } | Trigger::Dispatch { issue, .. } => Some(*issue),
            Trigger::Ignored(_) => None,
        }
    }
}

/// Interprets the event `name` with `payload`; `trigger_label` starts a run, `approve_label`
/// (manual mode) approves the spec like `/spec-orchestrate approve`. Malformed payloads of the
/// events we handle are errors (they mean a broken runner or a hand-made dispatch), not silently
/// ignored.
pub fn read(
    name: &str,
    payload: &serde_json::Value,
    trigger_label: &str,
    approve_label: &str,
) -> Result<Trigger, String> {
    match name {
        "issues" => read_issues(payload, trigger_label, approve_label),
        "issue_comment" => read_comment(payload),
        "workflow_dispatch" => read_dispatch(payload),
        other => Ok(Trigger::Ignored(format!(
            "event `{other}` does not drive spec-orchestrate (issues.labeled, issue_comment, workflow_dispatch do)"
        ))),
    }
}

/// The payload's `action`.
fn action_of(payload: &serde_json::Value, event: &str) -> Result<String, String> {
    decode_value::<Action>(payload)
        .map(|a| a.action)
        .map_err(|e| format!("the {event} payload is not GitHub's: {e}"))
}

fn read_issues(
    payload: &serde_json::Value,
    trigger_label: &str,
    approve_label: &str,
) -> Result<Trigger, String> {
    let action = action_of(payload, "issues event")?;
    if action != "labeled" {
        return Ok(Trigger::Ignored(format!(
            "issues event `{action}`: only `labeled` starts a run"
        )));
    }
    let event: IssuesEvent = decode_value(payload)
        .map_err(|e| format!("the issues event payload is not GitHub's: {e}"))?;
    let label = event.label.name().to_string();
    if label != trigger_label && label != approve_label {
        return Ok(Trigger::Ignored(format!(
            "label `{label}` is neither the trigger label `{trigger_label}` nor the approve label `{approve_label}`"
        )));
    }
    let actor = Actor::from(event.sender);
    if label == approve_label {
        return Ok(Trigger::Command {
            issue: event.issue.number,
            command: Ok(Command::Approve),
            actor,
            comment_id: 0,
        });
    }
    if event.issue.title.trim().is_empty() {
        return Err("the issues event payload has an empty issue.title".into());
    }
    Ok(Trigger::Labeled {
        issue: issue_ref(event.issue),
        actor,
        default_branch: event.repository.and_then(|r| r.default_branch),
    })
}

fn read_comment(payload: &serde_json::Value) -> Result<Trigger, String> {
    let action = action_of(payload, "issue_comment")?;
    if action != "created" {
        return Ok(Trigger::Ignored(format!(
            "issue_comment `{action}`: only new comments are read"
        )));
    }
    let event: CommentEvent = decode_value(payload)
        .map_err(|e| format!("the issue_comment payload is not GitHub's: {e}"))?;
    if event.issue.pull_request.is_some() {
        return Ok(Trigger::Ignored(
            "a comment on a pull request: commands go on the issue".into(),
        ));
    }
    let Some(command) = parse_command(event.comment.body.as_deref().unwrap_or_default()) else {
        return Ok(Trigger::Ignored(
            "the comment is not a /spec-orchestrate command".into(),
        ));
    };
    let actor = event
        .comment
        .user
        .or(event.sender)
        .map(Actor::from)
        .ok_or("the issue_comment payload has neither comment.user nor sender")?;
    Ok(Trigger::Command {
        issue: event.issue.number,
        command,
        actor,
        comment_id: event.comment.id,
    })
}

fn read_dispatch(payload: &serde_json::Value) -> Result<Trigger, String> {
    let event: DispatchEvent = decode_value(payload)
        .map_err(|e| format!("the workflow_dispatch payload is not GitHub's: {e}"))?;
    let issue_text = event.inputs.issue.as_deref().unwrap_or_default().trim();
    let issue = issue_text
        .trim_start_matches('#')
        .parse::<u64>()
        .map_err(|_| {
            format!("workflow_dispatch input `issue` must be an issue number, got `{issue_text}`")
        })?;
    let parent_text = event
        .inputs
        .parent_run
        .as_deref()
        .unwrap_or_default()
        .trim();
    let parent_run = if parent_text.is_empty() {
        None
    } else {
        Some(parent_text.parse::<u64>().map_err(|_| {
            format!("workflow_dispatch input `parent_run` must be a run id, got `{parent_text}`")
        })?)
    };
    Ok(Trigger::Dispatch {
        issue,
        parent_run,
        actor: event.sender.map(Actor::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_the_first_line_only() {
        assert_eq!(
            parse_command("/spec-orchestrate approve"),
            Some(Ok(Command::Approve))
        );
        assert_eq!(
            parse_command("\n  /spec-orchestrate   SWAP please\nmore"),
            Some(Ok(Command::Swap))
        );
        assert_eq!(
            parse_command("/spec-orchestrate merge"),
            Some(Err("merge".into()))
        );
        assert_eq!(parse_command("/spec-orchestrate"), Some(Err(String::new())));
        assert_eq!(parse_command("LGTM\n/spec-orchestrate approve"), None);
        assert_eq!(parse_command("/spec-orchestrated approve"), None);
    }

    #[test]
    fn the_trigger_label_starts_and_the_approve_label_approves() {
        let payload = |label: &str| {
            serde_json::json!({
                "action": "labeled",
                "label": {"name": label},
                "issue": {"number": 5, "title": "T", "body": "B", "labels": []},
                "sender": {"login": "octocat", "type": "User"},
                "repository": {"default_branch": "main"}
            })
        };
        let start = read("issues", &payload("go"), "go", "ok").unwrap();
        assert!(matches!(start, Trigger::Labeled { ref issue, .. } if issue.title == "T"));
        let approve = read("issues", &payload("ok"), "go", "ok").unwrap();
        assert!(matches!(
            approve,
            Trigger::Command {
                issue: 5,
                command: Ok(Command::Approve),
                ..
            }
        ));
        assert!(matches!(
            read("issues", &payload("bug"), "go", "ok").unwrap(),
            Trigger::Ignored(_)
        ));
    }

    #[test]
    fn dispatch_inputs_are_validated() {
        let ok = read(
            "workflow_dispatch",
            &serde_json::json!({"inputs": {"issue": "42", "parent_run": "1001"}}),
            "x",
            "y",
        )
        .unwrap();
        assert_eq!(
            ok,
            Trigger::Dispatch {
                issue: 42,
                parent_run: Some(1001),
                actor: None
            }
        );
        let first = read(
            "workflow_dispatch",
            &serde_json::json!({"inputs": {"issue": "#7", "parent_run": ""}}),
            "x",
            "y",
        )
        .unwrap();
        assert_eq!(first.issue_number(), Some(7));
        let e = read(
            "workflow_dispatch",
            &serde_json::json!({"inputs": {"issue": "abc"}}),
            "x",
            "y",
        )
        .unwrap_err();
        assert!(e.contains("`issue`"), "{e}");
        assert!(matches!(
            read("push", &serde_json::json!({}), "x", "y").unwrap(),
            Trigger::Ignored(_)
        ));
    }
}
