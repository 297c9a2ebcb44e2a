//! What an HTTP model can do for the pipeline, and how its answers are made safe.
//!
//! A model behind an API can neither read the repository nor edit it. So for the roles it can
//! play, the orchestrator quotes the files the request names into the prompt, asks for one JSON
//! object constrained by a JSON schema (the vendors' structured output), and does the rest
//! itself: a reviewer's answer is its findings envelope; an author's answer is a list of file
//! blocks that the orchestrator writes, each path checked to stay inside the feature's spec
//! directory and away from the orchestrator's own records. Implementer roles need to edit code
//! and run tests, so a text-only backend refuses them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{AgentError, AgentRequest};
use crate::process::paths::resolve_inside;
use crate::prompts::Template;
use crate::secrets::Redactor;
use crate::types::Role;
use crate::types::kinds::{BlockerCategory, CallRole};

/// The shape of the answer one call asks for. It is chosen per call, not per role: the
/// e2e_runner reviews the acceptance contract (an envelope), converts browser steps
/// (`{"steps"}`) and scores screenshots (`{"scores"}`), and the judge rules on a debate
/// (`{"decisions"}`), each in its own call. The request carries it (`answer`), so a text-only
/// model is held to the shape of the call it is in and a `command` agent can read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::VariantArray)]
#[serde(rename_all = "snake_case")]
pub enum Output {
    /// Whole files to write inside the spec directory (the spec author).
    Files,
    /// A findings envelope (reviewers, panel personas, debaters, the contract review).
    Envelope,
    /// The issue classification that picks panel personas (classifier).
    Classification,
    /// Browser cases' structured steps, `{"cases": {"T-A05": {"steps": [...]}}}` (e2e_runner in
    /// spec_generate, and again at evaluate).
    Steps,
    /// Rubric scores, `{"scores": {...}, "notes": "..."}` (e2e_runner in evaluate).
    Scores,
    /// A debate judge's ruling, `{"decisions": [...], "spec": ...}`.
    Decisions,
}

impl Output {
    /// The answer shape of a writing call by `role`: the spec author answers with files; the
    /// implementers edit a working copy, which a text-only model cannot (`None`).
    pub fn of_writer(role: CallRole) -> Option<Output> {
        match role {
            CallRole::Role(Role::SpecAuthor) => Some(Output::Files),
            _ => None,
        }
    }

