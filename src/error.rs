//! The library's error type.
//!
//! Every variant carries enough context for a person to act on it: which file, which key, what
//! was expected and what to do next. Each error has an [`ErrorKind`], and the kind decides the
//! exit code (documented in the README's "Exit codes" table, which a test keeps in step with
//! [`ErrorKind::exit_code`]), so a script or a workflow can tell a bad flag from a GitHub outage
//! without parsing the message. Loop outcomes such as a failed gate are *not* errors and never
//! travel through this type.

use std::fmt;
use std::path::PathBuf;

pub mod forge;

use forge::{ForgeCause, ForgeFailure};

/// Shorthand used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can stop a command before it reaches a meaningful outcome.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)]
pub enum Error {
    /// `.specs/pipeline.yml` could not be read or did not validate.
    #[error(transparent)]
    Config(#[from] Box<ConfigError>),

    /// `pipeline-state.json` is unreadable, corrupted, from a newer version, or locked.
    #[error("{path}: {problem}\n  help: {help}")]
    State {
        /// The state file (or its lock) involved.
        path: PathBuf,
        problem: String,
        help: String,
    },

    /// A file the pipeline needs (issue, spec document, evidence) is missing or malformed.
    #[error("{path}: {problem}")]
    Input {
        path: PathBuf,
        /// What is wrong with it and how to fix it.
        problem: String,
    },

    /// A git command failed, or the repository is not in the shape the pipeline left it (no
    /// `origin`, the work branch rewritten, the checkout on another branch).
    #[error("git {args} failed in {dir}: {stderr}")]
    Git {
        args: String,
        dir: PathBuf,
        stderr: String,
    },

    /// A problem its message states, of a kind that decides the exit code: the command used in
    /// a way that cannot work ([`ErrorKind::Usage`]: wrong phase, missing flag or environment
    /// variable, a directory that is not a repository, …); the repository not in the shape the
    /// pipeline needs, said without a failed git command to quote ([`ErrorKind::Git`]: no
    /// `origin`, the work branch moved, the checkout on another branch); no agent able to play a
    /// role ([`ErrorKind::Agent`]: its CLI missing, no replacement allowed or available — a
    /// failing agent *call* is no error, it is recorded as a blocker and the loop goes on); the
    /// recorded acceptance evidence (result file, manifest) missing or unreadable
    /// ([`ErrorKind::Evidence`], the message led by its path).
    #[error("{message}")]
    Said {
        kind: ErrorKind,
        message: String,
        /// What to do next; `None` when `message` already says it.
        help: Option<String>,
    },

    /// The run stopped on purpose before its end (budget, spend cap); the state is saved, a
    /// draft says why, and `resume` continues once the cause is removed. Not a failure of the
    /// tool, so the driver turns it into an outcome instead of exit code 2.
    #[error("{}", .0.message)]
    Stopped(Box<crate::types::RunStop>),

    /// The phase stops where a wave of `implement` leaves this process: handed to the Action's
    /// matrix legs, or a leg's one task ended. The phase stays due; the driver pauses
    /// (`machine::drive`), so it never reaches the edge as an error.
    #[error("{0}")]
    HandedOut(String),

    /// An I/O error with the path it concerned.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    /// GitHub (REST, GraphQL, the artifact service) could not be reached, refused the request or
    /// answered something unusable. Kept apart from usage errors so that a workflow can retry
    /// exactly these.
    #[error("{message}")]
    Forge {
        /// The API base URL or host that was talked to (never a signed URL: those carry secrets).
        endpoint: String,
        /// What failed, with the status and GitHub's message when there was an answer.
        message: String,
        help: Option<String>,
        /// GitHub's answer as data (status, cause, code, message), for callers that decide on
        /// it: never read the message text for that.
        failure: Box<ForgeFailure>,
    },

    /// A file an agent or a test command wrote (a spec document, the steps file, a result
    /// record, an evidence file) is larger than what the orchestrator reads of its kind: it is
    /// refused at its size instead of being read into memory whole (the caps are `Limit` in the
    /// fsx module).
    #[error("{path}: is {}, more than the {} {what} may have; {help}", crate::types::human_bytes(*.size), crate::types::human_bytes(*.cap))]
    TooLarge {
        path: PathBuf,
        /// What kind of file it is, with its article (`a spec document`).
        what: &'static str,
        /// Its size in bytes (at least `cap + 1` when it grew while it was read).
        size: u64,
        /// The most read of a file of this kind, in bytes.
        cap: u64,
        help: &'static str,
    },

    /// A phase run in a child process (the Action's `step`) failed. The child printed its own
    /// error; this one says what the job did about it and keeps the child's kind, so the job
    /// exits with the same code.
    #[error("{message}")]
    PhaseFailed {
        /// The kind of the child's error (from its exit code).
        kind: ErrorKind,
        /// What failed and how to resume.
        message: String,
    },
}

/// What sort of problem an [`Error`] is: decides the exit code and the generic next step.
///
/// The codes are part of the command-line interface (scripts and workflows branch on them), so
/// they never change meaning; the README's "Exit codes" table lists them and a test compares it
/// with [`ErrorKind::exit_code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
#[repr(u8)]
pub enum ErrorKind {
    /// The run stopped on purpose at a limit (budget, spend cap): exit 1, like a draft.
    Stopped = 1,
    /// The command was called in a way that cannot work: arguments, environment, phase.
    Usage,
    /// `.specs/pipeline.yml` is unreadable or invalid.
    Config,
    /// `pipeline-state.json` (or a checkpoint of it) is unreadable, newer, locked or inconsistent.
    State,
    /// A git command failed, or the repository is not as the pipeline left it.
    Git,
    /// GitHub could not be reached, refused the request or answered something unusable.
    Forge,
    /// No agent can play a role.
    Agent,
    /// The acceptance evidence is missing or unreadable.
    Evidence,
    /// A file could not be read or written, or a process could not run to its end (it could
    /// not start, was killed, or crashed).
    Io,
}

impl ErrorKind {
    /// Every kind, in exit-code order.
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::Stopped,
        ErrorKind::Usage,
        ErrorKind::Config,
        ErrorKind::State,
        ErrorKind::Git,
        ErrorKind::Forge,
        ErrorKind::Agent,
        ErrorKind::Evidence,
        ErrorKind::Io,
    ];

