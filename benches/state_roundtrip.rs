//! Cost of one loop step's bookkeeping on a long-running state: load `pipeline-state.json` with
//! 1,000 recorded spec_review rounds, take the `spec_review → send back` transition, record one
//! more round and save atomically (temp file, fsync, rename). Every phase of every run pays this,
//! so it must stay small next to an agent call.
//!
//! Run: `cargo bench --bench state_roundtrip` (or add `-- --quick` for a short run).

// A test or benchmark program prints for the person running it; the library may not.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::hint::black_box;
use std::path::Path;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use sha2::{Digest, Sha256};
use spec_orchestrate::machine::{self, Next};
use spec_orchestrate::state::store::StateStore;
use spec_orchestrate::state::{EvaluateRound, IssueRef, Mode, ReviewRound, STATE_FILE, State};
use spec_orchestrate::types::kinds::Gate;
use spec_orchestrate::types::kinds::Strategy;
use spec_orchestrate::types::{Outcome, Phase};

/// Spec review rounds in the saved state.
const REVIEW_ROUNDS: u32 = 1_000;
/// Evaluate rounds in the saved state.
const EVALUATE_ROUNDS: u32 = 50;

fn hex64(seed: &str) -> String {
    hex::encode(Sha256::digest(seed.as_bytes()))
}

fn review_round(n: u32) -> ReviewRound {
    let findings = 1 + n % 4;
    ReviewRound {
        round: n,
        reviewer: if n.is_multiple_of(2) {
            "codex"
        } else {
            "claude"
        }
        .into(),
        critical: findings / 2,
        improvement: findings - findings / 2,
        minor: n % 3,
        fix_required: findings,
        fingerprints: (0..findings)
            .map(|i| hex64(&format!("fp-{n}-{i}")))
            .collect(),
        class_keys: (0..findings)
            .map(|i| format!("requirement.md|section-{}|kind-{i}", n % 7))
            .collect(),
        gate: Gate::Fail,
        failure: None,
        strategy: Strategy::Single,
        members: vec!["spec_reviewer".into(), "e2e_runner".into()],
        skipped: Vec::new(),
    }
}

fn big_state() -> State {
    let issue = IssueRef {
        number: Some(42.into()),
        title: "Dark mode toggle".into(),
        url: Some("https://github.com/acme/notes/issues/42".into()),
        body: "As a user I want a dark mode.".into(),
        labels: vec!["spec-orchestrate".into()],
    };
    let mut state = State::new("dark-mode-toggle", issue, Mode::Auto);
    // A state read back from disk is checked: the phases before spec_review must be done.
    state.mark_completed(Phase::Intake);
    state.mark_completed(Phase::SpecGenerate);
    state.move_to(Phase::SpecReview);
    state.rounds.spec_review = (1..=REVIEW_ROUNDS).map(review_round).collect();
    state.rounds.evaluate = (1..=EVALUATE_ROUNDS)
        .map(|n| EvaluateRound {
            round: n,
            pass: 10,
            fail: 2,
            blocked: 0,
            fingerprints: vec![hex64(&format!("ev-{n}-0")), hex64(&format!("ev-{n}-1"))],
            class_keys: vec![hex64(&format!("ck-{n}-0")), hex64(&format!("ck-{n}-1"))],
            gate: Gate::Fail,
            rubric_score: None,
        })
        .collect();
    state
}

/// The measured work: load, transition, record a round, save.
fn step(store: &StateStore) -> usize {
    let mut state = store.load().expect("state loads").expect("state was saved");
    let next = machine::transition(Phase::SpecReview, Outcome::SendBack).expect("valid pair");
    let Next::Go(phase) = next else {
        panic!("spec_review send-back goes to a phase, got {next:?}");
    };
    state.move_to(phase);
    let n = state.rounds.spec_review.len() as u32 + 1;
    state.rounds.spec_review.push(review_round(n));
    store.save(&mut state).expect("state saves");
    state.rounds.spec_review.len()
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StateStore::open(dir.path()).expect("lock");
    let mut state = big_state();
    store.save(&mut state).expect("initial save");
    let path = dir.path().join(STATE_FILE);
    let baseline = std::fs::read(&path).expect("read baseline");
    eprintln!(
        "state_roundtrip: {} spec_review + {} evaluate rounds, {} KiB on disk",
        REVIEW_ROUNDS,
        EVALUATE_ROUNDS,
        baseline.len() / 1024
    );
    // One step outside the measurement, checked, so the benchmark cannot measure a no-op.
    assert_eq!(step(&store) as u32, REVIEW_ROUNDS + 1);
    check_saved(&path, REVIEW_ROUNDS + 1);

    c.bench_function(
        "state_roundtrip/load+transition+push+save (1000 rounds)",
        |b| {
            b.iter_batched(
                // Restore the 1,000-round document so every iteration does the same work.
                || std::fs::write(&path, &baseline).expect("restore baseline"),
                |()| black_box(step(&store)),
                BatchSize::PerIteration,
            );
        },
    );
}

fn check_saved(path: &Path, rounds: u32) {
    let saved = spec_orchestrate::state::store::load_file(path).expect("saved state loads");
    assert_eq!(saved.rounds.spec_review.len() as u32, rounds);
    assert_eq!(saved.phase(), Phase::SpecGenerate);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .measurement_time(std::time::Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
