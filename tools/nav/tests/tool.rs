//! The `lsp` tool against a scripted provider: argument checks and their documented messages, the
//! workspace rule, the request the provider sees, Native text (grouping, omission, bounding,
//! display paths), snippets, card metadata, `symbol`, error pass-through and the timeout.
#![allow(clippy::unwrap_used)]

#[path = "support/common.rs"]
mod common;

use common::{args, text, write};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_contract::lsp::{
    LspAnswer, LspHandle, LspHover, LspLocation, LspPosition, LspProvider, LspRange, LspRequest,
    codes, file_uri, lsp_error,
};
use toolhost_contract::{BoxFuture, CancellationToken, Capabilities, ToolError};
use toolhost_registry::{CallInput, Registry};
use toolhost_tools_nav::NavLimits;
use toolhost_workspace::{Workspace, WorkspaceConfig};

type Script = Arc<dyn Fn(&LspRequest) -> Result<LspAnswer, ToolError> + Send + Sync>;

/// A provider answering from a closure and recording every request.
struct Scripted {
    script: Script,
    seen: Mutex<Vec<LspRequest>>,
    wait_for_cancel: bool,
}

impl LspProvider for Scripted {
    fn query<'a>(
        &'a self,
        request: &'a LspRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<LspAnswer, ToolError>> {
        Box::pin(async move {
            self.seen.lock().unwrap().push(request.clone());
            if self.wait_for_cancel {
                cancel.cancelled().await;
                return Err(toolhost_contract::lsp::aborted());
            }
            (self.script)(request)
        })
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    registry: Registry,
    capabilities: Arc<Capabilities>,
    workspace: Workspace,
    provider: Arc<Scripted>,
}

fn setup_with(
    limits: NavLimits,
    wait_for_cancel: bool,
    script: impl Fn(&LspRequest) -> Result<LspAnswer, ToolError> + Send + Sync + 'static,
) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let root = root.canonicalize().unwrap();
    write(
        &root,
        "src/a.c",
        "int add(int a, int b);\n\nint main(void) {\n    return add(1, 2);\n}\n",
    );
    write(&root, "src/b.c", "  int add(int a, int b) { return a + b; }  \n");
    std::fs::write(dir.path().join("outside.c"), "int secret;\n").unwrap();
    let registry = Registry::default();
    let _ = toolhost_tools_nav::register(&registry, limits).unwrap();
    let workspace = Workspace::new(WorkspaceConfig::new(&root)).unwrap();
    let provider = Arc::new(Scripted {
        script: Arc::new(script),
        seen: Mutex::new(Vec::new()),
        wait_for_cancel,
    });
    let handle: LspHandle = provider.clone();
    let capabilities = Arc::new(
        Capabilities::new().with::<Workspace>(workspace.clone()).with::<LspHandle>(handle),
    );
    Setup { _dir: dir, root, registry, capabilities, workspace, provider }
}

fn setup(
    script: impl Fn(&LspRequest) -> Result<LspAnswer, ToolError> + Send + Sync + 'static,
) -> Setup {
    setup_with(NavLimits::default(), false, script)
}

impl Setup {
    async fn call(&self, args: Value) -> Value {
        self.call_caps(args, Arc::clone(&self.capabilities)).await
    }

    async fn call_caps(&self, args: Value, capabilities: Arc<Capabilities>) -> Value {
        let input = CallInput {
            call_id: "c1".into(),
            name: "lsp".into(),
            arguments: args,
            parent: None,
            session_id: None,
            signal: CancellationToken::new(),
            capabilities,
        };
        serde_json::to_value(self.registry.dispatch(input).await.result).unwrap()
    }

    fn uri(&self, rel: &str) -> String {
        file_uri(&self.root.join(rel))
    }

    fn seen(&self) -> Vec<LspRequest> {
        self.provider.seen.lock().unwrap().clone()
    }
}

