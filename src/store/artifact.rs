//! Checkpoints as GitHub workflow artifacts.
//!
//! Upload goes through the Actions results service, the same path `actions/upload-artifact`
//! takes (`@actions/artifact` in actions/toolkit, `uploadArtifact`): Twirp JSON `CreateArtifact`
//! (authorised by `ACTIONS_RUNTIME_TOKEN`, `version: 7` and `mime_type` as that client sends)
//! returns a signed blob URL; the zip goes there in blocks, Put Block then Put Block List, as
//! that client's storage SDK does (no Authorization header: the signature is the credential);
//! `FinalizeArtifact` then records its size and `sha256:<hex>`. The run and job ids the service wants are not the numeric run id but
//! backend ids carried in the runtime token's `scp` claim (`Actions.Results:<run>:<job>`).
//!
//! Download goes through REST with the repository token: list the parent run's artifacts, then
//! `GET …/artifacts/{id}/zip`, which answers with a redirect to a short-lived storage URL. That
//! URL is fetched *without* the Authorization header — storage rejects it, and the token must
//! never leave GitHub.

use base64::Engine as _;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::forge::github::answer::{effect_unknown, net_error, odd_answer, write_checked};
use crate::forge::github::models;
use crate::net::{Http, NetError, RetryPolicy, host_of};
use crate::secrets::Secret;

use super::{Found, Saved, pick_latest};

const TWIRP_SERVICE: &str = "github.actions.results.api.v1.ArtifactService";
const API_VERSION: &str = "2022-11-28";

/// The runtime token's claims, as far as the results service's ids go.
#[derive(Deserialize)]
struct Claims {
    /// Space-separated scopes, one of them `Actions.Results:<run>:<job>`.
    scp: String,
}

/// The results service's answer to `CreateArtifact` (Twirp JSON).
#[derive(Deserialize)]
struct Created {
    ok: bool,
    /// Where the blob goes; absent when the service refused.
    #[serde(default)]
    signed_upload_url: Option<String>,
}

/// The results service's answer to `FinalizeArtifact`: Twirp JSON writes an `int64` as a
/// string.
#[derive(Deserialize)]
struct Finalized {
    ok: bool,
    #[serde(default)]
    artifact_id: Option<Int64>,
}

/// A protobuf `int64` in JSON: a string by the mapping's rule, a number from lenient servers.
#[derive(Deserialize)]
#[serde(untagged)]
enum Int64 {
    Text(String),
    Number(u64),
}

impl Int64 {
    fn value(&self) -> Option<u64> {
        match self {
            Int64::Text(s) => s.parse().ok(),
            Int64::Number(n) => Some(*n),
        }
    }
}

/// The results service's answer to `ListArtifacts`: the run's finalized artifacts (an artifact
/// whose upload never finished is not listed).
#[derive(Deserialize)]
struct Listed {
    #[serde(default)]
    artifacts: Vec<ListedArtifact>,
}

/// One artifact of `ListArtifacts` (`ListArtifactsResponse_MonolithArtifact`).
#[derive(Deserialize)]
struct ListedArtifact {
    name: String,
    #[serde(default)]
    database_id: Option<Int64>,
    /// `sha256:<hex>`, as `FinalizeArtifact` recorded it (absent on older services).
    #[serde(default)]
    digest: Option<String>,
}

/// The results-service ids of this workflow run and job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendIds {
    /// `workflow_run_backend_id`.
    pub run: String,
    /// `workflow_job_run_backend_id`.
    pub job: String,
}

