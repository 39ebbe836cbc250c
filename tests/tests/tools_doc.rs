//! `docs/tools.md` stays true: each tool's generated block — its description, annotations,
//! arguments, canonical value schema and a real example (arguments, Native text, meta, card) —
//! comes from the registry and from real calls on a small workspace, and every error code the
//! tools produce (as the conformance scenarios pin them) is documented. The test fails on drift;
//! `UPDATE_DOCS=1 cargo test -p toolhost-tests --test tools_doc` rewrites the blocks.
//!
//! The lsp example needs clangd on `PATH` (`cargo xtask test` installs it); without it the test
//! fails rather than silently documenting less. The web examples never leave the machine: they
//! fetch from and search through a small server on 127.0.0.1 the test starts, opened by the
//! example host's `[web] allow` (its port is written as 8080 in the reference).
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_host::config::Config;
use toolhost_host::{CallRequest, Host};
use toolhost_protocol::lsp_ext::ToolDescriptor;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The example workspace: small, with fixed content and modification times.
fn example_workspace(root: &Path) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    let files = [
        (
            "src/greet.c",
            "#include <stdio.h>\n\nvoid greet(const char *name) {\n    printf(\"Hello, %s!\\n\", name);\n}\n",
        ),
        (
            "src/main.c",
            "static int add(int a, int b) {\n    return a + b;\n}\n\nint main(void) {\n    return add(1, 2) - 3;\n}\n",
        ),
        ("README.md", "# Example\n\nA workspace for the tool examples.\n"),
        (
            ".claude/skills/changelog/SKILL.md",
            "---\nname: changelog\ndescription: Add an entry to CHANGELOG.md for a change\n---\n\n1. Read CHANGELOG.md.\n2. Add one line under `Unreleased`.\n",
        ),
    ];
    for (i, (path, text)) in files.iter().enumerate() {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(&full, text).unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&full).unwrap();
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000 + i as u64);
        file.set_modified(time).unwrap();
    }
}

/// One documented example call.
struct Example {
    tool: &'static str,
    args: Value,
}

fn examples() -> Vec<Example> {
    vec![
        Example {
            tool: "read",
            args: json!({"file_path": "src/greet.c", "offset": 3, "limit": 2}),
        },
        Example {
            tool: "edit",
            args: json!({"file_path": "src/greet.c", "old_string": "Hello", "new_string": "Hi"}),
        },
        Example {
            tool: "write",
            args: json!({"file_path": "notes.txt", "content": "first line\nsecond line\n"}),
        },
        Example { tool: "glob", args: json!({"pattern": "*.c"}) },
        Example { tool: "grep", args: json!({"pattern": "greet|add", "include": "*.c"}) },
        Example {
            tool: "lsp",
            args: json!({"operation": "goToDefinition", "file_path": "src/main.c", "line": 6, "character": 12}),
        },
        Example {
            tool: "bash",
            args: json!({"command": "echo build ok; echo 'warn: x' >&2; exit 2", "description": "Build"}),
        },
        Example {
            tool: "bash",
            args: json!({"command": "echo done", "description": "In the background", "run_in_background": true}),
        },
        Example { tool: "job_output", args: json!({"job_id": "bash-1", "wait": true}) },
        Example { tool: "job_list", args: json!({}) },
        Example { tool: "job_kill", args: json!({"job_id": "bash-1"}) },
        Example { tool: "web_fetch", args: json!({"url": "http://127.0.0.1:8080/guide"}) },
        Example { tool: "web_search", args: json!({"queries": ["greet function in C"]}) },
        Example {
            tool: "todo_write",
            args: json!({"todos": [
                {"content": "Find the bug", "status": "completed"},
                {"content": "Fix greet", "status": "in_progress"},
                {"content": "Add a test", "status": "pending"}
            ]}),
        },
        Example {
            tool: "ask_user_question",
            args: json!({"questions": [{"id": "greeting", "question": "Which greeting should greet print?", "header": "Greeting", "options": [{"label": "Hello", "description": "as today"}, {"label": "Hi"}]}]}),
        },
        Example {
            tool: "exit_plan_mode",
            args: json!({"plan": "# Shorter greeting\n\n1. Change `Hello` to `Hi` in src/greet.c\n2. Build"}),
        },
        Example { tool: "skill", args: json!({"name": "changelog"}) },
        Example {
            tool: "run_code",
            args: json!({"code": "const found = await tools.grep({ pattern: \"greet\", include: \"*.c\" });\nconsole.log(`${found.matches.length} matches`);\nreturn [...new Set(found.matches.map((m) => m.path))];", "description": "Files that mention greet"}),
        },
        Example {
            tool: "structured_output",
            args: json!({"summary": "greet says Hi", "files": ["src/greet.c"]}),
        },
    ]
}