fn loc(uri: &str, line: u32, character: u32) -> LspLocation {
    let start = LspPosition { line, character };
    LspLocation { uri: uri.to_owned(), range: LspRange { start, end: start } }
}

fn locations(list: Vec<LspLocation>) -> Result<LspAnswer, ToolError> {
    Ok(LspAnswer::Locations(list))
}

#[tokio::test]
async fn argument_checks_use_the_documented_messages() {
    let s = setup(|_| locations(vec![]));
    let cases = [
        (
            json!({"operation": "hover", "file_path": "src/a.c", "line": 0, "character": 1}),
            "line must be a positive integer (one-based)",
        ),
        (
            json!({"operation": "hover", "file_path": "src/a.c", "line": 1.5, "character": 1}),
            "line must be a positive integer (one-based)",
        ),
        (
            json!({"operation": "hover", "file_path": "src/a.c", "line": 1, "character": -2}),
            "character must be a positive integer (one-based)",
        ),
        (
            json!({"operation": "hover", "file_path": "  ", "line": 1, "character": 1}),
            "file_path must be a non-empty string",
        ),
        (
            json!({"operation": "hover", "file_path": "src/a.c", "line": 1, "character": 1, "symbol": " "}),
            "symbol must be a non-empty string",
        ),
    ];
    for (args, message) in cases {
        let result = s.call(args).await;
        assert_eq!(result["isError"], json!(true));
        assert_eq!(result["error"], json!({"message": message}), "{result}");
        assert_eq!(text(&result), format!("Error: {message}"));
    }
    let bad_op = s.call(args("rename", "src/a.c", 1, 1)).await;
    assert_eq!(bad_op["error"]["info"]["code"], json!("INVALID_ARGS"));
    let missing = s.call(json!({"operation": "hover", "file_path": "src/a.c", "line": 1})).await;
    assert_eq!(missing["error"]["info"]["code"], json!("INVALID_ARGS"));
    assert!(s.seen().is_empty());
}

#[tokio::test]
async fn the_workspace_is_required_and_confines_the_file() {
    let s = setup(|_| locations(vec![]));
    let no_workspace =
        s.call_caps(args("hover", "src/a.c", 1, 1), Arc::new(Capabilities::new())).await;
    assert_eq!(
        no_workspace["error"],
        json!({"message": "the lsp tool requires a session workspace cwd",
               "info": {"name": "LspError", "code": "LSP_WORKSPACE_REQUIRED"}})
    );
    let outside = s.call(args("hover", "../outside.c", 1, 1)).await;
    assert_eq!(outside["error"]["info"]["code"], json!("FS_SANDBOX_DENIED"), "{outside}");
    let missing = s.call(args("hover", "src/none.c", 1, 1)).await;
    assert_eq!(missing["error"]["info"]["code"], json!("FS_NOT_FOUND"), "{missing}");
    assert!(s.seen().is_empty(), "the provider must not be asked");

    let workspace_only = Arc::new(Capabilities::new().with::<Workspace>(s.workspace.clone()));
    let unavailable = s.call_caps(args("hover", "src/a.c", 1, 1), workspace_only).await;
    let display = s.root.join("src/a.c").display().to_string();
    assert_eq!(
        unavailable["error"],
        json!({"message": format!("no LSP provider handles \"{display}\""),
               "info": {"name": "LspError", "code": "LSP_UNAVAILABLE"}})
    );
}

#[tokio::test]
async fn the_provider_gets_zero_based_positions_and_the_disk_text() {
    let s = setup(|_| Ok(LspAnswer::Hover(None)));
    let result = s.call(args("hover", "src/a.c", 4, 12)).await;
    assert_eq!(result["value"], json!({"kind": "hover", "hover": null}));
    assert_eq!(text(&result), "No hover information.");
    assert!(result.get("meta").is_none());
    let seen = s.seen();
    assert_eq!(seen[0].position, LspPosition { line: 3, character: 11 });
    assert_eq!(seen[0].uri, s.uri("src/a.c"));
    assert_eq!(seen[0].workspace_root, s.root);
    assert!(seen[0].text.starts_with("int add"));
    // Looking is not reading: no observation that would authorize an edit.
    assert!(s.workspace.ledger().snapshot().is_empty());
}