/// Reads the backend ids from the runtime token (a JWT) without verifying it: the token is the
/// runner's, handed to this process by the runner, and the service verifies it on every call.
pub fn backend_ids(runtime_token: &str) -> std::result::Result<BackendIds, String> {
    let payload = runtime_token
        .split('.')
        .nth(1)
        .ok_or("ACTIONS_RUNTIME_TOKEN is not a JWT (no payload part)")?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| "ACTIONS_RUNTIME_TOKEN's payload is not base64url")?;
    let claims: Claims = models::decode(&bytes).map_err(|e| {
        if serde_json::from_slice::<serde_json::Value>(&bytes).is_err() {
            "ACTIONS_RUNTIME_TOKEN's payload is not JSON".to_string()
        } else if e.contains("missing field `scp`") {
            "ACTIONS_RUNTIME_TOKEN has no `scp` claim".to_string()
        } else {
            format!("ACTIONS_RUNTIME_TOKEN's claims are not the runner's: {e}")
        }
    })?;
    let scp = claims.scp.as_str();
    for scope in scp.split(' ') {
        let parts: Vec<&str> = scope.split(':').collect();
        if parts.first() == Some(&"Actions.Results") {
            if parts.len() != 3 || parts[1].is_empty() || parts[2].is_empty() {
                return Err(format!(
                    "ACTIONS_RUNTIME_TOKEN's `Actions.Results` scope is malformed (expected Actions.Results:<run>:<job>, found {} part(s))",
                    parts.len()
                ));
            }
            return Ok(BackendIds {
                run: parts[1].to_string(),
                job: parts[2].to_string(),
            });
        }
    }
    Err("ACTIONS_RUNTIME_TOKEN's `scp` claim has no Actions.Results scope".into())
}

/// Where artifacts go and who we are there.
pub struct ArtifactStore {
    http: Http,
    /// The same client for `CreateArtifact` and `FinalizeArtifact`: neither is re-sent blindly
    /// after a lost answer, whose effect may have happened; the artifact is looked up instead.
    writes: Http,
    results_url: String,
    runtime_token: Secret,
    ids: BackendIds,
    api_url: String,
    repository: String,
    github_token: Secret,
}

impl std::fmt::Debug for ArtifactStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactStore")
            .field("results", &host_of(&self.results_url))
            .field("api_url", &self.api_url)
            .field("repository", &self.repository)
            .finish_non_exhaustive()
    }
}

fn net(e: NetError) -> Error {
    net_error(&e, "")
}

/// The artifact service answered (with `status`), but not as its protocol says: a forge error
/// at `url`'s host.
fn odd(url: &str, status: Option<u16>, message: String) -> Error {
    odd_answer(&host_of(url), status, message)
}

impl ArtifactStore {
    /// A store for `repository` (`owner/name`): uploads through `results_url` with the runtime
    /// token, downloads through the REST API at `api_url` with the repository token.
    pub fn new(
        results_url: &str,
        runtime_token: Secret,
        api_url: &str,
        repository: &str,
        github_token: Secret,
    ) -> Result<ArtifactStore> {
        let ids = backend_ids(runtime_token.expose()).map_err(|e| {
            Error::usage(format!(
                "{e}; the checkpoint cannot be uploaded. This variable is set by the runner for Docker and JavaScript actions; run spec-orchestrate as the action, or set SPEC_ORCHESTRATE_CHECKPOINT_DIR to keep checkpoints in a directory"
            ))
        })?;
        let http = Http::new().map_err(net)?;
        Ok(ArtifactStore {
            writes: http.clone().with_policy(RetryPolicy::writes()),
            http,
            results_url: results_url.trim_end_matches('/').to_string(),
            runtime_token,
            ids,
            api_url: api_url.trim_end_matches('/').to_string(),
            repository: repository.to_string(),
            github_token,
        })
    }

    /// One Twirp call of the artifact service with `fields` and this run's and job's backend
    /// ids, its answer read as `T`, which must say `ok`.
    fn twirp<T: DeserializeOwned>(
        &self,
        http: &Http,
        method: &str,
        fields: serde_json::Value,
        ok: fn(&T) -> bool,
    ) -> Result<T> {
        let mut body = fields;
        body["workflow_run_backend_id"] = serde_json::json!(self.ids.run);
        body["workflow_job_run_backend_id"] = serde_json::json!(self.ids.job);
        let body = &body;
        let url = format!("{}/twirp/{TWIRP_SERVICE}/{method}", self.results_url);
        let reply = http
            .send(&format!("artifact service {method}"), &url, |c| {
                c.post(&url)
                    .bearer_auth(self.runtime_token.expose())
                    .header("Content-Type", "application/json")
                    .json(body)
            })
            .map_err(net)?;
        let answer: T = models::decode(&reply.body).map_err(|e| {
            odd(
                &url,
                Some(reply.status),
                format!(
                    "artifact service {method} at {} answered (HTTP {}) with JSON that does not match its protocol {e}; the checkpoint was not saved",
                    host_of(&url),
                    reply.status
                ),
            )
        })?;
        if !ok(&answer) {
            return Err(odd(
                &url,
                Some(reply.status),
                format!(
                    "artifact service {method} at {} did not answer ok (HTTP {}); the checkpoint was not saved",
                    host_of(&url),
                    reply.status
                ),
            ));
        }
        Ok(answer)
    }

