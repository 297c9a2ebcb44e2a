//! The commands behind the CLI. Each takes a request struct and returns an outcome that
//! `main.rs` maps to an exit code; nothing here exits the process. A request is clap's `Args`
//! (its fields' doc comments are the `--help` text), so the command line and the request say
//! each word once; `main.rs` does the parsing.

/// `print_line` of a formatted line: a command's result on stdout.
macro_rules! outln {
    ($($arg:tt)*) => {
        crate::output::print_line(&format!($($arg)*))
    };
}

pub mod action;
pub mod approve;
pub mod arbitrate;
pub mod demo;
pub mod doctor;
pub mod export;
pub mod fingerprint;
pub mod import;
pub mod init;
pub mod retro;
pub mod review;
pub mod revise;
pub mod run;
pub mod status;
pub mod verify;

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::Event;
use crate::forge::local::LocalForge;
use crate::git::Git;
use crate::machine::answer::PersonCommand;
use crate::machine::{self, RunEnd, StopAt};
use crate::phases::Ctx;
use crate::secrets::Redactor;
use crate::state::{self, store::StateStore};

/// Process exit codes (the README's "Exit codes" table; scripts and CI rely on them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Done, or waiting for a person.
    Ok = 0,
    /// Finished as a draft, or a check failed.
    Failed = 1,
    /// A usage error. Errors do not travel as an `Exit`: `main.rs` exits with
    /// [`crate::error::Error::exit_code`], which is 2 for usage and 3 to 9 for the other kinds.
    Error = 2,
}

/// The run a command is about: `--repo` and `--feature`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Target {
    /// Repository (default: the current directory).
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// Feature directory name under .specs/ (needed when several runs exist).
    #[arg(long)]
    pub feature: Option<String>,
}

/// clap's `ValueEnum` for the library's enums a request takes from the command line, each
/// value as `--help` lists it.
macro_rules! value_enum {
    ($($t:ty { $($v:ident = $name:literal),+ })+) => {$(
        impl clap::ValueEnum for $t {
            fn value_variants<'a>() -> &'a [Self] {
                &[$(<$t>::$v),+]
            }
            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                let names = [$((<$t>::$v, $name)),+];
                let name = names.into_iter().find(|(v, _)| v == self)?.1;
                Some(clap::builder::PossibleValue::new(name))
            }
        }
    )+};
}

value_enum! {
    crate::output::Progress { Terminal = "terminal", Json = "json", Quiet = "quiet" }
    crate::types::kinds::Answer {
        Continue = "continue", Swap = "swap", Draft = "draft", Approve = "approve"
    }
    crate::types::kinds::Strategy { Single = "single", Panel = "panel", Debate = "debate" }
    crate::spec::import::Format { SpecKit = "spec-kit", Kiro = "kiro", OpenSpec = "openspec" }
    crate::spec::cases::Method {
        Playwright = "playwright", Command = "command", FileCheck = "file-check"
    }
    state::Mode { Auto = "auto", Manual = "manual" }
    demo::Example { DarkMode = "dark-mode", Stall = "stall" }
}

/// A sentence of progress for the person running the command.
fn note(message: impl Into<String>) {
    crate::events::emit(crate::events::Event::Note {
        message: message.into(),
    });
}

/// Resolves `--repo` (default: the current directory) to the top of its git work tree.
pub fn repo_root(repo: Option<&Path>) -> Result<PathBuf> {
    let dir = match repo {
        Some(r) => r.to_path_buf(),
        None => std::env::current_dir().map_err(|e| Error::io(".", e))?,
    };
    if !dir.is_dir() {
        return Err(
            Error::usage(format!("--repo {}: no such directory", dir.display()))
                .with_help("pass the repository's directory to --repo, or run from inside it"),
        );
    }
    let git = Git::new(&dir);
    if !git.is_repo() {
        return Err(Error::usage(format!(
            "{} is not inside a git repository; run `git init` and make a first commit, or pass --repo",
            dir.display()
        )));
    }
    git.toplevel()
}

