//! Backend `command`: any program. It gets the JSON request on stdin and answers on stdout with
//! free text or a JSON report `{status, summary, output, usage}`.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::{AgentError, AgentReply, AgentRequest, CallUsage, Invocation, ReplyStatus, env};
use crate::process::{self, ProcessOutput, find_confined_executable};
use crate::types::kinds::BlockerCategory;
use crate::util::tail;

#[derive(Deserialize)]
struct Report {
    status: ReplyStatus,
    summary: Option<String>,
    output: Option<serde_json::Value>,
    usage: Option<CallUsage>,
}

/// Spawns `program args` for an agent and maps spawn problems, timeouts and non-zero exits to
/// categorised failures. Shared by every CLI-like backend. The agent runs in `req.workdir`; its
/// output is kept as a bounded head and tail, the whole of a stream that outgrows that going to
/// `agent-log/` in the feature directory (see [`log_paths`]).
pub fn spawn(
    inv: &Invocation,
    program: &str,
    args: &[String],
    req: &AgentRequest,
    stdin: &[u8],
) -> Result<ProcessOutput, AgentError> {
    let workdir = &req.workdir;
    let Some(path) = find_confined_executable(program, workdir) else {
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
    let call = process::Call {
        program: &path,
        args,
        cwd: workdir,
        env: &env,
        stdin,
    };
    let out = call
        .run_logged(Duration::from_secs(inv.timeout_s), log_paths(req))
        .map_err(|e| {
            AgentError::new(
                BlockerCategory::EnvError,
                format!("agent `{}`: could not start `{program}`: {e}", inv.name),
            )
        })?;
    for (stream, note) in [("stdout", &out.stdout_cut), ("stderr", &out.stderr_cut)] {
        if let Some(note) = note {
            crate::events::emit(crate::events::Event::AgentOutputCut {
                agent: inv.name.into(),
                stream: stream.to_string(),
                note: inv.redactor.redact(note),
            });
        }
    }
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

/// The files that receive the whole stdout and stderr of a call whose output is too big to keep
/// in memory: `<spec_dir>/agent-log/<phase>-<role>[-r<round>][-<task>][-<label>]-a<attempt>.
/// {stdout,stderr}.log`. The directory gets a `.gitignore` of `*` first, so that a log never
/// lands in a commit or a checkpoint; `None` when it cannot be prepared (output is then cut
/// without a copy, and the note says so).
pub fn log_paths(req: &AgentRequest) -> [Option<PathBuf>; 2] {
    let dir = req
        .workdir
        .join(&req.spec_dir)
        .join(crate::types::AGENT_LOG_DIR);
    let ignore = dir.join(".gitignore");
    // Through `fsx`: an agent may have planted a link at either path.
    let ready = crate::fsx::read(&ignore).is_ok_and(|b| b == b"*\n")
        || crate::fsx::create_dir_all(&dir)
            .and_then(|()| crate::fsx::write_atomic(&ignore, b"*\n"))
            .is_ok();
    if !ready {
        return [None, None];
    }
    let mut stem = format!("{}-{}", req.phase, req.role);
    if let Some(round) = req.round {
        stem.push_str(&format!("-r{round}"));
    }
    if let Some(task) = &req.task {
        stem.push_str(&format!("-{}", task.id));
    }
    if let Some(label) = &req.label {
        stem.push_str(&format!("-{label}"));
    }
    stem.push_str(&format!("-a{}", req.attempt));
    let stem = crate::util::file_safe(&stem);
    ["stdout", "stderr"].map(|s| Some(dir.join(format!("{stem}.{s}.log"))))
}

/// What a CLI agent's run (`claude`, `codex`: the name its errors begin with) comes to: the
/// reply `parsed` from its output when it exited 0. When it exited otherwise, it failed as a
/// program (bad flag, crash, missing login): the error says how it ended and quotes the tail of
/// its stderr, also when its output could not be read, and keeps the usage a reply reported; a
/// failure the output itself reported stays as it is.
pub fn settle(
    name: &str,
    out: &ProcessOutput,
    parsed: Result<AgentReply, AgentError>,
) -> Result<AgentReply, AgentError> {
    let ended = |usage| AgentError {
        category: BlockerCategory::AgentError,
        detail: format!(
            "{name} ended with {}: {}",
            out.ended(),
            tail(&out.stderr, 400)
        ),
        usage,
    };
    match parsed {
        Ok(reply) if out.code() == Some(0) => Ok(reply),
        Ok(reply) => Err(ended(reply.usage)),
        Err(e) if out.code() != Some(0) && e.category == BlockerCategory::MalformedOutput => {
            Err(ended(e.usage))
        }
        Err(e) => Err(e),
    }
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
    let out = spawn(inv, program, args, req, &body)?;
    if out.code() != Some(0) {
        return Err(AgentError::new(
            BlockerCategory::AgentError,
            format!(
                "agent `{}` ended with {}: {}",
                inv.name,
                out.ended(),
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
