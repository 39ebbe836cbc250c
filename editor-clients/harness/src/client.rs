//! A headless LSP client of `toolhost serve` over stdio: the handshake, requests with timeouts,
//! notifications, answers to server→client requests, and collected `toolhost/card` notifications.
//! Synchronous on purpose (a reader thread and channels), so any test or tool can drive it.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_jsonrpc::content_length::{self, ContentLengthDecoder, FrameLimits};
use toolhost_jsonrpc::{BlockingFrames, Frame, LimitPolicy};

/// Answers a server→client request: `(method, params) -> result`.
pub type RequestHandler = Arc<dyn Fn(&str, &Value) -> Result<Value, (i64, String)> + Send + Sync>;

/// A handler's error code meaning "do not answer this request" (a person who never decides).
pub const NO_REPLY: i64 = i64::MIN;

/// Errors of the client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot start {0}: {1}")]
    Spawn(String, std::io::Error),
    #[error("the server connection is closed")]
    Closed,
    #[error("no response to {method} within {timeout:?}")]
    Timeout { method: String, timeout: Duration },
    #[error("{method} failed: {code} {message}")]
    Rpc { method: String, code: i64, message: String },
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

type Pending = Arc<Mutex<HashMap<i64, Sender<Value>>>>;

/// A running server and the connection to it.
pub struct Client {
    child: Child,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    pending: Pending,
    notifications: Receiver<Value>,
    next_id: i64,
    /// Every notification seen so far (cards included).
    pub seen: Vec<Value>,
    pub timeout: Duration,
}

fn write_message(stdin: &Mutex<Option<ChildStdin>>, body: &Value) -> std::io::Result<()> {
    write_bytes(stdin, &content_length::encode(body.to_string().as_bytes()))
}

fn write_bytes(stdin: &Mutex<Option<ChildStdin>>, bytes: &[u8]) -> std::io::Result<()> {
    let mut guard = stdin.lock().map_err(|_| std::io::Error::other("stdin lock poisoned"))?;
    let pipe = guard
        .as_mut()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdin closed"))?;
    pipe.write_all(bytes)?;
    pipe.flush()
}

/// The framed messages of a server's output, parsed; ends at the end of the stream or at the
/// first frame that is not usable JSON.
pub fn messages(reader: impl Read) -> impl Iterator<Item = Value> {
    // The server's own frames: trusted framing, any size a test may produce.
    let decoder = ContentLengthDecoder::new(FrameLimits::child(usize::MAX), LimitPolicy::Fail);
    let mut frames = BlockingFrames::new(reader, decoder);
    std::iter::from_fn(move || match frames.next_frame() {
        Ok(Some(Frame::Body(body))) => serde_json::from_slice(&body).ok(),
        _ => None,
    })
}

impl Client {
    /// Starts `toolhost serve` (binary `bin`) in `cwd` with extra args and env.
    pub fn spawn(
        bin: &Path,
        cwd: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        handler: RequestHandler,
    ) -> Result<Self, ClientError> {
        let mut cmd = Command::new(bin);
        cmd.arg("serve")
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child =
            cmd.spawn().map_err(|e| ClientError::Spawn(bin.display().to_string(), e))?;
        let stdin = Arc::new(Mutex::new(Some(child.stdin.take().ok_or(ClientError::Closed)?)));
        let stdout = child.stdout.take().ok_or(ClientError::Closed)?;
        let pending: Pending = Arc::default();
        let (note_tx, note_rx) = channel();
        {
            let (pending, stdin) = (Arc::clone(&pending), Arc::clone(&stdin));
            std::thread::spawn(move || {
                for message in messages(stdout) {
                    let method = message.get("method").and_then(Value::as_str).map(str::to_owned);
                    match (method, message.get("id").cloned()) {
                        (Some(method), Some(id)) => {
                            let params = message.get("params").cloned().unwrap_or(Value::Null);
                            let reply = match handler(&method, &params) {
                                Err((NO_REPLY, _)) => continue,
                                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                                Err((code, msg)) => {
                                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": msg}})
                                }
                            };
                            let _ = write_message(&stdin, &reply);
                        }
                        (Some(_), None) => {
                            let _ = note_tx.send(message);
                        }
                        (None, Some(id)) => {
                            let waiter =
                                id.as_i64().and_then(|id| pending.lock().ok()?.remove(&id));
                            match waiter {
                                Some(tx) => {
                                    let _ = tx.send(message);
                                }
                                None => {
                                    let _ = note_tx.send(message);
                                }
                            }
                        }
                        (None, None) => {}
                    }
                }
            });
        }
        Ok(Client {
            child,
            stdin,
            pending,
            notifications: note_rx,
            next_id: 1,
            seen: Vec::new(),
            timeout: Duration::from_secs(30),
        })
    }

