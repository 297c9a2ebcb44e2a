//! Checks of a state read back from disk.
//!
//! The state file lives in the checkout, where agents (and people) can edit it. Its values reach
//! paths (`feature` names the directory that is staged and committed) and git arguments (the
//! shas), and its phase decides what runs next. So a loaded state is checked before anything
//! uses it: a feature name of the shape the pipeline makes, shas that are shas and name commits
//! of this repository, a phase its completed phases can lead to. A failure names the key.

use crate::git::Git;
use crate::types::Phase;

use super::State;

/// A key of the state whose value cannot be right, and why.
#[derive(Debug, PartialEq, Eq)]
pub struct Inconsistency {
    /// The key (`feature`, `base_commit`, `tasks[2].commit`, `phase`, …).
    pub key: String,
    /// What is wrong with its value.
    pub problem: String,
}

fn bad(key: impl Into<String>, problem: impl Into<String>) -> Inconsistency {
    Inconsistency {
        key: key.into(),
        problem: problem.into(),
    }
}

/// Whether `name` has the shape of a feature name the pipeline makes (`util::kebab`): letters
/// (lower-case), digits and single dashes, no dot or slash, so it is one directory name.
pub fn is_feature_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c == '-' || (c.is_alphanumeric() && !c.is_uppercase()))
}

/// Whether `sha` looks like a full or abbreviated object name (never an option or a range).
fn is_sha(sha: &str) -> bool {
    (7..=64).contains(&sha.len()) && sha.chars().all(|c| c.is_ascii_hexdigit())
}

/// The shas the state names, with their keys.
fn shas(state: &State) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    if let Some(s) = &state.base_commit {
        out.push(("base_commit".to_string(), s.as_str()));
    }
    if let Some(s) = &state.implement_base {
        out.push(("implement_base".to_string(), s.as_str()));
    }
    for (i, t) in state.tasks.iter().enumerate() {
        if let Some(s) = &t.commit {
            out.push((format!("tasks[{i}].commit ({})", t.id), s.as_str()));
        }
    }
    out
}

/// Checks that need no repository: the feature name, the shape of the shas, the phase.
pub fn shape(state: &State) -> Result<(), Inconsistency> {
    if !is_feature_name(&state.feature) {
        return Err(bad(
            "feature",
            format!(
                "`{}` is not a feature name (lower-case letters, digits and dashes, as the pipeline derives it from the issue title)",
                state.feature
            ),
        ));
    }
    for (key, sha) in shas(state) {
        if !is_sha(sha) {
            return Err(bad(key, format!("`{sha}` is not a commit sha")));
        }
    }
    phase(state)
}

/// The phase to run next must be reachable from the completed phases: every phase after
/// `intake` needs `intake` done, `implement` and `evaluate` need the approval, `done` needs the
/// pull request and the retrospective, and a run that is done has its pull request recorded.
fn phase(state: &State) -> Result<(), Inconsistency> {
    let done = |p: Phase| state.completed_phases.contains(&p);
    let need: &[Phase] = match state.phase {
        Phase::Intake => &[],
        Phase::Implement | Phase::Evaluate => &[Phase::Intake, Phase::Approval],
        Phase::Done => &[Phase::Intake, Phase::Pr, Phase::Retrospective],
        _ => &[Phase::Intake],
    };
    if let Some(missing) = need.iter().find(|p| !done(**p)) {
        return Err(bad(
            "phase",
            format!(
                "is `{}` but `{missing}` is not among the completed phases ({})",
                state.phase,
                if state.completed_phases.is_empty() {
                    "none".to_string()
                } else {
                    state
                        .completed_phases
                        .iter()
                        .map(|p| p.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
        ));
    }
    if state.phase == Phase::Done && state.pr.is_none() {
        return Err(bad(
            "pr",
            "the run is `done` but no pull request is recorded",
        ));
    }
    Ok(())
}

/// Every sha the state names is a commit of the repository `git` works in; outside a
/// repository there is nothing to check them against.
///
/// Every load pays this, so it spawns git only for what it must: a state that names no sha
/// (every run before `implement`) costs no process at all, and whether `git` works in a
/// repository is asked only when a sha did not resolve (a repository is the normal case, so a
/// sha that resolves already proves it). A process spawn costs milliseconds on a busy runner,
/// more than parsing a thousand review rounds.
pub fn commits(state: &State, git: &Git) -> Result<(), Inconsistency> {
    for (key, sha) in shas(state) {
        if git
            .run(&["cat-file", "-e", &format!("{sha}^{{commit}}")])
            .is_err()
        {
            if !git.is_repo() {
                return Ok(());
            }
            return Err(bad(
                key,
                format!("`{sha}` is not a commit of this repository"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    /// The leaf vocabulary cannot name the state (no import upwards), so this reading of a
    /// `Strategy` inside a state record is tested here.
    #[test]
    fn a_round_recorded_before_strategies_existed_was_a_single_reviewers() {
        let round: crate::state::ReviewRound = serde_json::from_value(serde_json::json!({
            "round": 1, "reviewer": "codex", "critical": 0, "improvement": 0, "minor": 0,
            "fix_required": 0, "fingerprints": [], "class_keys": [], "gate": "PASS"
        }))
        .unwrap();
        assert_eq!(round.strategy, crate::types::kinds::Strategy::Single);
    }
    use super::*;

    #[test]
    fn feature_names() {
        for ok in ["add-a-dark-mode-toggle", "issue-12", "ajouter-un-thème"] {
            assert!(is_feature_name(ok), "{ok}");
        }
        for no in ["../../..", "a/b", "", "-x", "A", "a.b", "a b"] {
            assert!(!is_feature_name(no), "{no}");
        }
        assert!(!is_sha("--output=/tmp/x"));
        assert!(!is_sha("HEAD~1"));
        assert!(is_sha("0123abc"));
    }

    /// The cheaper commit check keeps its meaning: a sha that is no commit is refused inside a
    /// repository and left alone outside one (there is nothing to check it against).
    #[test]
    fn commits_are_checked_inside_a_repository_only() {
        let mut state = crate::state::tests::blank(super::super::Mode::Auto);
        state.base_commit = Some("0123456789abcdef0123456789abcdef01234567".into());
        let outside = tempfile::tempdir().unwrap();
        assert_eq!(commits(&state, &Git::new(outside.path())), Ok(()));
        let repo = tempfile::tempdir().unwrap();
        let git = Git::new(repo.path());
        git.run(&["init", "-q"]).unwrap();
        let err = commits(&state, &git).unwrap_err();
        assert_eq!(err.key, "base_commit");
        assert!(
            err.problem.contains("not a commit of this repository"),
            "{}",
            err.problem
        );
        // No sha, no question to git.
        state.base_commit = None;
        assert_eq!(commits(&state, &git), Ok(()));
    }
}
