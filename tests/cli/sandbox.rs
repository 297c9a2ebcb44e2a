//! The Docker action played for real (docs/security.md, "The Docker action"): the orchestrator
//! runs as root under Docker's default capability set (`setpriv` drops the rest, as the runner's
//! `docker run` does), with the job's secrets in its environment, the runner's file-command
//! files in a directory of their own and a job `HOME`; a hostile scripted agent
//! (`tests/fixtures/agents/hostile.py`) scans `/proc/*/environ` and `cmdline`, appends to the
//! file commands and writes `HOME` dotfiles before doing its real work. Where the tests do not
//! run as root, the same runs happen as the current user (what `prctl(PR_SET_DUMPABLE, 0)`
//! protects there) and the root-only claims are skipped with a message.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::Demo;
use spec_orchestrate::types::Phase;
use spec_orchestrate::types::Role;
use spec_orchestrate::types::kinds::BlockerCategory;
use spec_orchestrate::types::kinds::CallRole;

/// Docker's default capability set (moby `oci/caps/defaults.go`): no `CAP_SYS_PTRACE`, no
/// `CAP_SYS_ADMIN`, no `CAP_NET_ADMIN`.
pub const DOCKER_CAPS: &str = "-all,+chown,+dac_override,+fsetid,+fowner,+mknod,+net_raw,+setgid,+setuid,+setfcap,+setpcap,+net_bind_service,+sys_chroot,+kill,+audit_write";

/// The secrets of a job, as the runner puts them in a Docker action's environment.
pub const SECRETS: [(&str, &str); 7] = [
    ("GITHUB_TOKEN", "ghs_sandboxTestJobToken000000000000000001"),
    (
        "INPUT_GITHUB_TOKEN",
        "ghs_sandboxTestJobToken000000000000000001",
    ),
    (
        "ACTIONS_RUNTIME_TOKEN",
        "eyJsandboxTestRuntimeToken.0000000000002",
    ),
    (
        "INPUT_ANTHROPIC_API_KEY",
        "sk-ant-api03-sandboxTestKey-000000000003",
    ),
    (
        "ANTHROPIC_API_KEY",
        "sk-ant-api03-sandboxTestKey-000000000003",
    ),
    (
        "INPUT_OPENAI_API_KEY",
        "sk-proj-sandboxTestKey-0000000000000004",
    ),
    ("OPENAI_API_KEY", "sk-proj-sandboxTestKey-0000000000000004"),
];

/// Whether the tests run as root (then the Docker action can be played for real).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The binary under test, run as the runner runs a Docker action when the tests are root:
/// through `setpriv` with Docker's default bounding set.
pub fn docker_like_bin() -> assert_cmd::Command {
    let bin = assert_cmd::cargo::cargo_bin("spec-orchestrate");
    let mut cmd = if is_root() {
        let mut c = assert_cmd::Command::new("setpriv");
        c.arg(format!("--bounding-set={DOCKER_CAPS}"))
            .arg("--")
            .arg(bin);
        c
    } else {
        assert_cmd::Command::new(bin)
    };
    cmd.env_remove("SPEC_ORCHESTRATE_LOG")
        .env_remove("SPEC_ORCHESTRATE_PROGRESS");
    cmd
}

/// The hostile fixture.
pub fn hostile_agent() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents/hostile.py")
}

/// The YAML command of a hostile agent wrapping `real` (e.g. `python3 …/author.py`).
pub fn hostile_command(dump: &Path, commands: &Path, home: &Path, real: &[&str]) -> String {
    let mut parts = vec![
        "python3".to_string(),
        hostile_agent().display().to_string(),
        dump.display().to_string(),
        commands.display().to_string(),
        home.display().to_string(),
        "--".to_string(),
    ];
    parts.extend(real.iter().map(|s| s.to_string()));
    let quoted: Vec<String> = parts.iter().map(|p| format!("\"{p}\"")).collect();
    format!("[{}]", quoted.join(", "))
}

/// The lines the hostile agent wrote.
pub fn dumps(dump: &Path) -> Vec<Value> {
    std::fs::read_to_string(dump)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("dump line is JSON"))
        .collect()
}

/// Asserts that no secret value appears in what the agent read.
pub fn assert_no_secret_read(dumps: &[Value]) {
    assert!(!dumps.is_empty(), "the hostile agent never ran");
    for d in dumps {
        let text = d.to_string();
        for (name, value) in SECRETS {
            assert!(
                !text.contains(value),
                "the agent read {name} from {:?}",
                d["read"].as_object().map(|m| m
                    .iter()
                    .filter(|(_, v)| v.as_str().unwrap_or("").contains(value))
                    .map(|(k, _)| k.clone())
                    .collect::<Vec<_>>())
            );
        }
    }
}

