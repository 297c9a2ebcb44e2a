//! Plays GitHub Actions around the real binary: each job gets a fresh clone of a bare `origin`
//! in a temp dir as its workspace, the event payload in a file, and exactly the environment a
//! Docker action gets (`GITHUB_*`, `ACTIONS_RUNTIME_TOKEN`, `ACTIONS_RESULTS_URL`, inputs as
//! `INPUT_*`, no `GITHUB_TOKEN`), with every service URL pointing at the simulated GitHub. After
//! a job, every `workflow_dispatch` it made becomes the next job, as GitHub would start it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::fake_github::{Delivery, FakeGithub, Injection, OWNER, REPO, WORKFLOW};
use crate::support::{Demo, git};

pub const TOKEN: &str = "ghs_SimRepoToken0123456789abcdefABCD";
pub const ANTHROPIC: &str = "sk-ant-api03-SimAnthropicKey0123456789";
pub const OPENAI: &str = "sk-proj-SimOpenAiKey0123456789abcdef";
pub const ISSUE: u64 = 1347;

/// Wraps every demo agent: records its environment and `.git/config`, and kills the phase
/// process (its parent) once when `crash-<agent>` exists — a crash in the middle of a phase.
/// When `hostile-git` exists (line 1: a dump path, line 2: `plant_git.py`), the agent first
/// plants code for git to run in its checkout.
const SPY: &str = r#"import json, os, signal, sys
root = os.path.dirname(os.path.abspath(__file__))
real = sys.argv[1]
name = os.path.basename(real).replace(".py", "")
spy = os.path.join(root, "spy")
os.makedirs(spy, exist_ok=True)
try:
    cfg = open(os.path.join(os.getcwd(), ".git", "config")).read()
except OSError:
    cfg = ""
with open(os.path.join(spy, "%05d-%s.json" % (len(os.listdir(spy)), name)), "w") as f:
    json.dump({"agent": name, "env": dict(os.environ), "git_config": cfg}, f)
hostile = os.path.join(root, "hostile-git")
if os.path.exists(hostile):
    # A hostile agent: plant code for git to run (tests/fixtures/agents/plant_git.py).
    import subprocess
    dump, plant = open(hostile).read().split("\n")[:2]
    subprocess.run([sys.executable, plant, os.getcwd(), dump], check=True)
flag = os.path.join(root, "crash-" + name)
if os.path.exists(flag):
    os.remove(flag)
    os.kill(os.getppid(), signal.SIGKILL)
    sys.exit(9)
price = os.path.join(root, "price-" + name)
if os.path.exists(price):
    # Report a cost for this call, as a paid agent would.
    import subprocess
    out = subprocess.run([sys.executable, real] + sys.argv[2:], stdin=sys.stdin,
                         stdout=subprocess.PIPE).stdout.decode()
    try:
        report = json.loads(out)
        report.setdefault("usage", {})["usd"] = float(open(price).read())
        out = json.dumps(report)
    except ValueError:
        pass
    sys.stdout.write(out)
    sys.exit(0)
os.execv(sys.executable, [sys.executable, real] + sys.argv[2:])
"#;

/// The files of one job: its directory, the checkout, where the event payload is, and the file
/// commands (`GITHUB_OUTPUT`, the step summary, …).
struct JobFiles {
    dir: PathBuf,
    workspace: PathBuf,
    home: PathBuf,
    event_path: PathBuf,
    commands: PathBuf,
    outputs: PathBuf,
    summary: PathBuf,
}

/// One job as it ran.
#[derive(Debug, Clone)]
pub struct RunLog {
    pub run_id: u64,
    pub attempt: u32,
    /// The job's name as GitHub shows it: `phase`, `implement (T003)` (a matrix leg), `join`.
    pub job: String,
    /// How long its process ran.
    pub wall: Duration,
    pub event: String,
    pub payload: Value,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub outputs: String,
    pub summary: String,
    pub workspace: PathBuf,
    /// Requests this job made to the simulated API server: REST, GraphQL and the results
    /// service (blob storage not counted).
    pub rest_calls: usize,
    /// The command lines of the processes under the attempt's directory once the job had
    /// ended, before the runner's teardown; only looked at (after a grace) for a job stopped by
    /// [`Sim::term_when`].
    pub left_behind: Vec<String>,
}

impl RunLog {
    /// A step output.
    pub fn output(&self, name: &str) -> String {
        self.outputs
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_default()
            .to_string()
    }
}

/// A job of the written workflow's graph (examples/workflow.yml): `phase`, a matrix leg of
/// `legs` (named `implement (<task>)`, as GitHub names a matrix job by its `name:` and its
/// value), or `join`; each with the inputs its step passes.
#[derive(Debug, Clone)]
pub struct JobOf {
    pub name: String,
    /// Its place in the run, for its runtime token's job backend id (0: `phase`).
    pub index: u32,
    pub inputs: Vec<(&'static str, String)>,
}

impl JobOf {
    /// The `phase` job: `fan_out: "true"`, as the written workflow passes it.
    pub fn phase() -> JobOf {
        JobOf {
            name: "phase".into(),
            index: 0,
            inputs: vec![("INPUT_FAN_OUT", "true".into())],
        }
    }

    /// The leg of `task`, the `n`-th of the matrix (from 1).
    pub fn leg(task: &str, n: u32) -> JobOf {
        JobOf {
            name: format!("implement ({task})"),
            index: n,
            inputs: vec![("INPUT_PART", "leg".into()), ("INPUT_TASK", task.into())],
        }
    }

    /// The join, after `legs` legs.
    pub fn join(legs: u32) -> JobOf {
        JobOf {
            name: "join".into(),
            index: legs + 1,
            inputs: vec![("INPUT_PART", "join".into())],
        }
    }

    /// Its directory's suffix.
    fn slug(&self) -> String {
        self.name
            .replace("implement (", "leg-")
            .replace(')', "")
            .replace(' ', "-")
    }
}

/// A job's runner, ready to start.
struct Prepared {
    cmd: assert_cmd::Command,
    dir: PathBuf,
    outputs: PathBuf,
    summary: PathBuf,
    workspace: PathBuf,
}

/// One run of the written workflow as GitHub ran its job graph: the `phase` job's outputs,
/// and each leg's and the join's exit code in their newest attempt.
#[derive(Debug, Clone)]
pub struct Graph {
    pub event: String,
    pub payload: Value,
    /// The run's newest attempt.
    pub attempt: u32,
    /// The `wave` output of the `phase` job (its tasks), empty when it handed none out.
    pub wave: Vec<String>,
    /// Each leg's exit code in its newest attempt.
    pub legs: std::collections::BTreeMap<String, i32>,
    /// The join's, once it ran.
    pub join: Option<i32>,
}

/// How many jobs a concurrency group lets wait (`queue:`): `Single` is GitHub's default — one
/// pending job, which each newcomer cancels and replaces; `Max` lets 100 wait, first in first out,
/// and cancels newcomers beyond that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    Single,
    Max,
}

