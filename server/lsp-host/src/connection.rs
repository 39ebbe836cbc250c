//! JSON-RPC over a server's stdio: a writer task, a reader task with the pending-request map, and
//! a stderr drain keeping a short tail for error messages.
//!
//! The reader answers the server's own requests at once (`workspace/configuration` with the
//! configured settings under each item's section, `null` where unset;
//! `client/registerCapability` (file watchers are recorded), `client/unregisterCapability`,
//! `window/workDoneProgress/create` with `null`; `workspace/workspaceFolders` with the one folder; anything else `-32601`) and
//! ignores notifications. A framing or JSON error is fatal: the
//! connection dies, every pending request fails, and the process group is killed.

use crate::error::LspHostError;
use crate::process::ProcessGroup;
use crate::uri_map::UriMap;
use crate::watch::{FileChange, Watchers};
use gen_lsp_types::{ConfigurationItem, LogMessageParams, WorkspaceFolder};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server's stdin, wherever it runs.
pub type ServerInput = Box<dyn AsyncWrite + Unpin + Send>;
/// A server's stdout or stderr, wherever it runs.
pub type ServerOutput = Box<dyn AsyncRead + Unpin + Send>;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolhost_jsonrpc::content_length::{self, ContentLengthDecoder, FrameLimits};
use toolhost_jsonrpc::{AsyncFrames, Frame, LimitPolicy, ReadError};

/// How much of the server's stderr is kept for messages.
const STDERR_TAIL_BYTES: usize = 2048;

/// A response: the `result` member (`None` when absent) or the failure.
pub type Reply = Result<Option<Value>, LspHostError>;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Reply>>>>;

/// What the reader needs to answer server requests.
#[derive(Clone, Debug)]
pub struct ClientInfo {
    pub server_id: String,
    /// The one workspace folder (`workspace/workspaceFolders`).
    pub folder: WorkspaceFolder,
    pub settings: Value,
    /// A log message substring meaning "the workspace is loaded" (pyright: `source file`).
    pub ready_message: Option<String>,
    /// The workspace root's spelling on the server's side, when it runs in an execution world.
    pub uri_map: Option<UriMap>,
}

/// Shared connection state.
struct Shared {
    server_id: String,
    pending: Pending,
    dead: CancellationToken,
    death: Mutex<Option<LspHostError>>,
    stderr: Mutex<Vec<u8>>,
    stderr_done: CancellationToken,
    process: Weak<Mutex<Option<ProcessGroup>>>,
    /// Fired when a log message contains the spec's readiness marker.
    ready: CancellationToken,
    /// The file watchers the server registered.
    watchers: Mutex<Watchers>,
}

impl Shared {
    fn stderr_tail(&self) -> String {
        let bytes = self.stderr.lock().map(|b| b.clone()).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let trimmed = text.trim();
        let mut start = trimmed.len().saturating_sub(STDERR_TAIL_BYTES / 2);
        while !trimmed.is_char_boundary(start) {
            start += 1;
        }
        trimmed[start..].to_owned()
    }

    /// Marks the connection dead (first reason wins), fails every pending request and, for
    /// protocol violations, kills the process group.
    fn die(&self, err: LspHostError) {
        let kill = matches!(err, LspHostError::Protocol { .. });
        let err = {
            let Ok(mut death) = self.death.lock() else { return };
            death.get_or_insert(err).clone()
        };
        self.dead.cancel();
        if kill
            && let Some(process) = self.process.upgrade()
            && let Ok(mut guard) = process.lock()
            && let Some(group) = guard.as_mut()
        {
            group.kill();
        }
        let waiting: Vec<_> =
            self.pending.lock().map(|mut p| p.drain().collect()).unwrap_or_default();
        for (_, tx) in waiting {
            let _ = tx.send(Err(err.clone()));
        }
    }

    async fn exited(&self) -> LspHostError {
        // Let the stderr drain catch up so the message carries the server's last words.
        let _ =
            tokio::time::timeout(Duration::from_millis(200), self.stderr_done.cancelled()).await;
        LspHostError::Exited { id: self.server_id.clone(), stderr: self.stderr_tail() }
    }
}

