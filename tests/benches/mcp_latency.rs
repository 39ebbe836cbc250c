//! Latency of an MCP `tools/call read` over stdio (a plain `main`, run with
//! `cargo bench -p toolhost-tests --bench mcp_latency`).
//!
//! Starts `toolhost mcp` (built with the same profile as this bench) on a temporary workspace
//! holding one small file, twice:
//! - standalone (`--standalone`): the registry runs in the MCP process;
//! - attached: a `toolhost serve` (driven by a harness client, as an editor would) runs for the
//!   same workspace, so every call crosses the attach socket and runs in the editor's registry,
//!   which also sends the editor its two cards.
//!
//! Each: p50/p90/p99/max of 2,000 sequential calls after 200 warm-up calls, measured from writing
//! the request line to reading the response line (JSON on both sides, the pipeline and the
//! session log append with its `sync_data` included). Targets: p50 < 1 ms standalone, < 2 ms
//! attached.
#![allow(clippy::unwrap_used)]

#[path = "../tests/support/server.rs"]
mod server;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

struct Mcp {
    child: Child,
    stdin: ChildStdin,
    responses: Receiver<(Value, Instant)>,
}

impl Mcp {
    fn start(bin: &std::path::Path, env: &server::Env, args: &[&str]) -> Mcp {
        let mut child = Command::new(bin)
            .arg("mcp")
            .args(args)
            .current_dir(&env.root)
            .envs(env.env())
            .env("TOOLHOST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, responses) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
                if message.get("id").is_some()
                    && message.get("method").is_none()
                    && tx.send((message, Instant::now())).is_err()
                {
                    return;
                }
            }
        });
        Mcp { child, stdin, responses }
    }

    fn call(&mut self, id: i64, method: &str, params: Value) -> (Value, Duration) {
        let mut line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        line.push('\n');
        let sent = Instant::now();
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
        let (reply, at) = self.responses.recv_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(reply["id"], id, "{reply}");
        (reply, at - sent)
    }

    fn initialize(&mut self) {
        let (init, _) = self.call(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        self.stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .unwrap();
    }
}

fn summary(label: &str, samples: &mut [Duration]) {
    samples.sort();
    let at = |p: f64| {
        let idx = ((samples.len() - 1) as f64 * p).round() as usize;
        samples[idx].as_secs_f64() * 1000.0
    };
    println!(
        "{label}: n={} p50 {:.3} ms  p90 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
        samples.len(),
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
}

fn measure(label: &str, mcp: &mut Mcp, warmup: usize, sequential: usize) {
    let params = json!({"name": "read", "arguments": {"file_path": "bench.txt"}});
    let mut id = 1;
    for _ in 0..warmup {
        let (reply, _) = mcp.call(id, "tools/call", params.clone());
        assert_eq!(reply["result"]["isError"], false, "{reply}");
        id += 1;
    }
    let mut samples = Vec::with_capacity(sequential);
    let start = Instant::now();
    for _ in 0..sequential {
        let (reply, latency) = mcp.call(id, "tools/call", params.clone());
        assert_eq!(reply["result"]["isError"], false, "{reply}");
        samples.push(latency);
        id += 1;
    }
    let elapsed = start.elapsed();
    summary(label, &mut samples);
    println!("{label} throughput: {:.0} calls/s", sequential as f64 / elapsed.as_secs_f64());
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this too (quickly, in debug).
    let release = !cfg!(debug_assertions);
    let (warmup, sequential) = if release { (200, 2_000) } else { (20, 200) };
    let bin = server::binary_for(release);
    let env = server::Env::new();
    let text: String = (1..=40).map(|i| format!("line {i}: the quick brown fox\n")).collect();
    env.write("bench.txt", &text);
    println!(
        "toolhost mcp ({} build), tools/call read of a {}-byte file, session log on",
        if release { "release" } else { "debug" },
        text.len()
    );

    let mut standalone = Mcp::start(&bin, &env, &["--standalone"]);
    standalone.initialize();
    measure("standalone", &mut standalone, warmup, sequential);
    drop(standalone.stdin);
    standalone.child.wait().unwrap();

    // The editor: `toolhost serve` under a harness client that reads (and drops) its cards.
    let mut editor = toolhost_harness::client::Client::spawn(
        &bin,
        &env.root,
        &[],
        &env.env()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain([("TOOLHOST_LOG", "warn")])
            .collect::<Vec<_>>(),
        toolhost_harness::client::Client::no_handler(),
    )
    .unwrap();
    editor.initialize(&env.root, json!({}), json!({})).unwrap();
    let mut attached = Mcp::start(&bin, &env, &[]);
    attached.initialize();
    measure("attached", &mut attached, warmup, sequential);
    drop(attached.stdin);
    attached.child.wait().unwrap();
    // Collect what the editor was sent meanwhile: two cards per attached call.
    editor.wait_for(Duration::from_millis(500), |_| false);
    let cards = editor.seen.iter().filter(|m| m["method"] == "toolhost/card").count();
    println!("the editor received {cards} cards for {} attached calls", warmup + sequential);
    assert_eq!(cards, 2 * (warmup + sequential));
    let _ = editor.shutdown();
}
