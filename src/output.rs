//! Everything the program writes for people and scripts: the progress reporters (the library's
//! [`Event`]s as sentences, JSON lines, or nothing), the results commands print on stdout, and
//! the final error line.
//!
//! This is the one module that touches the process's stdout and stderr (besides the tracing
//! subscriber `main` sets up); `clippy.toml` forbids the print macros and the std handles
//! everywhere else. Writes go through `std::io::Write` rather than `println!`, so a reader that
//! went away (`spec-orchestrate status | head -1`) ends the output quietly instead of panicking.

use std::fmt::Write as _;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::error::{Error, Result};
use crate::events::{self, Event, Reporter};

/// How progress is shown; chosen once per process by `--progress` or
/// `SPEC_ORCHESTRATE_PROGRESS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Progress {
    /// Sentences on stderr, for a person at a terminal or reading a CI log.
    Terminal,
    /// One JSON object per event on stderr, for a program.
    Json,
    /// No progress at all; results, errors and the exit code remain.
    Quiet,
}

impl Progress {
    /// The name on the command line and in `SPEC_ORCHESTRATE_PROGRESS`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The mode installed by [`install`], so child processes (the Actions job's `step`) can be given
/// the same one.
static MODE: OnceLock<Progress> = OnceLock::new();

/// Installs the reporter for `mode` as the process-wide destination of events.
pub fn install(mode: Progress) {
    let _ = MODE.set(mode);
    events::install(reporter(mode));
}

/// The reporter of `mode`.
pub fn reporter(mode: Progress) -> Arc<dyn Reporter> {
    match mode {
        Progress::Terminal => Arc::new(Terminal),
        Progress::Json => Arc::new(JsonLines),
        Progress::Quiet => Arc::new(Quiet),
    }
}

/// The mode installed in this process (terminal if none was).
pub fn mode() -> Progress {
    MODE.get().copied().unwrap_or(Progress::Terminal)
}

/// Sentences on stderr, exactly those the commands printed before events existed (tests and
/// people grep them).
pub struct Terminal;

impl Reporter for Terminal {
    fn report(&self, event: &Event) {
        if let Some(text) = human(event) {
            to_stderr(&format!("{text}\n"));
        }
    }
}

/// One JSON object per line on stderr: `{"event":"phase_started","phase":"inspect",…}`.
pub struct JsonLines;

impl Reporter for JsonLines {
    fn report(&self, event: &Event) {
        if let Ok(line) = serde_json::to_string(event) {
            to_stderr(&format!("{line}\n"));
        }
    }
}

/// Drops every event.
pub struct Quiet;

impl Reporter for Quiet {
    fn report(&self, _: &Event) {}
}

/// Keeps every event in memory, for tests that drive the library in-process (see
/// [`events::scoped`]).
#[derive(Default)]
pub struct Capture(Mutex<Vec<Event>>);

impl Capture {
    /// The events so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Reporter for Capture {
    fn report(&self, event: &Event) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event.clone());
    }
}

/// The sentence a person sees for `event`, without the final newline; `None` for events that
/// only programs want (a phase's end is implied by the next line). The match lists every variant,
/// so a new event does not compile until it is given a sentence (or `None`).
pub fn human(event: &Event) -> Option<String> {
    match event {
        Event::RunStarted { .. }
        | Event::RunResumed { .. }
        | Event::ResumedAfterStop { .. }
        | Event::PhaseStarted { .. }
        | Event::PhaseEnded { .. }
        | Event::Done { .. }
        | Event::Waiting { .. }
        | Event::Paused { .. }
        | Event::Stopped { .. } => run_sentence(event),
        Event::AgentCallStarted { .. }
        | Event::AgentCallFailed { .. }
        | Event::AgentOutputCut { .. }
        | Event::AgentStopped { .. }
        | Event::SandboxViolation { .. }
        | Event::AgentAskedAgain { .. }
        | Event::Retry { .. }
        | Event::RoleReassigned { .. }
        | Event::CallFailed { .. }
        | Event::AgentUsage { .. } => agent_sentence(event),
        Event::Inspection { .. }
        | Event::ReviewRound { .. }
        | Event::ReviewRoundFailed { .. }
        | Event::CaseResult { .. }
        | Event::EvaluateRound { .. }
        | Event::RubricScored { .. }
        | Event::Stall { .. }
        | Event::Restructure { .. }
        | Event::Arbitration { .. } => round_sentence(event),
        Event::TaskResumed { .. }
        | Event::TaskInTree { .. }
        | Event::TaskRerun { .. }
        | Event::TaskFixesRequired { .. }
        | Event::TaskCommitted { .. }
        | Event::TaskBlocked { .. }
        | Event::AppStarting { .. }
        | Event::PrWritten { .. }
        | Event::ImprovementBranch { .. }
        | Event::Warning { .. }
        | Event::Detail { .. }
        | Event::Note { .. }
        | Event::Job { .. } => work_sentence(event),
    }
}

