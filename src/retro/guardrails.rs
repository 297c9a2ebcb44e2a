//! Guardrails on self-edits: what may be changed, and by how much.
//!
//! Only `.specs/prompts/<name>.md` is Tier 1 (changed on a branch with its own PR); everything
//! else is Tier 2 (suggested only). A path is Tier 1 only when it is spelled exactly that way,
//! relative, without `..`, in the expected case, and resolving it crosses no symlink: a Tier 2
//! file disguised as a prompt (`prompts/../pipeline.yml`, a symlink, `.SPECS/Prompts/x.md`) is
//! refused rather than edited.

use std::path::{Component, Path, PathBuf};

/// Where Tier 1 files live.
pub const PROMPTS_DIR: &str = ".specs/prompts";

/// Why an edit was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused `{target}`: {reason}")]
#[allow(missing_docs)]
pub struct Refusal {
    pub target: String,
    /// Why, in words a person can act on.
    pub reason: String,
}

fn refuse(target: &str, reason: impl Into<String>) -> Refusal {
    Refusal {
        target: target.to_string(),
        reason: reason.into(),
    }
}

/// The tier of a change target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tier {
    /// A prompt file: may be edited on its own branch.
    One(PathBuf),
    /// Anything else: only suggested.
    Two,
}

/// Normalises `target` against `repo` and checks it may be written at all.
pub fn normalise(repo: &Path, target: &str) -> Result<PathBuf, Refusal> {
    let t = target.trim();
    if t.is_empty() {
        return Err(refuse(target, "empty path"));
    }
    let p = Path::new(t);
    if p.is_absolute() {
        return Err(refuse(
            target,
            "absolute paths are not allowed; use a path relative to the repository root",
        ));
    }
    let mut rel = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(part) => rel.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(refuse(
                    target,
                    "`..` is not allowed: the path could leave the place it names",
                ));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse(target, "absolute paths are not allowed"));
            }
        }
    }
    let mut current = repo.to_path_buf();
    for c in rel.components() {
        current.push(c);
        if let Ok(meta) = std::fs::symlink_metadata(&current)
            && meta.file_type().is_symlink()
        {
            return Err(refuse(
                target,
                format!(
                    "resolving it crosses a symlink ({}); edits never follow links",
                    current.strip_prefix(repo).unwrap_or(&current).display()
                ),
            ));
        }
    }
    Ok(rel)
}

/// Classifies a target: Tier 1 only for `.specs/prompts/<name>.md` spelled exactly so.
pub fn tier(repo: &Path, target: &str) -> Result<Tier, Refusal> {
    let rel = normalise(repo, target)?;
    let s = rel.to_string_lossy().replace('\\', "/");
    let Some(name) = s.strip_prefix(&format!("{PROMPTS_DIR}/")) else {
        if s.to_lowercase().starts_with(&format!("{PROMPTS_DIR}/")) {
            return Err(refuse(
                target,
                "the prompts directory is spelled `.specs/prompts/` (case matters); a look-alike is not a prompt file",
            ));
        }
        return Ok(Tier::Two);
    };
    let stem = name.strip_suffix(".md").unwrap_or("");
    let valid = !stem.is_empty()
        && !name.contains('/')
        && stem
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if !valid {
        return Err(refuse(
            target,
            "a prompt file is `.specs/prompts/<name>.md` with a lower-case name of letters, digits, `_` and `-`",
        ));
    }
    Ok(Tier::One(rel))
}

/// Lines added and removed going from `old` to `new` (as multisets of lines).
pub fn line_delta(old: &str, new: &str) -> (usize, usize) {
    let mut pool: std::collections::HashMap<&str, i64> = std::collections::HashMap::new();
    for l in old.lines() {
        *pool.entry(l).or_default() += 1;
    }
    let mut added = 0usize;
    for l in new.lines() {
        match pool.get_mut(l) {
            Some(n) if *n > 0 => *n -= 1,
            _ => added += 1,
        }
    }
    let removed = pool.values().filter(|n| **n > 0).map(|n| *n as usize).sum();
    (added, removed)
}

/// Refuses an edit that grows the file past `line_budget` lines while removing fewer than half
/// of the lines it adds: prompts that only ever grow drown their own instructions.
pub fn check_growth(target: &str, old: &str, new: &str, line_budget: u32) -> Result<(), Refusal> {
    let lines = new.lines().count();
    let (added, removed) = line_delta(old, new);
    if lines > line_budget as usize && removed * 2 < added {
        return Err(refuse(
            target,
            format!(
                "the file would grow to {lines} lines (budget {line_budget}) while removing {removed} of the {added} lines it adds; remove at least half as many lines as are added, or raise improve.line_budget"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".specs/prompts")).unwrap();
        std::fs::write(d.path().join(".specs/pipeline.yml"), "").unwrap();
        d
    }

    #[test]
    fn prompt_files_are_tier_one_and_everything_else_tier_two() {
        let d = repo();
        assert_eq!(
            tier(d.path(), ".specs/prompts/spec_reviewer.md").unwrap(),
            Tier::One(PathBuf::from(".specs/prompts/spec_reviewer.md"))
        );
        assert_eq!(
            tier(d.path(), "./.specs/prompts/x.md").unwrap(),
            Tier::One(PathBuf::from(".specs/prompts/x.md"))
        );
        assert_eq!(tier(d.path(), ".specs/pipeline.yml").unwrap(), Tier::Two);
        assert_eq!(
            tier(d.path(), ".github/workflows/spec-orchestrate.yml").unwrap(),
            Tier::Two
        );
    }

    #[test]
    fn disguises_are_refused_with_a_reason() {
        let d = repo();
        std::os::unix::fs::symlink(
            d.path().join(".specs/pipeline.yml"),
            d.path().join(".specs/prompts/evil.md"),
        )
        .unwrap();
        std::os::unix::fs::symlink(d.path().join(".specs"), d.path().join("linked")).unwrap();
        let cases = [
            (".specs/prompts/../pipeline.yml", "`..`"),
            ("/etc/passwd", "absolute"),
            (".specs/prompts/evil.md", "symlink"),
            ("linked/prompts/x.md", "symlink"),
            (".SPECS/prompts/x.md", "case"),
            (".specs/Prompts/x.md", "case"),
            (".specs/prompts/X.md", "lower-case"),
            (".specs/prompts/x.MD", "lower-case"),
            (".specs/prompts/sub/x.md", "lower-case"),
            (".specs/prompts/run.sh", "lower-case"),
            ("", "empty"),
        ];
        for (target, why) in cases {
            let e = tier(d.path(), target).expect_err(target);
            assert!(
                e.reason.contains(why) || e.to_string().contains(why),
                "{target}: {e}"
            );
        }
    }

    #[test]
    fn growth_past_budget_needs_removals() {
        let old = "a\nb\n";
        let grown: String = (0..10).map(|i| format!("line {i}\n")).collect::<String>() + old;
        assert!(check_growth("p.md", old, &grown, 5).is_err());
        assert!(
            check_growth("p.md", old, &grown, 50).is_ok(),
            "within budget"
        );
        let rewritten: String = (0..6).map(|i| format!("new {i}\n")).collect();
        let old6: String = (0..6).map(|i| format!("old {i}\n")).collect();
        assert!(
            check_growth("p.md", &old6, &rewritten, 3).is_ok(),
            "removes as much as it adds"
        );
        assert_eq!(line_delta("a\na\nb\n", "a\nc\n"), (1, 2));
    }
}
