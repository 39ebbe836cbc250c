//! `toolhost mcp`: the registry as an MCP server, so any MCP-speaking agent (Claude Code, Codex,
//! VS Code's agent mode, …) uses toolhost's tools — and every call shows up as a card in the
//! editor when one is attached.
//!
//! - [`backend`]: what the server calls (the binary provides the registry in this process, or the
//!   editor's over its local socket);
//! - [`handler`]: the hand-written rmcp `ServerHandler` (tools/list, tools/call, cancellation,
//!   progress, list_changed), protocol revisions 2025-06-18, 2025-11-25 and 2026-07-28;
//! - [`results`]: the result shape policy (`structured`, `text`, `auto` per client);
//! - [`transport`]: newline-delimited JSON-RPC over stdio on `toolhost-jsonrpc`, with bad input
//!   answered; [`gate`]: what the reader may take (ids in flight, bytes waiting, back-pressure);
//!   [`memory`]: memory given back to the system after large requests;
//! - [`edges`]: protocol edges screened before rmcp sees a request, for every transport;
//! - [`http`]: MCP over Streamable HTTP (token, Host and Origin checks, numbered sessions);
//! - [`resources`]: spilled outputs (`resource_link` beside the path) and session transcripts
//!   as resources, with subscriptions to the live session's.

pub mod backend;
pub mod config;
pub mod edges;
pub mod elicit;
pub mod gate;
pub mod handler;
pub mod http;
pub mod memory;
pub mod resources;
pub mod results;
pub mod transport;

pub use backend::{Backend, BackendError, CallDone, Caller, PromptEntry, ToolCall};
pub use config::McpConfig;
pub use handler::McpServer;
pub use results::ResultsMode;

use std::io::{Read, Write};
use std::sync::Arc;
use toolhost_jsonrpc::{Framing, Outbox};

/// Why serving ended abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("the MCP session could not start: {0}")]
    Start(String),
    #[error("the MCP session failed: {0}")]
    Session(String),
}

/// Serves one MCP session over `input`/`output` until the client closes its end.
pub async fn serve(
    backend: Arc<dyn Backend>,
    config: McpConfig,
    input: impl Read + Send + 'static,
    output: impl Write + Send + 'static,
) -> Result<(), ServeError> {
    memory::return_large_allocations();
    let (outbox, writer) = Outbox::start(output, Framing::Lines);
    let transport = transport::start(input, outbox.clone(), config.max_line_bytes);
    let server = McpServer::new(backend, config);
    let outcome = match rmcp::serve_server(server, transport).await {
        Ok(running) => {
            running.waiting().await.map(drop).map_err(|e| ServeError::Session(e.to_string()))
        }
        Err(err) => Err(ServeError::Start(err.to_string())),
    };
    outbox.close();
    let _ = tokio::task::spawn_blocking(move || writer.join()).await;
    outcome
}
