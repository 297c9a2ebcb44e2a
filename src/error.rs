//! The library's error type.
//!
//! Every variant carries enough context for a person to act on it: which file, which key, what
//! was expected and what to do next. `main.rs` renders these and maps them to exit code 2; loop
//! outcomes such as a failed gate are *not* errors and never travel through this type.

use std::path::PathBuf;

use crate::config::ConfigError;

/// Shorthand used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can stop a command before it reaches a meaningful outcome.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `.specs/pipeline.yml` could not be read or did not validate.
    #[error(transparent)]
    Config(#[from] Box<ConfigError>),

    /// `pipeline-state.json` is unreadable, corrupted, from a newer version, or locked.
    #[error("{path}: {problem}\n  help: {help}")]
    State {
        /// The state file (or its lock) involved.
        path: PathBuf,
        /// What went wrong.
        problem: String,
        /// What the user can do about it.
        help: String,
    },

    /// A file the pipeline needs (issue, spec document, evidence) is missing or malformed.
    #[error("{path}: {problem}")]
    Input {
        /// The offending file.
        path: PathBuf,
        /// What is wrong with it and how to fix it.
        problem: String,
    },

    /// A git command failed.
    #[error("git {args} failed in {dir}: {stderr}")]
    Git {
        /// The git arguments that were run.
        args: String,
        /// The working directory.
        dir: PathBuf,
        /// What git said.
        stderr: String,
    },

    /// The command was used in a way that cannot work (wrong phase, missing feature, …).
    #[error("{0}")]
    Usage(String),

    /// The run stopped on purpose before its end (budget, spend cap); the state is saved, a
    /// draft says why, and `resume` continues once the cause is removed. Not a failure of the
    /// tool, so the driver turns it into an outcome instead of exit code 2.
    #[error("{}", .0.message)]
    Stopped(Box<crate::state::RunStop>),

    /// An I/O error with the path it concerned.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl Error {
    /// Wraps an I/O error with the path it happened on, because a bare `No such file or
    /// directory` tells the user nothing.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