    /// Schema name sent to the API.
    pub fn name(self) -> &'static str {
        match self {
            Output::Files => "spec_files",
            Output::Envelope => "review_envelope",
            Output::Classification => "issue_classification",
            Output::Steps => "browser_steps",
            Output::Scores => "rubric_scores",
            Output::Decisions => "judge_decisions",
        }
    }

    /// What the answer is called in the "only the JSON" follow-up ("Output only the JSON
    /// envelope").
    pub fn noun(self) -> &'static str {
        match self {
            Output::Files => "file blocks",
            Output::Envelope => "envelope",
            Output::Classification => "classification",
            Output::Steps => "steps object",
            Output::Scores => "scores object",
            Output::Decisions => "ruling",
        }
    }

    /// The JSON the answer is, in one line, for the "only the JSON" follow-up.
    pub fn example(self) -> &'static str {
        match self {
            Output::Files => {
                r#"{"files": [{"path": "requirement.md", "content": "..."}], "summary": "..."}"#
            }
            Output::Envelope => {
                r#"{"findings": [...], "converged": true|false, "remaining_disputes": []}"#
            }
            Output::Classification => r#"{"type": "...", "risk": "...", "scope": "..."}"#,
            Output::Steps => {
                r#"{"cases": {"<case id>": {"steps": [...]} (or {"cannot_express": [...]})}}"#
            }
            Output::Scores => {
                r#"{"scores": {"<criterion>": {"score": <0-10>, "evidence": "<what you saw>"}}, "notes": "..."}"#
            }
            Output::Decisions => {
                r#"{"decisions": [{"id": "A.F1", "decision": "adopted|rejected", "reason": "..."}], "spec": null}"#
            }
        }
    }

    /// The prompt template that wraps the request for this shape.
    fn template(self) -> Template {
        match self {
            Output::Files => Template::HttpFiles,
            Output::Envelope => Template::HttpEnvelope,
            Output::Classification => Template::HttpClassification,
            Output::Steps | Output::Scores | Output::Decisions => Template::HttpJson,
        }
    }

    /// The JSON schema that constrains the answer, or `None` for the shapes whose keys belong
    /// to the call (a rubric's criteria, the browser-step vocabulary of `evidence::steps`):
    /// those are asked as a JSON object without a schema, and the call's own parser (the one a
    /// CLI agent's answer goes through) judges them.
    pub fn schema(self) -> Option<Value> {
        match self {
            Output::Steps | Output::Scores => None,
            _ => Some(self.strict_schema()),
        }
    }

    /// The strict JSON schema of a shape that has one.
    fn strict_schema(self) -> Value {
        match self {
            Output::Files => closed(
                &["files", "summary"],
                json!({
                    "files": {"type": "array", "items": closed(&["path", "content"], json!({
                        "path": {"type": "string", "description": "path relative to the spec directory, e.g. requirement.md"},
                        "content": {"type": "string", "description": "the complete new text of the file"}
                    }))},
                    "summary": {"type": "string", "description": "one line: what was written or changed"}
                }),
            ),
            Output::Envelope => envelope_schema(),
            Output::Classification => closed(
                &["type", "risk", "scope"],
                json!({
                    "type": {"type": "string", "enum": ["bug-fix", "small-feature", "large-feature", "refactor", "infrastructure", "api-change"]},
                    "risk": {"type": "string", "enum": ["low", "medium", "high"]},
                    "scope": {"type": "string", "enum": ["trivial", "small", "medium", "large"]}
                }),
            ),
            Output::Decisions => closed(
                &["decisions", "spec"],
                json!({
                    "decisions": {"type": "array", "items": closed(&["id", "decision", "reason"], json!({
                        "id": {"type": "string"},
                        "decision": {"type": "string", "enum": ["adopted", "rejected"]},
                        "reason": {"type": "string"}
                    }))},
                    "spec": {"type": ["string", "null"], "description": "the whole final document when the instructions ask for it, else null"}
                }),
            ),
            Output::Steps | Output::Scores => json!({"type": "object"}),
        }
    }
}

/// An object of `properties` that closes `additionalProperties` and lists every property as
/// `required` (in that order), which both vendors' strict modes demand.
fn closed(required: &[&str], properties: Value) -> Value {
    json!({"type": "object", "additionalProperties": false, "required": required, "properties": properties})
}

/// The strict schema of a review envelope: the findings, convergence, the disputes left and the
/// rulings on disputed cases.
fn envelope_schema() -> Value {
    let finding = [
        "id",
        "requirement_id",
        "severity",
        "file",
        "section",
        "gist",
        "argument",
        "suggestion",
        "still_open",
        "disputes",
    ];
    closed(
        &["findings", "converged", "remaining_disputes", "rulings"],
        json!({
            "findings": {"type": "array", "items": closed(&finding, json!({
                "id": {"type": "string"},
                "requirement_id": {"type": "string"},
                "severity": {"type": "string", "enum": ["critical", "improvement", "minor"]},
                "file": {"type": "string"},
                "section": {"type": "string"},
                "gist": {"type": "string"},
                "argument": {"type": "string"},
                "suggestion": {"type": "string"},
                // Strict modes want every key required, so the two keys a
                // finding has only sometimes are nullable instead of optional.
                "still_open": {"type": ["string", "null"], "description": "from round 2: the id of the previous round's finding this one re-raises (\"F1\"), else null"},
                "disputes": {"type": ["string", "null"], "description": "in a debate: the id of the other side's finding this entry argues against (\"B.F2\"), else null"}
            }))},
            "converged": {"type": "boolean"},
            "remaining_disputes": {"type": "array", "items": {"type": "string"}},
            // A fix task's review rules on the failed cases its implementer disputed
            // (`review::dispute`); every other review answers `[]`.
            "rulings": {
                "type": "array",
                "description": "only when the prompt lists disputed acceptance cases: one ruling per case, else []",
                "items": closed(&["case", "ruling", "argument"], json!({
                    "case": {"type": "string"},
                    "ruling": {"type": "string", "enum": ["confirmed", "rejected"]},
                    "argument": {"type": "string"}
                }))
            }
        }),
    )
}

/// Longest quoted excerpt of one file, so that a huge file cannot blow the context window.
const MAX_QUOTED_CHARS: usize = 200_000;

