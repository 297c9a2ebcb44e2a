//! Path safety: a path named by a spec or a case must stay inside the repository and must not
//! pass through a symlink, or a spec could make the harness read (and publish) any file.
//!
//! Used by the evidence harness and by the agents' text roles, so it sits below both.

use std::path::{Component, Path, PathBuf};

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnsafePath(pub String);

/// Resolves `rel` under `root`, refusing absolute paths, `..`, and symlinks on the way.
pub fn resolve_inside(root: &Path, rel: &str) -> Result<PathBuf, UnsafePath> {
    let p = Path::new(rel.trim());
    if rel.trim().is_empty() {
        return Err(UnsafePath("the path is empty".into()));
    }
    if p.is_absolute() {
        return Err(UnsafePath(format!(
            "`{rel}` is absolute; use a path relative to the repository"
        )));
    }
    let mut current = root.to_path_buf();
    for comp in p.components() {
        match comp {
            Component::Normal(c) => {
                current.push(c);
                if let Ok(meta) = std::fs::symlink_metadata(&current)
                    && meta.file_type().is_symlink()
                {
                    return Err(UnsafePath(format!(
                        "`{rel}` passes through a symlink ({})",
                        current.strip_prefix(root).unwrap_or(&current).display()
                    )));
                }
            }
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(UnsafePath(format!(
                    "`{rel}` contains `..` and could leave the repository"
                )));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(UnsafePath(format!("`{rel}` is absolute")));
            }
        }
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_escapes_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/f.txt"), "x").unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("link")).unwrap();
        assert!(resolve_inside(dir.path(), "a/f.txt").is_ok());
        assert!(resolve_inside(dir.path(), "./a/f.txt").is_ok());
        assert!(resolve_inside(dir.path(), "../x").is_err());
        assert!(resolve_inside(dir.path(), "a/../../x").is_err());
        assert!(resolve_inside(dir.path(), "/etc/passwd").is_err());
        let e = resolve_inside(dir.path(), "link/passwd").unwrap_err();
        assert!(e.0.contains("symlink"), "{e}");
    }
}
