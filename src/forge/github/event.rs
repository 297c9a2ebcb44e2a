//! What started this job: the Actions event, read from `GITHUB_EVENT_NAME` and the payload at
//! `GITHUB_EVENT_PATH`.
//!
//! Three events drive a run (`docs/action-mode.md`): the trigger label added to an issue, a
//! `/spec-orchestrate <command>` comment, and the `workflow_dispatch` the chain sends itself.
//! Two more ask for a review round on the pull request the run opened, explicitly only: a
//! review submitted with "Request changes" (or "Comment" with `/spec-orchestrate fix` in its
//! body), and a pull request comment `/spec-orchestrate fix`. Everything else is ignored with a
//! reason. Issue text in the payload is untrusted data: it is
//! stored and handed to agents inside delimited blocks, never interpreted here beyond the
//! command word.

use serde::Deserialize;

use crate::state::IssueRef;
use crate::types::ids::{CommentId, IssueNumber, PrNumber, RunId};

use super::comments::issue_ref;
use super::models::{self, decode_value};

/// A person or bot who caused the event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Actor {
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
    repository: Option<Repository>,
}

/// The repository of an event payload.
#[derive(Deserialize)]
struct Repository {
    default_branch: Option<String>,
}

/// The `issue_comment` event payload (`created`).
#[derive(Deserialize)]
struct CommentEvent {
    issue: models::Issue,
    comment: EventComment,
    sender: Option<models::User>,
}

/// The comment of an `issue_comment` payload; its user is nullable (a deleted account).
#[derive(Deserialize)]
struct EventComment {
    id: CommentId,
    body: Option<String>,
    user: Option<models::User>,
}

/// The `pull_request_review` event payload (`submitted`): the review, the pull request as the
/// webhook carries it, and who submitted it.
#[derive(Deserialize)]
struct ReviewEvent {
    review: EventReview,
    pull_request: EventPull,
    sender: Option<models::User>,
}

/// The review of a `pull_request_review` payload. Its `state` is lower case in the webhook
/// (`changes_requested`, `commented`, `approved`), unlike the REST answer.
#[derive(Deserialize)]
struct EventReview {
    id: u64,
    body: Option<String>,
    state: String,
    user: Option<models::User>,
}

/// The pull request of a `pull_request_review` payload, and of "Get a pull request": its two
/// ends, each with its repository (`head.repo` is null once a fork is deleted).
#[derive(Deserialize)]
pub(crate) struct EventPull {
    number: PrNumber,
    head: PullEnd,
    base: PullEnd,
}

#[derive(Deserialize)]
struct PullEnd {
    #[serde(rename = "ref")]
    name: String,
    repo: Option<EndRepo>,
}

#[derive(Deserialize)]
struct EndRepo {
    full_name: String,
}

impl EventPull {
    /// The head branch, and whether it lives in the base's repository (never a fork's).
    pub(crate) fn ends(&self) -> PullHead {
        let same_repo = match (&self.head.repo, &self.base.repo) {
            (Some(h), Some(b)) => h.full_name.eq_ignore_ascii_case(&b.full_name),
            _ => false,
        };
        PullHead {
            branch: self.head.name.clone(),
            same_repo,
            base: self.base.name.clone(),
        }
    }
}

impl super::GithubForge {
    /// The head of pull request `number` ("Get a pull request"): what a comment's payload does
    /// not carry and the review guards need.
    pub fn pull_head(&self, number: PrNumber) -> crate::error::Result<PullHead> {
        let pull: EventPull = self.get(
            &format!("/pulls/{number}"),
            &format!("reading pull request #{number}"),
        )?;
        Ok(pull.ends())
    }
}

/// The head of a pull request, as far as the review guards care.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct PullHead {
    pub branch: String,
    /// The head branch is in the base repository (a fork's is not).
    pub same_repo: bool,
    /// The base branch: where the round's job is dispatched (a review's own run is on the pull
    /// request's merge ref, which `workflow_dispatch` does not take).
    pub base: String,
}

/// The `workflow_dispatch` event payload: inputs arrive as strings (and absent when unset).
#[derive(Deserialize)]
struct DispatchEvent {
    #[serde(default)]
    inputs: DispatchInputs,
    sender: Option<models::User>,
}

#[derive(Deserialize, Default)]
struct DispatchInputs {
    issue: Option<String>,
    parent_run: Option<String>,
    /// The pull request whose review round this dispatch starts (sent by the job a review
    /// started; absent in every other dispatch).
    review: Option<String>,
}