/// The run and its phases: start, resume, each phase, and how the run ended.
fn run_sentence(event: &Event) -> Option<String> {
    Some(match event {
        Event::RunStarted {
            run_id,
            feature,
            dir,
        } => format!("new run {run_id} for `{feature}` in {dir}"),
        Event::RunResumed {
            run_id,
            feature,
            phase,
        } => format!("resuming run {run_id} of `{feature}` at {phase}"),
        Event::ResumedAfterStop { phase, stop } => {
            format!("resuming at {phase} after a {} stop", stop.limit())
        }
        Event::PhaseStarted { phase, attempt } => format!("==> {phase} (attempt {attempt})"),
        Event::PhaseEnded { .. } => return None,
        Event::Done { draft: true, pr } => format!("done: landed as a DRAFT ({pr})"),
        Event::Done { draft: false, pr } => format!("done: ready for review ({pr})"),
        Event::Waiting { message } => format!("waiting: {message}"),
        Event::Paused { next } => {
            format!("paused; next phase: {next} (continue with `spec-orchestrate resume`)")
        }
        Event::Stopped { message, pr } => format!("{message}\nlanded as a DRAFT ({pr})"),
        _ => return None,
    })
}

/// Agent calls and the services behind them: calls, failures, retries, reassignments, usage.
fn agent_sentence(event: &Event) -> Option<String> {
    Some(match event {
        Event::AgentCallStarted {
            role,
            agent,
            attempt,
        } => format!("    {role} → {agent} (attempt {attempt})"),
        Event::AgentCallFailed { agent, error } => format!("    {agent} failed: {error}"),
        Event::AgentOutputCut {
            agent,
            stream,
            note,
        } => format!("    {agent} printed too much on {stream}: {note}"),
        Event::AgentStopped { agent, detail } => format!("    {agent} stopped: {detail}"),
        Event::SandboxViolation { detail } => format!("    {detail}"),
        Event::AgentAskedAgain { agent, problem } => {
            format!("    {agent} answered without usable output ({problem}); asking once more")
        }
        Event::Retry {
            what,
            server,
            status,
            wait_secs,
            attempt,
            attempts,
        } => format!(
            "    {what}: {server} answered {status}; retrying in {wait_secs:.1} s (attempt {attempt} of {attempts})"
        ),
        Event::RoleReassigned {
            role,
            from,
            to,
            reason,
        } => format!(
            "    warning: {role} reassigned from {from} to {to} ({reason}); reduced cross-model assurance"
        ),
        Event::CallFailed {
            role,
            agent,
            category,
            detail,
        } => format!("    {role} ({agent}) failed: {category}: {detail}"),
        Event::AgentUsage {
            agent,
            calls,
            input_tokens,
            output_tokens,
            usd,
        } => format!(
            "    usage {agent}: {calls} call(s), {input_tokens} in / {output_tokens} out tokens, {usd:.4} USD"
        ),
        _ => return None,
    })
}

/// Results of the review, inspection and acceptance rounds, and what the loops decided.
fn round_sentence(event: &Event) -> Option<String> {
    Some(match event {
        Event::Inspection {
            critical,
            warning,
            info,
            gate,
        } => format!("    inspect: {critical} critical, {warning} warning, {info} info → {gate}"),
        Event::ReviewRound {
            round,
            strategy,
            reviewer,
            contract,
            fix_required,
            gate,
        } => format!(
            "    review round {round} ({strategy}, {reviewer} + contract {contract}): {fix_required} fix-required → {gate}"
        ),
        Event::ReviewRoundFailed { round, reason } => {
            format!("    review round {round} failed: {reason}")
        }
        Event::CaseResult {
            case,
            verdict,
            detail,
        } => format!("    {case} {verdict} ({detail})"),
        Event::EvaluateRound {
            round,
            pass,
            fail,
            blocked,
            rubric,
            gate,
        } => {
            let mut s =
                format!("    evaluate round {round}: {pass} pass, {fail} fail, {blocked} blocked");
            if let Some(score) = rubric {
                let _ = write!(s, ", rubric {score:.2}");
            }
            let _ = write!(s, " → {gate}");
            s
        }
        Event::RubricScored {
            agent,
            score,
            pass_mark,
        } => format!("    rubric: {agent} scored {score:.2} (pass mark {pass_mark:.1})"),
        Event::Stall {
            signal,
            round,
            loop_phase,
        } => format!("    stall signal {signal} after round {round} of {loop_phase}"),
        Event::Restructure { order } => format!("    S4: {order}"),
        Event::Arbitration { note } => format!("    arbitration: {note}"),
        _ => return None,
    })
}

