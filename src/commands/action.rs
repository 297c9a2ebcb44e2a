//! `spec-orchestrate action`: one GitHub Actions job of the chain (`docs/action-mode.md`).
//!
//! A job reads its event, checks who caused it, restores the run from its parent's checkpoint
//! (or starts one), runs one phase that calls agents (or one loop round) together with the
//! phases around it that call none — or exactly one phase with `github.jobs: per_phase` — and
//! then publishes: commit and push of the work
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
pub mod catch_up;
pub mod env;
pub mod evidence;
pub mod runner;
pub mod sweep;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::time::{Duration, Instant};

use self::answer::AfterCommand;
use self::env::ActionEnv;
use super::Exit;
use crate::config::{Config, JobsMode};
use crate::error::{Error, ErrorKind, Result};
use crate::forge::github::event::{self, Actor, Trigger};
use crate::forge::github::{GithubForge, GithubTarget, Permission};
use crate::forge::remote::Remote;
use crate::git::Git;
use crate::report::status::{self, View};
use crate::secrets::Redactor;
use crate::state::job::{EarlierPhase, Effect, JobRun};
use crate::state::{IssueRef, PrRef, State, StateStore};
use crate::store::local::LocalStore;
use crate::store::{self, Store, archive};
use crate::types::kinds::{JobOutcome, PhaseOutcome};
use crate::types::{Outcome, Phase};
use crate::{process, util};

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
enum AfterJob {
    /// Dispatch the next job.
    Dispatch,
    /// A person must answer; the message says how.
    Wait(String),
    /// Nothing left.
    Done,
    /// A budget or spend-cap stop (`state.stop`): a draft was landed, a person must act.
    OverBudget(String),
}

/// Which checkpoint a job continues, or why it does nothing; decided from the event and the
/// status comment alone, before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Resume {
    /// Go on from this run's checkpoint; `None` starts a fresh run.
    From(Option<u64>),
    /// End the job quietly, saying why.
    Nothing(String),
    /// Reply on the issue and end the job.
    Refuse(String),
}

/// What this job's phase step did, for the publishing and reporting steps.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ran {
    /// The issue of the run.
    issue: u64,
    /// The phases that ran and ended before `phase` (phases that call no agent riding along
    /// with the one that does), with their outcomes; empty with `github.jobs: per_phase`.
    earlier: Vec<EarlierPhase>,
    /// The last phase that ran (or was due, when a command halted the chain).
    phase: Phase,
    /// How the phase process ended.
    end: PhaseEnd,
    /// A command's message when it halted the chain: nothing ran, nothing is dispatched.
    halt: Option<String>,
    /// The status comment to edit, if the issue has one.
    comment_id: Option<u64>,
    /// The pull request was already published during the phase steps.
    pr_published: bool,
}

/// The push lease: what this job knows of the work branch on `origin`, so that a push never
/// overwrites a commit it has not seen.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Lease {
    /// Not looked at yet (a fresh run): asked of `origin` right before the push.
    Unknown,
    /// `origin` has no such branch: the push creates it.
    Absent,
    /// `origin` has the branch at this sha.
    At(String),
}

/// What the catch-up step found.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CaughtUp {
    /// The newest comment id processed.
    seen: u64,
    /// The message of a `stop` among the comments (not resumed by a later `continue`).
    halt: Option<String>,
    /// Why the job does nothing: its own command was applied by an earlier job.
    done_already: Option<String>,
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

impl Ran {
    /// Every phase the job ran, in order.
    fn phases(&self) -> Vec<Phase> {
        self.earlier
            .iter()
            .map(|e| e.phase)
            .chain([self.phase])
            .collect()
    }

    /// The phases as the headline names them: `spec_review → approval`.
    fn label(&self) -> String {
        let names: Vec<&str> = self.phases().iter().map(|p| p.as_str()).collect();
        names.join(" → ")
    }
}

/// What the phase steps of a job left: the phases run, how the last one ended, and the state it
/// saved with its store kept open until the checkpoint is written.
struct Steps {
    /// The pull request was opened (or the repository refused it) right after a `pr` phase
    /// that other phases followed in this job.
    pr_published: bool,
    earlier: Vec<EarlierPhase>,
    phase: Phase,
    end: PhaseEnd,
    store: StateStore,
    state: State,
}

