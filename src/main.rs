//! The `spec-orchestrate` binary: parses the command line, calls the library, maps the result
//! to an exit code (0 done or waiting, 1 draft or failed check, 2 error).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use spec_orchestrate::commands::{self, Exit};
use spec_orchestrate::machine::Phase;
use spec_orchestrate::state::Mode;

#[derive(Parser)]
#[command(
    name = "spec-orchestrate",
    version,
    about = "Drive an issue to a pull request: spec, adversarial review, cross-reviewed implementation, evidence-backed acceptance.",
    long_about = "Drive an issue to a pull request: one model writes a specification, a different model attacks it, \
tasks are implemented and reviewed across models, acceptance cases run in a harness that keeps hashed evidence, \
and the pull request body is rendered from recorded state only.\n\n\
State lives in .specs/<feature>/pipeline-state.json; every command resumes from it.",
    after_help = "Try it offline in two minutes:\n  spec-orchestrate demo\n\nOn your repository:\n  spec-orchestrate init\n  spec-orchestrate run --issue docs/issues/dark-mode.md\n  spec-orchestrate status"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    Auto,
    Manual,
}

#[derive(Subcommand)]
enum Command {
    /// Start a run for an issue (or resume it if its state exists) and drive it to the end.
    #[command(
        after_help = "Examples:\n  spec-orchestrate run --issue issues/dark-mode.md\n  spec-orchestrate run --issue issues/dark-mode.md --mode manual --until spec_review\n\nThe issue file's first `# ` heading is the title; the rest is the body.\nExit: 0 done or waiting, 1 landed as draft, 2 error."
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
    /// Re-check every PASS of the last acceptance round against the evidence manifest.
    #[command(
        after_help = "Example:\n  spec-orchestrate verify .specs/add-a-dark-mode-toggle\n\nExit: 0 every PASS holds, 1 a file is missing, empty or changed, 2 error."
    )]
    Verify {
        /// The feature directory, e.g. .specs/add-a-dark-mode-toggle.
        dir: PathBuf,
    },
    /// Print the fingerprint and class key of each finding in an envelope.
    #[command(
        after_help = "Example:\n  echo '{\"findings\":[{\"severity\":\"critical\",\"gist\":\"x\"}]}' | spec-orchestrate fingerprint -"
    )]
    Fingerprint {
        /// Envelope file, or `-` for stdin (default).
        input: Option<PathBuf>,
    },
    /// Write .specs/pipeline.yml and .github/workflows/spec-orchestrate.yml if absent (never overwrites).
    #[command(after_help = "Example:\n  cd my-repo && spec-orchestrate init")]
    Init {
        /// Repository (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
    },
    /// GitHub Actions entrypoint: one phase per job, checkpointed as an artifact, then self-dispatch.
    #[command(
        after_help = "Runs inside the spec-orchestrate Docker action; everything comes from the runner's\nenvironment (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, INPUT_GITHUB_TOKEN, ACTIONS_RUNTIME_TOKEN, …).\nSee action.yml and examples/workflow.yml.\nExit: as `step` (0 paused, waiting or done, 1 landed as draft, 2 error)."
    )]
    Action,
    /// Run the whole pipeline offline on the bundled example app with scripted agents.
    #[command(
        after_help = "Example:\n  spec-orchestrate demo\n\nPrints where pr-body.md is and the evidence manifest."
    )]
    Demo {
        /// Lay the demo out here (must not exist or be empty) instead of a new temp directory.
        #[arg(long)]
        dir: Option<PathBuf>,
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

fn mode(m: ModeArg) -> Mode {
    match m {
        ModeArg::Auto => Mode::Auto,
        ModeArg::Manual => Mode::Manual,
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SPEC_ORCHESTRATE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .without_time()
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run {
            issue,
            mode: m,
            config,
            repo,
            until,
        } => commands::run::run(&commands::run::RunRequest {
            issue,
            mode: mode(m),
            config,
            repo,
            until,
        }),
        Command::Step { repo, feature } => {
            commands::run::continue_run(repo.as_deref(), feature.as_deref(), true)
        }
        Command::Resume { repo, feature } => {
            commands::run::continue_run(repo.as_deref(), feature.as_deref(), false)
        }
        Command::Status {
            json,
            repo,
            feature,
        } => commands::status::status(repo.as_deref(), feature.as_deref(), json),
        Command::Approve { repo, feature } => {
            commands::approve::approve(repo.as_deref(), feature.as_deref())
        }
        Command::Verify { dir } => commands::verify::verify(&dir),
        Command::Fingerprint { input } => commands::fingerprint::fingerprint(input.as_deref()),
        Command::Init { repo } => commands::init::init(repo.as_deref()),
        Command::Action => commands::action::action(),
        Command::Demo { dir } => commands::demo::demo(&commands::demo::DemoRequest { dir }),
    };
    match result {
        Ok(exit) => ExitCode::from(exit as u8),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(Exit::Error as u8)
        }
    }
}
