//! run_code's costs: starting a run (a fresh QuickJS runtime on its own thread, the prelude, the
//! TypeScript strip) and what one nested call costs over calling the tool directly.
//!
//! Run with `cargo bench -p toolhost-tools-code --bench run_code` (a plain `main`, no harness).
//! Each figure is the best and the median of `RUNS` runs.

// Cargo's auto-discovery builds this file with the libtest harness until the `[[bench]]`
// entry (harness = false) is present; `main` is unused in that build only.
#![cfg_attr(test, allow(dead_code))]
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_contract::{
    BoxFuture, CancellationToken, ExposedTool, NestedCall, NestedCalls, NestedCallsHandle,
    NestedOutcome,
};
use toolhost_tools_code::{CodeConfig, run_program};

const RUNS: usize = 31;
const CALLS: usize = 1000;

/// One tool that answers at once with its arguments: the cheapest possible nested call.
struct Echo;

impl NestedCalls for Echo {
    fn tools(&self) -> Vec<ExposedTool> {
        vec![ExposedTool {
            name: "echo".to_owned(),
            description: "Returns its arguments.".to_owned(),
            input_schema: json!({"type": "object"}),
            output_schema: Some(json!({"type": "object"})),
        }]
    }

    fn concurrency_safe(&self, _name: &str, _arguments: &Value) -> bool {
        true
    }

    fn call(&self, call: NestedCall) -> BoxFuture<'_, NestedOutcome> {
        Box::pin(async move { NestedOutcome::Value(call.arguments) })
    }
}

fn stats(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (times[0], times[times.len() / 2])
}

async fn time_program(code: &str, nested: &NestedCallsHandle) -> Duration {
    let started = Instant::now();
    let out = run_program(
        code,
        Some(Arc::clone(nested)),
        "bench",
        &CodeConfig::default(),
        CancellationToken::new(),
        None,
    )
    .await;
    let elapsed = started.elapsed();
    assert!(out.is_ok(), "{out:?}");
    elapsed
}

async fn time_direct(nested: &NestedCallsHandle) -> Duration {
    let token = CancellationToken::new();
    let started = Instant::now();
    for i in 0..CALLS {
        let call = NestedCall {
            parent_call_id: "bench".to_owned(),
            root_call_id: "bench".to_owned(),
            call_id: format!("bench:code:{i}"),
            name: "echo".to_owned(),
            arguments: json!({"i": i}),
            cancel: token.clone(),
        };
        std::hint::black_box(nested.call(call).await);
    }
    started.elapsed()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let nested: NestedCallsHandle = Arc::new(Echo);
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mut start = Vec::new();
    for _ in 0..RUNS {
        start.push(time_program("return 1", &nested).await);
    }
    let (best, median) = stats(start);
    println!(
        "runtime start (empty program)  best {:>8.0} µs   median {:>8.0} µs   (target < 5000 µs)",
        us(best),
        us(median)
    );
    let loop_code = format!(
        "let s = 0; for (let i = 0; i < {CALLS}; i++) s += (await tools.echo({{i}})).i; return s"
    );
    let mut program = Vec::new();
    let mut direct = Vec::new();
    for _ in 0..RUNS {
        program.push(time_program(&loop_code, &nested).await);
        direct.push(time_direct(&nested).await);
    }
    let (program_best, program_median) = stats(program);
    let (direct_best, direct_median) = stats(direct);
    let per =
        |total: Duration, direct: Duration| (us(total) - us(best) - us(direct)) / CALLS as f64;
    println!(
        "{CALLS} nested calls          best {:>8.0} µs   median {:>8.0} µs",
        us(program_best),
        us(program_median)
    );
    println!(
        "{CALLS} direct calls          best {:>8.0} µs   median {:>8.0} µs",
        us(direct_best),
        us(direct_median)
    );
    println!(
        "overhead per nested call       best {:>8.1} µs   median {:>8.1} µs   (target < 20 µs)",
        per(program_best, direct_best),
        per(program_median, direct_median)
    );
}
