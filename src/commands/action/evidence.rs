//! After an evaluate round in Action mode: the round's `report.html` and its screenshots go up
//! as unzipped artifacts (one file each, shown by GitHub in the browser), and where they went is
//! recorded in the state (`evidence:<round>`), so the PR body and the status comment can link
//! them. The checkpoint keeps the evidence as before; these uploads are for people.
//!
//! Only files whose bytes still match the round's manifest are uploaded: what a reviewer opens
//! from the PR is what the manifest in its body vouches for.

use std::path::Path;

use super::env::ActionEnv;
use super::say;
use crate::error::Result;
use crate::evidence::manifest::hash_file;
use crate::report::html::{self, REPORT_FILE};
use crate::state::State;
use crate::state::job::{Effect, EvidenceLinks, UploadedFile};
use crate::store::Store;
use crate::store::artifact::ArtifactStore;
use crate::types::ids::{IssueNumber, RunId};

/// Characters GitHub refuses in an artifact name (and `/`, `\`).
const REFUSED: &[char] = &['"', ':', '<', '>', '|', '*', '?', '\r', '\n', '\\', '/'];

/// `spec-orchestrate-evidence-<issue>-r<round>-a<attempt>-<file>`: unique in the run (a re-run
/// attempt uploads under its own names), recognisably not a checkpoint, and ending with the
/// file's own name so that a download keeps its extension.
pub fn artifact_name(issue: IssueNumber, round: u32, attempt: u32, file: &str) -> String {
    let file: String = file
        .chars()
        .map(|c| if REFUSED.contains(&c) { '-' } else { c })
        .collect();
    format!("spec-orchestrate-evidence-{issue}-r{round}-a{attempt}-{file}")
}

/// Where GitHub shows artifact `id` of run `run_id` (the `artifact-url` of upload-artifact).
pub fn browser_url(env: &ActionEnv, run_id: RunId, id: u64) -> String {
    format!(
        "{}/{}/actions/runs/{run_id}/artifacts/{id}",
        env.server_url.trim_end_matches('/'),
        env.repository
    )
}

/// Uploads the last evaluate round's report and screenshots, once per round; returns how many
/// files went up. A round whose links are already recorded (a re-run job) is left alone.
pub fn upload_last_round(
    store: &ArtifactStore,
    env: &ActionEnv,
    feature_dir: &Path,
    state: &mut State,
    issue: IssueNumber,
    retention_days: Option<u32>,
) -> Result<usize> {
    let Some(round) = state.rounds.evaluate.last().map(|r| r.round) else {
        return Ok(0);
    };
    if state.job.evidence(round).is_some() {
        return Ok(0);
    }
    let Some(result) = crate::report::pr_body::last_result(feature_dir, state) else {
        return Ok(0);
    };
    let mut links = EvidenceLinks {
        round,
        run_id: env.run_id,
        files: Default::default(),
    };
    for row in &result.manifest {
        let file = row.path.rsplit('/').next().unwrap_or(&row.path);
        let is_report = file == REPORT_FILE;
        if !is_report && !html::is_image_path(&row.path) {
            continue;
        }
        let full = feature_dir.join(&row.path);
        match hash_file(&full) {
            Ok((bytes, sha)) if bytes == row.bytes && sha == row.sha256 => {}
            _ => {
                say(format!(
                    "not uploading {}: it no longer matches the manifest",
                    row.path
                ));
                continue;
            }
        }
        let bytes = crate::fsx::read(&full)?;
        let mime = if is_report {
            "text/html"
        } else {
            match html::image_mime(&bytes) {
                Some(m) => m,
                None => continue,
            }
        };
        let name = artifact_name(issue, round, env.run_attempt, file);
        let saved = store.save_file(&name, &bytes, mime, retention_days)?;
        let Some(id) = saved.id else {
            continue;
        };
        links.files.insert(
            row.path.clone(),
            UploadedFile {
                id,
                name,
                url: browser_url(env, env.run_id, id),
            },
        );
    }
    let count = links.files.len();
    state.job.record(Effect::Evidence(links));
    Ok(count)
}

/// [`upload_last_round`] when checkpoints go to GitHub (a local checkpoint directory has no
/// artifact service). A failed upload is a warning, not a failed job: the evidence is safe in
/// the checkpoint, the body then names the files instead of linking them, and the next job
/// tries the upload again.
pub fn after_phase(
    store: &Store,
    env: &ActionEnv,
    feature_dir: &Path,
    state: &mut State,
    issue: IssueNumber,
    retention_days: Option<u32>,
) {
    let Store::Artifact(artifacts) = store else {
        return;
    };
    match upload_last_round(artifacts, env, feature_dir, state, issue, retention_days) {
        Ok(0) => {}
        Ok(n) => say(format!(
            "uploaded the evidence report and screenshots ({n} file(s)) for the pull request to link"
        )),
        Err(e) => crate::events::emit(crate::events::Event::Warning {
            message: format!(
                "the evidence could not be uploaded for viewing ({e}); it stays in the checkpoint and the next job retries"
            ),
        }),
    }
}
