//! `init`: write a starting configuration and the GitHub workflow, never overwriting.

use std::path::Path;

use crate::error::Result;
use crate::util;

use super::{Exit, repo_root};

/// The configuration written by `init`: every default spelled out, so that it documents itself.
pub const CONFIG_TEMPLATE: &str = include_str!("../../examples/pipeline.yml");
/// The workflow written by `init`.
pub const WORKFLOW_TEMPLATE: &str = include_str!("../../examples/workflow.yml");

/// Writes the files that are absent and reports each.
pub fn init(repo: Option<&Path>) -> Result<Exit> {
    let repo = repo_root(repo)?;
    for (rel, text) in [
        (crate::config::CONFIG_PATH, CONFIG_TEMPLATE),
        (".github/workflows/spec-orchestrate.yml", WORKFLOW_TEMPLATE),
    ] {
        let path = repo.join(rel);
        if path.exists() {
            crate::events::emit(crate::events::Event::Note {
                message: format!("kept     {rel} (exists; init never overwrites)"),
            });
            continue;
        }
        util::write_text(&path, text)?;
        crate::events::emit(crate::events::Event::Note {
            message: format!("wrote    {rel}"),
        });
    }
    Ok(Exit::Ok)
}