#[tokio::test]
async fn hover_text_is_verbatim_and_bounded() {
    let s = setup(|_| {
        Ok(LspAnswer::Hover(Some(LspHover {
            contents: "```c\nint add(int a, int b)\n```".into(),
            range: None,
        })))
    });
    let result = s.call(args("hover", "src/a.c", 1, 5)).await;
    assert_eq!(text(&result), "```c\nint add(int a, int b)\n```");
    assert_eq!(result["value"]["hover"], json!({"contents": "```c\nint add(int a, int b)\n```"}));

    let limits = NavLimits { max_result_chars: 100, ..NavLimits::default() };
    let s = setup_with(limits, false, |_| {
        Ok(LspAnswer::Hover(Some(LspHover { contents: "é".repeat(300), range: None })))
    });
    let result = s.call(args("hover", "src/a.c", 1, 5)).await;
    let shown = text(&result);
    assert_eq!(shown.encode_utf16().count(), 100);
    assert!(shown.ends_with("\n… hover truncated (limit 100 characters)."), "{shown}");
    // The value keeps everything.
    assert_eq!(result["value"]["hover"]["contents"].as_str().unwrap().chars().count(), 300);
}

#[tokio::test]
async fn locations_render_grouped_with_snippets_and_meta() {
    let s = setup(|r| {
        let a = r.uri.clone();
        let b = a.replace("/a.c", "/b.c");
        let outside = a.replace("/ws/src/a.c", "/outside.c");
        locations(vec![loc(&a, 0, 4), loc(&b, 0, 6), loc(&a, 3, 11), loc(&outside, 0, 4)])
    });
    let result = s.call(args("findReferences", "src/a.c", 4, 12)).await;
    let outside = s.root.parent().unwrap().join("outside.c").display().to_string();
    assert_eq!(text(&result), format!("src/a.c:1:5\nsrc/a.c:4:12\nsrc/b.c:1:7\n{outside}:1:5"));
    let value = &result["value"];
    assert_eq!(value["kind"], json!("locations"));
    assert_eq!(value["resolvedWorkspaceUri"], json!(file_uri(&s.root)));
    let snippets: Vec<&str> = value["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["snippet"].as_str().unwrap())
        .collect();
    // Trimmed lines; a file outside the workspace is never read.
    assert_eq!(
        snippets,
        [
            "int add(int a, int b);",
            "int add(int a, int b) { return a + b; }",
            "return add(1, 2);",
            ""
        ]
    );
    assert_eq!(
        result["meta"]["locations"][1],
        json!({"path": "src/b.c", "line": 1, "character": 7, "snippet": "int add(int a, int b) { return a + b; }"})
    );
    assert!(result["meta"].get("truncated").is_none());
}

#[tokio::test]
async fn many_locations_are_omitted_past_the_limit() {
    let s = setup(|r| locations((0..130).map(|i| loc(&r.uri, i, 0)).collect()));
    let result = s.call(args("findReferences", "src/a.c", 1, 5)).await;
    let shown = text(&result);
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines.len(), 101);
    assert_eq!(lines[99], "src/a.c:100:1");
    assert_eq!(lines[100], "… 30 more location(s) omitted (limit 100).");
    assert_eq!(result["value"]["locations"].as_array().unwrap().len(), 130);
    assert_eq!(result["meta"]["locations"].as_array().unwrap().len(), 100);
    assert_eq!(result["meta"]["truncated"], json!(true));
    assert_eq!(result["meta"]["total"], json!(130));
    assert_eq!(s.call(args("goToDefinition", "src/a.c", 1, 5)).await["isError"], json!(false));

    let empty = setup(|_| locations(vec![]));
    let result = empty.call(args("goToDefinition", "src/a.c", 1, 5)).await;
    assert_eq!(text(&result), "No results.");
    assert_eq!(result["meta"], json!({"locations": []}));
}

