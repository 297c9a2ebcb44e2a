//! Backend `command`: any program. It gets the JSON request on stdin and answers on stdout with
//! free text or a JSON report `{status, summary, output, usage}`.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::process::{self, ProcessOutput};
use super::{
    AgentError, AgentReply, AgentRequest, BlockerCategory, CallUsage, Invocation, ReplyStatus, env,
    find_executable, tail,
};

#[derive(Deserialize)]
struct Report {
    status: ReplyStatus,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    output: Option<serde_json::Value>,
    #[serde(default)]
    usage: Option<CallUsage>,
}

/// Spawns `program args` for an agent and maps spawn problems, timeouts and non-zero exits to
/// categorised failures. Shared by every CLI-like backend.
pub fn spawn(
    inv: &Invocation,
    program: &str,
    args: &[String],
    workdir: &Path,
    stdin: &[u8],
) -> Result<ProcessOutput, AgentError> {
    let Some(path) = find_executable(program, workdir) else {
        return Err(AgentError::new(
            BlockerCategory::ToolUnavailable,
            format!(
                "agent `{}`: program `{program}` not found (not on PATH or not executable)",
                inv.name
            ),
        ));
    };
    let mut env = env::scrubbed(inv.agent, std::env::vars());
    if let Some(f) = inv.fronted {
        for k in &f.remove {
            env.remove(k);
        }
        env.extend(f.set.iter().cloned());
    }
    let out = process::run(
        &path,
        args,
        workdir,
        &env,
        stdin,
        Duration::from_secs(inv.timeout_s),
    )
    .map_err(|e| {
        AgentError::new(
            BlockerCategory::EnvError,
            format!("agent `{}`: could not start `{program}`: {e}", inv.name),
        )
    })?;
    if out.timed_out {
        return Err(AgentError::new(
            BlockerCategory::Timeout,
            format!(
                "agent `{}` did not finish within {} s and was stopped",
                inv.name, inv.timeout_s
            ),
        ));
    }
    Ok(out)
}

/// Calls a `command` agent.
pub fn call(inv: &Invocation, req: &AgentRequest) -> Result<AgentReply, AgentError> {
    let cmd = inv.agent.command.as_deref().unwrap_or_default();
    let Some((program, args)) = cmd.split_first() else {
        return Err(AgentError::new(
            BlockerCategory::ToolUnavailable,
            format!("agent `{}` has an empty command", inv.name),
        ));
    };
    let body = serde_json::to_vec(req).map_err(|e| {
        AgentError::new(
            BlockerCategory::EnvError,
            format!("request not serialisable: {e}"),
        )
    })?;
    let out = spawn(inv, program, args, &req.workdir, &body)?;
    if out.code() != Some(0) {
        return Err(AgentError::new(
            BlockerCategory::AgentError,
            format!(
                "agent `{}` exited with {}: {}",
                inv.name,
                out.code()
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "a signal".into()),
                tail(&out.stderr, 400)
            ),
        ));
    }
    Ok(parse_stdout(&out.stdout))
}

/// Interprets a command agent's stdout: a JSON object with `status` is a report, anything else
/// is free text.
pub fn parse_stdout(stdout: &str) -> AgentReply {
    let trimmed = stdout.trim();
    if trimmed.starts_with('{')
        && let Ok(report) = serde_json::from_str::<Report>(trimmed)
    {
        let text = match report.output {
            Some(serde_json::Value::String(s)) => s,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        return AgentReply {
            text,
            status: report.status,
            summary: report.summary,
            usage: report.usage.unwrap_or_default(),
            session_id: None,
        };
    }
    AgentReply {
        text: stdout.to_string(),
        status: ReplyStatus::Done,
        summary: None,
        usage: CallUsage::default(),
        session_id: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_and_free_text() {
        let r = parse_stdout(
            r#"{"status":"blocked","summary":"no","output":{"findings":[]},"usage":{"input_tokens":3,"output_tokens":4,"usd":0.5}}"#,
        );
        assert_eq!(r.status, ReplyStatus::Blocked);
        assert_eq!(r.text, r#"{"findings":[]}"#);
        assert_eq!(r.usage.output_tokens, 4);
        let r = parse_stdout("{\"findings\": []}");
        assert_eq!(r.status, ReplyStatus::Done);
        assert_eq!(r.text, "{\"findings\": []}");
    }
}
