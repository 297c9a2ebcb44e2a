//! `spec-orchestrate action`: one GitHub Actions job of the chain (`docs/action-mode.md`).
//!
//! A job reads its event, checks who caused it, restores the run from its parent's checkpoint
//! (or starts one), runs exactly one phase, and then publishes: commit and push of the work
//! branch, the pull request when the `pr` phase ran, the one status comment, a checkpoint
//! artifact, step outputs and the job summary — and dispatches the next job unless the run waits
//! for a person, is done, or is over its cost budget.
//!
//! The phase runs in a child process (`spec-orchestrate step`) for two reasons. The child never
//! holds the GitHub token or the runtime token — only the agents' API keys — so nothing an agent
//! does can reach them. And the job can stop it cleanly before `job_budget_minutes` runs out:
//! the state is saved after every agent call, so a stopped phase resumes in the next job exactly
//! as a killed local run resumes, and the job checkpoints and dispatches a continuation instead of
//! being killed by the runner.
//!
//! Every write is idempotent so that "Re-run failed jobs" (same run id, same inputs, next
//! attempt) is safe: the parent checkpoint is immutable, the branch is reset to the sha that
//! checkpoint recorded and pushed with a lease, the comment is edited, the pull request is found
//! by its head branch, and the artifact name carries the attempt.

pub mod answer;
pub mod env;
pub mod runner;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::forge::github::event::{self, Actor, Trigger};
use crate::forge::github::{GithubForge, GithubTarget};
use crate::forge::remote::Remote;
use crate::git::Git;
use crate::machine::Phase;
use crate::report::status::{self, RunRecord, View};
use crate::secrets::Redactor;
use crate::state::{IssueRef, PrRef, State, StateStore};
use crate::store::{self, LocalStore, Store, archive};
use crate::util;

use self::answer::Answer;
use self::env::ActionEnv;
use super::Exit;

/// Variables the phase process must not see: tokens for GitHub and the runner, and every input.
const WITHHELD: [&str; 8] = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_RESULTS_URL",
    "ACTIONS_RUNTIME_URL",
    "ACTIONS_CACHE_URL",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
];

/// Runs the job described by the process environment.
pub fn action() -> Result<Exit> {
    let env = ActionEnv::from_env()?;
    for s in env.secrets() {
        runner::mask(s.expose());
    }
    Job::start(&env)?.run()
}

/// How the phase process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PhaseEnd {
    /// It exited with this code: 0 paused/waiting/done, 1 draft, 2 and up an error whose kind
    /// the code names (see `ErrorKind::exit_code`).
    Exited(i32),
    /// It was stopped at the job's time budget; the phase resumes in the next job.
    Budget,
    /// It died from a signal.
    Killed(i32),
}

/// What happens after this job.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Next {
    /// Dispatch the next job.
    Dispatch,
    /// A person must answer; the message says how.
    Wait(String),
    /// Nothing left.
    Done,
    /// A budget or spend-cap stop (`state.stop`): a draft was landed, a person must act.
    OverBudget(String),
}

struct Job<'a> {
    env: &'a ActionEnv,
    repo: PathBuf,
    config: Config,
    forge: GithubForge,
    remote: Remote,
    started: Instant,
    redactor: Redactor,
}