impl<'a> Job<'a> {
    fn start(env: &'a ActionEnv) -> Result<Job<'a>> {
        let started = Instant::now();
        let repo = super::repo_root(Some(&env.workspace))?;
        let config_path = env.config.as_ref().map(|c| repo.join(c));
        let config = Config::load(&repo, config_path.as_deref())?;
        crate::prompts::check_overrides(&repo)?;
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
        let mut forge = GithubForge::new(
            GithubTarget {
                api_url: env.api_url.clone(),
                graphql_url: env.graphql_url.clone(),
                owner,
                repo: name,
            },
            token.expose(),
        )?;
        // The status comment and replies are found among the comments this identity wrote.
        forge.learn_identity()?;
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
        crate::events::emit(crate::events::Event::Job {
            message: format!("nothing to do: {why}"),
        });
        self.outputs("", "", "", "")?;
        runner::add_summary(
            self.env.summary.as_deref(),
            &format!("## spec-orchestrate\n\nNothing to do: {why}\n"),
        )?;
        Ok(Exit::Ok)
    }

    /// One job of the chain, in the order its steps run: read the event, authorise who caused
    /// it, find which checkpoint to continue, restore (or start) the run, apply a command, run
    /// one phase, publish its work, decide what comes next and report.
    fn run(&self) -> Result<Exit> {
        if self.env.event_name == "schedule" {
            return self.sweep();
        }
        let trigger = self.read_trigger()?;
        let Some(issue) = trigger.issue_number() else {
            let Trigger::Ignored(why) = &trigger else {
                return self.nothing("the event names no issue");
            };
            return self.nothing(why);
        };
        if let Some(reason) = self.authorise(&trigger)? {
            return self.refuse(issue, &reason);
        }

        let (status_comment, head) = self.status_head(issue)?;
        let parent = match resume_from(
            &trigger,
            issue,
            head,
            self.env.run_id,
            &self.config.github.trigger_label,
        ) {
            Resume::From(parent) => parent,
            Resume::Nothing(why) => return self.nothing(&why),
            Resume::Refuse(reason) => return self.refuse(issue, &reason),
        };

        let store = self.store()?;
        let (dir, mut state, mut lease) = self.open_run(&store, &trigger, issue, parent)?;
        let caught = self.catch_up(&trigger, issue, &dir, &mut state)?;
        if let Some(why) = caught.done_already {
            return self.nothing(&why);
        }
        let command_halt = match self.apply_command(&trigger, &dir, &mut state)? {
            AfterCommand::Run if matches!(trigger, Trigger::Command { .. }) => None,
            AfterCommand::Run => caught.halt,
            AfterCommand::Halt(message) => Some(message),
            AfterCommand::Reject(message) => return self.refuse(issue, &message),
        };
        if let Trigger::Command { comment_id, .. } = trigger {
            let seen_id = caught.seen.max(comment_id);
            state.job.record(Effect::CommentsSeen(seen_id));
        }
        if let Some(why) = skip_reason(&state, command_halt.is_some(), &trigger, issue) {
            return self.nothing(&why);
        }
        {
            let store = StateStore::open(&dir)?;
            store.save(&mut state)?;
        }

        // The first job of a chain checks what the run needs (`doctor`'s local checks) before
        // any agent runs, so a missing key is on the status comment at once.
        let config = self.env.config.as_ref().map(|c| self.repo.join(c));
        let keys = [
            ("ANTHROPIC_API_KEY", self.env.anthropic_key.is_some()),
            ("OPENAI_API_KEY", self.env.openai_key.is_some()),
        ];
        let provided: Vec<&str> = keys.iter().filter(|k| k.1).map(|k| k.0).collect();
        if parent.is_none()
            && command_halt.is_none()
            && let Some(why) =
                super::doctor::action_preflight(&self.repo, config.as_deref(), &provided)
        {
            let comment = status_comment.as_ref().map(|c| c.id);
            return self.failed(
                issue,
                &state,
                comment,
                parent,
                state.phase,
                (ErrorKind::Config, why),
            );
        }
        let before = progress(&state);
        let Steps {
            pr_published,
            earlier,
            phase: ran,
            end,
            store: state_store,
            mut state,
        } = self.phase_steps(&store, &dir, &state, command_halt.is_some(), &mut lease)?;
        let job = Ran {
            issue,
            earlier,
            phase: ran,
            end,
            halt: command_halt,
            comment_id: status_comment.as_ref().map(|c| c.id),
            pr_published,
        };
        if let Some(failure) = child_error(end) {
            return self.failed(issue, &state, job.comment_id, parent, ran, failure);
        }
        evidence::after_phase(
            &store,
            self.env,
            &dir,
            &mut state,
            issue,
            self.config.github.evidence_retention_days,
        );
        self.publish(&job, &dir, &mut state, lease)?;

        // A job stopped at its time budget before any agent call finished would hand over
        // forever; after three such jobs in a row the chain waits for a larger budget.
        let idle = idle_jobs(&state, end, before);
        state.job.record(Effect::BudgetIdle(idle));
        let next = decide_next(&state, &job, idle, self.env.job_budget);
        let outcome = outcome_of(&state, &job);
        self.report(&job, &store, state_store, state, &next, outcome)
    }

    /// Step: the event payload the runner wrote, interpreted.
    fn read_trigger(&self) -> Result<Trigger> {
        let payload_text = util::read_to_string(&self.env.event_path)?;
        let payload: serde_json::Value =
            serde_json::from_str(&payload_text).map_err(|e| Error::Input {
                path: self.env.event_path.clone(),
                problem: format!("the event payload is not JSON: {e}"),
            })?;
        event::read(
            &self.env.event_name,
            &payload,
            &self.config.github.trigger_label,
            &self.config.github.approve_label,
        )
        .map_err(|e| Error::Input {
            path: self.env.event_path.clone(),
            problem: e,
        })
    }

    /// Step: who may drive a run (write, maintain or admin; bots only when listed), and
    /// whether their command exists. Returns the reason to refuse, if any.
    fn authorise(&self, trigger: &Trigger) -> Result<Option<String>> {
        if let Some(actor) = actor_of(trigger)
            && let Some(reason) = self.refusal(actor)?
        {
            return Ok(Some(reason));
        }
        Ok(unknown_command(trigger))
    }

    /// Step: the run restored from `parent`'s checkpoint (or started), with its state saved so
    /// that the command step and the phase process read it from disk.
    fn open_run(
        &self,
        store: &Store,
        trigger: &Trigger,
        issue: u64,
        parent: Option<u64>,
    ) -> Result<(PathBuf, State, Lease)> {
        let (dir, mut state, lease) = match parent {
            Some(p) => self.restore(store, p, issue)?,
            None => self.fresh(trigger, issue)?,
        };
        {
            let store = StateStore::open(&dir)?;
            store.save(&mut state)?;
        }
        Ok((dir, state, lease))
    }

    /// Step: the issue's status comment (only one this token wrote counts) and the checkpoint
    /// it names — kept only if that run is a run of this workflow in this repository, so a
    /// marker copied or forged elsewhere steers nothing.
    fn status_head(
        &self,
        issue: u64,
    ) -> Result<(Option<crate::forge::github::Comment>, Option<u64>)> {
        let comment = self.forge.find_comment(issue, status::MARKER)?;
        let Some(head) = comment
            .as_ref()
            .and_then(|c| status::parse_marker(&c.body))
            .and_then(|m| m.checkpoint)
        else {
            return Ok((comment, None));
        };
        let path = self.forge.run_workflow_path(head)?;
        if !is_this_workflow(path.as_deref(), self.env.workflow_file.as_deref()) {
            crate::events::emit(crate::events::Event::Job {
                message: format!(
                    "the status comment names run {head}, which is not a run of this workflow; ignoring it"
                ),
            });
            return Ok((comment, None));
        }
        Ok((comment, Some(head)))
    }

    /// Step: the authorised commands posted since the chain last looked, applied in order to the
    /// saved run (`catch_up.rs`); a fresh run starts reading after the newest comment.
    fn catch_up(
        &self,
        trigger: &Trigger,
        issue: u64,
        dir: &Path,
        state: &mut State,
    ) -> Result<CaughtUp> {
        let comments = self.forge.list_comments(issue)?;
        let own = match trigger {
            Trigger::Command { comment_id, .. } if *comment_id != 0 => Some(*comment_id),
            _ => None,
        };
        let Some(seen) = state.job.comments_seen() else {
            let newest = catch_up::newest(&comments);
            state.job.record(Effect::CommentsSeen(newest));
            StateStore::open(dir)?.save(state)?;
            return Ok(CaughtUp {
                seen: newest,
                halt: None,
                done_already: None,
            });
        };
        if let Some(id) = own.filter(|id| *id <= seen) {
            return Ok(CaughtUp {
                seen,
                halt: None,
                done_already: Some(format!(
                    "comment {id} was already applied by an earlier job of this run"
                )),
            });
        }
        let mut caught = CaughtUp {
            seen,
            halt: None,
            done_already: None,
        };
        for p in catch_up::pending(&comments, seen, own) {
            caught.seen = p.id;
            if let Some(reason) = self.refusal(&p.actor)? {
                crate::events::emit(crate::events::Event::Job {
                    message: format!("ignored comment {}: {reason}", p.id),
                });
                continue;
            }
            crate::events::emit(crate::events::Event::Job {
                message: format!(
                    "@{} said {} (comment {}) since the last job",
                    p.actor.login,
                    p.command.as_str(),
                    p.id
                ),
            });
            // Applied to the run in memory, with the job's configuration; saved once below.
            let path = dir.join(crate::state::STATE_FILE);
            match answer::apply_to(state, &self.config, p.command, &p.actor.login, &path)? {
                AfterCommand::Run => caught.halt = None,
                AfterCommand::Halt(message) => caught.halt = Some(message),
                AfterCommand::Reject(message) => {
                    crate::events::emit(crate::events::Event::Job {
                        message: format!("comment {} not applied: {message}", p.id),
                    });
                }
            }
        }
        state.job.record(Effect::CommentsSeen(caught.seen));
        StateStore::open(dir)?.save(state)?;
        Ok(caught)
    }

    /// Step: a `/spec-orchestrate` command applied to the saved run (`state` becomes the run
    /// as the command left it); any other trigger just runs.
    fn apply_command(
        &self,
        trigger: &Trigger,
        dir: &Path,
        state: &mut State,
    ) -> Result<AfterCommand> {
        let Trigger::Command {
            command: Ok(cmd),
            actor,
            ..
        } = trigger
        else {
            return Ok(AfterCommand::Run);
        };
        crate::events::emit(crate::events::Event::Job {
            message: format!("@{} says {}", actor.login, cmd.as_str()),
        });
        let path = dir.join(crate::state::STATE_FILE);
        answer::apply_to(state, &self.config, *cmd, &actor.login, &path)
    }

    /// Step: the phases of this job, each in its own process: the one that is due, then the
    /// ones after it while [`rides_along`] says so (never with `github.jobs: per_phase`). A
    /// phase that is followed by another is committed as soon as it ends, so each phase keeps
    /// its own commit; the last one is committed by the publishing step, as before.
    ///
    /// When `pr` is followed by another phase, the pull request is opened right after it (the
    /// branch pushed first, the lease moving to what was pushed): if the repository refuses it, the
    /// run waits at `pr` and nothing runs after it in this job.
    fn phase_steps(
        &self,
        store: &Store,
        dir: &Path,
        first: &State,
        halted: bool,
        lease: &mut Lease,
    ) -> Result<Steps> {
        let mut earlier = Vec::new();
        let mut phase = first.phase;
        let mut agents = false;
        let mut pr_published = false;
        loop {
            agents |= phase.calls_agents();
            let (end, state_store, mut state) = self.phase_step(dir, &first.feature, halted)?;
            let time_left = Instant::now() < self.deadline();
            let last = halted
                || end != PhaseEnd::Exited(0)
                || earlier.len() >= Phase::ALL.len()
                || !rides_along(self.config.github.jobs, &state, agents, time_left);
            if !last {
                self.commit_phase(&mut state, phase)?;
                // An evaluate round's evidence goes up before a `pr` that rides along renders
                // the body that links it (what the next job would do after an evaluate job).
                let issue = state.issue.number.unwrap_or_default();
                evidence::after_phase(
                    store,
                    self.env,
                    dir,
                    &mut state,
                    issue,
                    self.config.github.evidence_retention_days,
                );
                if phase == Phase::Pr {
                    self.push_branch(&mut state, lease.clone())?;
                    *lease = match state.job.pushed() {
                        Some(sha) => Lease::At(sha.to_string()),
                        None => Lease::Absent,
                    };
                    self.publish_pr(dir, &mut state)?;
                    pr_published = true;
                }
            }
            if last || state.waiting.is_some() {
                return Ok(Steps {
                    pr_published,
                    earlier,
                    phase,
                    end,
                    store: state_store,
                    state,
                });
            }
            state_store.save(&mut state)?;
            drop(state_store);
            earlier.push(EarlierPhase {
                phase,
                outcome: last_outcome(&state, phase),
            });
            crate::events::emit(crate::events::Event::Job {
                message: format!("{phase} done; {} rides along in this job", state.phase),
            });
            phase = state.phase;
        }
    }

    /// When this job stops its phase: `job_budget_minutes` after it started, minus a reserve to
    /// push, checkpoint and dispatch (a fifth of the budget, at most three minutes).
    fn deadline(&self) -> Instant {
        let budget = self.env.job_budget;
        let reserve = (budget / 5).min(Duration::from_secs(180));
        process::deadline(self.started, budget.saturating_sub(reserve))
    }

    /// Commits what phase `ran` left on the work branch (nothing before intake made one), and
    /// records the new head in `state`.
    fn commit_phase(&self, state: &mut State, ran: Phase) -> Result<()> {
        let Some(branch) = state.branch.clone() else {
            return Ok(());
        };
        let git = Git::new(&self.repo);
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
        let message = commit_message(state, ran);
        if let Some(sha) = git.commit_all(&message)?
            && let Some(b) = state.branch.as_mut()
        {
            b.head = Some(sha);
        }
        Ok(())
    }

    /// Step: one phase run in its own process (unless a command halted the chain), and the
    /// state it saved, with its store kept open until the checkpoint is written.
    fn phase_step(
        &self,
        dir: &Path,
        feature: &str,
        halted: bool,
    ) -> Result<(PhaseEnd, StateStore, State)> {
        let end = if halted {
            PhaseEnd::Exited(0)
        } else {
            self.run_phase(feature)?
        };
        let state_store = StateStore::open(dir)?;
        let state = state_store.load()?.ok_or_else(|| Error::State {
            path: state_store.path(),
            problem: "the phase process left no state".into(),
            help: "the phase ended before its first save; its log above says why. Re-run the job"
                .into(),
        })?;
        Ok((end, state_store, state))
    }

    /// Step: publish what the phase left — commit (never a half-done phase), push, pull
    /// request.
    fn publish(&self, job: &Ran, dir: &Path, state: &mut State, lease: Lease) -> Result<()> {
        let (ran, end) = (job.phase, job.end);
        if end != PhaseEnd::Budget && job.halt.is_none() {
            self.commit_phase(state, ran)?;
        }
        self.push_branch(state, lease)?;
        // The `pr` phase's body (unless it was published as soon as `pr` ended), or the draft a
        // budget or spend-cap stop landed.
        if !job.pr_published
            && (ran == Phase::Pr || state.stop.is_some())
            && end != PhaseEnd::Budget
            && job.halt.is_none()
        {
            self.publish_pr(dir, state)?;
        }
        Ok(())
    }

    /// Pushes the work branch (if the run has one yet) to `origin` with `lease`, what this job
    /// saw there (looked up now when the job restored nothing), and records the push.
    fn push_branch(&self, state: &mut State, lease: Lease) -> Result<()> {
        let Some(branch) = state.branch.clone() else {
            return Ok(());
        };
        let git = Git::new(&self.repo);
        let sha = git.run(&["rev-parse", &format!("refs/heads/{}", branch.name)])?;
        let seen = match lease {
            Lease::At(sha) => Some(sha),
            Lease::Absent => None,
            Lease::Unknown => self.remote.remote_head(&branch.name)?,
        };
        self.remote.push(&branch.name, &sha, seen.as_deref())?;
        state.job.record(Effect::Push(sha));
        Ok(())
    }

    /// Step: report the job — its record in the state, the status comment naming this run as
    /// the chain's head, the checkpoint, the next dispatch, step outputs and the job summary.
    fn report(
        &self,
        job: &Ran,
        store: &Store,
        state_store: StateStore,
        mut state: State,
        next: &AfterJob,
        outcome: JobOutcome,
    ) -> Result<Exit> {
        let mut record = run_record(self.env, job.issue, job.phase, outcome);
        record.earlier = job.earlier.clone();
        let checkpoint_name = record.checkpoint.clone();
        state.job.record(Effect::Run(record));

        // The status comment now names this run as the chain's head.
        let pr_url = pr_url_of(&state);
        let headline = headline(&state, &job.label(), outcome, next);
        let mut view = View {
            checkpoint: Some(self.env.run_id),
            headline: headline.clone(),
            pr_url: pr_url.clone(),
            notice: None,
            // Once there is a pull request to speak of.
            ci_note: pr_url.as_ref().and(ci_note(self.forge.identity())),
            next_run: None,
        };
        let body = self
            .redactor
            .redact(&status::render(job.issue, &state, &view));
        let comment =
            self.forge
                .upsert_comment(job.issue, status::MARKER, &body, job.comment_id)?;
        state.job.record(Effect::StatusComment(comment.id));

        self.checkpoint(store, state_store, &mut state, &checkpoint_name)?;
        let mut next_run = String::new();
        if *next == AfterJob::Dispatch
            && let Some(id) = self.dispatch_next(job.issue)?
        {
            // The comment names the run expected to go on, so a stall shows (and the sweep
            // finds it). The comment was written first: the next job must see this run as head.
            next_run = id.to_string();
            view.next_run = Some((id, self.env.run_url(id)));
            let body = self
                .redactor
                .redact(&status::render(job.issue, &state, &view));
            self.forge.edit_comment(comment.id, &body)?;
        }

        let (phase_out, gate) = step_outputs(&state, job);
        self.outputs(
            phase_out,
            &gate,
            pr_url.as_deref().unwrap_or_default(),
            &next_run,
        )?;
        runner::add_summary(
            self.env.summary.as_deref(),
            &self.redactor.redact(&status::job_summary_of(
                &state,
                &if job.halt.is_none() {
                    job.phases()
                } else {
                    Vec::new()
                },
                &headline,
                pr_url.as_deref(),
            )),
        )?;
        crate::events::emit(crate::events::Event::Job {
            message: headline.to_string(),
        });
        Ok(exit_of(job.end))
    }

    /// The checkpoint: the state (with every side effect recorded so far) and the ignored
    /// files, saved under `checkpoint_name`; the state store is released afterwards.
    fn checkpoint(
        &self,
        store: &Store,
        state_store: StateStore,
        state: &mut State,
        checkpoint_name: &str,
    ) -> Result<()> {
        state_store.save(state)?;
        let zip = archive::build(&self.repo, &crate::spec::spec_rel(&state.feature))?;
        let saved = store.save(self.env.run_id, checkpoint_name, &zip)?;
        crate::events::emit(crate::events::Event::Job {
            message: format!(
                "checkpoint {} ({} bytes, {})",
                saved.name, saved.size, saved.digest
            ),
        });
        drop(state_store);
        Ok(())
    }

    /// Dispatches the next job; returns its run id (`None` when the forge did not say and the
    /// run could not be found by listing).
    fn dispatch_next(&self, issue: u64) -> Result<Option<u64>> {
        self.dispatch_from(issue, self.env.run_id)
    }

    /// Dispatches a job of `issue` continuing the checkpoint of run `parent`; returns its run id
    /// when known.
    fn dispatch_from(&self, issue: u64, parent: u64) -> Result<Option<u64>> {
        // GitHub stamps `created_at` by its clock, in whole seconds: look a little earlier.
        let since = chrono::Utc::now() - chrono::Duration::seconds(10);
        let mut dispatched = self.dispatch(issue, parent)?;
        if dispatched.run_id.is_none()
            && let Some(file) = &self.env.workflow_file
            && let Some(found) =
                self.forge
                    .find_dispatched_run(file, since, &run_title(issue), self.env.run_id)?
        {
            dispatched = found;
        }
        let next_run = dispatched.run_id;
        crate::events::emit(crate::events::Event::Job {
            message: match dispatched.run_id {
                Some(id) => format!(
                    "dispatched the next run {id}{}",
                    dispatched
                        .html_url
                        .map(|u| format!(": {u}"))
                        .unwrap_or_default()
                ),
                None => format!(
                    "dispatched the next run; GitHub did not say which, and no run titled \"{}\" was listed",
                    run_title(issue)
                ),
            },
        });
        Ok(next_run)
    }

    /// Why `actor` may not drive a run, if they may not.
    /// Bots are decided by the configuration alone; people by their access to the repository.
    fn refusal(&self, actor: &Actor) -> Result<Option<String>> {
        if actor.is_bot {
            return Ok(bot_refusal(&self.config.github.allowed_bots, actor));
        }
        let p = self.forge.permission(&actor.login)?;
        Ok(permission_refusal(actor, &p))
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
        crate::events::emit(crate::events::Event::Job {
            message: format!("refused: {reason}"),
        });
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
            (Some(url), Some(rt), Some(gt)) => Ok(Store::Artifact(Box::new(
                crate::store::artifact::ArtifactStore::new(
                    url,
                    rt.clone(),
                    &self.env.api_url,
                    &self.env.repository,
                    gt.clone(),
                )?,
            ))),
            _ => Err(Error::usage(
                "no checkpoint store: ACTIONS_RUNTIME_TOKEN and ACTIONS_RESULTS_URL are not set (the runner sets them for Docker actions); set SPEC_ORCHESTRATE_CHECKPOINT_DIR to keep checkpoints in a directory instead",
            )),
        }
    }

