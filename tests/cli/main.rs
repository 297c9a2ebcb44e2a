//! Integration tests: one binary (link time), one module per area. Every test works on real
//! git repositories in temp dirs and runs the real binary or library; only remote services are
//! faked, and agent CLIs are small scripted programs.

// A panic is how a test fails, so tests may unwrap (library code may not: `Cargo.toml` lints).
#![allow(clippy::unwrap_used)]
// A test program prints for the person running it; the library may not (`Cargo.toml` lints).
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

mod support;

mod actions_sim;
mod fake_github;
mod fault_front;

mod action_mode;
mod agents;
mod arbitration;
mod bounds;
mod browser_steps;
mod budget;
mod call_trees;
mod chaos;
mod checkout_lock;
mod concurrency;
mod config_errors;
mod contract;
mod debate;
mod demo_report;
mod disputes;
mod doctor;
mod evidence;
mod evidence_github;
mod evidence_report;
mod fakes;
mod first_run;
mod fs_safety;
mod github_forge;
mod github_issue;
mod hostile_git;
mod http_backends;
mod http_roles;
mod import;
mod isolation;
mod layers;
mod matrix_legs;
mod orphans;
mod output;
mod packaging;
mod panel;
mod parallel_tasks;
mod pipeline;
mod pr_review;
mod pr_review_action;
mod prompt_snapshots;
mod proxy;
mod real_clis;
mod retro;
mod rooms;
mod sandbox;
mod snapshot;
mod stall;
mod state_checks;
mod state_file;
mod task_review;
mod waves_view;
