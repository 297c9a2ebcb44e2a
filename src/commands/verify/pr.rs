//! `verify --pr <N>` / `verify --run <id>`: check, from a reviewer's laptop, that the evidence
//! stored on GitHub is exactly what the pull request's manifest says.
//!
//! With `--pr`, the expected rows are the manifest block printed in the PR body — the record the
//! reviewer reads — and the run is the one its evidence links point at (or `--run`). With only
//! `--run`, the expected rows are the manifest the run recorded in its checkpoint
//! (`evaluate-<round>.json`). The files are then downloaded: the unzipped artifacts the PR links
//! (report, screenshots) and the run's checkpoint, which carries every evidence file. Each file
//! is reported `OK`, `CHANGED` (size or hash differs, in either copy, or a file the manifest does
//! not list) or `MISSING`; the exit code is 0 when all are OK and 1 otherwise, like `verify`.
//!
//! When the body's manifest was cut to fit GitHub's limit, its first row is the report's hash;
//! a report that matches it vouches, through its own manifest block, for the rows left out.
//!
//! `GITHUB_TOKEN` (or `GH_TOKEN`) authorises the downloads; `GITHUB_API_URL` points at GitHub
//! Enterprise; the repository is `--repository`, else `GITHUB_REPOSITORY`, else the `origin`
//! remote of the current directory.

use std::collections::BTreeMap;
use std::io::Read as _;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::evidence::{EvaluateResult, ManifestRow};
use crate::forge::github::answer::net_error;
use crate::net::Http;
use crate::report::html::{self, REPORT_FILE};
use crate::report::links;
use crate::secrets::Secret;
use crate::store::artifact::RunArtifacts;

use super::super::Exit;

/// What to check.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RemoteRequest {
    /// Check the evidence of this pull request against the manifest in its body.
    #[arg(long)]
    pub pr: Option<u64>,
    /// The workflow run holding the evidence (default: the run the PR links).
    #[arg(long)]
    pub run: Option<u64>,
    /// `owner/name` (default: GITHUB_REPOSITORY, else the `origin` remote).
    #[arg(long)]
    pub repository: Option<String>,
}

/// Where GitHub is and who asks.
struct Rest {
    http: Http,
    api: String,
    repo: String,
    token: Secret,
}

impl Rest {
    /// The run artifacts this token can read; what an error says points at the token variables.
    fn reader(&self) -> RunArtifacts<'_> {
        RunArtifacts {
            http: &self.http,
            api_url: &self.api,
            repository: &self.repo,
            token: &self.token,
            refused: " — GITHUB_TOKEN / GH_TOKEN was refused",
            forbidden: " — the token needs read access to the repository's pull requests and actions",
        }
    }
}

