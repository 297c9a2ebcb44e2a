//! The phase steps of a job: each phase in its own process without the tokens, stopped at the
//! job's time budget, and committed on the work branch as it ends.

use std::path::Path;
use std::process::Command as Process;
use std::time::{Duration, Instant};

use super::Job;
use super::env::ActionEnv;
use super::evidence;
use super::open::Lease;
use super::plan::{PhaseEnd, last_outcome, rides_along};
use super::say;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::process;
use crate::state::State;
use crate::state::job::EarlierPhase;
use crate::state::store::StateStore;
use crate::store::Store;
use crate::types::Phase;

/// Variables the phase process must not see: tokens for GitHub and the runner, and every input.
pub(super) const WITHHELD: [&str; 8] = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_RESULTS_URL",
    "ACTIONS_RUNTIME_URL",
    "ACTIONS_CACHE_URL",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
];

/// What the phase steps of a job left: the phases run, how the last one ended, and the state it
/// saved with its store kept open until the checkpoint is written.
pub(super) struct Steps {
    /// The pull request was opened (or the repository refused it) right after a `pr` phase
    /// that other phases followed in this job.
    pub(super) pr_published: bool,
    pub(super) earlier: Vec<EarlierPhase>,
    pub(super) phase: Phase,
    pub(super) end: PhaseEnd,
    pub(super) store: StateStore,
    pub(super) state: State,
}

