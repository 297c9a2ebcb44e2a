//! Backend `codex-cli`: `codex exec --json`, prompt on stdin, JSONL events on stdout and the
//! final message in the `-o` file. Writers get `--sandbox workspace-write`, reviewers `read-only`.

use serde::Deserialize;

use super::command::spawn;
use super::{AgentError, AgentReply, AgentRequest, CallUsage, Invocation, ReplyStatus};
use crate::types::kinds::BlockerCategory;
use crate::util::tail;

/// The command-line arguments (program excluded) for a call writing its last message to `last`.
pub fn args(inv: &Invocation, last: &std::path::Path) -> Vec<String> {
    let mut a: Vec<String> = vec!["exec".into()];
    if let Some(f) = inv.fronted {
        a.extend(f.args.iter().cloned());
    }
    a.extend([
        "--json".into(),
        "--skip-git-repo-check".into(),
        "--sandbox".into(),
        sandbox_mode(inv.writes),
    ]);
    if let Some(m) = &inv.agent.model {
        a.push("-m".into());
        a.push(m.clone());
    }
    a.push("-o".into());
    a.push(last.to_string_lossy().into_owned());
    a.push("-".into());
    a
}

/// `workspace-write` for writers, `read-only` for reviewers — unless
/// `SPEC_ORCHESTRATE_CODEX_SANDBOX` overrides it: codex's own sandbox cannot start inside a
/// container, so the Action image sets `danger-full-access` (the job is the sandbox, and a
/// reviewer's edits are still caught and undone as a sandbox violation).
fn sandbox_mode(writes: bool) -> String {
    match std::env::var("SPEC_ORCHESTRATE_CODEX_SANDBOX") {
        Ok(mode) if !mode.trim().is_empty() => mode.trim().to_string(),
        _ if writes => "workspace-write".into(),
        _ => "read-only".into(),
    }
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    thread_id: Option<String>,
    usage: Option<super::VendorUsage>,
    error: Option<ErrorJson>,
    message: Option<String>,
    item: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ErrorJson {
    #[serde(default)]
    message: String,
}

/// Calls the codex CLI.
pub fn call(inv: &Invocation, req: &AgentRequest) -> Result<AgentReply, AgentError> {
    let program = inv.agent.binary.as_deref().unwrap_or("codex");
    // Where the agent may write (its own uid's, when it is separate): codex refuses to start
    // when it cannot open the `-o` file.
    let dir = crate::process::scratch_dir().map_err(|e| {
        AgentError::new(
            BlockerCategory::EnvError,
            format!("no temp dir for codex output: {e}"),
        )
    })?;
    let last = dir.path().join("last-message.txt");
    let out = spawn(inv, program, &args(inv, &last), req, req.prompt.as_bytes())?;
    let last_message = read_last_message(&last);
    super::command::settle("codex", &out, parse(&out.stdout, last_message.as_deref()))
}

/// The `-o` file codex writes its last message to, read to at most the size kept of any
/// agent's stdout (its head; a longer message is cut with a note), so that an agent cannot
/// make the orchestrator load an arbitrarily big file.
fn read_last_message(path: &std::path::Path) -> Option<String> {
    use std::io::Read;
    let max = crate::process::capture::HEAD_BYTES + crate::process::capture::TAIL_BYTES;
    let mut bytes = Vec::new();
    // A regular file only: an agent that plants a FIFO or a link there is not waited on.
    crate::fsx::open_read(path)
        .ok()?
        .take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let cut = bytes.len() > max;
    bytes.truncate(max);
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if cut {
        text.push_str(&format!("\n[… cut after {max} bytes …]\n"));
    }
    Some(text)
}

/// Parses codex's JSONL event stream; `last_message` is the content of the `-o` file.
pub fn parse(stdout: &str, last_message: Option<&str>) -> Result<AgentReply, AgentError> {
    let mut usage = CallUsage::default();
    let mut session = None;
    let mut any_event = false;
    let mut completed = false;
    let mut failure: Option<String> = None;
    let mut last_agent_message: Option<String> = None;
    for line in stdout.lines().map(str::trim).filter(|l| l.starts_with('{')) {
        let Ok(ev) = serde_json::from_str::<Event>(line) else {
            continue;
        };
        any_event = true;
        match ev.kind.as_str() {
            "thread.started" => session = ev.thread_id,
            "turn.completed" => {
                completed = true;
                failure = None;
                if let Some(u) = ev.usage {
                    // `cached_input_tokens` is the cached part of `input_tokens` (OpenAI usage
                    // semantics), not an addition to it.
                    usage.input_tokens += u.input_tokens;
                    usage.output_tokens += u.output_tokens;
                }
            }
            "turn.failed" => {
                failure = Some(ev.error.map(|e| e.message).unwrap_or_default());
            }
            "error" => {
                failure = Some(ev.message.unwrap_or_default());
            }
            "item.completed" => {
                if let Some(item) = ev.item
                    && item.get("type").and_then(|t| t.as_str()) == Some("agent_message")
                    && let Some(t) = item.get("text").and_then(|t| t.as_str())
                {
                    last_agent_message = Some(t.to_string());
                }
            }
            _ => {}
        }
    }
    if !any_event {
        return Err(AgentError::new(
            BlockerCategory::MalformedOutput,
            format!("codex printed no JSON events: {}", tail(stdout, 200)),
        ));
    }
    if let Some(msg) = failure {
        return Err(AgentError {
            category: BlockerCategory::AgentError,
            detail: format!("codex turn failed: {}", tail(&msg, 300)),
            usage,
        });
    }
    if !completed {
        return Err(AgentError {
            category: BlockerCategory::MalformedOutput,
            detail: "codex ended without `turn.completed`".into(),
            usage,
        });
    }
    let text = last_message
        .filter(|t| !t.trim().is_empty())
        .map(str::to_string)
        .or(last_agent_message)
        .unwrap_or_default();
    Ok(AgentReply {
        text,
        status: ReplyStatus::Done,
        summary: None,
        usage,
        session_id: session,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_events() {
        let ok = "{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n{\"type\":\"turn.started\"}\n{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"agent_message\",\"text\":\"hello\"}}\n{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":5,\"cached_input_tokens\":1,\"output_tokens\":2}}\n";
        let r = parse(ok, None).unwrap();
        assert_eq!(r.text, "hello");
        assert_eq!(r.session_id.as_deref(), Some("t1"));
        assert_eq!(
            r.usage.input_tokens, 5,
            "cached tokens are part of input_tokens"
        );
        let r = parse(ok, Some("from file")).unwrap();
        assert_eq!(r.text, "from file");
        let failed = "{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n{\"type\":\"turn.failed\",\"error\":{\"message\":\"boom\"}}\n";
        let e = parse(failed, None).unwrap_err();
        assert_eq!(e.category, BlockerCategory::AgentError);
        assert!(e.detail.contains("boom"));
        assert_eq!(
            parse("nonsense", None).unwrap_err().category,
            BlockerCategory::MalformedOutput
        );
    }
}
