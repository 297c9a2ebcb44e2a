//! Runs the crate's unit tests start from.

use super::{IssueRef, Mode, State, Waiting};
use crate::types::kinds::WaitKind;
use crate::types::{Phase, Signal};

/// A run of feature `f` for an issue with neither number nor title.
pub(crate) fn blank(mode: Mode) -> State {
    State::new("f", IssueRef::default(), mode)
}

/// A run of `feature` for issue #`number` titled `title`, at `phase`.
pub(crate) fn at(feature: &str, number: u64, title: &str, mode: Mode, phase: Phase) -> State {
    let mut s = State::new(
        feature,
        IssueRef {
            number: Some(number.into()),
            title: title.into(),
            ..IssueRef::default()
        },
        mode,
    );
    s.move_to(phase);
    s
}

/// A manual run of issue #1 at `phase`, waiting as `kind` (an arbitration after S1 at its loop).
pub(crate) fn waiting_at(phase: Phase, kind: Option<WaitKind>) -> State {
    let mut s = at("f", 1, "t", Mode::Manual, phase);
    s.waiting = kind.map(|kind| Waiting {
        kind,
        message: "m".into(),
        choices: vec![],
        phase: (kind == WaitKind::Arbitration).then_some(phase),
        signal: (kind == WaitKind::Arbitration).then_some(Signal::S1),
    });
    s
}
