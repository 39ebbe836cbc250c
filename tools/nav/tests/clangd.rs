//! The `lsp` tool against a real clangd (Debian `clangd` / `clangd-NN`) on a small C project:
//! definition across files, references including the declaration, hover, implementation, a
//! wrong column fixed by `symbol`, and one pooled process per workspace. A missing clangd fails.
#![allow(clippy::unwrap_used)]

#[path = "support/common.rs"]
mod common;

use common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// The C project plus a `compile_commands.json`, so clangd's background index covers every file.
fn indexed_project(root: &Path) {
    c_project(root);
    let dir = root.display();
    let entries: Vec<Value> = ["main.c", "util.c"]
        .iter()
        .map(|f| json!({"directory": dir.to_string(), "file": format!("{dir}/{f}"), "arguments": ["cc", "-c", f]}))
        .collect();
    write(root, "compile_commands.json", &serde_json::to_string(&entries).unwrap());
}

fn location_lines(result: &Value) -> Vec<String> {
    text(result).lines().map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn definition_across_files_lands_in_the_header() {
    require("clangd");
    let env = Env::default_with(c_project);
    // main.c line 4: `    int total = add(1, 2);` — `add` at column 17.
    let result = env.call(args("goToDefinition", "main.c", 4, 17)).await;
    let value = ok(&result);
    assert_eq!(text(&result), "util.h:5:5");
    assert_eq!(value["resolvedWorkspaceUri"], json!(toolhost_contract::lsp::file_uri(&env.root)));
    assert_eq!(
        value["locations"],
        json!([{"uri": env.uri("util.h"),
                "range": {"start": {"line": 4, "character": 4}, "end": {"line": 4, "character": 7}},
                "snippet": "int add(int a, int b);"}])
    );
    assert_eq!(
        result["meta"],
        json!({"locations": [{"path": "util.h", "line": 5, "character": 5, "snippet": "int add(int a, int b);"}]})
    );
    // One clangd for the workspace, reused by later queries.
    env.call(args("hover", "main.c", 4, 17)).await;
    env.call(args("findReferences", "main.c", 4, 17)).await;
    assert_eq!(env.host.started(), 1);
    env.host.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexed_definition_and_references_include_the_declaration() {
    require("clangd");
    let env = Env::default_with(indexed_project);
    // The background index fills in asynchronously: poll until it has seen util.c.
    let deadline = Instant::now() + Duration::from_secs(60);
    let definition = loop {
        let result = env.call(args("goToDefinition", "main.c", 4, 17)).await;
        ok(&result);
        if text(&result).contains("util.c") || Instant::now() > deadline {
            break result;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(text(&definition), "util.c:3:5", "{definition:#}");
    assert_eq!(definition["value"]["locations"][0]["snippet"], json!("int add(int a, int b) {"));
    let references = loop {
        let result = env.call(args("findReferences", "main.c", 5, 12)).await;
        ok(&result);
        if text(&result).contains("util.h") || Instant::now() > deadline {
            break result;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let mut lines = location_lines(&references);
    lines.sort();
    // Both calls in main.c, the definition, and the declaration in the header.
    assert_eq!(lines, ["main.c:4:17", "main.c:5:12", "util.c:3:5", "util.h:5:5"], "{references:#}");
    // Grouped by file in first-seen order.
    let order: Vec<String> = location_lines(&references)
        .iter()
        .map(|l| l.split(':').next().unwrap().to_owned())
        .collect();
    let mut seen: Vec<String> = Vec::new();
    for path in &order {
        if seen.last() != Some(path) {
            assert!(!seen.contains(path), "not grouped: {order:?}");
            seen.push(path.clone());
        }
    }
    env.host.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hover_shows_the_signature_and_comment() {
    require("clangd");
    let env = Env::default_with(c_project);
    // clangd takes the comment of a declaration from an included header out of its index of
    // the file's preamble, which (clangd 19; 14 did it in line) a task of its own fills once the
    // preamble is built. Nothing announces the end of that task (the file's diagnostics may come first), so
    // on a busy machine the first hover can show the signature without the comment. Ask until
    // the comment is there, within a deadline.
    let deadline = Instant::now() + Duration::from_secs(30);
    let result = loop {
        let result = env.call(args("hover", "main.c", 4, 17)).await;
        ok(&result);
        if text(&result).contains("Adds two numbers.") || Instant::now() > deadline {
            break result;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let value = ok(&result);
    assert_eq!(value["kind"], json!("hover"));
    let shown = text(&result);
    assert!(shown.contains("function `add`"), "{shown}");
    assert!(shown.contains("Adds two numbers."), "{shown}");
    assert!(shown.contains("int add(int a, int b)"), "{shown}");
    assert_eq!(value["hover"]["contents"], json!(shown));
    assert!(result.get("meta").is_none());
    env.host.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn implementation_of_a_virtual_method() {
    require("clangd");
    let env = Env::default_with(c_project);
    // shapes.cpp line 3: `    virtual int area() const = 0;` — `area` at column 17.
    let result = env.call(args("goToImplementation", "shapes.cpp", 3, 17)).await;
    ok(&result);
    assert_eq!(text(&result), "shapes.cpp:8:9");
    assert_eq!(
        result["value"]["locations"][0]["snippet"],
        json!("int area() const override { return side * side; }")
    );
    // A plain C function has no implementations: an empty answer, not an error.
    let result = env.call(args("goToImplementation", "main.c", 4, 17)).await;
    ok(&result);
    assert_eq!(text(&result), "No results.");
    env.host.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symbol_fixes_a_wrong_column() {
    require("clangd");
    let env = Env::default_with(c_project);
    // Column 2 is indentation: clangd finds nothing there.
    let wrong = env.call(args("goToDefinition", "main.c", 4, 2)).await;
    assert_eq!(text(&wrong), "No results.", "{wrong:#}");
    let fixed = env
        .call(json!({"operation": "goToDefinition", "file_path": "main.c", "line": 4,
                     "character": 2, "symbol": "add"}))
        .await;
    assert_eq!(text(&fixed), "util.h:5:5", "{fixed:#}");
    // A line off by two still lands on the symbol.
    let near = env
        .call(json!({"operation": "hover", "file_path": "main.c", "line": 3,
                     "character": 1, "symbol": "total"}))
        .await;
    assert!(text(&near).contains("variable `total`"), "{near:#}");
    env.host.shutdown_all().await;
}
