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

/// A demo whose spec author is the hostile agent, and a world-writable place for its dump (so
/// that an agent running as another uid can write it), plus a file-commands dir and job home.
struct Hostile {
    demo: Demo,
    dump: PathBuf,
    commands: PathBuf,
    home: PathBuf,
}

impl Hostile {
    fn new() -> Hostile {
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
            demo,
            dump,
            commands,
            home,
        }
    }

    /// `run --until spec_review` as the runner would run it, secrets and file commands in the
    /// environment.
    fn run(&self) -> std::process::Output {
        let mut cmd = docker_like_bin();
        cmd.arg("run")
            .arg("--issue")
            .arg(&self.demo.issue)
            .arg("--repo")
            .arg(&self.demo.repo)
            .arg("--until")
            .arg("spec_review")
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
    let h = Hostile::new();
    let out = h.run();
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
