//! The GitHub forge and the artifact store, called in-process against the simulated GitHub:
//! the idempotent writes a re-run relies on, draft/ready through GraphQL only, permissions,
//! dispatch with and without run details, and checkpoint transfer with retries.

use std::time::{Duration, Instant};

use serde_json::json;
use spec_orchestrate::forge::github::GithubForge;
use spec_orchestrate::report::status::MARKER;
use spec_orchestrate::secrets::Secret;
use spec_orchestrate::store::artifact::ArtifactStore;

use crate::fake_github::{FakeGithub, Fault, OWNER, REPO};

const TOKEN: &str = "ghs_ForgeTestToken0123456789abcdef";

fn setup() -> (FakeGithub, GithubForge) {
    let fake = FakeGithub::start(TOKEN, "Found a bug", "I'm having a problem with this.");
    let forge = fake.forge(TOKEN);
    (fake, forge)
}

#[test]
fn the_status_comment_is_created_once_and_edited_even_past_page_one_or_with_a_lost_id() {
    let (fake, forge) = setup();
    // 120 other comments first, so the status comment lands on the second page.
    fake.with(|w| {
        for i in 0..120 {
            let mut c = crate::fake_github::fixture("issue_comment.json");
            c["id"] = json!(10_000 + i);
            c["body"] = json!(format!("comment {i}"));
            w.comments.push((1347, c));
        }
    });
    let one = forge
        .upsert_comment(
            1347.into(),
            MARKER,
            &format!("{MARKER} issue=1347 -->\nfirst"),
            None,
        )
        .unwrap();
    let two = forge
        .upsert_comment(
            1347.into(),
            MARKER,
            &format!("{MARKER} issue=1347 -->\nsecond"),
            None,
        )
        .unwrap();
    assert_eq!(one.id, two.id, "found by its marker on page 2 and edited");
    let three = forge
        .upsert_comment(
            1347.into(),
            MARKER,
            &format!("{MARKER} issue=1347 -->\nthird"),
            Some(424242.into()), // an id that no longer exists (deleted comment)
        )
        .unwrap();
    assert_eq!(three.id, one.id);
    fake.with(|w| {
        assert!(w.violations.is_empty(), "{:#?}", w.violations);
        let status = w.status_comments(1347);
        assert_eq!(status.len(), 1);
        assert!(status[0]["body"].as_str().unwrap().ends_with("third"));
        assert_eq!(w.count("POST", "/issues/1347/comments"), 1);
        assert!(w.count("GET", "page=2") >= 1, "paged through the comments");
    });
}