    /// Uploads `zip` as artifact `name` of this run.
    pub fn save(&self, name: &str, zip: &[u8]) -> Result<Saved> {
        self.upload(name, zip, MIME_TYPE, None, true)
    }

    /// Uploads one file *unzipped* as artifact `name`, as `upload-artifact` v7 does with
    /// `archive: false`: `CreateArtifact` version 7 with the file's `mime_type` (the service
    /// refuses version 7 without a valid one), the blob stored with that content type, so GitHub
    /// shows an image or a simple HTML page in the browser instead of offering a zip.
    /// `retention_days` sets `expires_at`; `None` keeps the repository's default.
    pub fn save_file(
        &self,
        name: &str,
        bytes: &[u8],
        mime: &str,
        retention_days: Option<u32>,
    ) -> Result<Saved> {
        self.upload(name, bytes, mime, retention_days, false)
    }

    /// CreateArtifact, the bytes in blocks with `content_type`, FinalizeArtifact.
    /// A checkpoint (`may_rename`) whose creation answer was lost is uploaded under a sibling
    /// name ([`super::retry_name`]) when the service says the lost call made it: the lost
    /// answer held the only URL its bytes could go to.
    fn upload(
        &self,
        name: &str,
        zip: &[u8],
        content_type: &str,
        retention_days: Option<u32>,
        may_rename: bool,
    ) -> Result<Saved> {
        let mut create = serde_json::json!({
            "name": name, "version": ARTIFACT_VERSION, "mime_type": content_type,
        });
        if let Some(days) = retention_days {
            let expires = chrono::Utc::now() + chrono::Duration::days(i64::from(days));
            create["expires_at"] =
                serde_json::json!(expires.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        }
        let (name, upload_url) = self.create(name, &create, may_rename)?;
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(zip)));
        self.upload_blocks(&name, &upload_url, zip, &digest, content_type)?;
        let id = self.finalize(&name, zip.len(), &digest)?;
        Ok(Saved {
            name,
            id,
            size: zip.len() as u64,
            digest,
        })
    }

    /// `CreateArtifact` of `name` (`create` with that name): the name it was made under and its
    /// signed upload URL. After an answer that may have been lost (5xx, no answer) the call is
    /// sent again; an `already_exists` then means the lost call made the artifact, whose URL is
    /// gone with its answer: a checkpoint (`may_rename`) is then created under a sibling name,
    /// anything else fails with that answer.
    fn create(
        &self,
        name: &str,
        create: &serde_json::Value,
        may_rename: bool,
    ) -> Result<(String, String)> {
        let mut current = name.to_string();
        let mut lost = false;
        let mut renames = 0;
        let mut sends = 0;
        loop {
            let mut body = create.clone();
            body["name"] = serde_json::json!(current);
            sends += 1;
            let created = self.twirp(&self.writes, "CreateArtifact", body, |c: &Created| c.ok);
            let error = match created {
                Ok(created) => {
                    let url = created
                        .signed_upload_url
                        .filter(|u| !u.is_empty())
                        .ok_or_else(|| {
                            odd(
                                &self.results_url,
                                None,
                                format!(
                                    "artifact service CreateArtifact for {current} returned no signed_upload_url"
                                ),
                            )
                        })?;
                    return Ok((current, url));
                }
                Err(e) => e,
            };
            if effect_unknown(&error) && sends < CREATE_SENDS {
                lost = true;
                pause(sends);
                continue;
            }
            if lost && may_rename && renames < CREATE_SENDS && has_code(&error, "already_exists") {
                renames += 1;
                let sibling = super::retry_name(name, renames + 1);
                crate::events::emit(crate::events::Event::Job {
                    message: format!(
                        "artifact {current}: the service's answer to CreateArtifact was lost after it made the artifact; uploading as {sibling}"
                    ),
                });
                current = sibling;
                sends = 0;
                continue;
            }
            return Err(error);
        }
    }

    /// `FinalizeArtifact` of `name` (`size` bytes, `digest`): the artifact's id. After an answer
    /// that may have been lost, the run's finalized artifact of that name and digest is looked up
    /// (`ListArtifacts`) and adopted; only when there is none is the call sent again.
    fn finalize(&self, name: &str, size: usize, digest: &str) -> Result<Option<u64>> {
        let body = serde_json::json!({ "name": name, "size": size.to_string(), "hash": digest });
        let send = || {
            let done = self.twirp(
                &self.writes,
                "FinalizeArtifact",
                body.clone(),
                |f: &Finalized| f.ok,
            )?;
            Ok(done.artifact_id.as_ref().and_then(Int64::value))
        };
        let lookup = || Ok(self.finalized(name, digest)?.map(Some));
        // A re-sent call after a lost one that took effect finds nothing pending.
        let ambiguous = |e: &Error, lost| effect_unknown(e) || (lost && has_code(e, "not_found"));
        let adopted = |_: &Error, id: &Option<u64>| {
            let id = id.unwrap_or_default();
            format!(
                "artifact {name}: the service's answer to FinalizeArtifact was lost; it is finalized (id {id}) and kept"
            )
        };
        write_checked(send, lookup, ambiguous, adopted)
    }

    /// The id of this run's finalized artifact `name` with `digest` (`ListArtifacts` filtered by
    /// name), if there is one. One with another digest is not ours to adopt.
    fn finalized(&self, name: &str, digest: &str) -> Result<Option<u64>> {
        let fields = serde_json::json!({ "name_filter": name });
        let listed: Listed = self.twirp(&self.http, "ListArtifacts", fields, |_| true)?;
        Ok(listed
            .artifacts
            .iter()
            .filter(|a| a.name == name)
            .filter(|a| a.digest.as_deref().is_none_or(|d| d == digest))
            .find_map(|a| a.database_id.as_ref().and_then(Int64::value)))
    }

    /// Uploads `zip` to the signed blob URL as the official client's storage SDK does
    /// (`BlockBlobClient.uploadStream`): each block of at most [`BLOCK_SIZE`] with Put Block
    /// (`comp=block&blockid=…`), then Put Block List (`comp=blocklist`) committing them in order
    /// with the blob's content type. Each request is idempotent (a block re-sent under its id
    /// replaces itself), so the client's retries are safe.
    fn upload_blocks(
        &self,
        name: &str,
        url: &str,
        zip: &[u8],
        digest: &str,
        content_type: &str,
    ) -> Result<()> {
        let what = format!("uploading artifact {name}");
        let ids = block_ids(digest, zip.len());
        for (i, (id, chunk)) in ids.iter().zip(chunks(zip)).enumerate() {
            let block_url = format!("{url}&comp=block&blockid={}", encode_component(id));
            let reply = self
                .http
                .send(&format!("{what} (block {})", i + 1), &block_url, |c| {
                    c.put(&block_url)
                        .header("x-ms-version", STORAGE_VERSION)
                        .body(chunk.to_vec())
                })
                .map_err(net)?;
            check_created(&what, &block_url, reply.status)?;
        }
        let list_url = format!("{url}&comp=blocklist");
        let body = block_list_xml(&ids);
        let reply = self
            .http
            .send(&format!("{what} (block list)"), &list_url, |c| {
                c.put(&list_url)
                    .header("x-ms-version", STORAGE_VERSION)
                    .header("x-ms-blob-content-type", content_type)
                    .header("Content-Type", "application/xml; charset=utf-8")
                    .body(body.clone())
            })
            .map_err(net)?;
        check_created(&what, &list_url, reply.status)
    }

    /// Reads this repository's run artifacts with the repository token.
    fn reader(&self) -> RunArtifacts<'_> {
        RunArtifacts {
            http: &self.http,
            api_url: &self.api_url,
            repository: &self.repository,
            token: &self.github_token,
            refused: " — the github_token input was refused",
            forbidden: " — the workflow needs `permissions: actions: read` (or write) to read artifacts",
        }
    }

    /// The newest checkpoint of `issue` uploaded by run `run_id`.
    pub fn load_latest(&self, run_id: u64, issue: u64) -> Result<Option<Found>> {
        let artifacts = self.reader().list(run_id)?;
        let Some(name) = pick_latest(issue, artifacts.iter().map(|(_, n)| n.as_str())) else {
            return Ok(None);
        };
        let what = format!("downloading checkpoint {name} of run {run_id}");
        self.download(&artifacts, name, &what).map(Some)
    }

    /// The newest artifact `name` among `artifacts` (`(id, name)` of a run's listing).
    fn download(&self, artifacts: &[(u64, String)], name: &str, what: &str) -> Result<Found> {
        let id = artifacts
            .iter()
            .filter(|(_, n)| n == name)
            .map(|(id, _)| *id)
            .max()
            .unwrap_or_default();
        let zip = self.reader().download(id, what)?;
        Ok(Found {
            name: name.to_string(),
            zip,
        })
    }

    /// The newest leg result of each task of `issue` uploaded by run `run_id`, over all its
    /// attempts. Read through REST, whose listing holds a run's artifacts of every attempt (the
    /// results service's own listing holds the current attempt's only, so a join re-run after
    /// "Re-run failed jobs" would not see the legs that were not re-run).
    pub fn load_legs(&self, run_id: u64, issue: u64) -> Result<Vec<(String, Found)>> {
        let artifacts = self.reader().list(run_id)?;
        super::pick_legs(issue, artifacts.iter().map(|(_, n)| n.as_str()))
            .into_iter()
            .map(|(task, name)| {
                let what = format!("downloading leg {name} of run {run_id}");
                Ok((task, self.download(&artifacts, name, &what)?))
            })
            .collect()
    }
}