/// An observer stronger than any agent (the test process: root with every capability when the
/// tests are root, so non-dumpable processes are no obstacle to it) that reads, every few
/// milliseconds while it lives, the `cmdline` of every process on the machine and the `environ`
/// of every `spec-orchestrate step` process of this build: what an agent could read in the window between a
/// step's `exec` and its first instruction, or by any other way into its start-up environment.
pub struct Observer {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: std::thread::JoinHandle<Observed>,
}

/// What an [`Observer`] saw.
#[derive(Debug, Default)]
pub struct Observed {
    /// Pids of `step` processes whose start-up environment it read.
    pub steps: std::collections::BTreeSet<u32>,
    /// Where it found a secret value (`<pid>/environ` or `<pid>/cmdline`).
    pub leaks: Vec<String>,
}

impl Observer {
    /// Starts watching for `secrets`.
    pub fn start(secrets: Vec<String>) -> Observer {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let bin = assert_cmd::cargo::cargo_bin("spec-orchestrate");
        let handle = std::thread::spawn(move || {
            let mut seen = Observed::default();
            let leaked = |text: &[u8]| {
                let text = String::from_utf8_lossy(text);
                secrets.iter().any(|s| text.contains(s.as_str()))
            };
            while !flag.load(Ordering::Relaxed) {
                for e in std::fs::read_dir("/proc").unwrap().flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let Ok(pid) = name.parse::<u32>() else {
                        continue;
                    };
                    let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
                        continue;
                    };
                    if leaked(&cmdline) {
                        let leak = format!("{pid}/cmdline");
                        if !seen.leaks.contains(&leak) {
                            seen.leaks.push(leak);
                        }
                    }
                    let argv: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
                    // Steps of this build only: the machine may run other builds' tests.
                    let is_step = argv.len() > 1
                        && argv[1] == b"step"
                        && std::fs::read_link(e.path().join("exe")).is_ok_and(|x| x == bin);
                    if !is_step {
                        continue;
                    }
                    if let Ok(environ) = std::fs::read(e.path().join("environ")) {
                        seen.steps.insert(pid);
                        for var in environ.split(|b| *b == 0).filter(|v| leaked(v)) {
                            let name = String::from_utf8_lossy(var);
                            let name = name.split('=').next().unwrap_or_default();
                            let leak = format!("{pid}/environ: {name}");
                            if !seen.leaks.contains(&leak) {
                                seen.leaks.push(leak);
                            }
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            seen
        });
        Observer { stop, handle }
    }

    /// Stops watching and says what was seen.
    pub fn finish(self) -> Observed {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.handle.join().expect("the observer thread")
    }
}

/// A test's turn at the machine's processes. The secret values are shared by the tests of this
/// module, and a test whose agents run as the orchestrator's own user (root without
/// `CAP_SYS_PTRACE`, or the same user) can read them from another test's processes during the
/// few milliseconds between their `exec` and their first instruction: the `setpriv` wrapper, and
/// the `run` or `action` process itself before it marks itself non-dumpable. On a runner no
/// agent exists before that process starts, so such a test runs [`Turn::Alone`]. The `step`
/// children are no such window any more (their keys come through a socket, not their
/// environment: the observer of the action test holds that), and agents running as uid 65532
/// cannot read a root process's entries at all, so the tests whose agents run as that uid run
/// [`Turn::Beside`] each other.
enum Turn {
    /// No other test of this module runs meanwhile.
    Alone {
        _guard: std::sync::RwLockWriteGuard<'static, ()>,
    },
    /// Only other tests whose agents run as the separate uid run meanwhile.
    Beside {
        _guard: std::sync::RwLockReadGuard<'static, ()>,
    },
}

static TURNS: std::sync::RwLock<()> = std::sync::RwLock::new(());

impl Turn {
    /// `alone` for a test whose agents share the orchestrator's user.
    fn take(alone: bool) -> Turn {
        use std::sync::PoisonError;
        if alone {
            Turn::Alone {
                _guard: TURNS.write().unwrap_or_else(PoisonError::into_inner),
            }
        } else {
            Turn::Beside {
                _guard: TURNS.read().unwrap_or_else(PoisonError::into_inner),
            }
        }
    }
}

/// A demo whose spec author is the hostile agent, and a world-writable place for its dump (so
/// that an agent running as another uid can write it), plus a file-commands dir and job home.
struct Hostile {
    _turn: Turn,
    demo: Demo,
    dump: PathBuf,
    commands: PathBuf,
    home: PathBuf,
}

impl Hostile {
    /// `alone`: its agents will share the orchestrator's user (see [`Turn`]).
    fn new(alone: bool) -> Hostile {
        let turn = Turn::take(alone);
        use std::os::unix::fs::PermissionsExt;
        let demo = Demo::new();
        let root = demo.tmp.path();
        // The runner's workspace and tools are readable by everyone; a temp dir is not.
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = root.join("out");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
        let commands = root.join("file_commands");
        std::fs::create_dir_all(&commands).unwrap();
        for name in [
            "set_env",
            "add_path",
            "set_output",
            "save_state",
            "step_summary",
        ] {
            std::fs::write(commands.join(name), "").unwrap();
        }
        let home = root.join("github-home");
        std::fs::create_dir_all(&home).unwrap();
        let dump = out.join("hostile.jsonl");
        let author = demo.agents().join("author.py").display().to_string();
        let config = demo.config().replace(
            &format!("[\"python3\", \"{author}\"]"),
            &hostile_command(&dump, &commands, &home, &["python3", &author]),
        );
        assert!(config.contains("hostile.py"), "{config}");
        demo.write_config(&config);
        Hostile {
            _turn: turn,
            demo,
            dump,
            commands,
            home,
        }
    }

    /// `run` (to `until`, or the end) as the runner would run it, secrets and file commands in
    /// the environment, agents as `agent_user` (`SPEC_ORCHESTRATE_AGENT_USER`).
    fn run(&self, until: Option<&str>, agent_user: &str) -> std::process::Output {
        self.run_under(docker_like_bin(), until, agent_user)
    }

    /// [`Hostile::run`] through `cmd` (the binary, or a wrapper of it).
    fn run_under(
        &self,
        mut cmd: assert_cmd::Command,
        until: Option<&str>,
        agent_user: &str,
    ) -> std::process::Output {
        cmd.arg("run")
            .arg("--issue")
            .arg(&self.demo.issue)
            .arg("--repo")
            .arg(&self.demo.repo);
        if let Some(phase) = until {
            cmd.arg("--until").arg(phase);
        }
        // The image's PATH: a tool under the test user's own home (pyenv, cargo) would be out
        // of the agent uid's reach, as it is in a container.
        cmd.env("SPEC_ORCHESTRATE_AGENT_USER", agent_user)
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .env("HOME", &self.home)
            .env("GITHUB_ENV", self.commands.join("set_env"))
            .env("GITHUB_PATH", self.commands.join("add_path"))
            .env("GITHUB_OUTPUT", self.commands.join("set_output"))
            .env("GITHUB_STATE", self.commands.join("save_state"))
            .env("GITHUB_STEP_SUMMARY", self.commands.join("step_summary"))
            .timeout(Duration::from_secs(300));
        for (k, v) in SECRETS {
            cmd.env(k, v);
        }
        cmd.output().expect("the binary runs")
    }
}

#[test]
fn a_hostile_agent_reads_no_secret_from_the_orchestrators_proc_entries() {
    // The agent as the orchestrator's own user (root, under Docker's capabilities, when the
    // tests are root): only non-dumpability stands between it and the secrets.
    let h = Hostile::new(true);
    let out = h.run(Some("spec_review"), "off");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let dumps = dumps(&h.dump);
    assert_no_secret_read(&dumps);
    // The orchestrator is the agent's parent: its environment was refused, not merely empty.
    let first = &dumps[0];
    let denied: Vec<&str> = first["denied"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        denied.iter().any(|d| d.ends_with("/environ")),
        "no environment was refused to the agent: {first}"
    );
}

/// Every entry under `root` (`.git` included) with another owner than `uid`.
fn not_owned_by(root: &Path, uid: u32) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .flatten()
        .filter(|e| e.path().symlink_metadata().is_ok_and(|m| m.uid() != uid))
        .map(|e| e.path().display().to_string())
        .collect()
}

#[test]
fn in_the_docker_action_agents_run_as_their_own_uid_plant_nothing_and_the_checkout_is_given_back() {
    use std::os::unix::fs::MetadataExt;
    if !is_root() {
        eprintln!(
            "SKIPPED: the tests do not run as root, so agents cannot be given another uid here; the identity claims of docs/security.md are held by a root run of this test"
        );
        return;
    }
    let h = Hostile::new(false);
    let owner = std::fs::metadata(h.demo.repo.join(".git")).unwrap().uid();
    let out = h.run(None, "65532");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("run as uid 65532:65532 without capabilities"),
        "the run says how agents are isolated: {stderr}"
    );
    let dumps = dumps(&h.dump);
    assert_no_secret_read(&dumps);
    for d in &dumps {
        assert_eq!(
            (d["uid"].as_u64(), d["gid"].as_u64()),
            (Some(65532), Some(65532)),
            "{d}"
        );
        assert_eq!(d["groups"], serde_json::json!([]), "{d}");
        for set in ["CapEff", "CapPrm", "CapAmb"] {
            assert_eq!(d["caps"][set], "0000000000000000", "{set}: {d}");
        }
        let home = d["home"].as_str().unwrap();
        assert_ne!(Path::new(home), h.home, "never the job's HOME");
        let own = Path::new(home).parent().unwrap();
        assert!(
            !own.exists(),
            "the identity's HOME and TMPDIR are removed when the command ends: {}",
            own.display()
        );
        assert!(home.contains("spec-orchestrate-agent-65532-"), "{d}");
        assert!(
            d["tmpdir"]
                .as_str()
                .unwrap()
                .contains("spec-orchestrate-agent-65532-"),
            "{d}"
        );
        // Nothing of the runner's or the job's HOME could be written.
        assert_eq!(d["planted"], serde_json::json!([]), "{d}");
        assert!(d["refused"].as_array().unwrap().len() >= 9, "{d}");
    }
    for name in [
        "set_env",
        "add_path",
        "set_output",
        "save_state",
        "step_summary",
    ] {
        assert_eq!(
            std::fs::read_to_string(h.commands.join(name)).unwrap(),
            "",
            "{name}"
        );
    }
    assert!(!h.home.join(".bashrc").exists() && !h.home.join(".gitconfig").exists());
    // The agents' work is there (the spec, the implementation, the evidence)...
    let state = h.demo.state();
    assert_eq!(state.phase(), Phase::Done, "{state:?}");
    assert!(
        !crate::support::pr_draft(&state),
        "every phase worked as the agent uid, the browser cases included: {stderr}"
    );
    // ...and the whole checkout belongs to the user who checked it out again.
    assert_eq!(not_owned_by(&h.demo.repo, owner), Vec::<String>::new());
    let body = std::fs::read_to_string(h.demo.feature_dir().join("pr-body.md")).unwrap();
    assert!(
        body.contains("#### Agent isolation") && body.contains("uid 65532:65532"),
        "{body}"
    );
}