/// The concurrency rule of a workflow, as its YAML says: at workflow level every run joins the
/// group (a run whose job `if:` skips still takes the pending place first), at job level only
/// jobs that pass `if:` do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub job_level: bool,
    pub queue: Queue,
}

impl Rule {
    /// The rule of a workflow file (the `phase` job's or the workflow's `concurrency:`).
    pub fn of_workflow(yaml: &str) -> Rule {
        let w: serde_json::Value = serde_saphyr::from_str(yaml).expect("the workflow is YAML");
        let job = &w["jobs"]["phase"]["concurrency"];
        let (job_level, c) = if job.is_object() {
            (true, job)
        } else {
            (false, &w["concurrency"])
        };
        assert!(c.is_object(), "the workflow sets a concurrency group");
        assert_ne!(
            c["cancel-in-progress"].as_bool(),
            Some(true),
            "a running job is never cancelled"
        );
        let queue = match c["queue"].as_str() {
            Some("max") => Queue::Max,
            None | Some("single") => Queue::Single,
            Some(q) => panic!("GitHub rejects queue: {q}"),
        };
        Rule { job_level, queue }
    }

    /// The rule the workflow `init` writes (examples/workflow.yml is its template).
    pub fn written() -> Rule {
        let path = format!("{}/examples/workflow.yml", env!("CARGO_MANIFEST_DIR"));
        Rule::of_workflow(&std::fs::read_to_string(path).unwrap())
    }
}

/// What became of a run the player was handed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Its job ran and exited with this code, after this many agent calls.
    Ran { code: i32, agent_calls: usize },
    /// Its job's `if:` was false.
    Skipped,
    /// A newer run took its pending place (or the queue was full).
    Cancelled,
}

/// One run as the player saw it.
#[derive(Debug, Clone)]
pub struct Played {
    pub run_id: u64,
    pub event: String,
    pub fate: Fate,
}

/// The job's `if:` of the written workflow: dispatches, the two labels, and `/spec-orchestrate`
/// comments on issues from the owner, members and collaborators.
pub fn job_condition(event: &str, payload: &Value) -> bool {
    match event {
        // The `init --sweep` workflow lets its schedule through; the player delivers a
        // schedule event only in tests of that workflow.
        "workflow_dispatch" | "schedule" => true,
        "issues" => ["spec-orchestrate", "spec-approved"]
            .contains(&payload["label"]["name"].as_str().unwrap_or_default()),
        "issue_comment" => {
            payload["issue"]["pull_request"].is_null()
                && payload["comment"]["body"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("/spec-orchestrate")
                && ["OWNER", "MEMBER", "COLLABORATOR"].contains(
                    &payload["comment"]["author_association"]
                        .as_str()
                        .unwrap_or_default(),
                )
                || !payload["issue"]["pull_request"].is_null()
                    && payload["comment"]["body"]
                        .as_str()
                        .unwrap_or_default()
                        .starts_with("/spec-orchestrate fix")
                    && ["OWNER", "MEMBER", "COLLABORATOR"].contains(
                        &payload["comment"]["author_association"]
                            .as_str()
                            .unwrap_or_default(),
                    )
        }
        // A review that asks for a round, on our work branch of this repository, by the owner,
        // a member or a collaborator.
        "pull_request_review" => {
            let review = &payload["review"];
            let head = &payload["pull_request"]["head"];
            (review["state"].as_str() == Some("changes_requested")
                || review["body"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("/spec-orchestrate fix"))
                && head["ref"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("spec-orchestrate/")
                && head["repo"]["full_name"].as_str()
                    == Some(&format!(
                        "{}/{}",
                        crate::fake_github::OWNER,
                        crate::fake_github::REPO
                    ))
                && ["OWNER", "MEMBER", "COLLABORATOR"]
                    .contains(&review["author_association"].as_str().unwrap_or_default())
        }
        _ => false,
    }
}

pub struct Sim {
    pub fake: FakeGithub,
    pub demo: Demo,
    pub root: PathBuf,
    pub origin: PathBuf,
    pub runs: Vec<RunLog>,
    pub mode: &'static str,
    pub budget_minutes: Option<String>,
    /// How many dispatches have become jobs.
    pub followed: usize,
    /// How many of the fake's deliveries the player has queued.
    pub delivered: usize,
    /// Every run the player was handed, in order.
    pub played: Vec<Played>,
    /// Run the job as the runner runs a Docker action (tests/cli/sandbox.rs): as root under
    /// Docker's capabilities when the tests are root, the five file commands in
    /// `runs/<run>/file_commands/`, the secrets also under their plain names, agents as uid 65532.
    pub docker: bool,
    /// The next job is SIGKILLed after this long (a runner lost mid-job), once.
    pub kill_after: Option<Duration>,
    /// The next job is SIGKILLed right after GitHub accepted its dispatch, before the answer
    /// reaches it (the fake holds the answer), once.
    pub kill_at_dispatch: bool,
    /// The next job gets SIGTERM (as a cancelled job does) once a process under its directory
    /// has a command line that starts with this, once.
    pub term_when: Option<&'static str>,
    /// Every run whose graph the player ran ([`Sim::graph`]), by run id.
    pub graphs: std::collections::BTreeMap<u64, Graph>,
    /// The leg of this task is lost (its runner's processes SIGKILLed) once this file exists:
    /// a runner lost mid-task, once.
    pub lose_leg_when: Option<(String, PathBuf)>,
    /// The next run that hands a wave out stops after its `phase` job, its legs and join
    /// pending until [`Sim::resume_graph`] (a person acts while the wave is in flight), once.
    pub hold_legs: bool,
    /// The next run's legs end and its join waits until [`Sim::join_now`] (what a leg's runner
    /// uploaded can be looked at, or shaped, before the join reads it), once.
    pub hold_join: bool,
}

/// A process's command line, its arguments joined by spaces (empty when it is gone).
pub fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// A process's parent (`/proc/<pid>/stat`, the field after the command name), if it is alive.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The live processes of the job under `dir`: those working under it and every descendant of
/// one of them. An acceptance round runs the app in a disposable tree outside the workspace
/// (docs/evidence.md), so its working directory alone no longer says whose it is; its ancestry
/// does, while the job lives.
fn family_of(dir: &Path) -> Vec<i32> {
    let roots: std::collections::HashSet<i32> = processes_under(dir).into_iter().collect();
    let mut found: Vec<i32> = roots.iter().copied().collect();
    for pid in live_pids() {
        let mut at = pid;
        for _ in 0..64 {
            match parent_of(at) {
                Some(p) if roots.contains(&p) => {
                    if !roots.contains(&pid) {
                        found.push(pid);
                    }
                    break;
                }
                Some(p) if p > 1 => at = p,
                _ => break,
            }
        }
    }
    found
}

/// The live processes whose working directory is `dir` or under it (`/proc/<pid>/cwd`; a zombie
/// has none). A job runs in its workspace, and so do the phase process and the agents it starts.
pub fn processes_under(dir: &Path) -> Vec<i32> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    live_pids()
        .filter(|pid| *pid != std::process::id() as i32)
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(&dir))
        })
        .collect()
}