#[tokio::test]
async fn the_text_bound_applies_to_locations() {
    let limits = NavLimits { max_result_chars: 120, ..NavLimits::default() };
    let s = setup_with(limits, false, |r| locations((0..50).map(|i| loc(&r.uri, i, 0)).collect()));
    let shown = text(&s.call(args("findReferences", "src/a.c", 1, 5)).await);
    assert_eq!(shown.encode_utf16().count(), 120);
    assert!(shown.ends_with("\n… locations truncated (limit 120 characters)."), "{shown}");
}

#[tokio::test]
async fn symbol_moves_a_wrong_column() {
    let s = setup(|_| locations(vec![]));
    let with_symbol = json!({"operation": "goToDefinition", "file_path": "src/a.c", "line": 4,
                             "character": 1, "symbol": "add"});
    assert_eq!(s.call(with_symbol).await["isError"], json!(false));
    // Line 4 is `    return add(1, 2);`: `add` starts at zero-based column 11.
    assert_eq!(s.seen()[0].position, LspPosition { line: 3, character: 11 });
    // Two lines off: the nearest line holding it.
    let near = json!({"operation": "goToDefinition", "file_path": "src/a.c", "line": 2,
                      "character": 1, "symbol": "add"});
    assert_eq!(s.call(near).await["isError"], json!(false));
    assert_eq!(s.seen()[1].position, LspPosition { line: 0, character: 4 });
    let absent = json!({"operation": "goToDefinition", "file_path": "src/a.c", "line": 1,
                        "character": 1, "symbol": "subtract"});
    let result = s.call(absent).await;
    let display = s.root.join("src/a.c").display().to_string();
    assert_eq!(
        result["error"],
        json!({"message": format!("symbol \"subtract\" does not occur within 3 lines of line 1 of \"{display}\"")})
    );
}

#[tokio::test]
async fn provider_errors_pass_through() {
    let s = setup(|_| {
        Err(lsp_error(codes::UNSUPPORTED_OPERATION, "server does not support goToImplementation"))
    });
    let result = s.call(args("goToImplementation", "src/a.c", 1, 5)).await;
    assert_eq!(
        result["error"],
        json!({"message": "server does not support goToImplementation",
               "info": {"name": "LspError", "code": "LSP_UNSUPPORTED_OPERATION"}})
    );
    let s = setup(|_| Err(lsp_error(codes::MALFORMED_RESPONSE, "malformed")));
    let result = s.call(args("goToDefinition", "src/a.c", 1, 5)).await;
    assert_eq!(result["error"]["info"]["code"], json!("LSP_MALFORMED_RESPONSE"));
}

#[tokio::test]
async fn the_timeout_cancels_the_provider() {
    let limits = NavLimits { timeout: Duration::from_millis(300), ..NavLimits::default() };
    let s = setup_with(limits, true, |_| locations(vec![]));
    let started = Instant::now();
    let result = s.call(args("hover", "src/a.c", 1, 5)).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(result["error"]["info"]["code"], json!("TOOL_TIMEOUT"), "{result}");
    assert_eq!(text(&result), "Error: tool call timed out after 300ms");
}

#[test]
fn schemas_declare_the_arguments() {
    let registry = Registry::default();
    let _ = toolhost_tools_nav::register(&registry, NavLimits::default()).unwrap();
    let tools = registry.descriptors();
    let lsp = tools.iter().find(|t| t.name == "lsp").unwrap();
    let props = &lsp.input_schema["properties"];
    assert_eq!(props["line"]["type"], json!("number"));
    assert_eq!(props["character"]["type"], json!("number"));
    assert_eq!(props["symbol"]["type"], json!("string"));
    let required: Vec<&str> = lsp.input_schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(required, ["operation", "file_path", "line", "character"]);
}
