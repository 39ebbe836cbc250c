//! The confinement corpus (≥ 100 escape attempts) through every file tool: read, write, edit,
//! glob and grep. Zero escapes: no tool result ever shows outside content or an outside path, and
//! nothing outside the roots (or in a protected path) changes.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::sync::Arc;
use toolhost_contract::Capabilities;
use toolhost_registry::{CallInput, Registry};
use toolhost_tools_fs::FsLimits;
use toolhost_workspace::Workspace;
use toolhost_workspace::testkit::{EscapeCorpus, SECRET};

fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_file_tool_escapes_the_workspace() {
    let base = tempfile::tempdir().unwrap();
    let corpus = EscapeCorpus::build(base.path()).unwrap();
    assert!(corpus.cases.len() >= 100, "corpus has only {} cases", corpus.cases.len());
    let before = corpus.snapshot().unwrap();
    let registry = Registry::default();
    let _ = toolhost_tools_fs::register(&registry, FsLimits::default()).unwrap();
    let workspace = Workspace::new(corpus.config()).unwrap();
    let caps = Arc::new(Capabilities::new().with::<Workspace>(workspace));
    let mut attempts = 0;
    let mut escapes = Vec::new();
    for (idx, case) in corpus.cases.iter().enumerate() {
        let path = case.path.as_str();
        let calls = [
            ("read", json!({"file_path": path})),
            ("write", json!({"file_path": path, "content": "pwned\n"})),
            ("edit", json!({"file_path": path, "old_string": SECRET, "new_string": "pwned"})),
            ("glob", json!({"pattern": "**", "path": path})),
            ("glob", json!({"pattern": "*secret*", "path": path})),
            ("grep", json!({"pattern": SECRET, "path": path})),
            ("grep", json!({"pattern": "TOOLHOST", "path": path, "include": "*"})),
        ];
        for (tool, args) in calls {
            attempts += 1;
            let input =
                CallInput::direct(&format!("c{idx}"), tool, args.clone(), Arc::clone(&caps));
            let result = serde_json::to_value(registry.dispatch(input).await.result).unwrap();
            // Failures echo the requested path, so only content (the secret) or a success that
            // lists outside files counts as an escape.
            let listed_outside =
                result["isError"] == false && result["value"].to_string().contains("outside");
            if text_of(&result).contains(SECRET)
                || result["value"].to_string().contains(SECRET)
                || listed_outside
            {
                escapes.push(format!("{} via {tool} {args}: {}", case.name, text_of(&result)));
            }
        }
    }
    // Whole-root searches never reach outside either (symlinks out of the root are not followed).
    for (tool, args) in
        [("glob", json!({"pattern": "**/*secret*"})), ("grep", json!({"pattern": SECRET}))]
    {
        let input = CallInput::direct("root", tool, args, Arc::clone(&caps));
        let result = serde_json::to_value(registry.dispatch(input).await.result).unwrap();
        let shown = text_of(&result);
        assert!(
            !shown.contains(SECRET) && !shown.contains("/outside/"),
            "{tool} over the root escaped: {shown}"
        );
    }
    assert!(
        escapes.is_empty(),
        "{} escapes out of {attempts} attempts:\n{}",
        escapes.len(),
        escapes.join("\n")
    );
    assert_eq!(
        corpus.snapshot().unwrap(),
        before,
        "something outside the roots or in a protected path changed"
    );
    println!(
        "confinement: {attempts} attempts over {} cases × 7 tool calls, 0 escapes",
        corpus.cases.len()
    );
}
