//! The host's end of a world: starts the exec-server ([`Launch`]), says hello, sends requests and
//! routes the answers to their callers. A connection that drops fails every request in flight
//! with `WORLD_DISCONNECTED` (naming what the launcher printed, e.g. ssh's reason); the next
//! request starts a new connection. Bytes each way are counted, for the overhead figures.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolhost_jsonrpc::message::{self, Incoming};
use toolhost_jsonrpc::{AsyncFrames, ErrorObject, Frame, Id, LimitPolicy, LineDecoder, LineLimits};
use toolhost_process::ChildGroup;
use toolhost_protocol::world::{
    ExitedParams, GlobParams, GlobResult, GrepParams, GrepResult, HelloParams, HelloResult,
    ListResult, OutputParams, OutputStream, PathParams, ProcessRef, ReadParams, ReadResult,
    ReplaceParams, ReplaceResult, ResolveResult, RunParams, RunResult, SignalParams, SpawnParams,
    SpawnResult, TerminalStateResult, WORLD_ERROR_CODE, WORLD_PROTOCOL_VERSION, WorldErrorData,
    WriteParams, methods,
};

use crate::error::WorldError;
use crate::launch::Launch;
use crate::serve::MAX_MESSAGE_BYTES;

/// How much of the launcher's stderr is kept to explain a lost connection.
const STDERR_TAIL: usize = 4 << 10;

type Reply = Result<Value, ErrorObject>;

/// What a spawned process reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcessEvent {
    Output(OutputStream, Vec<u8>),
    /// The last event: it ended (after all its output).
    Exited {
        exit_code: Option<i32>,
        signal: Option<i32>,
    },
}

/// A process spawned in the world; its events end with `Exited`, or with `None` when the
/// connection was lost first.
pub struct RemoteProcess {
    pub id: u64,
    /// Its pid in the world.
    pub pid: Option<u32>,
    events: mpsc::UnboundedReceiver<ProcessEvent>,
}

impl RemoteProcess {
    pub async fn next(&mut self) -> Option<ProcessEvent> {
        self.events.recv().await
    }
}

/// The events of one process: created by whichever comes first, its first notification or the
/// answer to its spawn, so output that overtakes the answer is kept.
struct Stream {
    tx: Option<mpsc::UnboundedSender<ProcessEvent>>,
    rx: Option<mpsc::UnboundedReceiver<ProcessEvent>>,
    exited: bool,
}

impl Stream {
    fn open() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Stream { tx: Some(tx), rx: Some(rx), exited: false }
    }
}

type Streams = Arc<Mutex<HashMap<u64, Stream>>>;

fn route_event(streams: &Streams, method: &str, params: Option<Value>) {
    let params = params.unwrap_or(Value::Null);
    let mut streams = streams.lock().unwrap_or_else(PoisonError::into_inner);
    match method {
        methods::OUTPUT => {
            let Ok(output) = serde_json::from_value::<OutputParams>(params) else { return };
            let Ok(bytes) = BASE64.decode(&output.data) else { return };
            let stream = streams.entry(output.process_id).or_insert_with(Stream::open);
            if let Some(tx) = &stream.tx {
                let _ = tx.send(ProcessEvent::Output(output.stream, bytes));
            }
        }
        methods::EXITED => {
            let Ok(exited) = serde_json::from_value::<ExitedParams>(params) else { return };
            let stream = streams.entry(exited.process_id).or_insert_with(Stream::open);
            if let Some(tx) = stream.tx.take() {
                let _ = tx.send(ProcessEvent::Exited {
                    exit_code: exited.exit_code,
                    signal: exited.signal,
                });
            }
            stream.exited = true;
            if stream.rx.is_none() {
                streams.remove(&exited.process_id);
            }
        }
        _ => {}
    }
}

/// Bytes and requests so far, over every connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    pub requests: u64,
    pub sent: u64,
    pub received: u64,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    sent: AtomicU64,
    received: AtomicU64,
}

