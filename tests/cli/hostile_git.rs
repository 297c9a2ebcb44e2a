//! A hostile agent plants code for git to run (hooks, `core.fsmonitor`, a filter driver in an
//! included config file with `.git/info/attributes` naming it, a textconv driver, `diff.external`,
//! an editor, signing, a `~/.gitconfig` hooks path) and the whole pipeline then runs — CLI and
//! `action` against the simulated GitHub. None of it may run, and no secret of the job may
//! appear anywhere. A final plain `git commit` proves the plant was live.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::actions_sim::Sim;
use crate::support::{Scenario, bin, git_with};
use spec_orchestrate::types::Phase;

const SECRET: &str = "ghp_PlantedSecretValue0123456789abcdef";
const KEY: &str = "sk-ant-api03-PlantedKey0123456789abcdef";

/// git with everything the plant could use switched off, to read the repository afterwards.
pub fn safe_git(dir: &Path, args: &[&str]) -> String {
    let mut git = Command::new("git");
    git.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "filter.dump.clean=",
            "-c",
            "filter.dump.smudge=",
            "-c",
            "filter.dump.required=false",
        ]);
    git_with(git, dir, args)
}

/// The plant was effective: a plain git commit in the checkout runs it.
fn assert_plant_is_live(repo: &Path, dump: &Path) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "--allow-empty",
            "-m",
            "x",
        ])
        .current_dir(repo)
        .output()
        .expect("git runs");
    assert!(out.status.code().is_some(), "git ran");
    assert!(dump.exists(), "a plain git commit runs the planted hooks");
}

fn assert_nothing_in(files_under: &Path, needles: &[&str]) {
    for entry in walkdir::WalkDir::new(files_under).into_iter().flatten() {
        if entry.file_type().is_file() {
            let text = String::from_utf8_lossy(&std::fs::read(entry.path()).unwrap_or_default())
                .into_owned();
            for n in needles {
                assert!(!text.contains(n), "{n} found in {}", entry.path().display());
            }
        }
    }
}

#[test]
fn planted_hooks_fsmonitor_and_filters_never_run_in_a_cli_run() {
    let probe = tempfile::tempdir().unwrap();
    let dump = probe.path().join("dump.txt");
    let home = probe.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let s = Scenario::new(json!({ "plant_git": dump }), "");
    let mut cmd = s.run_cmd();
    // The agents share the orchestrator's user (a run that is not root, or the identity off):
    // the mode in which they can write `.git/` and plant, so that git's hardening is what stops
    // the plant. With their own uid they cannot plant at all (below).
    cmd.env("SPEC_ORCHESTRATE_AGENT_USER", "off")
        .env("HOME", &home);
    let (stdout, stderr) = run_with_secrets(&mut cmd);
    let repo = &s.demo.repo;
    assert!(
        repo.join(".git/evil/included.cfg").exists() && home.join(".gitconfig").exists(),
        "the agent planted its code"
    );
    assert!(
        !dump.exists(),
        "planted code ran during the run:\n{}",
        std::fs::read_to_string(&dump).unwrap_or_default()
    );
    assert_done_without_secrets(&s, &stdout, &stderr);
    let history = safe_git(
        repo,
        &["log", "--all", "-p", "--no-ext-diff", "--no-textconv"],
    );
    assert!(!history.contains(SECRET) && !history.contains(KEY));
    assert_nothing_in(&repo.join(".specs"), &[SECRET, KEY]);
    assert_nothing_in(&s.dir, &[SECRET, KEY]);

    // `status` and `verify` walk the repository with git too.
    let status = bin().args(["status", "--repo"]).arg(repo).output().unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert!(!dump.exists(), "status ran planted code");

    assert_plant_is_live(repo, &dump);
}