/// The user message of a text-only call, in two parts so that its stable part comes first.
///
/// A review loop sends the same documents round after round, while the role's instructions
/// change (the round, the previous findings). The vendors cache a prompt by its prefix: the
/// Anthropic backend marks the end of `documents` as a cache breakpoint, and the OpenAI backend
/// sends `documents` before the instructions, so that an unchanged spec is billed at the cache
/// price from the second round on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The named files quoted as untrusted data (template `http_documents`): byte-identical
    /// while the files do not change.
    pub documents: String,
    /// The role's prompt and the answer instructions (templates `http_files`, `http_envelope`,
    /// `http_classification`).
    pub instructions: String,
}

impl Message {
    /// Both parts as one text, documents first (for a backend with a single input string).
    pub fn joined(&self) -> String {
        format!("{}\n{}", self.documents, self.instructions)
    }
}

/// The marker suffix of a quoted file: a digest of its path and content, so that an unchanged
/// file is quoted byte for byte alike in every round (the vendors' prompt caches need a stable
/// prefix) while no file can close its own block (it would have to contain the digest of
/// itself); a per-call random one in the impossible case it does.
fn stable_nonce(rel: &str, text: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{rel}\n{text}"));
    let n = hex::encode(&digest[..6]);
    if text.contains(&n) {
        crate::prompts::nonce(&[text])
    } else {
        n
    }
}

/// Builds the message a text-only model receives: the named files quoted as untrusted data,
/// then the role's prompt and the answer instructions. Every template is overridable in
/// `.specs/prompts/`; an instructions template that still names `{{files}}` gets a pointer to
/// the quoted block instead of a second copy.
pub fn message(req: &AgentRequest, output: Output) -> Message {
    let mut files = String::new();
    for rel in &req.files {
        let text = match resolve_inside(&req.workdir, rel) {
            Ok(p) => match crate::util::read_to_string_max(&p, crate::fsx::Limit::SpecDoc) {
                Ok(t) if t.chars().count() > MAX_QUOTED_CHARS => {
                    let cut: String = t.chars().take(MAX_QUOTED_CHARS).collect();
                    format!("{cut}\n[… cut at {MAX_QUOTED_CHARS} characters]")
                }
                Ok(t) => t,
                Err(e @ crate::error::Error::TooLarge { .. }) => format!("(not quoted: {e})"),
                Err(_) => "(this file does not exist yet)".to_string(),
            },
            Err(e) => format!("(not quoted: {e})"),
        };
        let n = stable_nonce(rel, &text);
        files.push_str(&format!("<<<FILE-{n} {rel}\n{text}\nFILE-{n}>>>\n"));
    }
    if files.is_empty() {
        files.push_str("(no files)\n");
    }
    let documents = crate::prompts::render(
        &req.workdir,
        Template::HttpDocuments,
        &[("spec_dir", &req.spec_dir), ("files", &files)],
    );
    let instructions = crate::prompts::render(
        &req.workdir,
        output.template(),
        &[
            ("prompt", &req.prompt),
            ("spec_dir", &req.spec_dir),
            ("role", &req.role),
            ("files", "(quoted above)"),
        ],
    );
    Message {
        documents,
        instructions,
    }
}

/// The system prompt of every text-only call (template `http_system`).
pub fn system(req: &AgentRequest) -> String {
    crate::prompts::render(
        &req.workdir,
        Template::HttpSystem,
        &[("role", &req.role), ("spec_dir", &req.spec_dir)],
    )
}

#[derive(Deserialize)]
struct FilesAnswer {
    files: Vec<FileBlock>,
    #[serde(default)]
    summary: String,
}

#[derive(Deserialize)]
struct FileBlock {
    path: String,
    content: String,
}

/// What a finished text-only call hands back to the pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// Reply text: the JSON answer (envelope, classification) or the author's summary.
    pub text: String,
    /// One-line summary, when there is one.
    pub summary: Option<String>,
}

