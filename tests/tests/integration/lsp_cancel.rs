//! Cancellation over the wire (B.5, B.11 row 4): `$/cancelRequest` for a running
//! `toolhost/callTool` is answered `-32800` at once, the body observes its signal, the call's
//! final `toolhost/card` is `failed`, and the session log records the result as `ABORTED`
//! (replay shows `Error: tool call aborted`). No late second response follows.
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::{Value, json};
use server::{Env, ms, raw_request, wait_response};
use std::time::{Duration, Instant};
use toolhost_harness::client::Client;

fn card_of<'a>(client: &'a Client, call_id: &str, status: &str) -> Option<&'a Value> {
    client.seen.iter().find(|m| {
        m["method"] == "toolhost/card"
            && m["params"]["callId"] == call_id
            && m["params"]["status"] == status
    })
}

/// Starts a `test_sleep` call under request id `id`, waits until its body runs (it writes a marker
/// file), cancels it and returns the time to the `-32800` reply.
fn start_and_cancel(
    client: &mut Client,
    root: &std::path::Path,
    id: &Value,
    call_id: &str,
    mut arguments: Value,
) -> f64 {
    client.seen.clear();
    let marker = format!("started-{call_id}");
    arguments["marker"] = json!(marker);
    let params = json!({"name": "test_sleep", "arguments": arguments, "callId": call_id});
    client.write_raw(&raw_request(id.clone(), "toolhost/callTool", params)).unwrap();
    client
        .wait_for(Duration::from_secs(10), |m| {
            m["method"] == "toolhost/card" && m["params"]["callId"] == call_id
        })
        .unwrap_or_else(|| panic!("no pending card for {call_id}"));
    // Cancelling before the body runs is ABORTED_BEFORE_DISPATCH; this test is about a running call.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !root.join(&marker).exists() {
        assert!(Instant::now() < deadline, "the body of {call_id} never started");
        std::thread::sleep(Duration::from_millis(2));
    }
    let start = Instant::now();
    client.notify("$/cancelRequest", json!({"id": id})).unwrap();
    let reply = wait_response(client, id, Duration::from_secs(5)).unwrap();
    let elapsed = ms(start);
    assert_eq!(reply["error"]["code"], -32800, "{reply}");
    elapsed
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

#[test]
fn cancel_request_answers_minus_32800_and_the_call_ends_aborted() {
    let env = Env::new();
    let session = "cancel-test";
    let mut client = env.start(json!({"session_id": session}));
    let mut latencies = Vec::new();
    let runs = 20;
    for i in 0..runs {
        let id = json!(5_000_000 + i);
        let call_id = format!("cancel-{i}");
        latencies.push(start_and_cancel(
            &mut client,
            &env.root,
            &id,
            &call_id,
            json!({"seconds": 30}),
        ));
        // The body observed its signal; the call ends with a failed card saying so.
        let card = client
            .wait_for(Duration::from_secs(5), |m| {
                m["method"] == "toolhost/card"
                    && m["params"]["callId"] == call_id.as_str()
                    && m["params"]["status"] == "failed"
            })
            .unwrap_or_else(|| panic!("no failed card for {call_id}: {:?}", client.seen));
        let text = card["params"]["text"].as_str().unwrap();
        assert!(text.contains("Error: tool call aborted"), "{card}");
        // No late response for a cancelled id.
        client.wait_for(Duration::from_millis(50), |_| false);
        let replies = client.seen.iter().filter(|m| server::is_response(m) && m["id"] == id);
        assert_eq!(replies.count(), 1, "late response for {id}: {:?}", client.seen);
    }
    latencies.sort_by(f64::total_cmp);
    println!(
        "cancel → -32800 over {runs} calls: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies[latencies.len() - 1]
    );
    assert!(latencies[latencies.len() - 1] < 1000.0, "a cancellation took over 1 s");

    // Replay rebuilds the same failed cards from the log.
    let replay = client.request("toolhost/replaySession", json!({"sessionId": session})).unwrap();
    let cards = replay["cards"].as_array().unwrap();
    for i in 0..runs {
        let call_id = format!("cancel-{i}");
        let card = cards.iter().find(|c| c["callId"] == call_id.as_str()).unwrap();
        assert_eq!(card["status"], "failed", "{card}");
        assert!(card["text"].as_str().unwrap().contains("Error: tool call aborted"), "{card}");
    }
    let status = client.shutdown().unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(0));

    // The log holds each call's result as ABORTED.
    let events = env.session_events(session);
    for i in 0..runs {
        let call_id = format!("cancel-{i}");
        let result = events
            .iter()
            .find(|e| e["type"] == "tool/result" && e["data"]["callId"] == call_id.as_str())
            .unwrap_or_else(|| panic!("no tool/result for {call_id}"));
        assert_eq!(result["data"]["isError"], true, "{result}");
        assert_eq!(result["data"]["error"]["code"], "ABORTED", "{result}");
    }
}

#[test]
fn a_body_that_ignores_its_signal_is_still_answered_at_once_and_logged_aborted() {
    let env = Env::new();
    let session = "ignore-cancel";
    let mut client = env.start(json!({"session_id": session}));
    let id = json!(6_000_000);
    let elapsed = start_and_cancel(
        &mut client,
        &env.root,
        &id,
        "stubborn",
        json!({"seconds": 1.5, "ignoreCancel": true}),
    );
    println!("-32800 for a body ignoring its signal after {elapsed:.1} ms");
    assert!(elapsed < 1000.0);
    assert!(card_of(&client, "stubborn", "failed").is_none(), "the body is still running");
    // The body is awaited, never abandoned: it finishes and its result is overridden.
    let card = client
        .wait_for(Duration::from_secs(10), |m| {
            m["method"] == "toolhost/card"
                && m["params"]["callId"] == "stubborn"
                && m["params"]["status"] == "failed"
        })
        .unwrap();
    assert!(card["params"]["text"].as_str().unwrap().contains("tool call aborted"), "{card}");
    let replies = client.seen.iter().filter(|m| server::is_response(m) && m["id"] == id);
    assert_eq!(replies.count(), 1, "late response: {:?}", client.seen);
    // The connection is fine.
    assert!(client.request("toolhost/listTools", json!({})).is_ok());
    client.shutdown().unwrap();
    let events = env.session_events(session);
    let result = events
        .iter()
        .find(|e| e["type"] == "tool/result" && e["data"]["callId"] == "stubborn")
        .unwrap();
    assert_eq!(result["data"]["error"]["code"], "ABORTED", "{result}");
}