impl Job<'_> {
    /// Step: the phases of this job, each in its own process: the one that is due, then the
    /// ones after it while [`rides_along`] says so (never with `github.jobs: per_phase`). A
    /// phase that is followed by another is committed as soon as it ends, so each phase keeps
    /// its own commit; the last one is committed by the publishing step, as before.
    ///
    /// When `pr` is followed by another phase, the pull request is opened right after it (the
    /// branch pushed first, the lease moving to what was pushed): if the repository refuses it, the
    /// run waits at `pr` and nothing runs after it in this job.
    pub(super) fn phase_steps(
        &self,
        store: &Store,
        dir: &Path,
        first: &State,
        halted: bool,
        lease: &mut Lease,
    ) -> Result<Steps> {
        let mut earlier = Vec::new();
        let mut phase = first.phase();
        let mut agents = false;
        let mut pr_published = false;
        loop {
            agents |= phase.calls_agents();
            let (end, state_store, mut state) = self.phase_step(dir, &first.feature, halted)?;
            let time_left = Instant::now() < self.process.deadline();
            let last = halted
                || end != PhaseEnd::Exited(0)
                || earlier.len() >= Phase::ALL.len()
                || !rides_along(self.config.github.jobs, &state, agents, time_left);
            if !last {
                self.publisher.commit_phase(&mut state, phase)?;
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
                    self.publisher.push_branch(&mut state, lease.clone())?;
                    *lease = match state.job.pushed() {
                        Some(sha) => Lease::At(sha.to_string()),
                        None => Lease::Absent,
                    };
                    self.publisher.publish_pr(dir, &mut state)?;
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
            say(format!(
                "{phase} done; {} rides along in this job",
                state.phase()
            ));
            phase = state.phase();
        }
    }

    /// Step: one phase run in its own process (unless a command halted the chain), and the
    /// state it saved, with its store kept open until the checkpoint is written.
    pub(super) fn phase_step(
        &self,
        dir: &Path,
        feature: &str,
        halted: bool,
    ) -> Result<(PhaseEnd, StateStore, State)> {
        let end = if halted {
            PhaseEnd::Exited(0)
        } else {
            self.process.run(feature)?
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
}

/// The phase process: `spec-orchestrate step` in its own process group, without the tokens,
/// the model keys handed over through a socket, stopped at the job's time budget.
pub(super) struct PhaseProcess<'a> {
    pub(super) env: &'a ActionEnv,
    pub(super) repo: &'a Path,
    pub(super) config: &'a Config,
    /// When the job started, which its time budget counts from.
    pub(super) started: Instant,
    /// Where `implement` runs its waves in this job (`step`'s hidden options): here, handed
    /// to the matrix legs, one leg's task, or the join's landing.
    pub(super) waves: crate::phases::implement::legs::Waves,
}

impl PhaseProcess<'_> {
    /// When this job stops its phase: `job_budget_minutes` after it started, minus a reserve to
    /// push, checkpoint and dispatch (a fifth of the budget, at most three minutes).
    pub(super) fn deadline(&self) -> Instant {
        let budget = self.env.job_budget;
        let reserve = (budget / 5).min(Duration::from_secs(180));
        process::deadline(self.started, budget.saturating_sub(reserve))
    }

    /// Runs `step` for `feature` in a child process without the tokens, stopping it at the
    /// job's time budget.
    pub(super) fn run(&self, feature: &str) -> Result<PhaseEnd> {
        let exe = std::env::current_exe().map_err(|e| Error::io("current executable", e))?;
        let mut cmd = Process::new(exe);
        cmd.arg("step")
            .arg("--repo")
            .arg(self.repo)
            .arg("--feature")
            .arg(feature)
            .current_dir(self.repo);
        use crate::phases::implement::legs::Waves;
        match &self.waves {
            Waves::Here => {}
            Waves::Jobs => {
                cmd.arg("--waves-as-jobs");
            }
            Waves::Leg(task) => {
                cmd.arg("--leg").arg(task);
            }
            Waves::Join(dir) => {
                cmd.arg("--waves-as-jobs").arg("--legs").arg(dir);
            }
        }
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("INPUT_") {
                cmd.env_remove(&k);
            }
        }
        for k in WITHHELD {
            cmd.env_remove(k);
        }
        cmd.env("SPEC_ORCHESTRATE_PROGRESS", crate::output::mode().as_str());
        let handoff = self
            .step_secrets()
            .attach(&mut cmd)
            .map_err(|e| Error::io("spec-orchestrate step", e))?;
        let budget = self.env.job_budget;
        let deadline = self.deadline();
        let mut child =
            process::spawn_group(&mut cmd).map_err(|e| Error::io("spec-orchestrate step", e))?;
        if let Err(e) = handoff.send(Duration::from_secs(30)) {
            // The step then stops with its own error, which the phase's end reports.
            tracing::warn!("handing the model keys to the step failed: {e}");
        }
        let pid = child.id() as i32;
        // A SIGTERM to the job reaches the step first, so it stops the app and agents it
        // started (their groups are the step's to know) before the job kills its group.
        crate::signals::forward(pid);
        // The step is a subreaper itself; what it leaves when it is killed (an app or agent that
        // left its group) is reparented to this process and stopped with the phase.
        let mut tree = process::tree::Tree::new(pid);
        let end = Self::wait(&mut child, deadline, budget);
        tree.kill_all();
        // A step killed before its own end (SIGKILL) never gave the checkout back to its owner.
        process::identity::give_back(self.repo);
        process::tree::disown(pid);
        crate::signals::unregister(pid);
        end
    }

    /// The model keys the `step` gets, through an inherited socket rather than its environment
    /// (`process::handoff`): the action's inputs, else the variables of the same name, and every
    /// other variable the configuration names as a key (`api_key_env`).
    fn step_secrets(&self) -> process::handoff::Handoff {
        use crate::secrets::SecretEnvNames;
        let mut h = process::handoff::Handoff::new();
        let mut names = self.config.secret_env_names();
        names.extend([
            "ANTHROPIC_API_KEY".to_string(),
            "OPENAI_API_KEY".to_string(),
        ]);
        for name in names {
            if let Ok(v) = std::env::var(&name) {
                h.pass(&name, &v);
            }
        }
        if let Some(k) = &self.env.anthropic_key {
            h.pass("ANTHROPIC_API_KEY", k.expose());
        }
        if let Some(k) = &self.env.openai_key {
            h.pass("OPENAI_API_KEY", k.expose());
        }
        h
    }

    /// Waits for the phase child until `deadline`; then SIGTERM to its group, SIGKILL after a
    /// grace period, so the job keeps time to checkpoint and hand over.
    fn wait(
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
                say(format!(
                    "the job's time budget ({} min) is nearly spent; stopping the phase to checkpoint and continue in a new run",
                    budget.as_secs_f64() / 60.0
                ));
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
}
