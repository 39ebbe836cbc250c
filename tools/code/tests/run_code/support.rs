//! One-line runs and condition waits for the tests.

use crate::fake::Fake;
use std::time::Duration;
use toolhost_contract::{CancellationToken, NestedCallsHandle, ToolError};
use toolhost_tools_code::{CodeConfig, FailureKind, RunCodeOutput, run_program};

pub const PARENT: &str = "call-7";

/// Runs `code` over `nested` with `config`.
pub async fn run_with(
    code: &str,
    nested: Option<NestedCallsHandle>,
    config: &CodeConfig,
) -> Result<RunCodeOutput, ToolError> {
    run_program(code, nested, PARENT, config, CancellationToken::new(), None).await
}

/// Runs `code` over fresh fake tools with the default limits.
pub async fn run(code: &str) -> Result<RunCodeOutput, ToolError> {
    let (_fake, handle) = Fake::handle();
    run_with(code, Some(handle), &CodeConfig::default()).await
}

/// The result of a run that must succeed.
pub async fn value(code: &str) -> serde_json::Value {
    let output = run(code).await.unwrap_or_else(|e| panic!("{code}: {}", e.message));
    output.result.unwrap_or(serde_json::Value::Null)
}

/// The error of a run that must fail with `kind`.
pub fn failed(result: Result<RunCodeOutput, ToolError>, kind: FailureKind) -> String {
    match result {
        Ok(output) => panic!("expected a {kind} failure, got {output:?}"),
        Err(err) => {
            assert_eq!(FailureKind::of(&err), Some(kind), "{}", err.message);
            err.message
        }
    }
}

/// The value's Native text.
pub fn text(output: &RunCodeOutput) -> String {
    toolhost_tools_code::render::render_text(&output.logs, output.result.as_ref())
}

/// Waits (bounded) until `condition` holds.
pub async fn until(mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "condition not reached in 10 s");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
