//! The official MCP SDKs' clients against `toolhost mcp` over stdio: rmcp's (Rust), Python
//! `mcp` 2.3.0's `ClientSession` (tests/mcp-clients/python_session.py) and the MCP Inspector CLI
//! 1.0.3 — each lists the tools and calls them, and strict ones validate `structuredContent`
//! against the published output schemas. The Python and Node clients are installed by
//! `cargo xtask install-deps` under `.client-tools`.
#![allow(clippy::unwrap_used)]

use crate::server;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use server::{Env, binary, workspace_root};
use std::process::Command;

fn client_tool(rel: &str) -> std::path::PathBuf {
    let path = workspace_root().join(".client-tools").join(rel);
    assert!(
        path.exists(),
        "{} is missing: `cargo xtask install-deps` installs the MCP clients the tests use",
        path.display()
    );
    path
}

fn arguments(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[tokio::test]
async fn the_rmcp_client_lists_and_calls_tools() {
    let env = Env::new();
    env.write("a.txt", "hello\nworld\n");
    let mut command = tokio::process::Command::new(binary());
    command.args(["mcp", "--standalone"]).current_dir(&env.root);
    for (key, value) in env.env() {
        command.env(key, value);
    }
    let transport = TokioChildProcess::new(command).unwrap();
    let client = ().serve(transport).await.unwrap();
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "toolhost");

    let tools = client.list_all_tools().await.unwrap();
    let read_tool = tools.iter().find(|t| t.name == "read").unwrap();
    assert_eq!(read_tool.annotations.as_ref().unwrap().read_only_hint, Some(true));
    let schema = Value::Object((*read_tool.output_schema.clone().unwrap()).clone());

    let read = client
        .call_tool(
            CallToolRequestParams::new("read")
                .with_arguments(arguments(json!({"file_path": "a.txt"}))),
        )
        .await
        .unwrap();
    assert_eq!(read.is_error, Some(false));
    let value = read.structured_content.clone().unwrap();
    let validator = jsonschema::options().build(&schema).unwrap();
    assert!(validator.is_valid(&value), "{value}");
    let text = serde_json::to_value(&read.content).unwrap();
    assert!(text[0]["text"].as_str().unwrap().contains("2: world"), "{text}");

    let edit = client
        .call_tool(CallToolRequestParams::new("edit").with_arguments(arguments(
            json!({"file_path": "a.txt", "old_string": "world", "new_string": "rmcp"}),
        )))
        .await
        .unwrap();
    assert_eq!(edit.is_error, Some(false), "{edit:?}");
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "hello\nrmcp\n");

    let failed = client
        .call_tool(
            CallToolRequestParams::new("read")
                .with_arguments(arguments(json!({"file_path": "nope"}))),
        )
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));
    let unknown = client
        .call_tool(CallToolRequestParams::new("no_such_tool").with_arguments(arguments(json!({}))))
        .await;
    assert!(unknown.is_err(), "an unknown tool is a protocol error: {unknown:?}");
    client.cancel().await.unwrap();
}

#[test]
fn the_python_sdk_client_session_validates_structured_results() {
    let env = Env::new();
    env.write("a.txt", "hello\nworld\n");
    let summary = server::run_python_client("python_session.py", &env);
    assert_eq!(summary["server"], "toolhost");
    assert_eq!(summary["protocolVersion"], "2025-11-25");
    assert!(summary["failure"].as_str().unwrap().contains("was not found"));
}

#[test]
fn the_inspector_cli_lists_and_calls_tools() {
    let build = client_tool("npm/node_modules/@modelcontextprotocol/inspector-cli/build");
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let inspector = |args: &[&str]| -> Value {
        // The Inspector CLI finds its package.json relative to its working directory.
        let mut command = Command::new("node");
        command.current_dir(&build).arg("index.js").arg(binary());
        command.args(["mcp", "--standalone", "--workspace"]).arg(&env.root).args(args);
        for (key, value) in env.env() {
            command.env(key, value);
        }
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "inspector {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let listed = inspector(&["--method", "tools/list"]);
    let names: Vec<&str> =
        listed["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in ["edit", "glob", "grep", "lsp", "read", "write"] {
        assert!(names.contains(&name), "{names:?}");
    }
    let read = inspector(&[
        "--method",
        "tools/call",
        "--tool-name",
        "read",
        "--tool-arg",
        "file_path=a.txt",
    ]);
    assert_eq!(read["isError"], false, "{read}");
    assert!(read["content"][0]["text"].as_str().unwrap().contains("1: hello"), "{read}");
    assert_eq!(read["structuredContent"]["totalLines"], 1, "{read}");
}
