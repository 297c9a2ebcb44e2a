//! A simulated GitHub: the REST endpoints spec-orchestrate uses, the GraphQL mutations, the
//! Actions results service (Twirp JSON) and blob storage, on two local servers.
//!
//! It serves GitHub's documented payloads (`tests/fixtures/github/`, with only numbers, ids,
//! bodies and URLs overridden), keeps state like GitHub does (comments, pull requests, artifacts,
//! dispatched runs), checks what GitHub checks (tokens, required headers, the artifact's size and
//! hash), records every request, and answers anything it does not know with a 500 while noting a
//! violation, so that an unexpected call fails the test loudly. Storage is a separate server, as
//! it is a separate host on GitHub, and it refuses requests carrying an Authorization header.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use serde_json::{Value, json};
use wiremock::matchers::{any, method, path_regex};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::fault_front::Front;
pub use crate::fault_front::{FaultKind, Faults, Scripted};

/// Reviews, review comments and threads (a room of its own).
#[path = "fake_reviews.rs"]
pub mod reviews;

pub const OWNER: &str = "octocat";
pub const REPO: &str = "Hello-World";
pub const WORKFLOW: &str = "spec-orchestrate.yml";
/// Who the repository token acts as (the workflow's `GITHUB_TOKEN`).
pub const TOKEN_LOGIN: &str = "github-actions[bot]";

pub fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/github/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A dispatched workflow run.
#[derive(Debug, Clone)]
pub struct Dispatch {
    pub workflow: String,
    pub git_ref: String,
    pub inputs: Value,
    pub run_id: u64,
    /// When GitHub created the run (RFC 3339, whole seconds, as the API writes it).
    pub created_at: String,
}

/// How the dispatch endpoint answers `return_run_details: true`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunDetails {
    /// github.com since 2026-02-19 (changelog "Workflow dispatch API now returns run IDs"), and
    /// GitHub Enterprise Server 3.21 on: 200 with `workflow_run_id`, `run_url`, `html_url`.
    #[default]
    Returned,
    /// GitHub Enterprise Server 3.20 and older: the key is unknown and the request invalid (422
    /// `"return_run_details" is not a permitted key.`, reported on 3.19 in
    /// benc-uk/workflow-dispatch#86); no run is created.
    Refused,
    /// A server that ignores the key: 204 No Content, as before the change.
    Ignored,
}

/// Something GitHub turns into a workflow run, in the order it happened: the player
/// (`actions_sim.rs`) queues them in the concurrency group as the workflow's rule says.
#[derive(Debug, Clone)]
pub enum Delivery {
    /// A `workflow_dispatch` the chain sent.
    Dispatch(Dispatch),
    /// An issue comment a person posted (the comment as the API serves it).
    Comment(u64, Value),
    /// Any other event the test delivers (`issues.labeled`, …).
    Event(String, Value),
}

/// A comment a person posts while a job runs, at that job's `at`-th dispatch request (0 = the
/// first of the test): `before` the dispatch is queued, or right after it.
#[derive(Debug, Clone)]
pub struct Injection {
    pub at: usize,
    pub before: bool,
    pub login: String,
    pub association: String,
    pub body: String,
}

/// A finalized (or pending) artifact.
#[derive(Debug, Clone)]
pub struct Artifact {
    pub id: u64,
    pub name: String,
    pub run_id: u64,
    pub blob: String,
    pub bytes: Option<Vec<u8>>,
    pub finalized: bool,
    /// 4: a zip (checkpoint, before the client sent a MIME type); 7: with `mime`.
    pub version: u64,
    /// `mime_type` given at creation.
    pub mime: Option<String>,
    /// `expires_at` given at creation (RFC 3339).
    pub expires_at: Option<String>,
    /// Uncommitted blocks (Put Block), by block id.
    pub blocks: HashMap<String, Vec<u8>>,
    /// The blob's committed blocks, by block id: `Latest` in a Put Block List finds a block
    /// among the uncommitted ones first, then among these (Azure's "Put Block List"), so a
    /// list re-sent after its answer was lost commits the same blob again.
    pub committed: HashMap<String, Vec<u8>>,
    /// The blob's content type, as its upload set it.
    pub content_type: Option<String>,
}

impl Artifact {
    /// A checkpoint zip, as opposed to an unzipped evidence file.
    pub fn is_zip(&self) -> bool {
        self.mime.as_deref().is_none_or(|m| m == "application/zip")
    }
}

/// A request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub server: &'static str,
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A transient failure to inject: the next `times` matching requests get `status`.
#[derive(Debug, Clone)]
pub struct Fault {
    pub method: String,
    pub path_contains: String,
    pub status: u16,
    pub retry_after: Option<String>,
    pub times: u32,
}

/// Everything the fake GitHub knows.
#[derive(Debug, Default)]
pub struct World {
    pub token: String,
    pub api: String,
    pub blob: String,
    /// runtime token → (run id, run backend id, job backend id)
    pub runtime_tokens: HashMap<String, (u64, String, String)>,
    pub issues: HashMap<u64, Value>,
    /// (issue, comment)
    pub comments: Vec<(u64, Value)>,
    pub next_comment_id: u64,
    /// login → role name
    pub roles: HashMap<String, String>,
    pub pulls: Vec<Value>,
    pub next_pr: u64,
    pub dispatches: Vec<Dispatch>,
    /// Every event that starts a run, in order (dispatches, people's comments, other events).
    pub deliveries: Vec<Delivery>,
    /// Comments people post during a job, at a dispatch request.
    pub injections: Vec<Injection>,
    pub next_run_id: u64,
    pub artifacts: Vec<Artifact>,
    pub next_artifact_id: u64,
    pub graphql: Vec<Value>,
    pub violations: Vec<String>,
    pub faults: Vec<Fault>,
    /// Who the repository token acts as: the workflow's `GITHUB_TOKEN` (`TOKEN_LOGIN`), or a
    /// GitHub App installation token (`<app>[bot]`) or a personal access token.
    pub token_login: String,
    /// run id → (`status`, `conclusion`) as the Actions player left it; a dispatched run it has
    /// not played is `queued`, a run it played without a word here `completed`/`success`.
    pub run_status: HashMap<u64, (String, Option<String>)>,
    /// How the dispatch endpoint answers `return_run_details`.
    pub run_details: RunDetails,
    /// Hold the answer of an accepted dispatch this long (the run is created at once): the job
    /// that sent it waits, so a test can kill it between GitHub's effect and the job's next step.
    pub hold_dispatch_reply: Option<std::time::Duration>,
    /// The workflow's `run-name` (from examples/workflow.yml), which titles its runs.
    pub run_name: Option<String>,
    /// The repository setting "Allow GitHub Actions to create and approve pull requests"
    /// (off by default on GitHub; on here unless a test turns it off).
    pub actions_may_open_prs: bool,
    pub requests: Vec<Recorded>,
    /// What `doctor --github` reads (the block "doctor's endpoints" below).
    pub doctor: DoctorWorld,
    /// Pull request reviews and their threads (`fake_reviews.rs`).
    pub reviews: reviews::Reviews,
    /// Runs cancelled through `POST …/actions/runs/{id}/cancel`, in order.
    pub cancelled: Vec<u64>,
}

impl World {
    fn violation(&mut self, v: String) {
        eprintln!("FAKE GITHUB VIOLATION: {v}");
        self.violations.push(v);
    }

    fn rest_auth_ok(&mut self, req: &Request) -> bool {
        let want = format!("Bearer {}", self.token);
        let got = header(req, "authorization");
        if got.as_deref() != Some(want.as_str()) {
            self.violation(format!(
                "{} {}: REST call without the repository token",
                req.method,
                req.url.path()
            ));
            return false;
        }
        true
    }

