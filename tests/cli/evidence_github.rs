//! Evidence on GitHub: after the evaluate job of a chain, the report and every screenshot are
//! stored unzipped (upload-artifact v7's protocol, with their mime type and the configured
//! retention), the PR body links each screenshot and the report, the status comment links the
//! report, and `verify --pr` re-checks every stored file against the manifest in the body —
//! passing after the chain, failing when one byte of a stored artifact changes or one is gone.

use std::time::Duration;

use sha2::Digest as _;

use crate::actions_sim::{ISSUE, Sim, TOKEN};
use crate::fake_github::{OWNER, REPO};
use crate::support::bin;

/// `(run, artifact id)` of every `…/actions/runs/<run>/artifacts/<id>` link in `text`, in order.
fn artifact_links(text: &str) -> Vec<(String, u64, u64)> {
    let prefix = format!("https://github.com/{OWNER}/{REPO}/actions/runs/");
    let mut out = Vec::new();
    for (i, _) in text.match_indices(&prefix) {
        let rest = &text[i + prefix.len()..];
        let end = rest.find(')').unwrap_or(rest.len());
        let tail = &rest[..end];
        let (run, id) = tail.split_once("/artifacts/").expect("an artifact link");
        out.push((
            format!("{prefix}{tail}"),
            run.parse().unwrap(),
            id.parse().unwrap(),
        ));
    }
    out
}

fn verify_pr(sim: &Sim, pr: u64) -> (i32, String, String) {
    let mut cmd = bin();
    cmd.arg("verify")
        .arg("--pr")
        .arg(pr.to_string())
        .arg("--repository")
        .arg(format!("{OWNER}/{REPO}"))
        .env_remove("GITHUB_TOKEN")
        .env("GH_TOKEN", TOKEN);
    against_the_fake(sim, &mut cmd)
}