/// Reads a repository's workflow-run artifacts through REST with a token: a run's unexpired
/// artifacts, and one artifact's bytes through GitHub's redirect to storage. The checkpoint
/// download and `verify --pr` both read artifacts this way; only what an error says about the
/// token differs (the action's `github_token` input, a person's `GITHUB_TOKEN`).
#[allow(missing_docs)]
pub struct RunArtifacts<'a> {
    pub http: &'a Http,
    /// REST API base, without a trailing `/`.
    pub api_url: &'a str,
    /// `owner/name`.
    pub repository: &'a str,
    /// Sent to GitHub only, never to storage.
    pub token: &'a Secret,
    /// Added to a 401 answer: which token was refused.
    pub refused: &'static str,
    /// Added to a 403 or 404 answer: what the token needs.
    pub forbidden: &'static str,
}

impl RunArtifacts<'_> {
    /// `GET url` on the REST API with the token, the answer read as `T` (an error names the
    /// field it lacks); `what` names the request in errors.
    pub fn get_json<T: DeserializeOwned>(&self, what: &str, url: &str) -> Result<T> {
        let reply = self.get_with(self.http, what, url)?;
        models::decode(&reply.body).map_err(|e| {
            odd(
                url,
                Some(reply.status),
                format!(
                    "GitHub answered {what} (HTTP {}) with JSON that does not match its documented shape {e}",
                    reply.status
                ),
            )
        })
    }

    /// `GET url` on the REST API with the token through `http` (the client with a body cap).
    fn get_with(&self, http: &Http, what: &str, url: &str) -> Result<crate::net::Reply> {
        http.send(what, url, |c| {
            c.get(url)
                .bearer_auth(self.token.expose())
                .header("Accept", "application/vnd.github+json")
                .header("X-GitHub-Api-Version", API_VERSION)
        })
        .map_err(|e| {
            let hint = match &e {
                NetError::Status { status: 401, .. } => self.refused,
                NetError::Status {
                    status: 403 | 404, ..
                } => self.forbidden,
                _ => "",
            };
            net_error(&e, hint)
        })
    }

    /// `(id, name)` of every unexpired artifact of run `run` (up to 1,000).
    pub fn list(&self, run: u64) -> Result<Vec<(u64, String)>> {
        let mut artifacts = Vec::new();
        for page in 1..=10u32 {
            let url = format!(
                "{}/repos/{}/actions/runs/{run}/artifacts?per_page=100&page={page}",
                self.api_url, self.repository
            );
            let page: models::Artifacts =
                self.get_json(&format!("listing the artifacts of run {run}"), &url)?;
            let short = page.artifacts.len() < 100;
            artifacts.extend(
                page.artifacts
                    .into_iter()
                    .filter(|a| !a.expired)
                    .map(|a| (a.id, a.name)),
            );
            if short || artifacts.len() as u64 >= page.total_count {
                break;
            }
        }
        Ok(artifacts)
    }

    /// Artifact `id`'s bytes: `GET …/artifacts/{id}/zip` answers with a redirect to a signed
    /// storage URL, which is fetched without the token (storage refuses it, and the token must
    /// never leave GitHub).
    pub fn download(&self, id: u64, what: &str) -> Result<Vec<u8>> {
        let url = format!(
            "{}/repos/{}/actions/artifacts/{id}/zip",
            self.api_url, self.repository
        );
        // A zip is no JSON answer: it may be far larger, up to the download cap.
        let http = self
            .http
            .clone()
            .with_body_cap(crate::net::DOWNLOAD_BODY_CAP);
        let first = self.get_with(&http, what, &url)?;
        if !(300..400).contains(&first.status) {
            return Ok(first.body);
        }
        let location = first.header("location").ok_or_else(|| {
            odd(
                &url,
                None,
                format!("{what}: HTTP {} without a Location header", first.status),
            )
        })?;
        let target = reqwest::Url::parse(&url)
            .and_then(|base| base.join(location))
            .map_err(|e| odd(&url, None, format!("{what}: bad redirect target: {e}")))?
            .to_string();
        Ok(http
            .send(what, &target, |c| c.get(&target))
            .map_err(net)?
            .body)
    }
}

