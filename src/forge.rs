//! Where issues, branches and pull requests live. Locally that is the git checkout itself plus
//! files; the GitHub forge arrives with the Action mode. Phases talk to a forge through this one
//! interface, and the local implementation is real (git + files), not a mock.

pub mod github;
pub mod local;

pub use local::LocalForge;