/// What every command opens before it does anything: the configuration, and the redactor of the
/// secrets it names.
pub struct Opened {
    /// The configuration.
    pub config: Config,
    /// Redacts the values of the secrets the configuration names (and any the caller adds).
    pub redactor: Redactor,
}

/// The one door to a repository's configuration: loads it (`path`, else
/// `.specs/pipeline.yml` of `repo`), refuses unusable prompt overrides
/// (`.specs/prompts/`), and makes the redactor of the secrets it names.
pub fn open_config(repo: &Path, path: Option<&Path>) -> Result<Opened> {
    let config = Config::load(repo, path)?;
    crate::prompts::check_overrides(repo)?;
    let redactor = Redactor::from_env(&config);
    Ok(Opened { config, redactor })
}

/// The context of a local run of `state` in `repo`.
fn local_ctx(repo: &Path, opened: Opened, state: state::State, store: StateStore) -> Ctx {
    Ctx {
        repo: repo.to_path_buf(),
        config: opened.config,
        state,
        store,
        forge: LocalForge::new(repo),
        redactor: opened.redactor,
        waves: Default::default(),
    }
}

/// Opens the run of `at` and applies a person's `command` from the command line (by `$USER`),
/// as the machine's table decides, and saves it: the context and the answer's note.
fn answer_locally(at: &Target, command: PersonCommand) -> Result<(Ctx, Option<String>)> {
    let mut ctx = at.open()?;
    let by = std::env::var("USER").unwrap_or_else(|_| "local".into());
    let applied = machine::answer::answer(&ctx.state, &ctx.config, command, &by)
        .map_err(|r| r.into_error(&ctx.state.feature, &ctx.store.path()))?;
    ctx.state = applied.state;
    ctx.save()?;
    Ok((ctx, applied.note))
}

/// Drives a context and reports the end as an event.
pub fn drive_and_report(ctx: &mut Ctx, stop: StopAt) -> Result<Exit> {
    // The agents' identity (when separate) may write the checkout while the run lasts.
    crate::process::identity::lend(&ctx.repo);
    // What a killed run left behind goes before anything runs: an app an interrupted evaluate
    // round left serving, its round's tree.
    crate::phases::evaluate::stop_leftover_app(ctx)?;
    let end = machine::drive(ctx, stop)?;
    let pr = ctx
        .state
        .pr
        .as_ref()
        .map(|p| p.url.clone())
        .unwrap_or_default();
    let (event, exit) = match end {
        RunEnd::Done { draft } => (
            Event::Done { draft, pr },
            if draft { Exit::Failed } else { Exit::Ok },
        ),
        RunEnd::Waiting(message) => (Event::Waiting { message }, Exit::Ok),
        RunEnd::Paused(next) => (Event::Paused { next }, Exit::Ok),
        RunEnd::Stopped(message) => (Event::Stopped { message, pr }, Exit::Failed),
    };
    crate::events::emit(event);
    Ok(exit)
}

impl Target {
    /// The repository's top and the feature directory of its run.
    pub fn resolve(&self) -> Result<(PathBuf, PathBuf)> {
        let repo = repo_root(self.repo.as_deref())?;
        let dir = feature_dir(&repo, self.feature.as_deref())?;
        Ok((repo, dir))
    }

    /// The context of the existing run, with the configuration it was started with.
    pub fn open(&self) -> Result<Ctx> {
        let (repo, dir) = self.resolve()?;
        let store = StateStore::open(&dir)?;
        let Some(state) = store.load()? else {
            return Err(Error::usage(format!(
                "no state in {}; start a run with `spec-orchestrate run --issue ISSUE.md`",
                dir.display()
            )));
        };
        let opened = open_config(&repo, state.config_path.as_deref().map(Path::new))?;
        Ok(local_ctx(&repo, opened, state, store))
    }
}

/// Resolves `--feature` against the runs in the repository.
pub fn feature_dir(repo: &Path, feature: Option<&str>) -> Result<PathBuf> {
    state::store::resolve_feature(repo, feature)
}
