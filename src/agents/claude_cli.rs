//! Backend `claude-cli`: `claude -p --output-format json`, prompt on stdin, working directory =
//! the repository. Writers run with `--permission-mode acceptEdits`; reviewers with `plan` and
//! the editing tools disallowed.

use serde::Deserialize;

use super::command::spawn;
use super::{AgentError, AgentReply, AgentRequest, CallUsage, Invocation, ReplyStatus};
use crate::types::kinds::BlockerCategory;
use crate::util::tail;

/// The command-line arguments (program excluded) for a call.
pub fn args(inv: &Invocation) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "-p".into(),
        "--output-format".into(),
        "json".into(),
        "--permission-mode".into(),
        if inv.writes { "acceptEdits" } else { "plan" }.into(),
    ];
    if let Some(m) = &inv.agent.model {
        a.push("--model".into());
        a.push(m.clone());
    }
    if !inv.writes {
        a.push("--disallowedTools".into());
        a.push("Write,Edit,NotebookEdit,Bash".into());
    }
    if let Some(left) = inv.budget_left {
        // The CLI stops itself at this spend, so one call cannot run far past the budget.
        a.push("--max-budget-usd".into());
        a.push(format!("{:.4}", left.max(0.0)));
    }
    a
}

#[derive(Deserialize)]
struct ResultJson {
    #[serde(default)]
    is_error: bool,
    subtype: Option<String>,
    result: Option<String>,
    structured_output: Option<serde_json::Value>,
    session_id: Option<String>,
    total_cost_usd: Option<f64>,
    usage: Option<super::VendorUsage>,
}

/// Calls the claude CLI.
pub fn call(inv: &Invocation, req: &AgentRequest) -> Result<AgentReply, AgentError> {
    let program = inv.agent.binary.as_deref().unwrap_or("claude");
    let out = spawn(inv, program, &args(inv), req, req.prompt.as_bytes())?;
    super::command::settle("claude", &out, parse(&out.stdout))
}

/// Parses claude's `--output-format json` result object.
pub fn parse(stdout: &str) -> Result<AgentReply, AgentError> {
    let trimmed = stdout.trim();
    let json: ResultJson = serde_json::from_str(trimmed)
        .or_else(|_| {
            // Tolerate log lines before the result: take the last line that is a JSON object.
            trimmed
                .lines()
                .rev()
                .find(|l| l.trim_start().starts_with('{'))
                .ok_or(())
                .and_then(|l| serde_json::from_str(l).map_err(|_| ()))
        })
        .map_err(|_| {
            AgentError::new(
                BlockerCategory::MalformedOutput,
                format!("claude printed no JSON result: {}", tail(stdout, 200)),
            )
        })?;
    let tokens = json.usage.unwrap_or_default().anthropic();
    let usage = CallUsage {
        input_tokens: tokens.total_input(),
        output_tokens: tokens.output,
        usd: json.total_cost_usd.unwrap_or(0.0),
    };
    if json.is_error {
        // `--max-budget-usd` reached: the pipeline's budget, not a failure of the agent.
        let category = if json.subtype.as_deref() == Some("error_max_budget_usd") {
            BlockerCategory::BudgetExhausted
        } else {
            BlockerCategory::AgentError
        };
        return Err(AgentError {
            category,
            detail: format!(
                "claude reported an error ({}): {}",
                json.subtype.as_deref().unwrap_or("unknown"),
                tail(json.result.as_deref().unwrap_or(""), 300)
            ),
            usage,
        });
    }
    let text = match json.structured_output {
        Some(v) if !v.is_null() => v.to_string(),
        _ => json.result.unwrap_or_default(),
    };
    Ok(AgentReply {
        text,
        status: ReplyStatus::Done,
        summary: None,
        usage,
        session_id: json.session_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_success_and_error() {
        let ok = r#"{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s1","total_cost_usd":0.25,"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":7}}"#;
        let r = parse(ok).unwrap();
        assert_eq!(r.text, "done");
        assert_eq!(r.session_id.as_deref(), Some("s1"));
        assert_eq!(r.usage.input_tokens, 15);
        assert_eq!(r.usage.usd, 0.25);
        let err = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"result":"","total_cost_usd":0.1}"#;
        let e = parse(err).unwrap_err();
        assert_eq!(e.category, BlockerCategory::AgentError);
        assert!(e.detail.contains("error_max_turns"));
        assert_eq!(e.usage.usd, 0.1);
        assert_eq!(
            parse("garbage").unwrap_err().category,
            BlockerCategory::MalformedOutput
        );
        let budget = r#"{"type":"result","subtype":"error_max_budget_usd","is_error":true,"total_cost_usd":0.5}"#;
        let e = parse(budget).unwrap_err();
        assert_eq!(e.category, BlockerCategory::BudgetExhausted);
        assert_eq!(e.usage.usd, 0.5);
    }
}
