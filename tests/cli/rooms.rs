//! Rooms: every writing role may change only its part of the checkout (the spec author its
//! spec directory, implementers the working tree except `.specs/` and `.git/`); read-only roles
//! nothing. A hostile scripted agent writes outside its room during a whole run: the writes are
//! undone, recorded as `sandbox_violation` (state and PR body), and never reach a commit.

use serde_json::{Value, json};

use crate::hostile_git::safe_git;
use crate::sandbox::is_root;
use crate::support::{Scenario, failures_in};
use spec_orchestrate::state::{AgentFailure, State};
use spec_orchestrate::types::Phase;
use spec_orchestrate::types::kinds::BlockerCategory;

const SPEC: &str = ".specs/add-a-dark-mode-toggle";

/// Runs the scenario to the end; it must succeed.
fn run(s: &Scenario) -> State {
    run_with(s, s.run_cmd())
}

/// Runs the scenario with the agents as the orchestrator's own user (`SPEC_ORCHESTRATE_AGENT_USER
/// =off`): the shared-uid mode (a run that is not root, or root with the identity off), the one
/// mode in which an agent can write `.git/` and git's own files must be put back.
fn run_shared(s: &Scenario) -> State {
    let mut cmd = s.run_cmd();
    cmd.env("SPEC_ORCHESTRATE_AGENT_USER", "off");
    run_with(s, cmd)
}

/// Runs the scenario with the agents as their own uid 65532, which is never lent `.git/`; `None`
/// (said on stderr) when the tests are not root and so cannot start another uid.
fn run_separate(s: &Scenario) -> Option<State> {
    if !is_root() {
        eprintln!(
            "SKIPPED: the tests do not run as root, so agents cannot be given their own uid here"
        );
        return None;
    }
    let mut cmd = s.run_cmd();
    cmd.env("SPEC_ORCHESTRATE_AGENT_USER", "65532");
    Some(run_with(s, cmd))
}

fn run_with(s: &Scenario, mut cmd: assert_cmd::Command) -> State {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let state = s.state();
    assert_eq!(state.phase(), Phase::Done);
    state
}

/// The sandbox violations of `role`, each checked to name the agent and phase.
fn violations_of(state: &State, role: &str, phase: &str) -> Vec<AgentFailure> {
    let found: Vec<AgentFailure> = failures_in(state, BlockerCategory::SandboxViolation)
        .into_iter()
        .filter(|v| v.role.to_string() == role)
        .collect();
    assert!(!found.is_empty(), "no violation of {role}: {state:#?}");
    for v in &found {
        assert_eq!(v.agent, "alpha", "{v:?}");
        assert_eq!(v.phase.to_string(), phase, "{v:?}");
    }
    found
}

/// The hostile moves of `role` the scripted agent tried and was refused, as their paths (sorted,
/// once each): `refused.jsonl` of the scenario agent.
pub fn refused_paths(s: &Scenario, mov: &str, role: &str) -> Vec<String> {
    let text =
        std::fs::read_to_string(s.dir.join("state").join("refused.jsonl")).unwrap_or_default();
    let mut paths: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["move"] == mov && r["role"] == role)
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// How many hostile moves `mov` the scripted agents tried and were refused (all roles).
pub fn refused_count(s: &Scenario, mov: &str) -> usize {
    let text =
        std::fs::read_to_string(s.dir.join("state").join("refused.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["move"] == mov)
        .count()
}

/// Every file of the repository's git directory that git runs or reads as configuration
/// (`config`, `hooks/`, `info/`), with its content (`HEAD` moves with the orchestrator's own
/// switch to its feature branch).
fn git_own_files(s: &Scenario) -> Vec<(String, String)> {
    let git = s.demo.repo.join(".git");
    let mut files: Vec<(String, String)> = walkdir::WalkDir::new(&git)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            let rel = e
                .path()
                .strip_prefix(&git)
                .ok()?
                .to_string_lossy()
                .into_owned();
            let own = rel == "config" || rel.starts_with("hooks/") || rel.starts_with("info/");
            own.then(|| {
                let text = String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned();
                (rel, text)
            })
        })
        .collect();
    files.sort();
    files
}

