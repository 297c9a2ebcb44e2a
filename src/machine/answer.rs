//! What a person's decision does to a run, in one table: the CLI commands (`approve`,
//! `arbitrate <answer>`) and the `/spec-orchestrate` comments of Action mode both come here, so
//! an answer means the same wherever it is given.
//!
//! [`answer`] is pure: it reads the state and returns the state as the decision leaves it (or a
//! [`Refusal`], a type of its own: the person asked for something that does not apply now, which
//! is a reply, not a failure). The caller saves the result and says what happened. Only the
//! machine moves the run (`State::move_to`); a decision that moves the run does it here.

use super::arbitrate::{last_round, loop_of, stalled_role, swap};
use crate::config::Config;
use crate::phases::implement::new_task;
use crate::phases::loops::arbitration;
use crate::phases::waiting;
use crate::review::feedback::{self, Review};
use crate::state::pr_review::{Answer as ReviewAnswer, PrReviewRound, RoundStatus, Target};
use crate::state::{Approval, State, Waiting};
use crate::types::ids::Sha;
use crate::types::kinds::{Answer, Decision, DisputeEnd, WaitKind};
use crate::types::{Phase, Role, Signal};
use crate::util;

/// A decision a person can give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonCommand {
    /// Approve the spec waiting at `approval`.
    Approve,
    /// Answer the arbitration the run waits on.
    Arbitrate(Answer),
    /// Go on after a stop or a refused pull request (Action mode).
    Continue,
    /// Land a draft now, while no arbitration waits (Action mode).
    Draft,
    /// Halt the chain until `continue` (Action mode).
    Stop,
}

/// What the run does after an applied decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Then {
    /// Run the next phase, as usual.
    Run,
    /// Run nothing until a person says `continue`; the message says so.
    Halt(String),
}

/// A decision applied: the state it leaves, what follows, and the note recorded with it.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct Applied {
    /// The run as the decision leaves it (the caller saves it).
    pub state: State,
    pub then: Then,
    /// The arbitration note, when the decision answered one (for the progress event).
    pub note: Option<String>,
    /// A rubric restart's commit: the driver resets the work branch to it (the one effect a
    /// decision leaves to a context, `phases::arbitration::reset_branch`).
    pub reset: Option<Sha>,
}

impl Applied {
    /// `state`, and the next phase runs as usual.
    pub fn run(state: State) -> Applied {
        Applied {
            state,
            then: Then::Run,
            note: None,
            reset: None,
        }
    }

    /// `state`, and nothing runs until a person answers; `message` says what to do.
    pub fn halt(state: State, message: String) -> Applied {
        Applied {
            then: Then::Halt(message),
            ..Applied::run(state)
        }
    }

    /// The same, with the arbitration `note` recorded with the decision.
    pub fn noted(self, note: String) -> Applied {
        Applied {
            note: Some(note),
            ..self
        }
    }
}

/// Why a decision does not apply now. The run is unchanged. (A variant's fields name where the
/// run is, the answer given, the signal that stopped the loop, the stalled role.)
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Refusal {
    /// The run is done (a comment's command; the CLI's `approve`/`arbitrate` say which wait is
    /// missing instead).
    Done,
    /// `approve`, but the run is not at `approval`.
    NotAtApproval { phase: Phase },
    /// An arbitration answer, but no arbitration waits.
    NoArbitration { answer: Answer, phase: Phase },
    /// `continue` while the spec waits for approval: only `approve` goes on.
    AwaitsApproval,
    /// `draft` once the pull request is being written.
    PrUnderway { phase: Phase },
    /// `swap` after a stall no agent can fix.
    NothingToSwap { signal: Signal },
    /// `swap`, but the role has no opposite agent.
    NoOpposite { role: Role },
    /// `swap` while a confirmed dispute waits: no agent stalled.
    DisputeWaits,
    /// The state does not say which signal stopped the loop (`waiting.signal` missing and no
    /// `ask` arbitration records it): the state is inconsistent, and the caller reports it as
    /// a state error with the file's path, not as a reply.
    SignalUnknown { lp: Phase },
}

