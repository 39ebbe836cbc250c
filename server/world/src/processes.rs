//! Spawned processes of one connection (`process/spawn`, `process/write`, `process/signal`):
//! each a process group whose stdout and stderr stream back as `process/output` notifications
//! and whose end is `process/exited`, sent after all its output. Output waits for the client:
//! at most [`IN_FLIGHT_BYTES`] of it are queued for the connection, then the process's pipes
//! fill and it blocks, so a chatty program cannot grow the server's memory. Every group still
//! alive when the connection ends is killed.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdin;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use toolhost_jsonrpc::ErrorObject;
use toolhost_jsonrpc::message;
use toolhost_process::{GroupHandle, Signal};
use toolhost_protocol::world::{
    ExitedParams, OutputParams, OutputStream, SignalParams, SpawnParams, SpawnResult, WriteParams,
    methods,
};

use crate::handlers::world_error;

/// Bytes of output queued for the client, per connection, before processes are held up.
pub const IN_FLIGHT_BYTES: usize = 8 << 20;
/// The largest piece of output in one notification.
const CHUNK: usize = 64 << 10;

/// A message for the connection's writer; the permit, if any, is given back once it is written.
pub(crate) struct Outgoing {
    pub body: Vec<u8>,
    pub _permit: Option<OwnedSemaphorePermit>,
}

impl Outgoing {
    pub fn new(body: Vec<u8>) -> Self {
        Outgoing { body, _permit: None }
    }
}

pub(crate) type Out = mpsc::UnboundedSender<Outgoing>;

struct Live {
    group: GroupHandle,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
}

/// The spawned processes of one connection.
pub(crate) struct Processes {
    next: AtomicU64,
    live: Mutex<HashMap<u64, Live>>,
    budget: Arc<Semaphore>,
    out: Out,
}

fn unknown(id: u64) -> ErrorObject {
    world_error("PROCESS_UNKNOWN", format!("no process {id} (it ended, or never was)"), None)
}

impl Processes {
    pub fn new(out: Out) -> Arc<Self> {
        Arc::new(Processes {
            next: AtomicU64::new(1),
            live: Mutex::default(),
            budget: Arc::new(Semaphore::new(IN_FLIGHT_BYTES)),
            out,
        })
    }

    fn notify<P: Serialize>(&self, method: &str, params: &P, permit: Option<OwnedSemaphorePermit>) {
        if let Ok(body) = message::encode_notification(method, params) {
            let _ = self.out.send(Outgoing { body, _permit: permit });
        }
    }

    /// Starts `params.argv` in `cwd` (already confined by the caller).
    pub fn spawn(self: &Arc<Self>, params: SpawnParams, cwd: &Path) -> Result<Value, ErrorObject> {
        let options = toolhost_process::SpawnOptions {
            kill_group_with_leader: params.kill_group_with_leader,
        };
        let (mut group, stdout, stderr) =
            crate::run::start(&params.argv, cwd, Stdio::piped(), &params.env, options)?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let stdin = Arc::new(tokio::sync::Mutex::new(group.take_stdin()));
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, Live { group: group.handle(), stdin });
        let processes = Arc::clone(self);
        tokio::spawn(async move {
            tokio::join!(
                processes.forward(id, OutputStream::Stdout, stdout),
                processes.forward(id, OutputStream::Stderr, stderr),
            );
            let status = group.wait().await;
            use std::os::unix::process::ExitStatusExt;
            let exited = ExitedParams {
                process_id: id,
                exit_code: status.and_then(|s| s.code()),
                signal: status.and_then(|s| s.signal()),
            };
            // Said before the group is cleaned up: the client waits for the leader, and
            // reaping what it left behind may take the monitor a while.
            processes.notify(methods::EXITED, &exited, None);
            // Helpers the leader left in its group go with it.
            group.terminate(std::time::Duration::from_millis(500)).await;
            processes.live.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        });
        serde_json::to_value(SpawnResult { process_id: id })
            .map_err(|e| ErrorObject::internal(e.to_string()))
    }

    async fn forward(&self, id: u64, stream: OutputStream, mut pipe: impl AsyncRead + Unpin) {
        let mut chunk = vec![0u8; CHUNK];
        loop {
            let n = match pipe.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            // Base64 grows the bytes by a third; the permit covers what is queued.
            let cost = u32::try_from(n.div_ceil(3) * 4 + 128).unwrap_or(u32::MAX);
            let Ok(permit) = Arc::clone(&self.budget).acquire_many_owned(cost).await else {
                return;
            };
            let params = OutputParams { process_id: id, stream, data: BASE64.encode(&chunk[..n]) };
            self.notify(methods::OUTPUT, &params, Some(permit));
        }
    }

    /// Writes to a process's stdin, then closes it if asked.
    pub async fn write(&self, params: WriteParams) -> Result<Value, ErrorObject> {
        let data = BASE64
            .decode(&params.data)
            .map_err(|e| ErrorObject::invalid_params(format!("data is not base64: {e}")))?;
        let stdin = {
            let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            let process = live.get(&params.process_id).ok_or_else(|| unknown(params.process_id))?;
            Arc::clone(&process.stdin)
        };
        let mut stdin = stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(world_error("PROCESS_STDIN_CLOSED", "its stdin is closed", None));
        };
        if !data.is_empty() {
            pipe.write_all(&data).await.map_err(|e| {
                world_error("PROCESS_STDIN_CLOSED", format!("cannot write to its stdin: {e}"), None)
            })?;
            let _ = pipe.flush().await;
        }
        if params.close {
            *stdin = None;
        }
        Ok(Value::Object(serde_json::Map::new()))
    }

    /// Sends a signal to a process's group.
    pub fn signal(&self, params: &SignalParams) -> Result<Value, ErrorObject> {
        let signal = match params.signal.as_str() {
            "INT" => Signal::INT,
            "TERM" => Signal::TERM,
            "KILL" => Signal::KILL,
            "HUP" => Signal::HUP,
            "QUIT" => Signal::QUIT,
            other => return Err(ErrorObject::invalid_params(format!("unknown signal {other}"))),
        };
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let process = live.get(&params.process_id).ok_or_else(|| unknown(params.process_id))?;
        process.group.signal(signal);
        Ok(Value::Object(serde_json::Map::new()))
    }

    /// Kills every process still alive (the connection ended).
    pub fn kill_all(&self) {
        self.budget.close();
        for process in self.live.lock().unwrap_or_else(PoisonError::into_inner).values() {
            process.group.kill();
        }
    }
}
