//! A person's review of the pipeline's pull request: the review calls of the GitHub forge
//! against the simulated GitHub (reviews, inline comments, threads, replies, resolving), and the
//! review round they feed (docs/action-mode.md, "After the pull request").

use serde_json::json;
use spec_orchestrate::error::forge::ForgeCause;
use spec_orchestrate::forge::github::reviews::{ReviewState, Side};
use spec_orchestrate::forge::github::{GithubForge, GithubTarget};

use crate::fake_github::{FakeGithub, Fault, OWNER, REPO};

const TOKEN: &str = "ghs_ReviewTestToken0123456789abcdef";

fn setup() -> (FakeGithub, GithubForge, u64) {
    let fake = FakeGithub::start(TOKEN, "Found a bug", "I'm having a problem with this.");
    let api = fake.api_uri();
    let forge = GithubForge::new(
        GithubTarget {
            api_url: api.clone(),
            graphql_url: format!("{api}/graphql"),
            owner: OWNER.into(),
            repo: REPO.into(),
        },
        TOKEN,
    )
    .expect("client");
    let pr = forge
        .create_pr(
            "Fix it",
            "spec-orchestrate/1347-fix-it",
            "main",
            "body",
            true,
        )
        .expect("pull request")
        .number;
    (fake, forge, pr)
}

#[test]
fn a_review_its_inline_comments_and_their_threads_read_as_github_serves_them() {
    let (fake, forge, pr) = setup();
    fake.set_role("maintainer", "maintain");
    let review = fake.with(|w| {
        w.submit_review(
            pr,
            "maintainer",
            "MEMBER",
            "CHANGES_REQUESTED",
            "Two things before this can go in.",
            &[
                ("src/app.js", 12, "RIGHT", "This misses the empty list."),
                ("docs/api.md", 3, "LEFT", "Why was this removed?"),
            ],
        )
    });
    let reviews = forge.list_reviews(pr).unwrap();
    assert_eq!(reviews.len(), 1);
    assert_eq!(reviews[0].id, review["id"].as_u64().unwrap());
    assert_eq!(reviews[0].author, "maintainer");
    assert_eq!(reviews[0].state, ReviewState::ChangesRequested);
    assert_eq!(reviews[0].body, "Two things before this can go in.");

    let comments = forge.list_review_comments(pr).unwrap();
    assert_eq!(comments.len(), 2);
    assert_eq!(comments[0].path, "src/app.js");
    assert_eq!(comments[0].line, Some(12));
    assert_eq!(comments[0].side, Some(Side::Right));
    assert_eq!(comments[0].review_id, Some(reviews[0].id));
    assert_eq!(comments[1].side, Some(Side::Left));

    let threads = forge.review_threads(pr).unwrap();
    assert_eq!(threads.len(), 2);
    assert!(threads.iter().all(|t| !t.resolved));
    assert_eq!(threads[0].path, "src/app.js");
    assert_eq!(threads[0].line, Some(12));
    assert_eq!(threads[0].comments[0].id, Some(comments[0].id));
    assert_eq!(threads[0].comments[0].author, "maintainer");
    assert_eq!(threads[1].side, Side::Left);

    // A pull request GitHub does not have is an error naming it, not an empty list.
    let e = forge.review_threads(999).unwrap_err();
    assert_eq!(e.forge_cause(), ForgeCause::NotFound, "{e}");
    assert!(fake.with(|w| w.violations.is_empty()));
}

#[test]
fn a_reply_lands_once_in_its_thread_even_when_githubs_answer_is_lost() {
    let (fake, mut forge, pr) = setup();
    forge.learn_identity().unwrap();
    fake.with(|w| {
        w.submit_review(
            pr,
            "octocat",
            "OWNER",
            "COMMENTED",
            "",
            &[(
                "src/app.js",
                1,
                "RIGHT",
                "/spec-orchestrate fix: off by one",
            )],
        )
    });
    let root = forge.list_review_comments(pr).unwrap()[0].id;
    // GitHub answers 502 (the effect unknown to the client): the thread is searched before the
    // reply is sent again, and it lands once.
    fake.with(|w| {
        w.faults.push(Fault {
            method: "POST".into(),
            path_contains: "/replies".into(),
            status: 502,
            retry_after: None,
            times: 1,
        })
    });
    let made = forge
        .reply_to_review_comment(pr, root, "Fixed in abc1234.")
        .unwrap();
    assert_eq!(made.in_reply_to, Some(root));
    let replies = fake.with(|w| w.replies_to(root).into_iter().cloned().collect::<Vec<_>>());
    assert_eq!(replies.len(), 1, "{replies:#?}");
    assert_eq!(replies[0]["user"]["login"], json!("github-actions[bot]"));
    let threads = forge.review_threads(pr).unwrap();
    assert_eq!(threads[0].comments.len(), 2);
    assert_eq!(threads[0].comments[1].body, "Fixed in abc1234.");

    // GitHub takes only a thread's first comment: a reply to the reply is refused.
    let e = forge
        .reply_to_review_comment(pr, made.id, "again")
        .unwrap_err();
    assert_eq!(e.forge_failure().and_then(|f| f.status), Some(422), "{e}");
}