/// Applies a model's JSON answer: writes file blocks (after checking every path first, so a
/// bad block writes nothing), or passes the envelope/classification through as the reply text.
/// Everything written is redacted of known secrets first.
pub fn finish(
    req: &AgentRequest,
    output: Output,
    answer: &str,
    redactor: &Redactor,
) -> Result<Finished, AgentError> {
    let answer = redactor.redact(answer);
    let pass = |text| {
        Ok(Finished {
            text,
            summary: None,
        })
    };
    if output.schema().is_none() {
        // No schema held the model to a shape: the call's own parser reads the answer, prose
        // around the JSON included, exactly as it reads a CLI agent's.
        return pass(answer);
    }
    let value: Value = serde_json::from_str(answer.trim()).map_err(|e| {
        AgentError::new(
            BlockerCategory::MalformedOutput,
            format!(
                "the answer is not the JSON object the `{}` schema asks for ({e}): {}",
                output.name(),
                crate::util::tail(&answer, 200)
            ),
        )
    })?;
    if output != Output::Files {
        return pass(value.to_string());
    }
    let parsed: FilesAnswer = serde_json::from_value(value).map_err(|e| {
        AgentError::new(
            BlockerCategory::MalformedOutput,
            format!("the file blocks do not match the `spec_files` schema: {e}"),
        )
    })?;
    let mut targets: Vec<(PathBuf, &str)> = Vec::new();
    for block in &parsed.files {
        let path = target(&req.workdir, &req.spec_dir, &block.path).map_err(|why| {
            AgentError::new(
                BlockerCategory::SandboxViolation,
                format!(
                    "file block `{}` refused, nothing was written: {why}",
                    block.path
                ),
            )
        })?;
        targets.push((path, &block.content));
    }
    let mut written = Vec::new();
    for (path, content) in targets {
        crate::util::write_text(&path, content)
            .map_err(|e| AgentError::new(BlockerCategory::EnvError, e.to_string()))?;
        written.push(
            path.strip_prefix(&req.workdir)
                .unwrap_or(&path)
                .display()
                .to_string(),
        );
    }
    let summary = if parsed.summary.trim().is_empty() {
        format!("wrote {}", written.join(", "))
    } else {
        parsed.summary.trim().to_string()
    };
    Ok(Finished {
        text: summary.clone(),
        summary: Some(summary),
    })
}

/// Files and directories under `.specs/<feature>/` that only the orchestrator writes.
const RESERVED: [&str; 9] = [
    "pipeline-state.json",
    "pipeline-state.lock",
    "inspection-report.md",
    "pr-body.md",
    "retrospective.md",
    "reviews",
    "evidence",
    "debate-log.md",
    "prompts",
];

