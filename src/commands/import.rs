//! `import`: read a spec-kit, Kiro or OpenSpec spec directory and write the four documents of a
//! feature (`docs/import.md`); `export`: write a feature's reviewed documents back in spec-kit's
//! or Kiro's shape.

use std::path::{Path, PathBuf};

use super::run::absolute;
use super::{Exit, repo_root};
use crate::error::{Error, Result};
use crate::spec::cases::Method;
use crate::spec::import::{self, Format, render};
use crate::util;

/// Arguments of `import`.
#[derive(Debug, Clone, clap::Args)]
pub struct ImportRequest {
    /// The spec directory: `specs/NNN-name/`, `.kiro/specs/<name>/` or `openspec/changes/<id>/`.
    pub path: PathBuf,
    /// Its format (default: detected from spec.md, requirements.md or proposal.md).
    #[arg(long, value_enum)]
    pub from: Option<Format>,
    /// Feature directory name under .specs/ (default: the spec directory's name).
    #[arg(long)]
    pub feature: Option<String>,
    /// How the imported acceptance cases are verified (the original formats do not say).
    #[arg(long, value_enum, default_value = "playwright")]
    pub verify: Method,
    /// Print what would be written and what could not be mapped; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Repository (default: the current directory).
    #[arg(long)]
    pub repo: Option<PathBuf>,
}

/// `import`.
pub fn import(req: &ImportRequest) -> Result<Exit> {
    let repo = repo_root(req.repo.as_deref())?;
    let path = absolute(&req.path);
    let spec = import::read(&path, &repo, req.from)?;
    let feature = match &req.feature {
        Some(f) => checked_feature(f)?,
        None => default_feature(&path)?,
    };
    let target = crate::spec::spec_rel(&feature);
    let docs = render::documents(&spec, req.verify.as_str());
    if req.dry_run {
        crate::output::print(&render::dry_run(&spec, &target, &docs, req.verify.as_str()))?;
        return Ok(Exit::Ok);
    }
    let dir = write(&repo, &feature, &spec, &docs)?;
    crate::output::print(&format!(
        "Imported the {} spec `{}` into {}/ ({} requirements, {} acceptance cases, {} tasks, {} passages quoted).\nNext: `spec-orchestrate run --issue ISSUE.md` with a line `spec: {}` in the issue, or review it with `spec-orchestrate review {}/requirement.md`.\n",
        spec.format,
        spec.source,
        dir.display(),
        spec.reqs.len(),
        spec.cases.len(),
        spec.tasks.len(),
        spec.quotes.len(),
        spec.source,
        target,
    ))?;
    Ok(Exit::Ok)
}

/// Writes the four documents and `imported.json` into `.specs/<feature>/` (returned), refusing
/// to replace documents that are already there.
pub fn write(
    repo: &Path,
    feature: &str,
    spec: &import::Imported,
    docs: &[(&'static str, String)],
) -> Result<PathBuf> {
    let dir = crate::spec::spec_dir(repo, feature);
    for (name, _) in docs {
        let p = dir.join(name);
        if p.exists() {
            return Err(import::bad(
                p,
                "already exists; the importer does not overwrite a feature's documents",
                format!(
                    "import under another name with --feature NAME, or remove .specs/{feature}/ first"
                ),
            ));
        }
    }
    for (name, text) in docs {
        util::write_text(&dir.join(name), text)?;
    }
    let map = render::map(spec);
    let json = serde_json::to_string_pretty(&map).map_err(|e| Error::Input {
        path: dir.join(import::MAP_FILE),
        problem: format!("could not be serialised: {e}"),
    })?;
    util::write_text(&dir.join(import::MAP_FILE), &format!("{json}\n"))?;
    Ok(dir)
}

/// The feature's default name: the spec directory's own (`012-tags`, `add-list-command`).
pub fn default_feature(path: &Path) -> Result<String> {
    let name = path
        .file_name()
        .map(|n| util::kebab(&n.to_string_lossy()))
        .unwrap_or_default();
    if name.is_empty() {
        return Err(Error::usage(format!(
            "{}: cannot name a feature after this directory",
            path.display()
        ))
        .with_help("name it with --feature NAME"));
    }
    Ok(name)
}

fn checked_feature(name: &str) -> Result<String> {
    if util::kebab(name) != name {
        return Err(Error::usage(format!(
            "--feature {name}: a feature name is lower-case words joined by `-` (as `{}`)",
            util::kebab(name)
        ))
        .with_help("pass a name such as `add-tags`"));
    }
    Ok(name.to_string())
}

/// The spec directory an issue points at: its first line `spec: <dir>` (`spec: specs/012-tags/`).
pub fn spec_line(body: &str) -> Option<String> {
    body.lines().find_map(|l| {
        let t = l.trim();
        let (key, value) = t.split_once(':')?;
        let value = value.trim().trim_matches('`');
        (key.trim().eq_ignore_ascii_case("spec") && !value.is_empty() && !value.contains(' '))
            .then(|| value.to_string())
    })
}

/// A run whose issue says `spec: <dir>` starts from that spec: it is imported into the run's
/// feature directory (once; a resumed run keeps what is there). Returns what was imported, for
/// the run's progress. The directory must lie inside the repository.
pub fn from_issue(repo: &Path, feature: &str, body: &str) -> Result<Option<String>> {
    let Some(rel) = spec_line(body) else {
        return Ok(None);
    };
    let dir = crate::spec::spec_dir(repo, feature);
    if dir.join(import::MAP_FILE).exists() || dir.join("requirement.md").exists() {
        return Ok(None);
    }
    let path = crate::process::paths::resolve_inside(repo, rel.trim_end_matches('/')).map_err(|e| {
        import::bad(
            repo.join(&rel),
            format!("the issue's line `spec: {rel}` names no spec directory of this repository ({e})"),
            "write the line as `spec: <directory inside the repository>`, e.g. `spec: specs/012-tags/`",
        )
    })?;
    let spec = import::read(&path, repo, None)?;
    let docs = render::documents(&spec, Method::Playwright.as_str());
    write(repo, feature, &spec, &docs)?;
    Ok(Some(format!(
        "started from the {} spec `{}` (issue line `spec: {rel}`): {} requirements, {} acceptance cases, {} tasks imported into .specs/{feature}/",
        spec.format,
        spec.source,
        spec.reqs.len(),
        spec.cases.len(),
        spec.tasks.len()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_line_names_the_spec_directory() {
        let body = "Please review our spec.\n\nspec: specs/012-tags/\n";
        assert_eq!(spec_line(body).as_deref(), Some("specs/012-tags/"));
        assert_eq!(spec_line("Spec: `kiro/x`").as_deref(), Some("kiro/x"));
        assert_eq!(spec_line("the spec: is below, see it"), None);
        assert_eq!(spec_line("no line here"), None);
    }

    /// Issue text is hostile: a `spec:` line naming a directory outside the repository is
    /// refused with the line, the reason and the fix, and nothing is written.
    #[test]
    fn a_spec_line_outside_the_repository_is_refused() {
        let repo = tempfile::tempdir().unwrap();
        for line in ["spec: ../../etc", "spec: /etc"] {
            let e = from_issue(repo.path(), "f", line).unwrap_err().to_string();
            assert!(
                e.contains("names no spec directory of this repository"),
                "{e}"
            );
            assert!(e.contains("spec: <directory inside the repository>"), "{e}");
        }
        assert!(!repo.path().join(".specs").exists());
    }
}
