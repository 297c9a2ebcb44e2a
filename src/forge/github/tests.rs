use super::*;

#[test]
fn remotes_and_credentials() {
    for (remote, repo) in [
        ("https://github.com/o/r.git", Some("o/r")),
        ("git@github.com:o/r.git", Some("o/r")),
        ("https://x:tok@ghe.example/o/r", Some("o/r")),
        ("/local/path", None),
        // The remotes `verify pr` reads its repository from (it had a parser of its own).
        (
            "https://github.com/octocat/Hello-World.git",
            Some("octocat/Hello-World"),
        ),
        (
            "git@github.com:octocat/Hello-World.git",
            Some("octocat/Hello-World"),
        ),
    ] {
        assert_eq!(repo_from_remote(remote).as_deref(), repo, "{remote}");
    }
    assert_eq!(
        strip_credentials("https://x:secret@host/o/r"),
        "https://host/o/r"
    );
}

#[test]
fn graphql_endpoint_follows_the_rest_base() {
    assert_eq!(
        graphql_url_for("https://api.github.com"),
        "https://api.github.com/graphql"
    );
    assert_eq!(
        graphql_url_for("https://ghe.example.com/api/v3/"),
        "https://ghe.example.com/api/graphql"
    );
}

#[test]
fn only_write_maintain_and_admin_may_drive_a_run() {
    let p = |permission: &str, role: &str| Permission {
        permission: permission.into(),
        role_name: role.into(),
    };
    assert!(p("admin", "admin").can_write());
    assert!(p("write", "maintain").can_write());
    assert!(p("write", "write").can_write());
    assert!(p("write", "").can_write());
    assert!(!p("read", "triage").can_write());
    assert!(!p("read", "read").can_write());
    assert!(!p("none", "").can_write());
    assert_eq!(
        encode_query("spec-orchestrate/42-x y"),
        "spec-orchestrate/42-x%20y"
    );
}