fn paths_of(v: &AgentFailure) -> Vec<String> {
    v.paths.clone()
}

/// The agent's own design change is in no commit, and its work is committed under the task.
fn assert_only_the_room_committed(s: &Scenario) {
    assert!(!history(s).contains("EVIL DESIGN CHANGE"));
    let work = t001_files(s);
    assert_eq!(work, expected_t001(), "the agent's work is under the task");
}

/// The files of the `T001` commit, sorted.
fn t001_files(s: &Scenario) -> Vec<String> {
    let repo = &s.demo.repo;
    let log = safe_git(repo, &["log", "--format=%H %s"]);
    let sha = log
        .lines()
        .find(|l| l.contains(" T001: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("a T001 commit in\n{log}"))
        .to_string();
    let mut files: Vec<String> = safe_git(
        repo,
        &[
            "-c",
            "core.quotePath=false",
            "show",
            "--name-only",
            "--format=",
            &sha,
        ],
    )
    .lines()
    .filter(|l| !l.is_empty())
    .map(str::to_string)
    .collect();
    files.sort();
    files
}

fn expected_t001() -> Vec<String> {
    vec![
        format!("{SPEC}/tasks.md"),
        "check.py".into(),
        "outcome.json".into(),
    ]
}

/// Every commit of every branch, with its patch.
fn history(s: &Scenario) -> String {
    safe_git(
        &s.demo.repo,
        &["log", "--all", "-p", "--no-ext-diff", "--no-textconv"],
    )
}

fn pr_body(s: &Scenario) -> String {
    std::fs::read_to_string(s.demo.feature_dir().join("pr-body.md")).unwrap()
}

#[test]
fn a_spec_author_that_edits_app_files_is_undone_recorded_and_in_no_commit() {
    let s = Scenario::new(
        json!({ "stray": { "spec_author": {
            "app.js": "+\n// INJECTED BY THE SPEC AUTHOR\n",
            "evil.js": "STOLEN = 1\n",
            "style.css": "-",
        } } }),
        "",
    );
    let state = run(&s);
    let repo = &s.demo.repo;

    let found = violations_of(&state, "spec_author", "spec_generate");
    assert_eq!(
        found.len(),
        s.requests_of("spec_author").len(),
        "one per call"
    );
    assert_eq!(paths_of(&found[0]), ["app.js", "evil.js", "style.css"]);
    assert!(
        found[0]
            .detail
            .contains(&format!("outside its room ({SPEC}/)")),
        "{:?}",
        found[0]
    );

    let app = std::fs::read_to_string(repo.join("app.js")).unwrap();
    assert!(!app.contains("INJECTED"), "the edit was undone");
    assert!(!repo.join("evil.js").exists(), "the new file was removed");
    assert!(repo.join("style.css").exists(), "the deleted file is back");
    let log = history(&s);
    assert!(!log.contains("INJECTED") && !log.contains("STOLEN"));
    assert_eq!(t001_files(&s), expected_t001());

    let body = pr_body(&s);
    assert!(body.contains("#### Sandbox violations"), "{body}");
    assert!(
        body.contains("| spec_generate | spec_author | alpha | `app.js`, `evil.js`, `style.css` |"),
        "{body}"
    );
}

fn spec_and_git_stray() -> Scenario {
    Scenario::new(
        json!({ "stray": { "impl_backend": {
            "{spec_dir}/design.md": "+\nEVIL DESIGN CHANGE\n",
            "{spec_dir}/notes.md": "smuggled\n",
            ".git/config": "+[evil]\n\tmark = planted\n",
            ".git/hooks/post-checkout": "#!/bin/sh\necho planted\n",
        } } }),
        "",
    )
}

#[test]
fn an_implementer_that_edits_the_spec_or_git_config_is_undone_and_recorded() {
    let s = spec_and_git_stray();
    // The agents share the orchestrator's user: the mode in which `.git/` is theirs to write,
    // so that git's own files are put back (with their own uid, below, they cannot write it).
    let state = run_shared(&s);
    let repo = &s.demo.repo;

    let found = violations_of(&state, "impl_backend", "implement");
    assert_eq!(
        paths_of(&found[0]),
        [
            ".git/config".to_string(),
            ".git/hooks/post-checkout".into(),
            format!("{SPEC}/design.md"),
            format!("{SPEC}/notes.md"),
        ]
    );
    let design = std::fs::read_to_string(repo.join(SPEC).join("design.md")).unwrap();
    assert!(!design.contains("EVIL"), "the spec edit was undone");
    assert!(!repo.join(SPEC).join("notes.md").exists());
    let config = std::fs::read_to_string(repo.join(".git/config")).unwrap();
    assert!(!config.contains("planted"), "{config}");
    assert!(!repo.join(".git/hooks/post-checkout").exists());
    assert!(!history(&s).contains("EVIL DESIGN CHANGE"));
    assert_eq!(t001_files(&s), expected_t001());
    assert!(pr_body(&s).contains("| implement | impl_backend | alpha | `.git/config`, "));
}

#[test]
fn an_implementer_with_its_own_uid_cannot_write_git_config_and_its_spec_edits_are_undone() {
    let s = spec_and_git_stray();
    let before = git_own_files(&s);
    let Some(state) = run_separate(&s) else {
        return;
    };
    let repo = &s.demo.repo;
    // `.git/` is never lent to the agents' uid: each write there was refused...
    assert_eq!(
        refused_paths(&s, "stray", "impl_backend"),
        [".git/config", ".git/hooks/post-checkout"]
    );
    // ...and nothing git runs or reads changed (the orchestrator's own commits move only refs).
    assert_eq!(git_own_files(&s), before);
    assert!(!repo.join(".git/hooks/post-checkout").exists());
    // The spec edits, in the lent working tree, are undone and recorded.
    let found = violations_of(&state, "impl_backend", "implement");
    assert_eq!(
        paths_of(&found[0]),
        [format!("{SPEC}/design.md"), format!("{SPEC}/notes.md")]
    );
    let design = std::fs::read_to_string(repo.join(SPEC).join("design.md")).unwrap();
    assert!(!design.contains("EVIL"), "the spec edit was undone");
    assert!(!repo.join(SPEC).join("notes.md").exists());
    assert!(!history(&s).contains("EVIL DESIGN CHANGE"));
    assert_eq!(t001_files(&s), expected_t001());
    assert!(
        pr_body(&s).contains(&format!(
            "| implement | impl_backend | alpha | `{SPEC}/design.md`, `{SPEC}/notes.md` |"
        )),
        "{}",
        pr_body(&s)
    );
}

fn self_commit() -> Scenario {
    Scenario::new(
        json!({
            "self_commit": true,
            "stray": { "impl_backend": { "{spec_dir}/design.md": "+\nEVIL DESIGN CHANGE\n" } },
        }),
        "",
    )
}

#[test]
fn an_implementer_that_commits_by_itself_is_taken_back_and_only_its_room_is_committed() {
    let s = self_commit();
    // Shared-uid mode: only there can an agent write `.git/` and so commit (below: its own uid).
    let state = run_shared(&s);
    let found = violations_of(&state, "impl_backend", "implement");
    assert_eq!(
        paths_of(&found[0]),
        [".git/HEAD".to_string(), format!("{SPEC}/design.md")]
    );
    let subjects = safe_git(&s.demo.repo, &["log", "--format=%s"]);
    assert!(!subjects.contains("agent's own commit"), "{subjects}");
    assert_only_the_room_committed(&s);
}

#[test]
fn an_implementer_with_its_own_uid_cannot_commit_and_only_its_room_is_committed() {
    let s = self_commit();
    let Some(state) = run_separate(&s) else {
        return;
    };
    // Its `git add` could not write the index in the git directory, which is never lent.
    assert_eq!(refused_paths(&s, "self_commit", "impl_backend"), [".git"]);
    let subjects = safe_git(&s.demo.repo, &["log", "--format=%s"]);
    assert!(!subjects.contains("agent's own commit"), "{subjects}");
    // HEAD never moved, so the only violation is the spec edit, undone.
    let found = violations_of(&state, "impl_backend", "implement");
    assert_eq!(paths_of(&found[0]), [format!("{SPEC}/design.md")]);
    assert_only_the_room_committed(&s);
}

#[test]
fn an_e2e_runner_that_writes_outside_the_steps_file_is_undone_and_recorded() {
    let s = Scenario::new(
        json!({
            "stray": { "e2e_runner": {
                "app.js": "+\n// INJECTED BY THE E2E RUNNER\n",
                "evil.js": "STOLEN = 1\n",
            } },
            "stray_times": { "e2e_runner": 2 },
        }),
        "",
    );
    s.run_cmd().output().unwrap();
    let state = s.state();
    let found = failures_in(&state, BlockerCategory::SandboxViolation);
    assert!(
        found
            .iter()
            .any(|v| v.role.to_string() == "e2e_runner" && v.agent == "alpha"),
        "{found:?}"
    );
    let repo = &s.demo.repo;
    let app = std::fs::read_to_string(repo.join("app.js")).unwrap();
    assert!(!app.contains("INJECTED"), "the edit was undone");
    assert!(!repo.join("evil.js").exists(), "the new file was removed");
    let log = history(&s);
    assert!(!log.contains("INJECTED") && !log.contains("STOLEN"));
}

#[test]
fn names_with_spaces_and_accents_are_judged_as_written() {
    let s = Scenario::new(
        json!({ "stray": {
            "spec_author": { "notes café.txt": "outside\n" },
            "impl_backend": { "docs/menu du café.md": "inside\n" },
        } }),
        "",
    );
    let state = run(&s);
    let found = violations_of(&state, "spec_author", "spec_generate");
    assert_eq!(paths_of(&found[0]), ["notes café.txt"]);
    assert!(!s.demo.repo.join("notes café.txt").exists());
    let mut expected = expected_t001();
    expected.push("docs/menu du café.md".into());
    expected.sort();
    assert_eq!(
        t001_files(&s),
        expected,
        "the implementer's file is in its task's commit"
    );
}

#[test]
fn an_implementer_that_breaks_git_config_has_it_put_back_before_git_runs_again() {
    let s = Scenario::new(
        json!({ "stray": { "impl_backend": { ".git/config": "+[broken\n" } } }),
        "",
    );
    // Shared-uid mode, where the agent can write `.git/config` (its own uid cannot: below).
    let state = run_shared(&s);
    let found = violations_of(&state, "impl_backend", "implement");
    assert_eq!(paths_of(&found[0]), [".git/config"]);
    let config = std::fs::read_to_string(s.demo.repo.join(".git/config")).unwrap();
    assert!(!config.contains("[broken"), "{config}");
    assert_eq!(t001_files(&s), expected_t001());
}

#[test]
fn an_implementer_with_its_own_uid_cannot_break_git_config() {
    let s = Scenario::new(
        json!({ "stray": { "impl_backend": { ".git/config": "+[broken\n" } } }),
        "",
    );
    let before = git_own_files(&s);
    let Some(state) = run_separate(&s) else {
        return;
    };
    assert_eq!(refused_paths(&s, "stray", "impl_backend"), [".git/config"]);
    assert_eq!(git_own_files(&s), before, "nothing git reads changed");
    assert!(
        failures_in(&state, BlockerCategory::SandboxViolation)
            .iter()
            .all(|v| v.role.to_string() != "impl_backend"),
        "nothing to undo: {state:#?}"
    );
    assert_eq!(t001_files(&s), expected_t001());
}
