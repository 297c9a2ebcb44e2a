//! Classification of an issue (type, risk, scope) for `review.panel: auto`, and the choice of
//! personas it implies.
//!
//! A bug fix needs different critics than a new API: the classifier role answers with three
//! words and [`select`] turns them into 2–4 personas by a fixed table, or all six ("deep
//! review") for large scope or high risk. When the classifier cannot be used, the panel falls back
//! to the deep review, because being unsure about the risk is no reason to review less.

use super::calls::{self, CallEnv, CallLog, ReviewCall};
use super::envelope::json_candidate;
use crate::error::Result;
use crate::types::kinds::{CallRole, Persona};
use crate::types::{Classification, IssueType, Risk, Scope};

/// Parses a classifier answer: a JSON object `{"type", "risk", "scope"}` (fenced or bare);
/// values are matched case-insensitively with `_` or `-`.
pub fn parse(text: &str) -> std::result::Result<Classification, String> {
    let candidate = json_candidate(text, "type").ok_or("no JSON object found in the output")?;
    let value: serde_json::Value = serde_json::from_str(candidate)
        .map_err(|e| format!("the classification is not valid JSON: {e}"))?;
    let field = |key: &str| -> std::result::Result<serde_json::Value, String> {
        let raw = value
            .get(key)
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| format!("`{key}` is missing or not a string"))?;
        Ok(serde_json::Value::String(
            raw.trim().to_lowercase().replace('_', "-"),
        ))
    };
    let kind: IssueType = serde_json::from_value(field("type")?).map_err(|_| {
        "`type` must be one of bug-fix, small-feature, large-feature, refactor, infrastructure, api-change".to_string()
    })?;
    let risk: Risk = serde_json::from_value(field("risk")?)
        .map_err(|_| "`risk` must be one of low, medium, high".to_string())?;
    let scope: Scope = serde_json::from_value(field("scope")?)
        .map_err(|_| "`scope` must be one of trivial, small, medium, large".to_string())?;
    Ok(Classification {
        kind,
        risk,
        scope,
        by: String::new(),
        note: None,
    })
}

/// The personas for a classification: all six for large scope or high risk, otherwise 2–4 by
/// type, plus `paranoid` for medium risk and `architect` for medium scope (at most four).
pub fn select(c: &Classification) -> Vec<Persona> {
    use Persona::*;
    if c.scope == Scope::Large || c.risk == Risk::High {
        return Persona::ALL.to_vec();
    }
    let mut chosen = match c.kind {
        IssueType::BugFix => vec![Paranoid, Operator],
        IssueType::SmallFeature => vec![UserAdvocate, Simplifier],
        IssueType::LargeFeature => vec![Architect, UserAdvocate, ProductStrategist],
        IssueType::Refactor => vec![Architect, Simplifier],
        IssueType::Infrastructure => vec![Operator, Paranoid, Architect],
        IssueType::ApiChange => vec![Architect, Paranoid, UserAdvocate],
    };
    if c.risk == Risk::Medium && !chosen.contains(&Paranoid) {
        chosen.push(Paranoid);
    }
    if c.scope == Scope::Medium && !chosen.contains(&Architect) && chosen.len() < 4 {
        chosen.push(Architect);
    }
    chosen.truncate(4);
    Persona::ALL
        .into_iter()
        .filter(|p| chosen.contains(p))
        .collect()
}

/// Asks the `classifier` role (played by `agent`) and returns its classification, or the
/// deep-review fallback when it fails twice; the logs are for the caller to record.
pub fn classify(
    env: &CallEnv,
    agent: &str,
    prompt: String,
) -> Result<(Classification, Vec<CallLog>)> {
    let call = ReviewCall::new(CallRole::Classifier, agent, None, prompt);
    let env = env.with_follow_up(calls::FollowUp::new(
        env.follow_up.prompt.clone(),
        "the classification",
        crate::agents::text_roles::Output::Classification,
    ));
    let answer = calls::run_one(&env, call, &parse)?;
    let classification = match answer.result {
        Ok(mut c) => {
            c.by = agent.to_string();
            c
        }
        Err(reason) => Classification::fallback(&reason.to_string()),
    };
    Ok((classification, answer.logs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::VariantArray;

    fn c(kind: IssueType, risk: Risk, scope: Scope) -> Classification {
        Classification {
            kind,
            risk,
            scope,
            by: String::new(),
            note: None,
        }
    }

    #[test]
    fn large_scope_or_high_risk_is_a_deep_review() {
        assert_eq!(
            select(&c(IssueType::BugFix, Risk::High, Scope::Trivial)).len(),
            6
        );
        assert_eq!(
            select(&c(IssueType::Refactor, Risk::Low, Scope::Large)).len(),
            6
        );
    }

    #[test]
    fn every_other_classification_picks_two_to_four() {
        use IssueType::*;
        for &kind in IssueType::VARIANTS {
            for risk in [Risk::Low, Risk::Medium] {
                for scope in [Scope::Trivial, Scope::Small, Scope::Medium] {
                    let chosen = select(&c(kind, risk, scope));
                    assert!(
                        (2..=4).contains(&chosen.len()),
                        "{kind:?} {risk:?} {scope:?}: {chosen:?}"
                    );
                    if risk == Risk::Medium {
                        assert!(chosen.contains(&Persona::Paranoid));
                    }
                }
            }
        }
        assert_eq!(
            select(&c(SmallFeature, Risk::Low, Scope::Small)),
            [Persona::Simplifier, Persona::UserAdvocate]
        );
    }

    #[test]
    fn parse_is_lenient_on_spelling_and_strict_on_values() {
        let got = parse(
            "Here:\n```json\n{\"type\": \"Bug_Fix\", \"risk\": \"LOW\", \"scope\": \"small\"}\n```",
        )
        .unwrap();
        assert_eq!(got.kind, IssueType::BugFix);
        assert_eq!(got.summary(), "bug-fix, risk low, scope small");
        assert!(
            parse("{\"type\": \"epic\", \"risk\": \"low\", \"scope\": \"small\"}")
                .unwrap_err()
                .contains("`type` must be one of")
        );
        assert!(parse("no idea").is_err());
        assert!(
            parse("{\"type\": \"refactor\", \"risk\": \"low\"}")
                .unwrap_err()
                .contains("`scope`")
        );
    }
}
