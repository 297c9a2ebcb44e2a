//! Panel wall time: six personas that each take a fixed time must finish within 1.3× of one
//! reviewer, because the personas run concurrently (issue 3's acceptance figure).
//!
//! Each reviewer is a `command` agent that sleeps `REVIEW_SECONDS` and prints an envelope; the
//! bench runs the real `panel::review` (request building, process spawning, the sandbox guard
//! over a git work tree, envelope parsing, the merge) with one persona and with all six, then
//! prints the ratio of the means. `cargo bench --bench panel`.

// A test or benchmark program prints for the person running it; the library may not.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use spec_orchestrate::config::{AgentConfig, AgentKind, Config};
use spec_orchestrate::git::Git;
use spec_orchestrate::review::calls::{CallEnv, FollowUp, Guard};
use spec_orchestrate::review::panel;
use spec_orchestrate::review::strategy::PromptVars;
use spec_orchestrate::secrets::Redactor;
use spec_orchestrate::types::kinds::Persona;

const REVIEW_SECONDS: &str = "0.5";

struct Fixture {
    _tmp: tempfile::TempDir,
    repo: std::path::PathBuf,
    config: Config,
    redactor: Redactor,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    let spec = repo.join(".specs/bench");
    std::fs::create_dir_all(&spec).expect("spec dir");
    for doc in ["requirement.md", "design.md", "tasks.md", "test.md"] {
        std::fs::write(spec.join(doc), format!("# {doc}\n")).expect("doc");
    }
    let git = Git::new(&repo);
    git.run(&["init", "--quiet"]).expect("git init");
    git.commit_all("bench").expect("commit");
    let mut config = Config::default();
    let mut agent = AgentConfig::of_kind(AgentKind::Command);
    agent.command = Some(vec![
        "sh".into(),
        "-c".into(),
        format!(
            "cat >/dev/null; sleep {REVIEW_SECONDS}; printf '%s' '{{\"findings\": [], \"converged\": true}}'"
        ),
    ]);
    config.agents.insert("sleeper".into(), agent);
    Fixture {
        _tmp: tmp,
        repo,
        config,
        redactor: Redactor::default(),
    }
}

fn env<'a>(f: &'a Fixture) -> CallEnv<'a> {
    CallEnv {
        config: &f.config,
        redactor: &f.redactor,
        workdir: f.repo.clone(),
        spec_dir: ".specs/bench".into(),
        files: vec![".specs/bench/design.md".into()],
        phase: "spec_review".into(),
        follow_up: FollowUp::envelope("{{error}}".into()),
        budget_left: None,
        guard: Guard::Git {
            git: Git::new(&f.repo),
            watch: vec![".specs/bench".into()],
        },
    }
}

fn review(f: &Fixture, personas: &[Persona]) {
    let vars = PromptVars {
        target: "the bench spec".into(),
        ..PromptVars::default()
    };
    let out = panel::review(
        &env(f),
        Path::new(&f.repo),
        &vars,
        "sleeper",
        personas,
        Some(1),
    )
    .expect("panel runs");
    let merged = out.review.expect("every persona answered");
    assert_eq!(merged.members.len(), personas.len());
}

fn bench(c: &mut Criterion) {
    let f = fixture();
    let mut group = c.benchmark_group("panel");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("one reviewer", |b| {
        b.iter(|| review(&f, &[Persona::Architect]))
    });
    group.bench_function("six reviewers", |b| b.iter(|| review(&f, &Persona::ALL)));
    group.finish();
}

/// The acceptance figure: mean of `runs` panels of six over mean of `runs` single reviews.
fn ratio(runs: u32) {
    let f = fixture();
    let mean = |personas: &[Persona]| {
        let start = Instant::now();
        for _ in 0..runs {
            review(&f, personas);
        }
        start.elapsed() / runs
    };
    let one = mean(&[Persona::Architect]);
    let six = mean(&Persona::ALL);
    let r = six.as_secs_f64() / one.as_secs_f64();
    println!(
        "panel wall time: one reviewer {one:?}, six reviewers {six:?}, ratio {r:.3} (limit 1.3) — each reviewer sleeps {REVIEW_SECONDS} s"
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    ratio(10);
    Criterion::default().configure_from_args().final_summary();
}