#[test]
fn when_agents_share_the_orchestrators_user_the_run_says_so_once_and_puts_the_file_commands_back() {
    let h = Hostile::new(true);
    let out = h.run(None, "off");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Said once, with what is in force.
    assert_eq!(
        stderr
            .matches("Agents run as the orchestrator's own user")
            .count(),
        1,
        "said once: {stderr}"
    );
    assert!(
        stderr.contains("SPEC_ORCHESTRATE_AGENT_USER=off") && stderr.contains("In force:"),
        "{stderr}"
    );
    // The agent could write the file commands (same user), and did...
    let dumps = dumps(&h.dump);
    assert!(
        dumps[0]["planted"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p.as_str().unwrap().ends_with("set_env")),
        "{}",
        dumps[0]
    );
    // ...but every file is as the runner left it.
    for name in [
        "set_env",
        "add_path",
        "set_output",
        "save_state",
        "step_summary",
    ] {
        assert_eq!(
            std::fs::read_to_string(h.commands.join(name)).unwrap(),
            "",
            "{name} was put back"
        );
    }
    // Recorded against the call, shown in the PR body.
    let state = h.demo.state();
    let found = crate::support::failures_in(&state, BlockerCategory::SandboxViolation);
    let guard: Vec<_> = found
        .iter()
        .filter(|f| f.detail.contains("file commands"))
        .collect();
    assert!(!guard.is_empty(), "{state:?}");
    let detail = &guard[0].detail;
    let author = CallRole::Role(Role::SpecAuthor);
    assert_eq!(guard[0].role, author, "{:?}", guard[0]);
    for what in [
        "set_env changed, restored",
        "step_summary changed, restored",
    ] {
        assert!(detail.contains(what), "{what} in {detail}");
    }
    let body = std::fs::read_to_string(h.demo.feature_dir().join("pr-body.md")).unwrap();
    assert!(
        body.contains("#### Sandbox violations")
            && body.contains("changed the runner's file commands"),
        "{body}"
    );
    assert!(
        body.contains("#### Agent isolation")
            && body.contains("Agents run as the orchestrator's own user"),
        "{body}"
    );
}