#[test]
fn an_agent_with_its_own_uid_cannot_plant_anything_for_git_and_the_run_goes_on() {
    if !crate::sandbox::is_root() {
        eprintln!(
            "SKIPPED: the tests do not run as root, so agents cannot be given their own uid here"
        );
        return;
    }
    let probe = crate::support::tempdir();
    let dump = probe.path().join("dump.txt");
    let s = Scenario::new(json!({ "plant_git": dump }), "");
    let git = s.demo.repo.join(".git");
    let config = std::fs::read(git.join("config")).unwrap();
    let mut out = s.run_cmd();
    out.env("SPEC_ORCHESTRATE_AGENT_USER", "65532");
    let (stdout, stderr) = run_with_secrets(&mut out);
    // Every agent tried, and was refused: the git directory is never lent to the agents' uid.
    let tried = s.requests().len();
    let refused = crate::rooms::refused_count(&s, "plant_git");
    assert!(
        tried > 0 && refused == tried,
        "{refused} of {tried} calls refused"
    );
    assert!(!git.join("evil").exists(), "nothing planted in .git");
    assert!(!git.join("info/attributes").exists());
    assert_eq!(std::fs::read(git.join("config")).unwrap(), config);
    assert!(!dump.exists(), "no planted program ever ran");
    assert_done_without_secrets(&s, &stdout, &stderr);
}

/// Runs `cmd` with a GitHub token and an API key in its environment; asserts it succeeded and
/// returns its stdout and stderr.
fn run_with_secrets(cmd: &mut assert_cmd::Command) -> (String, String) {
    let out = cmd
        .env("GITHUB_TOKEN", SECRET)
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

/// The run is done with its task committed, and it printed neither secret.
fn assert_done_without_secrets(s: &Scenario, stdout: &str, stderr: &str) {
    assert_eq!(s.state().phase(), Phase::Done);
    let subjects = safe_git(&s.demo.repo, &["log", "--format=%s"]);
    assert!(subjects.contains("T001"), "{subjects}");
    for text in [stdout, stderr] {
        assert!(!text.contains(SECRET) && !text.contains(KEY));
    }
}

#[test]
fn planted_hooks_fsmonitor_and_filters_never_run_in_the_action_or_its_publish_step() {
    let mut sim = Sim::new(|c, _| c.to_string());
    let dump = sim.root.join("dump.txt");
    let plant = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents/plant_git.py");
    std::fs::write(
        sim.root.join("hostile-git"),
        format!("{}\n{}\n", dump.display(), plant.display()),
    )
    .unwrap();
    let first = sim.labeled("octocat", false);
    let log = sim.run(1001, 1, "issues", &first);
    assert_eq!(log.code, 0, "{}", log.stderr);
    sim.follow(30, false);
    assert!(sim.runs.iter().all(|r| r.code == 0));
    assert_eq!(sim.runs.last().unwrap().output("phase"), "retrospective");
    let planted = sim
        .runs
        .iter()
        .filter(|r| r.workspace.join(".git/evil/included.cfg").exists())
        .count();
    assert!(
        planted >= 4,
        "the agents planted their code in {planted} jobs"
    );
    assert!(
        !dump.exists(),
        "planted code ran during a job:\n{}",
        std::fs::read_to_string(&dump).unwrap_or_default()
    );
    sim.assert_no_secrets();
    let live = sim
        .runs
        .iter()
        .rev()
        .find(|r| r.workspace.join(".git/evil/included.cfg").exists())
        .expect("a planted workspace");
    assert_plant_is_live(&live.workspace, &dump);
}

/// Every file of `src/` with its path relative to `src/`.
fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
            let rel = path
                .strip_prefix(&root)
                .expect("under src")
                .to_string_lossy();
            let text = std::fs::read_to_string(&path).expect("source is text");
            out.push((rel.replace('\\', "/"), text));
        }
    }
}

/// The hardening holds only if nothing in the crate starts git on its own: every git the
/// orchestrator runs is made by `git::harden::base` (through `Git::command`), so a new call site
/// that spawns `git` directly — and would run the checkout's hooks and config with the job's
/// environment — fails here.
#[test]
fn only_the_hardened_command_spawns_git() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let spawns = |text: &str| {
        let flat: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        flat.matches("new(\"git\"").count()
    };
    let outside: Vec<&str> = files
        .iter()
        .filter(|(rel, text)| rel != "git/harden.rs" && spawns(text) > 0)
        .map(|(rel, _)| rel.as_str())
        .collect();
    assert!(
        outside.is_empty(),
        "git is spawned outside git::harden::base in {outside:?}; build the command with Git::command"
    );
    let base = files
        .iter()
        .find(|(rel, _)| rel == "git/harden.rs")
        .map(|(_, text)| spawns(text));
    assert_eq!(
        base,
        Some(1),
        "git::harden::base is the one place git is spawned"
    );
}
