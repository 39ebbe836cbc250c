//! MCP over stdio: newline-delimited JSON-RPC, framed by `toolhost-jsonrpc`, read on its own
//! thread and written by an `Outbox` thread, handed to rmcp as a `Transport`.
//!
//! Bad input never ends the connection and never reaches rmcp: a line over the cap is skipped
//! without being buffered and answered `-32600` (id null), a line that is not JSON `-32700`, JSON
//! that is not a message `-32600` (echoing a usable id), a known method with unusable params
//! `-32602`, an unknown method `-32601`, a request other than `initialize`, `ping` and
//! `server/discover` before the session has a lifecycle `-32002`. Until the session has a lifecycle (`initialize`, or a request carrying its protocol
//! version inline), notifications and responses are dropped: rmcp would otherwise end the
//! session on them.
//!
//! Memory stays bounded against a client that never reads its answers: the reader stops taking
//! new requests while [`MAX_IN_FLIGHT`] are unanswered or more than [`MAX_PENDING_BYTES`] of
//! answers wait to be written.

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use std::collections::HashSet;
use std::io::Read;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use toolhost_jsonrpc::message::{self, ErrorObject, Id, Incoming, codes};
use toolhost_jsonrpc::{BlockingFrames, Frame, LimitPolicy, LineDecoder, LineLimits, Outbox};

/// Requests forwarded and not yet answered before the reader waits.
pub const MAX_IN_FLIGHT: usize = 64;
/// Answer bytes waiting to be written before the reader waits.
pub const MAX_PENDING_BYTES: usize = 16 * 1024 * 1024;

/// The client→server request methods of the MCP revisions rmcp knows; anything else is
/// answered "method not found".
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "logging/setLevel",
    "completion/complete",
    "skills/list",
    "skills/get",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
    "tasks/update",
];

const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// Requests in flight, by id, and the condition the reader waits on.
#[derive(Default)]
struct Gate {
    in_flight: Mutex<HashSet<String>>,
    changed: Condvar,
}

impl Gate {
    fn key(id: &Value) -> String {
        id.to_string()
    }

    fn done(&self, id: &Value) {
        if let Ok(mut set) = self.in_flight.lock() {
            set.remove(&Self::key(id));
        }
        self.changed.notify_all();
    }

    /// Waits until another request may be taken, then records `id`.
    fn admit(&self, id: &Value, outbox: &Outbox) {
        let Ok(mut set) = self.in_flight.lock() else { return };
        while set.len() >= MAX_IN_FLIGHT || outbox.pending_bytes() > MAX_PENDING_BYTES {
            if outbox.is_broken() {
                break;
            }
            match self.changed.wait_timeout(set, Duration::from_millis(20)) {
                Ok((guard, _)) => set = guard,
                Err(_) => return,
            }
        }
        set.insert(Self::key(id));
    }
}

/// The rmcp side of the connection.
pub struct StdioTransport {
    inbound: tokio::sync::mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    outbox: Outbox,
    gate: Arc<Gate>,
}

/// Starts reading `input` on its own thread; answers and errors go to `outbox`.
pub fn start(input: impl Read + Send + 'static, outbox: Outbox, max_line: usize) -> StdioTransport {
    let (tx, inbound) = tokio::sync::mpsc::channel(64);
    let gate = Arc::new(Gate::default());
    let reader =
        Reader { outbox: outbox.clone(), gate: Arc::clone(&gate), tx, started: false, max_line };
    let spawned = std::thread::Builder::new()
        .name("toolhost-mcp-stdin".into())
        .spawn(move || reader.run(input));
    if let Err(err) = spawned {
        eprintln!("toolhost: cannot start the input thread: {err}");
    }
    StdioTransport { inbound, outbox, gate }
}

struct Reader {
    outbox: Outbox,
    gate: Arc<Gate>,
    tx: tokio::sync::mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    /// Whether the session has a lifecycle yet (see the module docs).
    started: bool,
    max_line: usize,
}

impl Reader {
    fn run(mut self, input: impl Read) {
        let decoder = LineDecoder::new(LineLimits { max_line: self.max_line }, LimitPolicy::Drain);
        let mut frames = BlockingFrames::new(input, decoder);
        loop {
            match frames.next_frame() {
                Ok(Some(Frame::Body(body))) => {
                    if !self.handle(&body) {
                        return;
                    }
                }
                Ok(Some(Frame::Oversized(len))) => {
                    let max = self.max_line;
                    let message = format!("message of {len} bytes exceeds the {max}-byte limit");
                    self.outbox
                        .send_error(&Id::Null, &ErrorObject::new(codes::INVALID_REQUEST, message));
                }
                Ok(None) | Err(_) => return,
            }
        }
    }

