//! `revise`: a person's review of the finished run, taken as one more verified round on the
//! local checkout (docs/action-mode.md, "After the pull request"; the same round the Action
//! runs for a pull request review).

use std::path::PathBuf;

use super::{Exit, drive_and_report};
use crate::error::{Error, Result};
use crate::machine::StopAt;
use crate::machine::answer::{Then, take_round};
use crate::review::feedback::{self, Review};
use crate::state::pr_review::RoundStatus;
use crate::types::Phase;

/// Arguments of `revise`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReviseRequest {
    /// The review: `## path:line` headings, one per comment; free text for the whole change.
    #[arg(long)]
    pub feedback: Option<PathBuf>,
    /// Who wrote the review (the comments' source).
    #[arg(long, default_value = "reviewer")]
    pub by: String,
    /// The run the round is for.
    #[command(flatten)]
    pub at: super::Target,
}

/// `revise --feedback FILE`: takes the file's comments as the next review round of a finished
/// run and drives the run through it; `revise` alone continues the round in flight (after a
/// stop or a wait). Never two rounds in flight at once.
pub fn revise(req: &ReviseRequest) -> Result<Exit> {
    let mut ctx = req.at.open()?;
    let dir = ctx.feature_dir().to_path_buf();
    match (ctx.state.rounds.review_running(), req.feedback.as_deref()) {
        (Some(r), Some(_)) => {
            return Err(Error::usage(format!(
                "review round {} of {} is still in flight; finish it first with `spec-orchestrate revise` (no --feedback), then give the new feedback",
                r.round, ctx.state.feature
            )));
        }
        (Some(_), None) => {}
        (None, None) => {
            return Err(Error::usage(
                "no review round is in flight: pass the review as --feedback FILE.md (one `## path:line` heading per comment, or free text for the whole change)",
            ));
        }
        (None, Some(file)) => {
            if ctx.state.phase() != Phase::Done {
                return Err(Error::usage(format!(
                    "the run of {} is at {}, not done: a review round starts after the pull request; finish the run with `spec-orchestrate resume` first",
                    ctx.state.feature,
                    ctx.state.phase()
                )));
            }
            let bytes = crate::fsx::read_following_max(file, crate::fsx::Limit::SpecDoc)?;
            let text = String::from_utf8_lossy(&bytes);
            let comments = feedback::parse_file(&text, &req.by);
            if comments.is_empty() {
                return Err(Error::Input {
                    path: file.to_path_buf(),
                    problem: "holds no comment: write `## path:line` followed by the comment, or free text for the whole change".into(),
                });
            }
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let review = Review::gather(
                &dir,
                &ctx.spec_rel(),
                ctx.state.rounds.next_review(),
                &format!("feedback file {name}"),
                &comments,
            );
            let applied = take_round(&ctx.state, &ctx.config, review);
            ctx.state = applied.state;
            ctx.save()?;
            match applied.then {
                Then::Run => super::note(format!(
                    "review round taken: {} comment(s) from {name}, starting at {}",
                    comments.len(),
                    ctx.state.phase()
                )),
                Then::Halt(message) => {
                    if let Some(stopped) = ctx.state.rounds.pr_review.last() {
                        crate::phases::revise::write_answers(&dir, stopped)?;
                    }
                    crate::events::emit(crate::events::Event::Stopped {
                        message,
                        pr: String::new(),
                    });
                    return Ok(Exit::Failed);
                }
            }
        }
    }
    let exit = drive_and_report(&mut ctx, StopAt::End)?;
    // The `pr` phase answered the round; a round still running did not reach it.
    if ctx.state.phase() == Phase::Done
        && let Some(round) = ctx.state.rounds.pr_review.last()
        && round.status != RoundStatus::Running
    {
        super::note(format!(
            "review round {} answered: {}",
            round.round,
            dir.join(format!("review-round-{}.md", round.round))
                .display()
        ));
    }
    Ok(exit)
}