    pub fn status_comments(&self, issue: u64) -> Vec<&Value> {
        self.comments
            .iter()
            .filter(|(i, c)| {
                *i == issue
                    && c["body"]
                        .as_str()
                        .unwrap_or_default()
                        .starts_with("<!-- spec-orchestrate:status")
            })
            .map(|(_, c)| c)
            .collect()
    }

    /// A person posts `body` on `issue` (with `author_association` `association`): the comment
    /// is stored and its `issue_comment` event delivered.
    pub fn post_as(&mut self, issue: u64, login: &str, association: &str, body: &str) -> Value {
        let id = self.next_comment_id;
        self.next_comment_id += 1;
        let mut c = comment_json(self, issue, id, body, login);
        c["author_association"] = json!(association);
        c["user"]["type"] = json!(if login.ends_with("[bot]") {
            "Bot"
        } else {
            "User"
        });
        self.comments.push((issue, c.clone()));
        self.deliveries.push(Delivery::Comment(issue, c.clone()));
        c
    }

    /// The comments injected at dispatch request `at` (`before` it or after), posted now.
    fn inject(&mut self, at: usize, before: bool) {
        let due: Vec<Injection> = self
            .injections
            .iter()
            .filter(|i| i.at == at && i.before == before)
            .cloned()
            .collect();
        for i in due {
            self.post_as(1347, &i.login, &i.association, &i.body);
        }
    }

    pub fn count(&self, method: &str, path_part: &str) -> usize {
        self.requests
            .iter()
            .filter(|r| r.method == method && r.url.contains(path_part))
            .count()
    }
}

fn header(req: &Request, name: &str) -> Option<String> {
    req.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn query(req: &Request, key: &str) -> Option<String> {
    req.url
        .query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

fn segment(req: &Request, index_from_end: usize) -> String {
    let segs: Vec<&str> = req.url.path().split('/').collect();
    segs[segs.len() - 1 - index_from_end].to_string()
}

fn github_error(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "message": message,
        "documentation_url": "https://docs.github.com/rest",
        "status": status.to_string()
    }))
}

type HandlerFn = fn(&mut World, &Request) -> ResponseTemplate;

struct Handler {
    world: Arc<Mutex<World>>,
    server: &'static str,
    f: HandlerFn,
}

impl wiremock::Respond for Handler {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let mut w = self.world.lock().unwrap_or_else(|p| p.into_inner());
        w.requests.push(Recorded {
            server: self.server,
            method: req.method.to_string(),
            url: req.url.to_string(),
            headers: req
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string()))
                .collect(),
            body: req.body.clone(),
        });
        let m = req.method.to_string();
        let path = req.url.path().to_string();
        if let Some(fault) = w
            .faults
            .iter_mut()
            .find(|f| f.times > 0 && f.method == m && path.contains(&f.path_contains))
        {
            fault.times -= 1;
            let mut t = ResponseTemplate::new(fault.status)
                .set_body_json(json!({"message": "simulated transient failure"}));
            if let Some(ra) = &fault.retry_after {
                t = t.insert_header("Retry-After", ra.as_str());
            }
            return t;
        }
        (self.f)(&mut w, req)
    }
}

/// The running fake.
pub struct FakeGithub {
    pub rt: tokio::runtime::Runtime,
    pub api: MockServer,
    pub blob: MockServer,
    pub world: Arc<Mutex<World>>,
    /// The fault mode (`start_with_faults`): what the fronts decided, request by request.
    pub faults: Option<Arc<Faults>>,
    /// The fault fronts before `api` and `blob`, which every URL the fake hands out names.
    fronts: Vec<Front>,
}

impl FakeGithub {
    /// Starts both servers with the repository token `token` and issue 1347 titled `title`.
    pub fn start(token: &str, title: &str, body: &str) -> FakeGithub {
        FakeGithub::start_inner(token, title, body, None)
    }

    /// [`FakeGithub::start`] in fault mode: every request to REST, GraphQL, the results service
    /// and storage passes a front that plays the seeded and scripted faults of `faults`
    /// (`fault_front.rs`).
    pub fn start_with_faults(token: &str, title: &str, body: &str, faults: Faults) -> FakeGithub {
        FakeGithub::start_inner(token, title, body, Some(Arc::new(faults)))
    }

    fn start_inner(
        token: &str,
        title: &str,
        body: &str,
        faults: Option<Arc<Faults>>,
    ) -> FakeGithub {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (api, blob) =
            rt.block_on(async { (MockServer::start().await, MockServer::start().await) });
        let fronts: Vec<Front> = match &faults {
            Some(f) => vec![
                Front::start("api", *api.address(), f.clone()),
                Front::start("blob", *blob.address(), f.clone()),
            ],
            None => Vec::new(),
        };
        let (api_uri, blob_uri) = match fronts.as_slice() {
            [a, b] => (a.uri(), b.uri()),
            _ => (api.uri(), blob.uri()),
        };
        let mut issue = fixture("issue.json");
        issue["title"] = json!(title);
        issue["body"] = json!(body);
        let world = Arc::new(Mutex::new(World {
            token: token.to_string(),
            api: api_uri,
            blob: blob_uri,
            issues: HashMap::from([(1347, issue)]),
            next_comment_id: 100,
            next_pr: 7,
            next_run_id: 2001,
            next_artifact_id: 501,
            roles: HashMap::from([("octocat".to_string(), "admin".to_string())]),
            actions_may_open_prs: true,
            run_name: written_run_name(),
            token_login: TOKEN_LOGIN.to_string(),
            ..World::default()
        }));
        let fake = FakeGithub {
            rt,
            api,
            blob,
            world,
            faults,
            fronts,
        };
        fake.mount();
        fake
    }

    fn on(&self, server: &'static str, verb: &str, path: &str, f: HandlerFn) {
        let target = if server == "api" {
            &self.api
        } else {
            &self.blob
        };
        let mock = Mock::given(method(verb))
            .and(path_regex(path))
            .respond_with(Handler {
                world: self.world.clone(),
                server,
                f,
            });
        self.rt.block_on(mock.mount(target));
    }

    fn mount(&self) {
        let repo = |path: &str| format!("^/repos/{OWNER}/{REPO}{path}");
        let twirp =
            |call: &str| format!("^/twirp/github.actions.results.api.v1.ArtifactService/{call}$");
        // The API's routes in the order they are mounted (and so matched): the repository's
        // REST routes, GraphQL, the Actions routes and the runner's artifact service (twirp).
        let routes: Vec<(&str, String, HandlerFn)> = vec![
            ("GET", repo("/issues/[0-9]+$"), get_issue),
            ("GET", repo("/issues/[0-9]+/comments$"), list_comments),
            ("POST", repo("/issues/[0-9]+/comments$"), create_comment),
            ("PATCH", repo("/issues/comments/[0-9]+$"), edit_comment),
            ("GET", repo("/issues/comments$"), list_repo_comments),
            ("GET", repo("/collaborators/[^/]+/permission$"), permission),
            ("GET", repo("/pulls$"), list_pulls),
            ("GET", repo("/pulls/[0-9]+$"), get_pull),
            ("POST", repo("/pulls$"), create_pull),
            ("PATCH", repo("/pulls/[0-9]+$"), update_pull),
            ("POST", "^/graphql$".to_string(), graphql),
            (
                "POST",
                repo("/actions/workflows/[^/]+/dispatches$"),
                dispatch,
            ),
            ("GET", repo("/actions/runs/[0-9]+$"), get_run),
            ("POST", repo("/actions/runs/[0-9]+/cancel$"), cancel_run),
            (
                "GET",
                repo("/actions/workflows/[^/]+/runs$"),
                list_workflow_runs,
            ),
            (
                "GET",
                repo("/actions/runs/[0-9]+/artifacts$"),
                list_artifacts,
            ),
            (
                "GET",
                repo("/actions/artifacts/[0-9]+/zip$"),
                download_artifact,
            ),
            ("POST", twirp("CreateArtifact"), create_artifact),
            ("POST", twirp("FinalizeArtifact"), finalize_artifact),
            ("POST", twirp("ListArtifacts"), list_run_artifacts),
        ];
        for (verb, path, f) in routes {
            self.on("api", verb, &path, f);
        }
        self.mount_doctor();
        reviews::mount(self);
        self.on("blob", "PUT", "^/artifacts/.+$", blob_put);
        self.on("blob", "GET", "^/artifacts/.+$", blob_get);
        for server in ["api", "blob"] {
            let target = if server == "api" {
                &self.api
            } else {
                &self.blob
            };
            let mock = Mock::given(any())
                .respond_with(Handler {
                    world: self.world.clone(),
                    server,
                    f: unexpected,
                })
                .with_priority(100);
            self.rt.block_on(mock.mount(target));
        }
    }

