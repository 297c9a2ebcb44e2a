//! The `spec-orchestrate` binary: parses the command line, calls the library, maps the result
//! to an exit code (0 done or waiting, 1 draft or failed check, 2 and up an error whose kind the
//! code names: see `ErrorKind::exit_code` and the README's "Exit codes" table), after installing
//! the progress reporter the command line asks for.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use spec_orchestrate::commands;
use spec_orchestrate::output::{self, Progress};
use spec_orchestrate::phases::implement::legs::Waves;
use spec_orchestrate::spec::cases::Method;
use spec_orchestrate::spec::import::Format;
use spec_orchestrate::state::Mode;
use spec_orchestrate::types::Phase;
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
    progress: ProgressArg,
    #[command(subcommand)]
    command: Command,
}

/// A command-line choice that stands for a library enum: clap's `ValueEnum` (each value the
/// variant's name in kebab case) and the conversion into the library's type.
macro_rules! arg_enum {
    ($arg:ident => $target:ty { $($variant:ident => $to:ident),+ $(,)? }) => {
        #[derive(Clone, Copy, ValueEnum)]
        enum $arg {
            $($variant),+
        }

        impl From<$arg> for $target {
            fn from(a: $arg) -> $target {
                match a {
                    $($arg::$variant => <$target>::$to),+
                }
            }
        }
    };
}

arg_enum!(ProgressArg => Progress { Terminal => Terminal, Json => Json, Quiet => Quiet });
arg_enum!(AnswerArg => Answer {
    Continue => Continue,
    Swap => Swap,
    Draft => Draft,
    Approve => Approve,
});
arg_enum!(StrategyArg => Strategy { Single => Single, Panel => Panel, Debate => Debate });
arg_enum!(ExampleArg => commands::demo::Example { DarkMode => DarkMode, Stall => Stall });
arg_enum!(FromArg => Format { SpecKit => SpecKit, Kiro => Kiro, Openspec => OpenSpec });
arg_enum!(ToArg => Format { SpecKit => SpecKit, Kiro => Kiro });
arg_enum!(VerifyArg => Method {
    Playwright => Playwright,
    Command => Command,
    FileCheck => FileCheck,
});
arg_enum!(ModeArg => Mode { Auto => Auto, Manual => Manual });

