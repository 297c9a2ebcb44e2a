//! Read-only agent calls, one or several at once.
//!
//! Every critic (single reviewer, panel persona, debater, judge, classifier, contract reviewer,
//! task reviewer) and every other read-only call of a phase (the e2e_runner converting steps and
//! scoring the rubric) goes through [`run_batch`], so they all get the same treatment: a failed call
//! is retried once, output that cannot be parsed is asked for once more ("output only the JSON
//! envelope"), and a critic that edits what it was only meant to read is a `sandbox_violation`
//! whose edits are undone and whose batch is re-run once. The calls of a batch run concurrently
//! (one thread each, the agents being separate processes), which is what keeps a panel of six
//! as fast as one reviewer, and each of several calls works in a tree of its own ([`tree`]), so
//! no two agents are ever in the same checkout at once: one cannot see, nor trip over, what
//! another wrote. Its edits there are caught as its own (only that call is re-run), and the
//! checkout itself is still guarded around the batch.
//!
//! Nothing here touches `State`: a batch returns [`CallLog`]s and the caller records them, so
//! the stand-alone `review` and `debate` commands, which have no state, use the same code.

use std::path::{Path, PathBuf};

pub mod tree;

use crate::agents::text_roles::Output;
use crate::agents::{self, AgentRequest, CallUsage, Failure, TaskInfo};
use crate::config::Config;
use crate::error::Result;
use crate::git::{Git, Snapshot};
use crate::secrets::Redactor;
use crate::state::is_orchestrator_record;
use crate::types::ids::TaskId;
use crate::types::kinds::{BlockerCategory, CallRole};

/// One read-only call to make.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct ReviewCall {
    /// Role played (`spec_reviewer`, `panel:architect`, `debater`, …).
    pub role: CallRole,
    pub agent: String,
    /// `A` or `B` for debaters.
    pub label: Option<String>,
    pub round: Option<u32>,
    /// The task, for a task reviewer.
    pub task: Option<TaskInfo>,
    pub prompt: String,
}

impl ReviewCall {
    /// A call of `agent` playing `role` in `round`, with no debater's label and no task.
    pub fn new(role: impl Into<CallRole>, agent: &str, round: Option<u32>, prompt: String) -> Self {
        ReviewCall {
            role: role.into(),
            agent: agent.to_string(),
            label: None,
            round,
            task: None,
            prompt,
        }
    }
}

/// What one agent invocation cost and whether it failed; the caller records these (usage per
/// agent, failures with their category) because a silent failure is a bug.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct CallLog {
    pub role: CallRole,
    pub agent: String,
    /// Tokens and cost of the invocation (zero for an orchestrator-side check).
    pub usage: CallUsage,
    /// Whether this log stands for an invocation of the agent (false for a sandbox check, which
    /// costs no call).
    pub invoked: bool,
    /// Why it failed, when it did.
    pub failure: Option<Failure>,
    /// Backend session or response id, when there is one.
    pub session_id: Option<String>,
    /// 1 for the first try of a prompt, 2 for its retry after a failure.
    pub attempt: u32,
    /// The task the call worked on (implement), so that the record of two tasks' calls of one
    /// agent at once names each its own.
    pub task: Option<TaskId>,
    /// Requests of this call the model API proxy refused as not a model endpoint.
    pub refused: Vec<String>,
    /// What the file-command guard found around this call (already put back).
    pub file_commands: Vec<String>,
}

impl CallLog {
    /// The log of one invocation of `agent` playing `role`: its usage whether it succeeded or
    /// not (a failed call may still have been billed), and its failure.
    /// `task` is the id of the task the call worked on, if any.
    pub fn invocation(
        (role, agent, task): (CallRole, &str, Option<&TaskInfo>),
        attempt: u32,
        called: &agents::Called,
    ) -> CallLog {
        let (usage, failure, session_id) = match &called.result {
            Ok(reply) => (reply.usage, None, reply.session_id.clone()),
            Err(e) => (e.usage, Some(e.failure()), None),
        };
        CallLog {
            role,
            agent: agent.to_string(),
            usage,
            invoked: true,
            failure,
            session_id,
            attempt,
            task: task.map(|t| TaskId::from(t.id.as_str())),
            refused: called.refused.clone(),
            file_commands: called.file_commands.clone(),
        }
    }

