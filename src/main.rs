//! The `spec-orchestrate` binary: parses the command line, calls the library, maps the result
//! to an exit code (0 done or waiting, 1 draft or failed check, 2 and up an error whose kind the
//! code names: see `ErrorKind::exit_code` and the README's "Exit codes" table), after installing
//! the progress reporter the command line asks for.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use spec_orchestrate::commands::{self, Target};
use spec_orchestrate::output::{self, Progress};
use spec_orchestrate::phases::implement::legs::Waves;
use spec_orchestrate::types::kinds::{Answer, Strategy};

#[derive(Parser)]
#[command(
    name = "spec-orchestrate",
    version,
    about = "Drive an issue to a pull request: spec, adversarial review, cross-reviewed implementation, evidence-backed acceptance.",
    long_about = "Drive an issue to a pull request: one model writes a specification, a different model attacks it, \
tasks are implemented and reviewed across models, acceptance cases run in a harness that keeps hashed evidence, \
and the pull request body is rendered from recorded state only.\n\n\
State lives in .specs/<feature>/pipeline-state.json; every command resumes from it.",
    after_help = "Try it offline in two minutes:\n  spec-orchestrate demo\n\nOn your repository:\n  spec-orchestrate init\n  spec-orchestrate doctor\n  spec-orchestrate run --issue docs/issues/dark-mode.md\n  spec-orchestrate status"
)]
struct Cli {
    /// How progress is shown on stderr: `terminal` (sentences), `json` (one JSON object per
    /// event, with its kind under "event"), or `quiet` (none; results, errors and the exit code
    /// remain). With json or quiet, log lines appear only if SPEC_ORCHESTRATE_LOG asks for them.
    #[arg(
        long,
        global = true,
        value_enum,
        env = "SPEC_ORCHESTRATE_PROGRESS",
        default_value = "terminal"
    )]
    progress: Progress,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a run for an issue (or resume it if its state exists) and drive it to the end.
    #[command(
        after_help = "Examples:\n  spec-orchestrate run --issue issues/dark-mode.md\n  spec-orchestrate run --issue issues/dark-mode.md --mode manual --until spec_review\n\nThe issue file's first `# ` heading is the title; the rest is the body.\nExit: 0 done or waiting, 1 landed as draft, 2-9 error (see the README's exit codes)."
    )]
    Run(commands::run::RunRequest),
    /// Run exactly one phase (one loop round) from the saved state, then stop.
    #[command(after_help = "Example:\n  spec-orchestrate step --feature add-a-dark-mode-toggle")]
    Step {
        #[command(flatten)]
        at: Target,
        /// Where `implement` runs its waves (the Action's jobs only).
        #[command(flatten)]
        waves: WaveArgs,
    },
    /// Continue a run from its saved state (after a crash, a kill, an approval or `--until`).
    #[command(
        after_help = "Example:\n  spec-orchestrate resume --feature add-a-dark-mode-toggle\n\nA run killed at any moment loses at most the agent call in flight."
    )]
    Resume(Target),
    /// After the PR: take a person's review as one more verified round (fix, review, evaluate, PR body).
    #[command(
        after_help = "Examples:\n  spec-orchestrate revise --feedback review.md --by alice\n  spec-orchestrate revise          # continue the round in flight\n\nThe feedback file: one `## path:line` (or `## path`) heading per comment with the comment below it;\ntext outside such a heading is one comment on the whole change. Comments on code become one fix task\n(REV<round>), implemented by the agent of the files' kind and reviewed by the opposite agent; comments\non the spec documents (.specs/<feature>/*.md) go back through spec_generate, inspect and spec_review.\nThen every acceptance case runs again and the PR body is written anew. Each comment is answered in\n.specs/<feature>/review-round-<n>.md: fixed (commit), disputed (the agent's argument) or open.\nThe same comments three rounds running (S1-S4) give the fix to the other agent, then stop the round.\nExit: as `resume`; 1 when the round stopped."
    )]
    Revise(commands::revise::ReviseRequest),
    /// Show phase, rounds with counts, signals, arbitrations, tasks and cost.
    #[command(
        after_help = "Examples:\n  spec-orchestrate status\n  spec-orchestrate status --json | jq .phase"
    )]
    Status {
        /// Print the state document as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        at: Target,
    },
    /// Manual mode: approve the spec waiting at `approval` (then `resume`).
    #[command(
        after_help = "Example:\n  spec-orchestrate approve --feature add-a-dark-mode-toggle && spec-orchestrate resume"
    )]
    Approve(Target),
    /// Manual mode: answer a stalled loop (continue, swap, draft, approve), then resume the run.
    #[command(
        after_help = "Examples:\n  spec-orchestrate arbitrate swap --feature add-a-dark-mode-toggle\n  spec-orchestrate arbitrate draft\n\ncontinue: same agents, the stall window restarts; swap: the stalled role goes to the opposite agent;\ndraft: land a draft PR listing every unresolved finding; approve: accept the spec (review loop) or the acceptance result (evaluate loop) as it is.\nExit: as `resume`."
    )]
    Arbitrate {
        /// The answer.
        #[arg(value_enum)]
        decision: Answer,
        #[command(flatten)]
        at: Target,
    },
    /// Review any Markdown spec (single reviewer, panel or debate); writes beside it, never modifies it.
    #[command(
        after_help = "Examples:\n  spec-orchestrate review docs/spec.md\n  spec-orchestrate review docs/spec.md --strategy panel\n\nWrites docs/spec.review/review.md and review.json (docs/spec.debate/ for --strategy debate).\nAgents come from --config, else the .specs/pipeline.yml of the repository holding the spec, else the defaults.\nExit: 0 reviewed, 1 no usable review (every reviewer failed), 2-9 error."
    )]
    Review(commands::review::ReviewRequest),
    /// Debate a Markdown spec: two anonymous debaters, up to 3 rounds, a fresh judge writes spec.final.md.
    #[command(
        after_help = "Example:\n  spec-orchestrate debate docs/spec.md\n\nWrites docs/spec.debate/debate-log.md (appended after every round), spec.final.md (with the adopted/rejected table) and participants.json (who played A, B and the judge). The input is never modified.\nExit: 0 judged, 1 no ruling (debaters or judge failed), 2-9 error."
    )]
    Debate {
        /// The Markdown file to debate.
        spec: PathBuf,
        /// Configuration file.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Re-check every PASS of the last acceptance round against the evidence manifest, locally
    /// or, with --pr/--run, the evidence stored on GitHub against the PR's manifest.
    #[command(
        after_help = "Examples:\n  spec-orchestrate verify .specs/add-a-dark-mode-toggle\n  GH_TOKEN=$(gh auth token) spec-orchestrate verify --pr 7\n  spec-orchestrate verify --run 123456789 --repository octocat/Hello-World\n\nWith --pr/--run: GITHUB_TOKEN or GH_TOKEN authorises the downloads, GITHUB_API_URL names the API (GitHub Enterprise).\nExit: 0 every file matches (every PASS holds), 1 a file is missing, empty or changed, 2-9 error."
    )]
    Verify {
        /// The feature directory, e.g. .specs/add-a-dark-mode-toggle.
        #[arg(required_unless_present_any = ["pr", "run"], conflicts_with_all = ["pr", "run"])]
        dir: Option<PathBuf>,
        #[command(flatten)]
        remote: commands::verify::pr::RemoteRequest,
    },
    /// Print the fingerprint and class key of each finding in an envelope.
    #[command(
        after_help = "Example:\n  echo '{\"findings\":[{\"severity\":\"critical\",\"gist\":\"x\"}]}' | spec-orchestrate fingerprint -"
    )]
    Fingerprint {
        /// Envelope file, or `-` for stdin (default).
        input: Option<PathBuf>,
    },
    /// Aggregates of the metrics ledger (.specs/pipeline-metrics.jsonl): runs, pass rate, rounds, failures, cost.
    #[command(after_help = "Examples:\n  spec-orchestrate retro\n  spec-orchestrate retro --json")]
    Retro {
        /// Print the aggregates as JSON.
        #[arg(long)]
        json: bool,
        /// Repository (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
    },
    /// Write .specs/pipeline.yml and .github/workflows/spec-orchestrate.yml if absent (never overwrites).
    #[command(
        after_help = "Examples:\n  cd my-repo && spec-orchestrate init\n  spec-orchestrate init --sweep   # also resume stalled chains hourly\n\nThe configuration spells out every default and sets limits.budget_usd: 20 (USD per run, checked before every agent call; a run that would pass it stops as a draft; raise it and `spec-orchestrate resume`). Then `spec-orchestrate doctor` checks what a run needs."
    )]
    Init {
        /// Repository (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// Also run the workflow hourly to resume chains whose next run was cancelled, or to say
        /// on the issue why one stalled (off by default).
        #[arg(long)]
        sweep: bool,
    },
    /// GitHub Actions entrypoint: one phase per job, checkpointed as an artifact, then self-dispatch.
    #[command(
        after_help = "Runs inside the spec-orchestrate Docker action; everything comes from the runner's\nenvironment (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, INPUT_GITHUB_TOKEN, ACTIONS_RUNTIME_TOKEN, …).\nSee action.yml and examples/workflow.yml.\nExit: as `step` (0 paused, waiting or done, 1 landed as draft, 2-9 error: a failed phase's code)."
    )]
    Action,
    /// Check everything a run needs, one line per check: ok, warning or error (with the fix).
    #[command(
        after_help = "Examples:\n  spec-orchestrate doctor                      # this machine and checkout\n  GH_TOKEN=$(gh auth token) spec-orchestrate doctor --github\n  spec-orchestrate doctor --json | jq '.checks[] | select(.status != \"ok\")'\n\nLocal checks: git and its version, a clean working tree, the configuration (as `run` validates it), each agent a role uses (its CLI found, its version, its key variable; or an HTTP agent's key), Node and the browser driver, Chromium, app.start/app.url, the budget.\nWith --github (token from GITHUB_TOKEN or GH_TOKEN, repository from --repository, GITHUB_REPOSITORY or the origin remote): the token's permissions, the workflow file on the default branch, the labels, \"Allow GitHub Actions to create and approve pull requests\", the default workflow permissions, and whether the Action's image is public. Every check only reads.\nExit: 0 nothing would stop a run (warnings allowed), 1 a check is an error, 2-9 error."
    )]
    Doctor(commands::doctor::DoctorRequest),
    /// Import a spec-kit, Kiro or OpenSpec spec directory as the four documents of a feature.
    #[command(
        after_help = "Examples:\n  spec-orchestrate import specs/012-tags/ --dry-run\n  spec-orchestrate import .kiro/specs/tags/\n  spec-orchestrate import openspec/changes/add-tags/ --feature add-tags\n\nWrites .specs/<feature>/requirement.md, design.md, tasks.md, test.md and imported.json (where each id came from); the original files are never modified. Each id keeps its original label beside ours (FR-001 <-> REQ-001). Text with no place in the four documents is quoted in design.md with its file and line. Inspection findings name the original file and line. See docs/import.md.\nExit: 0 imported (or printed with --dry-run), 2-9 error."
    )]
    Import(commands::import::ImportRequest),
    /// Write a feature's reviewed documents back as a spec-kit or Kiro spec directory.
    #[command(
        after_help = "Examples:\n  spec-orchestrate export --to spec-kit --feature 012-tags --out specs/012-tags-reviewed/\n  spec-orchestrate export --to kiro --out .kiro/specs/tags-reviewed/\n\nTicked tasks stay ticked; ids imported from that format get their original labels back. Never overwrites a file. See docs/import.md.\nExit: 0 exported, 2-9 error."
    )]
    Export(commands::export::ExportRequest),
    /// Run the whole pipeline offline on the bundled example app with scripted agents.
    #[command(
        after_help = "Examples:\n  spec-orchestrate demo\n  spec-orchestrate demo --example stall\n\nOn first use it installs the browser driver's npm packages (npm ci) and finds a Chromium, in order: SPEC_ORCHESTRATE_BROWSER; a system chromium on PATH; as root (or with passwordless sudo) the distribution's package (apt-get install chromium); Playwright's installer. Each step is announced before it runs; only when all fail are the exact commands printed, and the browser case lands BLOCKED (a draft).\nPrints where pr-body.md is and the evidence manifest. The stall example exits 0 when its run lands as the intended draft."
    )]
    Demo(commands::demo::DemoRequest),
}

