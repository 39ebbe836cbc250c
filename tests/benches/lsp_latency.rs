//! Latency and throughput of `toolhost/callTool read` over stdio (a plain `main`, run with
//! `cargo bench -p toolhost-tests --bench lsp_latency`).
//!
//! Starts `toolhost serve` (built with the same profile as this bench: release under
//! `cargo bench`, debug under `cargo test --benches`) on a temporary workspace holding one small
//! file, then measures:
//! - sequential: p50/p90/p99/max of 2,000 calls, one at a time, after 200 warm-up calls;
//! - concurrent: 8 requests kept in flight on the one connection (`read` is concurrency-safe, so
//!   they overlap), 4,000 calls: throughput and per-call latency;
//! - writes: p50/p99 of 500 sequential `write` calls of the same file with new content each time,
//!   which also records the change for undo (the new bytes as a blob, `fs/change` in the log).
//!
//! Latency is measured from writing the request to reading its response, so it includes
//! framing, JSON on both sides, the pipeline, the session log append (`sync_data`) and the two
//! `toolhost/card` notifications each call sends.
#![allow(clippy::unwrap_used)]

#[path = "../tests/support/server.rs"]
mod server;

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};
use toolhost_harness::client::messages;

/// A bare connection: a writer, and a reader thread that timestamps every response.
struct Conn {
    child: Child,
    stdin: ChildStdin,
    responses: Receiver<(Value, Instant)>,
}

impl Conn {
    fn start(bin: &std::path::Path, env: &server::Env) -> Conn {
        let mut child = Command::new(bin)
            .arg("serve")
            .current_dir(&env.root)
            .envs(env.env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, responses) = channel();
        std::thread::spawn(move || {
            for message in messages(stdout) {
                if server::is_response(&message) && tx.send((message, Instant::now())).is_err() {
                    return;
                }
            }
        });
        Conn { child, stdin, responses }
    }

    fn send(&mut self, id: i64, method: &str, params: Value) -> Instant {
        let bytes = server::raw_request(json!(id), method, params);
        let now = Instant::now();
        self.stdin.write_all(&bytes).unwrap();
        self.stdin.flush().unwrap();
        now
    }

    fn notify(&mut self, method: &str, params: Value) {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
        self.stdin.write_all(&server::frame(body.as_bytes())).unwrap();
        self.stdin.flush().unwrap();
    }

    fn recv(&self) -> (Value, Instant) {
        self.responses.recv_timeout(Duration::from_secs(30)).unwrap()
    }

    fn call(&mut self, id: i64, method: &str, params: Value) -> (Value, Duration) {
        let sent = self.send(id, method, params);
        let (reply, at) = self.recv();
        assert_eq!(reply["id"], id, "{reply}");
        (reply, at - sent)
    }
}

fn read_params() -> Value {
    json!({"name": "read", "arguments": {"file_path": "bench.txt"}})
}

fn check(reply: &Value) {
    assert_eq!(reply.pointer("/result/result/isError"), Some(&json!(false)), "{reply}");
}

fn summary(label: &str, samples: &mut [Duration]) {
    samples.sort();
    let at = |p: f64| {
        let idx = ((samples.len() - 1) as f64 * p).round() as usize;
        samples[idx].as_secs_f64() * 1000.0
    };
    let mean = samples.iter().map(Duration::as_secs_f64).sum::<f64>() / samples.len() as f64;
    println!(
        "{label}: n={} p50 {:.3} ms  p90 {:.3} ms  p99 {:.3} ms  max {:.3} ms  mean {:.3} ms",
        samples.len(),
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0),
        mean * 1000.0
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this too (quickly, in debug).
    let release = !cfg!(debug_assertions);
    let (warmup, sequential, concurrent, in_flight) =
        if release { (200, 2_000, 4_000, 8) } else { (20, 200, 400, 8) };
    let bin = server::binary_for(release);
    let env = server::Env::new();
    let text: String = (1..=40).map(|i| format!("line {i}: the quick brown fox\n")).collect();
    env.write("bench.txt", &text);
    let mut conn = Conn::start(&bin, &env);
    let root = server::uri(&env.root);
    let (init, _) = conn.call(
        0,
        "initialize",
        json!({
            "processId": std::process::id(),
            "rootUri": root,
            "workspaceFolders": [{"uri": root, "name": "bench"}],
            "capabilities": {},
        }),
    );
    assert!(init.get("result").is_some(), "{init}");
    conn.notify("initialized", json!({}));
    println!(
        "toolhost serve ({} build), read of a {}-byte file, session log on",
        if release { "release" } else { "debug" },
        text.len()
    );

    let mut id = 1;
    for _ in 0..warmup {
        let (reply, _) = conn.call(id, "toolhost/callTool", read_params());
        check(&reply);
        id += 1;
    }

    // Sequential latency.
    let mut samples = Vec::with_capacity(sequential);
    let start = Instant::now();
    for _ in 0..sequential {
        let (reply, latency) = conn.call(id, "toolhost/callTool", read_params());
        check(&reply);
        samples.push(latency);
        id += 1;
    }
    let elapsed = start.elapsed();
    summary("sequential", &mut samples);
    println!(
        "sequential throughput: {:.0} calls/s ({sequential} calls in {:.2} s)",
        sequential as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64()
    );

    // Concurrent: keep `in_flight` requests outstanding on the one connection.
    let mut sent_at: HashMap<i64, Instant> = HashMap::new();
    let mut samples = Vec::with_capacity(concurrent);
    let mut issued = 0;
    let start = Instant::now();
    while issued < in_flight {
        sent_at.insert(id, conn.send(id, "toolhost/callTool", read_params()));
        id += 1;
        issued += 1;
    }
    let mut peak = 0;
    while samples.len() < concurrent {
        peak = peak.max(sent_at.len());
        let (reply, at) = conn.recv();
        check(&reply);
        let rid = reply["id"].as_i64().unwrap();
        samples.push(at - sent_at.remove(&rid).unwrap());
        if issued < concurrent {
            sent_at.insert(id, conn.send(id, "toolhost/callTool", read_params()));
            id += 1;
            issued += 1;
        }
    }
    let elapsed = start.elapsed();
    summary(&format!("{in_flight} in flight"), &mut samples);
    println!(
        "{in_flight} in flight throughput: {:.0} calls/s ({concurrent} calls in {:.2} s, peak {peak} outstanding)",
        concurrent as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64()
    );

    // Writes: every one a new content, so each stores a new blob for `revert`.
    let writes = if release { 500 } else { 50 };
    let mut samples = Vec::with_capacity(writes);
    for n in 0..writes {
        let content = format!("{text}write {n}\n");
        let params =
            json!({"name": "write", "arguments": {"file_path": "bench.txt", "content": content}});
        let (reply, latency) = conn.call(id, "toolhost/callTool", params);
        check(&reply);
        samples.push(latency);
        id += 1;
    }
    summary("write (recorded for undo)", &mut samples);

    let (reply, _) = conn.call(id, "shutdown", Value::Null);
    assert!(reply.get("result").is_some(), "{reply}");
    conn.notify("exit", Value::Null);
    let status = conn.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}
