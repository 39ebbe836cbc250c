//! Shared fixtures of the `lsp` tool tests: small C and Python projects, a registry with the tool,
//! the workspace and a real `LspHost`, and lookups of the real servers (a missing server is a
//! test failure, never a skip: `cargo xtask test` installs them).
#![allow(dead_code)]

use serde_json::{Value, json};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_contract::lsp::LspHandle;
use toolhost_contract::{CancellationToken, Capabilities};
use toolhost_lsp_host::servers::find_candidate;
use toolhost_lsp_host::{LspHost, LspHostConfig};
use toolhost_registry::{CallInput, Registry, RegistryConfig};
use toolhost_tools_nav::NavLimits;
use toolhost_workspace::{Workspace, WorkspaceConfig};

/// `PATH` plus the repository's `.client-tools` bin folders (where `cargo xtask test` installs).
pub fn test_path() -> OsString {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut dirs: Vec<PathBuf> =
        vec![repo.join(".client-tools/bin"), repo.join(".client-tools/npm/node_modules/.bin")];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap()
}

/// The program, or a failing test naming how to install it.
pub fn require(pattern: &str) -> PathBuf {
    let path = test_path();
    let fallback = format!("{pattern}-*");
    find_candidate(pattern, Some(&path))
        .or_else(|| find_candidate(&fallback, Some(&path)))
        .unwrap_or_else(|| {
            panic!("required program `{pattern}` is not installed; run `cargo xtask install-deps`")
        })
}

pub fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub const UTIL_H: &str =
    "#ifndef UTIL_H\n#define UTIL_H\n\n/* Adds two numbers. */\nint add(int a, int b);\n\n#endif\n";
pub const UTIL_C: &str = "#include \"util.h\"\n\nint add(int a, int b) {\n    return a + b;\n}\n";
pub const MAIN_C: &str = "#include \"util.h\"\n\nint main(void) {\n    int total = add(1, 2);\n    return add(total, 3);\n}\n";
pub const SHAPES_CPP: &str = "struct Shape {\n    virtual ~Shape() = default;\n    virtual int area() const = 0;\n};\n\nstruct Square : Shape {\n    int side = 2;\n    int area() const override { return side * side; }\n};\n\nint measure(const Shape &s) { return s.area(); }\n";

/// A C project: two files, a header, a C++ file with a virtual method, `compile_flags.txt`.
pub fn c_project(root: &Path) {
    write(root, "compile_flags.txt", "-Wall\n");
    write(root, "util.h", UTIL_H);
    write(root, "util.c", UTIL_C);
    write(root, "main.c", MAIN_C);
    write(root, "shapes.cpp", SHAPES_CPP);
}

pub const GEOMETRY_PY: &str = "class Point:\n    \"\"\"A point in the plane.\"\"\"\n\n    def __init__(self, x: int, y: int) -> None:\n        self.x = x\n        self.y = y\n\n\ndef distance(a: Point, b: Point) -> float:\n    \"\"\"Euclidean distance between two points.\"\"\"\n    return ((a.x - b.x) ** 2 + (a.y - b.y) ** 2) ** 0.5\n";
pub const APP_PY: &str = "from geometry import Point, distance\n\norigin = Point(0, 0)\nprint(distance(origin, Point(3, 4)))\n";

/// A Python project: two modules.
pub fn py_project(root: &Path) {
    write(root, "geometry.py", GEOMETRY_PY);
    write(root, "app.py", APP_PY);
}

/// A registry with the `lsp` tool and its capabilities over one workspace.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub registry: Registry,
    pub capabilities: Arc<Capabilities>,
    pub host: Arc<LspHost>,
}

impl Env {
    pub fn new(setup: impl FnOnce(&Path), config: LspHostConfig, limits: NavLimits) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let root = root.canonicalize().unwrap();
        setup(&root);
        let registry = Registry::new(RegistryConfig::default());
        let _ = toolhost_tools_nav::register(&registry, limits).unwrap();
        let workspace = Workspace::new(WorkspaceConfig::new(&root)).unwrap();
        let host = Arc::new(LspHost::new(LspHostConfig { path: Some(test_path()), ..config }));
        let handle: LspHandle = host.clone();
        let capabilities =
            Arc::new(Capabilities::new().with::<Workspace>(workspace).with::<LspHandle>(handle));
        Env { dir, root, registry, capabilities, host }
    }

    pub fn default_with(setup: impl FnOnce(&Path)) -> Env {
        Env::new(setup, LspHostConfig::default(), NavLimits::default())
    }

    /// One direct call; the serialized `ToolExecutionResult`.
    pub async fn call(&self, args: Value) -> Value {
        self.call_with(args, CancellationToken::new()).await
    }

    pub async fn call_with(&self, args: Value, signal: CancellationToken) -> Value {
        let input = CallInput {
            call_id: "call_1".into(),
            name: "lsp".into(),
            arguments: args,
            parent: None,
            session_id: None,
            signal,
            capabilities: Arc::clone(&self.capabilities),
        };
        let finalized = self.registry.dispatch(input).await;
        serde_json::to_value(&finalized.result).unwrap()
    }

    pub fn uri(&self, rel: &str) -> String {
        toolhost_contract::lsp::file_uri(&self.root.join(rel))
    }
}

/// The Native text of a result.
pub fn text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

pub fn args(op: &str, file: &str, line: u32, character: u32) -> Value {
    json!({"operation": op, "file_path": file, "line": line, "character": character})
}

/// Asserts success and returns the value.
pub fn ok(result: &Value) -> &Value {
    assert_eq!(result["isError"], json!(false), "expected success, got {result:#}");
    &result["value"]
}