#[test]
fn a_pull_request_is_found_by_head_and_turns_ready_or_draft_only_through_graphql() {
    let (fake, forge) = setup();
    let head = "spec-orchestrate/1347-found-a-bug";
    let pr = forge
        .publish_pr(
            "Found a bug",
            head,
            "main",
            "Closes #1347\n\ndraft body",
            true,
        )
        .unwrap();
    assert!(pr.draft);
    assert_eq!(pr.html_url, "https://github.com/octocat/Hello-World/pull/7");

    // Same head again: updated, then marked ready through GraphQL.
    let ready = forge
        .publish_pr(
            "Found a bug",
            head,
            "main",
            "Closes #1347\n\nready body",
            false,
        )
        .unwrap();
    assert_eq!(ready.number, pr.number);
    assert!(!ready.draft);
    // And back to draft.
    let back = forge
        .publish_pr(
            "Found a bug",
            head,
            "main",
            "Closes #1347\n\nready body",
            true,
        )
        .unwrap();
    assert!(back.draft);

    fake.with(|w| {
        assert!(w.violations.is_empty(), "{:#?}", w.violations);
        assert_eq!(w.pulls.len(), 1, "one pull request");
        assert_eq!(w.pulls[0]["body"], "Closes #1347\n\nready body");
        assert_eq!(w.pulls[0]["draft"], true);
        assert_eq!(w.count("POST", "/pulls"), 1);
        let mutations: Vec<String> = w
            .graphql
            .iter()
            .map(|g| {
                assert_eq!(g["variables"]["id"], pr.node_id);
                g["query"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(mutations.len(), 2);
        assert!(mutations[0].contains("markPullRequestReadyForReview"));
        assert!(mutations[1].contains("convertPullRequestToDraft"));
        // REST never tried to change the draft flag.
        let rest_drafts = w
            .requests
            .iter()
            .filter(|r| r.method == "PATCH" && r.url.contains("/pulls/"))
            .filter(|r| String::from_utf8_lossy(&r.body).contains("\"draft\""))
            .count();
        assert_eq!(rest_drafts, 0);
    });
}

#[test]
fn permissions_distinguish_writers_from_readers_and_strangers() {
    let (fake, forge) = setup();
    for (login, role) in [
        ("ada", "admin"),
        ("max", "maintain"),
        ("wes", "write"),
        ("tia", "triage"),
        ("rey", "read"),
    ] {
        fake.set_role(login, role);
    }
    let can = |u: &str| forge.permission(u).unwrap().can_write();
    assert!(can("ada") && can("max") && can("wes"));
    assert!(!can("tia") && !can("rey"));
    let stranger = forge.permission("nobody").unwrap();
    assert!(!stranger.can_write());
    assert_eq!(stranger.level(), "none");
    assert_eq!(forge.permission("max").unwrap().level(), "maintain");
}

#[test]
fn dispatch_returns_the_new_run_id_and_names_what_failed() {
    let (fake, forge) = setup();
    let inputs = std::collections::BTreeMap::from([
        ("issue".to_string(), "1347".to_string()),
        ("parent_run".to_string(), "1001".to_string()),
    ]);
    let d = forge
        .dispatch(
            "spec-orchestrate.yml",
            "refs/heads/main",
            &inputs,
            "spec-orchestrate: issue #1347",
            1001.into(),
        )
        .unwrap();
    assert_eq!(d.run_id, Some(2001.into()));
    fake.with(|w| {
        let body: serde_json::Value = serde_json::from_slice(
            &w.requests
                .iter()
                .find(|r| r.url.ends_with("/dispatches"))
                .unwrap()
                .body,
        )
        .unwrap();
        assert_eq!(
            body,
            json!({"ref": "refs/heads/main", "inputs": {"issue": "1347", "parent_run": "1001"}, "return_run_details": true})
        );
    });
    let too_many: std::collections::BTreeMap<String, String> = (0..26)
        .map(|i| (format!("k{i}"), "v".to_string()))
        .collect();
    let e = forge
        .dispatch("spec-orchestrate.yml", "main", &too_many, "t", 1001.into())
        .unwrap_err()
        .to_string();
    assert!(e.contains("at most 25 inputs"), "{e}");
    // A wrong token: the error says which call and what to check, and never the token.
    let bad = fake.forge("ghs_wrongToken0000000000");
    let e = bad.read_issue(1347.into()).unwrap_err().to_string();
    assert!(
        e.contains("reading issue #1347") && e.contains("401"),
        "{e}"
    );
    assert!(!e.contains("ghs_wrongToken"), "{e}");
    fake.with(|w| w.violations.clear());
}

#[test]
fn checkpoints_survive_throttling_and_storage_never_sees_the_token() {
    let (fake, _) = setup();
    let api = fake.api_uri();
    let runtime = fake.runtime_token(1001, 1);
    fake.with(|w| {
        w.faults = vec![
            Fault {
                method: "POST".into(),
                path_contains: "CreateArtifact".into(),
                status: 503,
                retry_after: Some("0".into()),
                times: 1,
            },
            Fault {
                method: "PUT".into(),
                path_contains: "/artifacts/".into(),
                status: 429,
                retry_after: Some("1".into()),
                times: 1,
            },
            Fault {
                method: "GET".into(),
                path_contains: "/runs/1001/artifacts".into(),
                status: 502,
                retry_after: Some("0".into()),
                times: 1,
            },
            Fault {
                method: "GET".into(),
                path_contains: ".zip".into(),
                status: 500,
                retry_after: Some("0".into()),
                times: 1,
            },
        ]
    });
    let store = ArtifactStore::new(
        &format!("{api}/"),
        Secret::new(runtime).unwrap(),
        &api,
        &format!("{OWNER}/{REPO}"),
        Secret::new(TOKEN).unwrap(),
    )
    .unwrap();
    let zip = b"PK\x05\x06 not really a zip, but bytes are bytes".to_vec();
    let started = Instant::now();
    let saved = store.save("spec-orchestrate-1347-intake-a1", &zip).unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was honoured"
    );
    assert_eq!(saved.size, zip.len() as u64);
    assert!(saved.digest.starts_with("sha256:"));
    assert_eq!(saved.id, Some(501));
    let found = store.load_latest(1001, 1347).unwrap().unwrap();
    assert_eq!(found.name, "spec-orchestrate-1347-intake-a1");
    assert_eq!(found.zip, zip);
    assert!(store.load_latest(1001, 9).unwrap().is_none());
    assert!(store.load_latest(999, 1347).unwrap().is_none());
    fake.with(|w| {
        assert!(w.violations.is_empty(), "{:#?}", w.violations);
        assert!(w.faults.iter().all(|f| f.times == 0), "every fault was hit");
        for r in w.requests.iter().filter(|r| r.server == "blob") {
            assert!(
                r.headers.iter().all(|(k, _)| k != "authorization"),
                "{} {} carried Authorization",
                r.method,
                r.url
            );
        }
        let create: serde_json::Value = serde_json::from_slice(
            &w.requests
                .iter()
                .rfind(|r| r.url.ends_with("/CreateArtifact"))
                .unwrap()
                .body,
        )
        .unwrap();
        assert_eq!(create["name"], "spec-orchestrate-1347-intake-a1");
        // As the official client sends it (`@actions/artifact`, `uploadArtifact`).
        assert_eq!(create["version"], 7);
        assert_eq!(create["mime_type"], "application/zip");
        assert!(
            create["workflow_run_backend_id"]
                .as_str()
                .unwrap()
                .ends_with("-61c7-4aae-887f-30da475f5f1a"),
            "ids come from the token's scp claim"
        );
    });
}

#[test]
fn a_runtime_token_without_the_results_scope_is_a_clear_error() {
    let (fake, _) = setup();
    let api = fake.api_uri();
    let e = ArtifactStore::new(
        &api,
        Secret::new("not-a-jwt").unwrap(),
        &api,
        "o/r",
        Secret::new(TOKEN).unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("ACTIONS_RUNTIME_TOKEN") && e.contains("SPEC_ORCHESTRATE_CHECKPOINT_DIR"),
        "{e}"
    );
}