    /// Handles one line; `false` when rmcp is gone.
    fn handle(&mut self, body: &[u8]) -> bool {
        let body = body.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(body);
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            self.outbox.send_error(&Id::Null, &ErrorObject::new(codes::PARSE_ERROR, "Parse error"));
            return true;
        };
        let incoming = match message::classify(value.clone()) {
            Ok(incoming) => incoming,
            Err(invalid) => {
                self.outbox.send_error(&invalid.id, &invalid.error());
                return true;
            }
        };
        let typed = serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value.clone());
        match incoming {
            Incoming::Request(request) => {
                let msg = match typed {
                    Ok(msg) => msg,
                    Err(err) => {
                        let error = ErrorObject::invalid_params(format!("Invalid params: {err}"));
                        self.outbox.send_error(&request.id, &error);
                        return true;
                    }
                };
                if let Some(error) = self.refusal(&request.method, &value, &msg) {
                    self.outbox.send_error(&request.id, &error);
                    return true;
                }
                if !self.started && self.starts_lifecycle(&request.method, &value) {
                    self.started = true;
                }
                let id = value.get("id").cloned().unwrap_or(Value::Null);
                self.gate.admit(&id, &self.outbox);
                self.tx.blocking_send(msg).is_ok()
            }
            Incoming::Notification(note) => {
                let Ok(msg) = typed else { return true };
                if !self.started {
                    return true;
                }
                if note.method == "notifications/cancelled"
                    && let Some(id) = value.pointer("/params/requestId")
                {
                    self.gate.done(id);
                }
                self.tx.blocking_send(msg).is_ok()
            }
            Incoming::Response(_) => match typed {
                Ok(msg) if self.started => self.tx.blocking_send(msg).is_ok(),
                _ => true,
            },
        }
    }

    /// The error toolhost answers itself, with a clearer message than rmcp would: a request
    /// before the session has a lifecycle, an unknown method, or a known method whose params do
    /// not fit it (rmcp reads those as a custom request and would call the method unknown).
    fn refusal(
        &self,
        method: &str,
        value: &Value,
        msg: &RxJsonRpcMessage<RoleServer>,
    ) -> Option<ErrorObject> {
        let custom = matches!(
            msg,
            rmcp::model::JsonRpcMessage::Request(r)
                if matches!(r.request, rmcp::model::ClientRequest::CustomRequest(_))
        );
        if custom && !KNOWN_METHODS.contains(&method) {
            return Some(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            ));
        }
        let lifecycle_free = matches!(method, "initialize" | "ping" | "server/discover");
        if !self.started && !lifecycle_free && !self.starts_lifecycle(method, value) {
            return Some(ErrorObject::new(
                codes::SERVER_NOT_INITIALIZED,
                format!(
                    "{method} before initialization: send `initialize` first (protocol \
                     revisions up to 2025-11-25), or give every request `_meta` with \
                     {PROTOCOL_VERSION_KEY} and {CLIENT_CAPABILITIES_KEY} (2026-07-28)"
                ),
            ));
        }
        if custom {
            let params = value.get("params").cloned().unwrap_or(Value::Null);
            let detail = match method {
                "tools/call" => {
                    serde_json::from_value::<rmcp::model::CallToolRequestParams>(params)
                        .err()
                        .map(|e| e.to_string())
                }
                "initialize" => {
                    serde_json::from_value::<rmcp::model::InitializeRequestParams>(params)
                        .err()
                        .map(|e| e.to_string())
                }
                _ => None,
            };
            let message = match detail {
                Some(detail) => format!("Invalid params for {method}: {detail}"),
                None => format!("Invalid params for {method}"),
            };
            return Some(ErrorObject::invalid_params(message));
        }
        None
    }

    /// Whether rmcp starts a session on this request: `initialize`, or a request whose `_meta`
    /// carries a supported protocol version (with the client capabilities it then requires).
    fn starts_lifecycle(&self, method: &str, value: &Value) -> bool {
        if method == "initialize" {
            return true;
        }
        if matches!(method, "ping" | "server/discover") {
            return false;
        }
        let meta = value.pointer("/params/_meta");
        let version = meta.and_then(|m| m.get(PROTOCOL_VERSION_KEY)).and_then(Value::as_str);
        let Some(version) = version else { return false };
        if !crate::handler::PROTOCOL_VERSIONS.iter().any(|v| v.as_str() == version) {
            return false;
        }
        version < "2026-07-28" || meta.and_then(|m| m.get(CLIENT_CAPABILITIES_KEY)).is_some()
    }
}

impl Transport<RoleServer> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            rmcp::model::JsonRpcMessage::Response(response) => {
                serde_json::to_value(&response.id).ok()
            }
            rmcp::model::JsonRpcMessage::Error(error) => {
                error.id.as_ref().and_then(|id| serde_json::to_value(id).ok())
            }
            _ => None,
        };
        let result = match serde_json::to_vec(&item) {
            Ok(body) => {
                self.outbox.send(body);
                if let Some(id) = answered {
                    self.gate.done(&id);
                }
                Ok(())
            }
            Err(err) => Err(std::io::Error::other(err)),
        };
        let broken = self.outbox.is_broken();
        async move {
            if broken {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the client closed its input",
                ));
            }
            result
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        self.inbound.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inbound.close();
        Ok(())
    }
}
