//! Panic isolation (B.5, B.11 row 8): a request handler that panics (`toolhost/test/panic`, a
//! test-only hook) is answered `-32603` and the next 1,000 requests succeed; a tool body that
//! panics is a typed `INTERNAL_ERROR` failure result, not an RPC error or a crash.
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::json;
use server::{Env, call_err};
use std::time::Instant;

#[test]
fn a_panicking_handler_answers_internal_error_and_the_next_requests_succeed() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    for _ in 0..3 {
        let reply = client.request_raw("toolhost/test/panic", json!({})).unwrap();
        assert_eq!(reply["error"]["code"], -32603, "{reply}");
    }
    let start = Instant::now();
    for i in 0..1000 {
        let tools = client.request("toolhost/listTools", json!({}));
        assert!(tools.is_ok_and(|t| t["tools"].is_array()), "request {i} after the panic failed");
    }
    println!("1,000 listTools after the panics in {:?}", start.elapsed());
    let status = client.shutdown().unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(0));
}

#[test]
fn a_panicking_tool_body_is_a_typed_failure() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    let out = call_err(&mut client, "test_panic", json!({}), "INTERNAL_ERROR");
    let message = out["result"]["error"]["message"].as_str().unwrap();
    assert!(message.contains("panicked"), "{out}");
    assert_eq!(out["card"]["status"], "failed");
    // The same through workspace/executeCommand.
    let via_command = client
        .request(
            "workspace/executeCommand",
            json!({"command": "toolhost.callTool", "arguments": ["test_panic", {}]}),
        )
        .unwrap();
    assert_eq!(server::error_code(&via_command).as_deref(), Some("INTERNAL_ERROR"));
    // Later calls are unaffected.
    env.write("a.txt", "hello\n");
    server::call_ok(&mut client, "read", json!({"file_path": "a.txt"}));
    let status = client.shutdown().unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(0));
}

#[test]
fn the_test_hooks_are_off_without_the_environment_variable() {
    let env = Env::new();
    let mut vars = env.env();
    for (key, value) in &mut vars {
        if key == "TOOLHOST_TEST_TOOLS" {
            *value = "0".to_owned();
        }
    }
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut client = toolhost_harness::client::Client::spawn(
        &server::binary(),
        &env.root,
        &[],
        &vars,
        server::echo_handler(),
    )
    .unwrap();
    client.initialize(&env.root, json!({}), json!({})).unwrap();
    let tools = client.request("toolhost/listTools", json!({})).unwrap();
    let names: Vec<&str> =
        tools["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"read"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("test_")), "{names:?}");
    let reply = client.request_raw("toolhost/test/panic", json!({})).unwrap();
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    let status = client.shutdown().unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(0));
}