/// The page `web_fetch` reads in its example.
const GUIDE: &str = "<!DOCTYPE html><html><head><title>Greeting guide</title></head><body>\
    <nav><a href=\"/\">Home</a></nav><article><h1>Greeting guide</h1>\
    <p>A greeting function takes a name and prints a short message. Keep the message short and \
    friendly, and always end it with a newline so the terminal prompt starts on its own line.</p>\
    <p>In C that is one call: <code>printf</code> with a <code>%s</code> conversion for the name.</p>\
    <p>Prefer one greeting per program: several greetings in a row read as noise to the person \
    running it, and a test that checks the output has to know all of them.</p>\
    </article><footer>Example footer</footer></body></html>";

/// SearXNG's JSON for the `web_search` example.
const SEARCH: &str = r#"{"query": "greet function in C", "results": [
    {"url": "https://example.com/c/greet", "title": "Writing a greet function in C", "content": "printf with a %s conversion prints the name.", "publishedDate": "2026-10-01"},
    {"url": "https://example.org/stdio", "title": "stdio.h reference", "content": "printf writes formatted output to stdout."}
], "answers": []}"#;

/// A one-page web on 127.0.0.1 for the web examples; returns its port.
async fn example_web() -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let (kind, body) = if head.starts_with(b"GET /search") {
                    ("application/json", SEARCH)
                } else {
                    ("text/html; charset=utf-8", GUIDE)
                };
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

/// The examples' configuration: the defaults, with the example web opened and searchable.
fn example_config(port: u16) -> Config {
    let mut config = Config::default();
    // `subagent` needs a model; the documented set must not depend on a key in the environment.
    config.agent.api_key_env = Some("TOOLHOST_TOOLS_DOC_NO_MODEL_KEY".to_owned());
    config.web.allow =
        vec![toolhost_tools_web::AllowEntry::parse(&format!("127.0.0.1:{port}")).unwrap()];
    config.web.providers = vec![toolhost_tools_web::ProviderConfig {
        kind: toolhost_tools_web::ProviderKind::Searxng,
        url: Some(format!("http://127.0.0.1:{port}")),
        api_key_env: None,
        api_key: None,
    }];
    config
}

/// The person in the examples: picks each question's first option (`Approve` for a plan).
struct FirstOption;

impl toolhost_contract::UserQuestions for FirstOption {
    fn ask(
        &self,
        request: toolhost_contract::QuestionRequest,
        _stop: toolhost_contract::CancellationToken,
    ) -> toolhost_contract::BoxFuture<
        '_,
        Result<Vec<toolhost_protocol::lsp_ext::Answer>, toolhost_contract::QuestionError>,
    > {
        let answers = request
            .questions
            .iter()
            .map(|q| toolhost_protocol::lsp_ext::Answer {
                id: q.id.clone(),
                selected: q.options.iter().take(1).map(|o| o.label.clone()).collect(),
                custom: None,
            })
            .collect();
        Box::pin(async move { Ok(answers) })
    }
}

/// The host the examples run in: the binary's tools and defaults, no session.
fn example_host(root: &Path, config: &Config) -> Arc<Host> {
    let host = toolhost_host::open_host(config, root, None).unwrap();
    host.questions().set_asker(Some(Arc::new(FirstOption)));
    host
}

