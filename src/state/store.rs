//! Where the state lives on disk: the writer locks, atomic saves, and loading with every check
//! (`docs/state.md`, "Rules"): a link or special file refused, the size capped, the schema
//! version read first (a newer one refused, an older one migrated), a corrupted file reported
//! with its path and the key of the problem and left untouched, and the values checked for
//! consistency before anything runs.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{LOCK_FILE, SCHEMA_VERSION, STATE_FILE, State, validate};
use crate::error::{Error, Result};
use crate::fsx::Lock;
use crate::util;

/// Exclusive access to one feature's state: holding a `StateStore` means holding the lock.
#[derive(Debug)]
pub struct StateStore {
    dir: PathBuf,
    lock: File,
    /// The lock of the whole checkout (one writer per checkout); `None` outside a repository.
    _checkout: Option<crate::git::lock::CheckoutLock>,
}

impl StateStore {
    /// Opens the state directory and takes the writer lock; a second writer gets a clear error
    /// instead of a corrupted file.
    pub fn open(dir: &Path) -> Result<StateStore> {
        let lock_path = dir.join(LOCK_FILE);
        // The whole checkout first, before anything is created in it: another feature's run
        // must not share the work tree (`git::lock`).
        let checkout = lock_checkout(dir).map_err(|e| match e {
            CheckoutRefusal::SameFeature => feature_locked(&lock_path),
            CheckoutRefusal::Other(e) => e,
        })?;
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let Lock::Taken(lock) = crate::fsx::try_lock(&lock_path)? else {
            return Err(feature_locked(&lock_path));
        };
        // Under the lock no save of this feature is in progress, so a temp file of ours left
        // here is from a save that was killed: it goes before anything can commit it.
        for stale in crate::fsx::sweep_temp(dir) {
            crate::events::emit(crate::events::Event::Warning {
                message: format!(
                    "removed {}, the temp file of a save that was killed half-way",
                    stale.display()
                ),
            });
        }
        Ok(StateStore {
            dir: dir.to_path_buf(),
            lock,
            _checkout: checkout,
        })
    }