struct Connection {
    out: mpsc::UnboundedSender<Vec<u8>>,
    pending: Arc<Mutex<HashMap<i64, oneshot::Sender<Reply>>>>,
    streams: Streams,
    next_id: AtomicI64,
    /// Fired when the exec-server's output ended.
    lost: CancellationToken,
    /// What the launcher printed last (ssh's reason for a dropped connection).
    stderr: Arc<Mutex<Vec<u8>>>,
    group: ChildGroup,
    hello: HelloResult,
}

impl Connection {
    fn why_lost(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        let text = String::from_utf8_lossy(&tail).trim().to_owned();
        if text.is_empty() { "the exec-server's output ended".to_owned() } else { text }
    }
}

/// A connection (made on first use, and again after it dropped) to one world. Call
/// [`WorldClient::disconnect`] when done: it removes what the launch left (a container).
pub struct WorldClient {
    launch: Launch,
    connection: tokio::sync::Mutex<Option<Arc<Connection>>>,
    counters: Arc<Counters>,
    /// A launch was made since the last cleanup (so dropping the client cleans up).
    launched: std::sync::atomic::AtomicBool,
    /// The launch's provisioning was done (once per client).
    provisioned: std::sync::atomic::AtomicBool,
    /// How many times the binary had to be copied to the host.
    copies: AtomicU64,
}