    /// The log of a failure the orchestrator found itself (a sandbox violation, output unusable
    /// twice): no invocation, no cost.
    fn check(call: &ReviewCall, category: BlockerCategory, detail: &str) -> CallLog {
        CallLog {
            role: call.role,
            agent: call.agent.clone(),
            usage: CallUsage::default(),
            invoked: false,
            failure: Some(Failure::new(category, detail)),
            session_id: None,
            attempt: 0,
            task: call.task.as_ref().map(|t| TaskId::from(t.id.as_str())),
            refused: Vec::new(),
            file_commands: Vec::new(),
        }
    }
}

/// The answer the calls of a batch ask for, and what to ask an agent whose answer could not be
/// used, once.
#[derive(Debug, Clone)]
pub struct FollowUp {
    /// The follow-up template (`envelope_retry`, overridable in `.specs/prompts/`): `{{error}}`
    /// what was wrong with the answer, `{{shape}}` and `{{example}}` the JSON it should be,
    /// `{{answer}}` the previous answer quoted back, `{{what}}` what the call was for.
    pub prompt: String,
    /// What the answer should have been, for the failure after two unusable ones (`review
    /// output`, `rubric scores`).
    pub what: String,
    /// The shape every call of the batch answers in (the request's `answer`), which holds a
    /// text-only model to it.
    pub answer: Output,
}

impl FollowUp {
    /// The follow-up of a review: the `envelope_retry` template, asking for the findings
    /// envelope.
    pub fn envelope(template: String) -> FollowUp {
        FollowUp::new(template, "review output", Output::Envelope)
    }

    /// The follow-up of a call answering `answer`, with the template `template` (the text of
    /// `envelope_retry`, or its override).
    pub fn new(template: String, what: impl Into<String>, answer: Output) -> FollowUp {
        FollowUp {
            prompt: template,
            what: what.into(),
            answer,
        }
    }
}

/// Longest previous answer quoted back in the follow-up, in characters: the JSON a reviewer
/// meant is near its start, and a runaway answer must not make the follow-up the largest call.
const MAX_QUOTED_ANSWER_CHARS: usize = 60_000;

/// The follow-up prompt: the template with the error, the expected JSON and the previous answer
/// quoted back between per-call markers. It asks the agent to restate what it already
/// answered, not to review again, so it is a short call with no files.
fn follow_up_prompt(follow_up: &FollowUp, error: &str, answer: &str) -> String {
    let mut quoted: String = answer.chars().take(MAX_QUOTED_ANSWER_CHARS).collect();
    if quoted.len() < answer.len() {
        quoted.push_str(&format!(
            "\n[… cut at {MAX_QUOTED_ANSWER_CHARS} characters]"
        ));
    }
    let block = crate::prompts::quote("ANSWER", &quoted);
    let text = crate::prompts::seal(&follow_up.prompt, &[error, &block]);
    crate::prompts::fill(
        &text,
        &[
            ("error", error),
            ("example", follow_up.answer.example()),
            ("shape", follow_up.answer.noun()),
            ("answer", &block),
            ("what", &follow_up.what),
        ],
    )
}

/// The outcome of one [`ReviewCall`].
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct Answer<T> {
    pub call: ReviewCall,
    /// The parsed answer, or why the call failed after its retries.
    pub result: std::result::Result<T, Failure>,
    /// Every invocation made for it, in order.
    pub logs: Vec<CallLog>,
}

impl<T> Answer<T> {
    /// The answer of a call that failed as `category` (`detail`) after `logs`.
    fn failed(
        call: &ReviewCall,
        category: BlockerCategory,
        detail: &str,
        logs: Vec<CallLog>,
    ) -> Self {
        let result = Err(Failure::new(category, detail));
        Answer {
            call: call.clone(),
            result,
            logs,
        }
    }

    /// The same, when the orchestrator found the failure itself: its check is logged last.
    fn checked(
        call: &ReviewCall,
        category: BlockerCategory,
        detail: &str,
        mut logs: Vec<CallLog>,
    ) -> Self {
        logs.push(CallLog::check(call, category, detail));
        Answer::failed(call, category, detail, logs)
    }
}

/// What a batch must leave untouched, checked before and after it runs.
#[derive(Debug, Clone)]
pub enum Guard {
    /// Nothing is checked (tests of pure parsing only).
    None,
    /// The git working tree plus every file under `watch` (repository-relative directories).
    Git {
        /// The repository.
        git: Git,
        /// Directories whose untracked files matter (the spec directory).
        watch: Vec<String>,
    },
    /// These exact files (the input of a stand-alone review).
    Files(Vec<PathBuf>),
}

/// Contents taken by a [`Guard`] before a batch.
#[derive(Debug)]
enum Before {
    None,
    Git(Snapshot),
    Files(Vec<(PathBuf, Option<Vec<u8>>)>),
}

