//! What the shell tools cost over running the same command directly (a plain `main`, run with
//! `cargo bench -p toolhost-tests --bench shell_overhead`).
//!
//! In the same run, against spawning `bash -c true` directly and waiting for it:
//! - `bash {"command":"true"}` through the whole tool pipeline of a host with a session log
//!   (`Host::call`: arguments, policies, the `tool/call` line synced before the body, spawn in
//!   its own group, capture, reap, validation, rendering, the `tool/result` line synced). Target:
//!   ≤ 1.3× the direct time plus 1 ms.
//! - the same over the wire: `toolhost serve` (built with the same profile as this bench) on a
//!   temporary workspace, driven by a harness client as an editor would (adds the JSON-RPC round
//!   trip and the cards); reported, with a failing `job_kill` as the cost of pipeline + log alone.
//! - throughput: `yes | head -c 1G` through the pipeline (both streams captured, the tail kept,
//!   the first 64 MiB spilled), against `bash -c 'yes | head -c 1G > /dev/null'`. Reported as a
//!   ratio.
#![allow(clippy::unwrap_used)]

#[path = "../tests/support/server.rs"]
mod server;

use serde_json::json;
use std::process::Command;
use std::time::{Duration, Instant};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn summary(name: &str, mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    let p50 = percentile(&samples, 0.5);
    println!(
        "{name:<34} p50 {p50:>7.2} ms  p90 {:>7.2} ms  p99 {:>7.2} ms",
        percentile(&samples, 0.9),
        percentile(&samples, 0.99)
    );
    p50
}

fn direct(script: &str) -> f64 {
    let start = Instant::now();
    let status = Command::new("bash").args(["-c", script]).status().unwrap();
    assert!(status.success());
    start.elapsed().as_secs_f64() * 1000.0
}

/// `bash true` through `Host::run` with a session log, interleaved with direct spawns.
fn in_process(runs: usize) -> (Vec<f64>, Vec<f64>) {
    use toolhost_host::CallRequest;
    use toolhost_host::config::Config;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let root = root.canonicalize().unwrap();
        let opened =
            toolhost_host::session::open_session(&dir.path().join("sessions"), &root, "bench")
                .unwrap();
        let host = toolhost_host::open_host(&Config::default(), &root, Some(&opened)).unwrap();
        let (mut through, mut straight) = (Vec::new(), Vec::new());
        for i in 0..runs + 20 {
            let start = Instant::now();
            let args = json!({"command": "true", "description": "bench"});
            let out = host.run(CallRequest::new("bash", args).id(format!("c{i}"))).await;
            assert!(!out.unwrap().finalized.result.is_error());
            let piped = start.elapsed().as_secs_f64() * 1000.0;
            let plain = direct("true");
            if i >= 20 {
                through.push(piped);
                straight.push(plain);
            }
        }
        (through, straight)
    })
}

fn main() {
    let release = !cfg!(debug_assertions);
    let runs = if release { 300 } else { 60 };
    let (through, straight) = in_process(runs);
    println!(
        "shell overhead ({} build, {runs} calls each, interleaved)",
        if release { "release" } else { "debug" }
    );
    let piped = summary("bash true through Host::call + log", through);
    let plain = summary("bash -c true spawned directly", straight);
    let budget = plain * 1.3 + 1.0;
    println!(
        "pipeline latency: {:.2}× direct (+{:.2} ms); target ≤ 1.3× + 1 ms = {budget:.2} ms: {}",
        piped / plain,
        piped - plain,
        if piped <= budget { "met" } else { "NOT met" }
    );
    let bin = server::binary_for(release);
    let env = server::Env::new();
    let env_vars = env.env();
    let env_vars: Vec<(&str, &str)> =
        env_vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut client = toolhost_harness::client::Client::spawn(
        &bin,
        &env.root,
        &[],
        &env_vars,
        toolhost_harness::client::Client::no_handler(),
    )
    .unwrap();
    client.timeout = Duration::from_secs(300);
    client.initialize(&env.root, json!({}), json!({})).unwrap();
    let call = |client: &mut toolhost_harness::client::Client, command: &str| {
        let start = Instant::now();
        let out = client
            .call_tool(
                "bash",
                json!({"command": command, "description": "bench", "timeoutMs": 600000}),
            )
            .unwrap();
        assert_eq!(out["result"]["isError"], false, "{out}");
        start.elapsed().as_secs_f64() * 1000.0
    };
    for _ in 0..20 {
        call(&mut client, "true");
        direct("true");
    }
    let (mut through, mut straight) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        through.push(call(&mut client, "true"));
        straight.push(direct("true"));
    }
    let mut baseline = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let out = client.call_tool("job_kill", json!({"job_id": "none"})).unwrap();
        assert_eq!(out["result"]["isError"], true);
        baseline.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    summary("a failing job_kill (pipeline + log)", baseline);
    let piped = summary("bash true over the wire (serve)", through);
    let plain = summary("bash -c true spawned directly", straight);
    println!("over the wire: {:.2}× direct (+{:.2} ms)", piped / plain, piped - plain);
    let gib = |client: &mut toolhost_harness::client::Client| call(client, "yes | head -c 1G");
    let (mut through, mut straight) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        through.push(gib(&mut client));
        straight.push(direct("yes | head -c 1G > /dev/null"));
    }
    let piped = summary("yes | head -c 1G through toolhost", through);
    let plain = summary("yes | head -c 1G > /dev/null", straight);
    println!(
        "capture throughput: {:.0} MiB/s through toolhost vs {:.0} MiB/s to /dev/null ({:.2}× the time)",
        1024.0 / (piped / 1000.0),
        1024.0 / (plain / 1000.0),
        piped / plain
    );
    let _ = client.shutdown();
}