    /// Where clients reach the API (the fault front in fault mode).
    pub fn api_uri(&self) -> String {
        self.with(|w| w.api.clone())
    }

    /// The repository this fake serves, as a client names it.
    pub fn target(&self) -> spec_orchestrate::forge::github::GithubTarget {
        let api = self.api_uri();
        spec_orchestrate::forge::github::GithubTarget {
            api_url: api.clone(),
            graphql_url: format!("{api}/graphql"),
            owner: OWNER.into(),
            repo: REPO.into(),
        }
    }

    /// A client of this fake holding `token`.
    pub fn forge(&self, token: &str) -> spec_orchestrate::forge::github::GithubForge {
        spec_orchestrate::forge::github::GithubForge::new(self.target(), token).expect("client")
    }

    /// A runtime token for attempt `attempt` of run `run_id`, as the runner would hand the job:
    /// a JWT whose `scp` claim carries the results-service backend ids.
    pub fn runtime_token(&self, run_id: u64, attempt: u32) -> String {
        self.runtime_token_of_job(run_id, attempt, 0)
    }

    /// [`FakeGithub::runtime_token`] of job `job` (0: the run's first job) of the run: every
    /// job of a run, a matrix leg included, has its own job backend id and shares the run's.
    pub fn runtime_token_of_job(&self, run_id: u64, attempt: u32, job: u32) -> String {
        let run_backend = format!("{run_id:08x}-61c7-4aae-887f-30da475f5f1a");
        let job_backend = format!("{run_id:08x}-040a-{:04x}-2ce8-{attempt:012x}", 0x526b + job);
        let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let claims = json!({
            "scp": format!("Actions.GenericRead:00000000-0000-0000-0000-000000000000 Actions.Results:{run_backend}:{job_backend}"),
            "exp": 4102444800u64,
        });
        let token = format!(
            "{}.{}.c2lnbmF0dXJl",
            e.encode(br#"{"typ":"JWT","alg":"RS256"}"#),
            e.encode(claims.to_string())
        );
        self.world
            .lock()
            .unwrap()
            .runtime_tokens
            .insert(token.clone(), (run_id, run_backend, job_backend));
        token
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut World) -> T) -> T {
        f(&mut self.world.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn set_role(&self, login: &str, role: &str) {
        self.with(|w| w.roles.insert(login.to_string(), role.to_string()));
    }
}

fn unexpected(w: &mut World, req: &Request) -> ResponseTemplate {
    w.violation(format!("unexpected call {} {}", req.method, req.url));
    ResponseTemplate::new(500).set_body_string("unexpected call: not part of the simulated GitHub")
}

fn get_issue(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let n: u64 = segment(req, 0).parse().unwrap_or(0);
    match w.issues.get(&n) {
        Some(i) => {
            let mut i = i.clone();
            i["number"] = json!(n);
            ResponseTemplate::new(200).set_body_json(i)
        }
        None => github_error(404, "Not Found"),
    }
}

fn comment_json(w: &World, issue: u64, id: u64, body: &str, login: &str) -> Value {
    let mut c = fixture("issue_comment.json");
    c["id"] = json!(id);
    c["node_id"] = json!(format!("IC_{id}"));
    c["body"] = json!(body);
    c["user"]["login"] = json!(login);
    c["url"] = json!(format!(
        "{}/repos/{OWNER}/{REPO}/issues/comments/{id}",
        w.api
    ));
    c["html_url"] = json!(format!(
        "https://github.com/{OWNER}/{REPO}/issues/{issue}#issuecomment-{id}"
    ));
    c["issue_url"] = json!(format!("{}/repos/{OWNER}/{REPO}/issues/{issue}", w.api));
    c["created_at"] = json!(now());
    c["updated_at"] = json!(now());
    c
}

/// GitHub's timestamps: RFC 3339 in UTC, whole seconds.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn list_comments(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let n: u64 = segment(req, 1).parse().unwrap_or(0);
    let per_page: usize = query(req, "per_page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let page: usize = query(req, "page").and_then(|v| v.parse().ok()).unwrap_or(1);
    let all: Vec<Value> = w
        .comments
        .iter()
        .filter(|(i, _)| *i == n)
        .map(|(_, c)| c.clone())
        .collect();
    let items: Vec<Value> = all
        .into_iter()
        .skip((page.max(1) - 1) * per_page)
        .take(per_page)
        .collect();
    ResponseTemplate::new(200).set_body_json(Value::Array(items))
}

/// `GET /repos/{owner}/{repo}/issues/comments` ("List issue comments for a repository"):
/// every issue's comments, `sort` `created` or `updated` (`direction` applies only with it),
/// `since` (updated at or after; ISO 8601, anything else is a violation), paginated.
fn list_repo_comments(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let since = match query(req, "since") {
        None => None,
        Some(t) => match chrono::DateTime::parse_from_rfc3339(&t) {
            Ok(t) => Some(t),
            Err(_) => {
                w.violation(format!("list repository comments with since={t}"));
                return github_error(422, "Validation Failed");
            }
        },
    };
    let per_page: usize = query(req, "per_page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let page: usize = query(req, "page").and_then(|v| v.parse().ok()).unwrap_or(1);
    let mut all: Vec<Value> = w
        .comments
        .iter()
        .map(|(_, c)| c.clone())
        .filter(|c| {
            since.is_none_or(|s| {
                chrono::DateTime::parse_from_rfc3339(c["updated_at"].as_str().unwrap_or_default())
                    .is_ok_and(|u| u >= s)
            })
        })
        .collect();
    if let Some(key) = query(req, "sort") {
        let field = if key == "updated" {
            "updated_at"
        } else {
            "created_at"
        };
        all.sort_by_key(|c| {
            (
                c[field].as_str().unwrap_or_default().to_string(),
                c["id"].as_u64(),
            )
        });
        if query(req, "direction").as_deref() != Some("asc") {
            all.reverse();
        }
    }
    let items: Vec<Value> = all
        .into_iter()
        .skip((page.max(1) - 1) * per_page)
        .take(per_page)
        .collect();
    ResponseTemplate::new(200).set_body_json(Value::Array(items))
}

fn create_comment(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let n: u64 = segment(req, 1).parse().unwrap_or(0);
    let Ok(body) = req.body_json::<Value>() else {
        return github_error(400, "Problems parsing JSON");
    };
    let Some(text) = body["body"].as_str() else {
        return github_error(422, "Validation Failed");
    };
    let id = w.next_comment_id;
    w.next_comment_id += 1;
    let login = w.token_login.clone();
    let mut c = comment_json(w, n, id, text, &login);
    c["user"]["type"] = json!("Bot");
    c["author_association"] = json!("NONE");
    w.comments.push((n, c.clone()));
    ResponseTemplate::new(201).set_body_json(c)
}

fn edit_comment(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let id: u64 = segment(req, 0).parse().unwrap_or(0);
    let Ok(body) = req.body_json::<Value>() else {
        return github_error(400, "Problems parsing JSON");
    };
    let Some(text) = body["body"].as_str().map(str::to_string) else {
        return github_error(422, "Validation Failed");
    };
    match w.comments.iter_mut().find(|(_, c)| c["id"] == json!(id)) {
        Some((_, c)) => {
            c["body"] = json!(text);
            c["updated_at"] = json!(now());
            let c = c.clone();
            ResponseTemplate::new(200).set_body_json(c)
        }
        None => github_error(404, "Not Found"),
    }
}

fn permission(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let login = segment(req, 1);
    let Some(role) = w.roles.get(&login).cloned() else {
        return github_error(404, "Not Found");
    };
    let mut p = fixture("collaborator_permission.json");
    p["role_name"] = json!(role);
    p["permission"] = json!(match role.as_str() {
        "admin" => "admin",
        "maintain" | "write" => "write",
        "triage" | "read" => "read",
        _ => "none",
    });
    p["user"]["login"] = json!(login);
    ResponseTemplate::new(200).set_body_json(p)
}

fn list_pulls(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let head = query(req, "head");
    let state = query(req, "state").unwrap_or_else(|| "open".into());
    let items: Vec<Value> = w
        .pulls
        .iter()
        .filter(|p| state == "all" || p["state"].as_str() == Some(state.as_str()))
        .filter(|p| {
            head.as_deref()
                .is_none_or(|h| p["head"]["label"].as_str() == Some(h))
        })
        .cloned()
        .collect();
    ResponseTemplate::new(200).set_body_json(Value::Array(items))
}

/// GitHub refuses a pull request body longer than this many characters (422).
pub const BODY_LIMIT: usize = 65_536;

fn body_too_long(w: &mut World, b: &Value) -> Option<ResponseTemplate> {
    let n = b["body"].as_str().map(|s| s.chars().count()).unwrap_or(0);
    (n > BODY_LIMIT).then(|| {
        w.violation(format!("pull request body of {n} characters"));
        github_error(
            422,
            "Validation Failed: body is too long (maximum is 65536 characters)",
        )
    })
}

fn get_pull(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let n: u64 = segment(req, 0).parse().unwrap_or(0);
    match w.pulls.iter().find(|p| p["number"] == json!(n)) {
        Some(p) => ResponseTemplate::new(200).set_body_json(p.clone()),
        None => github_error(404, "Not Found"),
    }
}

fn create_pull(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let Ok(b) = req.body_json::<Value>() else {
        return github_error(400, "Problems parsing JSON");
    };
    if let Some(refused) = body_too_long(w, &b) {
        return refused;
    }
    let (Some(title), Some(head), Some(base)) =
        (b["title"].as_str(), b["head"].as_str(), b["base"].as_str())
    else {
        return github_error(422, "Validation Failed");
    };
    if !w.actions_may_open_prs && w.token_login == TOKEN_LOGIN {
        // The setting binds the workflow's GITHUB_TOKEN only.
        return github_error(
            403,
            "GitHub Actions is not permitted to create or approve pull requests.",
        );
    }
    let label = format!("{OWNER}:{head}");
    if w.pulls
        .iter()
        .any(|p| p["head"]["label"].as_str() == Some(label.as_str()) && p["state"] == "open")
    {
        return github_error(
            422,
            &format!("Validation Failed: A pull request already exists for {label}."),
        );
    }
    let n = w.next_pr;
    w.next_pr += 1;
    let mut p = fixture("pull_request.json");
    p["id"] = json!(1000 + n);
    p["number"] = json!(n);
    p["node_id"] = json!(format!("PR_kwDOfake{n}"));
    p["state"] = json!("open");
    p["title"] = json!(title);
    p["body"] = b["body"].clone();
    p["draft"] = json!(b["draft"].as_bool().unwrap_or(false));
    p["url"] = json!(format!("{}/repos/{OWNER}/{REPO}/pulls/{n}", w.api));
    p["html_url"] = json!(format!("https://github.com/{OWNER}/{REPO}/pull/{n}"));
    p["head"]["ref"] = json!(head);
    p["head"]["label"] = json!(label);
    p["base"]["ref"] = json!(base);
    p["base"]["label"] = json!(format!("{OWNER}:{base}"));
    w.pulls.push(p.clone());
    ResponseTemplate::new(201).set_body_json(p)
}

fn update_pull(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let n: u64 = segment(req, 0).parse().unwrap_or(0);
    let Ok(b) = req.body_json::<Value>() else {
        return github_error(400, "Problems parsing JSON");
    };
    if let Some(refused) = body_too_long(w, &b) {
        return refused;
    }
    if b.get("draft").is_some() {
        // REST ignores `draft` on update; a client relying on it is wrong.
        w.violation("PATCH pulls with `draft`: REST cannot change draft state".into());
    }
    match w.pulls.iter_mut().find(|p| p["number"] == json!(n)) {
        Some(p) => {
            for k in ["title", "body"] {
                if let Some(v) = b.get(k) {
                    p[k] = v.clone();
                }
            }
            let p = p.clone();
            ResponseTemplate::new(200).set_body_json(p)
        }
        None => github_error(404, "Not Found"),
    }
}

fn graphql(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return ResponseTemplate::new(401).set_body_json(json!({
            "message": "This endpoint requires you to be authenticated.",
            "documentation_url": "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql"
        }));
    }
    let Ok(b) = req.body_json::<Value>() else {
        return ResponseTemplate::new(200)
            .set_body_json(json!({"errors": [{"message": "Problems parsing JSON"}]}));
    };
    w.graphql.push(b.clone());
    let query = b["query"].as_str().unwrap_or_default().to_string();
    if query.contains("viewer") {
        // The workflow's GITHUB_TOKEN acts as github-actions[bot], an App's token as <app>[bot].
        return ResponseTemplate::new(200)
            .set_body_json(json!({"data": {"viewer": {"login": w.token_login}}}));
    }
    if let Some(answer) = reviews::graphql(w, &b, &query) {
        return answer;
    }
    let id = b["variables"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (field, draft) = if query.contains("markPullRequestReadyForReview") {
        ("markPullRequestReadyForReview", false)
    } else if query.contains("convertPullRequestToDraft") {
        ("convertPullRequestToDraft", true)
    } else {
        w.violation(format!("unexpected GraphQL query: {query}"));
        return ResponseTemplate::new(200)
            .set_body_json(json!({"errors": [{"message": "unexpected query"}]}));
    };
    match w.pulls.iter_mut().find(|p| p["node_id"] == json!(id)) {
        Some(p) => {
            p["draft"] = json!(draft);
            let n = p["number"].clone();
            ResponseTemplate::new(200).set_body_json(json!({
                "data": { field: { "pullRequest": { "number": n, "isDraft": draft } } }
            }))
        }
        None => ResponseTemplate::new(200).set_body_json(json!({
            "data": { field: null },
            "errors": [{
                "type": "NOT_FOUND",
                "path": [field],
                "message": format!("Could not resolve to a node with the global id of '{id}'")
            }]
        })),
    }
}

fn dispatch(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let workflow = segment(req, 1);
    let Ok(b) = req.body_json::<Value>() else {
        return github_error(400, "Problems parsing JSON");
    };
    let Some(git_ref) = b["ref"].as_str() else {
        return github_error(422, "Invalid request.\n\n\"ref\" wasn't supplied.");
    };
    let inputs = b["inputs"].clone();
    let ok_inputs = inputs
        .as_object()
        .is_some_and(|o| o.len() <= 25 && o.values().all(Value::is_string));
    if !ok_inputs {
        return github_error(422, "Invalid request: inputs must be at most 25 strings");
    }
    let asks_details = b.get("return_run_details").is_some();
    if let Some(k) = b.as_object().and_then(|o| {
        o.keys()
            .find(|k| !["ref", "inputs", "return_run_details"].contains(&k.as_str()))
    }) {
        return github_error(
            422,
            &format!("Invalid request.\n\n\"{k}\" is not a permitted key."),
        );
    }
    if asks_details && w.run_details == RunDetails::Refused {
        return github_error(
            422,
            "Invalid request.\n\n\"return_run_details\" is not a permitted key.",
        );
    }
    let at = w.dispatches.len();
    w.inject(at, true);
    let run_id = w.next_run_id;
    w.next_run_id += 1;
    let d = Dispatch {
        workflow,
        git_ref: git_ref.to_string(),
        inputs,
        run_id,
        created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    };
    w.dispatches.push(d.clone());
    w.deliveries.push(Delivery::Dispatch(d));
    w.inject(at, false);
    let hold = w.hold_dispatch_reply.unwrap_or_default();
    if b["return_run_details"].as_bool() != Some(true) || w.run_details != RunDetails::Returned {
        return ResponseTemplate::new(204).set_delay(hold);
    }
    let mut d = fixture("workflow_dispatch_run_details.json");
    d["workflow_run_id"] = json!(run_id);
    d["run_url"] = json!(format!(
        "{}/repos/{OWNER}/{REPO}/actions/runs/{run_id}",
        w.api
    ));
    d["html_url"] = json!(format!(
        "https://github.com/{OWNER}/{REPO}/actions/runs/{run_id}"
    ));
    ResponseTemplate::new(200).set_body_json(d).set_delay(hold)
}

/// `GET /repos/{owner}/{repo}/actions/runs/{id}`: the runs this fake knows — the ones it
/// dispatched and the ones a job ran in (it handed them a runtime token) — with the fields of
/// GitHub's documented workflow run that callers read; any other id is a 404.
/// `POST /repos/{owner}/{repo}/actions/runs/{id}/cancel`: 202 Accepted for a run that has not
/// completed (the player then cancels its jobs as GitHub does), 409 for one that has, 404 for a
/// run this fake does not know.
fn cancel_run(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let id: u64 = segment(req, 1).parse().unwrap_or(0);
    let known = w.dispatches.iter().any(|d| d.run_id == id)
        || w.runtime_tokens.values().any(|(r, _, _)| *r == id);
    if !known {
        return github_error(404, "Not Found");
    }
    if w.run_status.get(&id).is_some_and(|(s, _)| s == "completed") {
        return github_error(409, "Cannot cancel a workflow run that is completed.");
    }
    w.cancelled.push(id);
    ResponseTemplate::new(202).set_body_json(json!({}))
}

fn get_run(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let id: u64 = segment(req, 0).parse().unwrap_or(0);
    let dispatched = w.dispatches.iter().find(|d| d.run_id == id);
    let ran = w.runtime_tokens.values().any(|(r, _, _)| *r == id);
    if dispatched.is_none() && !ran {
        return github_error(404, "Not Found");
    }
    let event = if dispatched.is_some() {
        "workflow_dispatch"
    } else {
        "issues"
    };
    let (status, conclusion) = w.run_status.get(&id).cloned().unwrap_or_else(|| {
        if ran {
            ("completed".into(), Some("success".into()))
        } else {
            ("queued".into(), None)
        }
    });
    let display = match dispatched {
        Some(d) => display_title(w, &d.inputs),
        None => "spec-orchestrate".to_string(),
    };
    ResponseTemplate::new(200).set_body_json(json!({
        "id": id,
        "name": "spec-orchestrate",
        "display_title": display,
        "node_id": format!("WFR_{id}"),
        "head_branch": "main",
        "path": format!(".github/workflows/{WORKFLOW}"),
        "run_number": 1,
        "event": event,
        "status": status,
        "conclusion": conclusion,
        "workflow_id": 159038,
        "url": format!("{}/repos/{OWNER}/{REPO}/actions/runs/{id}", w.api),
        "html_url": format!("https://github.com/{OWNER}/{REPO}/actions/runs/{id}"),
        "created_at": "2026-01-01T00:00:00Z",
        "repository": {"id": 1296269, "full_name": format!("{OWNER}/{REPO}")},
    }))
}

/// The `run-name` of examples/workflow.yml (the workflow `init` writes), if it has one.
fn written_run_name() -> Option<String> {
    let path = format!("{}/examples/workflow.yml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).ok()?;
    let w: Value = serde_saphyr::from_str(&text).ok()?;
    w["run-name"].as_str().map(str::to_string)
}

/// A dispatched run's `display_title`: the workflow's `run-name` evaluated for its inputs (the
/// one expression the written workflow uses; any other fails the test), or else, as GitHub
/// titles a `workflow_dispatch` run without one, the workflow's name.
fn display_title(w: &World, inputs: &Value) -> String {
    let Some(template) = &w.run_name else {
        return "spec-orchestrate".into();
    };
    let expr = "${{ github.event.issue.number || inputs.issue }}";
    assert_eq!(
        template.matches("${{").count(),
        template.matches(expr).count(),
        "the fake evaluates only `{expr}` in run-name: {template}"
    );
    template.replace(expr, inputs["issue"].as_str().unwrap_or_default())
}

/// A dispatched run as GitHub's workflow-run object shows it (the fields callers read), with the
/// status the Actions player left (`queued` until it played the run).
fn run_json(w: &World, d: &Dispatch) -> Value {
    let (status, conclusion) = w
        .run_status
        .get(&d.run_id)
        .cloned()
        .unwrap_or_else(|| ("queued".into(), None));
    json!({
        "id": d.run_id,
        "name": "spec-orchestrate",
        "display_title": display_title(w, &d.inputs),
        "node_id": format!("WFR_{}", d.run_id),
        "head_branch": d.git_ref.trim_start_matches("refs/heads/"),
        "path": format!(".github/workflows/{}", d.workflow),
        "event": "workflow_dispatch",
        "status": status,
        "conclusion": conclusion,
        "workflow_id": 159038,
        "url": format!("{}/repos/{OWNER}/{REPO}/actions/runs/{}", w.api, d.run_id),
        "html_url": format!("https://github.com/{OWNER}/{REPO}/actions/runs/{}", d.run_id),
        "created_at": d.created_at,
        "triggering_actor": {"login": w.token_login, "type": "Bot"},
        "repository": {"id": 1296269, "full_name": format!("{OWNER}/{REPO}")},
    })
}

/// `GET /repos/{owner}/{repo}/actions/workflows/{file}/runs` ("List workflow runs for a
/// workflow"): the dispatched runs of that file, newest first, filtered by `event` and by
/// `created` in GitHub's date search syntax (only `>=` + an ISO 8601 time is played; anything
/// else is a violation).
fn list_workflow_runs(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let file = segment(req, 1);
    let since = match query(req, "created") {
        None => None,
        Some(c) => match c
            .strip_prefix(">=")
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        {
            Some(t) => Some(t.with_timezone(&chrono::Utc)),
            None => {
                w.violation(format!("list workflow runs with created={c}"));
                return github_error(422, "Validation Failed");
            }
        },
    };
    let event = query(req, "event");
    let mut items: Vec<Value> = w
        .dispatches
        .iter()
        .filter(|d| d.workflow == file)
        .filter(|_| event.as_deref().is_none_or(|e| e == "workflow_dispatch"))
        .filter(|d| {
            since.is_none_or(|s| {
                chrono::DateTime::parse_from_rfc3339(&d.created_at).is_ok_and(|t| t >= s)
            })
        })
        .map(|d| run_json(w, d))
        .collect();
    items.reverse();
    ResponseTemplate::new(200).set_body_json(json!({
        "total_count": items.len(),
        "workflow_runs": items,
    }))
}

fn list_artifacts(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let run: u64 = segment(req, 1).parse().unwrap_or(0);
    let template = fixture("workflow_run_artifacts.json")["artifacts"][0].clone();
    let items: Vec<Value> = w
        .artifacts
        .iter()
        .filter(|a| a.run_id == run && a.finalized)
        .map(|a| {
            let mut v = template.clone();
            v["id"] = json!(a.id);
            v["node_id"] = json!(format!("MDg6QXJ0aWZhY3Q{}", a.id));
            v["name"] = json!(a.name);
            v["size_in_bytes"] = json!(a.bytes.as_ref().map(|b| b.len()).unwrap_or(0));
            v["url"] = json!(format!(
                "{}/repos/{OWNER}/{REPO}/actions/artifacts/{}",
                w.api, a.id
            ));
            v["archive_download_url"] = json!(format!(
                "{}/repos/{OWNER}/{REPO}/actions/artifacts/{}/zip",
                w.api, a.id
            ));
            v["workflow_run"]["id"] = json!(run);
            if let Some(b) = &a.bytes {
                use sha2::Digest;
                v["digest"] = json!(format!("sha256:{}", hex::encode(sha2::Sha256::digest(b))));
            }
            v
        })
        .collect();
    ResponseTemplate::new(200).set_body_json(json!({
        "total_count": items.len(),
        "artifacts": items,
    }))
}

fn download_artifact(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let id: u64 = segment(req, 1).parse().unwrap_or(0);
    match w.artifacts.iter().find(|a| a.id == id && a.finalized) {
        Some(a) => ResponseTemplate::new(302).insert_header(
            "Location",
            format!(
                "{}/artifacts/{}?sv=2023-11-03&se=2099-01-01&sp=r&sig=readSIGNATURE{id}",
                w.blob, a.blob
            )
            .as_str(),
        ),
        None => github_error(404, "Not Found"),
    }
}

fn twirp_error(code: &str, status: u16, msg: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({"code": code, "msg": msg}))
}

fn runtime_identity(w: &mut World, req: &Request) -> Option<(u64, String, String)> {
    let token = header(req, "authorization")?
        .strip_prefix("Bearer ")?
        .to_string();
    w.runtime_tokens.get(&token).cloned()
}

fn create_artifact(w: &mut World, req: &Request) -> ResponseTemplate {
    let Some((run, run_backend, job_backend)) = runtime_identity(w, req) else {
        w.violation("CreateArtifact without a valid runtime token".into());
        return twirp_error("unauthenticated", 401, "invalid token");
    };
    let Ok(b) = req.body_json::<Value>() else {
        return twirp_error("malformed", 400, "bad JSON");
    };
    if b["workflow_run_backend_id"] != json!(run_backend)
        || b["workflow_job_run_backend_id"] != json!(job_backend)
    {
        w.violation(format!(
            "CreateArtifact with backend ids not from the token: {b}"
        ));
        return twirp_error(
            "permission_denied",
            403,
            "backend ids do not match the token",
        );
    }
    let Some(name) = b["name"].as_str().map(str::to_string) else {
        return twirp_error("invalid_argument", 400, "name is required");
    };
    // What the service checks (actions/toolkit's name validation; the version-7 mime rule).
    if name.is_empty() || name.contains(['"', ':', '<', '>', '|', '*', '?', '\r', '\n', '\\', '/'])
    {
        w.violation(format!("CreateArtifact with an invalid name {name:?}"));
        return twirp_error("invalid_argument", 400, "name contains invalid characters");
    }
    let version = b["version"].as_u64().unwrap_or(0);
    let mime = b["mime_type"].as_str().map(str::to_string);
    let mime_ok = mime.as_deref().is_some_and(|m| {
        let (t, sub) = m.split_once('/').unwrap_or_default();
        !t.is_empty() && !sub.is_empty() && !m.contains(char::is_whitespace)
    });
    if version >= 7 && !mime_ok {
        w.violation(format!(
            "CreateArtifact version {version} without a valid mime_type: {b}"
        ));
        return twirp_error(
            "invalid_argument",
            400,
            "mime_type a valid mime_type is required for this artifact version",
        );
    }
    if version < 7 && mime.is_some() {
        w.violation(format!(
            "CreateArtifact version {version} with a mime_type: {b}"
        ));
        return twirp_error("invalid_argument", 400, "mime_type needs version 7");
    }
    let expires_at = b["expires_at"].as_str().map(str::to_string);
    if let Some(e) = &expires_at {
        let ok = chrono::DateTime::parse_from_rfc3339(e).is_ok_and(|t| {
            t > chrono::Utc::now() && t < chrono::Utc::now() + chrono::Duration::days(401)
        });
        if !ok {
            w.violation(format!("CreateArtifact with a bad expires_at {e}"));
            return twirp_error(
                "invalid_argument",
                400,
                "expires_at is not a valid future timestamp",
            );
        }
    }
    if w.artifacts
        .iter()
        .any(|a| a.run_id == run && a.name == name)
    {
        return twirp_error(
            "already_exists",
            409,
            &format!("an artifact with this name already exists on the workflow run: {name}"),
        );
    }
    let id = w.next_artifact_id;
    w.next_artifact_id += 1;
    let blob = match mime.as_deref() {
        None | Some("application/zip") => format!("{run_backend}/{job_backend}/{name}.zip"),
        Some(_) => format!("{run_backend}/{job_backend}/{name}"),
    };
    w.artifacts.push(Artifact {
        id,
        name,
        run_id: run,
        blob: blob.clone(),
        bytes: None,
        finalized: false,
        version,
        mime,
        expires_at,
        blocks: HashMap::new(),
        committed: HashMap::new(),
        content_type: None,
    });
    ResponseTemplate::new(200).set_body_json(json!({
        "ok": true,
        "signed_upload_url": format!("{}/artifacts/{blob}?sv=2023-11-03&se=2099-01-01&sr=b&sp=cw&sig=uploadSIGNATURE{id}", w.blob),
    }))
}

fn finalize_artifact(w: &mut World, req: &Request) -> ResponseTemplate {
    let Some((run, _, _)) = runtime_identity(w, req) else {
        w.violation("FinalizeArtifact without a valid runtime token".into());
        return twirp_error("unauthenticated", 401, "invalid token");
    };
    let Ok(b) = req.body_json::<Value>() else {
        return twirp_error("malformed", 400, "bad JSON");
    };
    let name = b["name"].as_str().unwrap_or_default().to_string();
    let size = b["size"].as_str().and_then(|s| s.parse::<usize>().ok());
    let hash = b["hash"].as_str().unwrap_or_default().to_string();
    let Some(a) = w
        .artifacts
        .iter_mut()
        .find(|a| a.run_id == run && a.name == name && !a.finalized)
    else {
        return twirp_error("not_found", 404, "no pending artifact with this name");
    };
    let Some(bytes) = a.bytes.clone() else {
        return twirp_error("failed_precondition", 400, "nothing was uploaded");
    };
    use sha2::Digest;
    let want = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&bytes)));
    if size != Some(bytes.len()) || hash != want {
        let msg = format!(
            "size/hash mismatch: got {size:?} {hash}, uploaded {} {want}",
            bytes.len()
        );
        a.finalized = false;
        w.violation(msg.clone());
        return twirp_error("invalid_argument", 400, &msg);
    }
    a.finalized = true;
    let id = a.id;
    ResponseTemplate::new(200).set_body_json(json!({"ok": true, "artifact_id": id.to_string()}))
}