#[test]
fn only_a_token_allowed_to_resolve_resolves_a_thread() {
    let (fake, forge, pr) = setup();
    fake.with(|w| {
        w.submit_review(
            pr,
            "octocat",
            "OWNER",
            "CHANGES_REQUESTED",
            "",
            &[("src/app.js", 4, "RIGHT", "Wrong status code.")],
        )
    });
    let thread = forge.review_threads(pr).unwrap().remove(0);
    // The workflow gave the token `pull-requests: read`: GitHub refuses, the thread stays open.
    fake.with(|w| w.reviews.token_read_only = true);
    let e = forge.resolve_thread(&thread.node_id).unwrap_err();
    assert_eq!(e.forge_cause(), ForgeCause::Forbidden, "{e}");
    assert!(!forge.review_threads(pr).unwrap()[0].resolved);
    fake.with(|w| {
        w.reviews.token_read_only = false;
        w.violations.clear();
    });
    forge.resolve_thread(&thread.node_id).unwrap();
    assert!(forge.review_threads(pr).unwrap()[0].resolved);
    let by = fake.with(|w| w.reviews.threads[0].resolved_by.clone());
    assert_eq!(by.as_deref(), Some("github-actions[bot]"));
    let e = forge.resolve_thread("PRRT_nonesuch").unwrap_err();
    assert_eq!(e.forge_cause(), ForgeCause::NotFound, "{e}");
    assert!(fake.with(|w| w.violations.is_empty()));
}

#[test]
fn every_page_of_a_long_review_is_read() {
    let (fake, forge, pr) = setup();
    let inline: Vec<(String, u64)> = (0..130).map(|i| (format!("src/f{i}.rs"), i + 1)).collect();
    fake.with(|w| {
        let refs: Vec<(&str, u64, &str, &str)> = inline
            .iter()
            .map(|(p, l)| (p.as_str(), *l, "RIGHT", "nit"))
            .collect();
        w.submit_review(pr, "octocat", "OWNER", "COMMENTED", "many", &refs)
    });
    assert_eq!(forge.list_review_comments(pr).unwrap().len(), 130);
    let threads = forge.review_threads(pr).unwrap();
    assert_eq!(threads.len(), 130);
    assert_eq!(threads[129].path, "src/f129.rs");
}

/// What a person reads on the pull request after a round: the reply of a fixed thread, of a
/// disputed one, of one whose fix did not hold, and the round's summary comment.
#[test]
fn reply_texts_and_the_summary_comment_read_as_people_see_them() {
    use spec_orchestrate::review::feedback::{self, Answer, Comment};
    let comment = |path: &str, line: u64, body: &str| Comment {
        source: "maintainer".into(),
        path: Some(path.into()),
        line: Some(line),
        side: Some("RIGHT".into()),
        body: body.into(),
        thread: Some(format!("PRRT_{line}")),
        comment_id: Some(line),
    };
    let items = feedback::findings(
        1,
        &[
            comment("app/app.js", 12, "This misses the empty list."),
            comment(
                "app/style.css",
                3,
                "Use the theme variable | not a literal.",
            ),
            comment("app/index.html", 8, "The button needs a label."),
        ],
        ".specs/add-a-dark-mode-toggle",
    );
    let answers = [
        Answer::Fixed {
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            summary: "The list handler returns early on an empty list.".into(),
        },
        Answer::Disputed {
            reason: "The literal is the theme variable's fallback for old browsers;\nreplacing it breaks case C3.".into(),
        },
        Answer::Open {
            reason: "the fix was committed but acceptance case C2 failed".into(),
        },
    ];
    let replies: Vec<String> = answers
        .iter()
        .map(|a| feedback::reply_text(1, "REV1", a))
        .collect();
    insta::assert_snapshot!("review_replies", replies.join("\n\n---\n\n"));
    let rows: Vec<(&feedback::Item, &Answer)> = items.iter().zip(answers.iter()).collect();
    insta::assert_snapshot!(
        "review_round_summary",
        feedback::summary_comment(
            1,
            "REV1",
            &rows,
            "Every acceptance case passed; the pull request is ready for review."
        )
    );
    assert!(answers[0].resolves() && !answers[1].resolves() && !answers[2].resolves());
}