/// Runs the examples in one host (in order: edit needs the read before it) and returns, per
/// tool, its example section.
async fn run_examples(root: &Path, port: u16) -> Vec<(String, String)> {
    let host = example_host(root, &example_config(port));
    let root_text = root.display().to_string();
    let web = format!("127.0.0.1:{port}");
    let scrub = |text: &str| text.replace(&root_text, "/w").replace(&web, "127.0.0.1:8080");
    let mut out = Vec::new();
    for (i, example) in examples().into_iter().enumerate() {
        if example.tool == "exit_plan_mode" {
            host.interaction().set_plan_mode(Some(true)).await;
        }
        let args: Value = serde_json::from_str(
            &example.args.to_string().replace("127.0.0.1:8080", &format!("127.0.0.1:{port}")),
        )
        .unwrap();
        let outcome =
            host.run(CallRequest::new(example.tool, args).id(format!("call_{i}"))).await.unwrap();
        let result = &outcome.finalized.result;
        assert!(!result.is_error(), "example {} failed: {:?}", example.tool, result.content());
        let text = toolhost_protocol::content::joined_text(result.content());
        let mut section = format!(
            "**Example** — arguments `{}`\n\nNative text:\n\n```text\n{}\n```\n",
            example.args,
            scrub(&text)
        );
        if let Some(meta) = result.meta() {
            section.push_str(&format!(
                "\nMeta:\n\n```json\n{}\n```\n",
                scrub(&serde_json::to_string_pretty(meta).unwrap())
            ));
        }
        section.push_str(&format!(
            "\nCard (`kind: {}`), as every client renders it:\n\n```text\n{}\n```\n",
            outcome.card().kind.as_str(),
            scrub(&outcome.card().rendered)
        ));
        out.push((example.tool.to_owned(), section));
    }
    host.shutdown().await;
    out
}

fn type_of(schema: &Value, defs: &Value) -> String {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or("");
        let target = &defs[name];
        if let Some(values) = target.get("enum").and_then(Value::as_array) {
            let names: Vec<String> =
                values.iter().filter_map(Value::as_str).map(|v| format!("`{v}`")).collect();
            return format!("one of {}", names.join(", "));
        }
        return type_of(target, defs);
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names: Vec<String> =
            values.iter().filter_map(Value::as_str).map(|v| format!("`{v}`")).collect();
        return format!("one of {}", names.join(", "));
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "array" => {
            format!("array of {}", type_of(schema.get("items").unwrap_or(&Value::Null), defs))
        }
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => {
            types.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" or ")
        }
        _ => "any".to_owned(),
    }
}

fn annotations_line(tool: &ToolDescriptor) -> String {
    let a = tool.annotations;
    let mut parts = Vec::new();
    if a.read_only {
        parts.push("read-only");
    } else if a.destructive {
        parts.push("changes files (destructive)");
    } else {
        parts.push("changes files");
    }
    if a.idempotent {
        parts.push("idempotent");
    }
    parts.push(if a.open_world {
        "reaches beyond the workspace"
    } else {
        "stays in the workspace"
    });
    format!("Annotations: {}.", parts.join(", "))
}

fn arguments_table(tool: &ToolDescriptor) -> String {
    let schema = &tool.input_schema;
    let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = String::from("| argument | type | required | meaning |\n|---|---|---|---|\n");
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            let description = prop
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .replace('\n', " ")
                .replace('|', "\\|");
            out.push_str(&format!(
                "| `{name}` | {} | {} | {description} |\n",
                type_of(prop, &defs),
                if required.contains(name.as_str()) { "yes" } else { "no" }
            ));
        }
    }
    out
}

fn block(tool: &ToolDescriptor, example: Option<&str>) -> String {
    let mut out = format!(
        "{}\n\n{}\n\n{}\n**Canonical value** — the JSON the call returns to programs, validated \
         against this schema:\n\n<details><summary>output schema</summary>\n\n```json\n{}\n```\n\n</details>\n",
        tool.description,
        annotations_line(tool),
        arguments_table(tool),
        serde_json::to_string_pretty(&tool.output_schema).unwrap()
    );
    if let Some(example) = example {
        out.push('\n');
        out.push_str(example);
    }
    out
}

fn begin_marker(name: &str) -> String {
    format!(
        "<!-- generated: {name} (UPDATE_DOCS=1 cargo test -p toolhost-tests --test tools_doc) -->"
    )
}

fn end_marker(name: &str) -> String {
    format!("<!-- end generated: {name} -->")
}