/// Resolves a file block's path inside the spec directory, or says why it may not be written.
/// Accepted: `requirement.md`, `steps/T-A01.json`, or the same prefixed with the spec
/// directory (`.specs/<feature>/requirement.md`).
pub fn target(workdir: &Path, spec_dir: &str, path: &str) -> Result<PathBuf, String> {
    let p = path.trim().replace('\\', "/");
    let prefix = format!("{}/", spec_dir.trim_end_matches('/'));
    let rel = p
        .strip_prefix(&prefix)
        .or_else(|| p.strip_prefix("./").and_then(|q| q.strip_prefix(&prefix)))
        .unwrap_or(&p)
        .trim_start_matches("./")
        .to_string();
    let dir = resolve_inside(workdir, spec_dir).map_err(|e| e.0)?;
    let full = resolve_inside(&dir, &rel).map_err(|e| {
        format!(
            "{} (paths must stay inside {spec_dir}/)",
            e.0.replace("the repository", "the spec directory")
        )
    })?;
    let first = Path::new(&rel)
        .components()
        .find_map(|c| match c {
            std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
            _ => None,
        })
        .unwrap_or_default();
    if first.is_empty() || full == dir {
        return Err("the path names no file".into());
    }
    if first.starts_with('.')
        || RESERVED.contains(&first.as_str())
        || (first.starts_with("evaluate-") && Path::new(&rel).components().count() == 1)
    {
        return Err(format!(
            "`{rel}` is one of the orchestrator's own records in {spec_dir}/; an author writes the spec documents only"
        ));
    }
    if full.is_dir() {
        return Err(format!("`{rel}` is a directory"));
    }
    Ok(full)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::tests::keeps_words;
    use strum::VariantArray;

    #[test]
    fn file_blocks_stay_inside_the_spec_dir_and_off_the_records() {
        let repo = tempfile::tempdir().unwrap();
        let spec = ".specs/f";
        std::fs::create_dir_all(repo.path().join(spec)).unwrap();
        let ok = |p: &str| target(repo.path(), spec, p);
        assert_eq!(
            ok("requirement.md").unwrap(),
            repo.path().join(".specs/f/requirement.md")
        );
        assert_eq!(
            ok(".specs/f/design.md").unwrap(),
            repo.path().join(".specs/f/design.md")
        );
        assert!(ok("steps/T-A01.json").is_ok());
        for bad in [
            "../../src/main.rs",
            "/etc/passwd",
            "pipeline-state.json",
            "reviews/spec-review-1.json",
            "evidence/1/x.log",
            "evaluate-2.json",
            ".gitignore",
            "",
            ".specs/other/requirement.md/../../../x",
        ] {
            assert!(ok(bad).is_err(), "{bad} must be refused");
        }
        std::os::unix::fs::symlink("/tmp", repo.path().join(".specs/f/link")).unwrap();
        assert!(ok("link/x.md").unwrap_err().contains("symlink"));
    }

    #[test]
    fn every_schema_is_strict() {
        fn check(v: &Value) {
            if v.get("type") == Some(&json!("object")) {
                assert_eq!(v["additionalProperties"], json!(false), "{v}");
                let props: Vec<&String> = v["properties"].as_object().unwrap().keys().collect();
                let req: Vec<&str> = v["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_str().unwrap())
                    .collect();
                for p in props {
                    assert!(req.contains(&p.as_str()), "{p} not required in {v}");
                }
                for p in v["properties"].as_object().unwrap().values() {
                    check(p);
                }
            }
            if let Some(items) = v.get("items") {
                check(items);
            }
        }
        for o in [
            Output::Files,
            Output::Envelope,
            Output::Classification,
            Output::Decisions,
        ] {
            check(&o.schema().expect("a strict schema"));
        }
    }

    /// The envelope schema carries every key a finding may use (`still_open` from round 2,
    /// `disputes` in a debate), nullable since strict modes require every key, and an answer
    /// held to it reads back with the same parser a CLI agent's answer meets.
    #[test]
    fn the_envelope_schema_lets_a_finding_reraise_or_dispute() {
        let schema = Output::Envelope.schema().expect("a strict schema");
        let item = &schema["properties"]["findings"]["items"];
        for key in ["still_open", "disputes"] {
            assert_eq!(item["properties"][key]["type"], json!(["string", "null"]));
        }
        let answer = json!({"findings": [
            {"id": "F1", "requirement_id": "REQ-001", "severity": "critical", "file": "design.md",
             "section": "Delete", "gist": "still no owner check", "argument": "a", "suggestion": "s",
             "still_open": "F1", "disputes": null},
            {"id": "F2", "requirement_id": "", "severity": "minor", "file": "design.md",
             "section": "Delete", "gist": "g", "argument": "a", "suggestion": "s",
             "still_open": null, "disputes": "B.F1"}
        ], "converged": false, "remaining_disputes": []});
        let env = crate::review::envelope::parse_answer(&answer.to_string()).unwrap();
        assert_eq!(env.findings[0].still_open, "F1");
        assert_eq!(env.findings[0].disputes, "");
        assert_eq!(env.findings[1].still_open, "");
        assert_eq!(env.findings[1].disputes, "B.F1");
        // A fix task's reviewer rules on disputed cases through the same schema.
        assert_eq!(
            schema["properties"]["rulings"]["items"]["properties"]["ruling"]["enum"],
            json!(["confirmed", "rejected"])
        );
        let ruled = json!({"findings": [], "converged": true, "remaining_disputes": [],
            "rulings": [{"case": "T-A02", "ruling": "confirmed", "argument": "REQ-002 says so"}]});
        let read = crate::review::dispute::parse_review(&ruled.to_string()).unwrap();
        assert_eq!(read.rulings.len(), 1);
        assert_eq!(
            read.rulings[0].ruling,
            crate::types::kinds::Ruling::Confirmed
        );
    }

    #[test]
    fn implementer_roles_have_no_text_only_shape() {
        for r in [Role::ImplUi, Role::ImplBackend, Role::ImplTest] {
            assert_eq!(Output::of_writer(CallRole::Role(r)), None);
        }
        assert_eq!(
            Output::of_writer(CallRole::Role(Role::SpecAuthor)),
            Some(Output::Files)
        );
    }

    /// The request names its shape in snake_case, the word a `command` agent reads.
    #[test]
    fn the_answer_shape_is_named_in_the_request() {
        let words = "files envelope classification steps scores decisions";
        keeps_words(Output::VARIANTS, words);
    }
}
