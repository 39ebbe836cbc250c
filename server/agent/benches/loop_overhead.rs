//! The agent loop's own time per turn, the model excluded: a run of `TURNS` tool-calling turns
//! against a model server on 127.0.0.1 that answers at once, with a tool that answers at once
//! (2 KB of text, like a short `read`, so the conversation grows as a real one does). The server
//! notes when it finished writing each answer and when the next request arrived; the gap is
//! everything the client side does between two model answers — reading the stream's end,
//! assembling the tool calls, dispatching them, recording the answers, the compaction check,
//! serializing the whole conversation again and sending it over a new loopback connection.
//!
//! Run with `cargo bench -p toolhost-agent --bench loop_overhead` (a plain `main`, no harness);
//! it prints the median, the 90th percentile and the worst gap in milliseconds, and the gap of
//! the last turns (the longest conversation). Target: under 2 ms per turn.

#![cfg_attr(test, allow(dead_code))]
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
#[path = "../tests/support/sse.rs"]
mod sse;

use sse::Answer;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost_agent::agent::{AgentOptions, BoxFuture, ToolOutcome, ToolRunner, run};
use toolhost_agent::model::{ModelClient, ModelConfig, ToolSpec};

const TURNS: usize = 50;
const RUNS: usize = 5;

/// One tool that answers at once with 2 KB of text.
struct Instant2k;

impl ToolRunner for Instant2k {
    fn tools(&self) -> Vec<ToolSpec> {
        ["read", "grep", "glob", "edit", "write", "bash"]
            .iter()
            .map(|name| ToolSpec {
                name: (*name).to_owned(),
                description: format!("The {name} tool, described in a sentence or two."),
                parameters: json!({"type": "object", "properties": {"file_path": {"type": "string"}}}),
            })
            .collect()
    }

    fn concurrency_safe(&self, _name: &str, _args: &Value) -> bool {
        true
    }

    fn call<'a>(
        &'a self,
        _call_id: &'a str,
        _name: &'a str,
        _args: Value,
        _cancel: CancellationToken,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let text: String =
                (1..=40).map(|n| format!("{n}: a line of the file, about fifty bytes\n")).collect();
            ToolOutcome::new(text, false)
        })
    }
}

/// Request n: a tool call (n < TURNS) or the answer.
fn script(n: usize, _body: &Value) -> Answer {
    if n < TURNS {
        let call = json!({"index": 0, "id": format!("c{n}"), "type": "function",
            "function": {"name": "read", "arguments": format!("{{\"file_path\":\"src/f{n}.rs\"}}")}});
        Answer::sse(&[
            json!({"choices": [{"delta": {"content": "Let me look."}}]}),
            json!({"choices": [{"delta": {"tool_calls": [call]}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 1000 + n * 600, "completion_tokens": 20, "total_tokens": 1020 + n * 600}}),
        ])
    } else {
        Answer::sse(&[
            json!({"choices": [{"delta": {"content": "Done."}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 40000, "completion_tokens": 2, "total_tokens": 40002}}),
        ])
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let mut gaps: Vec<f64> = Vec::new();
    let mut late: Vec<f64> = Vec::new();
    for _ in 0..RUNS {
        runtime.block_on(async {
            let server = sse::server(script).await;
            let model =
                ModelClient::new(ModelConfig::new(server.base.clone(), "bench-model")).unwrap();
            let options = AgentOptions {
                system_prompt: "You are a coding agent.".repeat(20),
                max_turns: (TURNS + 5) as u32,
                ..AgentOptions::default()
            };
            let outcome =
                run(&model, &Instant2k, &options, "a task", &CancellationToken::new(), &mut |_| {})
                    .await
                    .unwrap();
            assert_eq!(outcome.turns as usize, TURNS + 1);
            let times = server.times.lock().unwrap().clone();
            for (i, pair) in times.windows(2).enumerate() {
                let gap = ms(pair[1].0.saturating_duration_since(pair[0].1));
                gaps.push(gap);
                if i + 10 >= TURNS {
                    late.push(gap);
                }
            }
        });
    }
    gaps.sort_by(f64::total_cmp);
    late.sort_by(f64::total_cmp);
    let pick = |v: &[f64], q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    println!(
        "agent loop overhead per turn ({} turns x {RUNS} runs, model and tools excluded): \
         median {:.3} ms, p90 {:.3} ms, max {:.3} ms; last 10 turns median {:.3} ms (target < 2 ms)",
        TURNS,
        pick(&gaps, 0.5),
        pick(&gaps, 0.9),
        gaps[gaps.len() - 1],
        pick(&late, 0.5),
    );
}