/// The pids `/proc` lists now.
fn live_pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
}

/// Watches the job under `dir` and sends its `action` process SIGTERM once a process of the job
/// (see [`family_of`]) has a command line that starts with `needle`; records every process of
/// the job seen at that moment in `seen`, so what outlives the job is found wherever it runs.
/// Returns the flag that ends the watch and its thread.
fn term_when_of(
    dir: &Path,
    needle: &'static str,
    seen: std::sync::Arc<std::sync::Mutex<Vec<i32>>>,
) -> (
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<()>,
) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (dir, done) = (dir.to_path_buf(), stop.clone());
    let watch = std::thread::spawn(move || {
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            let pids = family_of(&dir);
            if pids.iter().any(|p| cmdline(*p).starts_with(needle)) {
                seen.lock().unwrap().extend(pids.iter().copied());
                let job = pids.into_iter().find(|p| {
                    let line = cmdline(*p);
                    let mut args = line.split(' ');
                    args.next().is_some_and(|a| a.ends_with("spec-orchestrate"))
                        && args.next() == Some("action")
                });
                if let Some(pid) = job {
                    eprintln!("--- `{needle}` runs; the job (pid {pid}) gets SIGTERM");
                    // SAFETY: kill has no memory-safety preconditions.
                    unsafe { libc::kill(pid, libc::SIGTERM) };
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    (stop, watch)
}

/// A process's start time (`/proc/<pid>/stat` field 22), so that a pid seen during a job and
/// reused since is never mistaken for it.
fn started_at(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Watches a job's family (its processes and their descendants, [`family_of`]) while it runs,
/// recording each with its start time: a job killed by SIGKILL orphans what it started, and a
/// process started outside the workspace (the app of an acceptance round runs in a tree in the
/// temp dir) is then under no job directory. The runner's teardown of a lost job's container
/// kills those too ([`kill_seen`]).
fn family_watch(
    dir: &Path,
) -> (
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<Vec<(i32, u64)>>,
) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (dir, done) = (dir.to_path_buf(), stop.clone());
    let watch = std::thread::spawn(move || {
        let mut seen: Vec<(i32, u64)> = Vec::new();
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            for pid in family_of(&dir) {
                if let Some(at) = started_at(pid)
                    && !seen.contains(&(pid, at))
                {
                    seen.push((pid, at));
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        seen
    });
    (stop, watch)
}

/// SIGKILLs every process of `seen` still running as the same process (same start time).
fn kill_seen(seen: &[(i32, u64)]) -> usize {
    let mut killed = 0;
    for &(pid, at) in seen {
        if started_at(pid) == Some(at) {
            // SAFETY: kill has no memory-safety preconditions.
            if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                killed += 1;
            }
        }
    }
    killed
}

/// Kills every process under `dir` (SIGKILL, again until none is left), as the runner's
/// teardown of a lost job's container does: a job killed by SIGKILL cannot stop what it
/// started, and that would otherwise run on (an app holding its port, a phase process writing
/// into a workspace nobody reads). Returns how many were killed.
pub fn kill_under(dir: &Path) -> usize {
    let mut killed = 0;
    for _ in 0..100 {
        let pids = processes_under(dir);
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            // SAFETY: kill has no memory-safety preconditions.
            if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                killed += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    killed
}

impl Sim {
    /// The demo repository as `origin`, its config passed through `edit`, agents spied on.
    pub fn new(edit: impl FnOnce(&str, &Path) -> String) -> Sim {
        Sim::new_with(edit, None)
    }

    /// [`Sim::new`] against a simulated GitHub in fault mode (`fault_front.rs`).
    pub fn with_faults(
        faults: crate::fake_github::Faults,
        edit: impl FnOnce(&str, &Path) -> String,
    ) -> Sim {
        Sim::new_with(edit, Some(faults))
    }

    fn new_with(
        edit: impl FnOnce(&str, &Path) -> String,
        faults: Option<crate::fake_github::Faults>,
    ) -> Sim {
        let demo = Demo::new();
        let root = demo.tmp.path().to_path_buf();
        std::fs::write(root.join("spy.py"), SPY).unwrap();
        let config = demo.config().replace(
            "[\"python3\", \"",
            &format!("[\"python3\", \"{}\", \"", root.join("spy.py").display()),
        );
        assert!(config.contains("spy.py"), "{config}");
        demo.write_config(&edit(&config, &root));
        git(&demo.repo, &["add", "-A"]);
        git(
            &demo.repo,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "--quiet",
                "-m",
                "Spy on the agents",
            ],
        );
        let origin = root.join("origin.git");
        git(
            &root,
            &[
                "clone",
                "--quiet",
                "--bare",
                demo.repo.to_str().unwrap(),
                origin.to_str().unwrap(),
            ],
        );
        let body = std::fs::read_to_string(&demo.issue)
            .unwrap()
            .lines()
            .skip(1)
            .collect::<Vec<_>>()
            .join("\n");
        let title = "Add a dark mode toggle";
        let fake = match faults {
            Some(f) => FakeGithub::start_with_faults(TOKEN, title, body.trim(), f),
            None => FakeGithub::start(TOKEN, title, body.trim()),
        };
        Sim {
            fake,
            demo,
            root,
            origin,
            runs: Vec::new(),
            mode: "auto",
            budget_minutes: None,
            followed: 0,
            delivered: 0,
            played: Vec::new(),
            docker: false,
            kill_after: None,
            kill_at_dispatch: false,
            term_when: None,
            graphs: Default::default(),
            lose_leg_when: None,
            hold_legs: false,
            hold_join: false,
        }
    }

    fn repository() -> Value {
        let mut r = crate::fake_github::fixture("pull_request.json")["base"]["repo"].clone();
        r["default_branch"] = json!("main");
        r
    }

    /// The `issues.labeled` payload: the trigger label added by `login`.
    pub fn labeled(&self, login: &str, bot: bool) -> Value {
        let mut e = crate::fake_github::fixture("issues_labeled_event.json");
        let issue = self.fake.with(|w| w.issues[&ISSUE].clone());
        e["issue"] = issue;
        e["issue"]["number"] = json!(ISSUE);
        e["label"]["name"] = json!("spec-orchestrate");
        e["repository"] = Self::repository();
        e["sender"]["login"] = json!(login);
        e["sender"]["type"] = json!(if bot { "Bot" } else { "User" });
        e
    }

    /// An `issue_comment.created` payload.
    pub fn comment(&self, login: &str, body: &str) -> Value {
        let mut e = crate::fake_github::fixture("issue_comment_created_event.json");
        let issue = self.fake.with(|w| w.issues[&ISSUE].clone());
        e["issue"] = issue;
        e["issue"]["number"] = json!(ISSUE);
        e["comment"]["body"] = json!(body);
        // Each comment its own id, from the same sequence as the fake's stored comments.
        let id = self.fake.with(|w| {
            w.next_comment_id += 1;
            w.next_comment_id - 1
        });
        e["comment"]["id"] = json!(id);
        e["comment"]["user"]["login"] = json!(login);
        e["repository"] = Self::repository();
        e["sender"]["login"] = json!(login);
        e
    }

    /// The `workflow_dispatch` payload GitHub delivers for `inputs`.
    pub fn dispatch_payload(inputs: &Value) -> Value {
        json!({
            "inputs": inputs,
            "ref": "refs/heads/main",
            "repository": Self::repository(),
            "sender": {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"},
            "workflow": format!(".github/workflows/{WORKFLOW}"),
        })
    }

    /// Runs one job: the run's `phase` job.
    pub fn run(&mut self, run_id: u64, attempt: u32, event: &str, payload: &Value) -> RunLog {
        self.run_job(run_id, attempt, event, payload, &JobOf::phase())
    }

    /// Runs job `job` of attempt `attempt` of run `run_id` on a runner of its own.
    pub fn run_job(
        &mut self,
        run_id: u64,
        attempt: u32,
        event: &str,
        payload: &Value,
        job: &JobOf,
    ) -> RunLog {
        let p = self.prepare(run_id, attempt, event, payload, job);
        let calls_before = self.api_calls();
        let dir = p.dir.clone();
        let clock = std::time::Instant::now();
        let (out, left_behind) = self.output_of(p.cmd, &dir);
        let wall = clock.elapsed();
        let rest_calls = self.api_calls() - calls_before;
        let (outputs, summary, workspace) = (p.outputs, p.summary, p.workspace);
        let mut log = self.finish(
            (run_id, attempt, event, payload, job),
            (outputs, summary, workspace),
            out,
            (rest_calls, left_behind),
        );
        log.wall = wall;
        if let Some(last) = self.runs.last_mut() {
            last.wall = wall;
        }
        log
    }

    /// The job's runner made ready: a fresh clone of `origin`, the event, the file commands and
    /// the environment of a Docker action, with `job`'s own inputs and runtime token.
    fn prepare(
        &mut self,
        run_id: u64,
        attempt: u32,
        event: &str,
        payload: &Value,
        job: &JobOf,
    ) -> Prepared {
        let JobFiles {
            dir,
            workspace,
            home,
            event_path,
            commands,
            outputs,
            summary,
        } = self.job_files((run_id, attempt, job), payload);
        let api = self.fake.api_uri();
        let runtime = self.fake.runtime_token_of_job(run_id, attempt, job.index);
        let mut cmd = if self.docker {
            crate::sandbox::docker_like_bin()
        } else {
            assert_cmd::Command::cargo_bin("spec-orchestrate").unwrap()
        };
        cmd.env_clear()
            .arg("action")
            .current_dir(&workspace)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("LANG", "C.UTF-8")
            .env("CI", "true")
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_EVENT_NAME", event)
            .env("GITHUB_EVENT_PATH", &event_path)
            .env("GITHUB_REPOSITORY", format!("{OWNER}/{REPO}"))
            .env("GITHUB_REPOSITORY_OWNER", OWNER)
            .env("GITHUB_RUN_ID", run_id.to_string())
            .env("GITHUB_RUN_ATTEMPT", attempt.to_string())
            .env("GITHUB_RUN_NUMBER", "1")
            .env(
                "GITHUB_WORKFLOW_REF",
                format!("{OWNER}/{REPO}/.github/workflows/{WORKFLOW}@refs/heads/main"),
            )
            .env("GITHUB_REF", "refs/heads/main")
            .env("GITHUB_API_URL", &api)
            .env("GITHUB_GRAPHQL_URL", format!("{api}/graphql"))
            .env("GITHUB_SERVER_URL", "https://github.com")
            .env("GITHUB_OUTPUT", &outputs)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("GITHUB_WORKSPACE", &workspace)
            .env("RUNNER_TEMP", dir.join("tmp"))
            .env("ACTIONS_RUNTIME_TOKEN", &runtime)
            .env("ACTIONS_RESULTS_URL", format!("{api}/"))
            .env("INPUT_GITHUB_TOKEN", TOKEN)
            .env("INPUT_ANTHROPIC_API_KEY", ANTHROPIC)
            .env("INPUT_OPENAI_API_KEY", OPENAI)
            .env("INPUT_CONFIG", "")
            .env("INPUT_MODE", self.mode)
            // The simulated job's files live in a private temp dir no other uid may enter;
            // tests/cli/sandbox.rs plays the separate agent identity.
            .env("SPEC_ORCHESTRATE_AGENT_USER", "off")
            .timeout(self.kill_after.take().unwrap_or(Duration::from_secs(240)));
        if let Some(m) = &self.budget_minutes {
            cmd.env("INPUT_JOB_BUDGET_MINUTES", m);
        }
        if self.docker {
            for name in ["set_env", "add_path", "save_state"] {
                std::fs::write(commands.join(name), "").unwrap();
            }
            cmd.env("SPEC_ORCHESTRATE_AGENT_USER", "65532")
                .env(
                    "PATH",
                    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                )
                .env("GITHUB_ENV", commands.join("set_env"))
                .env("GITHUB_PATH", commands.join("add_path"))
                .env("GITHUB_STATE", commands.join("save_state"))
                .env("GITHUB_TOKEN", TOKEN)
                .env("ANTHROPIC_API_KEY", ANTHROPIC)
                .env("OPENAI_API_KEY", OPENAI);
        }
        for (k, v) in &job.inputs {
            cmd.env(k, v);
        }
        Prepared {
            cmd,
            dir,
            outputs,
            summary,
            workspace,
        }
    }

    /// Lays out the files of `job` of run `run_id`, attempt `attempt`: a fresh clone of the
    /// origin, the event payload, and the file commands the runner gives a step.
    fn job_files(&self, (run_id, attempt, job): (u64, u32, &JobOf), payload: &Value) -> JobFiles {
        let dir = match job.index {
            0 => self.root.join(format!("runs/{run_id}-a{attempt}")),
            _ => self
                .root
                .join(format!("runs/{run_id}-a{attempt}-{}", job.slug())),
        };
        std::fs::create_dir_all(&dir).unwrap();
        let workspace = dir.join("workspace");
        git(
            &dir,
            &[
                "clone",
                "--quiet",
                self.origin.to_str().unwrap(),
                workspace.to_str().unwrap(),
            ],
        );
        let home = self.root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let event_path = dir.join("event.json");
        std::fs::write(&event_path, serde_json::to_vec_pretty(payload).unwrap()).unwrap();
        let commands = if self.docker {
            dir.join("file_commands")
        } else {
            dir.clone()
        };
        std::fs::create_dir_all(&commands).unwrap();
        let outputs = commands.join("github_output");
        let summary = commands.join("step_summary");
        std::fs::write(&outputs, "").unwrap();
        std::fs::write(&summary, "").unwrap();
        JobFiles {
            dir,
            workspace,
            home,
            event_path,
            commands,
            outputs,
            summary,
        }
    }

    /// The log of a job that ended with `out`; the run's status is GitHub's once its last job
    /// ended (a `phase` job that handed a wave out leaves its run in progress).
    fn finish(
        &mut self,
        (run_id, attempt, event, payload, job): (u64, u32, &str, &Value, &JobOf),
        (outputs, summary, workspace): (PathBuf, PathBuf, PathBuf),
        out: std::process::Output,
        (rest_calls, left_behind): (usize, Vec<String>),
    ) -> RunLog {
        let log = RunLog {
            run_id,
            attempt,
            job: job.name.clone(),
            wall: Duration::ZERO,
            event: event.to_string(),
            payload: payload.clone(),
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            outputs: std::fs::read_to_string(&outputs).unwrap_or_default(),
            summary: std::fs::read_to_string(&summary).unwrap_or_default(),
            workspace,
            rest_calls,
            left_behind,
        };
        let conclusion = if log.code == 0 { "success" } else { "failure" };
        self.set_run_status(run_id, "completed", Some(conclusion));
        eprintln!(
            "--- run {run_id} attempt {attempt} {} ({event}) exit {} phase={} next_run={} rest_calls={}",
            job.name,
            log.code,
            log.output("phase"),
            log.output("next_run"),
            log.rest_calls
        );
        if log.code != 0 {
            eprintln!("{}", log.stderr);
        }
        self.runs.push(log.clone());
        log
    }

    /// Runs the job of the attempt whose directory is `dir` to its end, killed at the dispatch
    /// when [`Sim::kill_at_dispatch`] says so; a job killed by a signal has what it started
    /// torn down with its container.
    fn output_of(
        &mut self,
        mut cmd: assert_cmd::Command,
        dir: &Path,
    ) -> (std::process::Output, Vec<String>) {
        let mut watchers = Vec::new();
        if std::mem::take(&mut self.kill_at_dispatch) {
            watchers.push(self.kill_at_dispatch_of(dir));
        }
        let term = self.term_when.take();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        if let Some(needle) = term {
            watchers.push(term_when_of(dir, needle, seen.clone()));
        }
        let (family_stop, family) = family_watch(dir);
        let out = cmd.output().expect("the binary runs");
        for (stop, watch) in watchers {
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            watch.join().unwrap();
        }
        family_stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let family = family.join().unwrap();
        let mut left = Vec::new();
        if term.is_some() {
            // What the job's own stop did not end within a moment, it left behind.
            for _ in 0..50 {
                let mut pids = processes_under(dir);
                pids.extend(seen.lock().unwrap().iter().copied());
                pids.sort_unstable();
                pids.dedup();
                left = pids
                    .into_iter()
                    .map(cmdline)
                    .filter(|line| !line.is_empty())
                    .collect();
                if left.is_empty() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        if std::os::unix::process::ExitStatusExt::signal(&out.status).is_some() {
            let killed = kill_under(dir) + kill_seen(&family);
            if killed > 0 {
                eprintln!(
                    "--- {}: killed {killed} processes the job left",
                    dir.display()
                );
            }
        }
        (out, left)
    }

    /// Holds the answer of the next dispatch and kills every process of the job under `dir`
    /// once GitHub has accepted it; returns the flag that ends the watch and its thread.
    fn kill_at_dispatch_of(
        &self,
        dir: &Path,
    ) -> (
        std::sync::Arc<std::sync::atomic::AtomicBool>,
        std::thread::JoinHandle<()>,
    ) {
        let before = self.fake.with(|w| {
            w.hold_dispatch_reply = Some(Duration::from_secs(60));
            w.dispatches.len()
        });
        let world = self.fake.world.clone();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (dir, done) = (dir.to_path_buf(), stop.clone());
        let watch = std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let accepted = world.lock().unwrap().dispatches.len() > before;
                if accepted {
                    eprintln!("--- the dispatch was accepted; the runner is lost");
                    kill_under(&dir);
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            world.lock().unwrap().hold_dispatch_reply = None;
        });
        (stop, watch)
    }

    /// Runs every dispatch not yet run, in order, until none is left (at most `max` jobs).
    /// With `rerun_failed`, a failed job is re-run once with the same inputs (next attempt),
    /// like "Re-run failed jobs".
    pub fn follow(&mut self, max: usize, rerun_failed: bool) {
        self.follow_at_most(max, rerun_failed);
        let left = self.fake.with(|w| w.dispatches.len()) - self.followed;
        assert_eq!(left, 0, "the chain did not stop within {max} runs");
    }

    /// Runs at most `max` pending dispatches; returns how many ran.
    pub fn follow_at_most(&mut self, max: usize, rerun_failed: bool) -> usize {
        let mut ran = 0;
        for _ in 0..max {
            let next = self.fake.with(|w| w.dispatches.get(self.followed).cloned());
            let Some(d) = next else {
                return ran;
            };
            ran += 1;
            self.followed += 1;
            let payload = Self::dispatch_payload(&d.inputs);
            let log = self.run(d.run_id, 1, "workflow_dispatch", &payload);
            if log.code != 0 && rerun_failed {
                self.run(d.run_id, 2, "workflow_dispatch", &payload);
            }
        }
        ran
    }

    /// What GitHub says of run `run_id` (`GET …/actions/runs/{id}`) from now on.
    pub fn set_run_status(&self, run_id: u64, status: &str, conclusion: Option<&str>) {
        self.fake.with(|w| {
            w.run_status
                .insert(run_id, (status.to_string(), conclusion.map(str::to_string)))
        });
    }

    /// The `schedule` payload GitHub delivers for the `init --sweep` workflow's cron.
    pub fn schedule_payload() -> Value {
        json!({"schedule": "41 * * * *", "repository": Self::repository()})
    }

    /// Delivers an event (for the player) as GitHub would when it happens.
    pub fn deliver(&self, event: &str, payload: Value) {
        self.fake.with(|w| {
            w.deliveries
                .push(Delivery::Event(event.to_string(), payload))
        });
    }

    /// A person posts a comment now (between jobs); its event is delivered.
    pub fn post(&self, login: &str, association: &str, body: &str) {
        self.fake
            .with(|w| w.post_as(ISSUE, login, association, body));
    }

    /// A person posts a comment during the job that sends the `at`-th dispatch of the test
    /// (0 = the first): just `before` that dispatch is queued, or just after.
    pub fn post_during(&self, at: usize, before: bool, login: &str, association: &str, body: &str) {
        self.fake.with(|w| {
            w.injections.push(Injection {
                at,
                before,
                login: login.to_string(),
                association: association.to_string(),
                body: body.to_string(),
            })
        });
    }

    /// The `issue_comment.created` payload of a comment the fake stored.
    fn comment_event(&self, comment: &Value) -> Value {
        let mut e = self.comment(
            comment["user"]["login"].as_str().unwrap(),
            comment["body"].as_str().unwrap(),
        );
        e["comment"] = comment.clone();
        e["sender"] = comment["user"].clone();
        e
    }

    /// The next deliveries as (run id, event, payload); comment and other events get a run id
    /// of their own.
    fn take_deliveries(&mut self) -> Vec<(u64, String, Value)> {
        let new: Vec<Delivery> = self.fake.with(|w| w.deliveries[self.delivered..].to_vec());
        self.delivered += new.len();
        new.into_iter()
            .map(|d| match d {
                Delivery::Dispatch(d) => (
                    d.run_id,
                    "workflow_dispatch".to_string(),
                    Self::dispatch_payload(&d.inputs),
                ),
                Delivery::Comment(_, c) => (
                    self.new_run_id(),
                    "issue_comment".into(),
                    self.comment_event(&c),
                ),
                Delivery::Event(e, p) => (self.new_run_id(), e, p),
            })
            .collect()
    }

    /// Requests sent to the simulated API server so far (REST, GraphQL, results service): in
    /// fault mode as the front saw them, faulted ones included.
    fn api_calls(&self) -> usize {
        match &self.fake.faults {
            Some(f) => f
                .seen
                .lock()
                .unwrap()
                .iter()
                .filter(|s| s.server == "api")
                .count(),
            None => self
                .fake
                .with(|w| w.requests.iter().filter(|r| r.server == "api").count()),
        }
    }

    pub fn new_run_id(&self) -> u64 {
        self.fake.with(|w| {
            w.next_run_id += 1;
            w.next_run_id - 1
        })
    }

    pub fn agent_calls(&self) -> usize {
        std::fs::read_dir(self.root.join("spy"))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// Plays GitHub Actions with one concurrency group (this test has one issue) under `rule`:
    /// every delivery becomes a run that joins the group (or is skipped by `if:`), the pending
    /// ones start in order, one at a time, until nothing is left (at most `max` jobs run).
    pub fn play(&mut self, rule: Rule, max: usize) {
        let mut pending: std::collections::VecDeque<(u64, String, Value)> = Default::default();
        let mut jobs = 0;
        loop {
            for (run_id, event, payload) in self.take_deliveries() {
                if rule.job_level && !job_condition(&event, &payload) {
                    self.set_run_status(run_id, "completed", Some("skipped"));
                    self.played.push(Played {
                        run_id,
                        event,
                        fate: Fate::Skipped,
                    });
                    continue;
                }
                let cancelled = match rule.queue {
                    Queue::Single => pending.pop_front(),
                    Queue::Max if pending.len() >= 100 => {
                        Some((run_id, event.clone(), payload.clone()))
                    }
                    Queue::Max => None,
                };
                if let Some((id, ev, _)) = cancelled {
                    eprintln!("--- run {id} ({ev}) cancelled: a newer run took its place");
                    self.set_run_status(id, "completed", Some("cancelled"));
                    self.played.push(Played {
                        run_id: id,
                        event: ev,
                        fate: Fate::Cancelled,
                    });
                }
                if rule.queue == Queue::Single || pending.len() < 100 {
                    pending.push_back((run_id, event, payload));
                }
            }
            let Some((run_id, event, payload)) = pending.pop_front() else {
                return;
            };
            if !rule.job_level && !job_condition(&event, &payload) {
                eprintln!("--- run {run_id} ({event}) skipped by if:");
                self.set_run_status(run_id, "completed", Some("skipped"));
                self.played.push(Played {
                    run_id,
                    event,
                    fate: Fate::Skipped,
                });
                continue;
            }
            jobs += 1;
            assert!(jobs <= max, "the chain did not stop within {max} jobs");
            let before = self.agent_calls();
            let log = self.run(run_id, 1, &event, &payload);
            let agent_calls = self.agent_calls() - before;
            self.played.push(Played {
                run_id,
                event,
                fate: Fate::Ran {
                    code: log.code,
                    agent_calls,
                },
            });
        }
    }

    /// Prints what the chain cost in jobs (each a runner start, an image pull and at least a
    /// billed minute on GitHub) and REST calls per job; returns the number of jobs.
    pub fn print_jobs_per_chain(&self, label: &str) -> usize {
        let calls: Vec<usize> = self.runs.iter().map(|r| r.rest_calls).collect();
        eprintln!(
            "jobs per chain ({label}): {} jobs; REST calls per job: {calls:?} ({} in all)",
            self.runs.len(),
            calls.iter().sum::<usize>()
        );
        self.runs.len()
    }

    /// Commit subjects on origin's work branch, oldest first.
    pub fn branch_log(&self, branch: &str) -> Vec<String> {
        git(&self.origin, &["log", "--reverse", "--format=%s", branch])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Unpacked entries of every uploaded artifact: (artifact name, path, bytes).
    pub fn artifact_entries(&self) -> Vec<(String, String, Vec<u8>)> {
        use std::io::Read;
        let arts = self.fake.with(|w| w.artifacts.clone());
        let mut out = Vec::new();
        for a in arts.into_iter().filter(|a| a.is_zip()) {
            let Some(bytes) = a.bytes else { continue };
            let mut z =
                zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("artifact is a zip");
            for i in 0..z.len() {
                let mut f = z.by_index(i).unwrap();
                let name = f.name().unwrap().to_string();
                let mut b = Vec::new();
                f.read_to_end(&mut b).unwrap();
                out.push((a.name.clone(), name, b));
            }
        }
        out
    }

    /// Every place a secret must never be: request bodies and URLs sent to the fake (and any
    /// header sent to storage), job logs (minus the runner's own `::add-mask::` commands, which
    /// the runner consumes and never shows), outputs, summaries, state files, artifacts, the
    /// origin repository, every workspace's `.git/config`, and what agents could read.
    pub fn assert_no_secrets(&self) {
        self.search_secrets(true);
    }

    /// As [`Sim::assert_no_secrets`], for jobs that never reached an agent.
    pub fn assert_no_secrets_in_logs_only(&self) {
        self.search_secrets(false);
    }

    fn search_secrets(&self, agents_ran: bool) {
        let secrets = [TOKEN, ANTHROPIC, OPENAI];
        let mut checked = 0usize;
        let mut check = |what: &str, text: &[u8], secrets: &[&str]| {
            checked += 1;
            assert_hidden(what, text, secrets);
        };
        let runtime_tokens: Vec<String> = self
            .fake
            .with(|w| w.runtime_tokens.keys().cloned().collect());
        let mut all: Vec<&str> = secrets.to_vec();
        all.extend(runtime_tokens.iter().map(String::as_str));
        for r in self.fake.with(|w| w.requests.clone()) {
            check(
                &format!("the body of {} {}", r.method, r.url),
                &r.body,
                &all,
            );
            check(&format!("the URL {}", r.url), r.url.as_bytes(), &all);
            if r.server == "blob" {
                for (k, v) in &r.headers {
                    check(&format!("header {k} sent to storage"), v.as_bytes(), &all);
                }
            }
        }
        for run in &self.runs {
            let log: String = run
                .stdout
                .lines()
                .filter(|l| !l.starts_with("::add-mask::"))
                .collect::<Vec<_>>()
                .join("\n");
            check(
                &format!("stdout of run {}", run.run_id),
                log.as_bytes(),
                &all,
            );
            check(
                &format!("stderr of run {}", run.run_id),
                run.stderr.as_bytes(),
                &all,
            );
            check("outputs", run.outputs.as_bytes(), &all);
            check("the job summary", run.summary.as_bytes(), &all);
            let cfg = std::fs::read(run.workspace.join(".git/config")).unwrap_or_default();
            check("a workspace's .git/config", &cfg, &all);
            for entry in walkdir::WalkDir::new(run.workspace.join(".specs"))
                .into_iter()
                .flatten()
            {
                if entry.file_type().is_file() {
                    let bytes = std::fs::read(entry.path()).unwrap_or_default();
                    check(&entry.path().display().to_string(), &bytes, &all);
                }
            }
        }
        for (art, path, bytes) in self.artifact_entries() {
            check(&format!("{path} in artifact {art}"), &bytes, &all);
        }
        for a in self.fake.with(|w| w.artifacts.clone()) {
            if let (false, Some(bytes)) = (a.is_zip(), &a.bytes) {
                check(&format!("unzipped artifact {}", a.name), bytes, &all);
            }
        }
        let history = git(&self.origin, &["log", "--all", "-p", "--format=%H %s%n%b"]);
        check("origin's history", history.as_bytes(), &all);
        self.assert_agents_saw_no_token(&runtime_tokens, agents_ran);
        assert!(checked > 10, "searched {checked} places");
    }

    /// Agents see none of the GitHub or runner tokens (`runtime_tokens`), and no key of another
    /// vendor; the spy saw agents exactly when `agents_ran`.
    fn assert_agents_saw_no_token(&self, runtime_tokens: &[String], agents_ran: bool) {
        let spy = self.root.join("spy");
        let mut agents_seen = 0;
        for entry in std::fs::read_dir(&spy).into_iter().flatten().flatten() {
            agents_seen += 1;
            let bytes = std::fs::read(entry.path()).unwrap();
            let forbidden: Vec<&str> = [TOKEN]
                .into_iter()
                .chain(runtime_tokens.iter().map(String::as_str))
                .collect();
            assert_hidden("an agent's environment or .git/config", &bytes, &forbidden);
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            let keys: Vec<&String> = v["env"].as_object().unwrap().keys().collect();
            assert!(
                keys.iter().all(|k| !k.starts_with("INPUT_")
                    && !k.starts_with("ACTIONS_")
                    && k.as_str() != "GITHUB_TOKEN"),
                "an agent saw {keys:?}"
            );
            assert!(
                !String::from_utf8_lossy(&bytes).contains(ANTHROPIC)
                    && !String::from_utf8_lossy(&bytes).contains(OPENAI),
                "the demo's command agents get no vendor key"
            );
        }
        assert_eq!(
            agents_seen > 0,
            agents_ran,
            "the spy saw the agents iff they ran"
        );
    }
}

/// A path under the workspace of `log`.
pub fn in_workspace(log: &RunLog, rel: &str) -> PathBuf {
    log.workspace.join(Path::new(rel))
}

/// The job graph of the written workflow, checked against what [`Sim::graph`] plays: `legs`
/// needs `phase` and is a matrix over its `wave` output (`fail-fast: false`, `max-parallel`
/// from its `parallel` output) in no concurrency group; `join` needs both, runs `always()` while
/// a wave was handed out, and waits in the issue's group.
pub fn check_written_graph() {
    let path = format!("{}/examples/workflow.yml", env!("CARGO_MANIFEST_DIR"));
    let w: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let (phase, legs, join) = (&w["jobs"]["phase"], &w["jobs"]["legs"], &w["jobs"]["join"]);
    assert_eq!(
        phase["outputs"]["wave"],
        json!("${{ steps.spec-orchestrate.outputs.wave }}")
    );
    assert_eq!(legs["needs"], json!("phase"));
    assert_eq!(legs["name"], json!("implement"));
    assert_eq!(legs["strategy"]["fail-fast"], json!(false));
    assert_eq!(
        legs["strategy"]["matrix"]["task"],
        json!("${{ fromJSON(needs.phase.outputs.wave) }}")
    );
    assert_eq!(
        legs["strategy"]["max-parallel"],
        json!("${{ fromJSON(needs.phase.outputs.parallel) }}")
    );
    assert!(
        legs["concurrency"].is_null(),
        "legs never queue in the issue's group"
    );
    assert_eq!(join["needs"], json!(["phase", "legs"]));
    assert_eq!(
        join["if"],
        json!("always() && needs.phase.outputs.wave != ''")
    );
    assert_eq!(join["concurrency"]["queue"], json!("max"));
    let steps = |job: &Value| job["steps"].as_array().unwrap()[1]["with"].clone();
    assert_eq!(steps(phase)["fan_out"], json!("true"));
    assert_eq!(steps(legs)["part"], json!("leg"));
    assert_eq!(steps(legs)["task"], json!("${{ matrix.task }}"));
    assert_eq!(steps(join)["part"], json!("join"));
}

impl Sim {
    /// Runs run `run_id` (attempt 1) as GitHub runs the written workflow's job graph: the
    /// `phase` job; when its output `wave` names tasks, the `legs` matrix — one leg per task,
    /// each on a fresh runner, all started at once, none cancelled when another fails
    /// (`fail-fast: false`) — and then the `join` (`needs` both, `if: always()`: it runs
    /// whatever became of the legs). The run stays `in_progress` until its last job ended.
    pub fn graph(&mut self, run_id: u64, event: &str, payload: &Value) -> Graph {
        check_written_graph();
        let phase = self.run(run_id, 1, event, payload);
        let wave: Vec<String> = match phase.output("wave").as_str() {
            "" => Vec::new(),
            w => serde_json::from_str(w).expect("the wave output is a JSON list"),
        };
        self.graphs.insert(
            run_id,
            Graph {
                event: event.to_string(),
                payload: payload.clone(),
                attempt: 1,
                wave: wave.clone(),
                legs: Default::default(),
                join: None,
            },
        );
        if !wave.is_empty() {
            if std::mem::take(&mut self.hold_legs) {
                self.set_run_status(run_id, "in_progress", None);
            } else {
                self.legs_and_join(run_id, 1, &wave);
            }
        }
        self.graphs[&run_id].clone()
    }

    /// The legs and the join of run `run_id`, held by [`Sim::hold_legs`], as GitHub starts them
    /// now: when the run was cancelled meanwhile (`POST …/cancel`), no leg starts (a pending job
    /// of a cancelled run is cancelled), and the join, whose `if:` holds `always()`, runs all
    /// the same.
    pub fn resume_graph(&mut self, run_id: u64) -> Graph {
        let wave = self.graphs[&run_id].wave.clone();
        let cancelled = self.fake.with(|w| w.cancelled.contains(&run_id));
        if cancelled {
            let g = self.graphs.get_mut(&run_id).unwrap();
            for t in &wave {
                g.legs.insert(t.clone(), -1);
            }
            eprintln!("--- run {run_id} was cancelled: its legs never start");
            self.join_of(run_id, 1);
        } else {
            self.legs_and_join(run_id, 1, &wave);
        }
        self.graphs[&run_id].clone()
    }

    /// A person with write access comments `body` on the issue now, and its run plays its job
    /// graph; returns the run's id.
    pub fn comment_graph(&mut self, login: &str, body: &str) -> u64 {
        let c = self.fake.with(|w| w.post_as(ISSUE, login, "OWNER", body));
        let payload = self.comment_event(&c);
        let run_id = self.new_run_id();
        self.graph(run_id, "issue_comment", &payload);
        run_id
    }

    /// "Re-run failed jobs" on run `run_id`: the next attempt runs the legs that failed and
    /// the join (their dependent; or failed itself). The `phase` job and the legs that
    /// succeeded are not run again, and the join reads the `phase` job's outputs as the attempt
    /// that made them left them, as GitHub keeps them; `GITHUB_RUN_ATTEMPT` is the new attempt
    /// in every job it runs.
    pub fn rerun_failed_jobs(&mut self, run_id: u64) -> Graph {
        let g = self.graphs[&run_id].clone();
        let failed: Vec<String> = g
            .legs
            .iter()
            .filter(|(_, code)| **code != 0)
            .map(|(t, _)| t.clone())
            .collect();
        assert!(
            !failed.is_empty() || g.join.is_some_and(|c| c != 0),
            "no job of run {run_id} failed"
        );
        self.next_attempt(run_id, &failed)
    }

    /// "Re-run this job" on run `run_id`'s leg of `task` (`None`: the join), after it
    /// succeeded: the next attempt runs it and the jobs that need it (a leg's join).
    pub fn rerun_job(&mut self, run_id: u64, task: Option<&str>) -> Graph {
        let tasks: Vec<String> = task.into_iter().map(str::to_string).collect();
        self.next_attempt(run_id, &tasks)
    }

    fn next_attempt(&mut self, run_id: u64, legs: &[String]) -> Graph {
        let attempt = {
            let g = self.graphs.get_mut(&run_id).unwrap();
            g.attempt += 1;
            g.attempt
        };
        self.legs_and_join(run_id, attempt, legs);
        self.graphs[&run_id].clone()
    }

    /// Attempt `attempt` of run `run_id` runs the legs of `tasks` at once, then the join.
    fn legs_and_join(&mut self, run_id: u64, attempt: u32, tasks: &[String]) {
        self.set_run_status(run_id, "in_progress", None);
        let g = self.graphs[&run_id].clone();
        let jobs: Vec<JobOf> = tasks
            .iter()
            .map(|t| {
                let n = g.wave.iter().position(|w| w == t).unwrap() as u32 + 1;
                JobOf::leg(t, n)
            })
            .collect();
        let prepared: Vec<Prepared> = jobs
            .iter()
            .map(|j| self.prepare(run_id, attempt, &g.event, &g.payload, j))
            .collect();
        let lose = self.lose_leg_when.take();
        let calls_before = self.api_calls();
        let mut rest = Vec::new();
        let mut cmds = Vec::new();
        for (p, job) in prepared.into_iter().zip(&jobs) {
            cmds.push((p.cmd, p.dir.clone(), job.name.clone()));
            rest.push((p.outputs, p.summary, p.workspace, p.dir));
        }
        let outs: Vec<(std::process::Output, Duration)> = std::thread::scope(|s| {
            if let Some((task, file)) = &lose {
                let dir = cmds
                    .iter()
                    .find(|c| c.2 == format!("implement ({task})"))
                    .map(|c| c.1.clone());
                if let Some(dir) = dir {
                    let file = file.clone();
                    s.spawn(move || {
                        let deadline = std::time::Instant::now() + Duration::from_secs(200);
                        while !file.exists() && std::time::Instant::now() < deadline {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        eprintln!("--- the runner of {} is lost", dir.display());
                        kill_under(&dir);
                    });
                }
            }
            let handles: Vec<_> = cmds
                .into_iter()
                .map(|(mut cmd, _, _)| {
                    s.spawn(move || {
                        let clock = std::time::Instant::now();
                        let out = cmd.output().expect("the binary runs");
                        (out, clock.elapsed())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // The legs ran at once: their calls are counted together, shared among them.
        let calls = self.api_calls() - calls_before;
        for (i, (((out, wall), (outputs, summary, workspace, dir)), job)) in
            outs.into_iter().zip(rest).zip(&jobs).enumerate()
        {
            if std::os::unix::process::ExitStatusExt::signal(&out.status).is_some() {
                kill_under(&dir);
            }
            let share = calls / jobs.len() + usize::from(i < calls % jobs.len());
            let log = self.finish(
                (run_id, attempt, &g.event, &g.payload, job),
                (outputs, summary, workspace),
                out,
                (share, Vec::new()),
            );
            if let Some(last) = self.runs.last_mut() {
                last.wall = wall;
            }
            let task = job.inputs[1].1.clone();
            self.graphs
                .get_mut(&run_id)
                .unwrap()
                .legs
                .insert(task, log.code);
        }
        if !std::mem::take(&mut self.hold_join) {
            self.join_of(run_id, attempt);
        }
    }

    /// The join of run `run_id`'s first attempt, held by [`Sim::hold_join`], runs now.
    pub fn join_now(&mut self, run_id: u64) {
        self.join_of(run_id, 1);
    }

    /// The join of attempt `attempt` of run `run_id`, and the run's status after it.
    fn join_of(&mut self, run_id: u64, attempt: u32) {
        let g = self.graphs[&run_id].clone();
        let join = self.run_job(
            run_id,
            attempt,
            &g.event,
            &g.payload,
            &JobOf::join(g.wave.len() as u32),
        );
        let g = self.graphs.get_mut(&run_id).unwrap();
        g.join = Some(join.code);
        let ok = join.code == 0 && g.legs.values().all(|c| *c == 0);
        let conclusion = if ok { "success" } else { "failure" };
        self.set_run_status(run_id, "completed", Some(conclusion));
    }

    /// Plays every dispatch not yet followed as its run's job graph, in order (at most `max`
    /// runs); returns how many ran.
    pub fn follow_graphs(&mut self, max: usize) -> usize {
        let mut ran = 0;
        while ran < max {
            let next = self.fake.with(|w| w.dispatches.get(self.followed).cloned());
            let Some(d) = next else {
                return ran;
            };
            ran += 1;
            self.followed += 1;
            let payload = Self::dispatch_payload(&d.inputs);
            self.graph(d.run_id, "workflow_dispatch", &payload);
        }
        ran
    }
}

/// Asserts that none of `secrets` is in `text` (`what` says where it was found).
fn assert_hidden(what: &str, text: &[u8], secrets: &[&str]) {
    let t = String::from_utf8_lossy(text);
    for s in secrets {
        assert!(!t.contains(s), "a secret leaked into {what}");
    }
}