/// The results service's `ListArtifacts` (Twirp JSON, as `@actions/artifact` sends it): the
/// finalized artifacts of the token's run, filtered by `name_filter` and `id_filter`; an
/// artifact whose upload never finished is not listed. `database_id` and `size` are protobuf
/// `int64`s, strings in JSON.
fn list_run_artifacts(w: &mut World, req: &Request) -> ResponseTemplate {
    let Some((run, run_backend, job_backend)) = runtime_identity(w, req) else {
        w.violation("ListArtifacts without a valid runtime token".into());
        return twirp_error("unauthenticated", 401, "invalid token");
    };
    let Ok(b) = req.body_json::<Value>() else {
        return twirp_error("malformed", 400, "bad JSON");
    };
    if b["workflow_run_backend_id"] != json!(run_backend) {
        w.violation(format!(
            "ListArtifacts with a run backend id not from the token: {b}"
        ));
        return twirp_error(
            "permission_denied",
            403,
            "backend ids do not match the token",
        );
    }
    let name = b["name_filter"].as_str();
    let id = b["id_filter"].as_str().and_then(|i| i.parse::<u64>().ok());
    let items: Vec<Value> = w
        .artifacts
        .iter()
        .filter(|a| a.run_id == run && a.finalized)
        .filter(|a| name.is_none_or(|n| n == a.name))
        .filter(|a| id.is_none_or(|i| i == a.id))
        .map(|a| {
            use sha2::Digest;
            let bytes = a.bytes.clone().unwrap_or_default();
            json!({
                "workflow_run_backend_id": run_backend,
                "workflow_job_run_backend_id": job_backend,
                "database_id": a.id.to_string(),
                "name": a.name,
                "size": bytes.len().to_string(),
                "created_at": now(),
                "digest": format!("sha256:{}", hex::encode(sha2::Sha256::digest(&bytes))),
            })
        })
        .collect();
    ResponseTemplate::new(200).set_body_json(json!({ "artifacts": items }))
}