/// Tasks, the app, the pull request, improvements, and free-text sentences.
fn work_sentence(event: &Event) -> Option<String> {
    Some(match event {
        Event::TaskResumed { task } => {
            format!("    {task}: resuming an interrupted task; discarding its partial changes")
        }
        Event::TaskInTree { task, tree } => format!("    {task}: running in its worktree {tree}"),
        Event::TaskRerun { task } => format!(
            "    {task}: its change no longer applies on top of the tasks landed before it; running it again in the checkout"
        ),
        Event::TaskFixesRequired {
            task,
            reviewer,
            count,
        } => format!("    {task}: reviewer {reviewer} requires {count} fix(es)"),
        Event::TaskCommitted { task, commit } => format!("    {task} committed {commit}"),
        Event::TaskBlocked { task, category } => format!("    {task} blocked ({category})"),
        Event::AppStarting { command, url } => {
            format!("    starting the app: {command} (waiting for {url})")
        }
        Event::PrWritten { path, draft } => format!(
            "    pr: {path} ({})",
            if *draft { "draft" } else { "ready" }
        ),
        Event::ImprovementBranch { proposal, branch } => {
            format!("    improvement {proposal}: branch {branch}")
        }
        Event::Warning { message } => format!("warning: {message}"),
        Event::Detail { message } => format!("    {message}"),
        Event::Note { message } => message.clone(),
        Event::Job { message } => format!("spec-orchestrate: {message}"),

        _ => return None,
    })
}

/// Set once stdout's reader has gone away; later results are dropped.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes a command's result to stdout. A closed pipe is not an error (the reader has what it
/// wanted, as with `| head -1`): the rest of the output is dropped and the command ends as it
/// would have. Any other write failure (a full disk behind a redirect) is.
pub fn print(text: &str) -> Result<()> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    #[allow(clippy::disallowed_methods)]
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(Error::io("standard output", e)),
    }
}

/// [`print`] with a final newline.
pub fn print_line(text: &str) -> Result<()> {
    print(&format!("{text}\n"))
}

/// Reports the error that ends the command: `error: …` and its help line on stderr, or in JSON
/// mode one `{"event":"error","kind":…,"exit_code":…,"message":…,"help":…}` line so the stream
/// stays parseable. Shown in every mode, quiet included.
pub fn error(e: &Error) {
    match mode() {
        Progress::Json => {
            let line = serde_json::json!({
                "event": "error",
                "kind": e.kind().name(),
                "exit_code": e.exit_code(),
                "message": e.to_string(),
                "help": e.help(),
            });
            to_stderr(&format!("{line}\n"));
        }
        Progress::Terminal | Progress::Quiet => to_stderr(&format!("error: {}\n", e.report())),
    }
}

/// One write of whole lines to stderr (so concurrent agents' lines do not interleave); a failure
/// is dropped, as there is nowhere left to report it.
fn to_stderr(text: &str) {
    #[allow(clippy::disallowed_methods)]
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::kinds::Gate;

    #[test]
    fn capture_keeps_the_events_emitted_in_its_scope_in_order() {
        let capture = Arc::new(Capture::default());
        events::scoped(capture.clone(), || {
            events::emit(Event::PhaseStarted {
                phase: crate::types::Phase::Inspect,
                attempt: 1,
            });
            events::emit(Event::Inspection {
                critical: 0,
                warning: 2,
                info: 1,
                gate: Gate::Pass,
            });
        });
        let got = capture.events();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(human(&got[0]).as_deref(), Some("==> inspect (attempt 1)"));
        assert_eq!(
            human(&got[1]).as_deref(),
            Some("    inspect: 0 critical, 2 warning, 1 info → PASS")
        );
    }

    #[test]
    fn terminal_sentences_keep_their_wording() {
        let cases = [
            (
                Event::Retry {
                    what: "reviewer".into(),
                    server: "anthropic".into(),
                    status: "429".into(),
                    wait_secs: 1.0,
                    attempt: 2,
                    attempts: 3,
                },
                "    reviewer: anthropic answered 429; retrying in 1.0 s (attempt 2 of 3)",
            ),
            (
                Event::EvaluateRound {
                    round: 2,
                    pass: 3,
                    fail: 1,
                    blocked: 0,
                    rubric: Some(3.456),
                    gate: Gate::Fail,
                },
                "    evaluate round 2: 3 pass, 1 fail, 0 blocked, rubric 3.46 → FAIL",
            ),
            (
                Event::Done {
                    draft: true,
                    pr: "pr-body.md".into(),
                },
                "done: landed as a DRAFT (pr-body.md)",
            ),
            (
                Event::Job {
                    message: "refused: no".into(),
                },
                "spec-orchestrate: refused: no",
            ),
        ];
        for (event, want) in cases {
            assert_eq!(human(&event).as_deref(), Some(want));
        }
        assert_eq!(
            human(&Event::PhaseEnded {
                phase: crate::types::Phase::Pr,
                attempt: 1,
                outcome: crate::types::Outcome::Ok.into()
            }),
            None
        );
    }

    #[test]
    fn every_json_line_carries_the_event_kind() {
        let line = serde_json::to_string(&Event::TaskCommitted {
            task: "T001".into(),
            commit: "0123456789".into(),
        })
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["event"], "task_committed");
        assert_eq!(v["task"], "T001");
        assert!(!line.contains('\n'));
    }
}
