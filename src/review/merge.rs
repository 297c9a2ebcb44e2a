//! Merging the envelopes of several critics into one review that keeps attribution.
//!
//! A panel, a debate and the contract reviewer all produce several envelopes for one round. The
//! gate needs one set of findings (the same complaint raised twice is one finding), while people
//! reading the review need to know who raised what and where the critics disagree. The merged
//! review is rendered as Must Address (critical) / Should Consider (improvement) / Minor /
//! Points of Disagreement, every item naming its critics.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::envelope::Envelope;
use super::fingerprint::collapse_ws;
use crate::types::{Finding, Severity};

/// A finding and the critics that raised it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attributed {
    /// The finding (with fingerprint and class key).
    #[serde(flatten)]
    pub finding: Finding,
    /// Critics that raised it (`architect`, `A`, `e2e_runner`, …), in the order they answered.
    pub raised_by: Vec<String>,
}

/// One critic's position at a contested place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Position {
    pub by: String,
    pub severity: Severity,
    pub gist: String,
}

/// A place (file + section) where critics gave different severities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Disagreement {
    /// File as written by the first critic.
    pub file: String,
    /// Section as written by the first critic.
    pub section: String,
    pub class_key: String,
    pub positions: Vec<Position>,
}

/// The merged review of one round (or of one stand-alone review).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MergedReview {
    /// `single`, `panel` or `debate`.
    pub strategy: String,
    /// Critics whose answers were used.
    pub members: Vec<String>,
    /// Critics that failed and were skipped, with the reason.
    pub skipped: Vec<String>,
    /// Deduplicated findings, most severe first.
    pub findings: Vec<Attributed>,
    /// Places where critics disagree on severity.
    pub disagreements: Vec<Disagreement>,
    /// Extra lines for the reader (classification, debate outcome, judge decisions).
    pub notes: Vec<String>,
    /// Whether every member said it was converged.
    pub converged: bool,
    /// Disputes left open (debate).
    pub remaining_disputes: Vec<String>,
}

impl MergedReview {
    /// Merges `sources` (critic, envelope with fingerprints); `skipped` lists failed critics.
    pub fn merge(
        strategy: &str,
        sources: Vec<(String, Envelope)>,
        skipped: Vec<String>,
    ) -> MergedReview {
        let mut merged = MergedReview {
            strategy: strategy.to_string(),
            skipped,
            converged: true,
            ..MergedReview::default()
        };
        for (who, env) in sources {
            merged.add(&who, env);
        }
        merged
    }

    /// Adds one critic's envelope (used for the contract reviewer after the main strategy).
    pub fn add(&mut self, who: &str, env: Envelope) {
        if !self.members.iter().any(|m| m == who) {
            self.members.push(who.to_string());
        }
        self.converged &= env.converged;
        // A finding dropped from the answer is said in the review, beside the ones kept.
        for line in &env.dropped {
            self.notes.push(format!("{who}: {line}"));
        }
        for d in env.remaining_disputes {
            if !self.remaining_disputes.contains(&d) {
                self.remaining_disputes.push(d);
            }
        }
        for finding in env.findings {
            let raised_by = vec![who.to_string()];
            absorb(&mut self.findings, Attributed { finding, raised_by });
        }
        // Most severe first; the order of arrival otherwise (stable sort).
        self.findings.sort_by_key(|a| a.finding.severity);
        self.disagreements = disagreements(&self.findings);
    }

    /// Merges findings that share a fingerprint again (after [`super::fingerprint::carry_over`]
    /// gave two re-raises of one earlier finding the same one): the first keeps its place and
    /// gains the other's critics.
    pub fn dedupe(&mut self) {
        let mut kept: Vec<Attributed> = Vec::new();
        for a in std::mem::take(&mut self.findings) {
            absorb(&mut kept, a);
        }
        self.findings = kept;
        self.disagreements = disagreements(&self.findings);
    }

    /// The envelope the gate and the stall detector see: every distinct finding once.
    pub fn envelope(&self) -> Envelope {
        Envelope {
            findings: self.findings.iter().map(|a| a.finding.clone()).collect(),
            converged: self.converged,
            remaining_disputes: self.remaining_disputes.clone(),
            dropped: Vec::new(),
        }
    }

