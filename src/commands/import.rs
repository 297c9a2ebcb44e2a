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
#[derive(Debug, Clone)]
pub struct ImportRequest {
    /// The spec directory.
    pub path: PathBuf,
    /// Its format (detected when `None`).
    pub from: Option<Format>,
    /// The feature directory's name under `.specs/` (default: the spec directory's name).
    pub feature: Option<String>,
    /// How the imported cases are verified.
    pub verify: Method,
    /// Print what would be written; write nothing.
    pub dry_run: bool,
    /// Repository.
    pub repo: Option<PathBuf>,
}

/// What an import wrote (or would write).
#[derive(Debug, Clone)]
pub struct Written {
    /// The feature's name.
    pub feature: String,
    /// The feature directory.
    pub dir: PathBuf,
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
    let written = write(&repo, &feature, &spec, &docs)?;
    crate::output::print(&format!(
        "Imported the {} spec `{}` into {}/ ({} requirements, {} acceptance cases, {} tasks, {} passages quoted).\nNext: `spec-orchestrate run --issue ISSUE.md` with a line `spec: {}` in the issue, or review it with `spec-orchestrate review {}/requirement.md`.\n",
        spec.format,
        spec.source,
        written.dir.display(),
        spec.reqs.len(),
        spec.cases.len(),
        spec.tasks.len(),
        spec.quotes.len(),
        spec.source,
        target,
    ))?;
    Ok(Exit::Ok)
}

/// Writes the four documents and `imported.json` into `.specs/<feature>/`, refusing to replace
/// documents that are already there.
pub fn write(
    repo: &Path,
    feature: &str,
    spec: &import::Imported,
    docs: &[(&'static str, String)],
) -> Result<Written> {
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
    Ok(Written {
        feature: feature.to_string(),
        dir,
    })
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