/// Sends of one `CreateArtifact` (and creations under a sibling name), the first included.
const CREATE_SENDS: u32 = 3;

/// Whether the service answered with Twirp error code `code`.
fn has_code(e: &Error, code: &str) -> bool {
    e.forge_failure()
        .is_some_and(|f| f.codes.iter().any(|c| c == code))
}

/// Waits before sending a call again after `sends` sends (backoff with jitter).
fn pause(sends: u32) {
    std::thread::sleep(crate::net::wait::backoff(
        std::time::Duration::from_secs(1),
        sends,
    ));
}

/// The artifact version the official client (`@actions/artifact`, `uploadArtifact`) sends in
/// `CreateArtifact` since it began to send a MIME type.
const ARTIFACT_VERSION: u32 = 7;

/// The checkpoint's MIME type (`mime_type` of `CreateArtifact`, the blob's content type): the
/// official client's for a `.zip`.
const MIME_TYPE: &str = "application/zip";

/// The official client's block size (`getUploadChunkSize`: 8 MiB).
const BLOCK_SIZE: usize = 8 * 1024 * 1024;

/// The storage REST version the requests are written against (Put Block, Put Block List).
const STORAGE_VERSION: &str = "2023-11-03";

/// The blocks of `zip`, in order: an empty checkpoint is still one (empty) block.
fn chunks(zip: &[u8]) -> Vec<&[u8]> {
    if zip.is_empty() {
        return vec![zip];
    }
    zip.chunks(BLOCK_SIZE).collect()
}

