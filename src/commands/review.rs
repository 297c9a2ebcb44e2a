//! `review` and `debate`: review-only mode on any Markdown spec, outside a pipeline run.
//!
//! The same strategies as `spec_review` (single, panel, debate) run on one file. Results are
//! written beside it — `<stem>.review/review.md|json`, or `<stem>.debate/debate-log.md`,
//! `spec.final.md` and `participants.json` — and the input is never modified: it is hashed
//! before and after, and a critic that edits it has its edit undone (`sandbox_violation`).

use std::path::{Path, PathBuf};

use sha2::Digest as _;

use super::Exit;
use crate::config::{Config, PanelSelection};
use crate::error::{Error, Result};
use crate::git::Git;
use crate::prompts::Template;
use crate::review::anonymize::Anonymizer;
use crate::review::calls::{CallEnv, CallLog, FollowUp, Guard};
use crate::review::debate::{self, DebateSetup};
use crate::review::merge::MergedReview;
use crate::review::strategy::{self, PromptVars, StrategyOutput, render};
use crate::review::{classify, panel};
use crate::secrets::Redactor;
use crate::state::Usage;
use crate::types::kinds::{Persona, Strategy};
use crate::util;

/// Arguments of `review` (and of `debate`, which is `review --strategy debate`).
#[derive(Debug, Clone, clap::Args)]
pub struct ReviewRequest {
    /// The Markdown file to review.
    pub spec: PathBuf,
    /// single, panel or debate (default: review.strategy of the configuration).
    #[arg(long, value_enum)]
    pub strategy: Option<Strategy>,
    /// Configuration file.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

/// Where a stand-alone review runs.
struct Setting {
    spec: PathBuf,
    name: String,
    stem: String,
    workdir: PathBuf,
    root: PathBuf,
    config: Config,
    redactor: Redactor,
    input_sha: String,
}

impl Setting {
    fn env(&self) -> CallEnv<'_> {
        CallEnv {
            config: &self.config,
            redactor: &self.redactor,
            workdir: self.workdir.clone(),
            spec_dir: ".".into(),
            files: vec![self.name.clone()],
            phase: "review".into(),
            follow_up: FollowUp::envelope(crate::prompts::template(
                &self.root,
                Template::EnvelopeRetry,
            )),
            budget_left: None,
            guard: Guard::Files(vec![self.spec.clone()]),
        }
    }

    fn vars(&self) -> PromptVars {
        PromptVars {
            target: format!(
                "the specification document `{}` (in your working directory)",
                self.name
            ),
            context: String::new(),
            spec_dir: ".".into(),
            issue_title: self.name.clone(),
            issue_body: String::new(),
            ..PromptVars::default()
        }
    }
}

fn open(req: &ReviewRequest) -> Result<Setting> {
    let given = &req.spec;
    let spec = given.canonicalize().map_err(|e| Error::Input {
        path: given.clone(),
        problem: format!("cannot be opened ({e}); pass the path of a Markdown spec"),
    })?;
    if !spec.is_file() {
        return Err(Error::Input {
            path: given.clone(),
            problem: "is not a file; pass the path of a Markdown spec".into(),
        });
    }
    let bytes = crate::fsx::read_following_max(&spec, crate::fsx::Limit::SpecDoc)?;
    let workdir = spec
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let name = spec
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = spec
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.clone());
    let git = Git::new(&workdir);
    let root = if git.is_repo() {
        git.toplevel().unwrap_or_else(|_| workdir.clone())
    } else {
        workdir.clone()
    };
    let super::Opened { config, redactor } = super::open_config(&root, req.config.as_deref())?;
    if runs_a_program(&config, req.strategy.unwrap_or(config.review.strategy)) {
        readable_by_agents(given, &workdir, &name)?;
    }
    Ok(Setting {
        input_sha: hex::encode(sha2::Sha256::digest(&bytes)),
        spec,
        name,
        stem,
        workdir,
        root,
        config,
        redactor,
    })
}

/// Whether a critic of this review is a program started in the spec's directory (a CLI or
/// `command` agent); an HTTP kind is sent the document by the orchestrator and reads nothing.
fn runs_a_program(config: &Config, strategy: Strategy) -> bool {
    let reviewer = config.roles.spec_reviewer.clone();
    let mut critics = vec![reviewer.clone()];
    if strategy == Strategy::Debate {
        critics.extend(config.opposite_of(&reviewer));
        critics.push(config.roles.judge.clone());
    }
    critics
        .iter()
        .any(|n| config.agents.get(n).is_none_or(|a| !a.kind.is_http()))
}

