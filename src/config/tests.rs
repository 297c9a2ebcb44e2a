use super::*;

#[test]
fn opposite_defaults_to_the_other_of_author_and_reviewer() {
    let c = Config::default();
    assert_eq!(c.opposite_of("claude").as_deref(), Some("codex"));
    assert_eq!(c.opposite_of("codex").as_deref(), Some("claude"));
}

#[test]
fn sandbox_takes_a_uid_number_or_uid_gid_text_and_off() {
    let p = Path::new("pipeline.yml");
    let c = Config::parse("sandbox:\n  agent_user: 1000\n", p).unwrap();
    assert_eq!(c.sandbox.identity, IdentityMode::Auto);
    assert_eq!(c.sandbox.agent_user.ids(), Some((1000, 1000)));
    let c = Config::parse(
        "sandbox:\n  identity: off\n  agent_user: \"1000:1001\"\n",
        p,
    )
    .unwrap();
    assert_eq!(c.sandbox.identity, IdentityMode::Off);
    assert_eq!(c.sandbox.agent_user.ids(), Some((1000, 1001)));
    assert_eq!(
        Config::default().sandbox.agent_user.ids(),
        Some((65532, 65532))
    );
}