/// A storage error as Azure Blob Storage writes it (XML body, the code in a header too).
fn storage_error(status: u16, code: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("x-ms-error-code", code)
        .set_body_string(format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{code}</Code></Error>"
        ))
}

/// `PUT` to a signed blob URL, in the three forms Azure Blob Storage takes and the official
/// artifact client's storage SDK uses (Azure docs: "Put Blob", "Put Block", "Put Block List"):
/// the whole blob at once (`x-ms-blob-type: BlockBlob`); a block (`comp=block&blockid=…`: a
/// base64 id of at most 64 bytes before encoding, all ids of one blob the same length, kept
/// uncommitted); or the list committing uncommitted blocks in order (`comp=blocklist`, XML
/// `<BlockList><Latest>id</Latest>…</BlockList>`; an id never uploaded is `InvalidBlockList`),
/// which makes the blob, with the content type of `x-ms-blob-content-type`.
fn blob_put(w: &mut World, req: &Request) -> ResponseTemplate {
    if header(req, "authorization").is_some() {
        w.violation("blob PUT carried an Authorization header".into());
        return ResponseTemplate::new(400).set_body_string("AuthenticationFailed");
    }
    let key = req.url.path().trim_start_matches("/artifacts/").to_string();
    let sig_ok = query(req, "sig").is_some_and(|s| s.starts_with("uploadSIGNATURE"));
    let comp = query(req, "comp");
    let Some(index) = w
        .artifacts
        .iter()
        .position(|a| a.blob == key && !a.finalized)
        .filter(|_| sig_ok)
    else {
        w.violation(format!("blob PUT to an unknown or unsigned blob {key}"));
        return ResponseTemplate::new(403).set_body_string("AuthenticationFailed");
    };
    match comp.as_deref() {
        None => {
            if header(req, "x-ms-blob-type").as_deref() != Some("BlockBlob") {
                w.violation("blob PUT without x-ms-blob-type: BlockBlob".into());
                return storage_error(400, "MissingRequiredHeader");
            }
            if let Some(refused) = content_type_refused(w, index, req) {
                return refused;
            }
            let a = &mut w.artifacts[index];
            a.bytes = Some(req.body.clone());
            a.content_type = header(req, "x-ms-blob-content-type");
            ResponseTemplate::new(201)
        }
        Some("block") => put_block(w, index, req),
        Some("blocklist") => put_block_list(w, index, req),
        Some(other) => {
            w.violation(format!("blob PUT with comp={other}"));
            storage_error(400, "InvalidQueryParameterValue")
        }
    }
}

