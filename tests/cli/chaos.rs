//! GitHub's bad minutes, played by the fault mode of the simulated GitHub (`fault_front.rs`).
//!
//! First, each non-idempotent write after an answer lost *after* its effect, scripted: the
//! dispatch finds the run it started and starts no second one; the checkpoint whose
//! `CreateArtifact` answer was lost is uploaded under a sibling name that the next job reads;
//! a lost `FinalizeArtifact` answer is looked up and adopted. Then whole chains against seeded
//! faults on every service (5–12 % of requests), with jobs SIGKILLed at random moments and
//! re-run as "Re-run failed jobs" does (same run id, next attempt, at most 4): each chain ends
//! in one pull request, one status comment, every task committed once, no run whose two
//! successors both worked, and no process left running under the chain's directories. `CHAOS_CHAINS` (default 8) sets how many chains run; see
//! docs/action-mode.md.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use spec_orchestrate::forge::github::GithubForge;
use spec_orchestrate::secrets::Secret;
use spec_orchestrate::store::artifact::ArtifactStore;

use crate::actions_sim::{ISSUE, Sim};
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
    fake.forge(TOKEN)
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
                1001.into(),
            )
            .unwrap();
        assert_eq!(faults_hit(&fake), 1, "{kind:?} was played");
        fake.with(|w| {
            assert_eq!(w.dispatches.len(), 1, "{kind:?}: one run started");
            assert_eq!(
                d.run_id,
                Some(w.dispatches[0].run_id.into()),
                "{kind:?}: adopted"
            );
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
                1001.into(),
            )
            .unwrap();
        fake.with(|w| {
            assert_eq!(w.dispatches.len(), 1, "{kind:?}: one run started");
            assert_eq!(d.run_id, Some(w.dispatches[0].run_id.into()));
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
            1001.into(),
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
            let _ = forge.read_issue(1347.into());
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

const BRANCH: &str = "spec-orchestrate/1347-add-a-dark-mode-toggle";

/// A job stopped by SIGTERM (a cancelled run, a runner shutting down) while the app under test
/// runs stops it too: the job hands the signal to its phase process, which kills the app's
/// group, before it kills the phase's group. Nothing is left under the job's directory for the
/// runner's teardown. Its re-run then goes on to the pull request.
#[test]
fn a_job_stopped_by_sigterm_during_evaluate_leaves_no_app_running() {
    let mut sim = Sim::new(|c, _| c.to_string());
    let first = sim.new_run_id();
    let label = sim.labeled("octocat", false);
    let mut last = sim.run(first, 1, "issues", &label);
    let mut jobs = 1;
    while last.output("phase") != "implement" {
        assert_eq!(last.code, 0, "{}", last.stderr);
        assert!(jobs < 8, "the chain reached no implement job");
        assert_eq!(sim.follow_at_most(1, false), 1);
        last = sim.runs.last().unwrap().clone();
        jobs += 1;
    }
    sim.term_when = Some("node server.js");
    assert_eq!(sim.follow_at_most(1, false), 1);
    let stopped = sim.runs.last().unwrap().clone();
    assert_eq!(
        stopped.code, -1,
        "the evaluate job ended by the signal: {}",
        stopped.stderr
    );
    assert!(
        stopped.left_behind.is_empty(),
        "the job left {:?} running",
        stopped.left_behind
    );
    // "Re-run failed jobs" finishes the chain.
    let payload = stopped.payload.clone();
    let rerun = sim.run(stopped.run_id, 2, "workflow_dispatch", &payload);
    assert_eq!(rerun.code, 0, "{}", rerun.stderr);
    sim.follow(5, true);
    assert_eq!(sim.fake.with(|w| w.pulls.len()), 1);
    assert!(crate::actions_sim::processes_under(&sim.root).is_empty());
}

/// The runner is lost right after GitHub accepted a job's dispatch, before the job could write
/// the new run into the status comment (`next=`): "Re-run failed jobs" must not start a second
/// successor. The fake holds the dispatch's answer and the player kills the job once the run
/// exists, so the moment is exact.
#[test]
fn a_job_lost_after_its_dispatch_was_accepted_is_re_run_without_a_second_successor() {
    let mut sim = Sim::new(|c, _| c.to_string());
    let first = sim.new_run_id();
    let label = sim.labeled("octocat", false);
    sim.kill_at_dispatch = true;
    let lost = sim.run(first, 1, "issues", &label);
    assert_ne!(lost.code, 0, "the job was killed");
    let successor = sim.fake.with(|w| {
        assert_eq!(w.dispatches.len(), 1, "GitHub accepted the dispatch");
        let status = w.status_comments(ISSUE);
        let body = status[0]["body"].as_str().unwrap();
        assert!(
            body.starts_with(&format!(
                "<!-- spec-orchestrate:status issue={ISSUE} checkpoint={first} -->"
            )),
            "the checkpoint was named, the next run not: {body}"
        );
        w.dispatches[0].run_id
    });

    let rerun = sim.run(first, 2, "issues", &label);
    assert_eq!(rerun.code, 0, "{}", rerun.stderr);
    assert_eq!(
        sim.fake.with(|w| w.dispatches.len()),
        1,
        "the re-run adopted the run its first attempt dispatched: {}",
        rerun.stderr
    );
    assert_eq!(rerun.output("next_run"), successor.to_string());
    assert!(
        rerun.stderr.contains(&format!(
            "run {successor} was dispatched by an earlier attempt of run {first}"
        )),
        "{}",
        rerun.stderr
    );
    let body = sim.fake.with(|w| {
        w.status_comments(ISSUE)[0]["body"]
            .as_str()
            .unwrap()
            .to_string()
    });
    assert!(
        body.lines()
            .next()
            .unwrap()
            .contains(&format!("next={successor}")),
        "{body}"
    );

    // The chain goes on through the adopted run to one pull request.
    sim.follow(20, true);
    let w = sim.fake.world.lock().unwrap();
    let mut parents: Vec<&str> = w
        .dispatches
        .iter()
        .map(|d| d.inputs["parent_run"].as_str().unwrap())
        .collect();
    let all = parents.len();
    parents.sort_unstable();
    parents.dedup();
    assert_eq!(parents.len(), all, "no run has two successors");
    assert_eq!(w.status_comments(ISSUE).len(), 1);
    assert_eq!(w.pulls.len(), 1, "one pull request");
    assert_eq!(w.pulls[0]["draft"], false);
    assert!(w.violations.is_empty(), "{:#?}", w.violations);
    drop(w);
    let mut tasks: Vec<String> = sim
        .branch_log(BRANCH)
        .into_iter()
        .filter(|s| s.starts_with('T'))
        .map(|s| s[..4].to_string())
        .collect();
    tasks.sort();
    assert_eq!(tasks, ["T001", "T002", "T003"]);
    assert!(crate::actions_sim::processes_under(&sim.root).is_empty());
}

/// Share of jobs SIGKILLed at a random moment (a runner lost mid-job), in per cent.
const KILL_PERCENT: u64 = 30;

/// Attempts of one run, as "Re-run failed jobs" allows here: the last is never killed, so a
/// chain that needs all four still has one attempt that only GitHub's faults can fail.
const ATTEMPTS: u32 = 4;

/// How many chains run: `CHAOS_CHAINS`, default 8.
fn chains() -> u64 {
    std::env::var("CHAOS_CHAINS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8)
}

/// The first seed: `CHAOS_SEED`, default 1 (chain `i` plays seed `first + i`).
fn first_seed() -> u64 {
    std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// A small seeded random source for the player (kills), apart from the fronts' faults.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, below: u64) -> u64 {
        self.0 = crate::fault_front::mix(self.0);
        self.0 % below
    }
}

/// What one chain cost.
struct Chain {
    seed: u64,
    per_mille: u64,
    /// REST calls (REST, GraphQL, results service) of each job attempt that succeeded.
    calls: Vec<usize>,
    reruns: usize,
    kills: usize,
    faults: usize,
}

/// Plays one chain: the label, then every dispatched run in order, each failed job re-run with
/// the next attempt (up to [`ATTEMPTS`]), [`KILL_PERCENT`] of attempts SIGKILLed at a random
/// moment, GitHub faulting at 5–12 % of requests. Then checks what a chain must leave.
fn play_chain(seed: u64) -> Chain {
    let mut dice = Dice(seed.wrapping_mul(0x2545_F491_4F6C_DD1D));
    let per_mille = 50 + dice.roll(71);
    let mut sim = Sim::with_faults(Faults::seeded(seed, per_mille), |c, _| c.to_string());
    let first = sim.new_run_id();
    let mut queue = std::collections::VecDeque::from([(
        first,
        "issues".to_string(),
        sim.labeled("octocat", false),
    )]);
    let mut followed = 0;
    let mut chain = Chain {
        seed,
        per_mille,
        calls: Vec::new(),
        reruns: 0,
        kills: 0,
        faults: 0,
    };
    // run id -> (it did agent work, the dispatches its attempts made)
    let mut did: BTreeMap<u64, (bool, usize)> = BTreeMap::new();
    let mut jobs = 0;
    while let Some((run_id, event, payload)) = queue.pop_front() {
        jobs += 1;
        assert!(
            jobs <= 40,
            "seed {seed}: the chain did not stop within 40 runs"
        );
        for attempt in 1..=ATTEMPTS {
            if attempt < ATTEMPTS && dice.roll(100) < KILL_PERCENT {
                sim.kill_after = Some(Duration::from_millis(300 + dice.roll(6000)));
                chain.kills += 1;
            }
            let (agents, dispatches) = (sim.agent_calls(), sim.fake.with(|w| w.dispatches.len()));
            let log = sim.run(run_id, attempt, &event, &payload);
            let made = sim.fake.with(|w| w.dispatches.len()) - dispatches;
            assert!(
                made <= 1,
                "seed {seed}: run {run_id} attempt {attempt} dispatched {made} runs"
            );
            let entry = did.entry(run_id).or_default();
            entry.0 |= sim.agent_calls() > agents;
            entry.1 += made;
            if log.code == 0 {
                assert!(
                    log.summary.contains("GitHub API calls this job: "),
                    "seed {seed}: the summary reports the calls: {}",
                    log.summary
                );
                chain.calls.push(log.rest_calls);
                break;
            }
            assert!(
                attempt < ATTEMPTS,
                "seed {seed}: run {run_id} failed {ATTEMPTS} attempts:\n{}",
                log.stderr
            );
            chain.reruns += 1;
        }
        let new: Vec<_> = sim.fake.with(|w| w.dispatches[followed..].to_vec());
        followed += new.len();
        for d in new {
            queue.push_back((
                d.run_id,
                "workflow_dispatch".into(),
                Sim::dispatch_payload(&d.inputs),
            ));
        }
    }
    chain.faults = sim
        .fake
        .faults
        .as_ref()
        .unwrap()
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.fault.is_some())
        .count();
    assert_chain(&sim, seed, &did);
    // A killed attempt's processes went with its container (the player's teardown); every
    // other job stopped what it started.
    let left: Vec<String> = crate::actions_sim::processes_under(&sim.root)
        .into_iter()
        .map(crate::actions_sim::cmdline)
        .collect();
    assert!(left.is_empty(), "seed {seed}: left running: {left:?}");
    chain
}

/// What every chain leaves, whatever GitHub and the runners did.
fn assert_chain(sim: &Sim, seed: u64, did: &BTreeMap<u64, (bool, usize)>) {
    let w = sim.fake.world.lock().unwrap();
    assert!(w.violations.is_empty(), "seed {seed}: {:#?}", w.violations);
    let status = w.status_comments(ISSUE);
    assert_eq!(status.len(), 1, "seed {seed}: one status comment");
    let body = status[0]["body"].as_str().unwrap();
    assert!(
        body.contains("Done: the pull request is ready for review"),
        "seed {seed}: {body}"
    );
    assert_eq!(w.pulls.len(), 1, "seed {seed}: one pull request");
    assert_eq!(w.pulls[0]["draft"], false, "seed {seed}: ready");
    // No run had two successors that both worked: a second dispatch never forks the chain.
    let mut working: HashMap<String, Vec<u64>> = HashMap::new();
    for d in &w.dispatches {
        if did
            .get(&d.run_id)
            .is_some_and(|(worked, made)| *worked || *made > 0)
        {
            working
                .entry(
                    d.inputs["parent_run"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
                .or_default()
                .push(d.run_id);
        }
    }
    for (parent, kids) in &working {
        assert_eq!(
            kids.len(),
            1,
            "seed {seed}: run {parent} has two working successors {kids:?}"
        );
    }
    drop(w);
    let mut tasks: Vec<String> = sim
        .branch_log(BRANCH)
        .into_iter()
        .filter(|s| s.starts_with('T'))
        .map(|s| s[..4].to_string())
        .collect();
    tasks.sort();
    assert_eq!(
        tasks,
        ["T001", "T002", "T003"],
        "seed {seed}: every task committed once: {:?}",
        sim.branch_log(BRANCH)
    );
}

fn median(v: &mut [usize]) -> usize {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

#[test]
fn chains_end_in_one_pull_request_through_faults_kills_and_reruns() {
    let seeds: Vec<u64> = (0..chains()).map(|i| first_seed() + i).collect();
    // Four chains at a time: much of a chain's time is waits (retry-after, backoff).
    let mut done: Vec<Chain> = Vec::new();
    for pair in seeds.chunks(4) {
        let handles: Vec<_> = pair
            .iter()
            .map(|&seed| std::thread::spawn(move || play_chain(seed)))
            .collect();
        for h in handles {
            match h.join() {
                Ok(c) => done.push(c),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    }
    let mut all: Vec<usize> = done.iter().flat_map(|c| c.calls.clone()).collect();
    for c in &done {
        let mut calls = c.calls.clone();
        eprintln!(
            "chaos seed {} ({}‰ faults, {} played): {} jobs, REST calls per job {:?} (median {}, max {}), {} kills, {} re-runs",
            c.seed,
            c.per_mille,
            c.faults,
            c.calls.len(),
            c.calls,
            median(&mut calls),
            calls.iter().max().copied().unwrap_or(0),
            c.kills,
            c.reruns
        );
    }
    eprintln!(
        "chaos: {} chains; REST calls per job median {}, max {}; re-runs per chain {:?}",
        done.len(),
        median(&mut all),
        all.iter().max().copied().unwrap_or(0),
        done.iter().map(|c| c.reruns).collect::<Vec<_>>()
    );
}