/// Replaces (or checks) the generated block of every tool; returns the tools whose block is
/// missing or stale.
fn apply(doc: &mut String, blocks: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, body) in blocks {
        let (begin, end) = (begin_marker(name), end_marker(name));
        let (Some(start), Some(stop)) = (doc.find(&begin), doc.find(&end)) else {
            problems.push(format!("{name}: no generated block (add `{begin}` … `{end}`)"));
            continue;
        };
        let inner_start = start + begin.len();
        let wanted = format!("\n{body}");
        if doc[inner_start..stop] != wanted {
            problems.push(format!("{name}: generated block is stale"));
            doc.replace_range(inner_start..stop, &wanted);
        }
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_reference_matches_the_registry_and_real_calls() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("w");
    std::fs::create_dir(&root).unwrap();
    let root = root.canonicalize().unwrap();
    example_workspace(&root);
    let port = example_web().await;
    let descriptors = example_host(&root, &example_config(port)).registry().descriptors();
    let examples = run_examples(&root, port).await;
    let blocks: Vec<(String, String)> = descriptors
        .iter()
        .map(|tool| {
            let example = examples.iter().find(|(name, _)| *name == tool.name).map(|(_, s)| s);
            (tool.name.clone(), block(tool, example.map(String::as_str)))
        })
        .collect();
    let path = repo().join("docs/tools.md");
    let mut doc = std::fs::read_to_string(&path).unwrap();
    let problems = apply(&mut doc, &blocks);
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &doc).unwrap();
        let missing: Vec<&String> =
            problems.iter().filter(|p| p.contains("no generated")).collect();
        assert!(missing.is_empty(), "{missing:#?}");
        return;
    }
    assert!(
        problems.is_empty(),
        "docs/tools.md is out of date (UPDATE_DOCS=1 cargo test -p toolhost-tests --test tools_doc): {problems:#?}"
    );
}

/// Every `info.code` the conformance scenarios pin, and every code of the lsp tool, is
/// documented (with its message) in docs/tools.md.
#[test]
fn every_error_code_is_documented() {
    let doc = std::fs::read_to_string(repo().join("docs/tools.md")).unwrap();
    let mut codes: BTreeSet<String> = [
        "UNKNOWN_TOOL",
        "INVALID_ARGS",
        "INVALID_TOOL_OUTPUT",
        "ABORTED",
        "ABORTED_BEFORE_DISPATCH",
        "TOOL_TIMEOUT",
        "INTERNAL_ERROR",
        "TOOL_OUTCOME_UNKNOWN",
        "LSP_WORKSPACE_REQUIRED",
        "LSP_UNAVAILABLE",
        "LSP_MALFORMED_RESPONSE",
        "LSP_UNSUPPORTED_OPERATION",
        "LSP_DISPOSED",
        "FS_ABORTED",
        "FS_DIRTY_BUFFER",
        "SEARCH_ABORTED",
        "SEARCH_RAW_OUTPUT_OVERFLOW",
        "SEARCH_FAILED",
        "SEARCH_PATTERN_TOO_LARGE",
        "WEB_INVALID_URL",
        "WEB_BLOCKED_URL",
        "WEB_SSRF_DENIED",
        "WEB_DNS_FAILED",
        "WEB_REDIRECT_BLOCKED",
        "WEB_PROVIDER_ERROR",
        "WEB_FETCH_TIMEOUT",
        "WEB_FETCH_TOO_LARGE",
        "WEB_UNSUPPORTED_CONTENT_TYPE",
        "WEB_TIMEOUT",
        "WEB_REQUEST_FAILED",
        "WEB_PROVIDER_UNAVAILABLE",
        "WEB_PROVIDER_FAILED",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    let scenarios = repo().join("editor-clients/conformance");
    for entry in std::fs::read_dir(&scenarios).unwrap().flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path().join("steps.json")) else { continue };
        let steps: Value = serde_json::from_str(&text).unwrap();
        collect_codes(&steps, &mut codes);
    }
    let missing: Vec<&String> = codes.iter().filter(|c| !doc.contains(&format!("`{c}`"))).collect();
    assert!(missing.is_empty(), "error codes missing from docs/tools.md: {missing:?}");
}

fn collect_codes(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(code)) = map.get("code")
                && code.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            {
                out.insert(code.clone());
            }
            map.values().for_each(|v| collect_codes(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_codes(v, out)),
        _ => {}
    }
}