fn main() -> ExitCode {
    // Before anything else: this process will hold the job's tokens and the model API keys, and
    // no agent may read them from its /proc entries (see docs/security.md).
    let inspectable = spec_orchestrate::process::forbid_inspection().err();
    // Then, still before any thread, the secrets a parent orchestrator hands over (a `step`):
    // through an inherited socket, never the environment or the command line.
    let handed = spec_orchestrate::process::handoff::receive(std::time::Duration::from_secs(30));
    let cli = Cli::parse();
    let progress = cli.progress;
    init_diagnostics(progress);
    if let Some(e) = inspectable {
        tracing::warn!("could not mark the process non-dumpable (prctl PR_SET_DUMPABLE): {e}");
    }
    output::install(progress);
    if let Err(e) = handed {
        let e =
            spec_orchestrate::error::Error::io("the secrets handed over by the parent process", e);
        output::error(&e);
        return ExitCode::from(e.exit_code());
    }
    // Whatever a spawned agent, case or app leaves behind when its parent exits is reparented
    // here, so that the call that started it can stop it (see `process::tree`).
    spec_orchestrate::process::tree::become_subreaper();
    let result = dispatch(cli.command);
    // The run is over: the model API proxy (started by the first fronted agent call) stops and
    // its thread is joined before the exit code is returned.
    spec_orchestrate::proxy::shutdown();
    // The checkout lent to the agents' identity goes back to the user who checked it out.
    spec_orchestrate::process::identity::restore();
    match result {
        Ok(exit) => ExitCode::from(exit as u8),
        Err(e) => {
            output::error(&e);
            ExitCode::from(e.exit_code())
        }
    }
}

