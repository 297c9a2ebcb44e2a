//! Integration tests: one binary (link time), one module per area. Every test works on real
//! git repositories in temp dirs and runs the real binary or library; only remote services are
//! faked, and agent CLIs are small scripted programs.

mod support;

mod actions_sim;
mod fake_github;

mod action_mode;
mod agents;
mod config_errors;
mod github_forge;
mod github_issue;
mod packaging;
mod pipeline;
mod state_file;
