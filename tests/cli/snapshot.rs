//! Snapshots of what people read: the PR body (ready and draft), the issue's status comment, the
//! Action job summary, `status` (human and `--json`), a merged review and the inspection report.
//!
//! Each is rendered from fixed fixtures under `tests/fixtures/reports/` (a `pipeline-state.json`
//! per run, its evaluate result, reviewer answers, spec documents), so a change to any of these
//! texts shows up as a reviewed diff of a `.snap` file instead of slipping past substring
//! assertions. The fixtures hold fixed timestamps and ids; nothing rendered depends on the clock,
//! the machine or a temp path (the `status` runs are checked for that too).

use std::path::{Path, PathBuf};

use spec_orchestrate::phases::inspect;
use spec_orchestrate::report::{pr_body, status};
use spec_orchestrate::review::envelope;
use spec_orchestrate::review::merge::MergedReview;
use spec_orchestrate::spec::SpecDocs;
use spec_orchestrate::state::job::Effect;
use spec_orchestrate::state::{self, InspectSummary, State};
use spec_orchestrate::types::Phase;
use spec_orchestrate::types::kinds::Gate;

use crate::support::{bin, git};

/// `tests/fixtures/reports/<name>`.
pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports")
        .join(name)
}

/// The state of fixture run `name` (`ready`, `draft`, `waiting`).
pub(crate) fn fixture_state(name: &str) -> State {
    state::store::load_file(&fixture(name).join(state::STATE_FILE)).expect("fixture state loads")
}

/// The PR body of a run whose last acceptance round passed: ready for review.
#[test]
fn snapshot_pr_body_ready() {
    let dir = fixture("ready");
    let state = fixture_state("ready");
    assert!(
        pr_body::is_ready(&state),
        "the ready fixture must render a ready body"
    );
    let result = pr_body::last_result(&dir, &state).expect("evaluate-1.json of the fixture");
    insta::assert_snapshot!("pr_body_ready", pr_body::render(&state, Some(&result)));
}

/// The PR body of a run that landed as a draft: blocked task, stall arbitrations, role overrides,
/// a budget stop it was resumed from, rubric scores and the unresolved findings.
#[test]
fn snapshot_pr_body_draft() {
    let dir = fixture("draft");
    let state = fixture_state("draft");
    assert!(!pr_body::is_ready(&state));
    let result = pr_body::last_result(&dir, &state).expect("evaluate-4.json of the fixture");
    insta::assert_snapshot!("pr_body_draft", pr_body::render(&state, Some(&result)));
}

/// The PR body's **Sandbox violations**, one table per kind of line crossed (files outside a
/// room, the runner's file commands, non-model requests to the proxy), and its **Agent
/// isolation** section when agents shared the orchestrator's user: which protections were in
/// force.
#[test]
fn snapshot_pr_body_sandbox_violations_by_kind() {
    let dir = fixture("ready");
    let mut state = fixture_state("ready");
    let result = pr_body::last_result(&dir, &state).expect("evaluate-1.json of the fixture");
    let failures = serde_json::json!([
        {"phase": "spec_generate", "role": "spec_author", "agent": "claude", "category": "sandbox_violation",
         "detail": "spec_author (claude) changed a path outside its room (.specs/dark-mode/), undone: src/app.js",
         "paths": ["src/app.js"], "ts": "2026-01-01T00:00:00Z"},
        {"phase": "spec_generate", "role": "spec_author", "agent": "claude", "category": "sandbox_violation",
         "detail": "spec_author (claude) or a program it started changed the runner's file commands, put back: set_env changed, restored; add_path changed, restored",
         "ts": "2026-01-01T00:00:01Z"},
        {"phase": "spec_review", "role": "spec_reviewer", "agent": "codex", "category": "sandbox_violation",
         "detail": "spec_reviewer (codex) asked the model API proxy for 2 requests that is not a model endpoint, refused without forwarding: GET /v1/models, GET /v1/files",
         "ts": "2026-01-01T00:00:02Z"}
    ]);
    state
        .agent_failures
        .extend(serde_json::from_value::<Vec<state::AgentFailure>>(failures).unwrap());
    let isolation = "Agents run as the orchestrator's own user (the orchestrator does not run as root (uid 1000), so it cannot start agents as another user). In force: the scrubbed environment, the non-dumpable orchestrator, the model API proxy, rooms and the file-command guard; not in force: a separate uid (agents can write what this user can).";
    let body = pr_body::render_with(&state, Some(&result), Some(isolation));
    let from = body.find("#### Sandbox violations").expect("the section");
    let to = body[from..].find("\n### ").map_or(body.len(), |i| from + i);
    insta::assert_snapshot!("pr_body_sandbox_violations_by_kind", &body[from..to]);
}

