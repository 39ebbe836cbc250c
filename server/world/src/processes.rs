//! Spawned processes of one connection (`process/spawn`, `process/write`, `process/signal`,
//! `process/terminal`): each a process group whose stdout and stderr stream back as
//! `process/output` notifications and whose end is `process/exited`, sent after all its output;
//! or, with `pty`, a session on a terminal of its own (`pty.rs`) whose output is the terminal's. Output waits for the client:
//! at most [`IN_FLIGHT_BYTES`] of it are queued for the connection, then the process's pipes
//! fill and it blocks, so a chatty program cannot grow the server's memory. Every group still
//! alive when the connection ends is killed.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use toolhost_jsonrpc::ErrorObject;
use toolhost_jsonrpc::message;
use toolhost_process::{GroupHandle, Signal};
use toolhost_protocol::world::{
    ExitedParams, OutputParams, OutputStream, ProcessRef, SignalParams, SpawnParams, SpawnResult,
    TerminalStateResult, WriteParams, methods,
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

/// Where `process/write` goes: a pipe, or the process's terminal.
type Input = Box<dyn AsyncWrite + Unpin + Send>;
/// Where output comes from: a pipe, or the process's terminal.
type Output = Box<dyn AsyncRead + Unpin + Send>;

struct Live {
    group: GroupHandle,
    stdin: Arc<tokio::sync::Mutex<Option<Input>>>,
    /// The terminal's master side, for a process spawned with `pty`.
    master: Option<OwnedFd>,
}

/// Runs every future to its end, together.
async fn futures_join_all<F: std::future::Future<Output = ()>>(futures: impl Iterator<Item = F>) {
    let mut set: Vec<std::pin::Pin<Box<F>>> = futures.map(Box::pin).collect();
    std::future::poll_fn(move |cx| {
        set.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if set.is_empty() { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
    })
    .await;
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
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (group, outputs, stdin, master): (_, Vec<(OutputStream, Output)>, Option<Input>, _) =
            match params.pty {
                Some(size) => {
                    let pty = crate::pty::start(&params.argv, cwd, &params.env, size, options)?;
                    let output: Output = Box::new(pty.reader);
                    let input: Input = Box::new(pty.writer);
                    (pty.group, vec![(OutputStream::Stdout, output)], Some(input), Some(pty.master))
                }
                None => {
                    let (mut group, stdout, stderr) =
                        crate::run::start(&params.argv, cwd, Stdio::piped(), &params.env, options)?;
                    let stdin = group.take_stdin().map(|pipe| Box::new(pipe) as Input);
                    let outputs: Vec<(OutputStream, Box<dyn AsyncRead + Unpin + Send>)> = vec![
                        (OutputStream::Stdout, Box::new(stdout)),
                        (OutputStream::Stderr, Box::new(stderr)),
                    ];
                    (group, outputs, stdin, None)
                }
            };
        let pid = group.id();
        let stdin = Arc::new(tokio::sync::Mutex::new(stdin));
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, Live { group: group.handle(), stdin, master });
        let processes = Arc::clone(self);
        tokio::spawn(async move {
            // A terminal's read fails (EIO) once the last process on it is gone: its end.
            let forwards =
                outputs.into_iter().map(|(stream, pipe)| processes.forward(id, stream, pipe));
            futures_join_all(forwards).await;
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
        serde_json::to_value(SpawnResult { process_id: id, pid: Some(pid) })
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
            "TSTP" => Signal::TSTP,
            other => return Err(ErrorObject::invalid_params(format!("unknown signal {other}"))),
        };
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let process = live.get(&params.process_id).ok_or_else(|| unknown(params.process_id))?;
        if !params.foreground {
            process.group.signal(signal);
            return Ok(Value::Object(serde_json::Map::new()));
        }
        // The program in the terminal's foreground (the shell itself when nothing runs).
        let pgid = process
            .master
            .as_ref()
            .and_then(|m| toolhost_process::foreground_group(m.as_fd()))
            .or_else(|| i32::try_from(process.group.id()).ok());
        if let Some(pgid) = pgid {
            toolhost_process::signal_group(pgid, signal);
        }
        Ok(serde_json::json!({ "pgid": pgid }))
    }

    /// What the foreground program of a process's terminal does.
    pub fn terminal(&self, params: &ProcessRef) -> Result<Value, ErrorObject> {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let process = live.get(&params.process_id).ok_or_else(|| unknown(params.process_id))?;
        let state =
            process.master.as_ref().and_then(|m| toolhost_process::terminal_state(m.as_fd()));
        let answer = match state {
            Some(state) => TerminalStateResult {
                foreground_pgid: Some(state.pgid),
                waits_for_input: state.waits_for_input,
                switches: state.switches,
            },
            None => TerminalStateResult::default(),
        };
        serde_json::to_value(answer).map_err(|e| ErrorObject::internal(e.to_string()))
    }

    /// Kills every process still alive (the connection ended).
    pub fn kill_all(&self) {
        self.budget.close();
        for process in self.live.lock().unwrap_or_else(PoisonError::into_inner).values() {
            process.group.kill();
        }
    }
}