#[derive(Subcommand)]
enum Command {
    /// Start a run for an issue (or resume it if its state exists) and drive it to the end.
    #[command(
        after_help = "Examples:\n  spec-orchestrate run --issue issues/dark-mode.md\n  spec-orchestrate run --issue issues/dark-mode.md --mode manual --until spec_review\n\nThe issue file's first `# ` heading is the title; the rest is the body.\nExit: 0 done or waiting, 1 landed as draft, 2-9 error (see the README's exit codes)."
    )]
    Run {
        /// Issue as a Markdown file (first `# ` heading = title).
        #[arg(long)]
        issue: String,
        /// auto: the pipeline decides; manual: a person approves the spec and answers arbitrations.
        #[arg(long, value_enum, default_value = "auto")]
        mode: ModeArg,
        /// Configuration file (default: .specs/pipeline.yml, else built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Repository (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// Stop after this phase completes (intake, spec_generate, inspect, spec_review, approval, implement, evaluate, pr, retrospective).
        #[arg(long, value_parser = parse_phase)]
        until: Option<Phase>,
    },
    /// Run exactly one phase (one loop round) from the saved state, then stop.
    #[command(after_help = "Example:\n  spec-orchestrate step --feature add-a-dark-mode-toggle")]
    Step {
        /// Repository (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// Feature directory name under .specs/ (needed when several runs exist).
        #[arg(long)]
        feature: Option<String>,
        /// Where `implement` runs its waves (the Action's jobs only).
        #[command(flatten)]
        waves: WaveArgs,
    },
    /// Continue a run from its saved state (after a crash, a kill, an approval or `--until`).
    #[command(
        after_help = "Example:\n  spec-orchestrate resume --feature add-a-dark-mode-toggle\n\nA run killed at any moment loses at most the agent call in flight."
    )]
    Resume {
        /// Repository (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// Feature directory name under .specs/.
        #[arg(long)]
        feature: Option<String>,
    },
    /// After the PR: take a person's review as one more verified round (fix, review, evaluate, PR body).
    #[command(
        after_help = "Examples:\n  spec-orchestrate revise --feedback review.md --by alice\n  spec-orchestrate revise          # continue the round in flight\n\nThe feedback file: one `## path:line` (or `## path`) heading per comment with the comment below it;\ntext outside such a heading is one comment on the whole change. Comments on code become one fix task\n(REV<round>), implemented by the agent of the files' kind and reviewed by the opposite agent; comments\non the spec documents (.specs/<feature>/*.md) go back through spec_generate, inspect and spec_review.\nThen every acceptance case runs again and the PR body is written anew. Each comment is answered in\n.specs/<feature>/review-round-<n>.md: fixed (commit), disputed (the agent's argument) or open.\nThe same comments three rounds running (S1-S4) give the fix to the other agent, then stop the round.\nExit: as `resume`; 1 when the round stopped."
    )]
    Revise {
        /// The review: `## path:line` headings, one per comment; free text for the whole change.
        #[arg(long)]
        feedback: Option<PathBuf>,
        /// Who wrote the review (the comments' source).
        #[arg(long, default_value = "reviewer")]
        by: String,
        /// Repository (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// Feature directory name under .specs/.
        #[arg(long)]
        feature: Option<String>,
    },
    /// Show phase, rounds with counts, signals, arbitrations, tasks and cost.
    #[command(
        after_help = "Examples:\n  spec-orchestrate status\n  spec-orchestrate status --json | jq .phase"
    )]
    Status {
        /// Print the state document as JSON.
        #[arg(long)]
        json: bool,
        /// Repository (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// Feature directory name under .specs/.
        #[arg(long)]
        feature: Option<String>,
    },
    /// Manual mode: approve the spec waiting at `approval` (then `resume`).
    #[command(
        after_help = "Example:\n  spec-orchestrate approve --feature add-a-dark-mode-toggle && spec-orchestrate resume"
    )]
    Approve {
        /// Repository (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// Feature directory name under .specs/.
        #[arg(long)]
        feature: Option<String>,
    },
    /// Manual mode: answer a stalled loop (continue, swap, draft, approve), then resume the run.
    #[command(
        after_help = "Examples:\n  spec-orchestrate arbitrate swap --feature add-a-dark-mode-toggle\n  spec-orchestrate arbitrate draft\n\ncontinue: same agents, the stall window restarts; swap: the stalled role goes to the opposite agent;\ndraft: land a draft PR listing every unresolved finding; approve: accept the spec (review loop) or the acceptance result (evaluate loop) as it is.\nExit: as `resume`."
    )]
    Arbitrate {
        /// The answer.
        #[arg(value_enum)]
        decision: AnswerArg,
        /// Repository (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// Feature directory name under .specs/.
        #[arg(long)]
        feature: Option<String>,
    },
    /// Review any Markdown spec (single reviewer, panel or debate); writes beside it, never modifies it.
    #[command(
        after_help = "Examples:\n  spec-orchestrate review docs/spec.md\n  spec-orchestrate review docs/spec.md --strategy panel\n\nWrites docs/spec.review/review.md and review.json (docs/spec.debate/ for --strategy debate).\nAgents come from --config, else the .specs/pipeline.yml of the repository holding the spec, else the defaults.\nExit: 0 reviewed, 1 no usable review (every reviewer failed), 2-9 error."
    )]
    Review {
        /// The Markdown file to review.
        spec: PathBuf,
        /// single, panel or debate (default: review.strategy of the configuration).
        #[arg(long, value_enum)]
        strategy: Option<StrategyArg>,
        /// Configuration file.
        #[arg(long)]
        config: Option<PathBuf>,
    },
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
        /// Check the evidence of this pull request against the manifest in its body.
        #[arg(long)]
        pr: Option<u64>,
        /// The workflow run holding the evidence (default: the run the PR links).
        #[arg(long)]
        run: Option<u64>,
        /// `owner/name` (default: GITHUB_REPOSITORY, else the `origin` remote).
        #[arg(long)]
        repository: Option<String>,
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
    Doctor {
        /// Repository (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// Configuration file instead of .specs/pipeline.yml.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print the checks as one JSON document: {"ok": bool, "checks": [{"name", "status", "detail", "fix"}]}.
        #[arg(long)]
        json: bool,
        /// Also check what GitHub must allow (reads only; needs GITHUB_TOKEN or GH_TOKEN).
        #[arg(long)]
        github: bool,
        /// `owner/name` on GitHub (default: GITHUB_REPOSITORY, else the `origin` remote).
        #[arg(long, requires = "github")]
        repository: Option<String>,
    },
    /// Import a spec-kit, Kiro or OpenSpec spec directory as the four documents of a feature.
    #[command(
        after_help = "Examples:\n  spec-orchestrate import specs/012-tags/ --dry-run\n  spec-orchestrate import .kiro/specs/tags/\n  spec-orchestrate import openspec/changes/add-tags/ --feature add-tags\n\nWrites .specs/<feature>/requirement.md, design.md, tasks.md, test.md and imported.json (where each id came from); the original files are never modified. Each id keeps its original label beside ours (FR-001 <-> REQ-001). Text with no place in the four documents is quoted in design.md with its file and line. Inspection findings name the original file and line. See docs/import.md.\nExit: 0 imported (or printed with --dry-run), 2-9 error."
    )]
    Import {
        /// The spec directory: `specs/NNN-name/`, `.kiro/specs/<name>/` or `openspec/changes/<id>/`.
        path: PathBuf,
        /// Its format (default: detected from spec.md, requirements.md or proposal.md).
        #[arg(long, value_enum)]
        from: Option<FromArg>,
        /// Feature directory name under .specs/ (default: the spec directory's name).
        #[arg(long)]
        feature: Option<String>,
        /// How the imported acceptance cases are verified (the original formats do not say).
        #[arg(long, value_enum, default_value = "playwright")]
        verify: VerifyArg,
        /// Print what would be written and what could not be mapped; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Repository (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
    },
    /// Write a feature's reviewed documents back as a spec-kit or Kiro spec directory.
    #[command(
        after_help = "Examples:\n  spec-orchestrate export --to spec-kit --feature 012-tags --out specs/012-tags-reviewed/\n  spec-orchestrate export --to kiro --out .kiro/specs/tags-reviewed/\n\nTicked tasks stay ticked; ids imported from that format get their original labels back. Never overwrites a file. See docs/import.md.\nExit: 0 exported, 2-9 error."
    )]
    Export {
        /// The format to write.
        #[arg(long, value_enum)]
        to: ToArg,
        /// Feature directory name under .specs/ (default: the only run).
        #[arg(long)]
        feature: Option<String>,
        /// Directory to write into (its files must not exist yet).
        #[arg(long)]
        out: PathBuf,
        /// Repository (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
    },
    /// Run the whole pipeline offline on the bundled example app with scripted agents.
    #[command(
        after_help = "Examples:\n  spec-orchestrate demo\n  spec-orchestrate demo --example stall\n\nOn first use it installs the browser driver's npm packages (npm ci) and finds a Chromium, in order: SPEC_ORCHESTRATE_BROWSER; a system chromium on PATH; as root (or with passwordless sudo) the distribution's package (apt-get install chromium); Playwright's installer. Each step is announced before it runs; only when all fail are the exact commands printed, and the browser case lands BLOCKED (a draft).\nPrints where pr-body.md is and the evidence manifest. The stall example exits 0 when its run lands as the intended draft."
    )]
    Demo {
        /// Lay the demo out here (must not exist or be empty) instead of a new temp directory.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Which example: `dark-mode` (a review send-back, then a ready PR) or `stall` (the
        /// reviewer repeats one finding: S1, a role swap, S1 again, a draft PR).
        #[arg(long, value_enum, default_value = "dark-mode")]
        example: ExampleArg,
    },
}