fn env_token() -> Option<Secret> {
    ["GITHUB_TOKEN", "GH_TOKEN"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find_map(|v| Secret::new(v.trim().to_string()))
}

fn repository(req: &RemoteRequest) -> Result<String> {
    if let Some(r) = req
        .repository
        .clone()
        .or_else(|| std::env::var("GITHUB_REPOSITORY").ok())
    {
        return Ok(r);
    }
    crate::git::Git::new(std::path::Path::new("."))
        .run(&["remote", "get-url", "origin"])
        .ok()
        .and_then(|u| crate::forge::github::repo_from_remote(&u))
        .ok_or_else(|| {
            Error::usage("which repository? none was given and `origin` is not a GitHub remote")
                .with_help("pass --repository owner/name, or set GITHUB_REPOSITORY")
        })
}

/// `(run, artifact id)` of every artifact link in a body.
fn linked_runs(body: &str) -> Vec<u64> {
    let mut runs = Vec::new();
    for (i, _) in body.match_indices("/actions/runs/") {
        let rest = &body[i + "/actions/runs/".len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if rest[digits.len()..].starts_with("/artifacts/")
            && let Ok(run) = digits.parse()
            && !runs.contains(&run)
        {
            runs.push(run);
        }
    }
    runs
}

/// The evidence files of run `run`: path (relative to the feature directory) → bytes, for each
/// copy (the unzipped artifacts first, then the checkpoint's), and the checkpoint's last result.
struct Downloaded {
    unzipped: BTreeMap<String, Vec<u8>>,
    checkpoint: BTreeMap<String, Vec<u8>>,
    result: Option<EvaluateResult>,
}

/// `spec-orchestrate-evidence-<issue>-r<round>-a<attempt>-<file>` → (round, attempt, file).
fn parse_evidence_name(name: &str) -> Option<(u32, u32, String)> {
    let rest = name.strip_prefix("spec-orchestrate-evidence-")?;
    let (_issue, rest) = rest.split_once("-r")?;
    let (round, rest) = rest.split_once("-a")?;
    let (attempt, file) = rest.split_once('-')?;
    Some((round.parse().ok()?, attempt.parse().ok()?, file.to_string()))
}

fn download_run(rest: &Rest, run: u64) -> Result<Downloaded> {
    let artifacts = rest.reader().list(run)?;
    let mut unzipped: BTreeMap<String, (u32, Vec<u8>)> = BTreeMap::new();
    for (id, name) in &artifacts {
        let Some((round, attempt, file)) = parse_evidence_name(name) else {
            continue;
        };
        let path = format!("evidence/{round}/{file}");
        if unzipped.get(&path).is_some_and(|(a, _)| *a > attempt) {
            continue;
        }
        let bytes = rest
            .reader()
            .download(*id, &format!("downloading {name} of run {run}"))?;
        unzipped.insert(path, (attempt, bytes));
    }
    let checkpoint_name = artifacts
        .iter()
        .filter_map(|(id, n)| crate::store::parse_artifact_name(n).map(|(_, _, a)| (a, *id, n)))
        .max();
    let mut checkpoint = BTreeMap::new();
    let mut result = None;
    if let Some((_, id, name)) = checkpoint_name {
        let zip = rest
            .reader()
            .download(id, &format!("downloading checkpoint {name} of run {run}"))?;
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).map_err(|e| {
            Error::evidence(
                name.as_str(),
                format!("the checkpoint is not a readable zip: {e}"),
            )
        })?;
        let mut results: Vec<(u32, Vec<u8>)> = Vec::new();
        for i in 0..archive.len() {
            let Ok(mut f) = archive.by_index(i) else {
                continue;
            };
            let Ok(entry) = f.name().map(|n| n.to_string()) else {
                continue;
            };
            let mut bytes = Vec::new();
            if f.read_to_end(&mut bytes).is_err() {
                continue;
            }
            // `.specs/<feature>/evidence/<round>/…` → `evidence/<round>/…`
            if let Some(i) = entry.find("/evidence/") {
                checkpoint.insert(entry[i + 1..].to_string(), bytes);
            } else if let Some(n) = entry
                .rsplit('/')
                .next()
                .and_then(|f| f.strip_prefix("evaluate-"))
                .and_then(|f| f.strip_suffix(".json"))
                .and_then(|n| n.parse().ok())
            {
                results.push((n, bytes));
            }
        }
        result = results
            .into_iter()
            .max_by_key(|(n, _)| *n)
            .and_then(|(_, b)| serde_json::from_slice(&b).ok());
    }
    Ok(Downloaded {
        unzipped: unzipped.into_iter().map(|(k, (_, b))| (k, b)).collect(),
        checkpoint,
        result,
    })
}

fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// One file's verdict line. `linked`: the PR links an uploaded copy, so it must exist.
fn judge(row: &ManifestRow, copies: &[(&str, Option<&Vec<u8>>)], linked: bool) -> (bool, String) {
    let present: Vec<(&str, &Vec<u8>)> = copies
        .iter()
        .filter_map(|(w, b)| b.map(|b| (*w, b)))
        .collect();
    if present.is_empty() {
        return (false, format!("MISSING {}", row.path));
    }
    if linked && copies.first().is_some_and(|(_, b)| b.is_none()) {
        return (
            false,
            format!(
                "MISSING {}: the pull request links it, but the uploaded artifact is gone (expired or deleted)",
                row.path
            ),
        );
    }
    for (where_, bytes) in &present {
        if bytes.len() as u64 != row.bytes {
            return (
                false,
                format!(
                    "CHANGED {}: the {where_} copy has {} bytes, the manifest says {}",
                    row.path,
                    bytes.len(),
                    row.bytes
                ),
            );
        }
        if digest(bytes) != row.sha256 {
            return (
                false,
                format!(
                    "CHANGED {}: the {where_} copy's sha256 differs from the manifest",
                    row.path
                ),
            );
        }
    }
    let from: Vec<&str> = present.iter().map(|(w, _)| *w).collect();
    (true, format!("OK {} ({})", row.path, from.join(" + ")))
}

/// Runs `verify --pr` / `--run`.
pub fn verify_remote(req: &RemoteRequest) -> Result<Exit> {
    let token = env_token().ok_or_else(|| {
        Error::usage("verify --pr/--run needs a token to download the evidence")
            .with_help("set GITHUB_TOKEN or GH_TOKEN (e.g. `GH_TOKEN=$(gh auth token)`)")
    })?;
    let api = std::env::var("GITHUB_API_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| "https://api.github.com".into())
        .trim_end_matches('/')
        .to_string();
    let rest = Rest {
        http: Http::new().map_err(|e| net_error(&e, ""))?,
        api,
        repo: repository(req)?,
        token,
    };
    let (body_rows, run, linked) = match req.pr {
        Some(n) => {
            let url = format!("{}/repos/{}/pulls/{n}", rest.api, rest.repo);
            let pr: crate::forge::github::models::Pull = rest
                .reader()
                .get_json(&format!("reading pull request #{n}"), &url)?;
            let body = pr.body.unwrap_or_default();
            let rows = links::parse_body_manifest(&body).ok_or_else(|| {
                Error::evidence(
                    format!("pull request #{n}"),
                    "its body has no spec-orchestrate manifest block",
                )
                .with_help("only pull requests opened by spec-orchestrate carry one")
            })?;
            let run = match req.run {
                Some(r) => r,
                None => *linked_runs(&body).last().ok_or_else(|| {
                    Error::evidence(
                        format!("pull request #{n}"),
                        "its body links no uploaded evidence (the run kept it in its checkpoint only)",
                    )
                    .with_help("pass --run <id> with the run that evaluated it")
                })?,
            };
            let linked = !linked_runs(&body).is_empty() && req.run.is_none();
            (Some(rows), run, linked)
        }
        None => match req.run {
            Some(r) => (None, r, false),
            None => {
                return Err(Error::usage(
                    "verify needs a directory, --pr <N> or --run <id>",
                ));
            }
        },
    };
    let got = download_run(&rest, run)?;
    let mut expected: Vec<ManifestRow> = match body_rows {
        Some(rows) => rows,
        None => got
            .result
            .as_ref()
            .map(|r| r.manifest.clone())
            .ok_or_else(|| {
                Error::evidence(
                    format!("run {run}"),
                    "no checkpoint with an evaluate result was found in this run",
                )
                .with_help("pass the run whose job ran `evaluate`")
            })?,
    };
    extend_from_report(&mut expected, &got);
    print_verdicts(&expected, &got, run, linked)
}

/// Adds the rows the report vouches for, when the report itself matches its expected row.
fn extend_from_report(expected: &mut Vec<ManifestRow>, got: &Downloaded) {
    let Some(report_row) = expected
        .iter()
        .find(|r| r.path.ends_with(&format!("/{REPORT_FILE}")))
        .cloned()
    else {
        return;
    };
    let bytes = got
        .unzipped
        .get(&report_row.path)
        .or_else(|| got.checkpoint.get(&report_row.path));
    let Some(bytes) = bytes.filter(|b| digest(b) == report_row.sha256) else {
        return;
    };
    let Some(rows) = html::parse_report_manifest(&String::from_utf8_lossy(bytes)) else {
        return;
    };
    for r in rows {
        if !expected.iter().any(|e| e.path == r.path) {
            expected.push(r);
        }
    }
}

fn print_verdicts(
    expected: &[ManifestRow],
    got: &Downloaded,
    run: u64,
    linked: bool,
) -> Result<Exit> {
    let mut bad = 0;
    for row in expected {
        let (ok, line) = judge(
            row,
            &[
                ("uploaded", got.unzipped.get(&row.path)),
                ("checkpoint", got.checkpoint.get(&row.path)),
            ],
            linked
                && (html::is_image_path(&row.path)
                    || row.path.ends_with(&format!("/{REPORT_FILE}"))),
        );
        if !ok {
            bad += 1;
        }
        crate::output::print_line(&line)?;
    }
    let rounds: Vec<&str> = expected
        .iter()
        .filter_map(|r| r.path.split('/').nth(1))
        .collect();
    for path in got.checkpoint.keys().chain(got.unzipped.keys()) {
        let same_round = path.split('/').nth(1).is_some_and(|r| rounds.contains(&r));
        if same_round && !expected.iter().any(|r| &r.path == path) {
            bad += 1;
            outln!("CHANGED {path}: stored in run {run} but not in the manifest")?;
        }
    }
    if bad == 0 {
        outln!(
            "ok: {} evidence file(s) of run {run} match the manifest",
            expected.len()
        )?;
        Ok(Exit::Ok)
    } else {
        outln!(
            "{bad} of {} file(s) do not match the manifest",
            expected.len()
        )?;
        Ok(Exit::Failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_matching_the_body_vouches_for_the_rows_a_cut_left_out() {
        let hidden = ManifestRow {
            path: "evidence/1/T-A09.log".into(),
            bytes: 3,
            sha256: "a".repeat(64),
        };
        let page = format!(
            "<p>x</p>\n{}\n<pre id=\"manifest\">{}</pre>\n{}\n",
            html::MANIFEST_BEGIN,
            html::esc(&html::manifest_lines(std::slice::from_ref(&hidden))),
            html::MANIFEST_END
        );
        let report_row = |sha: String| ManifestRow {
            path: "evidence/1/report.html".into(),
            bytes: page.len() as u64,
            sha256: sha,
        };
        let got = Downloaded {
            unzipped: [(
                "evidence/1/report.html".to_string(),
                page.clone().into_bytes(),
            )]
            .into_iter()
            .collect(),
            checkpoint: BTreeMap::new(),
            result: None,
        };
        let mut expected = vec![report_row(digest(page.as_bytes()))];
        extend_from_report(&mut expected, &got);
        assert_eq!(expected.len(), 2);
        assert_eq!(expected[1], hidden);
        let mut forged = vec![report_row("b".repeat(64))];
        extend_from_report(&mut forged, &got);
        assert_eq!(
            forged.len(),
            1,
            "a report that does not match vouches for nothing"
        );
    }

    #[test]
    fn remotes_names_and_links_parse() {
        assert_eq!(
            parse_evidence_name("spec-orchestrate-evidence-1347-r2-a1-T-A05-01-light.png"),
            Some((2, 1, "T-A05-01-light.png".into()))
        );
        assert_eq!(
            parse_evidence_name("spec-orchestrate-1347-evaluate-a1"),
            None
        );
        assert_eq!(
            linked_runs(
                "[r](https://github.com/o/r/actions/runs/2005/artifacts/611) /actions/runs/9/jobs"
            ),
            vec![2005]
        );
    }
}