/// One server connection.
pub struct Connection {
    shared: Arc<Shared>,
    out: mpsc::UnboundedSender<Vec<u8>>,
    next_id: AtomicU64,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Connection {
    /// Starts the reader, writer and stderr tasks over the pipes.
    pub fn start(
        info: ClientInfo,
        stdin: ServerInput,
        stdout: ServerOutput,
        stderr: ServerOutput,
        max_message_bytes: usize,
        process: Weak<Mutex<Option<ProcessGroup>>>,
        exited: CancellationToken,
    ) -> Connection {
        let shared = Arc::new(Shared {
            server_id: info.server_id.clone(),
            pending: Arc::default(),
            dead: CancellationToken::new(),
            death: Mutex::new(None),
            stderr: Mutex::new(Vec::new()),
            stderr_done: CancellationToken::new(),
            process,
            ready: CancellationToken::new(),
            watchers: Mutex::new(Watchers::default()),
        });
        let (out, rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let writer = tokio::spawn(write_loop(Arc::clone(&shared), stdin, rx, info.uri_map.clone()));
        let reader = tokio::spawn(read_loop(
            Arc::clone(&shared),
            info,
            AsyncFrames::new(
                stdout,
                ContentLengthDecoder::new(FrameLimits::child(max_message_bytes), LimitPolicy::Fail),
            ),
            out.clone(),
        ));
        let drain = tokio::spawn(drain_stderr(Arc::clone(&shared), stderr));
        // The leader's exit is a death even while helpers keep the pipes open; output already
        // in the pipe gets a moment to be read first.
        let watch = {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                tokio::select! {
                    () = exited.cancelled() => {}
                    () = shared.dead.cancelled() => return,
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                let err = shared.exited().await;
                shared.die(err);
            })
        };
        Connection {
            shared,
            out,
            next_id: AtomicU64::new(1),
            tasks: vec![writer, reader, drain, watch],
        }
    }

    pub fn is_alive(&self) -> bool {
        !self.shared.dead.is_cancelled()
    }

    /// Fired once the server logged its readiness marker (see [`ClientInfo::ready_message`]).
    pub fn ready(&self) -> &CancellationToken {
        &self.shared.ready
    }

    /// Why the connection died (`None` while alive).
    pub fn death(&self) -> Option<LspHostError> {
        self.shared.death.lock().ok().and_then(|d| d.clone())
    }

    fn send<P: Serialize>(&self, message: &Outgoing<'_, P>) -> Result<(), LspHostError> {
        if let Some(death) = self.death() {
            return Err(death);
        }
        let body = serde_json::to_vec(message).map_err(|e| LspHostError::Protocol {
            id: self.shared.server_id.clone(),
            detail: e.to_string(),
        })?;
        self.out.send(body).map_err(|_| LspHostError::Exited {
            id: self.shared.server_id.clone(),
            stderr: self.shared.stderr_tail(),
        })
    }

    /// Sends a notification.
    pub fn notify<P: Serialize>(&self, method: &str, params: &P) -> Result<(), LspHostError> {
        self.send(&Outgoing { jsonrpc: "2.0", id: None, method, params })
    }

    /// Sends a request; the receiver yields its reply (or the connection's death).
    pub fn request<P: Serialize>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<(u64, oneshot::Receiver<Reply>), LspHostError> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.shared.pending.lock() {
            pending.insert(id, tx);
        }
        let sent = self.send(&Outgoing { jsonrpc: "2.0", id: Some(id), method, params });
        if let Err(err) = sent {
            if let Ok(mut pending) = self.shared.pending.lock() {
                pending.remove(&id);
            }
            return Err(err);
        }
        Ok((id, rx))
    }

    /// Whether the server registered a file watcher that wants `change`.
    pub fn wants(&self, change: &FileChange) -> bool {
        self.shared.watchers.lock().is_ok_and(|w| w.wants(change))
    }

    /// Forgets a request whose reply nobody waits for any more.
    pub fn forget(&self, id: u64) {
        if let Ok(mut pending) = self.shared.pending.lock() {
            pending.remove(&id);
        }
    }

