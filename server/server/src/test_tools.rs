//! Test-only tools and hooks for the LSP robustness tests (`tests/tests/lsp_*.rs`).
//!
//! Compiled only with the `test-tools` cargo feature, and active only when the process also runs
//! with `TOOLHOST_TEST_TOOLS=1` (both gates, so a stray environment variable cannot add tools to a
//! normal build, and a test build without the variable behaves like a normal one):
//!
//! - `test_sleep {seconds, ignoreCancel?, marker?}`: writes `marker` (a workspace path) once its
//!   body runs, then waits up to `seconds` (≤ 600) or until its
//!   cancellation signal fires (unless `ignoreCancel`, which models a body that ignores its
//!   signal, for the exit grace period). Concurrency-safe.
//! - `test_ask_client {payload?}`: sends the server→client request [`ECHO_METHOD`] through the
//!   [`EditorBridge`] capability and returns the editor's reply.
//!   Concurrency-safe, so many calls overlap (the deadlock test).
//! - `test_panic {}`: a body that panics (a typed `INTERNAL_ERROR` failure, never a crash).
//! - `test_toggle_tool {name}`: registers a tool `name` (it echoes its arguments), or removes it
//!   when this tool registered it before — a registry that changes at run time (the MCP
//!   `tools/list_changed` tests).
//! - [`PANIC_METHOD`]: a custom request whose handler panics (see `lsp.rs`).

use crate::editor::EditorBridge;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use toolhost_contract::protocol::ContentBlock;
use toolhost_contract::{RawTool, RegistrationError, ToolError};
use toolhost_jsonrpc::ErrorObject;
use toolhost_registry::Registry;

/// The environment variable that activates the test tools in a `test-tools` build.
pub const ENV: &str = "TOOLHOST_TEST_TOOLS";
/// The server→client request `test_ask_client` sends.
pub const ECHO_METHOD: &str = "toolhost/test/echo";
/// The client→server request whose handler panics.
pub const PANIC_METHOD: &str = "toolhost/test/panic";

/// Whether the test tools are active in this process.
pub fn enabled() -> bool {
    std::env::var(ENV).is_ok_and(|v| v == "1")
}

fn text_render(_args: &Value, value: &Value) -> Vec<ContentBlock> {
    vec![ContentBlock::text(value.to_string())]
}

/// Adds the test tools to `host` when they are active in this process (every host the binary
/// opens gets them; an editor's also gets the editor connection for `test_ask_client`).
pub fn install(host: &toolhost_host::Host) {
    if enabled()
        && let Err(err) = register(host.registry())
    {
        tracing::warn!(%err, "the test tools are not registered");
    }
}

/// Registers the test tools.
pub fn register(registry: &Registry) -> Result<(), RegistrationError> {
    let _ = registry.register_raw(
        RawTool::new("test_sleep")
            .with_description("Test only: sleeps until cancelled or `seconds` elapse.")
            .with_input_schema(json!({
                "type": "object",
                "properties": {
                    "seconds": {"type": "number"},
                    "ignoreCancel": {"type": "boolean"},
                    "marker": {"type": "string"}
                },
                "required": ["seconds"]
            }))
            .with_output_schema(json!({"type": "object"}))
            .with_concurrency_safe(|_| true)
            .with_render(text_render)
            .with_execute(|args, cx| async move {
                let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
                let seconds = if seconds.is_finite() { seconds.clamp(0.0, 600.0) } else { 0.0 };
                let ignore = args.get("ignoreCancel").and_then(Value::as_bool).unwrap_or(false);
                // Tests that must act on a running body wait for this file (written through
                // the workspace, like any tool I/O).
                if let (Some(marker), Some(ws)) = (
                    args.get("marker").and_then(Value::as_str),
                    cx.capability::<toolhost_workspace::Workspace>(),
                ) {
                    ws.write_file(marker, b"started\n")
                        .await
                        .map_err(|e| ToolError::plain(format!("cannot write the marker: {e}")))?;
                }
                let started = Instant::now();
                let sleep = tokio::time::sleep(Duration::from_secs_f64(seconds));
                let cancelled = if ignore {
                    sleep.await;
                    cx.is_cancelled()
                } else {
                    tokio::select! {
                        () = sleep => false,
                        () = cx.signal().cancelled() => true,
                    }
                };
                let slept = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                Ok(json!({"sleptMs": slept, "cancelled": cancelled}))
            }),
    )?;
    let _ = registry.register_raw(
        RawTool::new("test_ask_client")
            .with_description(
                "Test only: asks the editor (toolhost/test/echo) and returns its reply.",
            )
            .with_output_schema(json!({"type": "object"}))
            .with_concurrency_safe(|_| true)
            .with_render(text_render)
            .with_execute(|args, cx| async move {
                let bridge = cx
                    .capability::<EditorBridge>()
                    .ok_or_else(|| ToolError::plain("no editor connection"))?;
                let params = json!({"callId": cx.call_id(), "payload": args.get("payload")});
                let reply = bridge.request(ECHO_METHOD, &params, cx.signal()).await;
                if cx.signal().is_cancelled() {
                    return Err(ToolError::plain("cancelled while waiting for the editor"));
                }
                reply
                    .map(|reply| json!({"reply": reply}))
                    .map_err(|e| ToolError::plain(format!("the editor refused: {e}")))
            }),
    )?;
    // The tool holds its registry (a reference cycle; acceptable for a test-only tool).
    let handle = registry.clone();
    let registered = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashMap::<
        String,
        toolhost_contract::Disposer,
    >::new()));
    let _ = registry.register_raw(
        RawTool::new("test_toggle_tool")
            .with_description("Test only: registers the echo tool `name`, or removes it.")
            .with_input_schema(json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            }))
            .with_output_schema(json!({"type": "object"}))
            .with_render(text_render)
            .with_execute(move |args, _cx| {
                let (registry, registered) = (handle.clone(), std::sync::Arc::clone(&registered));
                async move {
                    let name = args.get("name").and_then(Value::as_str).unwrap_or("").to_owned();
                    let mut registered =
                        registered.lock().map_err(|_| ToolError::plain("poisoned"))?;
                    if let Some(disposer) = registered.remove(&name) {
                        disposer.dispose();
                        return Ok(json!({"name": name, "registered": false}));
                    }
                    let disposer = registry
                        .register_raw(
                            RawTool::new(name.clone())
                                .with_description("Test only: echoes its arguments.")
                                .with_output_schema(json!({"type": "object"}))
                                .with_render(text_render)
                                .with_execute(|args, _cx| async move { Ok(json!({"echo": args})) }),
                        )
                        .map_err(|e| ToolError::plain(e.to_string()))?;
                    registered.insert(name.clone(), disposer);
                    Ok(json!({"name": name, "registered": true}))
                }
            }),
    )?;
    let _ = registry.register_raw(
        RawTool::new("test_panic")
            .with_description("Test only: a body that panics.")
            .with_output_schema(json!({"type": "object"}))
            .with_render(text_render)
            .with_execute(|_args, _cx| async move {
                if enabled() {
                    panic!("test_panic: injected panic in a tool body");
                }
                Ok(json!({}))
            }),
    )?;
    Ok(())
}

/// The body of the [`PANIC_METHOD`] handler.
pub fn panic_in_handler() -> Result<Value, ErrorObject> {
    if enabled() {
        panic!("toolhost/test/panic: injected panic in a request handler");
    }
    Ok(Value::Null)
}
