//! The exec-server's connection loop: newline-delimited JSON-RPC on any reader and writer (the
//! process's stdio under ssh or in a container). The first request must be `world/hello`; each
//! later request runs as a task of its own, so a long `process/run` never holds up a read, and
//! `$/cancelRequest` ends the one it names. Spawned processes are the connection's
//! (`processes.rs`). When the client goes away every request still running is cancelled and
//! every process killed before [`serve`] returns.

use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolhost_jsonrpc::message::{self, Incoming};
use toolhost_jsonrpc::{
    AsyncFrames, ErrorObject, Frame, Id, LimitPolicy, LineDecoder, LineLimits, codes,
};
use toolhost_protocol::world::{SpawnParams, methods};

use crate::handlers::{World, params};
use crate::processes::{Outgoing, Processes};

/// The longest message either side sends: a replace or read of the largest file, base64.
pub const MAX_MESSAGE_BYTES: usize = 48 << 20;

#[derive(Deserialize)]
struct CancelParams {
    id: Value,
}

type Running = Arc<Mutex<HashMap<Id, CancellationToken>>>;

/// Serves `world` to one client until it closes `input` (or `stop` fires).
pub async fn serve(
    world: World,
    input: impl AsyncRead + Unpin,
    mut output: impl AsyncWrite + Unpin + Send + 'static,
    stop: CancellationToken,
) {
    let world = Arc::new(world);
    let (out, mut outgoing) = mpsc::unbounded_channel::<Outgoing>();
    let writer = tokio::spawn(async move {
        // A message's permit (output of a spawned process) is given back once it is written.
        while let Some(Outgoing { mut body, _permit }) = outgoing.recv().await {
            body.push(b'\n');
            if output.write_all(&body).await.is_err() || output.flush().await.is_err() {
                return;
            }
        }
    });
    let processes = Processes::new(out.clone());
    let running: Running = Arc::default();
    let mut tasks = tokio::task::JoinSet::new();
    let mut greeted = false;
    let decoder = LineDecoder::new(LineLimits { max_line: MAX_MESSAGE_BYTES }, LimitPolicy::Drain);
    let mut frames = AsyncFrames::new(input, decoder);
    loop {
        let frame = tokio::select! {
            frame = frames.next_frame() => frame,
            () = stop.cancelled() => break,
        };
        let body = match frame {
            Ok(Some(Frame::Body(body))) => body,
            Ok(Some(Frame::Oversized(len))) => {
                let error = ErrorObject::new(
                    codes::INVALID_REQUEST,
                    format!("message of {len} bytes is too long"),
                );
                let _ = out.send(Outgoing::new(message::encode_error(&Id::Null, &error)));
                continue;
            }
            Ok(None) | Err(_) => break,
        };
        let request = match message::parse(&body) {
            Ok(Incoming::Request(request)) => request,
            Ok(Incoming::Notification(note)) => {
                if note.method == "$/cancelRequest"
                    && let Some(params) = note.params
                    && let Ok(cancel) = serde_json::from_value::<CancelParams>(params)
                    && let Some(id) = Id::from_value(&cancel.id)
                    && let Some(token) =
                        running.lock().unwrap_or_else(PoisonError::into_inner).get(&id)
                {
                    token.cancel();
                }
                continue;
            }
            // The server sends no requests, so no response is awaited.
            Ok(Incoming::Response(_)) => continue,
            Err(Some(invalid)) => {
                let _ =
                    out.send(Outgoing::new(message::encode_error(&invalid.id, &invalid.error())));
                continue;
            }
            Err(None) => {
                let error = ErrorObject::new(codes::PARSE_ERROR, "Parse error");
                let _ = out.send(Outgoing::new(message::encode_error(&Id::Null, &error)));
                continue;
            }
        };
        if !greeted {
            let reply = if request.method == methods::HELLO {
                world.hello(request.params)
            } else {
                Err(ErrorObject::new(
                    codes::SERVER_NOT_INITIALIZED,
                    "send world/hello before anything else",
                ))
            };
            greeted = reply.is_ok();
            let _ = out.send(Outgoing::new(encode(&request.id, reply)));
            continue;
        }
        while tasks.try_join_next().is_some() {}
        let token = stop.child_token();
        running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(request.id.clone(), token.clone());
        let (world, out, running, processes) =
            (Arc::clone(&world), out.clone(), Arc::clone(&running), Arc::clone(&processes));
        tasks.spawn(async move {
            let reply = match request.method.as_str() {
                methods::SPAWN => spawn(&world, &processes, request.params).await,
                methods::WRITE => match params(request.params) {
                    Ok(write) => processes.write(write).await,
                    Err(error) => Err(error),
                },
                methods::SIGNAL => params(request.params).and_then(|p| processes.signal(&p)),
                methods::TERMINAL => params(request.params).and_then(|p| processes.terminal(&p)),
                _ => world.handle(&request.method, request.params, &token).await,
            };
            running.lock().unwrap_or_else(PoisonError::into_inner).remove(&request.id);
            let _ = out.send(Outgoing::new(encode(&request.id, reply)));
        });
    }
    // The client is gone: whatever still runs for it is ended, then every process it spawned
    // (a spawn that was still being answered included).
    let tokens: Vec<CancellationToken> =
        running.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
    for token in tokens {
        token.cancel();
    }
    while tasks.join_next().await.is_some() {}
    processes.kill_all();
    // The writer ends when every sender is gone: the processes' (their forwarders end once the
    // killed groups' pipes close) and this one.
    drop(processes);
    drop(out);
    let _ = writer.await;
}

async fn spawn(
    world: &World,
    processes: &Arc<Processes>,
    raw: Option<Value>,
) -> Result<Value, ErrorObject> {
    let spawn: SpawnParams = params(raw)?;
    let cwd = match &spawn.cwd {
        Some(cwd) => world.folder(cwd).await?,
        None => world.root().to_path_buf(),
    };
    processes.spawn(spawn, &cwd)
}

fn encode(id: &Id, reply: Result<Value, ErrorObject>) -> Vec<u8> {
    match reply {
        Ok(value) => message::encode_result(id, &value)
            .unwrap_or_else(|e| message::encode_error(id, &ErrorObject::internal(e.to_string()))),
        Err(error) => message::encode_error(id, &error),
    }
}