/// Diagnostics go to stderr as asked by `SPEC_ORCHESTRATE_LOG`. Without it, the terminal shows
/// warnings as it always has; JSON and quiet show none: the warnings a person acts on (retries,
/// reassigned roles, stops) are events too, and a plain log line would break the JSON stream or
/// the silence.
fn init_diagnostics(progress: Progress) {
    let default_filter = match progress {
        Progress::Terminal => "warn",
        Progress::Json | Progress::Quiet => "off",
    };
    #[allow(clippy::disallowed_methods)]
    let diagnostics = std::io::stderr;
    tracing_subscriber::fmt()
        .with_writer(diagnostics)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SPEC_ORCHESTRATE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter)),
        )
        .without_time()
        .init();
}

/// `step`'s hidden options that say where `implement` runs its waves: the Action's jobs pass
/// them (docs/action-mode.md, "Waves on runners").
#[derive(clap::Args, Debug)]
struct WaveArgs {
    /// The Action's job hands a wave of more than one task to its matrix legs instead of
    /// running it here.
    #[arg(long, hide = true)]
    waves_as_jobs: bool,
    /// The Action's matrix leg of this task of the handed-out wave.
    #[arg(long, hide = true, conflicts_with_all = ["waves_as_jobs", "legs"])]
    leg: Option<String>,
    /// The Action's join: land the handed-out wave from the legs' results in this directory.
    #[arg(long, hide = true)]
    legs: Option<PathBuf>,
}

