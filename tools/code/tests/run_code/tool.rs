//! `run_code` as a tool: argument checks, its card, its description, background runs.

use crate::fake::{Fake, exposed};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use toolhost_contract::protocol::card::CardKind;
use toolhost_contract::tasks::{BackgroundTasks, TaskControl, TaskEnd, TaskWork};
use toolhost_contract::{
    CancellationToken, Capabilities, NestedCallsHandle, TasksHandle, Tool, ToolContext, ToolError,
};
use toolhost_tools_code::{
    CodeConfig, INVALID_DESCRIPTION, RunCodeArgs, RunCodeTool, description, present,
};

fn args(code: &str, description: &str, background: bool) -> RunCodeArgs {
    serde_json::from_value(json!({
        "code": code, "description": description, "run_in_background": background
    }))
    .unwrap()
}

#[tokio::test]
async fn a_blank_description_is_refused() {
    let tool = RunCodeTool::new(CodeConfig::default(), None);
    let cx = ToolContext::detached("c1", Arc::new(Capabilities::new()));
    let err = tool.call(args("return 1", "  ", false), cx).await.unwrap_err();
    assert_eq!(err.message, INVALID_DESCRIPTION);
}

#[tokio::test]
async fn the_tool_runs_over_the_nested_capability() {
    let (fake, handle) = Fake::handle();
    let caps = Capabilities::new().with::<NestedCallsHandle>(handle);
    let tool = RunCodeTool::new(CodeConfig::default(), None);
    let cx = ToolContext::detached("c9", Arc::new(caps));
    let out = tool.call(args("return await tools.echo({i: 3})", "echo", false), cx).await.unwrap();
    assert_eq!(out.result, Some(json!({"i": 3})));
    assert_eq!(fake.started.lock().unwrap()[0].0, "c9:code:1");
    let text = tool.render(&args("", "echo", false), &out);
    assert_eq!(serde_json::to_value(&text).unwrap()[0]["text"], "{\n  \"i\": 3\n}");
}

#[test]
fn the_card_is_titled_with_the_description_and_shows_the_code() {
    let p = present(&json!({"code": "return 1", "description": "Count TODOs"}));
    assert_eq!((p.kind.clone(), p.title.as_str()), (CardKind::Terminal, "Count TODOs"));
    assert_eq!(p.terminal.unwrap().command, "return 1");
    let p = present(&json!({"code": "x", "description": "bg", "run_in_background": true}));
    assert_eq!(p.kind, CardKind::Generic);
    assert_eq!(present(&json!(42)).title, "run_code");
}

#[test]
fn the_description_declares_the_current_tools() {
    let config = CodeConfig::default();
    let source: toolhost_tools_code::ToolSource = Arc::new(exposed);
    let tool = RunCodeTool::new(config.clone(), Some(source));
    let text = tool.description();
    assert!(text.contains("declare const tools: {"), "{text}");
    assert!(
        text.contains("  echo(args: ToolArgsMap[\"echo\"]): Promise<ToolOutputMap[\"echo\"]>;")
    );
    assert_eq!(text, tool.description(), "byte-stable");
    let many = CodeConfig { declare_max_tools: 3, ..config };
    let text = description(&exposed(), &many);
    assert!(text.contains("tools.$search"), "{text}");
    assert!(text.contains("- my-tool: A tool whose name is not an identifier."), "{text}");
    assert!(!text.contains("ToolArgsMap[\"echo\"]"), "{text}");
}

/// A job table that runs each job on the test's runtime and keeps how it ended.
#[derive(Default)]
struct Jobs {
    ends: Arc<Mutex<Vec<TaskEnd>>>,
    progress: Arc<Mutex<Vec<String>>>,
}

impl BackgroundTasks for Jobs {
    fn start(
        &self,
        kind: &str,
        _label: &str,
        _cx: &ToolContext,
        work: TaskWork,
    ) -> Result<String, ToolError> {
        let ends = Arc::clone(&self.ends);
        let seen = Arc::clone(&self.progress);
        let control = TaskControl {
            stop: CancellationToken::new(),
            progress: Arc::new(move |text: String| seen.lock().unwrap().push(text)),
        };
        tokio::spawn(async move {
            let end = work(control).await;
            ends.lock().unwrap().push(end);
        });
        Ok(format!("{kind}-1"))
    }
}

#[tokio::test]
async fn a_background_run_is_a_job_whose_output_is_the_logs() {
    let jobs = Arc::new(Jobs::default());
    let (ends, progress) = (Arc::clone(&jobs.ends), Arc::clone(&jobs.progress));
    let (_fake, handle) = Fake::handle();
    let tasks: TasksHandle = jobs;
    let caps = Capabilities::new().with::<NestedCallsHandle>(handle).with(tasks);
    let tool = RunCodeTool::new(CodeConfig::default(), None);
    let cx = ToolContext::detached("c2", Arc::new(caps));
    let code = "console.log('one'); await tools.slow({}); console.log('two'); return 3";
    let out = tool.call(args(code, "bg", true), cx).await.unwrap();
    assert_eq!(out.result, Some(json!({"jobId": "code-1"})));
    assert!(out.logs.is_empty());
    crate::support::until(|| !ends.lock().unwrap().is_empty()).await;
    let end = ends.lock().unwrap()[0].clone();
    assert_eq!(
        (end.failed, end.detail.as_str(), end.output.as_str()),
        (false, "completed", "one\ntwo\n3")
    );
    assert_eq!(progress.lock().unwrap().last().map(String::as_str), Some("one\ntwo"));
    let _: Value = json!(null);
}
