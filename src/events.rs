//! Progress events and the reporter they go to.
//!
//! The library never prints: a phase, an agent call or a command says what is happening by
//! emitting an [`Event`], and the [`Reporter`] the command installed decides what becomes of it
//! (a sentence on stderr, a JSON line, nothing, or a list a test reads). The reporters themselves
//! live in `output`, the edge of the crate; this module is a leaf so that every layer, down to
//! `net`, can emit without importing anything above it.
//!
//! Why a process-wide reporter rather than one passed down: progress is emitted from every
//! layer (the HTTP retry loop in `net`, the ledger reader, the phases, the commands), most of
//! which have no context object to carry it, and the choice is made once per process by the
//! command line. Threading a handle through every signature would buy nothing the one slot does
//! not, the same reasoning as `tracing`'s global dispatcher. Tests that want the events of one
//! call use [`scoped`], which overrides the slot for the current thread only.
//!
//! Fields are the leaf vocabulary of `types` (`Phase`, `Signal`, `Gate`, `PhaseOutcome`,
//! `CallRole`, `BlockerCategory`, …) wherever the value comes from a closed set, and plain
//! strings and numbers only for names, ids and text, so this module imports nothing above the
//! leaf layer and the JSON form
//! (`{"event":"phase_started","phase":"inspect",…}`) is fixed by the names here and in `types`.

use std::cell::RefCell;
use std::sync::{Arc, PoisonError, RwLock};

use serde::{Deserialize, Serialize};

use crate::types::ids::AgentName;
use crate::types::kinds::{BlockerCategory, CallRole, Gate, PhaseOutcome, Strategy, Verdict};
use crate::types::{Phase, Role, Signal, StopKind};