/// An artifact created with a MIME type is served with it: storage takes the blob's type from
/// `x-ms-blob-content-type` of Put Blob or Put Block List, which must carry it.
fn content_type_refused(w: &mut World, index: usize, req: &Request) -> Option<ResponseTemplate> {
    let m = w.artifacts[index].mime.clone()?;
    if header(req, "x-ms-blob-content-type").as_deref() == Some(m.as_str()) {
        return None;
    }
    let key = w.artifacts[index].blob.clone();
    w.violation(format!(
        "blob PUT of {key} without x-ms-blob-content-type: {m}"
    ));
    Some(storage_error(400, "InvalidHeaderValue"))
}

fn put_block(w: &mut World, index: usize, req: &Request) -> ResponseTemplate {
    let id = query(req, "blockid").unwrap_or_default();
    let raw = base64::engine::general_purpose::STANDARD.decode(&id);
    let same_length = w.artifacts[index]
        .blocks
        .keys()
        .all(|k| k.len() == id.len());
    match raw {
        Ok(r) if !r.is_empty() && r.len() <= 64 && same_length => {
            w.artifacts[index].blocks.insert(id, req.body.clone());
            ResponseTemplate::new(201)
        }
        _ => {
            w.violation(format!("Put Block with a bad block id {id:?}"));
            storage_error(400, "InvalidQueryParameterValue")
        }
    }
}