    /// Renders the review for people: header, the three severity sections, the disagreements.
    pub fn render_markdown(&self, title: &str) -> String {
        let mut s = format!("# {title}\n\n");
        let _ = writeln!(
            s,
            "Strategy: {}. Reviewed by: {}.",
            self.strategy,
            if self.members.is_empty() {
                "nobody".to_string()
            } else {
                self.members.join(", ")
            }
        );
        if !self.skipped.is_empty() {
            let _ = writeln!(s, "\nSkipped (failed, not counted):");
            for k in &self.skipped {
                let _ = writeln!(s, "- {}", collapse_ws(k));
            }
        }
        for n in &self.notes {
            let _ = writeln!(s, "\n{n}");
        }
        for (heading, severity) in [
            ("Must Address", Severity::Critical),
            ("Should Consider", Severity::Improvement),
            ("Minor", Severity::Minor),
        ] {
            let items: Vec<&Attributed> = self
                .findings
                .iter()
                .filter(|a| a.finding.severity == severity)
                .collect();
            let _ = writeln!(s, "\n## {heading} ({})\n", items.len());
            if items.is_empty() {
                s.push_str("None.\n");
            }
            for a in items {
                let f = &a.finding;
                let mut place = String::new();
                if !f.file.is_empty() {
                    let _ = write!(place, " `{}`", collapse_ws(&f.file));
                }
                if !f.section.is_empty() {
                    let _ = write!(place, " § {}", collapse_ws(&f.section));
                }
                let req = if f.requirement_id.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", f.requirement_id)
                };
                let _ = writeln!(
                    s,
                    "- {}{req}{place}: {} — raised by {} · `{}`",
                    f.id,
                    collapse_ws(&f.gist),
                    a.raised_by.join(", "),
                    f.fingerprint
                        .as_deref()
                        .map(|h| &h[..12.min(h.len())])
                        .unwrap_or("")
                );
                if !f.argument.trim().is_empty() {
                    let _ = writeln!(s, "  - Why: {}", collapse_ws(&f.argument));
                }
                if !f.suggestion.trim().is_empty() {
                    let _ = writeln!(s, "  - Fix: {}", collapse_ws(&f.suggestion));
                }
            }
        }
        let _ = writeln!(
            s,
            "\n## Points of Disagreement ({})\n",
            self.disagreements.len()
        );
        if self.disagreements.is_empty() {
            s.push_str("None.\n");
        }
        for d in &self.disagreements {
            let positions: Vec<String> = d
                .positions
                .iter()
                .map(|p| {
                    format!(
                        "{} says {} (\"{}\")",
                        p.by,
                        p.severity.as_str(),
                        collapse_ws(&p.gist)
                    )
                })
                .collect();
            let _ = writeln!(
                s,
                "- `{}` § {}: {}",
                collapse_ws(&d.file),
                collapse_ws(&d.section),
                positions.join("; ")
            );
        }
        s
    }
}

/// Adds `a` to `findings`, or its critics to the finding there with the same fingerprint.
fn absorb(findings: &mut Vec<Attributed>, a: Attributed) {
    let fingerprint = &a.finding.fingerprint;
    match findings
        .iter_mut()
        .find(|k| fingerprint.is_some() && k.finding.fingerprint == *fingerprint)
    {
        Some(k) => {
            for who in a.raised_by {
                if !k.raised_by.contains(&who) {
                    k.raised_by.push(who);
                }
            }
        }
        None => findings.push(a),
    }
}

/// Places where at least two critics raised findings with different severities.
fn disagreements(items: &[Attributed]) -> Vec<Disagreement> {
    // By class key, in the order each place first appears.
    let mut places: Vec<(String, Vec<&Attributed>)> = Vec::new();
    for a in items {
        let key = a.finding.class_key.clone().unwrap_or_default();
        match places.iter_mut().find(|(k, _)| *k == key) {
            Some((_, group)) => group.push(a),
            None => places.push((key, vec![a])),
        }
    }
    let mut out = Vec::new();
    for (key, group) in places {
        let positions: Vec<Position> = group
            .iter()
            .flat_map(|a| {
                a.raised_by.iter().map(|who| Position {
                    by: who.clone(),
                    severity: a.finding.severity,
                    gist: a.finding.gist.clone(),
                })
            })
            .collect();
        let critics: std::collections::BTreeSet<&str> =
            positions.iter().map(|p| p.by.as_str()).collect();
        let severities: std::collections::BTreeSet<Severity> =
            positions.iter().map(|p| p.severity).collect();
        if critics.len() >= 2 && severities.len() >= 2 {
            out.push(Disagreement {
                file: group[0].finding.file.clone(),
                section: group[0].finding.section.clone(),
                class_key: key,
                positions,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(findings: &[(&str, &str, &str, &str)]) -> Envelope {
        let findings = findings
            .iter()
            .enumerate()
            .map(|(i, (sev, file, section, gist))| {
                serde_json::from_value(serde_json::json!({
                    "id": format!("F{}", i + 1), "severity": sev, "file": file,
                    "section": section, "gist": gist, "requirement_id": "REQ-001"
                }))
                .unwrap()
            })
            .collect();
        Envelope {
            findings,
            ..Envelope::default()
        }
        .with_fingerprints()
    }

    #[test]
    fn same_finding_twice_is_one_item_attributed_to_both() {
        let m = MergedReview::merge(
            "panel",
            vec![
                (
                    "architect".into(),
                    env(&[("critical", "design.md", "4. Cache", "No eviction")]),
                ),
                (
                    "paranoid".into(),
                    env(&[("Critical", "./design.md", "Cache", "no eviction")]),
                ),
                (
                    "simplifier".into(),
                    env(&[("minor", "design.md", "Cache", "Drop the cache")]),
                ),
            ],
            vec!["operator (agent_error: exited with 1)".into()],
        );
        assert_eq!(m.envelope().findings.len(), 2);
        assert_eq!(m.findings[0].raised_by, ["architect", "paranoid"]);
        assert_eq!(m.envelope().fix_required(), 1);
        assert_eq!(
            m.disagreements.len(),
            1,
            "critical vs minor at the same place"
        );
        let md = m.render_markdown("Panel review");
        for heading in [
            "## Must Address (1)",
            "## Should Consider (0)",
            "## Minor (1)",
            "## Points of Disagreement (1)",
        ] {
            assert!(md.contains(heading), "{heading}\n{md}");
        }
        assert!(md.contains("raised by architect, paranoid"), "{md}");
        assert!(md.contains("operator (agent_error"), "{md}");
        assert!(md.contains("simplifier says minor"), "{md}");
    }

    #[test]
    fn one_critic_with_two_severities_in_one_place_is_no_disagreement() {
        let m = MergedReview::merge(
            "single",
            vec![(
                "spec_reviewer".into(),
                env(&[
                    ("critical", "design.md", "Cache", "a"),
                    ("minor", "design.md", "Cache", "b"),
                ]),
            )],
            vec![],
        );
        assert!(m.disagreements.is_empty());
    }
}