    /// The process exit code: the discriminant, 1 to 9 in declaration order. 0 (done or
    /// waiting) and 1 (draft, failed check) are outcomes; a stopped run shares 1 with a draft
    /// because it lands as one.
    pub fn exit_code(self) -> u8 {
        self as u8
    }

    /// The kind an exit code stands for, for a parent that ran this binary as a child process.
    /// `None` for 0, 1 and codes this binary never uses (a panic exits 101).
    pub fn from_exit_code(code: i32) -> Option<ErrorKind> {
        ErrorKind::ALL
            .into_iter()
            .find(|k| *k != ErrorKind::Stopped && i32::from(k.exit_code()) == code)
    }

    /// The name used in the README's table and in logs.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The generic next step for this kind, used when an error has no more specific one.
    pub fn help(self) -> &'static str {
        match self {
            ErrorKind::Stopped => {
                "raise the limit the message names, then `spec-orchestrate resume`"
            }
            ErrorKind::Usage => "check the command against `spec-orchestrate <command> --help`",
            ErrorKind::Config => "fix .specs/pipeline.yml at the line and key the message names",
            ErrorKind::State => {
                "`spec-orchestrate status` shows the run; restore pipeline-state.json from git or a checkpoint, or start over"
            }
            ErrorKind::Git => {
                "run the git command the message names by hand in that directory to see why it fails"
            }
            ErrorKind::Forge => {
                "check the network, the token's permissions and GitHub's status, then run again: the run resumes from its saved state"
            }
            ErrorKind::Agent => {
                "install the agent's CLI or assign another agent under `roles:` in .specs/pipeline.yml"
            }
            ErrorKind::Evidence => {
                "run the acceptance phase again (`spec-orchestrate resume`) to record fresh evidence"
            }
            ErrorKind::Io => "check that the path exists and that this user may read and write it",
        }
    }
}

impl Error {
    /// A usage error (add [`Error::with_help`] when the message does not say what to do).
    pub fn usage(message: impl Into<String>) -> Self {
        Error::said(ErrorKind::Usage, message.into())
    }

    fn said(kind: ErrorKind, message: String) -> Self {
        Error::Said {
            kind,
            message,
            help: None,
        }
    }

    /// A GitHub error at `endpoint` (API base URL or host; never a signed URL).
    pub fn forge(endpoint: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Forge {
            endpoint: endpoint.into(),
            message: message.into(),
            help: None,
            failure: Box::default(),
        }
    }

    /// Attaches GitHub's answer to a forge error (on other variants it changes nothing).
    #[must_use]
    pub fn with_failure(mut self, answer: ForgeFailure) -> Self {
        if let Error::Forge { failure, .. } = &mut self {
            **failure = answer;
        }
        self
    }

    /// GitHub's answer to the call that failed, when this is a forge error.
    pub fn forge_failure(&self) -> Option<&ForgeFailure> {
        match self {
            Error::Forge { failure, .. } => Some(failure),
            _ => None,
        }
    }

    /// The class of a forge error ([`ForgeCause::Other`] for every other error).
    pub fn forge_cause(&self) -> ForgeCause {
        self.forge_failure()
            .map(|f| f.cause)
            .unwrap_or(ForgeCause::Other)
    }

