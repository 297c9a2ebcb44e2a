//! `export`: a feature's reviewed documents written back in spec-kit's or Kiro's shape
//! (`docs/import.md`), so a team can keep its own tool after the review.

use std::path::PathBuf;

use super::run::absolute;
use super::{Exit, repo_root};
use crate::error::Result;
use crate::spec::SpecDocs;
use crate::spec::import::{self, Format};
use crate::util;

/// Arguments of `export`.
#[derive(Debug, Clone, clap::Args)]
pub struct ExportRequest {
    /// The format to write.
    #[arg(long, value_parser = to_format())]
    pub to: Format,
    /// Feature directory name under .specs/ (default: the only run).
    #[arg(long)]
    pub feature: Option<String>,
    /// Directory to write into (its files must not exist yet).
    #[arg(long)]
    pub out: PathBuf,
    /// Repository (default: the current directory).
    #[arg(long)]
    pub repo: Option<PathBuf>,
}

/// The formats `export` writes: those `import` reads but OpenSpec.
fn to_format() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::{ValueEnum as _, builder::TypedValueParser as _};
    clap::builder::PossibleValuesParser::new(["spec-kit", "kiro"])
        .map(|name| Format::from_str(&name, false).unwrap_or(Format::SpecKit))
}

/// `export`.
pub fn export(req: &ExportRequest) -> Result<Exit> {
    let repo = repo_root(req.repo.as_deref())?;
    let dir = match &req.feature {
        Some(f) => crate::spec::spec_dir(&repo, f),
        None => super::feature_dir(&repo, None)?,
    };
    let docs = SpecDocs::read(&dir);
    if let Some(name) = docs.missing.first() {
        return Err(import::bad(
            dir.join(name),
            "is missing or empty: there is no spec to export",
            "import or write the spec first, or name the feature with --feature NAME",
        ));
    }
    let files = crate::spec::export::export(&docs, req.to);
    let out = absolute(&req.out);
    for (name, _) in &files {
        let p = out.join(name);
        if p.exists() {
            return Err(import::bad(
                p,
                "already exists; export never overwrites a file (an original spec stays as it is)",
                "export into a new or empty directory with --out DIR",
            ));
        }
    }
    for (name, text) in &files {
        util::write_text(&out.join(name), text)?;
    }
    crate::output::print(&format!(
        "Exported {} as {} into {}: {}\n",
        dir.display(),
        req.to,
        out.display(),
        files
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ))?;
    Ok(Exit::Ok)
}