impl Drop for WorldClient {
    /// A client dropped without [`WorldClient::disconnect`] still removes what its launch left.
    fn drop(&mut self) {
        if !self.launched.load(Ordering::Relaxed) {
            return;
        }
        if let Some((program, args)) = self.launch.cleanup().and_then(|c| c.split_first()) {
            let _ = std::process::Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

impl WorldClient {
    pub fn new(launch: Launch) -> Self {
        WorldClient {
            launch,
            connection: tokio::sync::Mutex::new(None),
            counters: Arc::default(),
            launched: std::sync::atomic::AtomicBool::new(false),
            provisioned: std::sync::atomic::AtomicBool::new(false),
            copies: AtomicU64::new(0),
        }
    }

    /// How many times this client copied toolhost to its host.
    pub fn copies(&self) -> u64 {
        self.copies.load(Ordering::Relaxed)
    }

    /// Requests and bytes so far.
    pub fn traffic(&self) -> Traffic {
        Traffic {
            requests: self.counters.requests.load(Ordering::Relaxed),
            sent: self.counters.sent.load(Ordering::Relaxed),
            received: self.counters.received.load(Ordering::Relaxed),
        }
    }

    /// The exec-server's hello (connecting if need be).
    pub async fn hello(&self) -> Result<HelloResult, WorldError> {
        Ok(self.connected().await?.hello.clone())
    }

    /// Ends the connection (and the launcher with its exec-server, and what the launch left,
    /// e.g. the container); the next request reconnects.
    pub async fn disconnect(&self) {
        if let Some(connection) = self.connection.lock().await.take() {
            connection.group.terminate(std::time::Duration::from_millis(500)).await;
        }
        self.clean_up().await;
    }

    /// Runs the launch's cleanup (bounded; a failure is only logged: there may be nothing left).
    async fn clean_up(&self) {
        let Some((program, args)) = self.launch.cleanup().and_then(|c| c.split_first()) else {
            return;
        };
        self.launched.store(false, Ordering::Relaxed);
        let mut command = tokio::process::Command::new(program);
        command.args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        let Ok(group) = toolhost_process::spawn(command, toolhost_process::SpawnOptions::default())
        else {
            tracing::warn!("cannot run {program} to clean up the execution world");
            return;
        };
        if tokio::time::timeout(std::time::Duration::from_secs(30), group.wait()).await.is_err() {
            group.terminate(std::time::Duration::from_millis(500)).await;
        }
    }

    /// The launcher's process group id while connected (tests cut the connection with it).
    pub async fn launcher_pid(&self) -> Option<u32> {
        let connection = self.connection.lock().await;
        connection.as_ref().filter(|c| !c.lost.is_cancelled()).map(|c| c.group.id())
    }

    async fn connected(&self) -> Result<Arc<Connection>, WorldError> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref()
            && !connection.lost.is_cancelled()
        {
            return Ok(Arc::clone(connection));
        }
        if let Some(old) = slot.take() {
            old.group.kill();
            // A container of the lost connection may still hold its name.
            self.clean_up().await;
        }
        let connection = Arc::new(self.connect().await?);
        *slot = Some(Arc::clone(&connection));
        Ok(connection)
    }

    async fn connect(&self) -> Result<Connection, WorldError> {
        if let Some(provision) = self.launch.provision()
            && !self.provisioned.load(Ordering::Relaxed)
        {
            if crate::provision::provision(provision).await? {
                self.copies.fetch_add(1, Ordering::Relaxed);
            }
            self.provisioned.store(true, Ordering::Relaxed);
        }
        let argv = self.launch.argv();
        let Some((program, args)) = argv.split_first() else {
            return Err(WorldError::Unreachable("no command starts the exec-server".to_owned()));
        };
        let mut command = tokio::process::Command::new(program);
        command.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        self.launched.store(true, Ordering::Relaxed);
        let mut group = toolhost_process::spawn(command, toolhost_process::SpawnOptions::default())
            .map_err(|e| WorldError::Unreachable(format!("cannot start {program}: {e}")))?;
        let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
            (group.take_stdin(), group.take_stdout(), group.take_stderr())
        else {
            return Err(WorldError::Unreachable(format!("{program} has no pipes")));
        };
        let (out, mut outgoing) = mpsc::unbounded_channel::<Vec<u8>>();
        let counters = Arc::clone(&self.counters);
        tokio::spawn(async move {
            while let Some(mut body) = outgoing.recv().await {
                body.push(b'\n');
                counters.sent.fetch_add(body.len() as u64, Ordering::Relaxed);
                if stdin.write_all(&body).await.is_err() || stdin.flush().await.is_err() {
                    return;
                }
            }
        });
        let stderr_tail: Arc<Mutex<Vec<u8>>> = Arc::default();
        let stderr_done = CancellationToken::new();
        {
            let (tail, done) = (Arc::clone(&stderr_tail), stderr_done.clone());
            tokio::spawn(async move {
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = stderr.read(&mut chunk).await {
                    let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                    tail.extend_from_slice(&chunk[..n]);
                    let excess = tail.len().saturating_sub(STDERR_TAIL);
                    tail.drain(..excess);
                }
                done.cancel();
            });
        }
        let pending: Arc<Mutex<HashMap<i64, oneshot::Sender<Reply>>>> = Arc::default();
        let streams: Streams = Arc::default();
        let lost = CancellationToken::new();
        {
            let (pending, lost, counters, streams) = (
                Arc::clone(&pending),
                lost.clone(),
                Arc::clone(&self.counters),
                Arc::clone(&streams),
            );
            let decoder =
                LineDecoder::new(LineLimits { max_line: MAX_MESSAGE_BYTES }, LimitPolicy::Fail);
            let mut frames = AsyncFrames::new(stdout, decoder);
            tokio::spawn(async move {
                while let Ok(Some(Frame::Body(body))) = frames.next_frame().await {
                    counters.received.fetch_add(body.len() as u64 + 1, Ordering::Relaxed);
                    let response = match message::parse(&body) {
                        Ok(Incoming::Response(response)) => response,
                        Ok(Incoming::Notification(note)) => {
                            route_event(&streams, &note.method, note.params);
                            continue;
                        }
                        _ => continue,
                    };
                    let Some(id) = response.id.as_i64() else { continue };
                    let waiter = pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(response.result);
                    }
                }
                // Let the launcher's last words arrive before the waiters are told (bounded:
                // a launcher whose stderr stays open after its stdout closed is not waited for).
                let _ = tokio::time::timeout(
                    std::time::Duration::from_millis(500),
                    stderr_done.cancelled(),
                )
                .await;
                lost.cancel();
                pending.lock().unwrap_or_else(PoisonError::into_inner).clear();
                // Processes of a lost connection end their events without `Exited`.
                for stream in streams.lock().unwrap_or_else(PoisonError::into_inner).values_mut() {
                    stream.tx = None;
                }
            });
        }
        let mut connection = Connection {
            out,
            pending,
            streams,
            next_id: AtomicI64::new(1),
            lost,
            stderr: stderr_tail,
            group,
            hello: HelloResult {
                version: String::new(),
                toolhost: String::new(),
                root: String::new(),
            },
        };
        let hello = HelloParams { version: WORLD_PROTOCOL_VERSION.to_owned() };
        let answer =
            send(&connection, &self.counters, methods::HELLO, &hello, &CancellationToken::new())
                .await
                .map_err(|err| match err {
                    WorldError::Disconnected(why) => WorldError::Unreachable(why),
                    other => other,
                })?;
        let hello: HelloResult = decode(answer)?;
        let major = |v: &str| v.split('.').next().unwrap_or_default().to_owned();
        if major(&hello.version) != major(WORLD_PROTOCOL_VERSION) {
            return Err(WorldError::Version {
                server: hello.version,
                client: WORLD_PROTOCOL_VERSION.to_owned(),
            });
        }
        connection.hello = hello;
        Ok(connection)
    }

    /// Sends `method` and awaits its answer; `cancel` withdraws it.
    pub async fn request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        cancel: &CancellationToken,
    ) -> Result<R, WorldError> {
        let connection = self.connected().await?;
        decode(send(&connection, &self.counters, method, params, cancel).await?)
    }