    /// An error about `agent` (named in the message), whose message already says what to do.
    pub fn agent(_agent: impl Into<String>, message: impl Into<String>) -> Self {
        Error::said(ErrorKind::Agent, message.into())
    }

    /// The repository `dir` (named in the message) is not in the shape the pipeline needs.
    pub fn repo(_dir: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::said(ErrorKind::Git, message.into())
    }

    /// The evidence at `path` is missing or unreadable: `<path>: <problem>`.
    pub fn evidence(path: impl Into<PathBuf>, problem: impl Into<String>) -> Self {
        let message = format!("{}: {}", path.into().display(), problem.into());
        Error::said(ErrorKind::Evidence, message)
    }

    /// Adds the next step to an error built without one. Only the variants that carry a help of
    /// their own take it; on the others (whose help is fixed) it changes nothing.
    #[must_use]
    pub fn with_help(mut self, text: impl Into<String>) -> Self {
        match &mut self {
            Error::Said { help, .. } | Error::Forge { help, .. } => *help = Some(text.into()),
            _ => debug_assert!(
                false,
                "with_help on an error without a help field: {self:?}"
            ),
        }
        self
    }

    /// What sort of problem this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Config(_) => ErrorKind::Config,
            Error::State { .. } => ErrorKind::State,
            // A file the person handed over (issue, spec, envelope, event payload).
            Error::Input { .. } => ErrorKind::Usage,
            Error::Git { .. } => ErrorKind::Git,
            Error::Said { kind, .. } | Error::PhaseFailed { kind, .. } => *kind,
            Error::Stopped(_) | Error::HandedOut(_) => ErrorKind::Stopped,
            Error::Io { .. } | Error::TooLarge { .. } => ErrorKind::Io,
            Error::Forge { .. } => ErrorKind::Forge,
        }
    }

    /// The process exit code for this error (see [`ErrorKind::exit_code`]).
    pub fn exit_code(&self) -> u8 {
        self.kind().exit_code()
    }

    /// What the person can do next: this error's own advice when it has one, else its kind's.
    pub fn help(&self) -> &str {
        let own = match self {
            Error::Config(c) => Some(c.help.as_str()),
            Error::State { help, .. } => Some(help.as_str()),
            Error::TooLarge { help, .. } => Some(*help),
            Error::Said { help, .. } | Error::Forge { help, .. } => help.as_deref(),
            _ => None,
        };
        own.unwrap_or_else(|| self.kind().help())
    }

    /// Whether the rendered message already tells the person what to do, so that
    /// [`Error::report`] does not add a second help line.
    fn says_what_to_do(&self) -> bool {
        match self {
            // Both render their help line themselves.
            Error::Config(_) | Error::State { .. } => true,
            // Their messages are written with the remedy in them.
            Error::Input { .. }
            | Error::Stopped(_)
            | Error::HandedOut(_)
            | Error::PhaseFailed { .. }
            | Error::TooLarge { .. } => true,
            Error::Said { help, .. } | Error::Forge { help, .. } => help.is_none(),
            Error::Git { .. } | Error::Io { .. } => false,
        }
    }

    /// The full text for a person: the message, then `  help: …` when the message does not
    /// already end with what to do. `main.rs` prints this after `error: `.
    pub fn report(&self) -> String {
        if self.says_what_to_do() {
            self.to_string()
        } else {
            format!("{self}\n  help: {}", self.help())
        }
    }

    /// Wraps an I/O error with the path it happened on, because a bare `No such file or
    /// directory` tells the user nothing.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// A configuration problem, pointing at the exact place and saying how to fix it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[allow(missing_docs)]
