//! Everything about judging work: findings and their envelope, fingerprints, stall signals,
//! the loops they end, arbitration, and the review strategies (single, panel, debate) with the
//! contract review that runs beside them.

pub mod anonymize;
pub mod calls;
pub mod classify;
pub mod contract;
pub mod debate;
pub mod dispute;
pub mod envelope;
pub mod feedback;
pub mod fingerprint;
pub mod merge;
pub mod panel;
pub mod previous;
pub mod stall;
pub mod strategy;

#[cfg(test)]
mod tests;
