//! `toolhost-harness`: drives `toolhost serve` headlessly.
//!
//! - `run <scenario dir> [--bin PATH] [--filter TEXT]` replays the conformance scenarios over
//!   stdio and prints `N passed, N failed`.
//! - `demo [--bin PATH]` copies the embedded sample workspace into a temp folder, runs a short
//!   real session through the server and prints each call's card.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolhost_harness::client::Client;
use toolhost_harness::runner::run_all;

const SAMPLE: [(&str, &str); 4] = [
    ("src/greet.c", include_str!("../../../../examples/sample-workspace/src/greet.c")),
    ("src/greet.h", include_str!("../../../../examples/sample-workspace/src/greet.h")),
    ("src/main.c", include_str!("../../../../examples/sample-workspace/src/main.c")),
    ("README.md", include_str!("../../../../examples/sample-workspace/README.md")),
];

fn find_server(flag: Option<PathBuf>) -> PathBuf {
    if let Some(path) = flag.or_else(|| std::env::var_os("TOOLHOST_BIN").map(PathBuf::from)) {
        return path;
    }
    if let Some(sibling) =
        std::env::current_exe().ok().and_then(|exe| exe.parent().map(|d| d.join("toolhost")))
        && sibling.is_file()
    {
        return sibling;
    }
    PathBuf::from("toolhost")
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let mut positional = Vec::new();
    let (mut bin, mut filter) = (None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bin" => bin = args.next().map(PathBuf::from),
            "--filter" => filter = args.next(),
            _ => positional.push(arg),
        }
    }
    let bin = find_server(bin);
    // The server runs in the scenario's workspace, so a relative path must be made absolute.
    let bin =
        if bin.components().count() > 1 { std::fs::canonicalize(&bin).unwrap_or(bin) } else { bin };
    let res = match command.as_str() {
        "run" => run(
            &bin,
            positional.first().map_or(Path::new("editor-clients/conformance"), Path::new),
            filter.as_deref(),
        ),
        "demo" => demo(&bin),
        _ => {
            eprintln!(
                "usage: toolhost-harness run <scenario dir> [--bin PATH] [--filter TEXT] | demo [--bin PATH]"
            );
            return ExitCode::from(2);
        }
    };
    match res {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("toolhost-harness: {err}");
            ExitCode::from(3)
        }
    }
}

fn run(bin: &Path, dir: &Path, filter: Option<&str>) -> Result<u8, Box<dyn std::error::Error>> {
    let summary = run_all(bin, dir, filter)?;
    for failure in &summary.failed {
        println!("FAILED {failure}");
    }
    println!(
        "conformance (harness over stdio): {} passed, {} failed",
        summary.passed,
        summary.failed.len()
    );
    Ok(u8::from(!summary.failed.is_empty()))
}

fn demo(bin: &Path) -> Result<u8, Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("toolhost-demo-{}", std::process::id()));
    for (path, text) in SAMPLE {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(target, text)?;
    }
    let root = dir.canonicalize()?;
    let sessions = root.join(".toolhost-demo-sessions");
    let sessions_arg = sessions.display().to_string();
    println!("sample workspace: {}\n", root.display());
    let mut client =
        // The server's own log would interleave with the cards; keep it to warnings.
        Client::spawn(bin, &root, &["--session-dir", &sessions_arg], &[("TOOLHOST_LOG", "warn")], Client::no_handler())?;
    let init = client.initialize(&root, json!({}), json!({}))?;
    let session = init
        .pointer("/capabilities/experimental/toolhost/sessionId")
        .and_then(Value::as_str)
        .unwrap_or("");
    println!("session {session}\n");
    let steps = [
        ("glob", json!({"pattern": "**/*.c"})),
        ("read", json!({"file_path": "src/greet.c"})),
        (
            "edit",
            json!({"file_path": "src/greet.c", "old_string": "Hello %s!", "new_string": "Hello, %s, from toolhost!"}),
        ),
        ("grep", json!({"pattern": "greet\\(", "include": "*.c"})),
        // Refused: main.c was never read in this session.
        (
            "edit",
            json!({"file_path": "src/main.c", "old_string": "return 0;", "new_string": "return 1;"}),
        ),
        ("read", json!({"file_path": "src/main.c"})),
        (
            "edit",
            json!({"file_path": "src/main.c", "old_string": "return 0;", "new_string": "return 1;"}),
        ),
        // A shell command: a terminal card with its exit pill (grep finds one line, so 0).
        (
            "bash",
            json!({"command": "grep -rn 'from toolhost' src", "description": "Find the new greeting"}),
        ),
    ];
    let mut main_edit = None;
    for (tool, args) in steps {
        let response = client.call_tool(tool, args)?;
        println!("{}\n", response["card"]["rendered"].as_str().unwrap_or_default());
        if tool == "edit" && response["result"]["isError"] == false {
            main_edit = response["callId"].as_str().map(str::to_owned);
        }
    }
    // Undo the last edit from the log: the exact bytes main.c had come back.
    if let Some(call_id) = main_edit {
        let response = client.call_tool("revert", json!({"call_id": call_id}))?;
        println!("{}\n", response["card"]["rendered"].as_str().unwrap_or_default());
    }
    // Navigation through a real language server, where one is installed.
    if toolhost_harness::runner::program_exists("clangd") || has_versioned_clangd() {
        let args = json!({"operation": "goToDefinition", "file_path": "src/main.c", "line": 4, "character": 1, "symbol": "greet"});
        let response = client.call_tool("lsp", args)?;
        println!("{}\n", response["card"]["rendered"].as_str().unwrap_or_default());
    } else {
        println!("(no clangd on PATH: skipping the lsp call)\n");
    }
    let replay = client.request("toolhost/replaySession", json!({"sessionId": session}))?;
    let n = replay["cards"].as_array().map_or(0, Vec::len);
    println!("replayed {n} cards of session {session} from its log");
    let _ = client.shutdown();
    println!("(the workspace is left in {} for inspection)", root.display());
    Ok(0)
}

/// Whether a `clangd-NN` is on PATH (Debian's naming); the server finds those too.
fn has_versioned_clangd() -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| {
            std::fs::read_dir(dir).is_ok_and(|entries| {
                entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with("clangd-"))
            })
        })
    })
}
