use super::*;

#[test]
fn blocks_have_ids_of_one_length_at_most_64_bytes_and_commit_in_order() {
    let digest = format!("sha256:{}", "ab".repeat(32));
    let ids = block_ids(&digest, 2 * BLOCK_SIZE + 1);
    assert_eq!(ids.len(), 3);
    for id in &ids {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(id)
            .unwrap();
        assert_eq!(raw.len(), 48, "at most 64 bytes before encoding");
        assert_eq!(id.len(), ids[0].len());
    }
    assert_ne!(ids[0], ids[1]);
    assert_eq!(block_ids(&digest, 0).len(), 1, "an empty blob is one block");
    let xml = block_list_xml(&ids);
    assert!(xml.ends_with(&format!(
        "<Latest>{}</Latest><Latest>{}</Latest><Latest>{}</Latest></BlockList>",
        ids[0], ids[1], ids[2]
    )));
    assert_eq!(chunks(&vec![0u8; BLOCK_SIZE + 1]).len(), 2);
    assert_eq!(encode_component("a+b/c="), "a%2Bb%2Fc%3D");
}

fn jwt(claims: &serde_json::Value) -> String {
    let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{}.{}.sig",
        e.encode(br#"{"alg":"RS256","typ":"JWT"}"#),
        e.encode(claims.to_string())
    )
}

#[test]
fn backend_ids_come_from_the_results_scope() {
    let t = jwt(&serde_json::json!({
        "scp": "Actions.ExampleScope Actions.Results:ce7f54c7-61c7-4aae-887f-30da475f5f1a:ca395085-040a-526b-2ce8-bdc85f692774"
    }));
    assert_eq!(
        backend_ids(&t).unwrap(),
        BackendIds {
            run: "ce7f54c7-61c7-4aae-887f-30da475f5f1a".into(),
            job: "ca395085-040a-526b-2ce8-bdc85f692774".into()
        }
    );
    let none = jwt(&serde_json::json!({"scp": "Actions.GenericRead:1"}));
    assert!(
        backend_ids(&none)
            .unwrap_err()
            .contains("no Actions.Results")
    );
    let bad = jwt(&serde_json::json!({"scp": "Actions.Results:only-one"}));
    assert!(backend_ids(&bad).unwrap_err().contains("malformed"));
    assert!(backend_ids("opaque").unwrap_err().contains("not a JWT"));
}