    /// Where `path` leads in the world.
    pub async fn resolve(&self, path: &str) -> Result<ResolveResult, WorldError> {
        let params = PathParams { path: path.to_owned() };
        self.request(methods::RESOLVE, &params, &CancellationToken::new()).await
    }

    /// A file's bytes and version (`None`: it does not exist).
    pub async fn read(
        &self,
        path: &str,
        max_bytes: Option<u64>,
    ) -> Result<Option<(Vec<u8>, String)>, WorldError> {
        let params = ReadParams { path: path.to_owned(), max_bytes };
        let read: ReadResult =
            self.request(methods::READ, &params, &CancellationToken::new()).await?;
        match (read.data, read.version) {
            (Some(data), Some(version)) => {
                let bytes = BASE64.decode(data).map_err(|e| WorldError::Protocol(e.to_string()))?;
                Ok(Some((bytes, version)))
            }
            _ => Ok(None),
        }
    }

    /// Replaces (or, with `None`, removes) a file that must have version `expected` now.
    pub async fn replace(
        &self,
        path: &str,
        expected: Option<&str>,
        data: Option<&[u8]>,
    ) -> Result<ReplaceResult, WorldError> {
        let params = ReplaceParams {
            path: path.to_owned(),
            expected_version: expected.map(str::to_owned),
            data: data.map(|d| BASE64.encode(d)),
        };
        self.request(methods::REPLACE, &params, &CancellationToken::new()).await
    }

    /// A folder's entries.
    pub async fn list(&self, path: &str) -> Result<ListResult, WorldError> {
        let params = PathParams { path: path.to_owned() };
        self.request(methods::LIST, &params, &CancellationToken::new()).await
    }

    /// Files matching `pattern`, run where the files are.
    pub async fn glob(&self, params: &GlobParams) -> Result<GlobResult, WorldError> {
        self.request(methods::GLOB, params, &CancellationToken::new()).await
    }

    /// Lines matching `pattern`, run where the files are.
    pub async fn grep(&self, params: &GrepParams) -> Result<GrepResult, WorldError> {
        self.request(methods::GREP, params, &CancellationToken::new()).await
    }

    /// Starts a process group in the world; its output and end arrive as [`ProcessEvent`]s.
    pub async fn spawn(&self, params: &SpawnParams) -> Result<RemoteProcess, WorldError> {
        let connection = self.connected().await?;
        let answer =
            send(&connection, &self.counters, methods::SPAWN, params, &CancellationToken::new())
                .await?;
        let SpawnResult { process_id, pid } = decode(answer)?;
        let mut streams = connection.streams.lock().unwrap_or_else(PoisonError::into_inner);
        let stream = streams.entry(process_id).or_insert_with(Stream::open);
        let events = stream
            .rx
            .take()
            .ok_or_else(|| WorldError::Protocol(format!("process {process_id} spawned twice")))?;
        if stream.exited || connection.lost.is_cancelled() {
            streams.remove(&process_id);
        }
        Ok(RemoteProcess { id: process_id, pid, events })
    }

