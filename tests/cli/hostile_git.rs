//! A hostile agent plants code for git to run (hooks, `core.fsmonitor`, a filter driver in an
//! included config file with `.gitattributes` naming it, a textconv driver, `diff.external`,
//! an editor, signing, a `~/.gitconfig` hooks path) and the whole pipeline then runs — CLI and
//! `action` against the simulated GitHub. None of it may run, and no secret of the job may
//! appear anywhere. A final plain `git commit` proves the plant was live.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::actions_sim::Sim;
use crate::support::{Scenario, bin};

const SECRET: &str = "ghp_PlantedSecretValue0123456789abcdef";
const KEY: &str = "sk-ant-api03-PlantedKey0123456789abcdef";

/// git with everything the plant could use switched off, to read the repository afterwards.
fn safe_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .env_clear()
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
        ])
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
    let _ = out;
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
    let out = s
        .run_cmd()
        .env("HOME", &home)
        .env("GITHUB_TOKEN", SECRET)
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
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
    assert_eq!(s.state()["phase"], "done");
    let subjects = safe_git(repo, &["log", "--format=%s"]);
    assert!(subjects.contains("T001"), "{subjects}");

    for text in [&*stdout, &*stderr] {
        assert!(!text.contains(SECRET) && !text.contains(KEY));
    }
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

/// A second issue file for the same demo repository.
fn second_issue(s: &Scenario) -> std::path::PathBuf {
    let path = s.demo.tmp.path().join("other-issue.md");
    std::fs::write(
        &path,
        "# Export notes as markdown\n\nAdd an export button.\n",
    )
    .unwrap();
    path
}

#[test]
fn a_second_run_in_the_same_checkout_is_refused_naming_the_feature_that_holds_it() {
    let s = Scenario::new(json!({ "sleep": 4 }), "");
    let mut first = std::process::Command::new(assert_cmd::cargo::cargo_bin("spec-orchestrate"));
    first
        .args(["run", "--until", "spec_review", "--issue"])
        .arg(&s.demo.issue)
        .arg("--repo")
        .arg(&s.demo.repo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = first.spawn().unwrap();
    // Wait until the first run holds the checkout (its feature written into the lock).
    let lock = s.demo.repo.join(".git/spec-orchestrate.lock");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::read_to_string(&lock)
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the first run never took the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = bin()
        .arg("run")
        .arg("--issue")
        .arg(second_issue(&s))
        .arg("--repo")
        .arg(&s.demo.repo)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let status = child.wait().unwrap();
    assert!(status.success(), "the first run is undisturbed");
    assert_eq!(out.status.code(), Some(4), "a state error: {stderr}");
    assert!(stderr.contains("this checkout is in use"), "{stderr}");
    assert!(
        stderr.contains("`add-a-dark-mode-toggle`"),
        "names the holder: {stderr}"
    );
    assert!(
        !s.demo.repo.join(".specs/export-notes-as-markdown").exists(),
        "the second run wrote nothing"
    );
    // Once the first run is over, the checkout is free again.
    bin()
        .arg("run")
        .arg("--until")
        .arg("intake")
        .arg("--issue")
        .arg(second_issue(&s))
        .arg("--repo")
        .arg(&s.demo.repo)
        .assert()
        .success();
}

#[test]
fn a_deleted_checkout_lock_stops_the_holder_before_it_commits() {
    let probe = tempfile::tempdir().unwrap();
    let _ = probe;
    let s = Scenario::new(json!({}), "");
    let lock = s.demo.repo.join(".git/spec-orchestrate.lock");
    std::fs::write(
        s.dir.join("scenario.json"),
        json!({ "unlink": { "T001": lock } }).to_string(),
    )
    .unwrap();
    let out = s.run_cmd().output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "the holder stopped: {stderr}");
    assert!(stderr.contains("deleted or replaced"), "{stderr}");
    assert!(stderr.contains("resume"), "says how to go on: {stderr}");
    let subjects = safe_git(&s.demo.repo, &["log", "--format=%s"]);
    assert!(!subjects.contains("T001"), "nothing committed: {subjects}");

    // The scenario no longer deletes it: resume commits T001 exactly once.
    std::fs::write(s.dir.join("scenario.json"), "{}").unwrap();
    bin()
        .arg("resume")
        .arg("--repo")
        .arg(&s.demo.repo)
        .assert()
        .success();
    let subjects = safe_git(&s.demo.repo, &["log", "--format=%s"]);
    assert_eq!(
        subjects.lines().filter(|l| l.starts_with("T001")).count(),
        1,
        "{subjects}"
    );
}
