//! `toolhost mcp`'s bounds, through the binary: requests waiting are bounded in bytes (not only
//! in count) and their memory goes back to the system afterwards, a request reusing an id still
//! in flight is answered with an error (never dropped), and a call's undeclared arguments never
//! reach the session log in bulk.
#![allow(clippy::unwrap_used)]

use crate::server;
use crate::server::proc_number;

use crate::mcp;

use mcp::{Mcp, error_code_of, text_of};
use serde_json::{Map, Value, json};
use server::Env;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The size of the requests of the issue (30 MB).
const BIG: usize = 30 * 1024 * 1024;

/// One request line.
fn line(id: Value, method: &str, params: Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .unwrap();
    bytes.push(b'\n');
    bytes
}

/// Waits up to `timeout` for `done`, looking again every 50 ms.
fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Files under `dir`, with their sizes.
fn files(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.clone(), entry.metadata().map(|m| m.len()).unwrap_or(0)));
            }
        }
    }
    out
}

#[test]
fn six_queued_30_mb_requests_keep_peak_rss_bounded_and_rss_falls_back_afterwards() {
    let env = Env::new();
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.timeout = Duration::from_secs(120);
    mcp.initialize("queued-bulk");
    // Warm: the paths these calls take, with a small file.
    let warm =
        mcp.call("write", json!({"file_path": "warm.txt", "content": "w".repeat(64 * 1024)}));
    assert_eq!(warm["isError"], false, "{warm}");
    let pid = mcp.child.id();
    let baseline = proc_number(pid, "status", "VmRSS:");

    // Six writes of 30 MB each, sent at once: each is taken, recorded (its content in the blob
    // store) and run while the others wait.
    let mut batch = Vec::new();
    for id in 1..=6 {
        let content = format!("{id}").repeat(BIG);
        batch.extend(line(
            json!(id),
            "tools/call",
            json!({"name": "write", "arguments": {"file_path": format!("big{id}.txt"), "content": content}}),
        ));
    }
    let mut stdin = mcp.take_stdin();
    let started = Instant::now();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(&batch).unwrap();
        stdin.flush().unwrap();
        stdin
    });
    for id in 1..=6 {
        let answer = mcp.response(&json!(id));
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    let stdin = writer.join().unwrap();
    let elapsed = started.elapsed();
    let peak = proc_number(pid, "status", "VmHWM:");
    // Memory goes back once nothing waits.
    let mut after = proc_number(pid, "status", "VmRSS:");
    let fell_back = wait_until(Duration::from_secs(10), || {
        after = proc_number(pid, "status", "VmRSS:");
        after < baseline + 64 * 1024
    });
    println!(
        "six queued 30 MB requests: baseline {baseline} KiB, peak {peak} KiB (+{} MiB), after \
         {after} KiB (+{} MiB), answered in {:.1} s",
        (peak.saturating_sub(baseline)) / 1024,
        (after.saturating_sub(baseline)) / 1024,
        elapsed.as_secs_f64()
    );
    // One write in flight (its content held by the call: the card's preview, the record, the
    // tool's own copy, the blobs) and the next line read but not parsed; six writes taken at
    // once would hold six times the first part (and the reported 712 MB were six requests).
    assert!(peak < baseline + 512 * 1024, "peak RSS {peak} KiB over a baseline of {baseline} KiB");
    assert!(fell_back, "RSS stayed at {after} KiB after the requests (baseline {baseline} KiB)");
    drop(stdin);
}

