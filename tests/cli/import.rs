//! `import`: real spec-kit, Kiro and OpenSpec directories (tests/fixtures/import/README.md names
//! their sources and licences) become the four documents, which pass `inspect` with every
//! original id kept beside ours; defects of the original are inspection findings that name the
//! original file and line; the original files are never modified.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use spec_orchestrate::phases::inspect::{self, Level};
use spec_orchestrate::spec::SpecDocs;
use spec_orchestrate::spec::import::ImportMap;
use spec_orchestrate::types::kinds::CallRole;
use spec_orchestrate::types::{Phase, Role};

use crate::support::{bin, git};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import")
}

/// A git repository holding a copy of one fixture at `at` (relative), as a team's repository
/// holds its spec.
pub fn repo_with(fixture: &str, at: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = crate::support::tempdir();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    copy_dir(&fixtures().join(fixture), &repo.join(at));
    (tmp, repo)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Every file under `dir` with its bytes, to show the originals untouched.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(dir) {
        let e = e.unwrap();
        if e.file_type().is_file() {
            out.insert(e.path().to_path_buf(), std::fs::read(e.path()).unwrap());
        }
    }
    out
}

fn import(repo: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    bin().current_dir(repo).arg("import").args(args).assert()
}

/// The findings that block (CRITICAL, WARNING), without the browser steps, which `spec_generate`
/// converts later.
fn blocking(repo: &Path, feature: &str) -> Vec<inspect::Check> {
    let docs = SpecDocs::read(&repo.join(".specs").join(feature));
    inspect::check(&docs, repo, true)
        .into_iter()
        .filter(|c| c.level != Level::Info && c.file != "test.steps.json")
        .collect()
}

#[test]
fn real_spec_kit_kiro_and_openspec_specs_import_into_documents_that_pass_inspect() {
    for (fixture, at, feature, ids) in [
        (
            "spec-kit/012-tags",
            "specs/012-tags",
            "012-tags",
            vec![
                ("REQ-001", "FR-001"),
                ("REQ-004", "FR-004"),
                ("NFR-002", "SC-002"),
                ("REQ-005", "US1"),
                ("T-A02", "US1/AC2"),
                ("T006", "T006 [US1]"),
            ],
        ),
        (
            "kiro/folder-steering-dirs",
            ".kiro/specs/folder-steering-dirs",
            "folder-steering-dirs",
            vec![
                ("REQ-002", "Requirement 2"),
                ("T-A05", "2.2"),
                ("T001", "1.1"),
                ("T002", "2.1"),
            ],
        ),
        (
            "openspec/add-devin-desktop-support",
            "openspec/changes/add-devin-desktop-support",
            "add-devin-desktop-support",
            vec![
                (
                    "REQ-001",
                    "ai-tool-paths: Migrating OpenSpec content out of a renamed tool's former directory",
                ),
                ("REQ-002", "cli-update: Slash Command Updates"),
                ("T004", "4.2"),
            ],
        ),
    ] {
        let (_tmp, repo) = repo_with(fixture, at);
        let before = snapshot(&repo.join(at));
        import(&repo, &[at]).success();
        assert_eq!(
            snapshot(&repo.join(at)),
            before,
            "{fixture}: the original files are unchanged"
        );
        let found = blocking(&repo, feature);
        assert!(found.is_empty(), "{fixture}: {found:#?}");
        let map = ImportMap::read(&repo.join(".specs").join(feature)).expect("imported.json");
        for (ours, label) in ids {
            assert_eq!(map.ids[ours].label, label, "{fixture}: {ours}");
            assert!(
                map.ids[ours].at.file.starts_with(at),
                "{fixture}: {:?}",
                map.ids[ours]
            );
        }
        let design =
            std::fs::read_to_string(repo.join(".specs").join(feature).join("design.md")).unwrap();
        assert!(
            design.contains("| Req ID | Requirement | Design Component | Original |"),
            "{design}"
        );
    }
}

