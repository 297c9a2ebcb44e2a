//! `run --issue N` reads the issue from GitHub through the real client, against a local server
//! that serves GitHub's documented payload and fails loudly on any other call.

use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Demo, bin};

const TOKEN: &str = "ghs_localTestToken0123456789";

/// `reads`: how many times the test expects issue 1347 to be read.
async fn github(reads: u64) -> MockServer {
    let server = MockServer::start().await;
    let issue: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/github/issue.json")).unwrap();
    Mock::given(method("GET"))
        .and(path("/repos/octocat/Hello-World/issues/1347"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(issue))
        .expect(reads)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/octocat/Hello-World/issues/9"))
        .respond_with(ResponseTemplate::new(404).set_body_json(serde_json::json!({
            "message": "Not Found",
            "documentation_url": "https://docs.github.com/rest/issues/issues#get-an-issue"
        })))
        .mount(&server)
        .await;
    // Anything else is a bug in the client code: fail loudly.
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(500).set_body_string("unexpected call"))
        .with_priority(100)
        .expect(0)
        .mount(&server)
        .await;
    server
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_number_is_read_from_github_and_names_branch_and_feature() {
    let server = github(1).await;
    let demo = Demo::new();
    let out = bin()
        .args(["run", "--issue", "1347", "--until", "intake", "--repo"])
        .arg(&demo.repo)
        .env("GITHUB_API_URL", server.uri())
        .env("GITHUB_REPOSITORY", "octocat/Hello-World")
        .env("GITHUB_TOKEN", TOKEN)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let state_path = demo.repo.join(".specs/found-a-bug/pipeline-state.json");
    let text = std::fs::read_to_string(&state_path).unwrap();
    let state = spec_orchestrate::state::store::load_file(&state_path).unwrap();
    assert_eq!(state.issue.number.map(u64::from), Some(1347));
    assert_eq!(state.issue.title, "Found a bug");
    assert_eq!(state.issue.body, "I'm having a problem with this.");
    assert_eq!(state.issue.labels, ["bug"]);
    assert_eq!(
        state.branch.map(|b| b.name).as_deref(),
        Some("spec-orchestrate/1347-found-a-bug")
    );
    assert!(!text.contains(TOKEN), "the token never reaches state");
    assert!(!stderr.contains(TOKEN), "the token never reaches the log");
    server.verify().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_issue_and_a_missing_token_are_clear_errors() {
    let server = github(0).await;
    let demo = Demo::new();
    let out = bin()
        .args(["run", "--issue", "9", "--repo"])
        .arg(&demo.repo)
        .env("GITHUB_API_URL", server.uri())
        .env("GITHUB_REPOSITORY", "octocat/Hello-World")
        .env("GITHUB_TOKEN", TOKEN)
        .assert()
        .code(6); // a GitHub (forge) error
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("issue #9") && stderr.contains("404"),
        "{stderr}"
    );
    assert!(!stderr.contains(TOKEN));

    let out = bin()
        .args(["run", "--issue", "9", "--repo"])
        .arg(&demo.repo)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("INPUT_GITHUB_TOKEN")
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("GITHUB_TOKEN"), "{stderr}");
}
