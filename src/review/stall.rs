//! Stall signals S1–S4 over a loop's round history (defined in `docs/reviews.md`).
//!
//! The review and evaluate loops have no round cap; these signals are what ends a loop that has
//! stopped making progress. They only look at fingerprints, class keys and counts recorded in
//! state, so the same history always yields the same verdict.

use std::collections::BTreeSet;

use crate::types::Signal;

/// What the detector needs of one round.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoundView {
    /// Fingerprints of fix-required findings (or failed cases).
    pub fingerprints: BTreeSet<String>,
    /// Class keys of the same findings.
    pub class_keys: BTreeSet<String>,
    /// Fix-required count.
    pub count: u32,
}

/// Evaluates the signals after the last round of `window` (the rounds since the last
/// arbitration). Needs at least three rounds; checks S1, S2, S3, then S4.
pub fn detect(window: &[RoundView]) -> Option<Signal> {
    let n = window.len();
    if n < 3 {
        return None;
    }
    let (a, b, c) = (&window[n - 3], &window[n - 2], &window[n - 1]);
    if c.fingerprints
        .iter()
        .any(|f| a.fingerprints.contains(f) && b.fingerprints.contains(f))
    {
        return Some(Signal::S1);
    }
    if a.count <= b.count && b.count <= c.count && c.count > 0 {
        return Some(Signal::S2);
    }
    if c.fingerprints == a.fingerprints && c.fingerprints != b.fingerprints {
        return Some(Signal::S3);
    }
    if c.class_keys
        .iter()
        .any(|k| a.class_keys.contains(k) && b.class_keys.contains(k))
    {
        return Some(Signal::S4);
    }
    None
}

/// The class key present in each of the last three rounds of `window` (what S4 saw), if any:
/// the place the author is told to restructure.
pub fn recurring_class_key(window: &[RoundView]) -> Option<String> {
    let n = window.len();
    if n < 3 {
        return None;
    }
    let (a, b, c) = (&window[n - 3], &window[n - 2], &window[n - 1]);
    c.class_keys
        .iter()
        .find(|k| a.class_keys.contains(*k) && b.class_keys.contains(*k))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(fps: &[&str], keys: &[&str], count: u32) -> RoundView {
        RoundView {
            fingerprints: fps.iter().map(|s| s.to_string()).collect(),
            class_keys: keys.iter().map(|s| s.to_string()).collect(),
            count,
        }
    }

    #[test]
    fn fewer_than_three_rounds_never_stall() {
        assert_eq!(detect(&[r(&["a"], &["k"], 1), r(&["a"], &["k"], 1)]), None);
    }

    #[test]
    fn s1_recurrence() {
        let w = [
            r(&["a", "b"], &[], 2),
            r(&["a", "c"], &[], 2),
            r(&["a"], &[], 1),
        ];
        assert_eq!(detect(&w), Some(Signal::S1));
    }

    #[test]
    fn s2_non_decreasing_counts() {
        let w = [r(&["a"], &[], 1), r(&["b"], &[], 2), r(&["c"], &[], 2)];
        assert_eq!(detect(&w), Some(Signal::S2));
    }

    #[test]
    fn s3_oscillation() {
        let w = [r(&["a"], &[], 3), r(&["b"], &[], 2), r(&["a"], &[], 1)];
        assert_eq!(detect(&w), Some(Signal::S3));
    }

    #[test]
    fn s4_same_place() {
        let w = [
            r(&["a"], &["k"], 3),
            r(&["b"], &["k"], 2),
            r(&["c"], &["k"], 1),
        ];
        assert_eq!(detect(&w), Some(Signal::S4));
    }

    #[test]
    fn progress_is_not_a_stall() {
        let w = [
            r(&["a", "b", "c"], &["k1"], 3),
            r(&["d"], &["k2"], 1),
            r(&[], &[], 0),
        ];
        assert_eq!(detect(&w), None);
        // Counts 2, 1, 1 went down and then held: not non-decreasing over the window.
        let w = [
            r(&["a", "b"], &["k1"], 2),
            r(&["c"], &["k2"], 1),
            r(&["d"], &["k3"], 1),
        ];
        assert_eq!(detect(&w), None);
        let w = [
            r(&["a"], &["k1"], 1),
            r(&["c"], &["k2"], 1),
            r(&["d"], &["k3"], 1),
        ];
        assert_eq!(
            detect(&w),
            Some(Signal::S2),
            "a count that stops going down is a stall"
        );
        let w = [
            r(&["a", "b"], &["k1"], 3),
            r(&["c"], &["k2"], 2),
            r(&["d"], &["k3"], 1),
        ];
        assert_eq!(detect(&w), None);
    }
}