#[test]
fn defects_of_the_original_are_exactly_the_findings_and_name_its_file_and_line() {
    let (_tmp, repo) = repo_with("spec-kit/013-defects", "specs/013-defects");
    import(&repo, &["specs/013-defects"]).success();
    let found: Vec<String> = blocking(&repo, "013-defects")
        .iter()
        .map(|c| format!("{:?} {}:{} {}", c.level, c.file, c.line, c.message))
        .collect();
    let expected = [
        // T008 names T099, which the original never defines: an unclear dependency.
        "Critical tasks.md:54 T099 is referenced but never defined — imported from `specs/013-defects/tasks.md:46` (T008 [US2])",
        // FR-002 is named by no scenario or success criterion: no testable criterion.
        "Warning requirement.md:15 REQ-002 has no acceptance case in test.md — imported from `specs/013-defects/spec.md:55` (FR-002)",
        // The open question of FR-001, at its line.
        "Warning requirement.md:14 unresolved clarification [NEEDS CLARIFICATION: may a note carry the same tag twice?]: answer it in the text — imported from `specs/013-defects/spec.md:54`",
        // T002 and T003 are both [P] on one file: which goes first is asked, under T003.
        "Warning tasks.md:25 unresolved clarification [NEEDS CLARIFICATION: T002 and T003 may run in parallel (spec-kit's P mark) but both change src/models/tag.py: which goes first?]: answer it in the text — imported from `specs/013-defects/tasks.md:24`",
        // T007 names no path.
        "Warning tasks.md:49 T007 names no path (`- files:`): the original task says no file it changes — imported from `specs/013-defects/tasks.md:45` (T007 [US2])",
    ];
    let mut sorted_expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    sorted_expected.sort();
    let mut sorted_found = found.clone();
    sorted_found.sort();
    assert_eq!(sorted_found, sorted_expected, "{found:#?}");
}

#[test]
fn dry_run_prints_what_would_be_written_and_what_was_not_mapped_and_writes_nothing() {
    let (_tmp, repo) = repo_with("spec-kit/012-tags", "specs/012-tags");
    let out = import(&repo, &["specs/012-tags", "--dry-run"]).success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(!repo.join(".specs").exists(), "a dry run writes nothing");
    insta::assert_snapshot!("import_dry_run_spec_kit", text);
}

#[test]
fn openspec_sections_stay_apart_and_a_removed_scenario_is_quoted_not_run() {
    let (_tmp, repo) = repo_with(
        "openspec/adopt-delta-based-changes",
        "openspec/changes/adopt-delta-based-changes",
    );
    import(
        &repo,
        &[
            "openspec/changes/adopt-delta-based-changes",
            "--from",
            "openspec",
        ],
    )
    .success();
    let dir = repo.join(".specs/adopt-delta-based-changes");
    let req = std::fs::read_to_string(dir.join("requirement.md")).unwrap();
    let removed = req.find("## REMOVED requirements (cli-diff)").expect(&req);
    let modified = req.find("## MODIFIED requirements (cli-diff)").expect(&req);
    let added = req.find("## ADDED requirements (cli-diff)").expect(&req);
    assert!(removed < modified && modified < added, "{req}");
    assert!(
        req.contains("- [CON-001] (cli-diff: Display Format) Removed: Display Format."),
        "{req}"
    );
    assert!(req.contains("- [REQ-001] (cli-diff: Diff Output)"), "{req}");
    let test = std::fs::read_to_string(dir.join("test.md")).unwrap();
    assert!(
        !test.contains("Unified diff output"),
        "a removed behaviour is not a check: {test}"
    );
    let design = std::fs::read_to_string(dir.join("design.md")).unwrap();
    assert!(
        design
            .contains("### cli-diff: Display Format / Unified diff output (deprecated) (removed)"),
        "{design}"
    );
    assert!(
        design.contains("> - **THEN** show a unified text diff of files"),
        "quoted as written: {design}"
    );
    let tasks = std::fs::read_to_string(dir.join("tasks.md")).unwrap();
    assert!(
        tasks.contains("- [x] T001: Update openspec-conventions spec with delta-based approach"),
        "{tasks}"
    );
    assert!(
        tasks.contains(
            "  - original: 2.1 (`openspec/changes/adopt-delta-based-changes/tasks.md:12`)"
        ),
        "{tasks}"
    );
    // Tasks without a path are findings at their original lines.
    let found = blocking(&repo, "adopt-delta-based-changes");
    assert!(
        found
            .iter()
            .any(|c| c.message.starts_with("T002 names no path")
                && c.message.ends_with("tasks.md:5` (1.2)")),
        "{found:#?}"
    );
}