/// The answers a person can give in an issue comment.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "lowercase")]
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
    pub const ALL: &[Command] = <Command as strum::VariantArray>::VARIANTS;

    /// The word as typed.
    pub fn as_str(self) -> &'static str {
        self.into()
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
    Some(word.parse().map_err(|_| word))
}

/// What this job was started for.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
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
        issue: IssueNumber,
        /// The command, or the unknown word.
        command: Result<Command, String>,
        /// Who wrote the comment or added the label.
        actor: Actor,
        /// The comment's id (0 for a label).
        comment_id: CommentId,
    },
    /// The chain's own dispatch (or a person's, from the Actions tab).
    Dispatch {
        issue: IssueNumber,
        /// The run whose checkpoint to continue; none for a fresh start.
        parent_run: Option<RunId>,
        /// Who dispatched.
        actor: Option<Actor>,
        /// The pull request whose review round to take (input `review`).
        review: Option<PrNumber>,
    },
    /// A person asks for a review round on a pull request: a review submitted with "Request
    /// changes" (or "Comment" with `/spec-orchestrate fix`), or the comment
    /// `/spec-orchestrate fix` on the pull request.
    Review {
        pr: PrNumber,
        /// Its head, when the payload carries it (a comment's does not: it is read from GitHub).
        head: Option<PullHead>,
        /// Who reviewed or commented.
        actor: Actor,
        /// The review's id (0 for a comment).
        review_id: u64,
    },
    /// Nothing for us; the reason is printed.
    Ignored(String),
}