impl Refusal {
    /// The reply to a `/spec-orchestrate` comment.
    pub fn reply(&self) -> String {
        match self {
            Refusal::Done => "this run is done; there is nothing left to steer".into(),
            Refusal::NotAtApproval { phase } => {
                format!("nothing waits for approval: the run is at {phase}")
            }
            Refusal::NoArbitration { answer, .. } => {
                format!("`{answer}` answers a stalled loop; nothing is waiting for an arbitration")
            }
            Refusal::AwaitsApproval => {
                "the spec waits for approval: comment `/spec-orchestrate approve` to go on".into()
            }
            Refusal::PrUnderway { phase } => {
                format!("the run is already at {phase}; the pull request is being written")
            }
            Refusal::NothingToSwap { signal } => format!(
                "there is no role to swap after {signal} (nothing an agent can fix); answer continue, draft or approve"
            ),
            Refusal::NoOpposite { role } => format!(
                "{role} has no opposite agent to swap to; define another agent (or `opposite:`) in .specs/pipeline.yml, or answer continue, draft or approve"
            ),
            Refusal::DisputeWaits => "a disputed acceptance case waits: answer approve (the case goes back to the spec), continue (the case stands and the fix loop goes on) or draft".into(),
            Refusal::SignalUnknown { lp } => format!(
                "`waiting.signal` is missing and no `ask` arbitration of {lp} records it: the signal that stopped the loop is unknown, so the answer cannot tell which loop to resume"
            ),
        }
    }

    /// The error a CLI command for the run of `feature` (state file `path`) ends with: a usage
    /// error saying what does apply (the comment's reply, but for the waits the command names),
    /// or, for a state that cannot be answered, a state error naming the file.
    pub fn into_error(self, feature: &str, path: &std::path::Path) -> crate::error::Error {
        let status = "`spec-orchestrate status` shows where it is";
        let message = match &self {
            Refusal::SignalUnknown { .. } => {
                return crate::error::Error::State {
                    path: path.to_path_buf(),
                    problem: self.reply(),
                    help: Self::SIGNAL_HELP.into(),
                };
            }
            Refusal::Done => {
                format!("`{feature}` is at phase done, not waiting for approval; {status}")
            }
            Refusal::NotAtApproval { phase } => {
                format!("`{feature}` is at phase {phase}, not waiting for approval; {status}")
            }
            Refusal::NoArbitration { phase, .. } => {
                format!("`{feature}` is not waiting for an arbitration (phase {phase}); {status}")
            }
            _ => self.reply(),
        };
        crate::error::Error::usage(message)
    }

    /// How to repair the state of a [`Refusal::SignalUnknown`].
    pub const SIGNAL_HELP: &'static str = "add the signal (S1, S2, S3, S4, AGENT_FAILURE, BLOCKED or RUBRIC_PLATEAU) as `waiting.signal`, or delete the feature directory to start over";

    /// The problem of a [`Refusal::SignalUnknown`], for the state error.
    pub fn inconsistency(&self) -> Option<String> {
        matches!(self, Refusal::SignalUnknown { .. }).then(|| self.reply())
    }
}

/// The decision a `/spec-orchestrate` comment word stands for: while an arbitration waits, every
/// word but `stop` answers it; otherwise `swap` (an arbitration answer) finds none to answer.
pub fn from_comment(word: Answer, stop: bool, state: &State) -> PersonCommand {
    let arbitration = matches!(
        waiting_kind(state),
        Some(WaitKind::Arbitration | WaitKind::Dispute)
    );
    match (stop, word) {
        (true, _) => PersonCommand::Stop,
        (false, w) if arbitration => PersonCommand::Arbitrate(w),
        (false, Answer::Approve) => PersonCommand::Approve,
        (false, Answer::Continue) => PersonCommand::Continue,
        (false, Answer::Draft) => PersonCommand::Draft,
        (false, Answer::Swap) => PersonCommand::Arbitrate(Answer::Swap),
    }
}

fn waiting_kind(state: &State) -> Option<WaitKind> {
    state.waiting.as_ref().map(|w| w.kind)
}