    /// A handler that refuses every server→client request with -32601.
    pub fn no_handler() -> RequestHandler {
        Arc::new(|method, _| Err((-32601, format!("unhandled method {method}"))))
    }

    /// Sends a request and returns its raw response message.
    pub fn request_raw(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let (tx, rx) = channel();
        self.pending.lock().map_err(|_| ClientError::Closed)?.insert(id, tx);
        write_message(
            &self.stdin,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )?;
        let deadline = Instant::now() + self.timeout;
        loop {
            self.drain_notifications();
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(message) => {
                    self.drain_notifications();
                    return Ok(message);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(ClientError::Closed);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if Instant::now() > deadline => {
                    return Err(ClientError::Timeout {
                        method: method.to_owned(),
                        timeout: self.timeout,
                    });
                }
                Err(_) => {}
            }
        }
    }

    /// Sends a request and returns its result (an error response is an error).
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let message = self.request_raw(method, params)?;
        if let Some(error) = message.get("error") {
            return Err(ClientError::Rpc {
                method: method.to_owned(),
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error.get("message").and_then(Value::as_str).unwrap_or("").to_owned(),
            });
        }
        Ok(message.get("result").cloned().unwrap_or(Value::Null))
    }

    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), ClientError> {
        write_message(&self.stdin, &json!({"jsonrpc": "2.0", "method": method, "params": params}))?;
        Ok(())
    }

    /// Writes raw bytes to the server (malformed-input tests).
    pub fn write_raw(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        write_bytes(&self.stdin, bytes)?;
        Ok(())
    }

    fn drain_notifications(&mut self) {
        while let Ok(note) = self.notifications.try_recv() {
            self.seen.push(note);
        }
    }

    /// Waits until a notification matching `pred` was seen (or the timeout passes).
    pub fn wait_for(&mut self, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            self.drain_notifications();
            if let Some(found) = self.seen.iter().find(|n| pred(n)) {
                return Some(found.clone());
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// `initialize` + `initialized` for a workspace root; returns the initialize result.
    pub fn initialize(
        &mut self,
        root: &Path,
        init_options: Value,
        capabilities: Value,
    ) -> Result<Value, ClientError> {
        let uri = format!("file://{}", root.display());
        let result = self.request(
            "initialize",
            json!({
                "processId": std::process::id(),
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "workspace"}],
                "capabilities": capabilities,
                "initializationOptions": init_options,
            }),
        )?;
        self.notify("initialized", json!({}))?;
        Ok(result)
    }

    /// `toolhost/callTool`; returns `{sessionId, callId, result, card}`.
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Result<Value, ClientError> {
        self.request("toolhost/callTool", json!({"name": name, "arguments": arguments}))
    }

    /// `shutdown` + `exit`, then waits for the process (at most 5 s).
    pub fn shutdown(mut self) -> Result<Option<ExitStatus>, ClientError> {
        let _ = self.request("shutdown", Value::Null);
        let _ = self.notify("exit", Value::Null);
        self.wait(Duration::from_secs(5))
    }

    /// Waits for the process to exit.
    pub fn wait(&mut self, timeout: Duration) -> Result<Option<ExitStatus>, ClientError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() > deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Closes the server's stdin (as a dying editor would).
    pub fn close_stdin(&mut self) {
        if let Ok(mut guard) = self.stdin.lock() {
            guard.take();
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
