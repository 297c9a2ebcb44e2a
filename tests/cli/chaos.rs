//! GitHub's bad minutes, played by the fault mode of the simulated GitHub (`fault_front.rs`).
//!
//! First, each non-idempotent write after an answer lost *after* its effect, scripted: the
//! dispatch finds the run it started and starts no second one; the checkpoint whose
//! `CreateArtifact` answer was lost is uploaded under a sibling name that the next job reads;
//! a lost `FinalizeArtifact` answer is looked up and adopted. Then whole chains against seeded
//! faults on every service (5–12 % of requests), with jobs SIGKILLed at random moments and
//! re-run as "Re-run failed jobs" does (same run id, next attempt, at most 4): each chain ends
//! in one pull request, one status comment, every task committed once, and no run whose two
//! successors both worked. `CHAOS_CHAINS` (default 8) sets how many chains run; see
//! docs/action-mode.md.

use std::collections::BTreeMap;

use spec_orchestrate::forge::github::{GithubForge, GithubTarget};
use spec_orchestrate::secrets::Secret;
use spec_orchestrate::store::artifact::ArtifactStore;

use crate::fake_github::{FakeGithub, FaultKind, Faults, OWNER, REPO, Scripted};

const TOKEN: &str = "ghs_ChaosTestToken0123456789abcdef";

/// A fake whose only faults are `script`.
fn scripted(script: &[(&str, &str, FaultKind)]) -> FakeGithub {
    let faults = Faults::seeded(0, 0);
    *faults.scripted.lock().unwrap() = script
        .iter()
        .map(|(method, path, kind)| Scripted {
            method: method.to_string(),
            path_contains: path.to_string(),
            kind: *kind,
            times: 1,
        })
        .collect();
    FakeGithub::start_with_faults(TOKEN, "Found a bug", "It breaks.", faults)
}

fn forge(fake: &FakeGithub) -> GithubForge {
    let api = fake.api_uri();
    GithubForge::new(
        GithubTarget {
            api_url: api.clone(),
            graphql_url: format!("{api}/graphql"),
            owner: OWNER.into(),
            repo: REPO.into(),
        },
        TOKEN,
    )
    .unwrap()
}

fn store(fake: &FakeGithub, run: u64) -> ArtifactStore {
    let api = fake.api_uri();
    ArtifactStore::new(
        &format!("{api}/"),
        Secret::new(fake.runtime_token(run, 1)).unwrap(),
        &api,
        &format!("{OWNER}/{REPO}"),
        Secret::new(TOKEN).unwrap(),
    )
    .unwrap()
}

fn faults_hit(fake: &FakeGithub) -> usize {
    let f = fake.faults.as_ref().unwrap();
    f.seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.fault.is_some())
        .count()
}

#[test]
fn a_dispatch_whose_answer_is_lost_adopts_the_run_it_started_and_never_starts_two() {
    let inputs = BTreeMap::from([
        ("issue".to_string(), "1347".to_string()),
        ("parent_run".to_string(), "1001".to_string()),
    ]);
    let title = "spec-orchestrate: issue #1347";
    for kind in [FaultKind::ResetAfter, FaultKind::BadGatewayAfter] {
        let fake = scripted(&[("POST", "/dispatches", kind)]);
        let d = forge(&fake)
            .dispatch(
                "spec-orchestrate.yml",
                "refs/heads/main",
                &inputs,
                title,
                1001,
            )
            .unwrap();
        assert_eq!(faults_hit(&fake), 1, "{kind:?} was played");
        fake.with(|w| {
            assert_eq!(w.dispatches.len(), 1, "{kind:?}: one run started");
            assert_eq!(d.run_id, Some(w.dispatches[0].run_id), "{kind:?}: adopted");
            assert_eq!(w.count("POST", "/dispatches"), 1, "{kind:?}: sent once");
            assert!(w.violations.is_empty(), "{:#?}", w.violations);
        });
    }
    // Lost before GitHub saw it: nothing is listed, so the dispatch goes again, once.
    for kind in [
        FaultKind::ResetBefore,
        FaultKind::BadGatewayBefore,
        FaultKind::RateLimited,
    ] {
        let fake = scripted(&[("POST", "/dispatches", kind)]);
        let d = forge(&fake)
            .dispatch(
                "spec-orchestrate.yml",
                "refs/heads/main",
                &inputs,
                title,
                1001,
            )
            .unwrap();
        fake.with(|w| {
            assert_eq!(w.dispatches.len(), 1, "{kind:?}: one run started");
            assert_eq!(d.run_id, Some(w.dispatches[0].run_id));
        });
    }
    // The run that asked is listed too (same title): it is never taken for its own successor.
    let fake = scripted(&[("POST", "/dispatches", FaultKind::BadGatewayBefore)]);
    let forge = forge(&fake);
    let first = forge
        .dispatch(
            "spec-orchestrate.yml",
            "refs/heads/main",
            &inputs,
            title,
            1001,
        )
        .unwrap()
        .run_id
        .unwrap();
    fake.faults.as_ref().unwrap().scripted.lock().unwrap()[0].times = 1;
    let second = forge
        .dispatch(
            "spec-orchestrate.yml",
            "refs/heads/main",
            &inputs,
            title,
            first,
        )
        .unwrap()
        .run_id
        .unwrap();
    assert!(
        second > first,
        "{second} is the new run, not its parent {first}"
    );
    assert_eq!(fake.with(|w| w.dispatches.len()), 2);
}

