//! Server→client request deadlock (B.5, B.11 row 6): many concurrent `toolhost/callTool`s whose
//! bodies each await an editor reply (`test_ask_client` → `toolhost/test/echo` through the
//! `EditorBridge` capability) all complete, because client replies are routed by the framing
//! filter and never queue behind the handlers that wait for them. The requests are all written
//! before any reply is read; with 300 calls the framework's concurrency cap (256) is saturated.
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::{Value, json};
use server::{Env, is_response, raw_request};
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn concurrent_calls_awaiting_the_editor(n: i64, budget: Duration) {
    let env = Env::new();
    let mut client = env.start(json!({}));
    let base = 3_000_000;
    let mut burst = Vec::new();
    for i in 0..n {
        let params = json!({"name": "test_ask_client", "arguments": {"payload": i}});
        burst.extend(raw_request(json!(base + i), "toolhost/callTool", params));
    }
    let start = Instant::now();
    client.write_raw(&burst).unwrap();
    let mut replies: HashMap<i64, Value> = HashMap::new();
    while replies.len() < n as usize && start.elapsed() < budget {
        client.wait_for(Duration::from_millis(10), |_| false);
        for message in client.seen.drain(..) {
            if is_response(&message)
                && let Some(id) = message["id"].as_i64()
            {
                replies.insert(id - base, message);
            }
        }
    }
    let elapsed = start.elapsed();
    println!("{} of {n} calls awaiting editor replies completed in {elapsed:?}", replies.len());
    assert_eq!(replies.len(), n as usize, "only {} of {n} calls completed", replies.len());
    assert!(elapsed < budget);
    for (i, reply) in &replies {
        let echoed = reply.pointer("/result/result/value/reply/echo/payload");
        assert_eq!(echoed, Some(&json!(i)), "call {i}: {reply}");
    }
    // The server is still responsive and exits cleanly.
    assert!(client.request("toolhost/listTools", json!({})).is_ok());
    let status = client.shutdown().unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(0));
}

#[test]
fn a_hundred_calls_awaiting_editor_replies_complete_within_5_s() {
    concurrent_calls_awaiting_the_editor(100, Duration::from_secs(5));
}

#[test]
fn calls_beyond_the_concurrency_cap_awaiting_editor_replies_complete() {
    concurrent_calls_awaiting_the_editor(300, Duration::from_secs(15));
}
