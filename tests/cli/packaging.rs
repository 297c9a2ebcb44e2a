//! The packaging is data too: `action.yml`, the workflows and the Dockerfile are parsed and held to
//! what docs/action-mode.md and the issue require (documented keys, exact permissions, actions
//! pinned by SHA, no `${{ }}` inside shell scripts), and the Dockerfile is linted when hadolint is
//! present.

use std::path::Path;

use serde_json::Value;

use crate::support::assert_contains_all;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn yaml(rel: &str) -> Value {
    let text = std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{rel} is not valid YAML: {e}"))
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

fn is_sha(s: &str) -> bool {
    s.len() == 40 && s.chars().all(|c| c.is_ascii_hexdigit())
}

/// Every step of every job.
fn steps(workflow: &Value) -> Vec<Value> {
    workflow["jobs"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
        .flat_map(|j| j["steps"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn assert_hygiene(rel: &str, workflow: &Value) {
    assert!(
        workflow.get("permissions").is_some(),
        "{rel}: top-level permissions are explicit"
    );
    for step in steps(workflow) {
        if let Some(uses) = step["uses"].as_str() {
            let (action, reference) = uses.split_once('@').expect("uses has a ref");
            if action == "spec-orchestrate/spec-orchestrate" {
                continue; // our own action, by its release tag in the user example
            }
            assert!(
                is_sha(reference),
                "{rel}: {uses} is not pinned by commit SHA"
            );
            if action == "actions/checkout" {
                assert_eq!(
                    step["with"]["persist-credentials"],
                    Value::Bool(false),
                    "{rel}: checkout keeps no token on disk"
                );
            }
        }
        if let Some(run) = step["run"].as_str() {
            assert!(
                !run.contains("${{"),
                "{rel}: `${{{{ }}}}` inside a run script is template injection: {run}"
            );
        }
    }
}

#[test]
fn action_yml_is_a_docker_action_with_underscore_inputs_built_from_the_dockerfile_between_releases()
{
    let a = yaml("action.yml");
    assert!(a["name"].as_str().is_some_and(|n| !n.is_empty()));
    assert!(a["description"].as_str().is_some_and(|d| !d.is_empty()));
    assert_eq!(a["runs"]["using"], "docker");
    // Never a mutable image tag: a commit of a branch builds its own Dockerfile; a release tag's
    // commit names the prebuilt image by digest (release_pins_action_yml_to_…).
    assert_eq!(a["runs"]["image"], "Dockerfile");
    assert_eq!(a["runs"]["args"][0], "action");
    let mut inputs = keys(&a["inputs"]);
    inputs.sort();
    assert_eq!(
        inputs,
        [
            "anthropic_api_key",
            "config",
            "fan_out",
            "github_token",
            "job_budget_minutes",
            "mode",
            "openai_api_key",
            "part",
            "task"
        ]
    );
    for name in &inputs {
        assert!(
            a["inputs"][name.as_str()]["description"].as_str().is_some(),
            "{name} is documented"
        );
    }
    assert_eq!(
        a["inputs"]["github_token"]["default"],
        "${{ github.token }}"
    );
    assert_eq!(a["inputs"]["mode"]["default"], "auto");
    let outputs = keys(&a["outputs"]);
    for o in ["phase", "gate", "pr_url", "wave", "parallel"] {
        assert!(outputs.contains(&o.to_string()), "output {o}");
    }
    // Every input is read by the binary under its INPUT_ name.
    let env_rs = std::fs::read_to_string(root().join("src/commands/action/env.rs")).unwrap();
    for name in &inputs {
        let var = format!("INPUT_{}", name.to_uppercase());
        assert!(env_rs.contains(&var), "{var} is read");
    }
}

#[test]
fn the_user_workflow_has_the_triggers_exact_permissions_concurrency_and_timeout() {
    let w = yaml("examples/workflow.yml");
    assert_eq!(
        std::fs::read_to_string(root().join("examples/workflow.yml")).unwrap(),
        spec_orchestrate::commands::init::WORKFLOW_TEMPLATE,
        "init writes this file"
    );
    let on = &w["on"];
    assert_eq!(on["issues"]["types"][0], "labeled");
    assert_eq!(on["issue_comment"]["types"][0], "created");
    assert_eq!(on["pull_request_review"]["types"][0], "submitted");
    let inputs = &on["workflow_dispatch"]["inputs"];
    assert_eq!(inputs["issue"]["required"], Value::Bool(true));
    assert!(inputs.get("parent_run").is_some());
    assert_eq!(
        w["permissions"],
        Value::Object(Default::default()),
        "no permissions at the workflow level: each job says its own"
    );
    let perms_of = |job: &str| -> Vec<(String, String)> {
        let mut p: Vec<(String, String)> = w["jobs"][job]["permissions"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().into()))
            .collect();
        p.sort();
        p
    };
    let writes: Vec<(String, String)> = ["actions", "contents", "issues", "pull-requests"]
        .iter()
        .map(|k| (k.to_string(), "write".to_string()))
        .collect();
    assert_eq!(perms_of("phase"), writes, "exactly these permissions");
    assert_eq!(
        perms_of("join"),
        writes,
        "the join publishes as the phase job does"
    );
    let reads: Vec<(String, String)> = ["actions", "contents", "issues"]
        .iter()
        .map(|k| (k.to_string(), "read".to_string()))
        .collect();
    assert_eq!(
        perms_of("legs"),
        reads,
        "a leg writes nothing to the repository"
    );
    let job = &w["jobs"]["phase"];
    // Job-level, so a run whose job `if:` skips never joins the group; every job of the issue
    // waits its turn (`queue: max`) instead of cancelling the one waiting before it.
    assert!(
        w.get("concurrency").is_none(),
        "no workflow-level concurrency"
    );
    let group = job["concurrency"]["group"].as_str().unwrap();
    assert!(
        group.contains("github.event.issue.number") && group.contains("inputs.issue"),
        "per-issue group: {group}"
    );
    assert_eq!(job["concurrency"]["cancel-in-progress"], Value::Bool(false));
    assert_eq!(job["concurrency"]["queue"], "max");
    let timeout = job["timeout-minutes"].as_u64().expect("timeout-minutes");
    let condition = job["if"].as_str().unwrap();
    assert_job_condition(condition);
    let action = yaml("action.yml");
    let step = steps(&w)
        .into_iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("spec-orchestrate/"))
        })
        .expect("the action step");
    assert_eq!(
        step["uses"],
        format!(
            "spec-orchestrate/spec-orchestrate@v{}",
            env!("CARGO_PKG_VERSION")
        )
        .as_str(),
        "init writes the release of the binary that wrote it (update examples/workflow.yml with the version)"
    );
    let budget: f64 = step["with"]["job_budget_minutes"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        budget < timeout as f64,
        "the job hands over before it is killed"
    );
    for k in keys(&step["with"]) {
        assert!(
            action["inputs"].get(k.as_str()).is_some(),
            "`{k}` is an input of action.yml"
        );
    }
    assert_hygiene("examples/workflow.yml", &w);
}

/// The job's `if:`: the configured labels, the command comment from the repository's own people,
/// and the guards of a review round (a changes-requested review or `/spec-orchestrate fix` on
/// one of our pull requests from this repository).
fn assert_job_condition(condition: &str) {
    let github = spec_orchestrate::config::Config::default().github;
    for label in [github.trigger_label, github.approve_label] {
        assert!(condition.contains(&format!("'{label}'")), "{condition}");
    }
    assert!(condition.contains("'/spec-orchestrate'"), "{condition}");
    assert!(
        condition.contains(
            "contains(fromJSON('[\"OWNER\", \"MEMBER\", \"COLLABORATOR\"]'), github.event.comment.author_association)"
        ),
        "only the repository's owner, members and collaborators start a job by comment: {condition}"
    );
    for guard in [
        "github.event.review.state == 'changes_requested'",
        "contains(github.event.review.body, '/spec-orchestrate fix')",
        "startsWith(github.event.pull_request.head.ref, 'spec-orchestrate/')",
        "github.event.pull_request.head.repo.full_name == github.repository",
        "contains(fromJSON('[\"OWNER\", \"MEMBER\", \"COLLABORATOR\"]'), github.event.review.author_association)",
        "github.event_name == 'issue_comment' && github.event.issue.pull_request &&",
        "startsWith(github.event.comment.body, '/spec-orchestrate fix')",
    ] {
        assert!(
            condition.contains(guard),
            "a review round's guard `{guard}`: {condition}"
        );
    }
}

#[test]
fn the_project_workflows_have_least_permissions_and_pinned_actions() {
    let ci = yaml(".github/workflows/ci.yml");
    assert_eq!(
        ci["permissions"],
        Value::Object(Default::default()),
        "ci: no default permissions"
    );
    let jobs = keys(&ci["jobs"]);
    for j in &jobs {
        let perms = &ci["jobs"][j.as_str()]["permissions"];
        assert_eq!(keys(perms), ["contents"], "{j}: contents only");
        assert_eq!(perms["contents"], "read", "{j}: read only");
    }
    let scripts: Vec<String> = steps(&ci)
        .iter()
        .filter_map(|s| s["run"].as_str().map(str::to_string))
        .collect();
    let all = scripts.join("\n");
    for needle in [
        "cargo fmt --all -- --check",
        "cargo clippy --all-targets --locked -- -D warnings",
        "./.ci/run",
        "hadolint",
        "docker build",
    ] {
        assert!(all.contains(needle), "ci runs {needle}");
    }
    assert_hygiene(".github/workflows/ci.yml", &ci);

    // .ci/run, the entry CI runs here, runs the same linters (advisories need the network).
    let ci_run = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    for needle in [
        "zizmor --offline --no-progress .github/workflows action.yml examples/workflow.yml",
        "actionlint -no-color .github/workflows/*.yml examples/workflow.yml",
        "cargo deny --locked check --hide-inclusion-graph licenses bans sources",
    ] {
        assert!(ci_run.contains(needle), ".ci/run runs {needle}");
    }
    assert!(root().join("deny.toml").is_file(), "cargo-deny's policy");
    // The MSRV job builds with the toolchain Cargo.toml declares.
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let rust_version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("Cargo.toml declares rust-version");
    let msrv_toolchain: Vec<&str> = ci["jobs"]["msrv"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["with"]["toolchain"].as_str())
        .collect();
    assert_eq!(msrv_toolchain, [rust_version], "msrv job = rust-version");
    for (job, needle) in [
        ("msrv", "cargo build --all-targets --locked"),
        (
            "deny",
            "cargo deny --locked check advisories licenses bans sources",
        ),
        (
            "workflows",
            "zizmor\" .github/workflows action.yml examples/workflow.yml",
        ),
        (
            "workflows",
            "actionlint\" .github/workflows/*.yml examples/workflow.yml",
        ),
    ] {
        let runs: Vec<&str> = ci["jobs"][job]["steps"]
            .as_array()
            .unwrap_or_else(|| panic!("ci has a {job} job"))
            .iter()
            .filter_map(|s| s["run"].as_str())
            .collect();
        assert!(
            runs.iter().any(|r| r.contains(needle)),
            "{job} runs {needle}: {runs:?}"
        );
    }
    // Every `uses:` of dtolnay/rust-toolchain names its toolchain: at the pinned commit the
    // input is required, and a job without it fails before running anything.
    for step in steps(&ci) {
        if step["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("dtolnay/rust-toolchain@"))
        {
            assert!(step["with"]["toolchain"].as_str().is_some(), "{step:?}");
        }
    }

    assert_release_workflow();
}

/// The release workflow: no default permissions, one job on main that may push packages and
/// tags, and a script that pins the image by digest and pushes no mutable image tag.
fn assert_release_workflow() {
    let release = yaml(".github/workflows/release.yml");
    assert_eq!(release["permissions"], Value::Object(Default::default()));
    let job = &release["jobs"]["release"];
    assert_eq!(job["permissions"]["packages"], "write");
    assert_eq!(job["permissions"]["contents"], "write", "pushes the tags");
    assert_eq!(job["if"], "github.ref == 'refs/heads/main'");
    assert_eq!(
        release["on"]["workflow_dispatch"]["inputs"]["version"]["required"],
        Value::Bool(true)
    );
    let script: String = steps(&release)
        .iter()
        .filter_map(|s| s["run"].as_str().map(str::to_string))
        .collect();
    assert_contains_all(
        &script,
        &[
            "docker manifest inspect \"$image:$VERSION\"",
            "docker push \"$image:$VERSION\"",
            ".github/scripts/pin-action-image action.yml \"$image\" \"$VERSION\" \"$digest\"",
            "auth push origin \"refs/tags/$tag\"",
            "auth push --force origin \"refs/tags/$major\"",
        ],
    );
    assert!(
        !script.contains(":$major") && !script.contains("latest"),
        "no mutable image tag is pushed"
    );
    assert_hygiene(".github/workflows/release.yml", &release);
}

#[test]
fn release_pins_action_yml_to_the_exact_version_and_digest() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("action.yml");
    std::fs::copy(root().join("action.yml"), &copy).unwrap();
    let script = root().join(".github/scripts/pin-action-image");
    let digest = format!("sha256:{}", "0123456789abcdef".repeat(4));
    let run = |args: &[&str]| {
        std::process::Command::new("bash")
            .arg(&script)
            .arg(&copy)
            .args(args)
            .output()
            .unwrap()
    };
    for bad in [
        ["ghcr.io/o/r", "v1", digest.as_str()],
        ["ghcr.io/o/r", "1.2.3", "sha256:abc"],
        ["ghcr.io/O/r", "1.2.3", digest.as_str()],
        ["ghcr.io/o/r:v1", "1.2.3", digest.as_str()],
    ] {
        assert!(!run(&bad).status.success(), "{bad:?} is refused");
    }
    let out = run(&[
        "ghcr.io/spec-orchestrate/spec-orchestrate",
        "1.2.3",
        &digest,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pinned: Value = serde_saphyr::from_str(&std::fs::read_to_string(&copy).unwrap()).unwrap();
    assert_eq!(
        pinned["runs"]["image"],
        format!("docker://ghcr.io/spec-orchestrate/spec-orchestrate:1.2.3@{digest}").as_str()
    );
    let mut original = yaml("action.yml");
    original["runs"]["image"] = pinned["runs"]["image"].clone();
    assert_eq!(pinned, original, "only the image changes");
}

#[test]
fn the_dockerfile_is_multi_stage_pinned_locked_and_lints_clean() {
    let text = std::fs::read_to_string(root().join("Dockerfile")).unwrap();
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert!(froms.len() >= 3, "multi-stage: {froms:?}");
    assert!(
        !text.lines().any(|l| l.starts_with("# syntax=")),
        "no frontend image pulled by tag"
    );
    for arg in ["ARG RUST_IMAGE=rust:1.", "ARG NODE_IMAGE=node:22."] {
        let line = text.lines().find(|l| l.starts_with(arg)).expect(arg);
        let (reference, digest) = line.split_once('@').expect("pinned by digest");
        let hex = digest.strip_prefix("sha256:").expect("sha256 digest");
        assert!(
            hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()),
            "{line}"
        );
        let tag = reference.rsplit(':').next().unwrap();
        assert!(
            tag.split('-').next().unwrap().matches('.').count() == 2,
            "exact version beside the digest: {line}"
        );
    }
    for needle in [
        "cargo build --release --locked",
        "cargo chef cook --release --locked",
        "npm ci",
        "playwright-core install --with-deps chromium",
        "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}",
        "@openai/codex@${CODEX_VERSION}",
        "git config --system safe.directory '*'",
        "IS_SANDBOX=1",
        "SPEC_ORCHESTRATE_CODEX_SANDBOX=danger-full-access",
        "COPY --from=builder",
        "ENTRYPOINT [\"/usr/local/bin/spec-orchestrate\"]",
    ] {
        assert!(text.contains(needle), "Dockerfile lacks {needle}");
    }
    assert!(!text.contains(":latest"), "no floating tags");
    match std::process::Command::new("hadolint")
        .arg(root().join("Dockerfile"))
        .output()
    {
        Ok(out) => assert!(
            out.status.success(),
            "hadolint:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(_) => eprintln!(
            "hadolint is not installed; the Dockerfile was checked by the rules above only"
        ),
    }
}

/// A git repository in a temp dir with `config` as .specs/pipeline.yml, after `init`.
fn init_with(config: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    init_with_args(config, &[])
}

/// As [`init_with`], with more arguments to `init`.
fn init_with_args(config: &str, args: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().to_path_buf();
    crate::support::git(&repo, &["init", "--quiet"]);
    std::fs::create_dir_all(repo.join(".specs")).unwrap();
    std::fs::write(repo.join(".specs/pipeline.yml"), config).unwrap();
    crate::support::bin()
        .arg("init")
        .arg("--repo")
        .arg(&repo)
        .args(args)
        .assert()
        .success();
    let workflow = repo.join(".github/workflows/spec-orchestrate.yml");
    (dir, workflow)
}

const CUSTOM_GITHUB: &str = "github:\n  trigger_label: 'ai: build'\n  approve_label: \"ai: spec ok\"\n  allowed_bots: [\"renovate[bot]\"]\n";

#[test]
fn init_writes_the_configured_label_names_and_bots_into_the_condition() {
    let (_dir, path) = init_with(CUSTOM_GITHUB);
    let text = std::fs::read_to_string(&path).unwrap();
    let w: Value = serde_saphyr::from_str(&text).unwrap();
    let condition = w["jobs"]["phase"]["if"].as_str().unwrap();
    assert_contains_all(
        condition,
        &[
            "github.event.label.name == 'ai: build'",
            "github.event.label.name == 'ai: spec ok'",
            "github.event.comment.author_association",
            "contains(fromJSON('[\"renovate[bot]\"]'), github.event.comment.user.login)",
        ],
    );
    assert!(!condition.contains("'spec-approved'"), "{condition}");
    assert!(text.contains("add the `ai: build` label"));
    // Everything else is the template's.
    assert_eq!(w["jobs"]["phase"]["concurrency"]["queue"], "max");
    assert_eq!(
        w["permissions"],
        yaml("examples/workflow.yml")["permissions"]
    );
}

/// Runs `tool args…`; `None` when it is not installed.
fn lint(tool: &str, args: &[&std::ffi::OsStr]) -> Option<std::process::Output> {
    match std::process::Command::new(tool).args(args).output() {
        Ok(out) => Some(out),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "{tool} is not installed; the written workflow was checked by the rules above only"
            );
            None
        }
        Err(e) => panic!("{tool}: {e}"),
    }
}

#[test]
fn the_workflow_init_writes_passes_zizmor_and_actionlint() {
    let (_default_dir, default) = init_with("");
    let (_custom_dir, custom) = init_with(CUSTOM_GITHUB);
    let (_sweep_dir, sweep) = init_with_args(CUSTOM_GITHUB, &["--sweep"]);
    let text = std::fs::read_to_string(&sweep).unwrap();
    let w: Value = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(w["on"]["schedule"][0]["cron"], "41 * * * *", "{text}");
    for path in [&default, &custom, &sweep] {
        let file = path.as_os_str();
        if let Some(out) = lint(
            "zizmor",
            &["--offline".as_ref(), "--no-progress".as_ref(), file],
        ) {
            assert!(
                out.status.success(),
                "zizmor {}:\n{}{}",
                path.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        if let Some(out) = lint("actionlint", &["-no-color".as_ref(), file]) {
            assert!(
                out.status.success(),
                "actionlint {}:\n{}{}",
                path.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