fn put_block_list(w: &mut World, index: usize, req: &Request) -> ResponseTemplate {
    let body = String::from_utf8_lossy(&req.body).to_string();
    let re = regex::Regex::new(
        r"<(Latest|Uncommitted|Committed)>([^<]*)</(?:Latest|Uncommitted|Committed)>",
    )
    .unwrap();
    if !body.contains("<BlockList>") || !body.trim_end().ends_with("</BlockList>") {
        w.violation(format!(
            "Put Block List with a body that is no block list: {body}"
        ));
        return storage_error(400, "InvalidXmlDocument");
    }
    if let Some(refused) = content_type_refused(w, index, req) {
        return refused;
    }
    let mut bytes = Vec::new();
    for cap in re.captures_iter(&body) {
        let (kind, id) = (&cap[1], &cap[2]);
        let a = &w.artifacts[index];
        let found = match kind {
            "Uncommitted" => a.blocks.get(id),
            "Committed" => a.committed.get(id),
            _ => a.blocks.get(id).or_else(|| a.committed.get(id)),
        };
        match found {
            Some(b) => bytes.extend_from_slice(b),
            None => {
                w.violation(format!(
                    "Put Block List names block {id:?} ({kind}), never uploaded"
                ));
                return storage_error(400, "InvalidBlockList");
            }
        }
    }
    let a = &mut w.artifacts[index];
    a.bytes = Some(bytes);
    let named: Vec<String> = re.captures_iter(&body).map(|c| c[2].to_string()).collect();
    let mut committed = HashMap::new();
    for id in named {
        if let Some(b) = a.blocks.get(&id).or_else(|| a.committed.get(&id)) {
            committed.insert(id, b.clone());
        }
    }
    a.committed = committed;
    a.blocks.clear();
    a.content_type = header(req, "x-ms-blob-content-type");
    ResponseTemplate::new(201)
}

