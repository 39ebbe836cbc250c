//! What a spawn costs: `true` started through [`toolhost_process::spawn`] and reaped, against
//! `true` started directly with tokio, interleaved. Printed, not asserted (a loaded machine would
//! make any bound flaky); run with `cargo test -p toolhost-process --test spawn_cost -- --nocapture`.
#![allow(clippy::unwrap_used)]

use std::process::Stdio;
use std::time::Instant;
use tokio::process::Command;
use toolhost_process::{SpawnOptions, spawn};

fn true_command() -> Command {
    let mut command = Command::new("true");
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    command
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_cost_is_printed() {
    let (mut direct, mut grouped) = (Vec::new(), Vec::new());
    for _ in 0..300 {
        let start = Instant::now();
        true_command().status().await.unwrap();
        direct.push(start.elapsed().as_secs_f64() * 1e6);
        let start = Instant::now();
        let group = spawn(true_command(), SpawnOptions::default()).unwrap();
        group.reaped().await;
        grouped.push(start.elapsed().as_secs_f64() * 1e6);
    }
    println!(
        "true: direct p50 {:.0} µs, through toolhost_process::spawn (reaped) p50 {:.0} µs",
        median(direct),
        median(grouped)
    );
}
