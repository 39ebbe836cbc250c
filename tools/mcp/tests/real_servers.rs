//! The bridge against real MCP servers: a scripted wire-level server for the edge cases
//! (pagination, legacy results, every content kind, schema violations, isError, a call that
//! never answers, progress, floods, list_changed, a crash and the reconnect, the scrubbed
//! environment), the Python SDK's MCPServer with an outputSchema, and the npm reference
//! servers over stdio and streamable HTTP. Programs come from `cargo xtask install-deps`.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost_contract::{
    BoxFuture, Capabilities, EventsHandle, HostEvents, Notice, QuestionError, QuestionRequest,
    QuestionsHandle, UserQuestions,
};
use toolhost_protocol::lsp_ext::Answer;
use toolhost_registry::{CallInput, Registry};
use toolhost_tools_mcp::{
    BridgeOptions, McpBridge, McpServerConfig, McpTransport, ReconnectPolicy,
};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    let python = repo_root().join(".client-tools/py/bin/python");
    assert!(python.exists(), "{} is missing: run `cargo xtask install-deps`", python.display());
    python
}

fn npm_bin(name: &str) -> String {
    let bin = repo_root().join(".client-tools/npm/node_modules/.bin").join(name);
    assert!(bin.exists(), "{} is missing: run `cargo xtask install-deps`", bin.display());
    bin.display().to_string()
}

fn scripted(state: &std::path::Path) -> McpServerConfig {
    let mut config = McpServerConfig::new(
        "scripted",
        McpTransport::Stdio {
            command: python().display().to_string(),
            args: vec![repo_root().join("tests/mcp-servers/scripted.py").display().to_string()],
            env: [("SCRIPTED_STATE".to_owned(), state.display().to_string())].into(),
            cwd: None,
        },
    );
    config.tool_call_timeout = Duration::from_millis(1500);
    config.reconnect = ReconnectPolicy {
        enabled: true,
        initial_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(2000),
        max_attempts: 3,
    };
    config
}

#[derive(Default)]
struct Recorded(Mutex<Vec<(String, String)>>);

impl HostEvents for Recorded {
    fn call_output(&self, call_id: &str, text: &str) {
        self.0.lock().unwrap().push((call_id.to_owned(), text.to_owned()));
    }
    fn notice(&self, _session_id: Option<&str>, _notice: Notice) {}
}

/// A person who answers every question with the option labelled `pick` (or types `text`), and
/// remembers what was asked.
struct Person {
    pick: &'static str,
    text: &'static str,
    asked: Mutex<Vec<QuestionRequest>>,
}

impl UserQuestions for Person {
    fn ask(
        &self,
        request: QuestionRequest,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> BoxFuture<'_, Result<Vec<Answer>, QuestionError>> {
        let answers = request
            .questions
            .iter()
            .map(|q| Answer {
                id: q.id.clone(),
                selected: q
                    .options
                    .iter()
                    .filter(|o| o.label == self.pick)
                    .map(|o| o.label.clone())
                    .collect(),
                custom: q.options.is_empty().then(|| self.text.to_owned()),
            })
            .collect();
        self.asked.lock().unwrap().push(request);
        Box::pin(async move { Ok(answers) })
    }
}

async fn call(registry: &Registry, events: &Arc<Recorded>, name: &str, args: Value) -> Value {
    call_with(registry, events, name, args, None).await
}

async fn call_with(
    registry: &Registry,
    events: &Arc<Recorded>,
    name: &str,
    args: Value,
    person: Option<Arc<Person>>,
) -> Value {
    let handle: EventsHandle = events.clone();
    let mut capabilities = Capabilities::new().with::<EventsHandle>(handle);
    if let Some(person) = person {
        let questions: QuestionsHandle = person;
        capabilities.insert(questions);
    }
    let capabilities = Arc::new(capabilities);
    let finalized = registry.dispatch(CallInput::direct("call-1", name, args, capabilities)).await;
    serde_json::to_value(&finalized.result).unwrap()
}

fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap_or("<image>").to_owned())
        .collect::<Vec<_>>()
        .join("|")
}

fn public(name: &str) -> String {
    toolhost_tools_mcp::naming::public_name("scripted", name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_server_results_errors_and_lifecycle() {
    let state = tempfile::tempdir().unwrap();
    let registry = Registry::default();
    let options = BridgeOptions { roots: vec![state.path().to_path_buf()], ..Default::default() };
    let bridge = McpBridge::start(&registry, vec![scripted(state.path())], options);
    bridge.ready().await.unwrap();
    let events = Arc::new(Recorded::default());

    // Discovery drained three pages; the dotted name was sanitized and hashed.
    let names: Vec<String> = registry.descriptors().into_iter().map(|d| d.name).collect();
    assert_eq!(names.len(), 18, "{names:?}");
    let dotted = public("dotted.name");
    assert!(dotted.starts_with("mcp__scripted__dotted_name_") && dotted.len() == 39, "{dotted}");
    assert!(names.contains(&dotted));
    assert_eq!(text(&call(&registry, &events, &dotted, json!({})).await), "dotted");

    // A tool that requires task-based execution fails without reaching the server.
    assert_eq!(
        text(&call(&registry, &events, &public("tasky"), json!({})).await),
        "Error: Tool \"tasky\" requires task-based execution, which this bridge does not support"
    );

    // The server's form elicitation is asked on the call's question channel; the answers go
    // back typed. Nobody to ask: declined.
    let person = Arc::new(Person { pick: "Green", text: "3", asked: Mutex::default() });
    let asked =
        call_with(&registry, &events, &public("ask"), json!({}), Some(person.clone())).await;
    assert_eq!(text(&asked), r#"{"action": "accept", "content": {"color": "g", "count": 3}}"#);
    let request = person.asked.lock().unwrap().pop().unwrap();
    assert_eq!(request.call_id, "call-1");
    assert_eq!(request.tool, public("ask"));
    assert!(request.questions[0].question.starts_with("Pick a color\n\ncolor"), "{request:?}");
    assert_eq!(request.questions[1].question, "How many (optional)");
    let declined = call(&registry, &events, &public("ask"), json!({})).await;
    assert_eq!(text(&declined), r#"{"action": "decline"}"#);

    // roots/list is the workspace roots as file URIs; sampling is refused, saying so.
    let roots: Value =
        serde_json::from_str(&text(&call(&registry, &events, &public("roots"), json!({})).await))
            .unwrap();
    let uri = format!("file://{}", state.path().display());
    assert_eq!(roots["roots"][0]["uri"], uri.as_str(), "{roots}");
    let sample: Value =
        serde_json::from_str(&text(&call(&registry, &events, &public("sample"), json!({})).await))
            .unwrap();
    assert_eq!(sample["code"], -32601, "{sample}");
    assert_eq!(
        sample["message"],
        "toolhost does not offer sampling (sampling/createMessage) to MCP servers"
    );

    // Every content kind, with the image splitting the text runs.
    let kinds = call(&registry, &events, &public("kinds"), json!({})).await;
    assert_eq!(kinds["isError"], false);
    assert_eq!(
        text(&kinds),
        "plain text\nResource link: README (file:///w/README.md)\n\
[audio result unsupported: audio/wav; raw audio data remains available to programmatic callers]\n\
[embedded resource unsupported; raw resource data remains available to programmatic callers]|<image>|after the image"
    );
    assert_eq!(kinds["value"]["content"].as_array().unwrap().len(), 6, "blocks kept verbatim");

    // Legacy results, structured content validated, unusable schemas not pretended.
    let legacy = call(&registry, &events, &public("legacy"), json!({})).await;
    assert_eq!(text(&legacy), "{\"answer\":42}");
    let point = call(&registry, &events, &public("point"), json!({})).await;
    assert_eq!(point["value"]["structuredContent"], json!({"x": 1, "y": 2}));
    assert_eq!(point["meta"]["structuredContent"], json!({"x": 1, "y": 2}));
    assert_eq!(point["meta"]["server"], "scripted");
    let bad = call(&registry, &events, &public("bad_point"), json!({})).await;
    assert_eq!(bad["isError"], true);
    assert_eq!(bad["error"]["info"]["code"], "INVALID_TOOL_OUTPUT", "{bad}");
    let loose = call(&registry, &events, &public("loose"), json!({})).await;
    assert_eq!(loose["isError"], false, "{loose}");

    // isError is a failure with the server's text.
    let fail = call(&registry, &events, &public("fail"), json!({"why": "disk full"})).await;
    assert_eq!(fail["isError"], true);
    assert_eq!(text(&fail), "Error: the tool failed: disk full");
    assert!(fail["error"].get("info").is_none(), "{fail}");

    // Progress reaches the call's live output.
    let progress = call(&registry, &events, &public("progress"), json!({})).await;
    assert_eq!(text(&progress), "done");
    let lines: Vec<String> = events.0.lock().unwrap().iter().map(|(_, t)| t.clone()).collect();
    // The server pauses after each notification, so both arrive before the answer.
    assert_eq!(lines, ["step 1 (1/2)\n", "step 2 (2/2)\n"]);

    // A call the caller cancels ends ABORTED and is cancelled at the server.
    let handle: EventsHandle = events.clone();
    let input = CallInput::direct(
        "call-cancelled",
        &public("never"),
        json!({}),
        Arc::new(Capabilities::new().with::<EventsHandle>(handle)),
    );
    let signal = input.signal.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        signal.cancel();
    });
    let aborted = serde_json::to_value(&registry.dispatch(input).await.result).unwrap();
    assert_eq!(aborted["error"]["info"]["code"], "ABORTED", "{aborted}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancelled = std::fs::read_to_string(state.path().join("cancelled")).unwrap();
    assert!(cancelled.contains("cancelled by the caller"), "{cancelled}");

    // A call that never answers times out and is cancelled at the server.
    let never = call(&registry, &events, &public("never"), json!({})).await;
    assert_eq!(text(&never), "Error: MCP server \"scripted\" did not answer never within 1500 ms");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancelled = std::fs::read_to_string(state.path().join("cancelled")).unwrap();
    assert!(cancelled.contains("timed out"), "{cancelled}");

    // Floods on stderr do not block the connection; a large text comes through whole.
    let flood = call(&registry, &events, &public("flood"), json!({})).await;
    assert_eq!(flood["value"]["content"][0]["text"].as_str().unwrap().len(), 1_000_000);

    // Floods on stdout (40,000 notifications, 9 MB, half of them progress nobody asked for)
    // are read through; the answer after them arrives, and unrouted progress stays bounded.
    let chatter = call(&registry, &events, &public("chatter"), json!({})).await;
    assert_eq!(text(&chatter), "after the chatter");

    // The server's environment: the entry's own variables on the scrubbed parent environment
    // (the scrub rule itself is unit-tested in config.rs).
    let env = text(&call(&registry, &events, &public("env"), json!({})).await);
    let names: Vec<&str> = env.split(' ').collect();
    assert!(names.contains(&"SCRIPTED_STATE") && names.contains(&"PATH"), "{env}");
    assert!(!names.iter().any(|n| toolhost_tools_mcp::config::is_scrubbed(n)), "{env}");

    // list_changed brings the new tool in.
    call(&registry, &events, &public("change"), json!({})).await;
    let added = public("added");
    for _ in 0..50 {
        if registry.contains(&added) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(text(&call(&registry, &events, &added, json!({})).await), "the new tool");

    // A crash: the server is started again and its tools work.
    let crash = call(&registry, &events, &public("crash"), json!({})).await;
    assert_eq!(crash["isError"], true);
    let mut again = Value::Null;
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        again = call(&registry, &events, &public("point"), json!({})).await;
        if again["isError"] == false {
            break;
        }
    }
    assert_eq!(again["isError"], false, "{again}");
    let starts = std::fs::read_to_string(state.path().join("starts")).unwrap();
    assert_eq!(starts.lines().count(), 2);
    assert_eq!(bridge.status()[0].state, "ready");

    // Shutdown unregisters the tools and leaves no server process.
    bridge.shutdown().await;
    assert!(registry.descriptors().is_empty());
    for pid in starts.lines() {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "server {pid} is still there"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_server_with_an_output_schema() {
    let registry = Registry::default();
    let config = McpServerConfig::new(
        "py",
        McpTransport::Stdio {
            command: python().display().to_string(),
            args: vec![repo_root().join("tests/mcp-servers/structured.py").display().to_string()],
            env: Default::default(),
            cwd: None,
        },
    );
    let bridge = McpBridge::start(&registry, vec![config], Default::default());
    bridge.ready().await.unwrap();
    let descriptor =
        registry.descriptors().into_iter().find(|d| d.name == "mcp__py__weather").unwrap();
    assert_eq!(descriptor.output_schema["required"], json!(["content", "structuredContent"]));
    let events = Arc::new(Recorded::default());
    let weather = call(&registry, &events, "mcp__py__weather", json!({"city": "Oslo"})).await;
    assert_eq!(weather["isError"], false, "{weather}");
    assert_eq!(weather["value"]["structuredContent"]["location"]["city"], "Oslo");
    let shout = call(&registry, &events, "mcp__py__shout", json!({"text": "hi"})).await;
    assert_eq!(text(&shout), "HI");
    bridge.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_servers_over_stdio_and_streamable_http() {
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    std::fs::write(root_path.join("hello.txt"), "hello from the workspace\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut http_server = tokio::process::Command::new(npm_bin("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let registry = Registry::default();
    let servers = vec![
        McpServerConfig::new(
            "everything",
            McpTransport::Stdio {
                command: npm_bin("mcp-server-everything"),
                args: vec!["stdio".into()],
                env: Default::default(),
                cwd: None,
            },
        ),
        McpServerConfig::new(
            "fs",
            McpTransport::Stdio {
                command: npm_bin("mcp-server-filesystem"),
                args: vec![root_path.display().to_string()],
                env: Default::default(),
                cwd: None,
            },
        ),
        McpServerConfig::new(
            "web",
            McpTransport::Http {
                url: format!("http://127.0.0.1:{port}/mcp"),
                headers: [("X-Test".to_owned(), "${PATH}".to_owned())].into(),
            },
        ),
    ];
    let bridge = McpBridge::start(&registry, servers, Default::default());
    bridge.ready().await.unwrap();
    let status = bridge.status();
    assert!(status.iter().all(|s| s.state == "ready"), "{status:?}");
    let events = Arc::new(Recorded::default());
    for server in ["everything", "web"] {
        let echo =
            call(&registry, &events, &format!("mcp__{server}__echo"), json!({"message": "hi"}))
                .await;
        assert_eq!(text(&echo), "Echo: hi", "{echo}");
        let structured = call(
            &registry,
            &events,
            &format!("mcp__{server}__get-structured-content"),
            json!({"location": "New York"}),
        )
        .await;
        assert_eq!(structured["isError"], false, "{structured}");
        assert!(structured["value"]["structuredContent"].is_object());
    }
    let read = call(
        &registry,
        &events,
        "mcp__fs__read_text_file",
        json!({"path": root_path.join("hello.txt").display().to_string()}),
    )
    .await;
    assert_eq!(read["isError"], false, "{read}");
    assert!(text(&read).contains("hello from the workspace"), "{read}");
    let outside =
        call(&registry, &events, "mcp__fs__read_text_file", json!({"path": "/etc/hostname"})).await;
    assert_eq!(outside["isError"], true, "{outside}");
    bridge.shutdown().await;
    let _ = http_server.kill().await;
}