    /// Path of the state file.
    pub fn path(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    /// The feature directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Loads the state, if one was saved.
    pub fn load(&self) -> Result<Option<State>> {
        let path = self.path();
        if std::fs::symlink_metadata(&path).is_err() {
            return Ok(None);
        }
        let state = load_file(&path)?;
        // The shas must name commits of this checkout before a phase hands them to git (checked
        // only inside a repository; `commits` asks git no more than it must).
        let git = crate::git::Git::new(&self.dir);
        validate::commits(&state, &git).map_err(|i| inconsistent(&path, &i))?;
        Ok(Some(state))
    }

    /// Saves atomically, stamping `ts_updated`.
    ///
    /// The file is compact JSON: every phase of every run saves it, often several times, and a
    /// long loop makes it large (1,000 review rounds are about half a megabyte even compact);
    /// indentation would add a third to what is written, fsynced and parsed on every save.
    /// People read the state through `status --json`, which prints it pretty. Older pretty files
    /// load unchanged, since whitespace means nothing to JSON.
    pub fn save(&self, state: &mut State) -> Result<()> {
        state.ts_updated = util::now();
        let mut bytes = serde_json::to_vec(state).map_err(|e| Error::State {
            path: self.path(),
            problem: format!("cannot be serialised: {e}"),
            help: "this is a bug; please report it".into(),
        })?;
        bytes.push(b'\n');
        crate::fsx::write_atomic(&self.path(), &bytes)
    }
}

/// The lock is released by `unlock`, not left to the close of the file: an OS lock belongs to
/// the open file, which a child forked by another thread shares from its fork until its `exec`
/// (longer when it runs `pre_exec` steps, as every agent and git process here does, or when the
/// machine is loaded). Closing only our descriptor would leave the lock held for that while, and
/// the next `open` of this feature in the process (the next command, the next test) refused as
/// "another process". `unlock` releases it for every copy at once.
impl Drop for StateStore {
    fn drop(&mut self) {
        let _ = self.lock.unlock();
    }
}

/// The refusal when another process works on the same feature.
fn feature_locked(lock_path: &Path) -> Error {
    Error::State {
        path: lock_path.to_path_buf(),
        problem: "another spec-orchestrate process is working on this feature (the state lock is held)".into(),
        help: "wait for it to finish, or stop it; the lock is released automatically when that process exits".into(),
    }
}

/// Why the checkout lock was not taken.
enum CheckoutRefusal {
    /// Held by a run of this very feature: reported as the feature's own lock.
    SameFeature,
    /// Held by another feature, or an I/O error.
    Other(Error),
}

/// Takes the checkout lock for the feature directory `dir` (which may not exist yet); `None`
/// outside a git repository.
fn lock_checkout(dir: &Path) -> Result<Option<crate::git::lock::CheckoutLock>, CheckoutRefusal> {
    use crate::git::lock::CheckoutLock;
    let Some(base) = dir.ancestors().find(|p| p.is_dir()) else {
        return Ok(None);
    };
    let Ok(common) = crate::git::Git::new(base).common_dir() else {
        return Ok(None);
    };
    let feature = dir.file_name().unwrap_or_default().to_string_lossy();
    match CheckoutLock::acquire(&common, &feature) {
        Ok(lock) => Ok(Some(lock)),
        Err(_) if CheckoutLock::holder(&common).as_deref() == Some(&*feature) => {
            Err(CheckoutRefusal::SameFeature)
        }
        Err(e) => Err(CheckoutRefusal::Other(e)),
    }
}

/// Reads and checks a state file without taking the lock (for `status` and `verify`): it must
/// parse, and its values must be consistent ([`validate::shape`]).
pub fn load_file(path: &Path) -> Result<State> {
    let state = parse_file(path)?;
    validate::shape(&state).map_err(|i| inconsistent(path, &i))?;
    Ok(state)
}

/// The error for a state whose `key` cannot be right.
fn inconsistent(path: &Path, i: &validate::Inconsistency) -> Error {
    Error::State {
        path: path.to_path_buf(),
        problem: format!("is inconsistent: `{}` {}", i.key, i.problem),
        help: format!(
            "nothing was run. Correct `{}` (an agent or an edit may have changed it), restore the file from the run's checkpoint, or delete the feature directory to start the run over",
            i.key
        ),
    }
}

/// Reads a state file and parses it (migrating an older schema), without checking its values.
fn parse_file(path: &Path) -> Result<State> {
    refuse_link(path)?;
    let bytes = crate::fsx::read_max(path, crate::fsx::Limit::State)?;
    let corrupted = |problem: String| {
        Error::State {
        path: path.to_path_buf(),
        problem,
        help: "restore it from the checkpoint or version control, or delete the feature directory to start over; it was left untouched".into(),
    }
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        corrupted(format!(
            "is corrupted: not text (binary content at byte {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    // The common case in one pass: a document of this build's version parses straight into the
    // state. Anything else (older, newer, broken) takes the careful path below, which reads the
    // version first and explains what is wrong; a newer document parsed here is only dropped.
    if let Ok(state) = serde_json::from_str::<State>(&text)
        && state.schema_version == SCHEMA_VERSION
    {
        return Ok(state);
    }
    // A cheap first pass reads only the version (everything else is skipped, not built), so
    // that a newer document is refused before its fields are interpreted.
    #[derive(Deserialize)]
    struct VersionOnly {
        schema_version: Option<serde_json::Value>,
    }
    let head: VersionOnly = serde_json::from_str(&text)
        .map_err(|e| corrupted(format!("is corrupted: not valid JSON ({e})")))?;
    let version = head
        .schema_version
        .as_ref()
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| {
            corrupted("is corrupted: `schema_version` is missing or not a number".into())
        })?;
    if version > u64::from(SCHEMA_VERSION) {
        return Err(Error::State {
            path: path.to_path_buf(),
            problem: format!(
                "was written by a newer spec-orchestrate (schema_version {version}, this build understands up to {SCHEMA_VERSION})"
            ),
            help: "upgrade spec-orchestrate to continue this run".into(),
        });
    }
    if version < u64::from(SCHEMA_VERSION) {
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| corrupted(format!("is corrupted: not valid JSON ({e})")))?;
        return serde_path_to_error::deserialize(migrate(value, version, path)?)
            .map_err(|e| corrupted(format!("is corrupted at `{}`: {}", e.path(), e.inner())));
    }
    // The current version deserialises straight from the text: no intermediate tree, and the
    // path-tracking pass runs only to explain a failure.
    serde_json::from_str(&text).or_else(|_| {
        let mut de = serde_json::Deserializer::from_str(&text);
        serde_path_to_error::deserialize(&mut de)
            .map_err(|e| corrupted(format!("is corrupted at `{}`: {}", e.path(), e.inner())))
    })
}

/// A state file that is a symlink is refused with what it points to: the state is only ever
/// written as a regular file, so a link was planted or left by hand (and a dangling one must not
/// read as "no run").
fn refuse_link(path: &Path) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_symlink() {
        return Ok(());
    }
    let target = std::fs::read_link(path)
        .map(|t| t.display().to_string())
        .unwrap_or_else(|_| "?".into());
    let dangling = if path.exists() {
        ""
    } else {
        ", which does not exist (a dangling link)"
    };
    Err(Error::State {
        path: path.to_path_buf(),
        problem: format!("is a symlink to {target}{dangling}; the state is only read from a regular file"),
        help: "replace the link with the state file itself (restore it from the checkpoint or version control), or delete the feature directory to start over".into(),
    })
}

/// The file beside the state in which schema 1 runs kept their review rounds after the pull
/// request; read once, when such a state is migrated, and never written.
pub const LEGACY_REVIEW_ROUNDS: &str = "review-rounds.json";

/// Brings an older document at `path` up to [`SCHEMA_VERSION`]. From 1 to 2: the review rounds
/// of `review-rounds.json` beside it (when there is one) move into `rounds.pr_review`.
fn migrate(mut value: serde_json::Value, from: u64, path: &Path) -> Result<serde_json::Value> {
    if from < 2 {
        let rounds = legacy_review_rounds(&path.with_file_name(LEGACY_REVIEW_ROUNDS))?;
        if !rounds.is_empty()
            && let Some(all) = value
                .get_mut("rounds")
                .and_then(serde_json::Value::as_object_mut)
        {
            all.insert("pr_review".into(), serde_json::Value::Array(rounds));
        }
    }
    value["schema_version"] = serde_json::Value::from(SCHEMA_VERSION);
    Ok(value)
}

/// The rounds of a schema 1 `review-rounds.json` (none when there is no such file). The file
/// sits where agents write: it is read bounded, each round checked against the record's type,
/// and a file that does not parse is an error naming it, never an empty history.
fn legacy_review_rounds(path: &Path) -> Result<Vec<serde_json::Value>> {
    #[derive(Deserialize)]
    struct Legacy {
        rounds: Vec<super::pr_review::PrReviewRound>,
    }
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(Vec::new());
    }
    refuse_link(path)?;
    let text = util::read_to_string_max(path, crate::fsx::Limit::Record)?;
    let legacy: Legacy = serde_json::from_str(&text).map_err(|e| Error::State {
        path: path.to_path_buf(),
        problem: format!("is not a review-round record: {e}"),
        help: format!(
            "restore {LEGACY_REVIEW_ROUNDS} from the job's checkpoint, or remove it to forget the review rounds"
        ),
    })?;
    Ok(legacy
        .rounds
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .collect())
}