#[test]
fn a_duplicate_id_in_flight_is_answered_with_an_error_and_the_first_request_still_answers() {
    let env = Env::new();
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.initialize("duplicate-ids");
    for (id, marker) in [(json!(77), "first.txt"), (json!("same"), "second.txt")] {
        mcp.send_raw(&line(
            id.clone(),
            "tools/call",
            json!({"name": "test_sleep", "arguments": {"seconds": 2, "marker": marker}}),
        ));
        let marker_path = env.root.join(marker);
        assert!(
            wait_until(Duration::from_secs(20), || marker_path.exists()),
            "the first call never started"
        );
        // The same id again while the first runs.
        mcp.send_raw(&line(
            id.clone(),
            "tools/call",
            json!({"name": "test_sleep", "arguments": {"seconds": 0}}),
        ));
        let refused = mcp
            .wait_for(Duration::from_secs(20), |m| m["id"] == id && m.get("error").is_some())
            .unwrap_or_else(|| panic!("no error for the duplicate id {id}"));
        assert_eq!(refused["error"]["code"], -32600, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("in use"), "{message}");
        // The first request answers, with its own result (it slept its 2 s).
        let first = mcp.response(&id);
        assert!(first.get("error").is_none(), "{first}");
        assert_eq!(first["result"]["isError"], false, "{first}");
        assert!(first["result"]["structuredContent"]["sleptMs"].as_u64().unwrap() >= 1900);
        // Answered, the id is free again.
        let again = mcp.send_request("ping", json!({}));
        mcp.response(&again);
        mcp.send_raw(&line(id.clone(), "ping", json!({})));
        let reused = mcp.response(&id);
        assert!(reused.get("result").is_some(), "{reused}");
    }
}

/// Arguments with `file_path`/`name` and an undeclared 30 MB part: a value when `i` is even,
/// a name when odd.
fn with_bulk(declared: (&str, &str), i: usize, bulk: &str) -> Value {
    let mut arguments = Map::new();
    arguments.insert(declared.0.into(), json!(declared.1));
    if i.is_multiple_of(2) {
        arguments.insert("junk".into(), json!(bulk));
    } else {
        arguments.insert(format!("{i}{bulk}"), json!(true));
    }
    Value::Object(arguments)
}

#[test]
fn six_calls_with_an_unknown_30_mb_key_leave_a_small_session_log_and_answer_invalid_args() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.timeout = Duration::from_secs(120);
    mcp.initialize("unknown-bulk");
    let bulk = "x".repeat(BIG);
    // skill's schema refuses other properties (additionalProperties: false): INVALID_ARGS.
    for i in 0..6 {
        let result = mcp.call("skill", with_bulk(("name", "none"), i, &bulk));
        let text = text_of(&result);
        assert_eq!(result["isError"], true, "{}", &text[..text.len().min(300)]);
        assert_eq!(error_code_of(&result).as_deref(), Some("INVALID_ARGS"));
        assert!(text.contains("is not a declared property"), "{}", &text[..text.len().min(300)]);
        assert!(text.len() < 4096, "the answer quotes the bulk: {} bytes", text.len());
    }
    // read's schema says nothing of other properties: they are dropped, and the call runs.
    for i in 0..6 {
        let result = mcp.call("read", with_bulk(("file_path", "a.txt"), i, &bulk));
        assert_eq!(result["isError"], false, "{}", text_of(&result).len());
        assert!(text_of(&result).contains("hello"));
    }
    drop(mcp);

    let logs = env.session_logs();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let session_dir = logs[0].parent().unwrap();
    let all = files(session_dir);
    let (blobs, rest): (Vec<_>, Vec<_>) =
        all.iter().partition(|(path, _)| path.components().any(|c| c.as_os_str() == "blobs"));
    let blob_bytes: u64 = blobs.iter().map(|(_, n)| n).sum();
    let log_bytes: u64 = rest.iter().map(|(_, n)| n).sum();
    println!(
        "twelve calls with an unknown 30 MB key: session {log_bytes} bytes, blobs {blob_bytes} bytes"
    );
    assert!(log_bytes < 1024 * 1024, "the session holds {log_bytes} bytes besides blobs: {rest:?}");
    assert!(blob_bytes < 1024 * 1024, "the undeclared bulk went to blobs: {blob_bytes} bytes");

    let id = session_dir.file_name().unwrap().to_string_lossy().into_owned();
    let events = env.session_events(&id);
    let calls: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool/call").collect();
    let of = |name: &str| -> Vec<&Value> {
        calls.iter().copied().filter(|e| e["data"]["name"] == name).collect()
    };
    let (skills, reads) = (of("skill"), of("read"));
    assert_eq!(skills.len(), 6, "every refused call is still recorded");
    assert_eq!(reads.len(), 6);
    let junk = skills[0]["data"]["arguments"]["junk"].as_str().unwrap();
    assert!(junk.starts_with("(not kept:"), "{junk}");
    for read in &reads {
        assert_eq!(read["data"]["arguments"], json!({"file_path": "a.txt"}), "{read}");
    }
}