fn parse_phase(s: &str) -> Result<Phase, String> {
    Phase::parse(s)
        .filter(|p| *p != Phase::Done)
        .ok_or_else(|| {
            format!(
                "`{s}` is not a phase; use one of: {}",
                Phase::WORKING
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

fn main() -> ExitCode {
    // Before anything else: this process will hold the job's tokens and the model API keys, and
    // no agent may read them from its /proc entries (see docs/security.md).
    let inspectable = spec_orchestrate::process::forbid_inspection().err();
    // Then, still before any thread, the secrets a parent orchestrator hands over (a `step`):
    // through an inherited socket, never the environment or the command line.
    let handed = spec_orchestrate::process::handoff::receive(std::time::Duration::from_secs(30));
    let cli = Cli::parse();
    let progress = Progress::from(cli.progress);
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

/// Runs the subcommand: one library call each, with the command line's words turned into the
/// library's types.
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
    match command {
        Command::Run {
            issue,
            mode,
            config,
            repo,
            until,
        } => commands::run::run(&commands::run::RunRequest {
            issue,
            mode: mode.into(),
            config,
            repo,
            until,
        }),
        Command::Step {
            repo,
            feature,
            waves,
        } => commands::run::continue_run(repo.as_deref(), feature.as_deref(), true, waves.waves()),
        Command::Resume { repo, feature } => {
            commands::run::continue_run(repo.as_deref(), feature.as_deref(), false, Waves::Here)
        }
        Command::Revise {
            feedback,
            by,
            repo,
            feature,
        } => commands::revise::revise(&commands::revise::ReviseRequest {
            feedback: feedback.as_deref(),
            by: &by,
            repo: repo.as_deref(),
            feature: feature.as_deref(),
        }),
        Command::Status {
            json,
            repo,
            feature,
        } => commands::status::status(repo.as_deref(), feature.as_deref(), json),
        Command::Approve { repo, feature } => {
            commands::approve::approve(repo.as_deref(), feature.as_deref())
        }
        Command::Arbitrate {
            decision,
            repo,
            feature,
        } => commands::arbitrate::arbitrate(repo.as_deref(), feature.as_deref(), decision.into()),
        Command::Review {
            spec,
            strategy,
            config,
        } => commands::review::review(&commands::review::ReviewRequest {
            spec,
            strategy: strategy.map(Strategy::from),
            config,
        }),
        Command::Debate { spec, config } => commands::review::debate(&spec, config.as_deref()),
        Command::Verify {
            dir,
            pr,
            run,
            repository,
        } => verify(dir, pr, run, repository),
        Command::Fingerprint { input } => commands::fingerprint::fingerprint(input.as_deref()),
        Command::Retro { json, repo } => commands::retro::retro(repo.as_deref(), json),
        Command::Init { repo, sweep } => commands::init::init(repo.as_deref(), sweep),
        Command::Action => commands::action::action(),
        Command::Doctor {
            repo,
            config,
            json,
            github,
            repository,
        } => doctor(repo, config, json, github, repository),
        Command::Import {
            path,
            from,
            feature,
            verify,
            dry_run,
            repo,
        } => import(path, from, feature, verify, dry_run, repo),
        Command::Export {
            to,
            feature,
            out,
            repo,
        } => commands::export::export(&commands::export::ExportRequest {
            to: to.into(),
            feature,
            out,
            repo,
        }),
        Command::Demo { dir, example } => commands::demo::demo(&commands::demo::DemoRequest {
            dir,
            example: example.into(),
        }),
    }
}

/// `verify`: a feature directory is checked here; without one, the evidence a pull request
/// links is fetched from GitHub and checked against the manifest in its body.
fn verify(
    dir: Option<PathBuf>,
    pr: Option<u64>,
    run: Option<u64>,
    repository: Option<String>,
) -> spec_orchestrate::error::Result<commands::Exit> {
    match dir {
        Some(dir) => commands::verify::verify(&dir),
        None => commands::verify::pr::verify_remote(&commands::verify::pr::RemoteRequest {
            pr,
            run,
            repository,
        }),
    }
}

/// `doctor`: the command line's words as the library's request.
fn doctor(
    repo: Option<PathBuf>,
    config: Option<PathBuf>,
    json: bool,
    github: bool,
    repository: Option<String>,
) -> spec_orchestrate::error::Result<commands::Exit> {
    commands::doctor::doctor(&commands::doctor::DoctorRequest {
        repo,
        config,
        json,
        github,
        repository,
    })
}

/// `import`: the command line's words (format, verification) as the library's request.
fn import(
    path: PathBuf,
    from: Option<FromArg>,
    feature: Option<String>,
    verify: VerifyArg,
    dry_run: bool,
    repo: Option<PathBuf>,
) -> spec_orchestrate::error::Result<commands::Exit> {
    commands::import::import(&commands::import::ImportRequest {
        path,
        from: from.map(Format::from),
        feature,
        verify: verify.into(),
        dry_run,
        repo,
    })
}
