//! The `lsp` tool against a real pyright (npm `pyright`, `pyright-langserver --stdio`) on a small
//! Python project: definition across modules, references, hover, and the operation pyright lacks.
//! A missing pyright fails.
#![allow(clippy::unwrap_used)]

#[path = "support/common.rs"]
mod common;

use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn definition_across_modules() {
    require("pyright-langserver");
    let env = Env::default_with(py_project);
    // app.py line 4: `print(distance(origin, Point(3, 4)))` — `distance` at column 7.
    let result = env.call(args("goToDefinition", "app.py", 4, 7)).await;
    let value = ok(&result);
    assert_eq!(text(&result), "geometry.py:9:5");
    assert_eq!(value["locations"][0]["uri"], json!(env.uri("geometry.py")));
    assert_eq!(
        value["locations"][0]["snippet"],
        json!("def distance(a: Point, b: Point) -> float:")
    );
    assert_eq!(
        result["meta"]["locations"][0],
        json!({"path": "geometry.py", "line": 9, "character": 5,
               "snippet": "def distance(a: Point, b: Point) -> float:"})
    );
    // The class too (line 3: `origin = Point(0, 0)`).
    let class = env.call(args("goToDefinition", "app.py", 3, 10)).await;
    assert_eq!(text(&class), "geometry.py:1:7");
    assert_eq!(env.host.started(), 1);
    env.host.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn references_span_both_modules_and_include_the_declaration() {
    require("pyright-langserver");
    let env = Env::default_with(py_project);
    let result = env.call(args("findReferences", "app.py", 3, 10)).await;
    ok(&result);
    let mut lines: Vec<String> = text(&result).lines().map(str::to_owned).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "app.py:1:22",
            "app.py:3:10",
            "app.py:4:24",
            "geometry.py:1:7",
            "geometry.py:9:17",
            "geometry.py:9:27"
        ],
        "{result:#}"
    );
    // From the declaration side.
    let result = env.call(args("findReferences", "geometry.py", 9, 5)).await;
    let mut lines: Vec<String> = text(&result).lines().map(str::to_owned).collect();
    lines.sort();
    assert_eq!(lines, ["app.py:1:29", "app.py:4:7", "geometry.py:9:5"]);
    env.host.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hover_and_unsupported_implementation() {
    require("pyright-langserver");
    let env = Env::default_with(py_project);
    let result = env.call(args("hover", "app.py", 4, 7)).await;
    ok(&result);
    let shown = text(&result);
    assert!(shown.contains("def distance("), "{shown}");
    assert!(shown.contains("Euclidean distance between two points."), "{shown}");
    assert_eq!(
        result["value"]["hover"]["range"],
        json!({"start": {"line": 3, "character": 6}, "end": {"line": 3, "character": 14}})
    );
    let result = env.call(args("goToImplementation", "app.py", 4, 7)).await;
    assert_eq!(
        result["error"],
        json!({"message": "server does not support goToImplementation",
               "info": {"name": "LspError", "code": "LSP_UNSUPPORTED_OPERATION"}})
    );
    env.host.shutdown_all().await;
}
