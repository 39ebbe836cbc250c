//! MCP over stdio: newline-delimited JSON-RPC, framed by `toolhost-jsonrpc`, read on its own
//! thread and written by an `Outbox` thread, handed to rmcp as a `Transport`.
//!
//! Bad input never ends the connection and never reaches rmcp: a line over the cap is skipped
//! without being buffered and answered `-32600` (id null), a line that is not JSON `-32700`, JSON
//! that is not a message `-32600` (echoing a usable id), a known method with unusable params
//! `-32602`, an unknown method `-32601`, a request other than `initialize`, `ping` and
//! `server/discover` before the session has a lifecycle `-32002`, and the edges of
//! [`crate::edges`] (a non-string `cursor`, `ping`, non-object `arguments`). Until the session
//! has a lifecycle (`initialize`, or a request carrying its protocol version inline),
//! notifications and responses are dropped: rmcp would otherwise end the session on them.
//!
//! A request whose id is already in flight is answered `-32600` and never handed on. Memory stays
//! bounded ([`crate::gate`]): the reader stops reading while too many requests are unanswered,
//! too many bytes of lines wait, or too many answers wait to be written; and a line is held once
//! (the bytes read are dropped as soon as they are parsed, the parsed value is moved, not copied,
//! into rmcp's message).

use crate::gate::Gate;
use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Map, Value};
use std::io::Read;
use std::sync::Arc;
use toolhost_jsonrpc::message::{self, ErrorObject, Id, Incoming, codes};
use toolhost_jsonrpc::{BlockingFrames, Frame, LimitPolicy, LineDecoder, LineLimits, Outbox};

pub use crate::gate::{MAX_IN_FLIGHT, MAX_PENDING_BYTES, MAX_WAITING_BYTES};

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

/// A message for rmcp and the bytes it holds until rmcp takes it (a request's are held until
/// it is answered instead: 0 here).
struct Inbound {
    message: RxJsonRpcMessage<RoleServer>,
    held: usize,
}

/// What the reader needs of a message besides rmcp's typed form, taken before the parsed value
/// is moved into that form.
struct Header {
    id: Value,
    /// `_meta`'s protocol version, if a string.
    protocol: Option<String>,
    /// Whether `_meta` carries the client capabilities.
    capabilities: bool,
    /// A cancellation's `requestId`.
    cancels: Option<Value>,
}

impl Header {
    fn of(value: &Value) -> Header {
        let meta = value.pointer("/params/_meta");
        Header {
            id: value.get("id").cloned().unwrap_or(Value::Null),
            protocol: meta
                .and_then(|m| m.get(PROTOCOL_VERSION_KEY))
                .and_then(Value::as_str)
                .map(str::to_owned),
            capabilities: meta.and_then(|m| m.get(CLIENT_CAPABILITIES_KEY)).is_some(),
            cancels: value.pointer("/params/requestId").cloned(),
        }
    }
}

/// The members [`message::classify`] reads (`jsonrpc`, `id`, `method`), with every other member
/// present but `null`: sorting a message costs no copy of its params.
fn skeleton(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let members: Map<String, Value> = map
                .iter()
                .map(|(key, member)| match key.as_str() {
                    "jsonrpc" | "id" | "method" => (key.clone(), member.clone()),
                    _ => (key.clone(), Value::Null),
                })
                .collect();
            Value::Object(members)
        }
        Value::Array(_) => Value::Array(Vec::new()),
        other => other.clone(),
    }
}

