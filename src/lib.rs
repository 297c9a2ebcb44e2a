//! spec-orchestrate drives one issue through specification, adversarial review, implementation,
//! acceptance evidence and a pull request.
//!
//! The library holds everything; `main.rs` only parses the command line and maps results to exit
//! codes, so that tests can drive the same code paths in-process or through the binary. The module
//! map follows `docs/architecture.md`: each module owns one kind of record or one side of the
//! outside world, and data flows one way from agents' raw output to the reports.
//!
//! Nothing here prints: progress is an [`events::Event`] sent to the reporter the command line
//! installed, and results go through [`output`], the one module that writes to stdout and
//! stderr (`clippy.toml` lists the print macros and the std handles as disallowed, and the
//! `Cargo.toml` lint table denies them everywhere else).

// Unit tests may unwrap: a panic is how a test fails. Library code may not (`Cargo.toml` lints).
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod agents;
pub mod commands;
pub mod config;
pub mod error;
pub mod events;
pub mod evidence;
pub mod forge;
pub mod fsx;
pub mod git;
pub mod machine;
pub mod net;
pub mod output;
pub mod phases;
pub mod pricing;
pub mod process;
pub mod prompts;
pub mod proxy;
pub mod report;
pub mod retro;
pub mod review;
pub mod secrets;
pub mod signals;
pub mod spec;
pub mod state;
pub mod store;
pub mod types;
pub mod util;
