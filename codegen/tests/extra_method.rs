//! Adding a method to the spec adds it to the server trait, the client and the types, so the
//! daemon does not compile until the method is implemented.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::Path;

use serde_json::{json, Value};

fn spec_with_lock_extend() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../openrpc.json");
    let mut spec: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    spec["methods"].as_array_mut().unwrap().push(json!({
        "name": "lock.extend",
        "summary": "Extend a lock's TTL",
        "paramStructure": "by-name",
        "params": [
            {"name": "symbolPath", "required": true, "schema": {"type": "string", "minLength": 1}},
            {"name": "sessionId", "required": true, "schema": {"type": "string", "minLength": 1}},
            {"name": "extraMs", "required": true, "schema": {"type": "integer"}}
        ],
        "result": {"name": "result", "schema": {
            "type": "object", "required": ["expiresAt"],
            "properties": {"expiresAt": {"type": "string", "format": "date-time"}}}}
    }));
    spec.to_string()
}

/// The required methods of trait `trait_name` in `file`.
fn trait_methods(file: &syn::File, trait_name: &str) -> Vec<String> {
    file.items
        .iter()
        .find_map(|item| match item {
            syn::Item::Trait(t) if t.ident == trait_name => Some(
                t.items
                    .iter()
                    .filter_map(|i| match i {
                        // Only methods without a default body: an implementation lacking one
                        // of them fails to compile.
                        syn::TraitItem::Fn(f) if f.default.is_none() => {
                            Some(f.sig.ident.to_string())
                        }
                        _ => None,
                    })
                    .collect(),
            ),
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn a_new_method_reaches_the_trait_the_client_and_the_types() {
    let generated = wit_codegen::generate(&spec_with_lock_extend()).unwrap();

    let server: syn::File = syn::parse_str(&generated.server).unwrap();
    assert_eq!(
        trait_methods(&server, "LockMethods"),
        [
            "lock_acquire",
            "lock_release",
            "lock_query",
            "lock_waits",
            "lock_extend"
        ]
    );
    // Registered under its wire name, decoded by its generated decoder.
    assert!(
        generated.server.contains("\"lock.extend\""),
        "{}",
        generated.server
    );
    assert!(generated
        .server
        .contains("crate::protocol::LockExtendParams::from_params"));

    assert!(
        generated.client.contains("pub async fn lock_extend("),
        "{}",
        generated.client
    );
    assert!(generated.types.contains("pub struct LockExtendParams"));
    assert!(
        generated.types.contains("pub extra_ms: i64"),
        "{}",
        generated.types
    );
    assert!(generated.types.contains("pub struct LockExtendResult"));
    assert!(generated.types.contains("name: \"lock.extend\""));

    // And an MCP tool, the session filled in by the server.
    let tools: Value = serde_json::from_str(&generated.mcp_tools).unwrap();
    let tool = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "lock_extend")
        .unwrap();
    assert_eq!(tool["method"], "lock.extend");
    assert_eq!(tool["session"], "caller");
    assert_eq!(tool["description"], "Extend a lock's TTL.");
    assert_eq!(
        tool["inputSchema"],
        json!({"type": "object",
               "properties": {"symbolPath": {"type": "string", "minLength": 1},
                              "extraMs": {"type": "integer"}},
               "required": ["symbolPath", "extraMs"]})
    );
    assert_eq!(
        tool["outputSchema"],
        json!({"type": "object", "required": ["expiresAt"],
               "properties": {"expiresAt": {"type": "string"}}})
    );
    assert_eq!(tool["wrapsResult"], false);
}

#[test]
fn an_invalid_spec_fails_with_a_clear_message() {
    let err = wit_codegen::generate("{\"methods\": 3}")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("does not parse as an OpenRPC document"),
        "{err}"
    );

    let mut spec: Value = serde_json::from_str(&spec_with_lock_extend()).unwrap();
    spec["methods"][0]["result"]["schema"] = json!({"$ref": "#/components/schemas/Missing"});
    let err = wit_codegen::generate(&spec.to_string())
        .unwrap_err()
        .to_string();
    assert!(err.contains("#/components/schemas/Missing"), "{err}");
}
