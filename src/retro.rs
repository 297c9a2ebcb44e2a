//! Self-improvement that learns only from evidence.
//!
//! Each finished run appends one record to the repository's ledger
//! (`.specs/pipeline-metrics.jsonl`). A proposal to change the pipeline's own prompts is made
//! only when the ledger shows the same failure in the same phase in enough runs; otherwise it is
//! an observation. Prompt files (Tier 1) are changed on their own branch, never on the work
//! branch; anything else (Tier 2) is only suggested. Guardrails keep every edit inside
//! `.specs/prompts/` and within its line budget.

pub mod apply;
pub mod guardrails;
pub mod ledger;
pub mod proposals;