#[test]
fn import_errors_name_the_file_what_was_expected_and_the_fix() {
    let (_tmp, repo) = repo_with("spec-kit/012-tags", "specs/012-tags");
    std::fs::create_dir_all(repo.join("notes")).unwrap();
    let out = import(&repo, &["notes"]).failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("notes: is not a spec directory this importer knows: expected `spec.md` (spec-kit), `requirements.md` (Kiro) or `proposal.md` (OpenSpec)"), "{err}");
    assert!(err.contains("--from"), "{err}");
    std::fs::write(
        repo.join("specs/012-tags/spec.md"),
        "# Feature Specification: X\n\nNothing here.\n",
    )
    .unwrap();
    let out = import(&repo, &["specs/012-tags"]).failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("spec.md: holds no functional requirement (`- **FR-001**: System MUST …`)"),
        "{err}"
    );
    let (_tmp2, repo) = repo_with("kiro/folder-steering-dirs", "k/tags");
    import(&repo, &["k/tags"]).success();
    let out = import(&repo, &["k/tags"]).failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains(".specs/tags/requirement.md: already exists"),
        "{err}"
    );
    assert!(err.contains("--feature NAME"), "{err}");
}

/// Our documents without what names where they came from (the provenance line, the `original:`
/// fields), which necessarily differ between the two imports.
fn content(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name))
        .unwrap()
        .lines()
        .filter(|l| {
            !l.starts_with("Imported from the ")
                && !l.contains("original: ")
                && !l.starts_with("- Original: ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The traceability matrix's first three columns (the fourth is the original's place).
fn matrix(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("design.md"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("| "))
        .map(|l| l.rsplitn(3, " | ").nth(2).unwrap_or(l).to_string())
        .collect()
}

#[test]
fn export_then_import_gives_the_same_documents_and_ticked_tasks_stay_ticked() {
    for (fixture, at, feature, to) in [
        (
            "spec-kit/012-tags",
            "specs/012-tags",
            "012-tags",
            "spec-kit",
        ),
        (
            "kiro/folder-steering-dirs",
            ".kiro/specs/folder-steering-dirs",
            "folder-steering-dirs",
            "kiro",
        ),
    ] {
        let (_tmp, repo) = repo_with(fixture, at);
        import(&repo, &[at]).success();
        let out = format!("exported/{feature}");
        import_or_export(
            &repo,
            &["export", "--to", to, "--feature", feature, "--out", &out],
        );
        import(&repo, &[&out, "--feature", "again"]).success();
        let (first, again) = (repo.join(".specs").join(feature), repo.join(".specs/again"));
        for doc in ["requirement.md", "tasks.md", "test.md"] {
            assert_eq!(
                content(&first, doc),
                content(&again, doc),
                "{fixture}: {doc}"
            );
        }
        assert_eq!(matrix(&first), matrix(&again), "{fixture}: design.md");
        let tasks = std::fs::read_to_string(again.join("tasks.md")).unwrap();
        assert!(
            tasks.contains("- [x] T001: "),
            "{fixture}: the ticked task stays ticked: {tasks}"
        );
        assert!(tasks.contains("- [ ] T002: "), "{fixture}: {tasks}");
        // Exporting over existing files is refused: an original is never overwritten.
        let refused = bin()
            .current_dir(&repo)
            .args(["export", "--to", to, "--feature", feature, "--out", at])
            .assert()
            .failure();
        let err = String::from_utf8(refused.get_output().stderr.clone()).unwrap();
        assert!(
            err.contains("already exists; export never overwrites a file"),
            "{err}"
        );
    }
}

fn import_or_export(repo: &Path, args: &[&str]) {
    bin().current_dir(repo).args(args).assert().success();
}

/// A Kiro spec of the demo's feature: five criteria, so the demo's scripted e2e_runner knows how
/// to drive one of them (T-A05) and the others are left to inspect.
pub const DARK_MODE_REQUIREMENTS: &str = "# Requirements Document

## Introduction

The Notes page gets a button in its header that switches it between a light and a dark theme.

## Requirements

### Requirement 1: Theme toggle

**User Story:** As a reader, I want a toggle in the header, so that I can choose the theme.

#### Acceptance Criteria

1. WHEN the page loads THEN THE page SHALL show a button with the id `theme-toggle` in the header
2. WHEN the toggle is clicked THEN THE page SHALL switch `data-theme` between `light` and `dark`

### Requirement 2: Remembered choice

**User Story:** As a reader, I want my choice kept, so that a reload keeps the theme.

#### Acceptance Criteria

1. WHEN the theme changes THEN THE page SHALL store it in `localStorage`
2. WHEN the page reloads THEN THE page SHALL apply the stored theme

### Requirement 3: In a real browser

#### Acceptance Criteria

1. WHEN the toggle is clicked in a browser THEN THE page SHALL use the dark palette
";

pub const DARK_MODE_TASKS: &str = "# Implementation Plan

- [ ] 1. Theme toggle
  - [ ] 1.1 Add the toggle button to `index.html` and its styles to `style.css`
    - _Requirements: 1.1, 3.1_
  - [ ] 1.2 Switch and store the theme in `app.js`
    - _Requirements: 1.2, 2.1, 2.2_
";

#[test]
fn an_issue_line_spec_starts_the_run_from_the_imported_spec_and_reaches_a_ready_pr() {
    let demo = crate::support::Demo::new();
    let dir = demo.repo.join(".kiro/specs/dark-mode");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("requirements.md"), DARK_MODE_REQUIREMENTS).unwrap();
    std::fs::write(dir.join("tasks.md"), DARK_MODE_TASKS).unwrap();
    git(&demo.repo, &["add", ".kiro"]);
    git(&demo.repo, &["commit", "-q", "-m", "the team's Kiro spec"]);
    let before = snapshot(&dir);
    let issue = std::fs::read_to_string(&demo.issue).unwrap();
    std::fs::write(
        &demo.issue,
        format!("{issue}\nspec: .kiro/specs/dark-mode/\n"),
    )
    .unwrap();

    let run = demo.run_cmd().assert().success();
    let stderr = String::from_utf8(run.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("started from the kiro spec `.kiro/specs/dark-mode`"),
        "{stderr}"
    );
    let state = demo.state();
    let phases: Vec<Phase> = state.phase_log.iter().map(|e| e.phase).collect();
    assert_eq!(
        phases[..3],
        [Phase::Intake, Phase::SpecGenerate, Phase::Inspect],
        "{phases:?}"
    );
    // The first version is the imported one: the first call of the run converts browser steps,
    // and the author is first asked after inspect judged the import.
    let calls = &state.calls;
    assert_eq!(calls[0].role, CallRole::Role(Role::E2eRunner), "{calls:#?}");
    let first_author = calls
        .iter()
        .position(|c| c.role == CallRole::Role(Role::SpecAuthor))
        .expect("a revision");
    assert!(
        calls[..first_author]
            .iter()
            .all(|c| c.phase == Phase::SpecGenerate),
        "{calls:#?}"
    );
    assert_eq!(
        state.inspect.as_ref().map(|i| i.runs >= 2),
        Some(true),
        "{:#?}",
        state.inspect
    );

    assert!(!crate::support::pr_draft(&state), "a ready PR");
    let body = std::fs::read_to_string(demo.feature_dir().join("pr-body.md")).unwrap();
    crate::support::assert_contains_all(
        &body,
        &[
            "ready for review",
            "#### Imported spec",
            "Started from the kiro spec `.kiro/specs/dark-mode`",
            "| REQ-001 | Requirement 1 (`.kiro/specs/dark-mode/requirements.md:9`) | changed by the review |",
        ],
    );
    assert_eq!(
        snapshot(&dir),
        before,
        "the original files are never modified"
    );
    let committed = git(
        &demo.repo,
        &["show", "HEAD:.specs/add-a-dark-mode-toggle/imported.json"],
    );
    assert!(committed.contains("\"format\": \"kiro\""), "{committed}");
}