/// One thing worth telling the person (or program) watching a run. The JSON form is the variant
/// name in snake case under `"event"`, next to the fields. It reads back as well as it writes, so
/// a program (and the tests, which run the binary) can take the `--progress json` lines as the
/// typed events rather than match words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[allow(missing_docs)] // a field is named for what it holds; its doc says only what the name cannot
pub enum Event {
    /// A new run was created (`run`).
    RunStarted {
        run_id: String,
        feature: String,
        dir: String,
    },
    /// `run` found the state of an earlier run of the same issue and continues it.
    RunResumed {
        run_id: String,
        feature: String,
        phase: Phase,
    },
    /// A run stopped by a limit (budget, spend cap) is being continued.
    ResumedAfterStop {
        phase: Phase,
        /// The limit that stopped it, written `budget` or `spend-cap`.
        #[serde(serialize_with = "limit_word", deserialize_with = "from_limit_word")]
        stop: StopKind,
    },
    /// A phase begins.
    PhaseStarted {
        phase: Phase,
        /// 1 for the first time this phase runs in the run, then 2, 3…
        attempt: u32,
    },
    /// A phase returned an outcome (the machine's transition follows).
    PhaseEnded {
        phase: Phase,
        /// As in [`Event::PhaseStarted`].
        attempt: u32,
        /// The outcome, as recorded in the phase log (its JSON is the log's word: `ok`,
        /// `stall:S1`, …).
        outcome: PhaseOutcome,
    },
    /// The run reached its end: a pull request, ready or draft.
    Done {
        draft: bool,
        /// The pull request (URL or file), empty if none was recorded.
        pr: String,
    },
    /// The run waits for a person; the message says what to do.
    Waiting { message: String },
    /// The run paused on request (`step`, `--until`).
    Paused {
        /// The phase a `resume` runs next.
        next: Phase,
    },
    /// A limit stopped the run; a draft says why.
    Stopped {
        /// Why, and how to continue.
        message: String,
        pr: String,
    },
    /// An agent is being called.
    AgentCallStarted {
        role: CallRole,
        /// The agent's name in the configuration.
        agent: AgentName,
        /// 1, 2… within this call's retries.
        attempt: u32,
    },
    /// An agent's output was longer than what is kept in memory: its head and tail were kept
    /// (what its answer is parsed from), the whole went to a file.
    AgentOutputCut {
        agent: AgentName,
        /// `stdout` or `stderr`.
        stream: String,
        /// The note inserted where bytes were cut (sizes and the file).
        note: String,
    },
    /// An agent call failed (it may be retried).
    AgentCallFailed {
        agent: AgentName,
        /// The failure, redacted.
        error: String,
    },
    /// An agent call failed in a way that stops the run (budget, spend cap).
    AgentStopped { agent: AgentName, detail: String },
    /// A read-only call changed files; the change was undone.
    SandboxViolation {
        /// Who (the reviewer, or which concurrent reviewers) changed what.
        detail: String,
    },
    /// An agent answered without usable output and is asked once more.
    AgentAskedAgain { agent: AgentName, problem: String },
    /// A service (a model API, GitHub, the artifact store) answered with a retryable status or
    /// not at all; the request is retried after a wait.
    Retry {
        /// What was being done (the agent's name for a model call).
        what: String,
        /// Who answered (e.g. `anthropic`, or the host).
        server: String,
        /// The HTTP status, or `connection failure`.
        status: String,
        /// The wait before the next attempt, in seconds.
        wait_secs: f64,
        attempt: u32,
        /// Attempts allowed in all.
        attempts: u32,
    },
    /// A role went to another agent than configured (its agent is unavailable).
    RoleReassigned {
        role: Role,
        from: AgentName,
        to: AgentName,
        /// Why the configured one cannot.
        reason: String,
    },
    /// One call of a stand-alone review or debate failed.
    CallFailed {
        role: CallRole,
        agent: AgentName,
        category: BlockerCategory,
        detail: String,
    },
    /// Usage of one agent over a stand-alone review or debate.
    AgentUsage {
        agent: AgentName,
        calls: u64,
        input_tokens: u64,
        output_tokens: u64,
        usd: f64,
    },
    /// The inspection's result.
    Inspection {
        critical: u32,
        warning: u32,
        info: u32,
        gate: Gate,
    },
    /// A spec review round's result.
    ReviewRound {
        round: u32,
        strategy: Strategy,
        reviewer: String,
        /// The agent that reviewed the acceptance contract.
        contract: String,
        fix_required: usize,
        gate: Gate,
    },
    /// A spec review round produced no usable review.
    ReviewRoundFailed { round: u32, reason: String },
    /// One acceptance case's verdict.
    CaseResult {
        case: String,
        verdict: Verdict,
        detail: String,
    },
    /// An acceptance round's result.
    EvaluateRound {
        round: u32,
        pass: u32,
        fail: u32,
        blocked: u32,
        /// The rubric's weighted score, if one was scored.
        rubric: Option<f64>,
        gate: Gate,
    },
    /// The rubric was scored.
    RubricScored {
        agent: AgentName,
        score: f64,
        pass_mark: f64,
    },
    /// A loop stalled; arbitration follows.
    Stall {
        signal: Signal,
        round: u32,
        loop_phase: Phase,
    },
    /// The same class of finding keeps coming back: the author is ordered to restructure.
    Restructure { order: String },
    /// An arbitration was decided (automatically or by a person).
    Arbitration { note: String },
    /// A task interrupted by a crash restarts from a clean tree.
    TaskResumed { task: String },
    /// A task of a parallel wave runs in its own worktree.
    TaskInTree { task: String, tree: String },
    /// A task whose change no longer applied on top of the tasks landed before it runs again,
    /// in the checkout.
    TaskRerun { task: String },
    /// A task's reviewer sent it back.
    TaskFixesRequired {
        task: String,
        reviewer: AgentName,
        count: usize,
    },
    /// A task was committed.
    TaskCommitted {
        task: String,
        /// The commit, abbreviated to 10 characters.
        commit: String,
    },
    /// A task was blocked.
    TaskBlocked {
        task: String,
        category: BlockerCategory,
    },
    /// The app under test is being started for the browser cases.
    AppStarting {
        command: String,
        /// The URL waited for.
        url: String,
    },
    /// The pull request body was written.
    PrWritten { path: String, draft: bool },
    /// The retrospective put an improvement on its own branch.
    ImprovementBranch { proposal: String, branch: String },
    /// Something is off but the command goes on.
    Warning { message: String },
    /// A detail of the phase in progress that has no variant of its own.
    Detail { message: String },
    /// A sentence from a command that has no variant of its own (what it wrote, what it found).
    Note { message: String },
    /// A sentence from the GitHub Actions job (restore, checkpoint, dispatch, refusals).
    Job { message: String },
}

/// Where events go. Implementations must be cheap and must not fail: progress that cannot be
/// shown is dropped, never an error of the run.
pub trait Reporter: Send + Sync {
    /// Takes one event.
    fn report(&self, event: &Event);
}

