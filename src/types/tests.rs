//! The closed sets of this file keep the words they were written as; and the helpers every
//! closed set's test uses to say so.

use std::fmt::{Debug, Display};

use serde::Serialize;
use serde::de::DeserializeOwned;
use strum::VariantArray;

use super::*;

/// `value` serialises to the JSON string `word` and reads back as itself.
pub(crate) fn round_trips<T>(value: T, word: &str)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let json = serde_json::to_string(&value).unwrap();
    assert_eq!(json, format!("\"{word}\""), "{value:?}");
    let back: T = serde_json::from_str(&json).unwrap();
    assert_eq!(back, value);
}

/// A word outside the set is refused, never defaulted; the refusal's text.
pub(crate) fn refused<T: DeserializeOwned + Debug>(word: &str) -> String {
    serde_json::from_value::<T>(serde_json::Value::String(word.into()))
        .expect_err(word)
        .to_string()
}

/// Each of `values` (every variant, in order: `ALL` or strum's `VARIANTS`) round-trips through
/// the next of `words` (separated by spaces): the list is the spelling in the files, written
/// once.
pub(crate) fn keeps_words<T>(values: &[T], words: &str)
where
    T: Copy + Serialize + DeserializeOwned + PartialEq + Debug,
{
    let words: Vec<&str> = words.split(' ').collect();
    assert_eq!(values.len(), words.len(), "{words:?}");
    for (v, w) in values.iter().zip(words) {
        round_trips(*v, w);
    }
}

/// [`keeps_words`], the values print as those words, and `other` is refused naming it.
pub(crate) fn shows_words<T>(values: &[T], words: &str, other: &str)
where
    T: Copy + Serialize + DeserializeOwned + PartialEq + Debug + Display,
{
    keeps_words(values, words);
    assert_eq!(printed(values), words);
    assert!(refused::<T>(other).contains(other), "{other}");
}

/// The words of `values` as they print, separated by spaces.
pub(crate) fn printed<T: Copy + Display>(values: &[T]) -> String {
    spelled(values, |v| v)
}

/// The words `word` gives `values`, separated by spaces.
pub(crate) fn spelled<T: Copy, W: Display>(values: &[T], word: impl Fn(T) -> W) -> String {
    let words: Vec<String> = values.iter().map(|v| word(*v).to_string()).collect();
    words.join(" ")
}

/// The vocabulary of this file reads back as it was written, and its text forms (`as_str`,
/// `Display`) are the same words.
#[test]
fn phases_roles_severities_and_stops_keep_their_words() {
    let phases = "intake spec_generate inspect spec_review approval implement evaluate pr \
                  retrospective done";
    shows_words(&Phase::ALL, phases, "deploy");
    assert_eq!(spelled(&Phase::ALL, Phase::as_str), phases);
    let roles = "spec_author spec_reviewer impl_ui impl_backend impl_test e2e_runner judge";
    shows_words(&Role::ALL, roles, "implementer");
    assert_eq!(spelled(&Role::ALL, Role::as_str), roles);
    let severities = "critical improvement minor";
    keeps_words(Severity::VARIANTS, severities);
    assert_eq!(spelled(Severity::VARIANTS, Severity::as_str), severities);
    shows_words(StopKind::VARIANTS, "budget quota", "bored");
    assert_eq!(
        spelled(StopKind::VARIANTS, StopKind::as_str),
        "budget quota"
    );
}

/// Signals are written in state as the words they always were; `MANUAL` is one of them.
#[test]
fn signals_serialise_as_their_words_and_refuse_others() {
    let signals = "S1 S2 S3 S4 AGENT_FAILURE BLOCKED RUBRIC_PLATEAU MANUAL";
    shows_words(Signal::VARIANTS, signals, "S9");
}
