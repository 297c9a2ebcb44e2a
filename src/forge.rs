//! Where issues, branches and pull requests live. Locally that is the git checkout itself plus
//! files; on GitHub (Action mode) it is the REST/GraphQL API plus the checkout's `origin`.
//! Phases talk to the local forge; the Action job publishes their results through the GitHub
//! forge after each phase (see `commands::action`). Both are real, not mocks.

pub mod github;
pub mod local;
pub mod remote;