/// Block ids for a blob of `len` bytes: storage wants each at most 64 bytes before base64 and
/// all of one blob the same length, so, like the storage SDK's `generateBlockID`, a 36-character
/// prefix (here from the content's digest, so a retried upload names its blocks alike) and the
/// block's index padded to 12 digits, base64-encoded.
fn block_ids(digest: &str, len: usize) -> Vec<String> {
    let hex = digest.trim_start_matches("sha256:");
    let prefix: String = hex.chars().chain(std::iter::repeat('0')).take(36).collect();
    let n = len.div_ceil(BLOCK_SIZE).max(1);
    (0..n)
        .map(|i| base64::engine::general_purpose::STANDARD.encode(format!("{prefix}{i:012}")))
        .collect()
}

/// The body of Put Block List committing `ids` in order (each the newest upload of its id).
fn block_list_xml(ids: &[String]) -> String {
    let mut s = String::from(r#"<?xml version="1.0" encoding="utf-8"?><BlockList>"#);
    for id in ids {
        s.push_str(&format!("<Latest>{id}</Latest>"));
    }
    s.push_str("</BlockList>");
    s
}

/// A base64 block id inside a query string (`+`, `/` and `=` escaped).
fn encode_component(s: &str) -> String {
    s.replace('+', "%2B")
        .replace('/', "%2F")
        .replace('=', "%3D")
}

/// Storage answers 201 Created to Put Block and Put Block List.
fn check_created(what: &str, url: &str, status: u16) -> Result<()> {
    if (200..300).contains(&status) {
        return Ok(());
    }
    Err(odd(
        url,
        None,
        format!("{what} to {}: unexpected HTTP {status}", host_of(url)),
    ))
}

#[cfg(test)]
mod tests;