impl Guard {
    fn take(&self) -> Result<Before> {
        Ok(match self {
            Guard::None => Before::None,
            Guard::Git { git, watch } => {
                let w: Vec<&str> = watch.iter().map(String::as_str).collect();
                Before::Git(Snapshot::take(git, &w)?)
            }
            Guard::Files(paths) => Before::Files(
                paths
                    .iter()
                    .map(|p| (p.clone(), crate::fsx::read_entry(p)))
                    .collect(),
            ),
        })
    }

    fn changes(&self, before: &Before) -> Result<Vec<String>> {
        match (self, before) {
            (Guard::Git { git, watch }, Before::Git(snap)) => {
                let w: Vec<&str> = watch.iter().map(String::as_str).collect();
                Ok(snap
                    .changes(git, &w)?
                    .into_iter()
                    .filter(|p| !is_orchestrator_record(p))
                    .collect())
            }
            (_, Before::Files(files)) => Ok(files
                .iter()
                .filter(|(p, content)| crate::fsx::read_entry(p) != *content)
                .map(|(p, _)| p.display().to_string())
                .collect()),
            _ => Ok(Vec::new()),
        }
    }

    fn restore(&self, before: &Before, paths: &[String]) -> Result<()> {
        match (self, before) {
            (Guard::Git { git, .. }, Before::Git(snap)) => snap.restore(git, paths),
            (_, Before::Files(files)) => {
                for (p, content) in files {
                    if !paths.contains(&p.display().to_string()) {
                        continue;
                    }
                    match content {
                        Some(bytes) => crate::fsx::restore_entry(p, bytes)?,
                        None => {
                            let _ = crate::fsx::remove_entry(p);
                        }
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// Where and how the calls of a batch run.
#[derive(Debug, Clone)]
pub struct CallEnv<'a> {
    /// Validated configuration (agents).
    pub config: &'a Config,
    /// Secrets to keep out of failure details.
    pub redactor: &'a Redactor,
    /// The agents' working directory.
    pub workdir: PathBuf,
    /// `spec_dir` of the request, relative to `workdir`.
    pub spec_dir: String,
    /// `files` of the request.
    pub files: Vec<String>,
    /// `phase` of the request.
    pub phase: String,
    /// The "output only the JSON" follow-up.
    pub follow_up: FollowUp,
    /// What is left of the budget. Each call of a batch is handed an equal share of it (the
    /// calls run at once and together must not pass it): a CLI that can stops itself at its
    /// share, and the model API proxy refuses or cuts a fronted call there.
    pub budget_left: Option<f64>,
    /// What the calls must not modify.
    pub guard: Guard,
}

impl<'a> CallEnv<'a> {
    /// The same environment for calls that answer another shape (the judge's ruling, the
    /// classification): `follow_up` names that shape and asks for it on an unusable answer.
    pub fn with_follow_up(&self, follow_up: FollowUp) -> CallEnv<'a> {
        CallEnv {
            follow_up,
            ..self.clone()
        }
    }
}

/// A parser of an agent's answer text.
pub type Parse<'p, T> = &'p (dyn Fn(&str) -> std::result::Result<T, String> + Sync);

/// Runs `calls` concurrently and parses each answer with `parse`; see the module docs for the
/// retries. The answers come back in the order of `calls`. A call whose edits were caught is
/// run once more (only those calls, when each had its own tree and so is known), and fails as a
/// `sandbox_violation` if caught again.
pub fn run_batch<T: Send>(
    env: &CallEnv,
    calls: &[ReviewCall],
    parse: Parse<T>,
) -> Result<Vec<Answer<T>>> {
    let mut done: Vec<Option<Answer<T>>> = calls.iter().map(|_| None).collect();
    let mut earlier: Vec<Vec<CallLog>> = vec![Vec::new(); calls.len()];
    let mut pending: Vec<usize> = (0..calls.len()).collect();
    for pass in 1..=2 {
        let batch: Vec<ReviewCall> = pending.iter().map(|&i| calls[i].clone()).collect();
        let before = env.guard.take()?;
        // A call re-run alone keeps the kind of place it had among the others.
        let ran = run_concurrently(env, &batch, parse, (&before, calls.len() > 1));
        let in_checkout = env.guard.changes(&before)?;
        if !in_checkout.is_empty() {
            env.guard.restore(&before, &in_checkout)?;
        }
        let own: Vec<&[String]> = ran.iter().map(|(_, own)| own.as_slice()).collect();
        let caught = Caught::of(&batch, &in_checkout, &own);
        if let Some(caught) = &caught {
            crate::events::emit(crate::events::Event::SandboxViolation {
                detail: caught.detail.clone(),
            });
        }
        let mut again = Vec::new();
        for (at, (answer, _)) in ran.into_iter().enumerate() {
            let i = pending[at];
            let mut logs = std::mem::take(&mut earlier[i]);
            logs.extend(answer.logs);
            match &caught {
                Some(c) if c.who.contains(&at) && pass == 2 => {
                    let violation = BlockerCategory::SandboxViolation;
                    done[i] = Some(Answer::checked(&calls[i], violation, &c.detail, logs));
                }
                Some(c) if c.who.contains(&at) => {
                    logs.push(CallLog::check(
                        &calls[i],
                        BlockerCategory::SandboxViolation,
                        &c.detail,
                    ));
                    earlier[i] = logs;
                    again.push(i);
                }
                _ => done[i] = Some(Answer { logs, ..answer }),
            }
        }
        pending = again;
        if pending.is_empty() {
            break;
        }
    }
    Ok(done
        .into_iter()
        .zip(calls)
        .map(|(a, c)| {
            a.unwrap_or_else(|| {
                Answer::failed(c, BlockerCategory::EnvError, "no answer", Vec::new())
            })
        })
        .collect())
}

/// One call: a batch of one ([`run_batch`]), which always answers it.
pub fn run_one<T: Send>(env: &CallEnv, call: ReviewCall, parse: Parse<T>) -> Result<Answer<T>> {
    let answers = run_batch(env, std::slice::from_ref(&call), parse)?;
    let none = || Answer::failed(&call, BlockerCategory::EnvError, "no answer", Vec::new());
    Ok(answers.into_iter().next().unwrap_or_else(none))
}

/// The edits a pass of a batch was caught making: who made them (positions in the batch) and
/// the failure's detail.
struct Caught {
    who: Vec<usize>,
    detail: String,
}

impl Caught {
    /// From the changes found in the checkout (made by any call of `batch`, so blamed on all)
    /// and in each call's own tree (`own`, that call's alone); `None` when there are none.
    fn of(batch: &[ReviewCall], in_checkout: &[String], own: &[&[String]]) -> Option<Caught> {
        let mine: Vec<usize> = (0..own.len()).filter(|&i| !own[i].is_empty()).collect();
        let all: Vec<usize> = (0..batch.len()).collect();
        let roles = |at: &[usize]| {
            let roles: Vec<String> = at.iter().map(|&i| batch[i].role.to_string()).collect();
            roles.join(", ")
        };
        let (who, subject) = match (in_checkout.is_empty(), batch.len()) {
            (true, _) if mine.is_empty() => return None,
            (true, _) => {
                let subject = format!("the concurrent reviewer {} in its own tree", roles(&mine));
                (mine.clone(), subject)
            }
            (false, 1) => (all, "the reviewer".to_string()),
            (false, n) => {
                let subject = format!("one of the {n} concurrent reviewers ({})", roles(&all));
                (all, subject)
            }
        };
        let paths: Vec<&str> = in_checkout
            .iter()
            .chain(mine.iter().flat_map(|&i| own[i]))
            .map(String::as_str)
            .collect();
        let detail = format!(
            "{subject} edited {} (undone): {}",
            if paths.len() == 1 { "a file" } else { "files" },
            paths[..paths.len().min(5)].join(", ")
        );
        Some(Caught { who, detail })
    }
}

/// Runs `calls` at once, each answer with what its call changed in its own tree. A call of a
/// batch of one runs in the batch's workdir (no other agent is there); each call of several
/// (`own_trees`) that starts a program gets a tree of its own ([`tree::CallTree`]), made from
/// `before`. An HTTP agent starts none (the orchestrator reads the files for it) and needs none.
fn run_concurrently<T: Send>(
    env: &CallEnv,
    calls: &[ReviewCall],
    parse: Parse<T>,
    (before, own_trees): (&Before, bool),
) -> Vec<(Answer<T>, Vec<String>)> {
    let limits = agents::CallLimits {
        budget_left: env.budget_left.map(|left| left / calls.len().max(1) as f64),
    };
    if !own_trees {
        return calls
            .iter()
            .map(|c| (one(env, c, &env.workdir, parse, limits), Vec::new()))
            .collect();
    }
    let in_tree = |call: &ReviewCall| -> (Answer<T>, Vec<String>) {
        let http = env
            .config
            .agents
            .get(&call.agent)
            .is_some_and(|a| a.kind.is_http());
        let tree = match (!http).then(|| tree::CallTree::make(env, before)) {
            Some(Err(e)) => {
                let detail = format!("the reviewer's own working tree could not be made: {e}");
                let answer = Answer::checked(call, BlockerCategory::EnvError, &detail, Vec::new());
                return (answer, Vec::new());
            }
            made => made.and_then(std::result::Result::ok).flatten(),
        };
        let workdir = tree.as_ref().map_or(env.workdir.as_path(), |t| t.workdir());
        let answer = one(env, call, workdir, parse, limits);
        let own = tree.as_ref().map_or_else(Vec::new, |tree| {
            let own = tree.changes();
            tree.keep_logs(env);
            own
        });
        (answer, own)
    };
    if let [call] = calls {
        return vec![in_tree(call)];
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = calls
            .iter()
            .map(|c| scope.spawn(move || in_tree(c)))
            .collect();
        handles
            .into_iter()
            .zip(calls)
            .map(|(h, c)| {
                h.join().unwrap_or_else(|_| {
                    let panicked = "the reviewer's worker thread panicked";
                    let answer = Answer::failed(c, BlockerCategory::EnvError, panicked, Vec::new());
                    (answer, Vec::new())
                })
            })
            .collect()
    })
}

/// One call: invoke (with its one retry), parse, and on a parse failure ask once more.
fn one<T>(
    env: &CallEnv,
    call: &ReviewCall,
    workdir: &Path,
    parse: Parse<T>,
    limits: agents::CallLimits,
) -> Answer<T> {
    let mut logs = Vec::new();
    let done = |result, logs| Answer {
        call: call.clone(),
        result,
        logs,
    };
    let text = match invoke(
        (env, workdir),
        call,
        (&call.prompt, &env.files),
        &mut logs,
        limits,
    ) {
        Ok(t) => t,
        Err(e) => return done(Err(e), logs),
    };
    let first_error = match parse(&text) {
        Ok(v) => return done(Ok(v), logs),
        Err(e) => e,
    };
    crate::events::emit(crate::events::Event::AgentAskedAgain {
        agent: call.agent.clone().into(),
        problem: first_error.to_string(),
    });
    let prompt = follow_up_prompt(&env.follow_up, &first_error, &text);
    let text = match invoke((env, workdir), call, (&prompt, &[]), &mut logs, limits) {
        Ok(t) => t,
        Err(e) => return done(Err(e), logs),
    };
    match parse(&text) {
        Ok(v) => done(Ok(v), logs),
        Err(e) => {
            let detail = format!("unusable {} twice: {e}", env.follow_up.what);
            Answer::checked(call, BlockerCategory::MalformedOutput, &detail, logs)
        }
    }
}

/// Calls the agent with `prompt` pointing at `files`, retrying once on failure. Returns the
/// answer text or the last failure.
fn invoke(
    (env, workdir): (&CallEnv, &Path),
    call: &ReviewCall,
    (prompt, files): (&str, &[String]),
    logs: &mut Vec<CallLog>,
    limits: agents::CallLimits,
) -> std::result::Result<String, Failure> {
    let mut last = Failure::new(BlockerCategory::AgentError, "no attempt was made");
    for attempt in 1..=2u32 {
        let request = AgentRequest {
            role: call.role.to_string(),
            phase: env.phase.clone(),
            round: call.round,
            attempt,
            workdir: workdir.to_path_buf(),
            spec_dir: env.spec_dir.clone(),
            task: call.task.clone(),
            files: files.to_vec(),
            prompt: prompt.to_string(),
            label: call.label.clone(),
            answer: Some(env.follow_up.answer),
        };
        crate::events::emit(crate::events::Event::AgentCallStarted {
            role: call.role,
            agent: call.agent.clone().into(),
            attempt,
        });
        let called = agents::call_noted(
            env.config,
            &call.agent.as_str().into(),
            false,
            &request,
            env.redactor,
            limits,
        );
        logs.push(CallLog::invocation(
            (call.role, &call.agent, call.task.as_ref()),
            attempt,
            &called,
        ));
        match called.result {
            Ok(reply) => return Ok(reply.text),
            Err(e) => {
                crate::events::emit(crate::events::Event::AgentCallFailed {
                    agent: call.agent.clone().into(),
                    error: e.to_string(),
                });
                last = e.failure();
                // Spend caps and an exhausted budget are never retried: the caller stops the run.
                if e.category.stops_the_run() {
                    break;
                }
            }
        }
    }
    Err(last)
}