impl Trigger {
    /// The issue number, if the event concerns one.
    pub fn issue_number(&self) -> Option<IssueNumber> {
        match self {
            Trigger::Labeled { issue, .. } => issue.number,
            Trigger::Command { issue, .. } | Trigger::Dispatch { issue, .. } => Some(*issue),
            Trigger::Review { .. } | Trigger::Ignored(_) => None,
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
        "pull_request_review" => read_review(payload),
        "workflow_dispatch" => read_dispatch(payload),
        other => Ok(Trigger::Ignored(format!(
            "event `{other}` does not drive spec-orchestrate (issues.labeled, issue_comment, pull_request_review, workflow_dispatch do)"
        ))),
    }
}

/// The payload of `event` as `T` when its `action`, read first, is `wanted` (another action's
/// payload is ignored whatever its shape); else `Err` of the trigger that ignores it, `ignored`
/// saying why. `names` are the event's in errors of the action and of the payload.
fn on_action<T: serde::de::DeserializeOwned>(
    payload: &serde_json::Value,
    names: [&str; 2],
    wanted: &str,
    ignored: impl FnOnce(&str) -> String,
) -> Result<Result<T, Trigger>, String> {
    let action = decode_event::<Action>(payload, names[0])?.action;
    if action != wanted {
        return Ok(Err(Trigger::Ignored(ignored(&action))));
    }
    decode_event(payload, names[1]).map(Ok)
}

/// The payload of `event` as GitHub documents it, or why it is not.
fn decode_event<T: serde::de::DeserializeOwned>(
    payload: &serde_json::Value,
    event: &str,
) -> Result<T, String> {
    decode_value(payload).map_err(|e| format!("the {event} payload is not GitHub's: {e}"))
}

fn read_issues(
    payload: &serde_json::Value,
    trigger_label: &str,
    approve_label: &str,
) -> Result<Trigger, String> {
    let on = |a: &str| format!("issues event `{a}`: only `labeled` starts a run");
    let event: IssuesEvent = match on_action(payload, ["issues event"; 2], "labeled", on)? {
        Ok(event) => event,
        Err(ignored) => return Ok(ignored),
    };
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
            comment_id: CommentId::default(),
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
    let on = |a: &str| format!("issue_comment `{a}`: only new comments are read");
    let event: CommentEvent = match on_action(payload, ["issue_comment"; 2], "created", on)? {
        Ok(event) => event,
        Err(ignored) => return Ok(ignored),
    };
    let body = event.comment.body.as_deref().unwrap_or_default();
    if event.issue.pull_request.is_some() {
        if !asks_fix(body) {
            return Ok(Trigger::Ignored(
                "a comment on a pull request that is not `/spec-orchestrate fix` (other commands go on the issue)".into(),
            ));
        }
        return Ok(Trigger::Review {
            // A comment on a pull request comes as an issue's: the same number.
            pr: PrNumber::from(event.issue.number.get()),
            head: None,
            actor: author(event.comment.user, event.sender, "issue_comment", "comment")?,
            review_id: 0,
        });
    }
    let Some(command) = parse_command(body) else {
        return Ok(Trigger::Ignored(
            "the comment is not a /spec-orchestrate command".into(),
        ));
    };
    let actor = author(event.comment.user, event.sender, "issue_comment", "comment")?;
    Ok(Trigger::Command {
        issue: event.issue.number,
        command,
        actor,
        comment_id: event.comment.id,
    })
}

/// Who wrote the `object` of an `event` payload: its `user`, else the payload's `sender`.
fn author(
    user: Option<models::User>,
    sender: Option<models::User>,
    event: &str,
    object: &str,
) -> Result<Actor, String> {
    user.or(sender)
        .map(Actor::from)
        .ok_or_else(|| format!("the {event} payload has neither {object}.user nor sender"))
}

/// The words that ask for a review round: the first non-empty line of a pull request comment,
/// or any line of a review's body.
pub const FIX: &str = "fix";

/// Whether a pull request comment asks for a review round: its first non-empty line is
/// `/spec-orchestrate fix` (a bare comment, or one that only mentions the command, does not).
pub fn asks_fix(body: &str) -> bool {
    matches!(parse_command(body), Some(Err(word)) if word == FIX)
}

/// Whether a review's body asks for a review round: one of its lines is `/spec-orchestrate fix`.
fn review_asks_fix(body: &str) -> bool {
    body.lines().any(asks_fix)
}

fn read_review(payload: &serde_json::Value) -> Result<Trigger, String> {
    let on =
        |a: &str| format!("pull_request_review `{a}`: only a submitted review asks for a round");
    let names = ["pull_request_review event", "pull_request_review"];
    let event: ReviewEvent = match on_action(payload, names, "submitted", on)? {
        Ok(event) => event,
        Err(ignored) => return Ok(ignored),
    };
    let body = event.review.body.as_deref().unwrap_or_default();
    let asks = match event.review.state.to_ascii_lowercase().as_str() {
        "changes_requested" => true,
        "commented" => review_asks_fix(body),
        _ => false,
    };
    if !asks {
        return Ok(Trigger::Ignored(format!(
            "a review `{}` without `/spec-orchestrate fix`: only \"Request changes\", or a comment that asks for the fix, starts a review round",
            event.review.state
        )));
    }
    let actor = author(
        event.review.user,
        event.sender,
        "pull_request_review",
        "review",
    )?;
    Ok(Trigger::Review {
        pr: event.pull_request.number,
        head: Some(event.pull_request.ends()),
        actor,
        review_id: event.review.id,
    })
}

/// The issue whose work branch `branch` is: `<prefix><n>-<feature>` (`github.branch_prefix`,
/// `spec-orchestrate/` by default), `None` for any other branch.
pub fn issue_of_branch(branch: &str, prefix: &str) -> Option<IssueNumber> {
    let rest = branch.strip_prefix(prefix)?;
    let (number, feature) = rest.split_once('-')?;
    if feature.is_empty() || number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    number.parse::<u64>().ok().map(IssueNumber::from)
}

fn read_dispatch(payload: &serde_json::Value) -> Result<Trigger, String> {
    let event: DispatchEvent = decode_event(payload, "workflow_dispatch")?;
    let text = |v: &Option<String>| v.as_deref().unwrap_or_default().trim().to_string();
    let bad = |name: &str, kind: &str, got: &str| {
        format!("workflow_dispatch input `{name}` must be {kind}, got `{got}`")
    };
    let issue_text = text(&event.inputs.issue);
    let issue = issue_text
        .trim_start_matches('#')
        .parse::<u64>()
        .map(IssueNumber::from)
        .map_err(|_| bad("issue", "an issue number", &issue_text))?;
    let optional = |value: &Option<String>, name: &str, kind: &str| {
        let t = text(value);
        if t.is_empty() {
            return Ok(None);
        }
        t.parse::<u64>().map(Some).map_err(|_| bad(name, kind, &t))
    };
    let parent_run = optional(&event.inputs.parent_run, "parent_run", "a run id")?.map(RunId::from);
    let review =
        optional(&event.inputs.review, "review", "a pull request number")?.map(PrNumber::from);
    Ok(Trigger::Dispatch {
        issue,
        parent_run,
        actor: event.sender.map(Actor::from),
        review,
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
                issue,
                command: Ok(Command::Approve),
                ..
            } if issue == 5
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
                issue: 42.into(),
                parent_run: Some(1001.into()),
                actor: None,
                review: None,
            }
        );
        let first = read(
            "workflow_dispatch",
            &serde_json::json!({"inputs": {"issue": "#7", "parent_run": ""}}),
            "x",
            "y",
        )
        .unwrap();
        assert_eq!(first.issue_number(), Some(7.into()));
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