/// The process-wide reporter; `None` until a command installs one, and then events are dropped.
static REPORTER: RwLock<Option<Arc<dyn Reporter>>> = RwLock::new(None);

thread_local! {
    /// A per-thread override set by [`scoped`].
    static SCOPED: RefCell<Option<Arc<dyn Reporter>>> = const { RefCell::new(None) };
}

/// Makes `reporter` the destination of every later event of the process (the command line does
/// this once, before running a command).
pub fn install(reporter: Arc<dyn Reporter>) {
    *REPORTER.write().unwrap_or_else(PoisonError::into_inner) = Some(reporter);
}

/// Sends `event` to the reporter of this thread's [`scoped`] call if there is one, else to the
/// installed one; with neither, the event is dropped (a library caller that installed nothing
/// gets no output).
pub fn emit(event: Event) {
    let scoped = SCOPED.with(|s| s.borrow().clone());
    let reporter = scoped.or_else(|| {
        REPORTER
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    });
    if let Some(r) = reporter {
        r.report(&event);
    }
}

/// Runs `f` with `reporter` receiving the events emitted on this thread (threads `f` spawns
/// still report to the installed reporter). Used by tests, which run in parallel in one process
/// and so cannot share the process-wide slot.
pub fn scoped<T>(reporter: Arc<dyn Reporter>, f: impl FnOnce() -> T) -> T {
    /// Restores the previous override even if `f` panics.
    struct Restore(Option<Arc<dyn Reporter>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            SCOPED.with(|s| *s.borrow_mut() = previous);
        }
    }
    let previous = SCOPED.with(|s| s.borrow_mut().replace(reporter));
    let _restore = Restore(previous);
    f()
}

/// A stop's limit as a person reads it in an event: `budget` or `spend-cap`.
fn limit_word<S: serde::Serializer>(kind: &StopKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.limit())
}

/// The stop kind of a limit word [`limit_word`] wrote.
fn from_limit_word<'de, D: serde::Deserializer<'de>>(d: D) -> Result<StopKind, D::Error> {
    let word = String::deserialize(d)?;
    [StopKind::Budget, StopKind::Quota]
        .into_iter()
        .find(|k| k.limit() == word)
        .ok_or_else(|| {
            serde::de::Error::invalid_value(
                serde::de::Unexpected::Str(&word),
                &"`budget` or `spend-cap`",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct List(Mutex<Vec<Event>>);

    impl Reporter for List {
        fn report(&self, event: &Event) {
            self.0.lock().unwrap().push(event.clone());
        }
    }

    #[test]
    fn scoped_events_reach_the_scoped_reporter_and_stop_there() {
        let list = Arc::new(List::default());
        scoped(list.clone(), || {
            emit(Event::Note {
                message: "inside".into(),
            })
        });
        emit(Event::Note {
            message: "outside".into(),
        });
        assert_eq!(
            *list.0.lock().unwrap(),
            vec![Event::Note {
                message: "inside".into()
            }]
        );
    }

    #[test]
    fn an_event_reads_back_from_its_json_line() {
        let events = [
            Event::ResumedAfterStop {
                phase: Phase::Implement,
                stop: StopKind::Quota,
            },
            Event::Retry {
                what: "author".into(),
                server: "anthropic".into(),
                status: "429".into(),
                wait_secs: 1.5,
                attempt: 2,
                attempts: 3,
            },
            Event::EvaluateRound {
                round: 1,
                pass: 3,
                fail: 1,
                blocked: 0,
                rubric: None,
                gate: Gate::Fail,
            },
        ];
        for event in events {
            let line = serde_json::to_string(&event).unwrap();
            let back: Event = serde_json::from_str(&line).unwrap();
            assert_eq!(back, event, "{line}");
        }
        let unknown = r#"{"event":"resumed_after_stop","phase":"implement","stop":"quota"}"#;
        assert!(
            serde_json::from_str::<Event>(unknown).is_err(),
            "only the limit words"
        );
    }

    #[test]
    fn the_json_form_names_the_event_in_snake_case() {
        let v = serde_json::to_value(Event::PhaseStarted {
            phase: Phase::Inspect,
            attempt: 2,
        })
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"event": "phase_started", "phase": "inspect", "attempt": 2})
        );
    }
}