#[test]
fn the_action_run_as_the_runner_runs_it_keeps_every_secret_and_runner_file_from_a_hostile_author() {
    let _turn = Turn::take(false);
    use crate::actions_sim::{ANTHROPIC, OPENAI, Sim, TOKEN};
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !is_root() {
        eprintln!("SKIPPED: the Docker action is played as root only (the tests are not root)");
        return;
    }
    let mut dump = PathBuf::new();
    let mut sim = Sim::new(|c, root| {
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
        for d in ["spy", "out"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
            std::fs::set_permissions(root.join(d), std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        dump = root.join("out/hostile.jsonl");
        let spy = root.join("spy.py").display().to_string();
        let author = format!("{}/agents/author.py", root.display());
        let was = format!("[\"python3\", \"{spy}\", \"{author}\"]");
        assert!(c.contains(&was), "{c}");
        c.replace(
            &was,
            &hostile_command(
                &root.join("out/hostile.jsonl"),
                &root.join("runs/*/file_commands"),
                &root.join("home"),
                &["python3", &spy, &author],
            ),
        )
    });
    sim.docker = true;
    let observer = Observer::start(vec![TOKEN.into(), ANTHROPIC.into(), OPENAI.into()]);
    let first = sim.labeled("octocat", false);
    sim.run(1001, 1, "issues", &first);
    sim.follow(12, false);
    let observed = observer.finish();
    // The keys reached every step through its inherited socket, never its environment or any
    // process's command line; and the observer really read the steps' environments.
    assert_eq!(observed.leaks, Vec::<String>::new(), "{observed:?}");
    assert!(observed.steps.len() >= 3, "{observed:?}");
    assert!(sim.runs.iter().all(|r| r.code == 0), "every job succeeded");
    let last = sim.runs.last().unwrap();
    assert_eq!(
        last.output("phase"),
        "retrospective",
        "the chain ran to its end"
    );
    assert_eq!(last.output("next_run"), "", "{}", last.stderr);
    let dumps = dumps(&dump);
    assert!(!dumps.is_empty(), "the hostile author ran");
    for d in &dumps {
        let text = d.to_string();
        for secret in [TOKEN, ANTHROPIC, OPENAI] {
            assert!(!text.contains(secret), "the agent read a secret");
        }
        assert_eq!(d["uid"].as_u64(), Some(65532), "{d}");
        assert_eq!(d["caps"]["CapEff"], "0000000000000000", "{d}");
        assert_eq!(d["planted"], serde_json::json!([]), "{d}");
    }
    sim.assert_no_secrets();
    for run in &sim.runs {
        let files = run.workspace.parent().unwrap().join("file_commands");
        for e in std::fs::read_dir(&files).unwrap().flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap();
            assert!(!text.contains("evil"), "{}: {text}", e.path().display());
        }
        let owner = std::fs::metadata(run.workspace.join(".git")).unwrap().uid();
        assert_eq!(not_owned_by(&run.workspace, owner), Vec::<String>::new());
    }
    assert!(!sim.root.join("home/.bashrc").exists());
    let pr = sim
        .fake
        .with(|w| w.pulls.first().map(|p| p["body"].to_string()));
    let body = pr.expect("a pull request");
    assert!(body.contains("uid 65532:65532"), "{body}");
}

#[test]
fn when_setuid_is_refused_the_run_says_once_which_protections_are_in_force_and_goes_on() {
    if !is_root() {
        eprintln!(
            "SKIPPED: a refused setuid is played as root without CAP_SETUID/CAP_SETGID (the tests are not root); the not-root case is the run of every other test"
        );
        return;
    }
    // Root, but a bounding set without CAP_SETUID and CAP_SETGID (as a stricter container
    // or seccomp profile would leave it): the identity is asked for and cannot be had.
    let h = Hostile::new(true);
    let bin = assert_cmd::cargo::cargo_bin("spec-orchestrate");
    let mut cmd = assert_cmd::Command::new("setpriv");
    cmd.arg(format!(
        "--bounding-set={}",
        DOCKER_CAPS.replace(",+setgid", "").replace(",+setuid", "")
    ))
    .arg("--")
    .arg(bin)
    .env_remove("SPEC_ORCHESTRATE_LOG")
    .env_remove("SPEC_ORCHESTRATE_PROGRESS");
    let out = h.run_under(cmd, None, "65532");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "it keeps working: {stderr}");
    assert_eq!(
        stderr
            .matches("Agents run as the orchestrator's own user")
            .count(),
        1,
        "said once: {stderr}"
    );
    assert!(
        stderr.contains("setting up uid 65532 failed or was refused")
            && stderr.contains(
                "In force: the scrubbed environment, the non-dumpable orchestrator, the model API proxy, rooms and the file-command guard"
            ),
        "{stderr}"
    );
    assert_no_secret_read(&dumps(&h.dump));
    let body = std::fs::read_to_string(h.demo.feature_dir().join("pr-body.md")).unwrap();
    assert_eq!(body.matches("#### Agent isolation").count(), 1, "{body}");
    assert!(
        body.contains("setting up uid 65532 failed or was refused") && body.contains("In force:"),
        "{body}"
    );
}