impl WaveArgs {
    fn waves(self) -> Waves {
        match (self.leg, self.legs) {
            (Some(task), _) => Waves::Leg(task),
            (None, Some(dir)) => Waves::Join(dir),
            (None, None) if self.waves_as_jobs => Waves::Jobs,
            (None, None) => Waves::Here,
        }
    }
}

fn dispatch(command: Command) -> spec_orchestrate::error::Result<commands::Exit> {
    use commands::*;
    match command {
        Command::Run(req) => run::run(&req),
        Command::Step { at, waves } => run::continue_run(&at, true, waves.waves()),
        Command::Resume(at) => run::continue_run(&at, false, Waves::Here),
        Command::Revise(req) => revise::revise(&req),
        Command::Status { json, at } => status::status(&at, json),
        Command::Approve(at) => approve::approve(&at),
        Command::Arbitrate { decision, at } => arbitrate::arbitrate(&at, decision),
        Command::Review(req) => review::review(&req),
        Command::Debate { spec, config } => review::review(&review::ReviewRequest {
            spec,
            strategy: Some(Strategy::Debate),
            config,
        }),
        // A feature directory is checked here; without one, the evidence a pull request
        // links is fetched from GitHub and checked against the manifest in its body.
        Command::Verify { dir: Some(dir), .. } => verify::verify(&dir),
        Command::Verify { dir: None, remote } => verify::pr::verify_remote(&remote),
        Command::Fingerprint { input } => fingerprint::fingerprint(input.as_deref()),
        Command::Retro { json, repo } => retro::retro(repo.as_deref(), json),
        Command::Init { repo, sweep } => init::init(repo.as_deref(), sweep),
        Command::Action => action::action(),
        Command::Doctor(req) => doctor::doctor(&req),
        Command::Import(req) => import::import(&req),
        Command::Export(req) => export::export(&req),
        Command::Demo(req) => demo::demo(&req),
    }
}