    /// Writes `data` to a spawned process's stdin (then closes it, with `close`).
    pub async fn write(&self, process_id: u64, data: &[u8], close: bool) -> Result<(), WorldError> {
        let params = WriteParams { process_id, data: BASE64.encode(data), close };
        let _: Value = self.request(methods::WRITE, &params, &CancellationToken::new()).await?;
        Ok(())
    }

    /// Signals a spawned process's group (`INT`, `TERM`, `KILL`, `HUP`, `QUIT`).
    pub async fn signal(&self, process_id: u64, signal: &str) -> Result<(), WorldError> {
        let params = SignalParams { process_id, signal: signal.to_owned(), foreground: false };
        let _: Value = self.request(methods::SIGNAL, &params, &CancellationToken::new()).await?;
        Ok(())
    }

    /// Signals the foreground group of a terminal process (spawned with `pty`); which group.
    pub async fn signal_foreground(
        &self,
        process_id: u64,
        signal: &str,
    ) -> Result<Option<i32>, WorldError> {
        let params = SignalParams { process_id, signal: signal.to_owned(), foreground: true };
        let answer: Value =
            self.request(methods::SIGNAL, &params, &CancellationToken::new()).await?;
        Ok(answer.get("pgid").and_then(Value::as_i64).and_then(|p| i32::try_from(p).ok()))
    }

    /// What the foreground program of a terminal process does.
    pub async fn terminal_state(&self, process_id: u64) -> Result<TerminalStateResult, WorldError> {
        let params = ProcessRef { process_id };
        self.request(methods::TERMINAL, &params, &CancellationToken::new()).await
    }

    /// Runs a process group in the world to its end.
    pub async fn run(
        &self,
        params: &RunParams,
        cancel: &CancellationToken,
    ) -> Result<RunResult, WorldError> {
        self.request(methods::RUN, params, cancel).await
    }
}

async fn send<P: Serialize>(
    connection: &Connection,
    counters: &Counters,
    method: &str,
    params: &P,
    cancel: &CancellationToken,
) -> Result<Value, WorldError> {
    let id = connection.next_id.fetch_add(1, Ordering::Relaxed);
    let body = message::encode_request(&Id::Number(id), method, params)
        .map_err(|e| WorldError::Protocol(format!("cannot encode {method}: {e}")))?;
    let (tx, rx) = oneshot::channel();
    connection.pending.lock().unwrap_or_else(PoisonError::into_inner).insert(id, tx);
    counters.requests.fetch_add(1, Ordering::Relaxed);
    if connection.lost.is_cancelled() || connection.out.send(body).is_err() {
        connection.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        return Err(WorldError::Disconnected(connection.why_lost()));
    }
    let reply = tokio::select! {
        reply = rx => reply,
        () = cancel.cancelled() => {
            connection.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
            if let Ok(body) = message::encode_notification("$/cancelRequest", &json!({"id": id})) {
                let _ = connection.out.send(body);
            }
            return Err(WorldError::Cancelled);
        }
    };
    match reply {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => {
            let data = (error.code == WORLD_ERROR_CODE)
                .then(|| {
                    error
                        .data
                        .clone()
                        .and_then(|d| serde_json::from_value::<WorldErrorData>(d).ok())
                })
                .flatten();
            Err(match data {
                Some(data) => WorldError::remote(error.message, Some(data)),
                None => WorldError::Remote {
                    code: format!("JSONRPC_{}", error.code),
                    message: error.message,
                    path: None,
                    size: None,
                },
            })
        }
        // The reader dropped every waiter: the connection ended.
        Err(_) => Err(WorldError::Disconnected(connection.why_lost())),
    }
}

/// The bytes a base64 field of an answer carries (a `RunResult`'s stdout, say).
pub fn bytes_of(field: &str) -> Result<Vec<u8>, WorldError> {
    BASE64.decode(field).map_err(|e| WorldError::Protocol(format!("not base64: {e}")))
}

fn decode<R: DeserializeOwned>(value: Value) -> Result<R, WorldError> {
    serde_json::from_value(value).map_err(|e| WorldError::Protocol(e.to_string()))
}