/// The issue's status comment while a manual-mode run waits for an arbitration in Action mode.
#[test]
fn snapshot_status_comment_waiting() {
    let state = fixture_state("waiting");
    let message = state.waiting.as_ref().expect("waiting").message.clone();
    let view = status::View {
        checkpoint: Some(7010.into()),
        headline: format!(
            "Waiting for a decision: {message}. Comment `/spec-orchestrate continue`, `swap`, `draft` or `approve`."
        ),
        pr_url: None,
        notice: None,
        ..Default::default()
    };
    let body = status::render(63.into(), &state, &view);
    assert_eq!(
        status::parse_marker(&body),
        Some(status::Marker {
            issue: 63.into(),
            checkpoint: Some(7010.into())
        })
    );
    insta::assert_snapshot!("status_comment_waiting", body);
}

/// The status comment after a failed job: the notice on top, the marker still naming the parent
/// checkpoint that a re-run resumes from.
#[test]
fn snapshot_status_comment_failed_job() {
    // The failed job (run 7010) loaded its parent's checkpoint: the waiting fixture as it was
    // before the third review round, which never got recorded.
    let mut state = fixture_state("waiting");
    state
        .job
        .forget(|e| matches!(e, Effect::Run(r) if r.run_id == 7010));
    state.rounds.spec_review.pop();
    state.arbitrations.clear();
    state.waiting = None;
    let view = status::View {
        checkpoint: Some(7009.into()),
        headline: "spec_review failed in run 7010".into(),
        pr_url: None,
        notice: Some(
            "Run 7010 (attempt 1) failed during spec_review: git push was refused. Use “Re-run failed jobs” on https://github.com/acme/notes/actions/runs/7010 to resume from the checkpoint of run 7009."
                .into(),
        ),
        ..Default::default()
    };
    insta::assert_snapshot!(
        "status_comment_failed_job",
        status::render(63.into(), &state, &view)
    );
}

/// The status comment at the end of a chain that landed a draft pull request.
#[test]
fn snapshot_status_comment_done_draft() {
    let state = fixture_state("draft");
    let view = status::View {
        checkpoint: Some(8118.into()),
        headline: "Done: the pull request is a draft (see why in its body).".into(),
        pr_url: state.pr.as_ref().map(|p| p.url.clone()),
        notice: None,
        ..Default::default()
    };
    insta::assert_snapshot!(
        "status_comment_done_draft",
        status::render(57.into(), &state, &view)
    );
}

/// The job summary of the Action job that ran the stalled review round.
#[test]
fn snapshot_job_summary_waiting() {
    let state = fixture_state("waiting");
    let message = state.waiting.as_ref().expect("waiting").message.clone();
    let headline = format!(
        "Waiting for a decision: {message}. Comment `/spec-orchestrate continue`, `swap`, `draft` or `approve`."
    );
    insta::assert_snapshot!(
        "job_summary_waiting",
        status::job_summary(&state, Some(Phase::SpecReview), &headline, None)
    );
}

/// The job summary of the last job of a chain whose pull request is ready.
#[test]
fn snapshot_job_summary_done_ready() {
    let state = fixture_state("ready");
    let pr = state.pr.as_ref().map(|p| p.url.clone());
    insta::assert_snapshot!(
        "job_summary_done_ready",
        status::job_summary(
            &state,
            Some(Phase::Retrospective),
            "Done: the pull request is ready for review.",
            pr.as_deref()
        )
    );
}