#[test]
fn a_checkpoint_whose_create_or_finalize_answer_is_lost_is_kept_once_and_read_back() {
    let zip = b"PK\x05\x06 checkpoint bytes".to_vec();
    let name = "spec-orchestrate-1347-intake-a1";

    // CreateArtifact made the artifact but its answer (the upload URL) was lost: the service
    // refuses the name again, so the checkpoint goes up under the sibling name.
    let fake = scripted(&[(
        "POST",
        "ArtifactService/CreateArtifact",
        FaultKind::ResetAfter,
    )]);
    let saved = store(&fake, 1001).save(name, &zip).unwrap();
    assert_eq!(saved.name, format!("{name}.2"));
    let found = store(&fake, 1001).load_latest(1001, 1347).unwrap().unwrap();
    assert_eq!(
        (found.name.as_str(), found.zip.as_slice()),
        (saved.name.as_str(), zip.as_slice())
    );
    fake.with(|w| {
        let finalized: Vec<&str> = w
            .artifacts
            .iter()
            .filter(|a| a.finalized)
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(finalized, [saved.name.as_str()], "one checkpoint");
        assert!(w.violations.is_empty(), "{:#?}", w.violations);
    });

    // A 502 before the service saw it: the same name again.
    let fake = scripted(&[(
        "POST",
        "ArtifactService/CreateArtifact",
        FaultKind::BadGatewayBefore,
    )]);
    assert_eq!(store(&fake, 1001).save(name, &zip).unwrap().name, name);

    // FinalizeArtifact took effect, its answer was lost: looked up by name, adopted.
    for kind in [FaultKind::ResetAfter, FaultKind::BadGatewayAfter] {
        let fake = scripted(&[("POST", "ArtifactService/FinalizeArtifact", kind)]);
        let saved = store(&fake, 1001).save(name, &zip).unwrap();
        assert_eq!(saved.name, name, "{kind:?}");
        fake.with(|w| {
            let a: Vec<_> = w.artifacts.iter().filter(|a| a.finalized).collect();
            assert_eq!(a.len(), 1, "{kind:?}");
            assert_eq!(
                saved.id,
                Some(a[0].id),
                "{kind:?}: the id of the finalized artifact"
            );
            assert_eq!(
                w.count("POST", "ListArtifacts"),
                1,
                "{kind:?}: looked up once"
            );
        });
    }

    // Storage and the results service faulted on every call kind: still one checkpoint.
    let fake = scripted(&[
        (
            "POST",
            "ArtifactService/CreateArtifact",
            FaultKind::RateLimited,
        ),
        ("PUT", "/artifacts/", FaultKind::ResetAfter),
        ("PUT", "/artifacts/", FaultKind::RateLimited),
        ("PUT", "/artifacts/", FaultKind::BadGatewayAfter),
        (
            "POST",
            "ArtifactService/FinalizeArtifact",
            FaultKind::RateLimited,
        ),
    ]);
    let saved = store(&fake, 1001).save(name, &zip).unwrap();
    assert_eq!(saved.name, name);
    assert_eq!(faults_hit(&fake), 5);
    let found = store(&fake, 1001).load_latest(1001, 1347).unwrap().unwrap();
    assert_eq!(found.zip, zip);
    fake.with(|w| assert!(w.violations.is_empty(), "{:#?}", w.violations));
}

#[test]
fn the_same_seed_plays_the_same_faults() {
    let decide = |seed: u64| {
        let fake = FakeGithub::start_with_faults(
            TOKEN,
            "Found a bug",
            "It breaks.",
            Faults::seeded(seed, 120),
        );
        let forge = forge(&fake);
        for _ in 0..40 {
            let _ = forge.read_issue(1347);
        }
        let seen: Vec<Option<FaultKind>> = fake
            .faults
            .as_ref()
            .unwrap()
            .seen
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.fault)
            .collect();
        seen
    };
    let a = decide(7);
    assert_eq!(a, decide(7), "a seed replays");
    assert_ne!(a, decide(8), "another seed plays other faults");
    let hit = a.iter().filter(|f| f.is_some()).count();
    assert!(hit > 0 && hit < a.len() / 2, "{hit} of {}", a.len());
}
