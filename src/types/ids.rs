//! Ids that used to be bare strings and numbers: a commit's sha, an agent's name, a GitHub
//! comment id, a GitHub workflow run id, an issue's and a pull request's number, a task's id.
//!
//! Each is a newtype so that a signature says which id it takes and the compiler refuses a run
//! id where a comment id belongs (both are `u64` on GitHub), or a branch name where a sha
//! belongs. Every one is `#[serde(transparent)]`: on disk, in events and in GitHub's JSON it is
//! the string or number it always was, so `pipeline-state.json` and every snapshot stay byte for
//! byte what builds before the newtypes wrote.
//!
//! They check nothing when built or read: what a valid value is depends on where it comes from
//! (a sha in a loaded state must also be a commit of the checkout, which `state::validate`
//! checks with the file and the key; an agent name must be configured, which the config checks).
//! A newtype that refused on deserialization would turn those located messages into a bare
//! serde error.

use std::borrow::Borrow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A string id: the newtype, its conversions from and to `String`, and comparison with `str`.
macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id's text, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> $name {
                $name(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> $name {
                $name(s.to_string())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        /// Reads as the text it is, so `len`, `starts_with` and `Option::as_deref` work on it;
        /// nothing converts back without saying which id it is.
        impl std::ops::Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

/// A numeric id GitHub gives: the newtype, its conversions from and to `u64`.
macro_rules! number_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(u64);

        impl $name {
            /// The number GitHub gave.
            pub fn get(self) -> u64 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<u64> for $name {
            fn from(n: u64) -> $name {
                $name(n)
            }
        }

        impl From<$name> for u64 {
            fn from(id: $name) -> u64 {
                id.0
            }
        }

        impl PartialEq<u64> for $name {
            fn eq(&self, other: &u64) -> bool {
                self.0 == *other
            }
        }
    };
}

number_id! {
    /// A comment on a GitHub issue or pull request (`/issues/comments/<id>`): the status
    /// comment, and how far the chain has read the issue's comments.
    CommentId
}

number_id! {
    /// A GitHub Actions workflow run (`GITHUB_RUN_ID`, `/actions/runs/<id>`): one job of the
    /// chain. Not the run of the pipeline, whose id is the state's `run_id` text.
    RunId
}

number_id! {
    /// An issue's number (`#7`): the issue a run answers, its status comment's home.
    IssueNumber
}

number_id! {
    /// A pull request's number (`#12`): the one a run opened, or the one a review came from.
    PrNumber
}

impl PrNumber {
    /// The pull request as an issue: GitHub's issue-comments API addresses a pull request's
    /// conversation by the same number.
    pub fn as_issue(self) -> IssueNumber {
        IssueNumber(self.0)
    }
}

string_id! {
    /// An agent's name as the configuration's `agents:` map spells it (`claude`, `codex`): who
    /// played a role, made a call, failed or was swapped in.
    AgentName
}

string_id! {
    /// A task of `tasks.md` (`T001`), or a task the run adds (`FIX2`, `REV1`): what a wave runs
    /// and what a matrix leg is given.
    TaskId
}

string_id! {
    /// A git commit, by its full hex sha as git prints it (`git rev-parse HEAD`).
    Sha
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On disk an id is the bare value it always was, both ways.
    #[test]
    fn ids_are_written_and_read_as_their_bare_value() {
        let sha = Sha::from("0123456789abcdef0123456789abcdef01234567");
        let json = serde_json::to_string(&sha).unwrap();
        assert_eq!(json, "\"0123456789abcdef0123456789abcdef01234567\"");
        assert_eq!(serde_json::from_str::<Sha>(&json).unwrap(), sha);
        assert_eq!(sha, "0123456789abcdef0123456789abcdef01234567");
    }
}