impl<'a> Job<'a> {
    fn start(env: &'a ActionEnv) -> Result<Job<'a>> {
        let started = Instant::now();
        let repo = super::repo_root(Some(&env.workspace))?;
        let config_path = env.config.as_ref().map(|c| repo.join(c));
        let config = Config::load(&repo, config_path.as_deref())?;
        let Some(token) = env.github_token.clone() else {
            return Err(Error::usage(
                "no GitHub token: the `github_token` input is empty (it defaults to ${{ github.token }}; pass it explicitly if your workflow overrides it)",
            ));
        };
        let (owner, name) = env
            .repository
            .split_once('/')
            .map(|(o, n)| (o.to_string(), n.to_string()))
            .unwrap_or_default();
        let forge = GithubForge::new(
            GithubTarget {
                api_url: env.api_url.clone(),
                graphql_url: env.graphql_url.clone(),
                owner,
                repo: name,
            },
            token.expose(),
        )?;
        let mut redactor = Redactor::from_env(&config);
        for s in env.secrets() {
            redactor.add(s.expose());
        }
        Ok(Job {
            env,
            remote: Remote::new(&repo, Some(token)),
            repo,
            config,
            forge,
            started,
            redactor,
        })
    }

    fn outputs(&self, phase: &str, gate: &str, pr_url: &str, next_run: &str) -> Result<()> {
        let out = self.env.output.as_deref();
        runner::set_output(out, "phase", phase)?;
        runner::set_output(out, "gate", gate)?;
        runner::set_output(out, "pr_url", pr_url)?;
        runner::set_output(out, "next_run", next_run)
    }

    /// Ends the job without running anything, saying why.
    fn nothing(&self, why: &str) -> Result<Exit> {
        eprintln!("spec-orchestrate: nothing to do: {why}");
        self.outputs("", "", "", "")?;
        runner::add_summary(
            self.env.summary.as_deref(),
            &format!("## spec-orchestrate\n\nNothing to do: {why}\n"),
        )?;
        Ok(Exit::Ok)
    }

    fn run(&self) -> Result<Exit> {
        let payload_text = util::read_to_string(&self.env.event_path)?;
        let payload: serde_json::Value =
            serde_json::from_str(&payload_text).map_err(|e| Error::Input {
                path: self.env.event_path.clone(),
                problem: format!("the event payload is not JSON: {e}"),
            })?;
        let trigger = event::read(
            &self.env.event_name,
            &payload,
            &self.config.github.trigger_label,
            &self.config.github.approve_label,
        )
        .map_err(|e| Error::Input {
            path: self.env.event_path.clone(),
            problem: e,
        })?;
        let Some(issue) = trigger.issue_number() else {
            let Trigger::Ignored(why) = &trigger else {
                return self.nothing("the event names no issue");
            };
            return self.nothing(why);
        };

        // Who may drive a run: write, maintain or admin; bots only when listed.
        let actor = match &trigger {
            Trigger::Labeled { actor, .. } | Trigger::Command { actor, .. } => Some(actor),
            _ => None,
        };
        if let Some(actor) = actor
            && let Some(reason) = self.refusal(actor)?
        {
            return self.refuse(issue, &reason);
        }
        if let Trigger::Command {
            command: Err(word), ..
        } = &trigger
        {
            let names: Vec<&str> = event::Command::ALL.iter().map(|c| c.as_str()).collect();
            return self.refuse(
                issue,
                &format!(
                    "`/spec-orchestrate {word}` is not a command; use one of: {}",
                    names.join(", ")
                ),
            );
        }

        let status_comment = self.forge.find_comment(issue, status::MARKER)?;
        let head = status_comment
            .as_ref()
            .and_then(|c| status::parse_marker(&c.body))
            .and_then(|m| m.checkpoint);

        let parent = match &trigger {
            Trigger::Labeled { .. } => {
                if let Some(h) = head {
                    return self.nothing(&format!(
                        "issue #{issue} already has a run (checkpoint in run {h}); comment `/spec-orchestrate continue` to resume it"
                    ));
                }
                None
            }
            Trigger::Command { .. } => match head {
                Some(h) => Some(h),
                None => {
                    return self.refuse(
                        issue,
                        &format!(
                            "there is no run on this issue to steer yet; add the `{}` label to start one",
                            self.config.github.trigger_label
                        ),
                    );
                }
            },
            Trigger::Dispatch { parent_run, .. } => {
                if let (Some(p), Some(h)) = (parent_run, head)
                    && *p != h
                    && h != self.env.run_id
                {
                    return self.nothing(&format!(
                        "superseded: this run continues run {p}, but the newest checkpoint of issue #{issue} is run {h} (a command or another run took over)"
                    ));
                }
                parent_run.or(head)
            }
            Trigger::Ignored(_) => None,
        };

        let store = self.store()?;
        let (dir, mut state, seen) = match parent {
            Some(p) => self.restore(&store, p, issue)?,
            None => self.fresh(&trigger, issue)?,
        };

        {
            let store = StateStore::open(&dir)?;
            store.save(&mut state)?;
        }
        let mut command_halt = None;
        if let Trigger::Command {
            command: Ok(cmd),
            actor,
            ..
        } = &trigger
        {
            eprintln!("spec-orchestrate: @{} says {}", actor.login, cmd.as_str());
            let config_path = self.env.config.as_ref().map(|c| self.repo.join(c));
            let mut ctx = super::open_ctx(&self.repo, &dir, config_path.as_deref())?;
            let answer = answer::apply(&mut ctx, *cmd, &actor.login)?;
            state = ctx.state.clone();
            drop(ctx);
            match answer {
                Answer::Run => {}
                Answer::Halt(message) => command_halt = Some(message),
                Answer::Reject(message) => return self.refuse(issue, &message),
            }
        }
        if state.phase == Phase::Done && command_halt.is_none() {
            return self.nothing(&format!("the run of issue #{issue} is done"));
        }
        if command_halt.is_none()
            && let Some(w) = &state.waiting
            && matches!(trigger, Trigger::Dispatch { .. })
        {
            return self.nothing(&format!("the run waits for a person: {}", w.message));
        }
        {
            let store = StateStore::open(&dir)?;
            store.save(&mut state)?;
        }

        let ran = state.phase;
        let feature = state.feature.clone();
        let before = progress(&state);
        let end = match &command_halt {
            Some(_) => PhaseEnd::Exited(0),
            None => self.run_phase(&feature)?,
        };
        let state_store = StateStore::open(&dir)?;
        let mut state = state_store.load()?.ok_or_else(|| Error::State {
            path: state_store.path(),
            problem: "the phase process left no state".into(),
            help: "the phase ended before its first save; its log above says why. Re-run the job"
                .into(),
        })?;

        if let Some(failure) = child_error(end) {
            return self.failed(
                issue,
                &state,
                status_comment.as_ref().map(|c| c.id),
                parent,
                ran,
                failure,
            );
        }

        // Publish: commit what the phase left (never a half-done phase), push, pull request.
        let git = Git::new(&self.repo);
        if let Some(branch) = state.branch.clone() {
            if end != PhaseEnd::Budget && command_halt.is_none() {
                if git.current_branch().ok().as_deref() != Some(branch.name.as_str()) {
                    return Err(Error::repo(
                        &self.repo,
                        format!(
                            "after {ran} the checkout is not on the work branch {}; refusing to commit elsewhere",
                            branch.name
                        ),
                    )
                    .with_help("an agent switched branches; re-run the job to restore the branch from the checkpoint"));
                }
                // One commit per phase execution, numbered like the phase log, so that a loop's
                // second pass is told apart from its first (and a duplicate would show).
                let pass = state
                    .phase_log
                    .iter()
                    .filter(|e| e.phase == ran)
                    .count()
                    .max(1);
                let issue_ref = state
                    .issue
                    .number
                    .map(|n| format!(", #{n}"))
                    .unwrap_or_default();
                let message = format!("spec-orchestrate: {ran} (pass {pass}{issue_ref})");
                if let Some(sha) = git.commit_all(&message)?
                    && let Some(b) = state.branch.as_mut()
                {
                    b.head = Some(sha);
                }
            }
            let sha = git.run(&["rev-parse", &format!("refs/heads/{}", branch.name)])?;
            let seen = match &seen {
                Some(s) => s.clone(),
                None => self.remote.remote_head(&branch.name)?,
            };
            self.remote.push(&branch.name, &sha, seen.as_deref())?;
            state.record_side_effect("push", serde_json::Value::String(sha));
        }
        // The `pr` phase's body, or the draft a budget or spend-cap stop landed.
        if (ran == Phase::Pr || state.stop.is_some())
            && end != PhaseEnd::Budget
            && command_halt.is_none()
        {
            self.publish_pr(&dir, &mut state)?;
        }

        // A job stopped at its time budget before any agent call finished would hand over
        // forever; after three such jobs in a row the chain waits for a larger budget.
        let idle = if end == PhaseEnd::Budget && progress(&state) == before {
            state
                .side_effect("budget-idle")
                .and_then(|v| v.as_u64())
                .unwrap_or(0)
                + 1
        } else {
            0
        };
        state.record_side_effect("budget-idle", serde_json::json!(idle));
        let next = match &command_halt {
            Some(m) => Next::Wait(m.clone()),
            None if idle >= 3 => Next::Wait(format!(
                "{idle} jobs in a row reached job_budget_minutes ({} min) before {ran} made any progress; raise the input, then comment `/spec-orchestrate continue`",
                self.env.job_budget.as_secs_f64() / 60.0
            )),
            None => self.next_of(&state, end),
        };
        let outcome = match (&command_halt, end) {
            (Some(_), _) => "stopped".to_string(),
            (None, PhaseEnd::Budget) => "continued (job time budget)".to_string(),
            _ => state
                .phase_log
                .iter()
                .rev()
                .find(|e| e.phase == ran)
                .map(|e| e.outcome.clone())
                .unwrap_or_else(|| "ok".into()),
        };
        let checkpoint_name = store::artifact_name(issue, ran, self.env.run_attempt);
        let record = RunRecord {
            run_id: self.env.run_id,
            attempt: self.env.run_attempt,
            phase: ran,
            outcome: outcome.clone(),
            url: self.env.run_url(self.env.run_id),
            checkpoint: checkpoint_name.clone(),
        };
        state.record_side_effect(
            &format!("run:{}", self.env.run_id),
            serde_json::to_value(&record).unwrap_or_default(),
        );

        // The status comment now names this run as the chain's head.
        let pr_url = state
            .pr
            .as_ref()
            .filter(|p| p.number.is_some())
            .map(|p| p.url.clone());
        let headline = self.headline(&state, ran, &outcome, &next);
        let body = self.redactor.redact(&status::render(
            issue,
            &state,
            &View {
                checkpoint: Some(self.env.run_id),
                headline: headline.clone(),
                pr_url: pr_url.clone(),
                notice: None,
            },
        ));
        let comment = self.forge.upsert_comment(
            issue,
            status::MARKER,
            &body,
            status_comment.as_ref().map(|c| c.id),
        )?;
        state.record_side_effect("status-comment", serde_json::json!(comment.id));

        // Checkpoint: the state (with every side effect above) and the ignored files.
        state_store.save(&mut state)?;
        let zip = archive::build(&self.repo, &crate::spec::spec_rel(&state.feature))?;
        let saved = store.save(self.env.run_id, &checkpoint_name, &zip)?;
        eprintln!(
            "spec-orchestrate: checkpoint {} ({} bytes, {})",
            saved.name, saved.size, saved.digest
        );
        drop(state_store);

        let mut next_run = String::new();
        if next == Next::Dispatch {
            let dispatched = self.dispatch(issue)?;
            if let Some(id) = dispatched.run_id {
                next_run = id.to_string();
            }
            eprintln!(
                "spec-orchestrate: dispatched the next run{}",
                dispatched
                    .html_url
                    .map(|u| format!(": {u}"))
                    .unwrap_or_default()
            );
        }

        let (phase_out, gate) = match command_halt {
            Some(_) => ("", String::new()),
            None => (ran.as_str(), gate_of(&state, ran)),
        };
        self.outputs(
            phase_out,
            &gate,
            pr_url.as_deref().unwrap_or_default(),
            &next_run,
        )?;
        runner::add_summary(
            self.env.summary.as_deref(),
            &self.redactor.redact(&status::job_summary(
                &state,
                command_halt.is_none().then_some(ran),
                &headline,
                pr_url.as_deref(),
            )),
        )?;
        eprintln!("spec-orchestrate: {headline}");
        Ok(match end {
            PhaseEnd::Exited(1) => Exit::Failed,
            _ => Exit::Ok,
        })
    }

    /// Why `actor` may not drive a run, if they may not.
    fn refusal(&self, actor: &Actor) -> Result<Option<String>> {
        if actor.is_bot {
            return Ok((!self.config.github.allowed_bots.contains(&actor.login)).then(|| {
                format!(
                    "@{} is a bot that is not listed in `github.allowed_bots` of .specs/pipeline.yml",
                    actor.login
                )
            }));
        }
        let p = self.forge.permission(&actor.login)?;
        Ok((!p.can_write()).then(|| {
            format!(
                "@{} has `{}` access to this repository; starting or steering spec-orchestrate needs write, maintain or admin",
                actor.login,
                p.level()
            )
        }))
    }

    /// Replies once (per run) and stops.
    fn refuse(&self, issue: u64, reason: &str) -> Result<Exit> {
        let marker = format!("{} run={} -->", status::REFUSAL_MARKER, self.env.run_id);
        if self.forge.find_comment(issue, &marker)?.is_none() {
            self.forge.create_comment(
                issue,
                &format!("{marker}\nspec-orchestrate did not act: {reason}."),
            )?;
        }
        eprintln!("spec-orchestrate: refused: {reason}");
        self.outputs("", "", "", "")?;
        runner::add_summary(
            self.env.summary.as_deref(),
            &format!("## spec-orchestrate\n\nRefused: {reason}.\n"),
        )?;
        Ok(Exit::Ok)
    }

    fn store(&self) -> Result<Store> {
        if let Some(dir) = &self.env.checkpoint_dir {
            return Ok(Store::Local(LocalStore::new(dir)));
        }
        match (
            &self.env.results_url,
            &self.env.runtime_token,
            &self.env.github_token,
        ) {
            (Some(url), Some(rt), Some(gt)) => {
                Ok(Store::Artifact(Box::new(store::ArtifactStore::new(
                    url,
                    rt.clone(),
                    &self.env.api_url,
                    &self.env.repository,
                    gt.clone(),
                )?)))
            }
            _ => Err(Error::usage(
                "no checkpoint store: ACTIONS_RUNTIME_TOKEN and ACTIONS_RESULTS_URL are not set (the runner sets them for Docker actions); set SPEC_ORCHESTRATE_CHECKPOINT_DIR to keep checkpoints in a directory instead",
            )),
        }
    }

    /// A new run for the labelled (or dispatched) issue.
    fn fresh(
        &self,
        trigger: &Trigger,
        issue: u64,
    ) -> Result<(PathBuf, State, Option<Option<String>>)> {
        let (issue_ref, base): (IssueRef, Option<String>) = match trigger {
            Trigger::Labeled {
                issue,
                default_branch,
                ..
            } => (issue.clone(), default_branch.clone()),
            _ => (self.forge.read_issue(issue)?, None),
        };
        let mut feature = util::kebab(&issue_ref.title);
        if feature.is_empty() {
            feature = format!("issue-{issue}");
        }
        let dir = crate::spec::spec_dir(&self.repo, &feature);
        let base = match base {
            Some(b) => b,
            None => Git::new(&self.repo).current_branch()?,
        };
        let mut state = State::new(&feature, issue_ref, self.env.mode);
        state.config_path = self.env.config.clone();
        state.record_side_effect("base-branch", serde_json::Value::String(base));
        ensure_gitignore(&dir)?;
        eprintln!(
            "spec-orchestrate: new run {} for issue #{issue} (`{feature}`)",
            state.run_id
        );
        Ok((dir, state, None))
    }

    /// The run as its parent's checkpoint left it: state and evidence restored, the work branch
    /// checked out at the sha that checkpoint recorded. Returns the branch's sha on origin as
    /// seen now (the push lease).
    fn restore(
        &self,
        store: &Store,
        parent: u64,
        issue: u64,
    ) -> Result<(PathBuf, State, Option<Option<String>>)> {
        let Some(found) = store.load_latest(parent, issue)? else {
            return Err(Error::State {
                path: format!("run {parent}").into(),
                problem: format!(
                    "left no checkpoint for issue #{issue} (no artifact named {}{issue}-…); it may have failed before saving one or its artifacts expired",
                    store::PREFIX
                ),
                help: "re-run that run, or comment `/spec-orchestrate continue` to resume from the newest checkpoint".into(),
            });
        };
        eprintln!(
            "spec-orchestrate: restoring checkpoint {} of run {parent}",
            found.name
        );
        let (state_rel, state) = archive::state_of(&found.zip)?;
        let dir = self.repo.join(
            Path::new(&state_rel)
                .parent()
                .unwrap_or_else(|| Path::new(".specs")),
        );
        let mut seen = None;
        if let Some(branch) = &state.branch {
            let origin_sha = self.remote.fetch_branch(&branch.name)?;
            let want = state
                .side_effect("push")
                .and_then(|v| v.as_str())
                .map(str::to_string)
                .or_else(|| branch.head.clone())
                .or(origin_sha.clone())
                .ok_or_else(|| {
                    Error::repo(
                        &self.repo,
                        format!(
                            "the checkpoint of run {parent} names branch {} but no commit, and origin has no such branch",
                            branch.name
                        ),
                    )
                    .with_help("the work branch was deleted; delete the status comment to start the issue over")
                })?;
            let git = Git::new(&self.repo);
            if git
                .run(&["cat-file", "-e", &format!("{want}^{{commit}}")])
                .is_err()
            {
                return Err(Error::repo(
                    &self.repo,
                    format!(
                        "commit {want} of the work branch {} (recorded by run {parent}) is not on origin any more; someone rewrote the branch. Restore it, or delete the branch and the status comment to start over",
                        branch.name
                    ),
                ));
            }
            git.run(&["checkout", "--quiet", "-B", &branch.name, &want])?;
            seen = Some(origin_sha);
        }
        archive::extract(&found.zip, &self.repo)?;
        ensure_gitignore(&dir)?;
        Ok((dir, state, seen))
    }

    /// Runs `step` for `feature` in a child process without the tokens, stopping it at the
    /// job's time budget.
    fn run_phase(&self, feature: &str) -> Result<PhaseEnd> {
        use std::os::unix::process::CommandExt;
        let exe = std::env::current_exe().map_err(|e| Error::io("current executable", e))?;
        let mut cmd = Process::new(exe);
        cmd.arg("step")
            .arg("--repo")
            .arg(&self.repo)
            .arg("--feature")
            .arg(feature)
            .current_dir(&self.repo)
            .process_group(0);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("INPUT_") {
                cmd.env_remove(&k);
            }
        }
        for k in WITHHELD {
            cmd.env_remove(k);
        }
        if let Some(k) = &self.env.anthropic_key {
            cmd.env("ANTHROPIC_API_KEY", k.expose());
        }
        if let Some(k) = &self.env.openai_key {
            cmd.env("OPENAI_API_KEY", k.expose());
        }
        let budget = self.env.job_budget;
        // Keep time to push, checkpoint and dispatch: a fifth of the budget, at most 3 minutes.
        let reserve = (budget / 5).min(Duration::from_secs(180));
        let deadline = self.started + budget.saturating_sub(reserve);
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::io("spec-orchestrate step", e))?;
        let pid = child.id() as i32;
        loop {
            if let Some(status) = child
                .try_wait()
                .map_err(|e| Error::io("spec-orchestrate step", e))?
            {
                use std::os::unix::process::ExitStatusExt;
                return Ok(match (status.code(), status.signal()) {
                    (Some(c), _) => PhaseEnd::Exited(c),
                    (None, Some(s)) => PhaseEnd::Killed(s),
                    (None, None) => PhaseEnd::Killed(0),
                });
            }
            if Instant::now() >= deadline {
                eprintln!(
                    "spec-orchestrate: the job's time budget ({} min) is nearly spent; stopping the phase to checkpoint and continue in a new run",
                    budget.as_secs_f64() / 60.0
                );
                // SIGTERM to the phase's process group, then SIGKILL after a grace period.
                // SAFETY: kill(2) with a negative pid signals the process group we created.
                unsafe { libc::kill(-pid, libc::SIGTERM) };
                let grace = Instant::now() + Duration::from_secs(10);
                while Instant::now() < grace {
                    if child
                        .try_wait()
                        .map_err(|e| Error::io("spec-orchestrate step", e))?
                        .is_some()
                    {
                        return Ok(PhaseEnd::Budget);
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                // SAFETY: as above.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                let _ = child.wait();
                return Ok(PhaseEnd::Budget);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn publish_pr(&self, dir: &Path, state: &mut State) -> Result<()> {
        let Some(local) = state.pr.clone() else {
            return Ok(());
        };
        let Some(branch) = state.branch.clone() else {
            return Ok(());
        };
        let body_path = dir.join("pr-body.md");
        let body = self.redactor.redact(&util::read_to_string(&body_path)?);
        let base = state
            .side_effect("base-branch")
            .and_then(|v| v.as_str())
            .unwrap_or("main")
            .to_string();
        let pr =
            self.forge
                .publish_pr(&state.issue.title, &branch.name, &base, &body, local.draft)?;
        eprintln!(
            "spec-orchestrate: pull request #{} {} ({})",
            pr.number,
            pr.html_url,
            if pr.draft { "draft" } else { "ready" }
        );
        state.pr = Some(PrRef {
            number: Some(pr.number),
            url: pr.html_url,
            draft: pr.draft,
        });
        state.record_side_effect("pull-request", serde_json::json!(pr.number));
        Ok(())
    }

    fn next_of(&self, state: &State, end: PhaseEnd) -> Next {
        if end == PhaseEnd::Budget {
            return Next::Dispatch;
        }
        if state.phase == Phase::Done {
            return Next::Done;
        }
        if let Some(w) = &state.waiting {
            return Next::Wait(w.message.clone());
        }
        if let Some(stop) = &state.stop {
            return Next::OverBudget(stop.message.clone());
        }
        Next::Dispatch
    }

    fn headline(&self, state: &State, ran: Phase, outcome: &str, next: &Next) -> String {
        match next {
            Next::Dispatch if outcome.starts_with("continued") => format!(
                "{ran} ran out of this job's time; it continues in a new run from the checkpoint"
            ),
            Next::Dispatch => format!("{ran}: {outcome}. Next: {}, in a new run.", state.phase),
            Next::Done => {
                if state.pr.as_ref().is_some_and(|p| p.draft) {
                    "Done: the pull request is a draft (see why in its body).".into()
                } else {
                    "Done: the pull request is ready for review.".into()
                }
            }
            Next::OverBudget(why) => format!(
                "Stopped, with a draft pull request: {why} Then comment `/spec-orchestrate continue`."
            ),
            Next::Wait(message) => match state.waiting.as_ref().map(|w| w.kind.as_str()) {
                Some("approval") => format!(
                    "Waiting for approval: the spec on branch `{}` passed review. Read it, then comment `/spec-orchestrate approve`.",
                    state
                        .branch
                        .as_ref()
                        .map(|b| b.name.as_str())
                        .unwrap_or("-")
                ),
                Some("arbitration") => format!(
                    "Waiting for a decision: {message}. Comment `/spec-orchestrate continue`, `swap`, `draft` or `approve`."
                ),
                _ => format!("Waiting: {message}"),
            },
        }
    }

    fn dispatch(&self, issue: u64) -> Result<crate::forge::github::DispatchedRun> {
        let (Some(file), Some(git_ref)) = (&self.env.workflow_file, &self.env.workflow_ref) else {
            return Err(Error::usage(
                "GITHUB_WORKFLOW_REF is not set, so the next run cannot be dispatched; the runner sets it for every job",
            )
            .with_help("run spec-orchestrate as a step of a workflow job (see examples/workflow.yml), and do not clear GITHUB_WORKFLOW_REF in its env"));
        };
        let inputs = BTreeMap::from([
            ("issue".to_string(), issue.to_string()),
            ("parent_run".to_string(), self.env.run_id.to_string()),
        ]);
        self.forge.dispatch(file, git_ref, &inputs)
    }

    /// The phase failed: say so on the status comment (the checkpoint pointer stays at the
    /// parent, so re-running this job resumes from there) and fail the job with the kind of the
    /// phase's error.
    fn failed(
        &self,
        issue: u64,
        state: &State,
        comment_id: Option<u64>,
        parent: Option<u64>,
        ran: Phase,
        (kind, why): (ErrorKind, String),
    ) -> Result<Exit> {
        let notice = format!(
            "Run {} (attempt {}) failed during {ran}: {why}. Use “Re-run failed jobs” on {} to resume from {}.",
            self.env.run_id,
            self.env.run_attempt,
            self.env.run_url(self.env.run_id),
            match parent {
                Some(p) => format!("the checkpoint of run {p}"),
                None => "the start".into(),
            }
        );
        let body = self.redactor.redact(&status::render(
            issue,
            state,
            &View {
                checkpoint: parent,
                headline: format!("{ran} failed in run {}", self.env.run_id),
                pr_url: state
                    .pr
                    .as_ref()
                    .filter(|p| p.number.is_some())
                    .map(|p| p.url.clone()),
                notice: Some(notice.clone()),
            },
        ));
        if let Err(e) = self
            .forge
            .upsert_comment(issue, status::MARKER, &body, comment_id)
        {
            eprintln!("spec-orchestrate: could not update the status comment: {e}");
        }
        self.outputs(ran.as_str(), "", "", "")?;
        runner::add_summary(
            self.env.summary.as_deref(),
            &format!("## spec-orchestrate\n\n{notice}\n"),
        )?;
        Err(Error::PhaseFailed {
            kind,
            message: notice,
        })
    }
}

/// Whether the phase process failed, with the kind of its error (from its exit code) and why.
/// Any code from 2 up is an error; a code this binary never uses (a panic exits 101) and a
/// signal count as `io`: the process could not run to its end.
fn child_error(end: PhaseEnd) -> Option<(ErrorKind, String)> {
    match end {
        PhaseEnd::Killed(sig) => Some((
            ErrorKind::Io,
            format!("the phase process was killed by signal {sig}"),
        )),
        PhaseEnd::Exited(code) if code >= 2 => Some((
            ErrorKind::from_exit_code(code).unwrap_or(ErrorKind::Io),
            "the phase ended with an error (see the log above)".to_string(),
        )),
        PhaseEnd::Exited(_) | PhaseEnd::Budget => None,
    }
}

/// What changes when a phase gets anywhere: agent calls made, phases logged, tasks settled.
fn progress(state: &State) -> (u64, usize, usize, usize) {
    (
        state.usage.values().map(|u| u.calls).sum(),
        state.phase_log.len(),
        state.agent_failures.len(),
        state
            .tasks
            .iter()
            .filter(|t| {
                matches!(
                    t.status,
                    crate::state::TaskStatus::Done | crate::state::TaskStatus::Blocked
                )
            })
            .count(),
    )
}

/// The gate the phase `ran` produced, for the `gate` output.
fn gate_of(state: &State, ran: Phase) -> String {
    match ran {
        Phase::Inspect => state.inspect.as_ref().map(|i| i.gate.to_string()),
        Phase::SpecReview => state.rounds.spec_review.last().map(|r| r.gate.to_string()),
        Phase::Evaluate => state.rounds.evaluate.last().map(|r| r.gate.to_string()),
        _ => None,
    }
    .unwrap_or_default()
}

/// The feature's `.gitignore` keeps the state and evidence out of every commit; a checkpoint
/// restored into a fresh checkout must never be committed by accident.
fn ensure_gitignore(dir: &Path) -> Result<()> {
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        util::write_text(&ignore, super::run::FEATURE_GITIGNORE)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_error_keeps_the_kind_its_exit_code_names() {
        assert_eq!(child_error(PhaseEnd::Exited(0)), None);
        assert_eq!(
            child_error(PhaseEnd::Exited(1)),
            None,
            "a draft is no error"
        );
        assert_eq!(child_error(PhaseEnd::Budget), None);
        for kind in ErrorKind::ALL {
            let code = i32::from(kind.exit_code());
            if code < 2 {
                continue;
            }
            let (got, _) = child_error(PhaseEnd::Exited(code)).expect("an error");
            assert_eq!(got, kind, "exit code {code}");
        }
        let (panic, _) = child_error(PhaseEnd::Exited(101)).expect("a panic is an error");
        assert_eq!(panic, ErrorKind::Io);
        let (killed, why) = child_error(PhaseEnd::Killed(9)).expect("a kill is an error");
        assert_eq!(killed, ErrorKind::Io);
        assert!(why.contains("signal 9"), "{why}");
    }
}