/// The rmcp side of the connection.
pub struct StdioTransport {
    inbound: tokio::sync::mpsc::Receiver<Inbound>,
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
    tx: tokio::sync::mpsc::Sender<Inbound>,
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
                    // Nothing more is read (the client's writes block) until this line fits.
                    self.gate.room(body.len(), &self.outbox);
                    if !self.handle(body) {
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

    fn forward(&self, message: RxJsonRpcMessage<RoleServer>, held: usize) -> bool {
        self.tx.blocking_send(Inbound { message, held }).is_ok()
    }

    /// Handles one line; `false` when rmcp is gone.
    fn handle(&mut self, body: Vec<u8>) -> bool {
        let bytes = body.len();
        let parsed = {
            let text = body.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(&body);
            serde_json::from_slice::<Value>(text)
        };
        // The line is parsed: its bytes are not kept while the message waits.
        drop(body);
        let Ok(value) = parsed else {
            self.outbox.send_error(&Id::Null, &ErrorObject::new(codes::PARSE_ERROR, "Parse error"));
            return true;
        };
        let incoming = match message::classify(skeleton(&value)) {
            Ok(incoming) => incoming,
            Err(invalid) => {
                self.outbox.send_error(&invalid.id, &invalid.error());
                return true;
            }
        };
        let mut value = value;
        if let Incoming::Request(request) = &incoming {
            match crate::edges::screen(&request.method, &mut value) {
                crate::edges::Screened::Forward => {}
                crate::edges::Screened::Answer(result) => {
                    let body = message::encode_result(&request.id, &result);
                    if let Ok(body) = body {
                        self.outbox.send(body);
                    }
                    return true;
                }
                crate::edges::Screened::Refuse(error) => {
                    self.outbox.send_error(&request.id, &error);
                    return true;
                }
            }
        }
        let header = Header::of(&value);
        // Moved, not copied: rmcp's message takes the parsed strings over.
        let typed = serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value);
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
                let msg = match self.refusal(&request.method, &header, msg) {
                    Ok(msg) => msg,
                    Err(error) => {
                        self.outbox.send_error(&request.id, &error);
                        return true;
                    }
                };
                if self.gate.admit(&header.id, bytes, &self.outbox).is_err() {
                    let message = format!(
                        "Invalid request: request id {} is in use by a request still in flight",
                        request.id
                    );
                    self.outbox.send_error(
                        &request.id,
                        &ErrorObject::new(codes::INVALID_REQUEST, message),
                    );
                    return true;
                }
                if !self.started && self.starts_lifecycle(&request.method, &header) {
                    self.started = true;
                }
                self.forward(msg, 0)
            }
            Incoming::Notification(note) => {
                let Ok(msg) = typed else { return true };
                if !self.started {
                    return true;
                }
                if note.method == "notifications/cancelled"
                    && let Some(id) = &header.cancels
                {
                    self.gate.done(id);
                }
                self.gate.hold(bytes);
                self.forward(msg, bytes)
            }
            Incoming::Response(_) => match typed {
                Ok(msg) if self.started => {
                    self.gate.hold(bytes);
                    self.forward(msg, bytes)
                }
                _ => true,
            },
        }
    }

    /// The error toolhost answers itself, with a clearer message than rmcp would: a request
    /// before the session has a lifecycle, an unknown method, or a known method whose params do
    /// not fit it (rmcp reads those as a custom request and would call the method unknown).
    /// Otherwise the message, to hand on.
    fn refusal(
        &self,
        method: &str,
        header: &Header,
        msg: RxJsonRpcMessage<RoleServer>,
    ) -> Result<RxJsonRpcMessage<RoleServer>, ErrorObject> {
        let custom = matches!(
            &msg,
            rmcp::model::JsonRpcMessage::Request(r)
                if matches!(r.request, rmcp::model::ClientRequest::CustomRequest(_))
        );
        if custom && !KNOWN_METHODS.contains(&method) {
            return Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            ));
        }
        if let Some(error) = self.lifecycle_refusal(method, header) {
            return Err(error);
        }
        if !custom {
            return Ok(msg);
        }
        let params = match msg {
            rmcp::model::JsonRpcMessage::Request(rmcp::model::JsonRpcRequest {
                request: rmcp::model::ClientRequest::CustomRequest(custom),
                ..
            }) => custom.params.unwrap_or(Value::Null),
            _ => Value::Null,
        };
        let detail = match method {
            "tools/call" => serde_json::from_value::<rmcp::model::CallToolRequestParams>(params)
                .err()
                .map(|e| e.to_string()),
            "initialize" => serde_json::from_value::<rmcp::model::InitializeRequestParams>(params)
                .err()
                .map(|e| e.to_string()),
            _ => None,
        };
        let message = match detail {
            Some(detail) => format!("Invalid params for {method}: {detail}"),
            None => format!("Invalid params for {method}"),
        };
        Err(ErrorObject::invalid_params(message))
    }

    /// A request other than `initialize`, `ping` and `server/discover` before the session has a
    /// lifecycle, unless it starts one itself.
    fn lifecycle_refusal(&self, method: &str, header: &Header) -> Option<ErrorObject> {
        let lifecycle_free = matches!(method, "initialize" | "ping" | "server/discover");
        if self.started || lifecycle_free || self.starts_lifecycle(method, header) {
            return None;
        }
        Some(ErrorObject::new(
            codes::SERVER_NOT_INITIALIZED,
            format!(
                "{method} before initialization: send `initialize` first (protocol \
                 revisions up to 2025-11-25), or give every request `_meta` with \
                 {PROTOCOL_VERSION_KEY} and {CLIENT_CAPABILITIES_KEY} (2026-07-28)"
            ),
        ))
    }

    /// Whether rmcp starts a session on this request: `initialize`, or a request whose `_meta`
    /// carries a supported protocol version (with the client capabilities it then requires).
    fn starts_lifecycle(&self, method: &str, header: &Header) -> bool {
        if method == "initialize" {
            return true;
        }
        if matches!(method, "ping" | "server/discover") {
            return false;
        }
        let Some(version) = header.protocol.as_deref() else { return false };
        if !crate::handler::PROTOCOL_VERSIONS.iter().any(|v| v.as_str() == version) {
            return false;
        }
        version < "2026-07-28" || header.capabilities
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.gate.log_peaks(self.outbox.pending_bytes());
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
                // The id is free before its answer can reach the client: a client that sends
                // its next request under the same id once it has the answer is never refused.
                if let Some(id) = answered {
                    self.gate.done(&id);
                }
                self.outbox.send(body);
                self.gate.answers_queued(self.outbox.pending_bytes());
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
        let Inbound { message, held } = self.inbound.recv().await?;
        if held > 0 {
            self.gate.taken(held);
        }
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inbound.close();
        Ok(())
    }
}