/// Applies `command` from `by` (a login, or the local user) to `state`. `config` names the
/// agents a swap can move a role to.
pub fn answer(
    state: &State,
    config: &Config,
    command: PersonCommand,
    by: &str,
) -> Result<Applied, Refusal> {
    let mut s = state.clone();
    let run = Applied::run;
    let arbitrating = waiting_kind(&s) == Some(WaitKind::Arbitration);
    let dispute = waiting_kind(&s) == Some(WaitKind::Dispute);
    match command {
        // While a confirmed dispute waits, `approve`, `continue` and `draft` answer it.
        PersonCommand::Arbitrate(a) if dispute => decide_dispute(s, a, by),
        PersonCommand::Approve if dispute => decide_dispute(s, Answer::Approve, by),
        PersonCommand::Continue if dispute => decide_dispute(s, Answer::Continue, by),
        PersonCommand::Draft if dispute => decide_dispute(s, Answer::Draft, by),
        PersonCommand::Arbitrate(a) => arbitrate(s, config, a, by),
        // While an arbitration waits, going on and landing a draft are its answers.
        PersonCommand::Continue if arbitrating => arbitrate(s, config, Answer::Continue, by),
        PersonCommand::Draft if arbitrating => arbitrate(s, config, Answer::Draft, by),
        PersonCommand::Approve if s.phase() == Phase::Approval => {
            s.approval = Some(Approval {
                by: by.to_string(),
                ts: util::now(),
            });
            s.waiting = None;
            Ok(run(s))
        }
        PersonCommand::Approve => Err(Refusal::NotAtApproval { phase: s.phase() }),
        PersonCommand::Continue if waiting_kind(&s) == Some(WaitKind::Approval) => {
            Err(Refusal::AwaitsApproval)
        }
        PersonCommand::Continue => {
            s.waiting = None;
            Ok(run(s))
        }
        PersonCommand::Draft if matches!(s.phase(), Phase::Pr | Phase::Retrospective) => {
            Err(Refusal::PrUnderway { phase: s.phase() })
        }
        PersonCommand::Draft => {
            let who = format!("@{by}");
            let phase = s.phase();
            let lp = loop_of(phase);
            let note = format!("{who} asked for a draft at {phase}");
            let record = arbitration(
                (lp, last_round(&s, lp)),
                Signal::Manual,
                Decision::Draft,
                note,
            );
            s.arbitrations.push(record);
            s.draft_reasons
                .push(format!("a draft was requested by {who} at {phase}"));
            s.mark_completed(phase);
            s.move_to(Phase::Pr);
            s.waiting = None;
            Ok(run(s))
        }
        PersonCommand::Stop => {
            let message = format!(
                "stopped by @{by} at {}; comment `/spec-orchestrate continue` to resume",
                s.phase()
            );
            // A stop during an arbitration keeps the question: `continue` then resumes the wait.
            if !matches!(
                waiting_kind(&s),
                Some(WaitKind::Arbitration | WaitKind::Dispute)
            ) {
                let choices = vec![Answer::Continue];
                s.waiting = Some(waiting(WaitKind::Stopped, message.clone(), choices));
            }
            Ok(Applied::halt(s, message))
        }
    }
}

/// A person's answer to a confirmed dispute of a failed case (manual mode): `approve` sends the
/// case back to the spec author (an open finding on `test.md`, then the spec loop), `continue`
/// keeps the case and the fix loop (evaluate runs again), `draft` lands a draft. `swap` does not
/// apply: no agent stalled.
fn decide_dispute(mut s: State, answer: Answer, by: &str) -> Result<Applied, Refusal> {
    let waiting = crate::review::dispute::waiting(&s);
    let cases: Vec<&str> = waiting
        .iter()
        .map(|i| s.disputes[*i].case.as_str())
        .collect();
    let cases = format!("the disputed case(s) {}", cases.join(", "));
    let (end, next, note) = match answer {
        Answer::Approve => {
            s.open_findings = crate::review::dispute::findings_for_spec(&s);
            let note = format!("{by} sent {cases} back to the spec author");
            (DisputeEnd::Spec, Phase::SpecGenerate, note)
        }
        Answer::Continue => {
            let note = format!("{by} kept {cases}: the fix loop goes on");
            (DisputeEnd::FixLoop, Phase::Evaluate, note)
        }
        Answer::Draft => {
            let reason = format!("{cases} were left for a person; {by} chose a draft");
            s.draft_reasons.push(reason);
            s.mark_completed(Phase::Implement);
            let note = format!("{by} chose a draft over {cases}");
            (DisputeEnd::Draft, Phase::Pr, note)
        }
        Answer::Swap => return Err(Refusal::DisputeWaits),
    };
    for i in waiting {
        s.disputes[i].end = end;
        s.disputes[i].decided_by = Some(by.to_string());
    }
    s.waiting = None;
    s.move_to(next);
    Ok(Applied::run(s).noted(note))
}