#[test]
fn a_step_killed_by_sigkill_leaves_no_entry_of_the_checkout_to_the_agent_uid() {
    use crate::actions_sim::Sim;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !is_root() {
        eprintln!("SKIPPED: the agent uid exists only when the tests are root");
        return;
    }
    let _turn = Turn::take(false);
    // A spec author that marks the checkout, then works until it is stopped.
    let mut sim = Sim::new(|c, root| {
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let spy = root.join("spy.py").display().to_string();
        let author = format!("{}/agents/author.py", root.display());
        let was = format!("[\"python3\", \"{spy}\", \"{author}\"]");
        assert!(c.contains(&was), "{c}");
        c.replace(
            &was,
            "[\"sh\", \"-c\", \"touch agent-was-here; sleep 120\"]",
        )
    });
    sim.docker = true;
    let runs = sim.root.join("runs");
    let bin = assert_cmd::cargo::cargo_bin("spec-orchestrate");
    // The runner's view of a job killed hard: SIGKILL to the step while its agent runs as the
    // agent uid in the lent checkout.
    let killer = std::thread::spawn(move || {
        let until = std::time::Instant::now() + Duration::from_secs(150);
        while std::time::Instant::now() < until {
            for e in std::fs::read_dir("/proc").unwrap().flatten() {
                let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                    continue;
                };
                let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
                let is_step = cmdline.split(|b| *b == 0).nth(1) == Some(b"step".as_slice())
                    && std::fs::read_link(e.path().join("exe")).is_ok_and(|x| x == bin);
                let Ok(cwd) = std::fs::read_link(e.path().join("cwd")) else {
                    continue;
                };
                let marked = std::fs::symlink_metadata(cwd.join("agent-was-here"))
                    .is_ok_and(|m| m.uid() == 65532);
                if is_step && cwd.starts_with(&runs) && marked {
                    // SAFETY: kill has no memory effects.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    return Some(pid);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    });
    let first = sim.labeled("octocat", false);
    let log = sim.run(1001, 1, "issues", &first);
    let killed = killer.join().unwrap();
    assert!(
        killed.is_some(),
        "the step was never seen working: {}",
        log.stderr
    );
    assert!(
        log.stderr.contains("killed by signal 9"),
        "the job knows its phase was killed: {}",
        log.stderr
    );
    let owner = std::fs::metadata(log.workspace.join(".git")).unwrap().uid();
    assert_eq!(not_owned_by(&log.workspace, owner), Vec::<String>::new());
}

/// The mode bits and the access ACL (the kernel's `system.posix_acl_access` bytes) of `dir`.
fn mode_and_acl(dir: &Path) -> (u32, Option<Vec<u8>>) {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let mode = std::fs::symlink_metadata(dir).unwrap().mode() & 0o7777;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    let mut buf = vec![0u8; 4096];
    // SAFETY: both strings are NUL-terminated and the buffer is as long as said.
    let n = unsafe {
        libc::lgetxattr(
            path.as_ptr(),
            c"system.posix_acl_access".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let acl = (n >= 0).then(|| buf[..n as usize].to_vec());
    (mode, acl)
}

/// Owner and group of every entry under `root`.
fn owners(root: &Path) -> std::collections::BTreeMap<PathBuf, (u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let m = e.path().symlink_metadata().ok()?;
            Some((e.path().to_path_buf(), (m.uid(), m.gid())))
        })
        .collect()
}

/// A root CI container's checkout: the demo laid out under directories no other uid may enter
/// (`<tmp>` 0700, `<tmp>/root` 0700 like `/root`, `<tmp>/root/work` 0750), the orchestrator's
/// `HOME` and a private tool directory first on its PATH among them, a hostile spec author, and
/// a world-writable place (like `/tmp`) for its dump.
struct PrivateCheckout {
    tmp: tempfile::TempDir,
    out: tempfile::TempDir,
    repo: PathBuf,
    issue: PathBuf,
    home: PathBuf,
    dump: PathBuf,
}

impl PrivateCheckout {
    fn new(author: Option<&str>) -> PrivateCheckout {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let private = tmp.path().join("root");
        let work = private.join("work");
        let home = private.join("home");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        // Root's own tools come first on its PATH (pyenv, cargo under /root): a `python3` there
        // that the agents' uid cannot execute, and must pass over for the system's.
        let tools = private.join("bin");
        crate::support::script(&tools.join("python3"), "#!/bin/sh\nexit 97\n");
        for (dir, mode) in [
            (tmp.path(), 0o700),
            (private.as_path(), 0o700),
            (work.as_path(), 0o750),
            (home.as_path(), 0o700),
            (tools.as_path(), 0o700),
        ] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let (repo, issue) = spec_orchestrate::commands::demo::lay_out(&work).unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::set_permissions(out.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let dump = out.path().join("hostile.jsonl");
        let config_path = repo.join(".specs/pipeline.yml");
        let config = std::fs::read_to_string(&config_path).unwrap();
        let real = work.join("agents/author.py").display().to_string();
        let was = format!("[\"python3\", \"{real}\"]");
        assert!(config.contains(&was), "{config}");
        let command = match author {
            Some(c) => c.to_string(),
            None => hostile_command(
                &dump,
                &tmp.path().join("no-file-commands"),
                &home,
                &["python3", &real],
            ),
        };
        std::fs::write(&config_path, config.replace(&was, &command)).unwrap();
        PrivateCheckout {
            tmp,
            out,
            repo,
            issue,
            home,
            dump,
        }
    }

    /// The directories above the checkout that no other uid could enter.
    fn private_dirs(&self) -> Vec<PathBuf> {
        let root = self.tmp.path().join("root");
        vec![
            self.tmp.path().to_path_buf(),
            root.clone(),
            root.join("work"),
        ]
    }

    /// `run` as a root shell in a CI container starts it: no GitHub Actions variable, the
    /// secrets in its environment, no agents' uid named (every root run separates its agents by
    /// default, docs/security.md).
    fn run(&self, until: &str) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::from_std(self.command(until));
        cmd.timeout(Duration::from_secs(300));
        cmd
    }

    /// [`PrivateCheckout::run`] as a plain command, to be killed.
    fn command(&self, until: &str) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("spec-orchestrate"));
        cmd.arg("run")
            .arg("--issue")
            .arg(&self.issue)
            .arg("--repo")
            .arg(&self.repo)
            .arg("--until")
            .arg(until)
            .env_remove("SPEC_ORCHESTRATE_LOG")
            .env_remove("SPEC_ORCHESTRATE_PROGRESS")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("SPEC_ORCHESTRATE_AGENT_USER")
            .env(
                "PATH",
                format!(
                    "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    self.tmp.path().join("root/bin").display()
                ),
            )
            .env("HOME", &self.home);
        for (k, v) in SECRETS {
            cmd.env(k, v);
        }
        cmd
    }
}

#[test]
fn a_root_run_with_its_checkout_under_private_directories_runs_agents_as_their_uid_and_leaves_them_as_they_were()
 {
    if !is_root() {
        eprintln!(
            "SKIPPED: the tests do not run as root, so agents cannot be given another uid here"
        );
        return;
    }
    let _turn = Turn::take(false);
    let c = PrivateCheckout::new(None);
    let _ = &c.out;
    let dirs = c.private_dirs();
    let before: Vec<_> = dirs.iter().map(|d| mode_and_acl(d)).collect();
    let owned = owners(&c.repo);
    let out = c.run("spec_review").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("run as uid 65532:65532 without capabilities"),
        "a root run outside Actions separates its agents: {stderr}"
    );
    let dumps = dumps(&c.dump);
    assert_no_secret_read(&dumps);
    for d in &dumps {
        assert_eq!(d["uid"].as_u64(), Some(65532), "{d}");
        assert_eq!(d["caps"]["CapEff"], "0000000000000000", "{d}");
        // Its parent is the orchestrator, whose environment holds every secret: refused.
        let environ = format!("{}/environ", d["ppid"]);
        assert!(
            d["denied"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x.as_str() == Some(environ.as_str())),
            "the orchestrator's {environ} was not refused: {d}"
        );
        // The orchestrator's HOME is among the private directories: nothing planted.
        assert_eq!(d["planted"], serde_json::json!([]), "{d}");
    }
    assert!(!c.home.join(".bashrc").exists());
    // The spec was written as that uid, in the lent checkout...
    assert!(
        c.repo
            .join(".specs/add-a-dark-mode-toggle/design.md")
            .exists()
    );
    // ...and afterwards every directory above it is exactly as it was (mode and ACL), no grant
    // record is left, and every entry of the checkout has the owner it had.
    let after: Vec<_> = dirs.iter().map(|d| mode_and_acl(d)).collect();
    assert_eq!(after, before, "{dirs:?}");
    assert!(
        !c.repo
            .join(".git/spec-orchestrate-search-grants.json")
            .exists()
    );
    let now = owners(&c.repo);
    for (path, was) in &owned {
        assert_eq!(now.get(path), Some(was), "{}", path.display());
    }
    let git_owner = owned[&c.repo.join(".git")];
    let strays: Vec<_> = now.iter().filter(|(_, o)| **o != git_owner).collect();
    assert_eq!(strays, Vec::<(&PathBuf, &(u32, u32))>::new());
}

#[test]
fn a_root_run_killed_by_sigkill_leaves_its_grants_recorded_and_the_next_command_takes_them_back() {
    use std::os::unix::fs::MetadataExt;
    if !is_root() {
        eprintln!("SKIPPED: the agent uid exists only when the tests are root");
        return;
    }
    let _turn = Turn::take(false);
    // A spec author that, while the flag is there, marks the checkout and works until it is
    // stopped; without the flag it is the demo's author.
    let out = tempfile::tempdir().unwrap();
    let flag = out.path().join("stall");
    std::fs::write(&flag, "").unwrap();
    let c = PrivateCheckout::new(Some(&format!(
        "[\"sh\", \"-c\", \"if [ -e {} ]; then echo $HOME > .home; mv .home agent-was-here; exec sleep 120; fi; exec python3 \\\"$0\\\"\", \"AUTHOR\"]",
        flag.display()
    )));
    let author = c.repo.parent().unwrap().join("agents/author.py");
    let config_path = c.repo.join(".specs/pipeline.yml");
    let config = std::fs::read_to_string(&config_path).unwrap();
    std::fs::write(
        &config_path,
        config.replace("\"AUTHOR\"", &format!("\"{}\"", author.display())),
    )
    .unwrap();
    let dirs = c.private_dirs();
    let before: Vec<_> = dirs.iter().map(|d| mode_and_acl(d)).collect();
    let record = c.repo.join(".git/spec-orchestrate-search-grants.json");
    let mut child = c
        .command("spec_review")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let marker = c.repo.join("agent-was-here");
    while !std::fs::symlink_metadata(&marker).is_ok_and(|m| m.uid() == 65532) {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never worked"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL: the run cannot take anything back itself
    child.wait().unwrap();
    let during: Vec<_> = dirs.iter().map(|d| mode_and_acl(d)).collect();
    assert_ne!(
        during, before,
        "the grants were in force when the run was killed"
    );
    assert!(record.exists(), "what they were is recorded");
    // The killed run's own HOME/TMPDIR directory is left in the temp dir...
    let home = std::fs::read_to_string(&marker).unwrap();
    let left = Path::new(home.trim()).parent().unwrap().to_path_buf();
    assert!(left.is_dir(), "{}", left.display());
    // The next command in that checkout takes the old grants back, grants anew, and at its
    // end leaves every directory as it was.
    std::fs::remove_file(&flag).unwrap();
    std::fs::remove_file(&marker).unwrap();
    let mut next = crate::support::bin();
    next.arg("step")
        .arg("--repo")
        .arg(&c.repo)
        .env_remove("GITHUB_ACTIONS")
        .env_remove("SPEC_ORCHESTRATE_AGENT_USER")
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .env("HOME", &c.home)
        .timeout(Duration::from_secs(300));
    let done = next.output().unwrap();
    assert_eq!(
        done.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let after: Vec<_> = dirs.iter().map(|d| mode_and_acl(d)).collect();
    assert_eq!(after, before, "{dirs:?}");
    assert!(!record.exists());
    // ...and the next command to make one removes it, its process being gone.
    assert!(!left.exists(), "{} is still there", left.display());
    let owner = std::fs::metadata(c.repo.join(".git")).unwrap().uid();
    assert_eq!(not_owned_by(&c.repo, owner), Vec::<String>::new());
}