/// Finds the feature directories under `.specs/` that hold a state file.
pub fn features(repo: &Path) -> Vec<(String, PathBuf)> {
    let root = repo.join(".specs");
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&root) {
        for e in entries.flatten() {
            let p = e.path();
            if std::fs::symlink_metadata(p.join(STATE_FILE)).is_ok() {
                out.push((e.file_name().to_string_lossy().into_owned(), p));
            }
        }
    }
    out.sort();
    out
}

/// Resolves which feature a command means: the one named, or the only one there is.
pub fn resolve_feature(repo: &Path, feature: Option<&str>) -> Result<PathBuf> {
    if let Some(f) = feature {
        let dir = repo.join(".specs").join(f);
        refuse_link(&dir.join(STATE_FILE))?;
        if !dir.join(STATE_FILE).is_file() {
            return Err(Error::usage(format!(
                "no run found for feature `{f}` ({} does not exist); `spec-orchestrate status` lists the runs",
                dir.join(STATE_FILE).display()
            )));
        }
        return Ok(dir);
    }
    let all = features(repo);
    match all.len() {
        0 => Err(Error::usage(format!(
            "no run found under {}; start one with `spec-orchestrate run --issue ISSUE.md`",
            repo.join(".specs").display()
        ))),
        1 => {
            refuse_link(&all[0].1.join(STATE_FILE))?;
            Ok(all[0].1.clone())
        }
        _ => Err(Error::usage(format!(
            "several runs exist ({}); choose one with --feature",
            all.iter()
                .map(|(f, _)| f.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{AgentFailure, Arbitration, Mode};
    use crate::types::kinds::{BlockerCategory, CallRole, Decision};
    use crate::types::{Phase, Role, Signal};

    /// A store dropped while another thread's child sits between its fork and its `exec` (here
    /// held there for a second by a `pre_exec` sleep, as a loaded machine holds one) is released
    /// at once: the child's copy of the lock file no longer keeps the lock. Before, the next open
    /// of the same feature in the process was refused as "another process" until the child
    /// exec'd, which is how `commands::action::answer`'s tests failed under load.
    #[test]
    fn a_dropped_store_is_released_even_while_a_forked_child_holds_its_file() {
        use std::os::unix::process::CommandExt as _;
        let dir = tempfile::tempdir().unwrap();
        let feature = dir.path().join(".specs/f");
        let store = StateStore::open(&feature).unwrap();
        // `spawn` returns once the child exec'd, so the child is forked from another thread, as
        // the other tests' git and agent processes are.
        let forker = std::thread::spawn(|| {
            let mut cmd = std::process::Command::new("true");
            // SAFETY: the closure only sleeps (nanosleep is async-signal-safe), allocating nothing.
            unsafe {
                cmd.pre_exec(|| {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                    Ok(())
                });
            }
            cmd.spawn().unwrap().wait().unwrap()
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(store);
        let again = StateStore::open(&feature);
        assert!(
            !forker.is_finished(),
            "the child exec'd before the reopen; nothing was tested"
        );
        forker.join().unwrap();
        assert!(again.is_ok(), "{:?}", again.err());
    }

    /// A state file far beyond any run's (here a sparse 1 GiB one) is refused at its size,
    /// naming the file, without being read.
    #[test]
    fn a_huge_state_file_is_refused_at_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STATE_FILE);
        std::fs::File::create(&path)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let err = load_file(&path).unwrap_err();
        assert!(
            matches!(&err, Error::TooLarge { path: p, cap, .. } if *p == path && *cap == crate::fsx::Limit::State.bytes()),
            "{err}"
        );
    }

    /// The role map is written in role-name order (as when its keys were strings), and a key
    /// that is not a role is refused.
    #[test]
    fn roles_are_written_by_name_and_unknown_roles_refused() {
        let mut state = crate::state::tests::blank(Mode::Auto);
        for (i, r) in Role::ALL.into_iter().enumerate() {
            state.roles.insert(r, format!("agent{i}").into());
        }
        // Straight to text: a `serde_json::Value` would sort the keys itself.
        let json = serde_json::to_string(&state).unwrap();
        let names: Vec<String> = Role::ALL.iter().map(|r| format!("\"{r}\":")).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        let positions: Vec<usize> = sorted.iter().map(|n| json.find(n).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{json}");

        let mut value = serde_json::to_value(&state).unwrap();
        value["roles"]["impl_rust"] = "claude".into();
        let err = serde_json::from_value::<State>(value)
            .unwrap_err()
            .to_string();
        assert!(err.contains("impl_rust"), "{err}");
    }

    /// A word outside a typed field's set is refused by the loader with the file and the key,
    /// never replaced by a default.
    #[test]
    fn an_unknown_word_in_a_state_file_names_the_file_and_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STATE_FILE);
        let mut state = crate::state::tests::blank(Mode::Manual);
        state.arbitrations.push(Arbitration {
            phase: Phase::SpecReview,
            signal: Signal::Manual,
            decision: Decision::Draft,
            from: None,
            to: None,
            note: String::new(),
            ts: util::now(),
            after_round: 0,
        });
        state.agent_failures.push(AgentFailure {
            phase: Phase::SpecReview,
            role: CallRole::Panel(crate::types::kinds::Persona::Operator),
            agent: "codex".into(),
            category: BlockerCategory::Timeout,
            detail: "d".into(),
            paths: Vec::new(),
            task: None,
            ts: util::now(),
        });
        let good = serde_json::to_value(&state).unwrap();
        std::fs::write(&path, serde_json::to_vec(&good).unwrap()).unwrap();
        assert_eq!(load_file(&path).unwrap(), state);

        for (pointer, word, key) in [
            ("/arbitrations/0/signal", "S9", "arbitrations[0].signal"),
            (
                "/arbitrations/0/decision",
                "shrug",
                "arbitrations[0].decision",
            ),
            (
                "/agent_failures/0/category",
                "flaky",
                "agent_failures[0].category",
            ),
            (
                "/agent_failures/0/role",
                "panel:pirate",
                "agent_failures[0].role",
            ),
        ] {
            let mut bad = good.clone();
            *bad.pointer_mut(pointer).unwrap() = word.into();
            std::fs::write(&path, serde_json::to_vec(&bad).unwrap()).unwrap();
            let message = load_file(&path).expect_err(word).to_string();
            assert!(message.contains(&path.display().to_string()), "{message}");
            assert!(message.contains(&format!("`{key}`")), "{message}");
            assert!(
                message.contains(word.trim_start_matches("panel:")),
                "{message}"
            );
        }
    }
}