    /// A new run for the labelled (or dispatched) issue.
    fn fresh(&self, trigger: &Trigger, issue: u64) -> Result<(PathBuf, State, Lease)> {
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
        state.job.record(Effect::BaseBranch(base));
        ensure_gitignore(&dir)?;
        crate::events::emit(crate::events::Event::Job {
            message: format!("new run {} for issue #{issue} (`{feature}`)", state.run_id),
        });
        Ok((dir, state, Lease::Unknown))
    }

    /// The run as its parent's checkpoint left it: state and evidence restored, the work branch
    /// checked out at the sha that checkpoint recorded. Returns the branch's sha on origin as
    /// seen now (the push lease).
    fn restore(&self, store: &Store, parent: u64, issue: u64) -> Result<(PathBuf, State, Lease)> {
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
        crate::events::emit(crate::events::Event::Job {
            message: format!("restoring checkpoint {} of run {parent}", found.name),
        });
        let (state_rel, state) = archive::state_of(&found.zip)?;
        let dir = self.repo.join(
            Path::new(&state_rel)
                .parent()
                .unwrap_or_else(|| Path::new(".specs")),
        );
        let mut lease = Lease::Unknown;
        if let Some(branch) = &state.branch {
            let origin_sha = self.remote.fetch_branch(&branch.name)?;
            let want = state
                .job
                .pushed()
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
            lease = match origin_sha {
                Some(sha) => Lease::At(sha),
                None => Lease::Absent,
            };
        }
        archive::extract(&found.zip, &self.repo)?;
        ensure_gitignore(&dir)?;
        Ok((dir, state, lease))
    }