/// The critics read the spec in its directory, where they run, as the agents' uid when that is
/// separate (a root run: `process::identity`). Nothing of a stand-alone review is lent to them
/// (they may change nothing), so a spec that uid cannot read there — in a directory only its
/// owner may enter, such as `/root` or a `mktemp -d`, or a file only its owner may read — would
/// reach every critic as a file it cannot open. The kernel is asked, by a probe running as that
/// uid in that directory, before any agent is called; a refusal names the fix.
fn readable_by_agents(given: &Path, workdir: &Path, name: &str) -> Result<()> {
    let crate::process::identity::Separation::Separate(id) = crate::process::identity::current()
    else {
        return Ok(());
    };
    let args = ["-c", "test -r \"$1\"", "sh", name].map(String::from);
    let env = std::collections::BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]);
    let probe = crate::process::run(
        Path::new("/bin/sh"),
        &args,
        workdir,
        &env,
        b"",
        std::time::Duration::from_secs(20),
    );
    if probe.is_ok_and(|o| o.status.is_some_and(|s| s.success())) {
        return Ok(());
    }
    Err(Error::Input {
        path: given.to_path_buf(),
        problem: format!(
            "the agents run as uid {uid} in {dir} and cannot read `{name}` there; let them \
             (`setfacl -m u:{uid}:x {dir}` and a spec others may read), review a copy in a \
             directory they may enter, or set SPEC_ORCHESTRATE_AGENT_USER=off to run them as \
             this user",
            uid = id.uid,
            dir = workdir.display(),
        ),
    })
}

/// `review <SPEC.md> [--strategy …]`.
pub fn review(req: &ReviewRequest) -> Result<Exit> {
    let s = open(req)?;
    let strategy = req.strategy.unwrap_or(s.config.review.strategy);
    if strategy == Strategy::Debate {
        return run_debate(&s);
    }
    let reviewer = s.config.roles.spec_reviewer.clone();
    let vars = s.vars();
    let mut logs: Vec<CallLog> = Vec::new();
    let mut notes = Vec::new();
    let out: StrategyOutput = match strategy {
        Strategy::Panel => {
            let personas = match &s.config.review.panel {
                PanelSelection::List(list) => list.clone(),
                PanelSelection::Auto(_) => {
                    let prompt = render(&s.root, Template::Classifier, &vars, &[]);
                    let (c, l) = classify::classify(&s.env(), &reviewer, prompt)?;
                    logs.extend(l);
                    let personas: Vec<Persona> = classify::select(&c);
                    notes.push(format!(
                        "Panel chosen by classification ({}, by {}).{}",
                        c.summary(),
                        c.by,
                        c.note.map(|n| format!(" Note: {n}.")).unwrap_or_default()
                    ));
                    personas
                }
            };
            panel::review(&s.env(), &s.root, &vars, &reviewer, &personas, None)?
        }
        _ => strategy::single(&s.env(), &s.root, &vars, &reviewer, None)?,
    };
    logs.extend(out.logs);
    check_untouched(&s)?;
    let out_dir = s.workdir.join(format!("{}.review", s.stem));
    print_usage(&logs);
    match out.review {
        Ok(mut merged) => {
            merged.notes.extend(notes);
            merged.notes.push(format!(
                "Input `{}` (sha256 `{}`), reviewed by agent {reviewer}; the input was not modified.",
                s.name, s.input_sha
            ));
            write_review(&out_dir, &s.name, &merged)?;
            outln!("review.md:   {}", out_dir.join("review.md").display())?;
            outln!("review.json: {}", out_dir.join("review.json").display())?;
            outln!(
                "findings:    {} ({} fix-required)",
                merged.findings.len(),
                merged.envelope().fix_required()
            )?;
            Ok(Exit::Ok)
        }
        Err(reason) => {
            super::note(format!("review failed: {reason}"));
            Ok(Exit::Failed)
        }
    }
}

