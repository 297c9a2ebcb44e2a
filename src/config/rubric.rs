//! The screenshot rubric (`evaluate.rubric`): criteria with a weight, a definition the scorer
//! reads, and an optional pass threshold of their own, beside the weighted pass mark.
//!
//! A criterion is written either as its weight alone (`design: 3`, the preset's definition) or
//! as a mapping (`design: { weight: 3, pass: 6, definition: "…" }`). Four names have preset
//! definitions ([`PRESETS`]); any other criterion must carry its own, because a scorer given a
//! bare word ("polish") scores its own idea of it, and two rounds scored by different agents
//! would not be comparable.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The preset criteria and their definitions, after the four criteria of a frontend-design
/// grading rubric: what each means and what a low score looks like, so the scorer has
/// something to hold each screenshot against.
pub const PRESETS: [(&str, &str); 4] = [
    (
        "design",
        "the page reads as one coherent whole: a clear visual hierarchy, consistent spacing, alignment, type scale and colour, and a layout that guides the eye to the primary action; low: elements fight for attention, spacing and alignment vary at random, or it looks assembled from unrelated parts",
    ),
    (
        "originality",
        "deliberate choices made for this product rather than framework defaults: a considered palette, typography and composition; low: an unmodified template, stock component-library styling, or generic placeholder look",
    ),
    (
        "craft",
        "the execution is finished: nothing overlaps, is clipped, misaligned or unreadable; contrast is sufficient; states (hover, focus, empty, error) look intended; low: visible glitches, broken layout, unstyled elements or illegible text",
    ),
    (
        "functionality",
        "what the issue asks for is visibly there and usable in the screenshots: the controls exist, are labelled, and their outcome is shown; low: a requested control or result is missing, hidden, or its state cannot be told from the page",
    ),
];

/// The definition of a preset criterion, if `name` is one.
pub fn preset(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

/// Weighted criteria and a pass threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rubric {
    /// Criterion → its weight, definition and own threshold.
    pub criteria: BTreeMap<String, Criterion>,
    /// Weighted score (0–10) needed to pass. Never shown to the scorer.
    pub pass: f64,
}

impl Rubric {
    /// The sum of the weights (the weighted mean's divisor).
    pub fn total_weight(&self) -> f64 {
        self.criteria.values().map(|c| c.weight).sum()
    }

    /// The weighted mean of `scores` (a criterion missing from it counts 0), rounded to
    /// hundredths.
    pub fn weighted(&self, scores: &BTreeMap<String, f64>) -> f64 {
        let sum: f64 = self
            .criteria
            .iter()
            .map(|(k, c)| c.weight * scores.get(k).copied().unwrap_or(0.0))
            .sum();
        ((sum / self.total_weight()) * 100.0).round() / 100.0
    }

    /// The criteria whose score is below their own threshold: (name, score, threshold).
    pub fn below_threshold(&self, scores: &BTreeMap<String, f64>) -> Vec<(String, f64, f64)> {
        self.criteria
            .iter()
            .filter_map(|(k, c)| {
                let pass = c.pass?;
                let s = scores.get(k).copied().unwrap_or(0.0);
                (s < pass).then(|| (k.clone(), s, pass))
            })
            .collect()
    }

    /// The definition the scorer reads for `name`: its own, else the preset's.
    pub fn definition<'a>(&'a self, name: &str) -> Option<&'a str> {
        let own = self.criteria.get(name)?.definition.as_deref();
        own.or_else(|| preset(name))
    }
}

/// One criterion of the rubric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Criterion {
    /// Weight in the weighted mean (positive).
    pub weight: f64,
    /// What the criterion means and what a low score looks like; `None`: the preset's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// The lowest score (0–10) of this criterion that passes, whatever the weighted mean.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass: Option<f64>,
}

/// The mapping form of a criterion, read with unknown keys refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CriterionMap {
    #[serde(default = "one")]
    weight: f64,
    definition: Option<String>,
    pass: Option<f64>,
}

fn one() -> f64 {
    1.0
}

impl<'de> Deserialize<'de> for Criterion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Criterion;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a weight (a number) or a mapping with `weight`, `definition`, `pass`")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Criterion, E> {
                Ok(Criterion {
                    weight: v,
                    definition: None,
                    pass: None,
                })
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Criterion, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Criterion, E> {
                self.visit_f64(v as f64)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Criterion, A::Error> {
                let m =
                    CriterionMap::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(Criterion {
                    weight: m.weight,
                    definition: m.definition,
                    pass: m.pass,
                })
            }
        }
        d.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_weight_alone_and_a_mapping_both_read_and_presets_define_the_four_names() {
        let r: Rubric = serde_json::from_str(
            r#"{"criteria": {"design": 3, "polish": {"weight": 1, "pass": 6, "definition": "no rough edges"}}, "pass": 7}"#,
        )
        .unwrap();
        assert_eq!(r.criteria["design"].weight, 3.0);
        assert_eq!(r.definition("design"), preset("design"));
        assert_eq!(r.definition("polish"), Some("no rough edges"));
        let scores = [("design".to_string(), 9.0), ("polish".to_string(), 5.0)].into();
        assert_eq!(r.weighted(&scores), 8.0);
        // The mean passes (8 ≥ 7) but polish is below its own threshold.
        assert_eq!(
            r.below_threshold(&scores),
            [("polish".to_string(), 5.0, 6.0)]
        );
        for name in ["design", "originality", "craft", "functionality"] {
            assert!(preset(name).is_some_and(|d| d.contains("low:")), "{name}");
        }
        assert!(
            serde_json::from_str::<Rubric>(r#"{"criteria": {"x": {"wieght": 1}}, "pass": 7}"#)
                .is_err()
        );
    }
}
