//! A file outside the workspace is refused before any language server starts: the host spawned
//! nothing, and no clangd runs as a child of this test process (its own binary, so no other test
//! can start one meanwhile). clangd must be installed, or the proof would be vacuous.
#![allow(clippy::unwrap_used)]

#[path = "support/common.rs"]
mod common;

use common::*;
use serde_json::json;

/// Names of the live child processes of this process.
fn child_names() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut names = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((head, rest)) = stat.rsplit_once(')') else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(1) == Some(&me.as_str()) && fields.first() != Some(&"Z") {
            names.push(head.split_once('(').map(|(_, n)| n.to_owned()).unwrap_or_default());
        }
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_files_are_refused_before_any_server_starts() {
    require("clangd");
    let env = Env::default_with(c_project);
    std::fs::write(env.dir.path().join("elsewhere.c"), "int x;\n").unwrap();
    for file in ["../elsewhere.c", "/etc/hostname.c", "/tmp/../etc/passwd"] {
        let result = env.call(args("goToDefinition", file, 1, 5)).await;
        assert_eq!(result["isError"], json!(true), "{file}: {result}");
        assert_eq!(result["error"]["info"]["code"], json!("FS_SANDBOX_DENIED"), "{file}: {result}");
    }
    let absolute = env.dir.path().join("elsewhere.c").display().to_string();
    let result = env.call(args("hover", &absolute, 1, 5)).await;
    assert_eq!(result["error"]["info"]["code"], json!("FS_SANDBOX_DENIED"));
    assert_eq!(env.host.started(), 0, "a server was started for a refused file");
    let children = child_names();
    assert!(!children.iter().any(|n| n.starts_with("clangd")), "clangd was spawned: {children:?}");
    // The same workspace does start clangd for its own files (the check above is not vacuous).
    let inside = env.call(args("goToDefinition", "main.c", 4, 17)).await;
    assert_eq!(text(&inside), "util.h:5:5");
    assert_eq!(env.host.started(), 1);
    assert!(child_names().iter().any(|n| n.starts_with("clangd")), "{:?}", child_names());
    env.host.shutdown_all().await;
    assert!(!child_names().iter().any(|n| n.starts_with("clangd")), "{:?}", child_names());
}
