//! Dispatch overhead: one call through the whole pipeline (`Registry::dispatch` with the timeout
//! wrapper and the generic spill policy registered) for a small value and for a read-sized value
//! (1000 numbered ~60-byte lines, rendered and projected like `read`), next to a baseline that calls
//! the same body and projections directly. The difference is the pipeline's cost: argument
//! snapshot, schema validation, lossless snapshot of the value, deserialize-back, spill check.
#![allow(clippy::unwrap_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;
use toolhost_contract::protocol::ContentBlock;
use toolhost_contract::{Capabilities, Tool, ToolContext, ToolError};
use toolhost_registry::SpillPolicy;
use toolhost_registry::{CallInput, Registry};

/// Large enough that neither benchmark result is spilled (the check itself still runs).
const SPILL_CAP: usize = 256 * 1024;
const LINES: usize = 1000;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

struct Echo;

impl Tool for Echo {
    type Args = EchoArgs;
    type Output = String;

    fn name(&self) -> &str {
        "echo"
    }

    fn description(&self) -> String {
        "echo".to_owned()
    }

    async fn call(&self, args: EchoArgs, _cx: ToolContext) -> Result<String, ToolError> {
        Ok(args.text)
    }

    fn render(&self, _args: &EchoArgs, output: &String) -> Vec<ContentBlock> {
        vec![ContentBlock::text(output.clone())]
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(30))
    }
}

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    file_path: String,
    #[serde(default)]
    offset: Option<f64>,
    #[serde(default)]
    limit: Option<f64>,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct Line {
    number: u64,
    text: String,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ReadOutput {
    path: String,
    offset: u64,
    lines: Vec<Line>,
    total_lines: u64,
}

/// A `read`-shaped tool serving a fixed 1000-line file from memory.
struct Read {
    lines: Arc<Vec<Line>>,
}

impl Tool for Read {
    type Args = ReadArgs;
    type Output = ReadOutput;

    fn name(&self) -> &str {
        "read"
    }

    fn description(&self) -> String {
        "read".to_owned()
    }

    async fn call(&self, args: ReadArgs, _cx: ToolContext) -> Result<ReadOutput, ToolError> {
        let offset = args.offset.map_or(1, |o| o as u64);
        let _limit = args.limit;
        Ok(ReadOutput {
            path: args.file_path,
            offset,
            lines: self.lines.as_ref().clone(),
            total_lines: self.lines.len() as u64,
        })
    }

    fn render(&self, _args: &ReadArgs, out: &ReadOutput) -> Vec<ContentBlock> {
        let mut text = format!("<path>{}</path>\n<type>file</type>\n<content>\n", out.path);
        for line in &out.lines {
            text.push_str(&format!("{}: {}\n", line.number, line.text));
        }
        text.push('\n');
        text.push_str(&format!("(End of file - total {} lines)\n</content>", out.total_lines));
        vec![ContentBlock::text(text)]
    }

    fn presentation_meta(&self, _args: &ReadArgs, out: &ReadOutput) -> Option<Value> {
        Some(json!({
            "path": out.path,
            "offset": out.offset,
            "lines": out.lines,
            "totalLines": out.total_lines,
            "lang": "rs",
        }))
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(30))
    }

    fn concurrency_safe(&self, _args: &ReadArgs) -> bool {
        true
    }
}

fn file_lines() -> Arc<Vec<Line>> {
    Arc::new(
        (1..=LINES as u64)
            .map(|n| Line {
                number: n,
                text: format!(
                    "    let value_{n:04} = compute(input, {n:4}); // a typical source line"
                ),
            })
            .collect(),
    )
}

fn registry(lines: &Arc<Vec<Line>>) -> Registry {
    let registry = Registry::default();
    let _ = registry.register(Echo).unwrap();
    let _ = registry.register(Read { lines: Arc::clone(lines) }).unwrap();
    registry.add_post_execute(Arc::new(SpillPolicy::new(SPILL_CAP)), true);
    registry
}

fn input(name: &str, args: &Value, caps: &Arc<Capabilities>) -> CallInput {
    let mut input = CallInput::direct("call-1", name, args.clone(), Arc::clone(caps));
    input.session_id = Some("bench-session".to_owned());
    input
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let lines = file_lines();
    let registry = registry(&lines);
    let caps = Arc::new(Capabilities::new());

    // Sanity: both succeed and stay inline.
    let read_args = json!({"file_path": "/ws/src/lib.rs"});
    let echo_args = json!({"text": "hello, world"});
    let res = rt.block_on(registry.dispatch(input("read", &read_args, &caps)));
    assert!(!res.result.is_error(), "{:?}", res.result.error());
    let rendered = res.result.content()[0].as_text().unwrap().len();
    assert!(rendered > 50_000 && rendered < SPILL_CAP, "rendered {rendered} bytes");
    let res = rt.block_on(registry.dispatch(input("echo", &echo_args, &caps)));
    assert_eq!(res.result.value(), Some(&json!("hello, world")));

    let mut group = c.benchmark_group("dispatch");
    group.bench_function("echo_small_value", |b| {
        b.iter(|| black_box(rt.block_on(registry.dispatch(input("echo", &echo_args, &caps)))))
    });
    group.bench_function("read_1000_lines", |b| {
        b.iter(|| black_box(rt.block_on(registry.dispatch(input("read", &read_args, &caps)))))
    });
    group.finish();

    // Baseline: the same body + render + meta, called directly (no pipeline).
    let read = Read { lines: Arc::clone(&lines) };
    let cx = ToolContext::detached("call-1", Arc::clone(&caps));
    let mut group = c.benchmark_group("direct");
    group.bench_function("echo_small_value", |b| {
        b.iter(|| {
            let args = EchoArgs { text: "hello, world".to_owned() };
            let out = rt.block_on(Echo.call(args, cx.clone())).unwrap();
            let args = EchoArgs { text: String::new() };
            black_box(Echo.render(&args, &out))
        })
    });
    group.bench_function("read_1000_lines", |b| {
        b.iter(|| {
            let args =
                ReadArgs { file_path: "/ws/src/lib.rs".to_owned(), offset: None, limit: None };
            let out = rt.block_on(read.call(args, cx.clone())).unwrap();
            let args =
                ReadArgs { file_path: "/ws/src/lib.rs".to_owned(), offset: None, limit: None };
            black_box((read.render(&args, &out), read.presentation_meta(&args, &out)))
        })
    });
    group.finish();
}

criterion_group!(dispatch, benches);
criterion_main!(dispatch);
