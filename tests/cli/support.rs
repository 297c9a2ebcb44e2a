//! Shared helpers: the binary under test, demo repositories, and file helpers.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The `spec-orchestrate` binary with a clean, deterministic environment.
pub fn bin() -> Command {
    let mut cmd = Command::cargo_bin("spec-orchestrate").expect("binary built by cargo");
    cmd.env_remove("SPEC_ORCHESTRATE_LOG");
    cmd
}

/// A laid-out demo: `root/repo` (git, initial commit, `.specs/pipeline.yml`), `root/agents`,
/// `root/issue.md`.
pub struct Demo {
    /// Keeps the temp dir alive.
    pub tmp: tempfile::TempDir,
    /// The repository.
    pub repo: PathBuf,
    /// The issue file.
    pub issue: PathBuf,
}

impl Demo {
    /// Lays out the demo exactly as `spec-orchestrate demo` does.
    pub fn new() -> Demo {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (repo, issue) =
            spec_orchestrate::commands::demo::lay_out(tmp.path()).expect("demo lays out");
        Demo { tmp, repo, issue }
    }

    /// The demo's agents directory.
    pub fn agents(&self) -> PathBuf {
        self.tmp.path().join("agents")
    }

    /// The configuration file of the repository.
    pub fn config_path(&self) -> PathBuf {
        self.repo.join(".specs/pipeline.yml")
    }

    /// Replaces the repository's configuration.
    pub fn write_config(&self, text: &str) {
        std::fs::write(self.config_path(), text).expect("write config");
    }

    /// The configuration text.
    pub fn config(&self) -> String {
        std::fs::read_to_string(self.config_path()).expect("read config")
    }

    /// The feature directory of the demo issue.
    pub fn feature_dir(&self) -> PathBuf {
        self.repo.join(".specs/add-a-dark-mode-toggle")
    }

    /// The state as JSON.
    pub fn state(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.feature_dir().join("pipeline-state.json"))
            .expect("state exists");
        serde_json::from_str(&text).expect("state is JSON")
    }

    /// `run --issue <issue> --repo <repo>` with extra args.
    pub fn run_cmd(&self) -> Command {
        let mut c = bin();
        c.arg("run")
            .arg("--issue")
            .arg(&self.issue)
            .arg("--repo")
            .arg(&self.repo);
        c
    }

    /// The configuration with one more `command` agent, `name`: the shell script `body`
    /// (written next to the demo), with `opposite` as the agent a swap moves its roles to.
    pub fn config_with_script_agent(&self, name: &str, body: &str, opposite: &str) -> String {
        let path = self.tmp.path().join(format!("{name}.sh"));
        script(&path, body);
        let config = self.config();
        let entry = format!(
            "agents:\n  {name}: {{ kind: command, command: [\"{}\"], opposite: {opposite} }}\n",
            path.display()
        );
        let with = config.replacen("agents:\n", &entry, 1);
        assert_ne!(with, config, "no `agents:` section in:\n{config}");
        with
    }

    /// Commit subjects on the current branch, newest first.
    pub fn log(&self) -> Vec<String> {
        git(&self.repo, &["log", "--format=%s"])
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// Runs git and returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The agent failures recorded in `state` with category `category`, in order.
pub fn failures_in(state: &serde_json::Value, category: &str) -> Vec<serde_json::Value> {
    state["agent_failures"]
        .as_array()
        .expect("agent_failures")
        .iter()
        .filter(|f| f["category"] == category)
        .cloned()
        .collect()
}

/// Writes an executable script.
pub fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).expect("mkdir");
    }
    std::fs::write(path, body).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A `command` agent entry for the YAML config.
pub fn python_agent(agents: &Path, name: &str) -> String {
    format!("[\"python3\", \"{}/{name}.py\"]", agents.display())
}

/// The scripted test agent (`tests/fixtures/agents/scenario.py`).
pub fn scenario_agent() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents/scenario.py")
}

/// A demo repository whose agents (`alpha` and `beta`, opposites of each other) play a scenario
/// file round by round; every request they receive is logged.
pub struct Scenario {
    /// The repository, issue and temp dir.
    pub demo: Demo,
    /// Where the scenario, its request log and counters live.
    pub dir: PathBuf,
}

impl Scenario {
    /// Lays out the demo repository and configures the scenario agents: author, implementers,
    /// e2e_runner and judge on `alpha`, spec_reviewer on `beta`. `extra` is appended to the
    /// configuration (e.g. a `review:` or `limits:` section).
    pub fn new(scenario: serde_json::Value, extra: &str) -> Scenario {
        let demo = Demo::new();
        let dir = demo.tmp.path().join("scenario");
        std::fs::create_dir_all(&dir).expect("scenario dir");
        std::fs::write(dir.join("scenario.json"), scenario.to_string()).expect("scenario");
        let agent = |opposite: &str| {
            format!(
                "{{ kind: command, command: [\"python3\", \"{}\"], opposite: {opposite}, env: {{ SCENARIO: \"{}\", SCENARIO_LOG: \"{}\", SCENARIO_STATE: \"{}\", SCENARIO_TIMING: \"{}\" }} }}",
                scenario_agent().display(),
                dir.join("scenario.json").display(),
                dir.join("requests.jsonl").display(),
                dir.join("state").display(),
                dir.join("timing.jsonl").display(),
            )
        };
        demo.write_config(&format!(
            "agents:\n  alpha: {}\n  beta: {}\nroles:\n  spec_author: alpha\n  spec_reviewer: beta\n  impl_ui: alpha\n  impl_backend: alpha\n  impl_test: alpha\n  e2e_runner: alpha\n  judge: alpha\n{extra}",
            agent("beta"),
            agent("alpha")
        ));
        Scenario { demo, dir }
    }

    /// Every request the agents received, in order.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.dir.join("requests.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("request line is JSON"))
            .collect()
    }

    /// The requests made for `role`.
    pub fn requests_of(&self, role: &str) -> Vec<serde_json::Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["role"] == role)
            .collect()
    }

    /// The state as JSON.
    pub fn state(&self) -> serde_json::Value {
        self.demo.state()
    }

    /// `run --issue … --repo …`.
    pub fn run_cmd(&self) -> Command {
        self.demo.run_cmd()
    }
}