    /// Runs `step` for `feature` in a child process without the tokens, stopping it at the
    /// job's time budget.
    fn run_phase(&self, feature: &str) -> Result<PhaseEnd> {
        let exe = std::env::current_exe().map_err(|e| Error::io("current executable", e))?;
        let mut cmd = Process::new(exe);
        cmd.arg("step")
            .arg("--repo")
            .arg(&self.repo)
            .arg("--feature")
            .arg(feature)
            .current_dir(&self.repo);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("INPUT_") {
                cmd.env_remove(&k);
            }
        }
        for k in WITHHELD {
            cmd.env_remove(k);
        }
        cmd.env("SPEC_ORCHESTRATE_PROGRESS", crate::output::mode().as_str());
        if let Some(k) = &self.env.anthropic_key {
            cmd.env("ANTHROPIC_API_KEY", k.expose());
        }
        if let Some(k) = &self.env.openai_key {
            cmd.env("OPENAI_API_KEY", k.expose());
        }
        let budget = self.env.job_budget;
        let deadline = self.deadline();
        let mut child =
            process::spawn_group(&mut cmd).map_err(|e| Error::io("spec-orchestrate step", e))?;
        let pid = child.id() as i32;
        // The step is a subreaper itself; what it leaves when it is killed (an app or agent that
        // left its group) is reparented to this process and stopped with the phase.
        let mut tree = process::tree::Tree::new(pid);
        let end = Self::wait_phase(&mut child, deadline, budget);
        tree.kill_all();
        process::disown(pid);
        crate::signals::unregister(pid);
        end
    }

    /// Waits for the phase child until `deadline`; then SIGTERM to its group, SIGKILL after a
    /// grace period, so the job keeps time to checkpoint and hand over.
    fn wait_phase(
        child: &mut std::process::Child,
        deadline: Instant,
        budget: Duration,
    ) -> Result<PhaseEnd> {
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
                crate::events::emit(crate::events::Event::Job {
                    message: format!(
                        "the job's time budget ({} min) is nearly spent; stopping the phase to checkpoint and continue in a new run",
                        budget.as_secs_f64() / 60.0
                    ),
                });
                // SIGTERM to the phase's process group, then SIGKILL after a grace period: the phase saves after every call.
                process::stop::terminate_group(pid, Duration::from_secs(10), || {
                    child.try_wait().ok().flatten().is_some()
                });
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
        let mut body = self.redactor.redact(&util::read_to_string_max(
            &body_path,
            crate::fsx::Limit::PrBody,
        )?);
        if let Some(note) = ci_note(self.forge.identity()) {
            body = format!("> [!NOTE]\n> {note}\n\n{body}");
        }
        let base = state.job.base_branch().unwrap_or("main").to_string();
        let pr =
            match self
                .forge
                .publish_pr(&state.issue.title, &branch.name, &base, &body, local.draft)
            {
                Ok(pr) => pr,
                Err(e) if pr_refusal(&e) == Some(PrRefusal::ActionsMayNotCreatePrs) => {
                    wait_for_pr_setting(state, &self.env.server_url, &self.env.repository);
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
        crate::events::emit(crate::events::Event::Job {
            message: format!(
                "pull request #{} {} ({})",
                pr.number,
                pr.html_url,
                if pr.draft { "draft" } else { "ready" }
            ),
        });
        state.pr = Some(PrRef {
            number: Some(pr.number),
            url: pr.html_url,
            draft: pr.draft,
        });
        state.job.record(Effect::PullRequest(pr.number));
        Ok(())
    }

    fn dispatch(&self, issue: u64, parent: u64) -> Result<crate::forge::github::DispatchedRun> {
        let (Some(file), Some(git_ref)) = (&self.env.workflow_file, &self.env.workflow_ref) else {
            return Err(Error::usage(
                "GITHUB_WORKFLOW_REF is not set, so the next run cannot be dispatched; the runner sets it for every job",
            )
            .with_help("run spec-orchestrate as a step of a workflow job (see examples/workflow.yml), and do not clear GITHUB_WORKFLOW_REF in its env"));
        };
        let inputs = BTreeMap::from([
            ("issue".to_string(), issue.to_string()),
            ("parent_run".to_string(), parent.to_string()),
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
                ci_note: None,
                next_run: None,
            },
        ));
        if let Err(e) = self
            .forge
            .upsert_comment(issue, status::MARKER, &body, comment_id)
        {
            crate::events::emit(crate::events::Event::Job {
                message: format!("could not update the status comment: {e}"),
            });
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

/// The login of the workflow's own `GITHUB_TOKEN` (GitHub docs, "GITHUB_TOKEN": a GitHub App
/// installation token of the GitHub Actions app), on github.com and Enterprise Server alike.
pub const ACTIONS_BOT: &str = "github-actions[bot]";

/// Why CI will not run on the pull request, when the token is the workflow's `GITHUB_TOKEN`:
/// "events triggered by the GITHUB_TOKEN, with the exception of workflow_dispatch and
/// repository_dispatch, will not create a new workflow run" (GitHub docs, "Triggering a workflow
/// from a workflow"), so neither opening the pull request nor pushing to its branch starts the
/// repository's CI. A GitHub App installation token or a personal access token does.
fn ci_note(identity: Option<&str>) -> Option<String> {
    (identity == Some(ACTIONS_BOT)).then(|| {
        "CI will not run on this pull request on its own: spec-orchestrate opens and pushes it with the workflow's GITHUB_TOKEN, and GitHub starts no workflow for events that token causes. To run CI now, close and reopen the pull request, or push a commit to its branch, yourself. To have CI run on every pull request of spec-orchestrate, pass a GitHub App installation token or a fine-grained personal access token as `github_token` (the workflow .github/workflows/spec-orchestrate.yml has a commented `actions/create-github-app-token` step for it).".to_string()
    })
}

/// The title of every run of issue `issue`: the written workflow's `run-name` evaluates to it
/// (`run-name: "spec-orchestrate: issue #${{ github.event.issue.number || inputs.issue }}"`),
/// so a dispatched run can be told apart by its `display_title` where GitHub does not return
/// the run of a dispatch (GitHub Enterprise Server 3.20 and older).
pub fn run_title(issue: u64) -> String {
    format!("spec-orchestrate: issue #{issue}")
}

/// What follows a phase that ended as `end` and left `state`.
fn next_of(state: &State, end: PhaseEnd) -> AfterJob {
    if end == PhaseEnd::Budget {
        return AfterJob::Dispatch;
    }
    if state.phase == Phase::Done {
        return AfterJob::Done;
    }
    if let Some(w) = &state.waiting {
        return AfterJob::Wait(w.message.clone());
    }
    if let Some(stop) = &state.stop {
        return AfterJob::OverBudget(stop.message.clone());
    }
    AfterJob::Dispatch
}

/// The one-line status of the chain after this job, for the comment, the summary and the log;
/// `ran` names the phases the job ran.
fn headline(state: &State, ran: &str, outcome: JobOutcome, next: &AfterJob) -> String {
    match next {
        AfterJob::Dispatch if outcome.continues() => format!(
            "{ran} ran out of this job's time; it continues in a new run from the checkpoint"
        ),
        AfterJob::Dispatch => format!("{ran}: {outcome}. Next: {}, in a new run.", state.phase),
        AfterJob::Done => {
            if state.pr.as_ref().is_some_and(|p| p.draft) {
                "Done: the pull request is a draft (see why in its body).".into()
            } else {
                "Done: the pull request is ready for review.".into()
            }
        }
        AfterJob::OverBudget(why) => format!(
            "Stopped, with a draft pull request: {why} Then comment `/spec-orchestrate continue`."
        ),
        AfterJob::Wait(message) => match state.waiting.as_ref().map(|w| w.kind.as_str()) {
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

/// The person or bot whose permission decides whether the job acts. A dispatch is the chain's
/// own (or came from someone who could run the workflow), so it is not checked again.
fn actor_of(trigger: &Trigger) -> Option<&Actor> {
    match trigger {
        Trigger::Labeled { actor, .. } | Trigger::Command { actor, .. } => Some(actor),
        _ => None,
    }
}

/// Why a bot may not drive a run: it is not listed in `github.allowed_bots`.
fn bot_refusal(allowed_bots: &[String], actor: &Actor) -> Option<String> {
    (!allowed_bots.contains(&actor.login)).then(|| {
        format!(
            "@{} is a bot that is not listed in `github.allowed_bots` of .specs/pipeline.yml",
            actor.login
        )
    })
}

/// Why a person may not drive a run: less than write access.
fn permission_refusal(actor: &Actor, p: &Permission) -> Option<String> {
    (!p.can_write()).then(|| {
        format!(
            "@{} has `{}` access to this repository; starting or steering spec-orchestrate needs write, maintain or admin",
            actor.login,
            p.level()
        )
    })
}

/// The reply to `/spec-orchestrate <word>` when the word is not a command.
fn unknown_command(trigger: &Trigger) -> Option<String> {
    let Trigger::Command {
        command: Err(word), ..
    } = trigger
    else {
        return None;
    };
    let names: Vec<&str> = event::Command::ALL.iter().map(|c| c.as_str()).collect();
    Some(format!(
        "`/spec-orchestrate {word}` is not a command; use one of: {}",
        names.join(", ")
    ))
}

/// Why the forge refused to open the pull request, where the job decides something on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PrRefusal {
    /// GitHub's 403 when the repository setting "Allow GitHub Actions to create and approve pull
    /// requests" is off and the token is the workflow's own: the run waits for the setting.
    ActionsMayNotCreatePrs,
}

/// The classification of a failed pull-request call, the one place that reads the forge's
/// error. GitHub says which refusal it is only in the message of its answer, so until forge
/// errors carry the status and GitHub's error code, that sentence identifies it; any other
/// failure is no refusal and stays an error.
fn pr_refusal(e: &Error) -> Option<PrRefusal> {
    matches!(e, Error::Forge { message, .. }
        if message.contains("GitHub Actions is not permitted to create or approve pull requests"))
    .then_some(PrRefusal::ActionsMayNotCreatePrs)
}

/// The run waits at `pr` for the repository setting (or another token): the status comment and
/// the job summary say which setting, and `continue` runs the `pr` phase again.
fn wait_for_pr_setting(state: &mut State, server_url: &str, repository: &str) {
    let message = format!(
        "GitHub refused to open the pull request: the repository setting \"Allow GitHub Actions to create and approve pull requests\" is off ({}/{repository}/settings/actions, Workflow permissions). Turn it on, or pass a GitHub App installation token or a fine-grained personal access token as `github_token`; then comment `/spec-orchestrate continue`",
        server_url.trim_end_matches('/')
    );
    crate::events::emit(crate::events::Event::Job {
        message: message.clone(),
    });
    crate::machine::answer::wait_for_pr_permission(state, message);
}

/// Whether a run's workflow `path` (`.github/workflows/x.yml`, maybe with `@ref`) is the file
/// this job runs (`workflow_file`, when the runner named it).
fn is_this_workflow(path: Option<&str>, workflow_file: Option<&str>) -> bool {
    let Some(path) = path else {
        return false;
    };
    let path = path.split('@').next().unwrap_or_default();
    workflow_file.is_none_or(|f| path.strip_prefix(".github/workflows/") == Some(f))
}

/// Which checkpoint the job continues: a label starts a run only on an issue without one, a
/// command steers the newest, and a dispatch continues its parent unless a newer run (a command,
/// or another chain) took over. `head` is the checkpoint the status comment names, `run_id` this
/// job's run.
fn resume_from(
    trigger: &Trigger,
    issue: u64,
    head: Option<u64>,
    run_id: u64,
    trigger_label: &str,
) -> Resume {
    match trigger {
        Trigger::Labeled { .. } => {
            if let Some(h) = head {
                return Resume::Nothing(format!(
                    "issue #{issue} already has a run (checkpoint in run {h}); comment `/spec-orchestrate continue` to resume it"
                ));
            }
            Resume::From(None)
        }
        Trigger::Command { .. } => match head {
            Some(h) => Resume::From(Some(h)),
            None => Resume::Refuse(format!(
                "there is no run on this issue to steer yet; add the `{}` label to start one",
                trigger_label
            )),
        },
        Trigger::Dispatch { parent_run, .. } => {
            if let (Some(p), Some(h)) = (parent_run, head)
                && *p != h
                && h != run_id
            {
                return Resume::Nothing(format!(
                    "superseded: this run continues run {p}, but the newest checkpoint of issue #{issue} is run {h} (a command or another run took over)"
                ));
            }
            Resume::From(parent_run.or(head))
        }
        Trigger::Ignored(_) => Resume::From(None),
    }
}

/// Why the job runs no phase although the run was restored: it is done, or a dispatch found it
/// waiting for a person. A command that halted the chain is still published.
fn skip_reason(state: &State, halted: bool, trigger: &Trigger, issue: u64) -> Option<String> {
    if state.phase == Phase::Done && !halted {
        return Some(format!("the run of issue #{issue} is done"));
    }
    if !halted
        && let Some(w) = &state.waiting
        && matches!(trigger, Trigger::Dispatch { .. })
    {
        return Some(format!("the run waits for a person: {}", w.message));
    }
    None
}

/// One commit per phase execution, numbered like the phase log, so that a loop's second pass is
/// told apart from its first (and a duplicate would show).
fn commit_message(state: &State, ran: Phase) -> String {
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
    format!("spec-orchestrate: {ran} (pass {pass}{issue_ref})")
}

/// How many jobs in a row (this one included) reached their time budget before the phase made
/// any progress; `before` is the progress when this job's phase started.
fn idle_jobs(state: &State, end: PhaseEnd, before: (u64, usize, usize, usize)) -> u64 {
    if end == PhaseEnd::Budget && progress(state) == before {
        state.job.idle_jobs() + 1
    } else {
        0
    }
}

/// What happens after this job: a halting command waits, three idle jobs in a row wait for a
/// larger `budget`, otherwise the phase's end and the state decide.
fn decide_next(state: &State, job: &Ran, idle: u64, budget: Duration) -> AfterJob {
    let ran = job.phase;
    match &job.halt {
        Some(m) => AfterJob::Wait(m.clone()),
        None if idle >= 3 => AfterJob::Wait(format!(
            "{idle} jobs in a row reached job_budget_minutes ({} min) before {ran} made any progress; raise the input, then comment `/spec-orchestrate continue`",
            budget.as_secs_f64() / 60.0
        )),
        None => next_of(state, job.end),
    }
}

/// The job's outcome for its run record: the phase log's last word on the phase it ran.
fn outcome_of(state: &State, job: &Ran) -> JobOutcome {
    match (&job.halt, job.end) {
        (Some(_), _) => JobOutcome::Stopped,
        (None, PhaseEnd::Budget) => JobOutcome::ContinuedAfterJobBudget,
        _ => last_outcome(state, job.phase).into(),
    }
}

/// The phase log's last word on `phase`.
fn last_outcome(state: &State, phase: Phase) -> PhaseOutcome {
    state
        .phase_log
        .iter()
        .rev()
        .find(|e| e.phase == phase)
        .map(|e| e.outcome)
        .unwrap_or(PhaseOutcome::Ended(Outcome::Ok))
}

/// Whether the job goes on with the phase `state` is due at, after a phase that ended well:
/// only in the default `github.jobs` mode, while the job has time, when the run neither
/// finished nor waits nor was stopped, and unless that phase calls agents while one that calls
/// agents already ran in this job (`agents_ran`). So a job runs at most one agent phase, or one
/// round of a loop, with the phases that call no agent before and after it.
fn rides_along(mode: JobsMode, state: &State, agents_ran: bool, time_left: bool) -> bool {
    mode == JobsMode::PerAgentPhase
        && time_left
        && state.phase != Phase::Done
        && state.waiting.is_none()
        && state.stop.is_none()
        && !(agents_ran && state.phase.calls_agents())
}

/// This job as the status comment lists it, under the checkpoint artifact it saves.
fn run_record(env: &ActionEnv, issue: u64, ran: Phase, outcome: JobOutcome) -> JobRun {
    JobRun {
        run_id: env.run_id,
        attempt: env.run_attempt,
        phase: ran,
        outcome,
        url: env.run_url(env.run_id),
        checkpoint: store::artifact_name(issue, ran, env.run_attempt),
        earlier: Vec::new(),
    }
}

/// The pull request's address once it exists on the forge.
fn pr_url_of(state: &State) -> Option<String> {
    state
        .pr
        .as_ref()
        .filter(|p| p.number.is_some())
        .map(|p| p.url.clone())
}

/// The `phase` and `gate` step outputs: the last phase the job ran and the gate of the last
/// gated phase it ran (a review that approval followed still reports its gate); empty when a
/// command halted the chain.
fn step_outputs(state: &State, job: &Ran) -> (&'static str, String) {
    match job.halt {
        Some(_) => ("", String::new()),
        None => (
            job.phase.as_str(),
            job.phases()
                .into_iter()
                .rev()
                .map(|p| gate_of(state, p))
                .find(|g| !g.is_empty())
                .unwrap_or_default(),
        ),
    }
}

/// The job's exit: a phase that landed a draft fails the job (so it shows), all else succeeds.
fn exit_of(end: PhaseEnd) -> Exit {
    match end {
        PhaseEnd::Exited(1) => Exit::Failed,
        _ => Exit::Ok,
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
    //! The job's decisions, from small events and states: no forge, no process, no network.

    use super::*;
    use crate::forge::github::event::Command;
    use crate::state::{BranchRef, Mode, PhaseLogEntry, Usage};

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

    fn person(login: &str) -> Actor {
        Actor {
            login: login.into(),
            is_bot: false,
        }
    }

    fn bot(login: &str) -> Actor {
        Actor {
            login: login.into(),
            is_bot: true,
        }
    }

    fn labeled() -> Trigger {
        Trigger::Labeled {
            issue: IssueRef {
                number: Some(7),
                title: "Add a thing".into(),
                ..IssueRef::default()
            },
            actor: person("alice"),
            default_branch: Some("main".into()),
        }
    }

    fn command(command: Result<Command, String>) -> Trigger {
        Trigger::Command {
            issue: 7,
            command,
            actor: person("alice"),
            comment_id: 99,
        }
    }

    fn dispatch(parent_run: Option<u64>) -> Trigger {
        Trigger::Dispatch {
            issue: 7,
            parent_run,
            actor: None,
        }
    }

    fn state(phase: Phase) -> State {
        let mut s = State::new(
            "add-a-thing",
            IssueRef {
                number: Some(7),
                title: "Add a thing".into(),
                ..IssueRef::default()
            },
            Mode::Auto,
        );
        s.phase = phase;
        s
    }

    /// Through JSON, as the state file holds it, so the fixture does not depend on how the
    /// record is typed in Rust.
    fn waiting(kind: &str, message: &str) -> crate::state::Waiting {
        serde_json::from_value(serde_json::json!({ "kind": kind, "message": message }))
            .expect("a waiting record")
    }

    fn stop(message: &str) -> crate::types::RunStop {
        serde_json::from_value(serde_json::json!({
            "kind": "budget",
            "phase": "implement",
            "agent": "claude",
            "message": message,
            "spent_usd": 10.0,
            "ts": "2026-01-01T00:00:00Z",
        }))
        .expect("a stop record")
    }

    /// A job whose phase ended well.
    fn ok() -> JobOutcome {
        JobOutcome::Phase(PhaseOutcome::Ended(Outcome::Ok))
    }

    fn logged(phase: Phase, outcome: &str) -> PhaseLogEntry {
        PhaseLogEntry {
            phase,
            started: crate::types::time::parse("2026-01-01T00:00:00Z").expect("a time"),
            ended: crate::types::time::parse("2026-01-01T00:01:00Z").expect("a time"),
            outcome: outcome.parse().expect("a phase-log outcome"),
            attempt: 1,
        }
    }

    fn ran(phase: Phase, end: PhaseEnd, halt: Option<&str>) -> Ran {
        Ran {
            issue: 7,
            earlier: Vec::new(),
            phase,
            end,
            halt: halt.map(str::to_string),
            comment_id: Some(5),
            pr_published: false,
        }
    }

    fn env() -> ActionEnv {
        let vars = BTreeMap::from([
            ("GITHUB_EVENT_NAME", "workflow_dispatch"),
            ("GITHUB_EVENT_PATH", "/github/workflow/event.json"),
            ("GITHUB_REPOSITORY", "octo-org/octo-repo"),
            ("GITHUB_RUN_ID", "1001"),
            ("GITHUB_RUN_ATTEMPT", "2"),
            ("GITHUB_SERVER_URL", "https://github.example"),
        ]);
        ActionEnv::from_vars(|k| vars.get(k).map(|v| v.to_string())).expect("a runner env")
    }

    #[test]
    fn labels_and_commands_are_authorised_but_dispatches_are_not_rechecked() {
        assert_eq!(
            actor_of(&labeled()).map(|a| a.login.as_str()),
            Some("alice")
        );
        assert_eq!(
            actor_of(&command(Ok(Command::Stop))).map(|a| a.login.as_str()),
            Some("alice")
        );
        assert!(actor_of(&dispatch(Some(1))).is_none());
        assert!(actor_of(&Trigger::Ignored("push".into())).is_none());
    }

    #[test]
    fn bots_need_a_listing_and_people_need_write_access() {
        let listed = vec!["renovate[bot]".to_string()];
        assert_eq!(bot_refusal(&listed, &bot("renovate[bot]")), None);
        let why = bot_refusal(&listed, &bot("other[bot]")).expect("refused");
        assert!(why.contains("@other[bot] is a bot"), "{why}");
        assert!(why.contains("github.allowed_bots"), "{why}");

        let access = |permission: &str, role_name: &str| Permission {
            permission: permission.into(),
            role_name: role_name.into(),
        };
        assert_eq!(
            permission_refusal(&person("a"), &access("write", "maintain")),
            None
        );
        assert_eq!(permission_refusal(&person("a"), &access("admin", "")), None);
        let why = permission_refusal(&person("bob"), &access("read", "triage")).expect("refused");
        assert!(why.starts_with("@bob has `triage` access"), "{why}");
    }

    #[test]
    fn an_unknown_command_word_is_answered_with_the_list_of_commands() {
        assert_eq!(unknown_command(&command(Ok(Command::Approve))), None);
        assert_eq!(unknown_command(&labeled()), None);
        assert_eq!(
            unknown_command(&command(Err("merge".into()))).as_deref(),
            Some(
                "`/spec-orchestrate merge` is not a command; use one of: approve, continue, swap, draft, stop"
            )
        );
    }

    #[test]
    fn a_checkpoint_counts_only_from_a_run_of_this_workflow_file() {
        let own = Some("spec-orchestrate.yml");
        assert!(is_this_workflow(
            Some(".github/workflows/spec-orchestrate.yml"),
            own
        ));
        assert!(is_this_workflow(
            Some(".github/workflows/spec-orchestrate.yml@refs/heads/main"),
            own
        ));
        assert!(!is_this_workflow(Some(".github/workflows/ci.yml"), own));
        assert!(!is_this_workflow(None, own), "no such run");
    }

    #[test]
    fn a_label_starts_a_run_only_on_an_issue_without_one() {
        assert_eq!(
            resume_from(&labeled(), 7, None, 50, "go"),
            Resume::From(None)
        );
        let Resume::Nothing(why) = resume_from(&labeled(), 7, Some(40), 50, "go") else {
            panic!("a second label must not start a second run");
        };
        assert!(
            why.contains("already has a run (checkpoint in run 40)"),
            "{why}"
        );
    }

    #[test]
    fn a_command_steers_the_newest_checkpoint_or_is_refused_without_one() {
        let steer = command(Ok(Command::Continue));
        assert_eq!(
            resume_from(&steer, 7, Some(40), 50, "go"),
            Resume::From(Some(40))
        );
        let Resume::Refuse(why) = resume_from(&steer, 7, None, 50, "go") else {
            panic!("a command without a run must be refused");
        };
        assert!(why.contains("add the `go` label"), "{why}");
    }

    #[test]
    fn a_dispatch_continues_its_parent_unless_another_run_took_over() {
        // The chain as expected: the comment names the parent.
        assert_eq!(
            resume_from(&dispatch(Some(40)), 7, Some(40), 50, "go"),
            Resume::From(Some(40))
        );
        // A re-run of this job: the comment already names this run, the parent still counts.
        assert_eq!(
            resume_from(&dispatch(Some(40)), 7, Some(50), 50, "go"),
            Resume::From(Some(40))
        );
        // A hand-made dispatch without a parent takes the newest checkpoint, or starts.
        assert_eq!(
            resume_from(&dispatch(None), 7, Some(40), 50, "go"),
            Resume::From(Some(40))
        );
        assert_eq!(
            resume_from(&dispatch(None), 7, None, 50, "go"),
            Resume::From(None)
        );
        let Resume::Nothing(why) = resume_from(&dispatch(Some(40)), 7, Some(45), 50, "go") else {
            panic!("a superseded dispatch must do nothing");
        };
        assert!(
            why.starts_with("superseded: this run continues run 40"),
            "{why}"
        );
    }

    #[test]
    fn a_done_run_and_a_waiting_run_skip_the_phase_unless_a_command_halts() {
        let done = state(Phase::Done);
        assert_eq!(
            skip_reason(&done, false, &dispatch(Some(1)), 7).as_deref(),
            Some("the run of issue #7 is done")
        );
        assert_eq!(skip_reason(&done, true, &dispatch(Some(1)), 7), None);

        let mut waits = state(Phase::Approval);
        waits.waiting = Some(waiting("approval", "approve the spec"));
        assert_eq!(
            skip_reason(&waits, false, &dispatch(Some(1)), 7).as_deref(),
            Some("the run waits for a person: approve the spec")
        );
        // A person's command answers the wait; it is not skipped.
        assert_eq!(
            skip_reason(&waits, false, &command(Ok(Command::Approve)), 7),
            None
        );
        assert_eq!(skip_reason(&waits, true, &dispatch(Some(1)), 7), None);
        assert_eq!(
            skip_reason(&state(Phase::Implement), false, &dispatch(None), 7),
            None
        );
    }

    #[test]
    fn a_phase_that_landed_a_draft_fails_the_job() {
        assert_eq!(exit_of(PhaseEnd::Exited(1)), Exit::Failed);
        assert_eq!(exit_of(PhaseEnd::Exited(0)), Exit::Ok);
        assert_eq!(exit_of(PhaseEnd::Budget), Exit::Ok);
    }

    #[test]
    fn each_pass_of_a_phase_gets_its_own_numbered_commit() {
        let mut s = state(Phase::Evaluate);
        assert_eq!(
            commit_message(&s, Phase::Implement),
            "spec-orchestrate: implement (pass 1, #7)"
        );
        s.phase_log.push(logged(Phase::Implement, "ok"));
        s.phase_log.push(logged(Phase::Evaluate, "send_back"));
        s.phase_log.push(logged(Phase::Implement, "ok"));
        assert_eq!(
            commit_message(&s, Phase::Implement),
            "spec-orchestrate: implement (pass 2, #7)"
        );
        s.issue.number = None;
        assert_eq!(
            commit_message(&s, Phase::Evaluate),
            "spec-orchestrate: evaluate (pass 1)"
        );
    }

    #[test]
    fn jobs_that_reach_their_budget_without_progress_are_counted_until_three_wait() {
        let mut s = state(Phase::Implement);
        let before = progress(&s);
        assert_eq!(idle_jobs(&s, PhaseEnd::Budget, before), 1);
        s.job.record(Effect::BudgetIdle(2));
        assert_eq!(idle_jobs(&s, PhaseEnd::Budget, before), 3);
        assert_eq!(idle_jobs(&s, PhaseEnd::Exited(0), before), 0);
        s.usage.insert(
            "claude".into(),
            Usage {
                calls: 1,
                ..Usage::default()
            },
        );
        assert_eq!(
            idle_jobs(&s, PhaseEnd::Budget, before),
            0,
            "a call is progress"
        );

        let budget = Duration::from_secs(30 * 60);
        let job = ran(Phase::Implement, PhaseEnd::Budget, None);
        assert_eq!(decide_next(&s, &job, 2, budget), AfterJob::Dispatch);
        let AfterJob::Wait(why) = decide_next(&s, &job, 3, budget) else {
            panic!("three idle jobs must wait");
        };
        assert!(
            why.starts_with("3 jobs in a row reached job_budget_minutes (30 min) before implement"),
            "{why}"
        );
    }

    #[test]
    fn the_next_step_follows_the_halt_the_state_and_the_phase_end() {
        let budget = Duration::from_secs(60);
        let mut s = state(Phase::Evaluate);
        let ok = ran(Phase::Implement, PhaseEnd::Exited(0), None);
        assert_eq!(decide_next(&s, &ok, 0, budget), AfterJob::Dispatch);
        let halted = ran(
            Phase::Implement,
            PhaseEnd::Exited(0),
            Some("stopped by @alice"),
        );
        assert_eq!(
            decide_next(&s, &halted, 5, budget),
            AfterJob::Wait("stopped by @alice".into())
        );

        s.stop = Some(stop("The budget is spent."));
        assert_eq!(
            decide_next(&s, &ok, 0, budget),
            AfterJob::OverBudget("The budget is spent.".into())
        );
        s.waiting = Some(waiting("arbitration", "choose"));
        assert_eq!(
            decide_next(&s, &ok, 0, budget),
            AfterJob::Wait("choose".into())
        );
        s.phase = Phase::Done;
        assert_eq!(decide_next(&s, &ok, 0, budget), AfterJob::Done);
        // A job stopped at its budget always hands over.
        let budgeted = ran(Phase::Implement, PhaseEnd::Budget, None);
        assert_eq!(decide_next(&s, &budgeted, 0, budget), AfterJob::Dispatch);
    }

    #[test]
    fn the_outcome_is_the_phase_logs_last_word_on_the_phase_that_ran() {
        let mut s = state(Phase::Implement);
        let job = ran(Phase::Evaluate, PhaseEnd::Exited(0), None);
        assert_eq!(outcome_of(&s, &job).to_string(), "ok");
        s.phase_log.push(logged(Phase::Evaluate, "blocked"));
        s.phase_log.push(logged(Phase::Implement, "ok"));
        s.phase_log.push(logged(Phase::Evaluate, "send_back"));
        assert_eq!(outcome_of(&s, &job).to_string(), "send_back");
        let budgeted = ran(Phase::Evaluate, PhaseEnd::Budget, None);
        assert_eq!(
            outcome_of(&s, &budgeted).to_string(),
            "continued (job time budget)"
        );
        let halted = ran(Phase::Evaluate, PhaseEnd::Budget, Some("stop"));
        assert_eq!(outcome_of(&s, &halted).to_string(), "stopped");
    }

    /// The demo's happy path cut into jobs by [`rides_along`]: each job starts with the phase
    /// that is due and takes the following ones while they may ride along.
    fn jobs_of(path: &[Phase], mode: JobsMode) -> Vec<Vec<Phase>> {
        let mut jobs: Vec<Vec<Phase>> = Vec::new();
        let mut agents = false;
        for (i, p) in path.iter().enumerate() {
            let joins = i > 0 && {
                let s = state(*p);
                rides_along(mode, &s, agents, true)
            };
            if joins {
                jobs.last_mut().expect("a job").push(*p);
            } else {
                jobs.push(vec![*p]);
                agents = false;
            }
            agents |= p.calls_agents();
        }
        jobs
    }

    #[test]
    fn one_agent_phase_per_job_and_the_others_ride_along() {
        use Phase::*;
        let demo = [
            Intake,
            SpecGenerate,
            Inspect,
            SpecReview,
            SpecGenerate,
            Inspect,
            SpecReview,
            Approval,
            Implement,
            Evaluate,
            Pr,
            Retrospective,
        ];
        assert_eq!(
            jobs_of(&demo, JobsMode::PerAgentPhase),
            vec![
                vec![Intake, SpecGenerate, Inspect],
                vec![SpecReview],
                vec![SpecGenerate, Inspect],
                vec![SpecReview, Approval],
                vec![Implement],
                vec![Evaluate, Pr, Retrospective],
            ]
        );
        assert_eq!(jobs_of(&demo, JobsMode::PerPhase).len(), demo.len());

        // Nothing rides along without time, after the end, while waiting or stopped.
        assert!(rides_along(JobsMode::PerAgentPhase, &state(Pr), true, true));
        assert!(!rides_along(
            JobsMode::PerAgentPhase,
            &state(Pr),
            true,
            false
        ));
        assert!(!rides_along(
            JobsMode::PerAgentPhase,
            &state(Done),
            false,
            true
        ));
        let mut waiting_state = state(Approval);
        waiting_state.waiting = Some(waiting("approval", "approve"));
        assert!(!rides_along(
            JobsMode::PerAgentPhase,
            &waiting_state,
            false,
            true
        ));
        let mut stopped = state(Implement);
        stopped.stop = Some(stop("over budget"));
        assert!(!rides_along(JobsMode::PerAgentPhase, &stopped, false, true));
        // An agent phase joins a job that ran none yet (an approval comment's job implements).
        assert!(rides_along(
            JobsMode::PerAgentPhase,
            &state(Implement),
            false,
            true
        ));
    }

    #[test]
    fn the_headline_says_what_comes_next() {
        let mut s = state(Phase::Evaluate);
        assert_eq!(
            headline(&s, Phase::Implement.as_str(), ok(), &AfterJob::Dispatch),
            "implement: ok. Next: evaluate, in a new run."
        );
        assert_eq!(
            headline(
                &s,
                Phase::Implement.as_str(),
                JobOutcome::ContinuedAfterJobBudget,
                &AfterJob::Dispatch
            ),
            "implement ran out of this job's time; it continues in a new run from the checkpoint"
        );
        s.waiting = Some(waiting("approval", "approve"));
        s.branch = Some(BranchRef {
            name: "spec/add-a-thing".into(),
            head: None,
        });
        let h = headline(
            &s,
            Phase::SpecReview.as_str(),
            ok(),
            &AfterJob::Wait("approve".into()),
        );
        assert!(
            h.starts_with("Waiting for approval: the spec on branch `spec/add-a-thing`"),
            "{h}"
        );
        s.pr = Some(PrRef {
            number: Some(3),
            url: "https://github.example/pr/3".into(),
            draft: true,
        });
        assert_eq!(
            headline(&s, Phase::Pr.as_str(), ok(), &AfterJob::Done),
            "Done: the pull request is a draft (see why in its body)."
        );
    }

    #[test]
    fn outputs_and_the_run_record_name_the_phase_its_gate_and_the_checkpoint() {
        let mut s = state(Phase::Implement);
        let job = ran(Phase::Inspect, PhaseEnd::Exited(0), None);
        assert_eq!(step_outputs(&s, &job), ("inspect", String::new()));
        let halted = ran(Phase::Inspect, PhaseEnd::Exited(0), Some("stop"));
        assert_eq!(step_outputs(&s, &halted), ("", String::new()));

        assert_eq!(pr_url_of(&s), None);
        s.pr = Some(PrRef {
            number: None,
            url: ".specs/add-a-thing/pr-body.md".into(),
            draft: false,
        });
        assert_eq!(pr_url_of(&s), None, "a local stand-in is no address");
        s.pr = Some(PrRef {
            number: Some(3),
            url: "https://github.example/pr/3".into(),
            draft: false,
        });
        assert_eq!(
            pr_url_of(&s).as_deref(),
            Some("https://github.example/pr/3")
        );

        let record = run_record(&env(), 7, Phase::Implement, ok());
        assert_eq!(record.run_id, 1001);
        assert_eq!(record.attempt, 2);
        assert_eq!(record.phase, Phase::Implement);
        assert_eq!(record.outcome.to_string(), "ok");
        assert_eq!(
            record.url,
            "https://github.example/octo-org/octo-repo/actions/runs/1001"
        );
        assert_eq!(record.checkpoint, "spec-orchestrate-7-implement-a2");
    }
}