fn blob_get(w: &mut World, req: &Request) -> ResponseTemplate {
    if header(req, "authorization").is_some() {
        w.violation("blob GET carried an Authorization header (the token left GitHub)".into());
        return ResponseTemplate::new(400).set_body_string(
            "InvalidAuthenticationInfo: Authentication information is not given in the correct format",
        );
    }
    let key = req.url.path().trim_start_matches("/artifacts/").to_string();
    let sig_ok = query(req, "sig").is_some_and(|s| s.starts_with("readSIGNATURE"));
    match w.artifacts.iter().find(|a| a.blob == key && a.finalized) {
        Some(a) if sig_ok => ResponseTemplate::new(200)
            .insert_header(
                "Content-Type",
                a.mime.as_deref().unwrap_or("application/zip"),
            )
            .set_body_bytes(a.bytes.clone().unwrap_or_default()),
        _ => ResponseTemplate::new(403).set_body_string("AuthenticationFailed"),
    }
}

// ---- doctor's endpoints (`doctor --github`): the repository, a file's contents, a label, the
// repository's Actions workflow settings and a container package, all GET, answered as GitHub
// does: 404 `Not Found` for what is absent (or hidden from the token), 403 for the Actions
// settings without admin access, the classic token's scopes in `X-OAuth-Scopes`.

/// The repository as `doctor --github` sees it.
#[derive(Debug, Clone)]
pub struct DoctorWorld {
    pub default_branch: String,
    pub private: bool,
    /// The token's user's `permissions` on the repository.
    pub push: bool,
    pub admin: bool,
    /// A classic token's scopes (`X-OAuth-Scopes`); `None` for fine-grained and installation
    /// tokens, which GitHub answers without the header.
    pub scopes: Option<String>,
    /// Files on the default branch.
    pub files: Vec<String>,
    pub labels: Vec<String>,
    /// `default_workflow_permissions`: `read` (GitHub's default for new repositories) or `write`.
    pub default_workflow_permissions: String,
    /// The Action image package's `visibility`; `None`: no such package.
    pub image_visibility: Option<String>,
}

impl Default for DoctorWorld {
    fn default() -> Self {
        DoctorWorld {
            default_branch: "main".into(),
            private: false,
            push: true,
            admin: true,
            scopes: None,
            files: vec![".github/workflows/spec-orchestrate.yml".into()],
            labels: vec!["spec-orchestrate".into(), "spec-approved".into()],
            default_workflow_permissions: "read".into(),
            image_visibility: Some("public".into()),
        }
    }
}

impl FakeGithub {
    fn mount_doctor(&self) {
        let repo = format!("^/repos/{OWNER}/{REPO}");
        self.on("api", "GET", &format!("{repo}$"), doctor_repo);
        // Any other repository: GitHub answers 404 whether it does not exist or the token may
        // not see it.
        self.on("api", "GET", "^/repos/[^/]+/[^/]+$", doctor_other_repo);
        self.on(
            "api",
            "GET",
            &format!("{repo}/contents/.+$"),
            doctor_contents,
        );
        self.on("api", "GET", &format!("{repo}/labels/[^/]+$"), doctor_label);
        self.on(
            "api",
            "GET",
            &format!("{repo}/actions/permissions/workflow$"),
            doctor_workflow_permissions,
        );
        self.on(
            "api",
            "GET",
            "^/(orgs|users)/[^/]+/packages/container/[^/]+$",
            doctor_package,
        );
    }
}

fn not_found() -> ResponseTemplate {
    ResponseTemplate::new(404).set_body_json(json!({
        "message": "Not Found",
        "documentation_url": "https://docs.github.com/rest",
        "status": "404"
    }))
}

/// Adds the classic token's scopes, as GitHub does on every answer to one.
fn with_scopes(w: &World, t: ResponseTemplate) -> ResponseTemplate {
    match &w.doctor.scopes {
        Some(s) => t.insert_header("X-OAuth-Scopes", s.as_str()),
        None => t,
    }
}

fn doctor_repo(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let d = w.doctor.clone();
    let body = json!({
        "id": 1296269,
        "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
        "name": REPO,
        "full_name": format!("{OWNER}/{REPO}"),
        "owner": {"login": OWNER, "id": 1, "type": "User"},
        "private": d.private,
        "visibility": if d.private { "private" } else { "public" },
        "html_url": format!("https://github.com/{OWNER}/{REPO}"),
        "default_branch": d.default_branch,
        "permissions": {"admin": d.admin, "maintain": d.admin, "push": d.push, "triage": d.push, "pull": true},
    });
    with_scopes(w, ResponseTemplate::new(200).set_body_json(body))
}

fn doctor_other_repo(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    not_found()
}

fn doctor_contents(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let prefix = format!("/repos/{OWNER}/{REPO}/contents/");
    let path = req.url.path().trim_start_matches(&prefix).to_string();
    let on_default = query(req, "ref").is_none_or(|r| r == w.doctor.default_branch);
    if !on_default || !w.doctor.files.contains(&path) {
        return with_scopes(w, not_found());
    }
    let name = path.rsplit('/').next().unwrap_or_default().to_string();
    with_scopes(
        w,
        ResponseTemplate::new(200).set_body_json(json!({
            "type": "file", "encoding": "base64", "size": 5, "name": name, "path": path,
            "content": "bmFtZTo=", "sha": "3d21ec53a331a6f037a91c368710b99387d012c1",
        })),
    )
}

fn doctor_label(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let raw = segment(req, 0);
    let name = percent_decode(&raw);
    if !w.doctor.labels.contains(&name) {
        return with_scopes(w, not_found());
    }
    with_scopes(
        w,
        ResponseTemplate::new(200).set_body_json(json!({
            "id": 208045946, "node_id": "MDU6TGFiZWwyMDgwNDU5NDY=", "name": name,
            "description": null, "color": "ededed", "default": false,
        })),
    )
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn doctor_workflow_permissions(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    if !w.doctor.admin {
        // What GitHub answers a token without the administration permission.
        return with_scopes(
            w,
            github_error(403, "Resource not accessible by integration"),
        );
    }
    let body = json!({
        "default_workflow_permissions": w.doctor.default_workflow_permissions,
        "can_approve_pull_request_reviews": w.actions_may_open_prs,
    });
    with_scopes(w, ResponseTemplate::new(200).set_body_json(body))
}

fn doctor_package(w: &mut World, req: &Request) -> ResponseTemplate {
    if !w.rest_auth_ok(req) {
        return github_error(401, "Bad credentials");
    }
    let owner_kind = segment(req, 4);
    let owner = segment(req, 3);
    let package = segment(req, 0);
    // The image's owner is an organisation: the users route does not find it.
    match (&w.doctor.image_visibility, owner_kind.as_str()) {
        (Some(v), "orgs") => {
            let body = json!({
                "id": 197, "name": package, "package_type": "container",
                "owner": {"login": owner, "type": "Organization"},
                "visibility": v,
                "url": format!("https://api.github.com/orgs/{owner}/packages/container/{package}"),
                "html_url": format!("https://github.com/orgs/{owner}/packages/container/package/{package}"),
            });
            with_scopes(w, ResponseTemplate::new(200).set_body_json(body))
        }
        _ => with_scopes(w, not_found()),
    }
}