pub struct ConfigError {
    pub file: PathBuf,
    /// 1-based line, when it could be located.
    pub line: Option<usize>,
    /// Dotted key path, e.g. `roles.spec_reviewer`.
    pub key: String,
    /// What is wrong, including the bad value.
    pub problem: String,
    /// What is allowed / how to fix it.
    pub help: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        let key = if self.key.is_empty() {
            "(top level)"
        } else {
            &self.key
        };
        write!(f, ": {key}: {}\n  help: {}", self.problem, self.help)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows of the README's "Exit codes" table: (code, kind name, what to do).
    fn readme_exit_codes() -> Vec<(u8, String, String)> {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
            .expect("README.md is readable");
        let section = readme
            .split("\n### Exit codes\n")
            .nth(1)
            .expect("the README has an `### Exit codes` section");
        section
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2) // header and separator
            .map(|row| {
                let inner = row
                    .trim()
                    .strip_prefix('|')
                    .and_then(|r| r.strip_suffix('|'));
                let cells: Vec<&str> = inner
                    .unwrap_or_else(|| panic!("a table row: {row}"))
                    .split('|')
                    .map(str::trim)
                    .collect();
                assert_eq!(cells.len(), 4, "four columns: {row}");
                let code = cells[0].parse().unwrap_or_else(|_| panic!("a code: {row}"));
                (
                    code,
                    cells[1].trim_matches('`').to_string(),
                    cells[3].to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn the_readme_table_matches_the_exit_codes() {
        let rows = readme_exit_codes();
        assert_eq!(
            rows.first().map(|(c, k, _)| (*c, k.as_str())),
            Some((0, "")),
            "0 comes first and is no error"
        );
        let documented: Vec<&(u8, String, String)> = rows.iter().skip(1).collect();
        assert_eq!(
            documented.len(),
            ErrorKind::ALL.len(),
            "one row per kind: {rows:?}"
        );
        for (kind, (code, name, help)) in ErrorKind::ALL.iter().zip(documented) {
            assert_eq!(name, kind.name(), "rows in exit-code order");
            assert_eq!(*code, kind.exit_code(), "the README's code for {kind}");
            assert_eq!(help, kind.help(), "the README's advice for {kind}");
        }
    }

    #[test]
    fn every_kind_has_its_documented_exit_code() {
        let codes: Vec<(&str, u8)> = ErrorKind::ALL
            .iter()
            .map(|k| (k.name(), k.exit_code()))
            .collect();
        assert_eq!(
            codes,
            [
                ("stopped", 1),
                ("usage", 2),
                ("config", 3),
                ("state", 4),
                ("git", 5),
                ("forge", 6),
                ("agent", 7),
                ("evidence", 8),
                ("io", 9),
            ]
        );
    }

    #[test]
    fn exit_codes_of_errors_are_distinct_and_read_back() {
        for k in ErrorKind::ALL {
            let back = ErrorKind::from_exit_code(i32::from(k.exit_code()));
            if k == ErrorKind::Stopped {
                assert_eq!(back, None, "1 is the draft outcome, not an error");
            } else {
                assert_eq!(back, Some(k));
            }
        }
        assert_eq!(ErrorKind::from_exit_code(0), None);
        assert_eq!(ErrorKind::from_exit_code(101), None, "a panic");
    }

    #[test]
    fn each_variant_has_its_kind() {
        let io = Error::io("x", std::io::Error::other("boom"));
        assert_eq!(io.exit_code(), 9);
        assert_eq!(Error::usage("u").exit_code(), 2);
        assert_eq!(Error::forge("https://api.github.com", "f").exit_code(), 6);
        assert_eq!(Error::agent("claude", "a").exit_code(), 7);
        assert_eq!(Error::evidence("d", "e").exit_code(), 8);
        assert_eq!(Error::repo("d", "r").exit_code(), 5);
        let git = Error::Git {
            args: "status".into(),
            dir: "d".into(),
            stderr: "fatal".into(),
        };
        assert_eq!(git.kind(), ErrorKind::Git);
        let state = Error::State {
            path: "s".into(),
            problem: "p".into(),
            help: "h".into(),
        };
        assert_eq!(state.exit_code(), 4);
        let input = Error::Input {
            path: "issue.md".into(),
            problem: "has no `# ` title".into(),
        };
        assert_eq!(input.kind(), ErrorKind::Usage);
        let child = Error::PhaseFailed {
            kind: ErrorKind::Forge,
            message: "m".into(),
        };
        assert_eq!(child.exit_code(), 6, "a failed child keeps its kind");
    }

    #[test]
    fn the_report_adds_a_help_line_only_when_the_message_lacks_one() {
        let forge = Error::forge("https://api.github.com", "GitHub o/r: read issue #9 failed")
            .with_help("check the token");
        assert_eq!(
            forge.report(),
            "GitHub o/r: read issue #9 failed\n  help: check the token"
        );
        assert_eq!(forge.to_string(), "GitHub o/r: read issue #9 failed");

        let usage = Error::usage("several runs exist (a, b); choose one with --feature");
        assert_eq!(usage.report(), usage.to_string());
        assert_eq!(usage.help(), ErrorKind::Usage.help());

        let git = Error::Git {
            args: "push".into(),
            dir: "/r".into(),
            stderr: "denied".into(),
        };
        assert_eq!(
            git.report(),
            format!(
                "git push failed in /r: denied\n  help: {}",
                ErrorKind::Git.help()
            )
        );

        let state = Error::State {
            path: "s.json".into(),
            problem: "locked".into(),
            help: "wait".into(),
        };
        assert_eq!(state.report(), "s.json: locked\n  help: wait", "not twice");
        assert_eq!(state.help(), "wait");
    }
}
