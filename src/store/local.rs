//! The local checkpoint store: `<root>/<run id>/<name>.zip`. Used by `spec-orchestrate action`
//! when `SPEC_ORCHESTRATE_CHECKPOINT_DIR` is set (self-hosted runners with a shared disk, or
//! replaying a chain locally), with exactly the naming and selection rules of the artifact store.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

use super::{Found, Saved, pick_latest, pick_legs};

/// A checkpoint directory.
#[derive(Debug, Clone)]
pub struct LocalStore {
    root: PathBuf,
}

impl LocalStore {
    /// A store rooted at `root` (created on first save).
    pub fn new(root: &Path) -> LocalStore {
        LocalStore {
            root: root.to_path_buf(),
        }
    }

    /// Writes `<root>/<run>/<name>.zip` atomically.
    pub fn save(&self, run_id: u64, name: &str, zip: &[u8]) -> Result<Saved> {
        crate::fsx::write_atomic(&self.path(run_id, name), zip)?;
        Ok(Saved {
            name: name.to_string(),
            id: None,
            size: zip.len() as u64,
            digest: format!("sha256:{}", hex::encode(Sha256::digest(zip))),
        })
    }

    /// The newest checkpoint of `issue` saved by `run_id`.
    pub fn load_latest(&self, run_id: u64, issue: u64) -> Result<Option<Found>> {
        let names = self.names(run_id);
        let Some(name) = pick_latest(issue, names.iter().map(String::as_str)) else {
            return Ok(None);
        };
        self.read(run_id, name).map(Some)
    }

    /// The newest leg result of each task of `issue` saved by `run_id`.
    pub fn load_legs(&self, run_id: u64, issue: u64) -> Result<Vec<(String, Found)>> {
        let names = self.names(run_id);
        pick_legs(issue, names.iter().map(String::as_str))
            .into_iter()
            .map(|(task, name)| Ok((task, self.read(run_id, name)?)))
            .collect()
    }

    /// The names saved under `run_id` (none when the run saved nothing).
    fn names(&self, run_id: u64) -> Vec<String> {
        let dir = self.root.join(run_id.to_string());
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".zip"))
                    .map(str::to_string)
            })
            .collect()
    }

    fn path(&self, run_id: u64, name: &str) -> PathBuf {
        self.root
            .join(run_id.to_string())
            .join(format!("{name}.zip"))
    }

    /// The zip saved as `name` by `run_id`.
    fn read(&self, run_id: u64, name: &str) -> Result<Found> {
        let path = self.path(run_id, name);
        let zip = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        Ok(Found {
            name: name.to_string(),
            zip,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_and_loads_the_highest_attempt_of_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let s = LocalStore::new(dir.path());
        s.save(7, "spec-orchestrate-42-implement-a1", b"one")
            .unwrap();
        let saved = s
            .save(7, "spec-orchestrate-42-implement-a2", b"two")
            .unwrap();
        assert_eq!(saved.size, 3);
        assert!(saved.digest.starts_with("sha256:"));
        s.save(8, "spec-orchestrate-42-evaluate-a1", b"later")
            .unwrap();
        let found = s.load_latest(7, 42).unwrap().unwrap();
        assert_eq!(found.name, "spec-orchestrate-42-implement-a2");
        assert_eq!(found.zip, b"two");
        assert!(s.load_latest(7, 43).unwrap().is_none());
        assert!(s.load_latest(9, 42).unwrap().is_none());
    }
}