/// A panel round merged with the contract review, from the critics' raw answers (prose, fences
/// and all), parsed the way every review call parses them.
#[test]
fn snapshot_merged_review() {
    let dir = fixture("review");
    let answer = |who: &str| {
        let text = std::fs::read_to_string(dir.join(format!("{who}.txt"))).expect("answer");
        envelope::parse_answer(&text).expect("a usable envelope")
    };
    let mut merged = MergedReview::merge(
        "panel",
        vec![
            ("architect".into(), answer("architect")),
            ("paranoid".into(), answer("paranoid")),
            ("simplifier".into(), answer("simplifier")),
        ],
        vec!["operator (timeout: no answer after 3600 s)".into()],
    );
    merged.add("e2e_runner", answer("e2e_runner"));
    merged.notes.push(
        "Agents: codex reviewed (panel); claude reviewed test.md as the acceptance contract (its reasoning is not kept, only its findings)."
            .into(),
    );
    // The architect's and the paranoid's lockout complaint is one finding, and it is the finding
    // the waiting fixture keeps open: fingerprints in the fixtures are the real ones.
    let waiting = fixture_state("waiting");
    assert_eq!(
        merged.findings[0].finding.fingerprint,
        waiting.open_findings[0].fingerprint
    );
    assert_eq!(merged.findings[0].raised_by, ["architect", "paranoid"]);
    insta::assert_snapshot!(
        "merged_review",
        merged.render_markdown("Spec review, round 3")
    );
}

/// The inspection report of a spec with one defect of each kind the checks know.
#[test]
fn snapshot_inspection_report() {
    let dir = fixture("inspect");
    let docs = SpecDocs::read(&dir);
    let checks = inspect::check(&docs, &dir, false);
    let count = |level| checks.iter().filter(|c| c.level == level).count() as u32;
    let (critical, warning, info) = (
        count(inspect::Level::Critical),
        count(inspect::Level::Warning),
        count(inspect::Level::Info),
    );
    let summary = InspectSummary {
        critical,
        warning,
        info,
        gate: if critical + warning > 0 {
            Gate::Fail
        } else {
            Gate::Pass
        },
        runs: 1,
    };
    insta::assert_snapshot!("inspection_report", inspect::render(&checks, &summary));
}

/// A git repository holding the three fixture runs under `.specs/`, as `status` finds them.
fn status_repo() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    git(tmp.path(), &["init", "--quiet"]);
    for name in ["ready", "draft", "waiting"] {
        let state = fixture_state(name);
        let dir = tmp.path().join(".specs").join(&state.feature);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::copy(
            fixture(name).join(state::STATE_FILE),
            dir.join(state::STATE_FILE),
        )
        .expect("copy state");
    }
    tmp
}

/// Runs `status` with `args` in `repo` and returns its stdout, checked to name no temp path.
fn status_output(repo: &Path, args: &[&str]) -> String {
    let out = bin()
        .arg("status")
        .arg("--repo")
        .arg(repo)
        .args(args)
        .output()
        .expect("status runs");
    assert!(
        out.status.success(),
        "status {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    let tmp = repo.to_string_lossy();
    assert!(
        !stdout.contains(tmp.as_ref()),
        "a temp path leaked:\n{stdout}"
    );
    stdout
}

/// `status` of every run in the repository, for people.
#[test]
fn snapshot_status_human() {
    let repo = status_repo();
    insta::assert_snapshot!("status_human", status_output(repo.path(), &[]));
}

/// `status --json` of one run: the state document as saved (the draft run has the most fields).
#[test]
fn snapshot_status_json() {
    let repo = status_repo();
    let stdout = status_output(
        repo.path(),
        &["--json", "--feature", "export-notes-as-markdown"],
    );
    // Snapshotted as printed (field order included), after checking it is the saved state.
    let printed: State = serde_json::from_str(&stdout).expect("status --json is a state");
    assert_eq!(printed, fixture_state("draft"));
    insta::assert_snapshot!("status_json", stdout);
}