/// Runs a `verify` command against the simulated GitHub: exit code, stdout, stderr.
fn against_the_fake(sim: &Sim, cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let out = cmd
        .env("GITHUB_API_URL", sim.fake.api_uri())
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One link of the body: an artifact of the evaluate run, stored unzipped with its type and the
/// configured retention, holding exactly the manifest's file.
fn check_linked_artifact(
    sim: &Sim,
    (url, run, id): &(String, u64, u64),
    evaluate_run: u64,
    manifest: &[spec_orchestrate::evidence::ManifestRow],
) {
    assert_eq!(*run, evaluate_run, "{url}");
    let a = sim
        .fake
        .with(|w| w.artifacts.iter().find(|a| a.id == *id).cloned())
        .expect("the link names a stored artifact");
    assert!(a.finalized && a.version == 7, "{a:?}");
    let stored = a.bytes.clone().unwrap();
    let expires = chrono::DateTime::parse_from_rfc3339(a.expires_at.as_deref().unwrap()).unwrap();
    let days = (expires.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_hours();
    assert!(
        (13 * 24..=14 * 24).contains(&days),
        "14-day retention: {days} h"
    );
    // The file the link shows is the manifest's file, byte for byte.
    let file = a.name.rsplit_once("-a1-").unwrap().1.to_string();
    let row = manifest
        .iter()
        .find(|r| r.path.ends_with(&format!("/{file}")))
        .unwrap();
    assert_eq!(
        hex::encode(sha2::Sha256::digest(&stored)),
        row.sha256,
        "{file}"
    );
    match a.mime.as_deref() {
        Some("image/png") => assert!(stored.starts_with(b"\x89PNG")),
        Some("text/html") => {
            let page = String::from_utf8(stored.clone()).unwrap();
            for case in ["T-A01", "T-A02", "T-A03", "T-A04", "T-A05"] {
                assert!(page.contains(&format!("id=\"case-{case}\"")), "{case}");
            }
            assert!(page.contains("data:image/png;base64,"));
        }
        other => panic!("unexpected mime {other:?}"),
    }
}

fn verify_run(sim: &Sim, run: u64) -> (i32, String) {
    let mut cmd = bin();
    cmd.args(["verify", "--run", &run.to_string()])
        .env("GITHUB_REPOSITORY", format!("{OWNER}/{REPO}"))
        .env("GITHUB_TOKEN", TOKEN);
    let (code, stdout, _) = against_the_fake(sim, &mut cmd);
    (code, stdout)
}

#[test]
fn the_pr_links_the_unzipped_report_and_screenshots_and_verify_pr_catches_one_changed_byte() {
    let mut sim = Sim::new(|c, _| format!("{c}github:\n  evidence_retention_days: 14\n"));
    let first = sim.labeled("octocat", false);
    let log = sim.run(1001, 1, "issues", &first);
    assert_eq!(log.code, 0, "{}", log.stderr);
    sim.follow(30, false);
    assert!(sim.runs.iter().all(|r| r.code == 0));
    let evaluate = sim
        .runs
        .iter()
        .find(|r| r.summary.contains("**evaluate**"))
        .expect("a job that ran evaluate (pr and retrospective ride along after it)")
        .clone();

    let (body, status, violations) = sim.fake.with(|w| {
        (
            w.pulls[0]["body"].as_str().unwrap().to_string(),
            w.status_comments(ISSUE)[0]["body"]
                .as_str()
                .unwrap()
                .to_string(),
            w.violations.clone(),
        )
    });
    assert!(violations.is_empty(), "{violations:#?}");

    // Every link in the body points at an artifact of the evaluate run that the simulated
    // GitHub stores unzipped, with the right type, retention and bytes.
    let links = artifact_links(&body);
    let manifest = spec_orchestrate::report::links::parse_body_manifest(&body).unwrap();
    let shots: Vec<&str> = manifest
        .iter()
        .map(|r| r.path.as_str())
        .filter(|p| p.ends_with(".png"))
        .collect();
    assert_eq!(shots.len(), 3, "{manifest:?}");
    assert_eq!(
        links.len(),
        shots.len() + 1,
        "each screenshot and the report: {links:?}"
    );
    let report_line = body
        .lines()
        .find(|l| l.starts_with("Evidence report of round"))
        .unwrap();
    assert!(
        report_line.contains("[report.html](https://github.com/"),
        "{report_line}"
    );
    for shot in &shots {
        assert!(
            body.contains(&format!(
                "[`{shot}`](https://github.com/{OWNER}/{REPO}/actions/runs/"
            )),
            "{shot} is linked"
        );
    }
    for link in &links {
        check_linked_artifact(&sim, link, evaluate.run_id, &manifest);
    }
    assert!(
        status.contains(
            "Latest evidence report (evaluate round 1): [report.html](https://github.com/"
        ),
        "{status}"
    );
    let (_, _, report_id) = links
        .iter()
        .find(|(u, _, _)| report_line.contains(u.as_str()))
        .unwrap();
    assert!(
        status.contains(&format!("/artifacts/{report_id})")),
        "{status}"
    );

    // verify --pr: every file of the manifest is OK after the chain.
    let (code, out, err) = verify_pr(&sim, 7);
    assert_eq!(code, 0, "{out}\n{err}");
    for row in &manifest {
        assert!(
            out.contains(&format!("OK {}", row.path)),
            "{}: {out}",
            row.path
        );
    }
    assert!(out.contains("uploaded + checkpoint"), "{out}");

    // --run alone: the run's evidence against the manifest that run recorded.
    let (code, text) = verify_run(&sim, evaluate.run_id);
    assert_eq!(code, 0, "{text}");
    assert_eq!(
        text.matches("\nOK ").count() + usize::from(text.starts_with("OK ")),
        manifest.len(),
        "{text}"
    );

    assert_verify_catches_a_changed_then_a_missing_screenshot(&sim, shots[1]);
}

/// `verify --pr` after one byte of the stored screenshot `victim` changed (CHANGED, exit 1), then
/// after it is gone from GitHub (MISSING: the checkpoint copy matches, but the link is dead).
fn assert_verify_catches_a_changed_then_a_missing_screenshot(sim: &Sim, victim: &str) {
    // One byte of a stored screenshot changes: CHANGED, exit 1.
    let victim_file = victim.rsplit('/').next().unwrap().to_string();
    sim.fake.with(|w| {
        let a = w
            .artifacts
            .iter_mut()
            .find(|a| a.name.ends_with(&victim_file))
            .unwrap();
        let bytes = a.bytes.as_mut().unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x01;
    });
    let (code, out, err) = verify_pr(sim, 7);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains(&format!(
            "CHANGED {victim}: the uploaded copy's sha256 differs"
        )),
        "{out}"
    );
    assert_eq!(out.matches("CHANGED").count(), 1, "{out}");

    // The linked screenshot is gone from GitHub (deleted or expired): the checkpoint copy still
    // matches, but the link the reviewer clicks is dead, so it is MISSING.
    sim.fake.with(|w| {
        w.artifacts.retain(|a| !a.name.ends_with(&victim_file));
    });
    let (code, out, _) = verify_pr(sim, 7);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("MISSING {victim}: the pull request links it")),
        "{out}"
    );
}

#[test]
fn verify_pr_without_a_token_is_a_usage_error_naming_both_variables() {
    let out = bin()
        .args(["verify", "--pr", "7", "--repository", "o/r"])
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("GITHUB_TOKEN") && err.contains("GH_TOKEN"),
        "{err}"
    );
}