fn run_debate(s: &Setting) -> Result<Exit> {
    let a = s.config.roles.spec_reviewer.clone();
    let b = s.config.opposite_of(&a).unwrap_or_else(|| a.clone());
    let judge = s.config.roles.judge.clone();
    let out_dir = s.workdir.join(format!("{}.debate", s.stem));
    std::fs::create_dir_all(&out_dir).map_err(|e| Error::io(&out_dir, e))?;
    let env = s.env();
    let text = crate::fsx::read_following_max(&s.spec, crate::fsx::Limit::SpecDoc)?;
    let setup = DebateSetup {
        env: &env,
        root: &s.root,
        vars: s.vars(),
        documents: vec![(s.name.clone(), String::from_utf8_lossy(&text).into_owned())],
        a: a.clone(),
        b: b.clone(),
        judge: judge.clone(),
        log_path: out_dir.join("debate-log.md"),
        want_spec: true,
        anonymizer: Anonymizer::from_config(&s.config),
        header: format!("Input: `{}` (sha256 `{}`).", s.name, s.input_sha),
    };
    let outcome = debate::run(&setup, None)?;
    check_untouched(s)?;
    print_usage(&outcome.output.logs);
    let participants = serde_json::json!({
        "input": s.name,
        "input_sha256": s.input_sha,
        "A": a,
        "B": b,
        "judge": judge,
        "rounds": outcome.rounds.len(),
        "converged": outcome.converged,
        "usage": usage_of(&outcome.output.logs),
    });
    util::write_text(
        &out_dir.join("participants.json"),
        &(serde_json::to_string_pretty(&participants).unwrap_or_default() + "\n"),
    )?;
    outln!("debate-log.md: {}", setup.log_path.display())?;
    let ruling = match outcome.ruling {
        Ok(r) => r,
        Err(reason) => {
            super::note(format!(
                "debate failed: {reason}; no spec.final.md was written"
            ));
            return Ok(Exit::Failed);
        }
    };
    let Some(final_spec) = &ruling.spec else {
        super::note("debate failed: the judge wrote no final spec");
        return Ok(Exit::Failed);
    };
    let text = format!(
        "{}\n\n## Debate decisions\n\nThe document above was written by a judge that took no part in the debate ({} round(s), {}), asked to apply the adopted findings and nothing else.\n\n{}",
        final_spec.trim_end(),
        outcome.rounds.len(),
        if outcome.converged {
            "converged"
        } else {
            "not converged"
        },
        debate::ruling::decision_table(&outcome.stances, &ruling)
    );
    let final_path = out_dir.join("spec.final.md");
    util::write_text(&final_path, &text)?;
    outln!("spec.final.md: {}", final_path.display())?;
    Ok(Exit::Ok)
}

/// Fails loudly if the input changed (the guard restores a critic's edit; this checks that
/// nothing else did).
fn check_untouched(s: &Setting) -> Result<()> {
    let now = crate::fsx::read_following_max(&s.spec, crate::fsx::Limit::SpecDoc)?;
    if hex::encode(sha2::Sha256::digest(&now)) != s.input_sha {
        return Err(Error::Input {
            path: s.spec.clone(),
            problem: "changed while it was being reviewed (by something other than a reviewer); the review was not written".into(),
        });
    }
    Ok(())
}

fn write_review(dir: &Path, name: &str, merged: &MergedReview) -> Result<()> {
    util::write_text(
        &dir.join("review.json"),
        &(serde_json::to_string_pretty(merged).unwrap_or_default() + "\n"),
    )?;
    util::write_text(
        &dir.join("review.md"),
        &merged.render_markdown(&format!("Review of {name}")),
    )
}

fn usage_of(logs: &[CallLog]) -> std::collections::BTreeMap<String, Usage> {
    let mut usage: std::collections::BTreeMap<String, Usage> = Default::default();
    for l in logs.iter().filter(|l| l.invoked) {
        usage.entry(l.agent.clone()).or_default().add(
            l.usage.input_tokens,
            l.usage.output_tokens,
            l.usage.usd,
        );
    }
    usage
}

fn print_usage(logs: &[CallLog]) {
    for l in logs {
        if let Some(failure) = &l.failure {
            crate::events::emit(crate::events::Event::CallFailed {
                role: l.role,
                agent: l.agent.clone().into(),
                category: failure.category,
                detail: failure.detail.clone(),
            });
        }
    }
    for (agent, u) in usage_of(logs) {
        crate::events::emit(crate::events::Event::AgentUsage {
            agent: agent.into(),
            calls: u.calls,
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            usd: u.usd,
        });
    }
}
