//! Everything about judging work: findings and their envelope, fingerprints, stall signals and
//! arbitration. Review strategies live here too as they arrive.

pub mod arbitration;
pub mod envelope;
pub mod fingerprint;
pub mod stall;

pub use envelope::{Envelope, Finding, Severity};
pub use stall::Signal;