/// The signal that stopped the loop the run waits on. A state written before waits recorded
/// their signal has none; the `ask` arbitration recorded with the wait names the same signal,
/// so it is taken from there. With neither, the loop to resume is unknown and the answer is
/// refused rather than guessed (it used to be read as S1).
fn waited_signal(state: &State, waiting: &Waiting, lp: Phase) -> Result<Signal, Refusal> {
    if let Some(signal) = waiting.signal {
        return Ok(signal);
    }
    state
        .arbitrations
        .iter()
        .rev()
        .find(|a| a.phase == lp && a.decision == Decision::Ask)
        .map(|a| a.signal)
        .ok_or(Refusal::SignalUnknown { lp })
}

/// A person's answer to the arbitration the run waits on: recorded, and the phase to run next
/// set.
fn arbitrate(mut s: State, config: &Config, answer: Answer, by: &str) -> Result<Applied, Refusal> {
    let Some(waiting) = s
        .waiting
        .clone()
        .filter(|w| w.kind == WaitKind::Arbitration)
    else {
        return Err(Refusal::NoArbitration {
            answer,
            phase: s.phase(),
        });
    };
    let phase = waiting.phase.unwrap_or(s.phase());
    let lp = loop_of(phase);
    let signal = waited_signal(&s, &waiting, lp)?;
    let round = last_round(&s, lp);
    // Where "keep going" leads: the failed phase again, or the author/implementer with the
    // open findings.
    let go_on = match (lp, signal) {
        (_, Signal::AgentFailure) => phase,
        (Phase::Evaluate, Signal::Blocked) => Phase::Evaluate,
        (Phase::Evaluate, _) => Phase::Implement,
        _ => Phase::SpecGenerate,
    };
    let mut record = arbitration((lp, round), signal, answer.into(), String::new());
    let next = match answer {
        Answer::Continue => {
            record.note = format!(
                "{by} chose to continue {lp} with the same agents; the stall window restarts after round {round}"
            );
            go_on
        }
        Answer::Swap => {
            let Some((role, rerun)) = stalled_role(&s, phase, signal) else {
                return Err(Refusal::NothingToSwap { signal });
            };
            let reason = format!("arbitration after {signal}, chosen by {by}");
            let Some((current, to)) = swap(&mut s, config, role, reason) else {
                return Err(Refusal::NoOpposite { role });
            };
            record.note = format!("{by} swapped {role} from {current} to {to}");
            record.from = Some(current.into());
            record.to = Some(to.into());
            if signal == Signal::AgentFailure {
                phase
            } else {
                rerun
            }
        }
        Answer::Draft => {
            record.note = format!("{by} chose to land a draft after {signal} in {lp}");
            s.draft_reasons.push(format!(
                "{lp} stalled ({signal}) after round {round}; {by} chose a draft"
            ));
            s.mark_completed(phase);
            Phase::Pr
        }
        Answer::Approve if lp == Phase::SpecReview => {
            record.note = approve_spec(&mut s, by);
            Phase::Approval
        }
        Answer::Approve => {
            record.note = format!(
                "{by} accepted the acceptance result as it is; the PR lists what is unresolved"
            );
            s.mark_completed(phase);
            Phase::Pr
        }
    };
    let note = record.note.clone();
    s.arbitrations.push(record);
    s.waiting = None;
    s.move_to(next);
    Ok(Applied::run(s).noted(note))
}

/// A person approves the spec as it is at a spec-review arbitration: the open findings are
/// accepted (named by fingerprint prefix in the returned note) and the review completed.
fn approve_spec(s: &mut State, by: &str) -> String {
    let open: Vec<String> = s
        .open_findings
        .iter()
        .map(|f| {
            f.fingerprint
                .as_deref()
                .map(|h| h.get(..12).unwrap_or(h).to_string())
                .unwrap_or_default()
        })
        .collect();
    let note = format!(
        "{by} approved the spec as it is, accepting {} open finding(s){}",
        open.len(),
        if open.is_empty() {
            String::new()
        } else {
            format!(": {}", open.join(", "))
        }
    );
    s.open_findings.clear();
    s.restructure = None;
    s.approval = Some(Approval {
        by: by.to_string(),
        ts: util::now(),
    });
    s.mark_completed(Phase::SpecReview);
    note
}