    /// Marks the connection dead with `err` (used when we tear the instance down ourselves).
    pub fn close(&self, err: LspHostError) {
        self.shared.die(err);
    }
}

/// A request or notification we send (the params are typed shapes or JSON).
#[derive(Serialize)]
struct Outgoing<'a, P> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    method: &'a str,
    params: &'a P,
}

async fn write_loop(
    shared: Arc<Shared>,
    mut stdin: ServerInput,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    uri_map: Option<UriMap>,
) {
    loop {
        tokio::select! {
            body = rx.recv() => {
                let Some(body) = body else { return };
                let body = match &uri_map {
                    Some(map) => map.outgoing(body),
                    None => body,
                };
                let frame = content_length::encode(&body);
                if stdin.write_all(&frame).await.and(stdin.flush().await).is_err() {
                    let err = shared.exited().await;
                    shared.die(err);
                    return;
                }
            }
            () = shared.dead.cancelled() => return,
        }
    }
}

async fn read_loop(
    shared: Arc<Shared>,
    info: ClientInfo,
    mut frames: AsyncFrames<ServerOutput, ContentLengthDecoder>,
    out: mpsc::UnboundedSender<Vec<u8>>,
) {
    let protocol = |detail: String| LspHostError::Protocol { id: info.server_id.clone(), detail };
    loop {
        let body = match frames.next_frame().await {
            Ok(Some(Frame::Body(body))) => body,
            Ok(Some(Frame::Oversized(len))) => {
                // Not produced under LimitPolicy::Fail; treated as the violation it is.
                shared.die(protocol(format!("an oversized {len}-byte message")));
                return;
            }
            Ok(None)
            | Err(ReadError::Io(_))
            | Err(ReadError::Frame(
                toolhost_jsonrpc::FrameError::EndedInBody { .. }
                | toolhost_jsonrpc::FrameError::EndedInHeader,
            )) => {
                let err = shared.exited().await;
                shared.die(err);
                return;
            }
            Err(err) => {
                shared.die(protocol(err.to_string()));
                return;
            }
        };
        let body = match &info.uri_map {
            Some(map) => map.incoming(body),
            None => body,
        };
        let message: Value = match serde_json::from_slice(&body) {
            Ok(Value::Object(map)) => Value::Object(map),
            Ok(_) => {
                shared.die(protocol("a message that is not a JSON object".to_owned()));
                return;
            }
            Err(err) => {
                shared.die(protocol(format!("invalid JSON: {err}")));
                return;
            }
        };
        match (message.get("method").and_then(Value::as_str), message.get("id")) {
            (Some(method), Some(id)) => {
                if let Ok(mut watchers) = shared.watchers.lock() {
                    match method {
                        "client/registerCapability" => {
                            watchers.register(message.get("params"));
                        }
                        "client/unregisterCapability" => watchers.unregister(message.get("params")),
                        _ => {}
                    }
                }
                let reply = answer_server_request(&info, method, message.get("params"));
                let mut response = json!({"jsonrpc": "2.0", "id": id});
                match reply {
                    Ok(result) => response["result"] = result,
                    Err((code, text)) => {
                        response["error"] = json!({"code": code, "message": text});
                    }
                }
                if let Ok(body) = serde_json::to_vec(&response) {
                    let _ = out.send(body);
                }
            }
            (Some(method), None) => {
                // Notifications are ignored, except for noticing the readiness marker
                // (`showMessage` has the same params as `logMessage`).
                if let Some(marker) = &info.ready_message
                    && matches!(method, "window/logMessage" | "window/showMessage")
                    && message
                        .get("params")
                        .and_then(|p| LogMessageParams::deserialize(p).ok())
                        .is_some_and(|log| log.message.contains(marker.as_str()))
                {
                    shared.ready.cancel();
                }
            }
            (None, Some(id)) => {
                let Some(id) = id.as_u64() else { continue };
                let waiter = shared.pending.lock().ok().and_then(|mut p| p.remove(&id));
                if let Some(tx) = waiter {
                    let reply = match message.get("error") {
                        Some(error) if !error.is_null() => Err(LspHostError::Rpc {
                            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                            message: error
                                .get("message")
                                .and_then(Value::as_str)
                                .unwrap_or("language server error")
                                .to_owned(),
                        }),
                        _ => Ok(message.get("result").cloned()),
                    };
                    let _ = tx.send(reply);
                }
            }
            (None, None) => {}
        }
    }
}