    fn review_payload(state: &str, body: &str, head_repo: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "action": "submitted",
            "review": {"id": 80, "body": body, "state": state,
                       "user": {"login": "maria", "type": "User"},
                       "author_association": "COLLABORATOR"},
            "pull_request": {
                "number": 12,
                "head": {"ref": "spec-orchestrate/7-dark", "repo": head_repo},
                "base": {"ref": "main", "repo": {"full_name": "octocat/Hello-World"}}
            },
            "repository": {"full_name": "octocat/Hello-World"},
            "sender": {"login": "maria", "type": "User"}
        })
    }

    #[test]
    fn a_review_asks_for_a_round_only_by_request_changes_or_the_fix_command() {
        let ours = serde_json::json!({"full_name": "octocat/Hello-World"});
        let read = |state: &str, body: &str| {
            read(
                "pull_request_review",
                &review_payload(state, body, ours.clone()),
                "x",
                "y",
            )
            .unwrap()
        };
        let Trigger::Review {
            pr,
            head: Some(head),
            actor,
            review_id: 80,
        } = read("changes_requested", "")
        else {
            panic!("Request changes asks for a round");
        };
        assert_eq!(pr, 12);
        assert_eq!(head.branch, "spec-orchestrate/7-dark");
        assert!(head.same_repo);
        assert_eq!(actor.login, "maria");
        assert!(matches!(
            read("commented", "Looks odd.\n/spec-orchestrate fix"),
            Trigger::Review { .. }
        ));
        for (state, body) in [
            ("commented", "Looks odd."),
            ("commented", "please /spec-orchestrate fix"),
            ("approved", "/spec-orchestrate fix"),
        ] {
            assert!(
                matches!(read(state, body), Trigger::Ignored(_)),
                "{state}: {body}"
            );
        }
        let edited = serde_json::json!({"action": "edited"});
        assert!(matches!(
            super::read("pull_request_review", &edited, "x", "y").unwrap(),
            Trigger::Ignored(_)
        ));
        let fork = super::read(
            "pull_request_review",
            &review_payload(
                "changes_requested",
                "",
                serde_json::json!({"full_name": "mallory/Hello-World"}),
            ),
            "x",
            "y",
        )
        .unwrap();
        assert!(matches!(
            fork,
            Trigger::Review {
                head: Some(PullHead {
                    same_repo: false,
                    ..
                }),
                ..
            }
        ));
        let gone = super::read(
            "pull_request_review",
            &review_payload("changes_requested", "", serde_json::Value::Null),
            "x",
            "y",
        )
        .unwrap();
        assert!(matches!(
            gone,
            Trigger::Review {
                head: Some(PullHead {
                    same_repo: false,
                    ..
                }),
                ..
            }
        ));
    }

    #[test]
    fn a_pull_request_comment_asks_for_a_round_only_as_the_fix_command() {
        let payload = |body: &str| {
            serde_json::json!({
                "action": "created",
                "issue": {"number": 12, "title": "T", "labels": [],
                          "pull_request": {"url": "https://api.github.com/repos/o/r/pulls/12"}},
                "comment": {"id": 5, "body": body, "user": {"login": "maria", "type": "User"}},
                "sender": {"login": "maria", "type": "User"}
            })
        };
        assert!(matches!(
            read("issue_comment", &payload("/spec-orchestrate fix"), "x", "y").unwrap(),
            Trigger::Review {
                pr,
                head: None,
                review_id: 0,
                ..
            } if pr == 12
        ));
        for body in [
            "fix it please",
            "/spec-orchestrate approve",
            "LGTM\n/spec-orchestrate fix",
        ] {
            assert!(
                matches!(
                    read("issue_comment", &payload(body), "x", "y").unwrap(),
                    Trigger::Ignored(_)
                ),
                "{body}"
            );
        }
        assert_eq!(
            issue_of_branch("spec-orchestrate/7-dark", "spec-orchestrate/"),
            Some(7.into())
        );
        assert_eq!(
            issue_of_branch("spec-orchestrate/dark", "spec-orchestrate/"),
            None
        );
    }
}