/// Takes a person's `review` of the finished run as its next round (the CLI's `revise
/// --feedback` and a pull request review in Action mode both come here): the round is recorded,
/// and the run set to work on it — a fix task `REV<n>` for the code comments (run by
/// `implement`), the spec loop for spec comments (their findings handed to `spec_generate`).
/// The stall window is the rounds since the last swap, and this one: the first stall gives the
/// fix task to the opposite agent, the next one stops the round, recorded with every comment
/// open ([`Then::Halt`] with the ending), and the run stays where it is.
pub fn take_round(state: &State, config: &Config, review: Review) -> Applied {
    let mut s = state.clone();
    let mut round = PrReviewRound {
        round: review.round,
        from: review.from,
        status: RoundStatus::Running,
        items: review.items,
        task: None,
        signal: None,
        swapped: false,
        implementer_answer: None,
        answers: Vec::new(),
        ending: String::new(),
        spec_baseline: Default::default(),
        reimplemented: None,
        reimplement_base: None,
        posted: Default::default(),
    };
    let earlier = &s.rounds.pr_review;
    let since = earlier.iter().rposition(|r| r.swapped).map_or(0, |i| i + 1);
    let mut window: Vec<_> = earlier[since..].iter().map(feedback::view).collect();
    window.push(feedback::view(&round));
    if let Some(signal) = crate::review::stall::detect(&window) {
        round.signal = Some(signal);
        if earlier.iter().any(|r| r.swapped) {
            let message = stop_round(&mut round, signal);
            s.rounds.pr_review.push(round);
            return Applied::halt(s, message);
        }
        round.swapped = true;
    }
    let n = round.round;
    if round.items.iter().any(|i| i.target == Target::Code) {
        let id = format!("REV{n}");
        let title = format!("Answer review round {n}");
        let task = new_task(&s, config, (&id, &title), review.kind, round.swapped);
        s.tasks.retain(|t| t.id != id);
        s.tasks.push(task);
        round.task = Some(id);
    }
    let spec: Vec<_> = round
        .items
        .iter()
        .filter(|i| i.target == Target::Spec)
        .map(|i| i.finding.clone())
        .collect();
    let phase = if spec.is_empty() {
        Phase::Implement
    } else {
        s.open_findings = spec;
        round.spec_baseline = review.baseline;
        Phase::SpecGenerate
    };
    s.move_to(phase);
    s.waiting = None;
    s.draft_reasons.clear();
    s.rounds.pr_review.push(round);
    Applied::run(s)
}

/// A round stopped by `signal` after the fix task already went to the other agent: every
/// comment stays open, listed for a person; returns the ending.
fn stop_round(round: &mut PrReviewRound, signal: Signal) -> String {
    let open: Vec<String> = round
        .items
        .iter()
        .map(|i| format!("{} ({})", i.finding.id, i.place()))
        .collect();
    round.status = RoundStatus::Stopped;
    round.ending = format!(
        "Stopped by {signal} after the fix task was already given to the other agent: these comments keep coming back and stay open for a person: {}.",
        open.join(", ")
    );
    let reason = format!(
        "the same comments keep coming back ({signal}) after the other agent tried, so this round stops here for a person to decide"
    );
    round.answers = round
        .items
        .iter()
        .map(|i| {
            (
                i.finding.id.clone(),
                ReviewAnswer::Open {
                    reason: reason.clone(),
                },
            )
        })
        .collect();
    round.ending.clone()
}

/// The run waits at `pr` because the forge refused to open the pull request (`message` says
/// which setting or token): `pr` is no longer completed, and `continue` runs it again.
pub fn wait_for_pr_permission(state: &mut State, message: String) {
    state.completed_phases.retain(|p| *p != Phase::Pr);
    state.move_to(Phase::Pr);
    let choices = vec![Answer::Continue];
    state.waiting = Some(waiting(WaitKind::PrPermission, message, choices));
}

#[cfg(test)]
mod tests;
