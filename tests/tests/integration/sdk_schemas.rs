//! The schemas `toolhost mcp` publishes, as the TypeScript SDK's validator takes them: every
//! tool's input and output schema compiles under ajv's JSON Schema 2020-12 draft in strict mode
//! with no warning and no error, and no `default` contradicts its type
//! (tests/mcp-clients/ajv_strict.mjs); the TypeScript SDK client lists the tools and calls read,
//! glob, grep and edit with nothing on its stderr, and the server logs no warning meanwhile
//! (tests/mcp-clients/ts_sdk_client.mjs). The test tools are listed too, so raw tools' schemas
//! are covered beside the typed ones. Node and the packages are installed by `cargo xtask
//! install-deps` under `.client-tools/npm`.
#![allow(clippy::unwrap_used)]

use crate::mcp;
use crate::server;

use mcp::Mcp;
use serde_json::{Value, json};
use server::{Env, binary, workspace_root};
use std::process::{Command, Output};

/// A script of tests/mcp-clients, after checking the npm packages it imports are installed.
fn script(name: &str) -> std::path::PathBuf {
    let npm = workspace_root().join(".client-tools/npm/node_modules");
    for package in ["@modelcontextprotocol/sdk", "ajv", "ajv-formats"] {
        assert!(
            npm.join(package).join("package.json").is_file(),
            "{package} is missing under {}: `cargo xtask install-deps` installs it",
            npm.display()
        );
    }
    workspace_root().join("tests/mcp-clients").join(name)
}

/// The JSON summary a script prints last.
fn summary(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the script failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap()
}

#[test]
fn every_published_schema_compiles_under_strict_ajv_without_warnings() {
    let env = Env::new();
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.initialize("ajv-strict");
    let listed = mcp.ok("tools/list", json!({}));
    let tools = listed["tools"].as_array().unwrap().len();
    let file = env.dir.path().join("tools-list.json");
    std::fs::write(&file, serde_json::to_vec(&listed).unwrap()).unwrap();

    let out = Command::new("node").arg(script("ajv_strict.mjs")).arg(&file).output().unwrap();
    let summary = summary(&out);
    println!("ajv strict over {tools} tools: {summary}");
    assert_eq!(summary["warnings"], json!([]), "{summary}");
    assert_eq!(summary["errors"], json!([]), "{summary}");
    // Every tool publishes both schemas (an output schema is required of every tool).
    assert_eq!(summary["schemas"], json!(2 * tools), "{summary}");
    assert!(tools >= 20, "{listed}");
}

#[test]
fn the_typescript_sdk_client_lists_and_calls_with_an_empty_stderr() {
    let env = Env::new();
    env.write("a.txt", "hello\nworld\n");
    let mut command = Command::new("node");
    command.arg(script("ts_sdk_client.mjs")).arg(binary()).arg(&env.root);
    for (key, value) in env.env() {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    let summary = summary(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty(), "the SDK client wrote to stderr:\n{stderr}");
    // The server's own log (one line per call) holds no warning or error.
    let server_log = summary["serverStderr"].as_str().unwrap();
    assert!(
        !server_log.contains(" WARN ") && !server_log.contains(" ERROR "),
        "the server warned:\n{server_log}"
    );

    let names: Vec<&str> =
        summary["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for name in ["edit", "glob", "grep", "read"] {
        assert!(names.contains(&name), "{names:?}");
        assert_eq!(summary["calls"][name]["isError"], false, "{summary}");
        assert_eq!(summary["calls"][name]["structured"], true, "{summary}");
    }
    assert!(summary["calls"]["read"]["text"].as_str().unwrap().contains("2: world"), "{summary}");
    assert_eq!(summary["calls"]["glob"]["text"], "a.txt", "{summary}");
    assert!(summary["calls"]["grep"]["text"].as_str().unwrap().contains("Line 2: world"));
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "hello\nsdk\n");
}
