//! MCP resources of `toolhost mcp` (docs/mcp.md, Resources), driven by rmcp's client: a grep
//! result too large for the model carries a `resource_link` beside the spill path, and reading
//! it returns the complete result; the live session's transcript of cards is listed, read, and a
//! subscription to it hears of the next call; an unknown uri is -32002. Standalone, and attached
//! to an editor's `toolhost serve`.
#![allow(clippy::unwrap_used)]

use crate::server;

use rmcp::model::{
    CallToolRequestParams, ReadResourceRequestParams, ResourceContents,
    ResourceUpdatedNotificationParam, SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use server::{Env, binary};
use std::time::Duration;
use tokio::sync::mpsc;

/// A client that passes on every `notifications/resources/updated` it gets.
struct Updates(mpsc::UnboundedSender<String>);

impl ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }
}

type Client = RunningService<RoleClient, Updates>;

async fn start(env: &Env, args: &[&str]) -> (Client, mpsc::UnboundedReceiver<String>) {
    let mut command = tokio::process::Command::new(binary());
    command.arg("mcp").args(args).current_dir(&env.root);
    for (key, value) in env.env() {
        command.env(key, value);
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let client = Updates(tx).serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    (client, rx)
}

async fn call(client: &Client, name: &str, arguments: Value) -> Value {
    let params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments.as_object().unwrap().clone());
    serde_json::to_value(client.call_tool(params).await.unwrap()).unwrap()
}

async fn read(client: &Client, uri: &str) -> Result<ResourceContents, rmcp::ServiceError> {
    let read = client.read_resource(ReadResourceRequestParams::new(uri.to_owned())).await?;
    Ok(read.contents.into_iter().next().unwrap())
}

fn text(contents: ResourceContents) -> String {
    match contents {
        ResourceContents::TextResourceContents { text, .. } => text,
        other => panic!("not text: {other:?}"),
    }
}

/// A workspace whose grep for `needle` finds 600 matches, more than the 250 the model sees.
fn big_grep_env() -> Env {
    let env = Env::new();
    let lines: String = (0..600).map(|i| format!("needle number {i:04}\n")).collect();
    env.write("many.txt", &lines);
    env
}

/// Checks the spill link of a big grep and the transcript's listing, reading and updates.
// `resources/subscribe` is what clients up to 2025-11-25 send (2026-07-28 has a listen request).
#[allow(deprecated)]
async fn check_resources(client: &Client, updates: &mut mpsc::UnboundedReceiver<String>) {
    let info = client.peer_info().unwrap();
    let resources = serde_json::to_value(&info.capabilities.resources).unwrap();
    assert_eq!(resources, json!({"subscribe": true, "listChanged": false}));

    // A big grep: the Native text names the spill file, a resource_link points at it.
    let grep = call(client, "grep", json!({"pattern": "needle", "path": "many.txt"})).await;
    let content = grep["content"].as_array().unwrap();
    let native = content[0]["text"].as_str().unwrap();
    assert!(native.contains("Found 250 of 600 matches"), "{native}");
    let link = content.iter().find(|c| c["type"] == "resource_link").expect("a resource_link");
    let uri = link["uri"].as_str().unwrap();
    assert!(uri.starts_with("toolhost://spill/"), "{link}");
    assert_eq!(link["mimeType"], "text/plain", "{link}");
    let path = native.split("stored at: ").nth(1).unwrap().split(". ").next().unwrap();
    assert!(link["description"].as_str().unwrap().contains(path), "{link} {path}");
    let full = text(read(client, uri).await.unwrap());
    assert_eq!(link["size"], full.len(), "{link}");
    assert_eq!(full, std::fs::read_to_string(path).unwrap());
    assert!(full.contains("needle number 0599"), "the complete result: {full}");
    assert!(!native.contains("needle number 0599"));

    // Unknown uris: the spec's resource-not-found.
    for unknown in
        ["toolhost://spill/not-linked", "toolhost://session/nope/cards", "file:///etc/passwd"]
    {
        let err = read(client, unknown).await.unwrap_err();
        let rmcp::ServiceError::McpError(err) = err else { panic!("{err:?}") };
        assert_eq!(err.code.0, -32002, "{unknown}: {err:?}");
    }
    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "toolhost://session/{sessionId}/cards");

    // The transcript of the live session: listed, read, followed.
    let listed = client.list_all_resources().await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let transcript = listed[0].uri.clone();
    assert!(transcript.starts_with("toolhost://session/") && transcript.ends_with("/cards"));
    let cards: Value =
        serde_json::from_str(&text(read(client, &transcript).await.unwrap())).unwrap();
    let tools: Vec<&str> =
        cards["cards"].as_array().unwrap().iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert!(tools.contains(&"grep"), "{cards}");
    assert!(!tools.contains(&"read"), "{cards}");

    client.subscribe(SubscribeRequestParams::new(transcript.clone())).await.unwrap();
    while updates.try_recv().is_ok() {}
    call(client, "read", json!({"file_path": "many.txt", "limit": 3})).await;
    let updated = tokio::time::timeout(Duration::from_secs(20), updates.recv())
        .await
        .expect("no notifications/resources/updated after a call")
        .unwrap();
    assert_eq!(updated, transcript);
    // The read's final card is in the transcript (an update may come for its pending card
    // first: read until it is there).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let cards: Value =
            serde_json::from_str(&text(read(client, &transcript).await.unwrap())).unwrap();
        let done = cards["cards"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["tool"] == "read" && c["status"] == "completed");
        if done {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the read never reached {cards}");
        let _ = tokio::time::timeout(Duration::from_secs(5), updates.recv()).await;
    }
    // Only the live session's transcript changes.
    let other = client.subscribe(SubscribeRequestParams::new("toolhost://spill/x")).await;
    assert!(other.is_err());
}

#[tokio::test]
async fn standalone_spills_and_the_session_transcript_are_resources() {
    let env = big_grep_env();
    let (client, mut updates) = start(&env, &["--standalone"]).await;
    check_resources(&client, &mut updates).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn attached_the_editors_session_transcript_is_a_resource_and_followed() {
    let env = big_grep_env();
    let editor = env.start(json!({}));
    let (client, mut updates) = start(&env, &[]).await;
    check_resources(&client, &mut updates).await;
    client.cancel().await.unwrap();
    drop(editor);
}