/// The answer to a server→client request: a result or a JSON-RPC error.
fn answer_server_request(
    info: &ClientInfo,
    method: &str,
    params: Option<&Value>,
) -> Result<Value, (i64, String)> {
    match method {
        "workspace/configuration" => {
            // One answer per item, in order: an item we cannot read gets `null` (nothing set).
            let items = params.and_then(|p| p.get("items")).and_then(Value::as_array);
            let answers = items.map_or_else(Vec::new, |items| {
                items
                    .iter()
                    .map(|item| match ConfigurationItem::deserialize(item) {
                        Ok(item) => configuration_section(&info.settings, item.section.as_deref()),
                        Err(_) => Value::Null,
                    })
                    .collect()
            });
            Ok(Value::Array(answers))
        }
        "client/registerCapability"
        | "client/unregisterCapability"
        | "window/workDoneProgress/create" => Ok(Value::Null),
        "workspace/workspaceFolders" => serde_json::to_value([&info.folder])
            .map_err(|e| (-32603, format!("cannot encode the workspace folders: {e}"))),
        other => Err((-32601, format!("method not found: {other}"))),
    }
}

/// One `workspace/configuration` item: the settings under a dotted `section` (`python.analysis`),
/// the whole settings without one, `null` where nothing is configured (what VS Code and Neovim
/// answer).
fn configuration_section(settings: &Value, section: Option<&str>) -> Value {
    let Some(section) = section.filter(|s| !s.is_empty()) else {
        return settings.clone();
    };
    let mut node = settings;
    for key in section.split('.') {
        match node.get(key) {
            Some(next) => node = next,
            None => return Value::Null,
        }
    }
    node.clone()
}

async fn drain_stderr(shared: Arc<Shared>, mut stderr: ServerOutput) {
    let mut chunk = vec![0u8; 8192];
    loop {
        match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Ok(mut tail) = shared.stderr.lock() {
                    tail.extend_from_slice(&chunk[..n]);
                    if tail.len() > STDERR_TAIL_BYTES {
                        let cut = tail.len() - STDERR_TAIL_BYTES;
                        tail.drain(..cut);
                    }
                }
            }
        }
    }
    shared.stderr_done.cancel();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn server_requests_are_answered() {
        let info = ClientInfo {
            server_id: "s".into(),
            folder: crate::shapes::workspace_folder(
                gen_lsp_types::Uri::parse("file:///w").unwrap(),
            ),
            settings: json!({"python": {"analysis": {"typeCheckingMode": "strict"}}, "a": 1}),
            ready_message: None,
            uri_map: None,
        };
        let items = json!({"items": [
            {"section": "python.analysis"},
            {"section": "python.analysis.typeCheckingMode"},
            {"section": "missing"},
            {"section": "python.missing.deeper"},
            {"scopeUri": "file:///w/a.py"},
        ]});
        assert_eq!(
            answer_server_request(&info, "workspace/configuration", Some(&items)),
            Ok(json!([
                {"typeCheckingMode": "strict"},
                "strict",
                null,
                null,
                {"python": {"analysis": {"typeCheckingMode": "strict"}}, "a": 1},
            ]))
        );
        let unset = ClientInfo { settings: Value::Null, ..info.clone() };
        assert_eq!(
            answer_server_request(&unset, "workspace/configuration", Some(&items)),
            Ok(json!([null, null, null, null, null]))
        );
        assert_eq!(
            answer_server_request(&info, "client/registerCapability", None),
            Ok(Value::Null)
        );
        assert_eq!(
            answer_server_request(&info, "workspace/workspaceFolders", None),
            Ok(json!([{"uri": "file:///w", "name": "workspace"}]))
        );
        assert_eq!(
            answer_server_request(&info, "workspace/applyEdit", None).unwrap_err().0,
            -32601
        );
    }
}
