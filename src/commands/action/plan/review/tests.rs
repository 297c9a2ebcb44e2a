//! The review round's guards and intake, from small pull requests, threads and reviews.

use super::*;
use crate::commands::action::plan::{Ending, Resume, Route, resume_from, route};
use crate::forge::github::event::Trigger;
use crate::forge::github::reviews::{Side, ThreadComment};
use crate::state::{Mode, PrRef};

fn head(branch: &str, same_repo: bool) -> PullHead {
    PullHead {
        branch: branch.into(),
        same_repo,
        base: "main".into(),
    }
}

#[test]
fn only_our_work_branch_in_this_repository_names_an_issue() {
    let p = "spec-orchestrate/";
    assert_eq!(
        issue_of(3.into(), &head("spec-orchestrate/1347-dark-mode", true), p),
        Ok(1347.into())
    );
    for (branch, same, why) in [
        ("spec-orchestrate/1347-dark-mode", false, "fork"),
        ("feature/1347-dark-mode", true, "not a spec-orchestrate"),
        ("spec-orchestrate/dark-mode", true, "not a spec-orchestrate"),
        ("spec-orchestrate/13x7-dark", true, "not a spec-orchestrate"),
        ("spec-orchestrate/1347-", true, "not a spec-orchestrate"),
    ] {
        let e = issue_of(3.into(), &head(branch, same), p).unwrap_err();
        assert!(e.contains(why), "{branch}: {e}");
    }
}

fn review(id: u64, author: &str, state: ReviewState, body: &str) -> Review {
    Review {
        id,
        author: author.into(),
        body: body.into(),
        state,
        submitted_at: None,
        commit_id: None,
        html_url: String::new(),
    }
}

fn thread(id: &str, resolved: bool, said: &[(&str, &str)]) -> ReviewThread {
    ReviewThread {
        node_id: id.into(),
        resolved,
        outdated: false,
        path: "app/index.html".into(),
        line: Some(4),
        side: Side::Right,
        comments: said
            .iter()
            .enumerate()
            .map(|(i, (author, body))| ThreadComment {
                id: Some(100 + i as u64),
                author: (*author).into(),
                body: (*body).into(),
            })
            .collect(),
    }
}

#[test]
fn a_round_takes_open_threads_and_new_review_bodies_from_writers_only() {
    let me = Some("github-actions[bot]");
    let writers: BTreeSet<String> = ["maria".to_string()].into();
    let threads = [
        thread("T1", false, &[("maria", "Label the toggle.")]),
        thread("T2", true, &[("maria", "Resolved already.")]),
        thread("T3", false, &[("rita", "A reader's thread.")]),
        thread(
            "T4",
            false,
            &[
                ("maria", "Disputed."),
                ("github-actions[bot]", "Not changed: …"),
            ],
        ),
        thread(
            "T5",
            false,
            &[
                ("maria", "Reopened."),
                ("github-actions[bot]", "Fixed in …"),
            ],
        ),
        thread(
            "T6",
            false,
            &[
                ("maria", "Still wrong."),
                ("github-actions[bot]", "Not changed: …"),
                ("maria", "Please do it anyway."),
            ],
        ),
    ];
    let reviews = [
        review(
            8,
            "maria",
            ReviewState::ChangesRequested,
            "Taken in round 1.",
        ),
        review(
            9,
            "maria",
            ReviewState::ChangesRequested,
            "Keep the old setting too.",
        ),
        review(
            10,
            "rita",
            ReviewState::ChangesRequested,
            "A reader's review.",
        ),
        review(11, "maria", ReviewState::Commented, "Just a remark."),
        review(
            12,
            "maria",
            ReviewState::Commented,
            "/spec-orchestrate fix\nAnd the footer.",
        ),
        review(13, "maria", ReviewState::Approved, "LGTM"),
    ];
    let resolved: BTreeSet<String> = ["T5".to_string()].into();
    let got = intake(&threads, &reviews, me, 8, &writers, &resolved);
    let threads_taken: Vec<Option<&str>> =
        got.comments.iter().map(|c| c.thread.as_deref()).collect();
    assert_eq!(
        threads_taken,
        [Some("T1"), Some("T5"), Some("T6"), None, None],
        "{:#?}",
        got.comments
    );
    assert_eq!(got.comments[0].comment_id, Some(100));
    assert_eq!(got.comments[0].side.as_deref(), Some("RIGHT"));
    assert_eq!(
        got.comments[2].body,
        "Still wrong.\n\n@maria replied: Please do it anyway."
    );
    assert_eq!(got.comments[3].body, "Keep the old setting too.");
    assert_eq!(got.comments[4].body, "And the footer.");
    assert_eq!(got.newest_review, 13);
    assert_eq!(
        authors(&threads, &reviews, 8),
        ["maria".to_string(), "rita".to_string()].into()
    );
    assert!(pending(&reviews, 8));
    assert!(!pending(&reviews, 13));
}

#[test]
fn a_round_is_taken_only_on_a_done_run_of_that_pull_request_with_none_in_flight() {
    let mut state = crate::state::tests::at("dark", 7, "Dark", Mode::Auto, Phase::Done);
    assert!(not_now(&state, 12.into()).is_some_and(|w| w.contains("did not open")));
    state.pr = Some(PrRef {
        number: Some(12.into()),
        url: "https://github.com/o/r/pull/12".into(),
        draft: false,
    });
    assert_eq!(not_now(&state, 12.into()), None);
    // From the record's JSON, as a checkpoint holds it (every other field has its default).
    let mut running = state.clone();
    running.rounds.pr_review = serde_json::from_value(serde_json::json!([{
        "round": 1, "from": "pull request #12", "status": "running", "items": []
    }]))
    .unwrap();
    assert!(not_now(&running, 12.into()).is_some_and(|w| w.contains("still in flight")));
    state.move_to(Phase::Evaluate);
    assert!(not_now(&state, 12.into()).is_some_and(|w| w.contains("once it is done")));
}

#[test]
fn a_review_routes_into_the_chain_only_past_every_guard() {
    let ours = Ok(7.into());
    assert_eq!(
        route(12.into(), ours.clone(), None, Some(40.into())),
        Route::Into {
            issue: 7.into(),
            pr: 12.into()
        }
    );
    let Route::End(Ending::Refuse(why)) = route(
        12.into(),
        ours.clone(),
        Some("@mona has `read` access".into()),
        Some(40.into()),
    ) else {
        panic!("a reader is answered once");
    };
    assert!(why.starts_with("@mona"), "{why}");
    let Route::End(Ending::Nothing(why)) = route(12.into(), ours, None, None) else {
        panic!("an issue without a chain starts nothing");
    };
    assert!(why.contains("no spec-orchestrate run"), "{why}");
    let Route::End(Ending::Nothing(why)) =
        route(12.into(), Err("from a fork".into()), None, Some(40.into()))
    else {
        panic!("a pull request that is not ours starts nothing, without a reply");
    };
    assert_eq!(why, "from a fork");
    assert!(matches!(
        resume_from(
            &Trigger::Review {
                pr: 12.into(),
                head: None,
                actor: crate::forge::github::event::Actor {
                    login: "alice".into(),
                    is_bot: false,
                },
                review_id: 3
            },
            7.into(),
            Some(40.into()),
            50.into(),
            "go"
        ),
        Resume::Nothing(_)
    ));
}
