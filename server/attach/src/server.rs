//! The attach socket's server side: `toolhost serve` listens once its host is in place, and each
//! `toolhost mcp` that connects gets the editor's host — its calls go through the host's one call
//! path like the editor's own (barrier, dirty-buffer guard, session log), their cards reach the
//! editor labelled with the agent's name.
//!
//! A socket file left by a dead server is removed; a live one (another editor on the same
//! workspace) is left alone and this server does not listen. Connections from another user are
//! refused. Bad lines are answered like on stdio and never end the connection.

use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use toolhost_contract::{
    BoxFuture, CancellationToken, QuestionError, QuestionRequest, QuestionsHandle, UserQuestions,
    answers_of,
};
use toolhost_host::{CallRequest, Host, Lane};
use toolhost_jsonrpc::message::{self, ErrorObject, Id, Incoming, codes};
use toolhost_jsonrpc::{AsyncFrames, Frame, LimitPolicy, LineDecoder, LineLimits};
use toolhost_protocol::lsp_ext::{
    Answer, AskUserResult, AttachParams, AttachResult, CallOutputParams, CallToolParams,
    CallToolResult, ListToolsResult, methods,
};

type Replies = Arc<Mutex<HashMap<i64, tokio::sync::oneshot::Sender<Result<Value, ErrorObject>>>>>;

/// Asks the attached `toolhost mcp` — which asks its MCP client (elicitation) — the questions
/// of a call it made: `toolhost/askUser` over the socket, withdrawn with `$/cancelRequest`.
struct AttachAsker {
    out: mpsc::UnboundedSender<Vec<u8>>,
    replies: Replies,
    next_id: Arc<std::sync::atomic::AtomicI64>,
}

impl UserQuestions for AttachAsker {
    fn ask(
        &self,
        request: QuestionRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<Vec<Answer>, QuestionError>> {
        Box::pin(async move {
            let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let mut params = serde_json::to_value(request.to_params())
                .map_err(|e| QuestionError::Cancelled(e.to_string()))?;
            params["requestId"] = Value::from(id);
            let body = message::encode_request(&Id::Number(id), methods::ASK_USER, &params)
                .map_err(|e| QuestionError::Cancelled(e.to_string()))?;
            let (tx, rx) = tokio::sync::oneshot::channel();
            if let Ok(mut replies) = self.replies.lock() {
                replies.insert(id, tx);
            }
            let gone =
                || QuestionError::NoProvider("the agent's toolhost mcp went away".to_owned());
            if self.out.send(body).is_err() {
                return Err(gone());
            }
            let reply = tokio::select! {
                reply = rx => reply.map_err(|_| gone())?,
                () = cancel.cancelled() => {
                    if let Ok(mut replies) = self.replies.lock() {
                        replies.remove(&id);
                    }
                    if let Ok(body) = message::encode_notification("$/cancelRequest", &json!({"id": id})) {
                        let _ = self.out.send(body);
                    }
                    return Err(QuestionError::Aborted);
                }
            };
            match reply {
                Ok(value) => answers_of(
                    serde_json::from_value::<AskUserResult>(value)
                        .map_err(|e| QuestionError::Cancelled(format!("unexpected answer: {e}")))?,
                ),
                // The agent's client turned out unable to ask: the editor may.
                Err(error) if error.code == codes::METHOD_NOT_FOUND => {
                    Err(QuestionError::NoProvider(error.message))
                }
                Err(error) => Err(QuestionError::Cancelled(error.message)),
            }
        })
    }
}

/// Binds the attach socket at `path` and serves `host` on it until `stop`. Returns the path
/// bound (to remove at exit), or `None` when another live server owns it or binding failed.
pub async fn listen(host: Arc<Host>, stop: CancellationToken, path: PathBuf) -> Option<PathBuf> {
    if let Err(err) = crate::path::prepare_dir(&path) {
        tracing::warn!(path = %path.display(), %err, "attach socket unavailable");
        return None;
    }
    let listener = match bind(&path).await {
        Ok(listener) => listener,
        Err(err) => {
            tracing::warn!(path = %path.display(), %err, "attach socket unavailable");
            return None;
        }
    };
    tracing::info!(path = %path.display(), "attach socket listening");
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = stop.cancelled() => return,
            };
            let Ok((stream, _)) = accepted else { continue };
            if !same_user(&stream) {
                tracing::warn!("attach connection from another user refused");
                continue;
            }
            tokio::spawn(serve_connection(Arc::clone(&host), stop.clone(), stream));
        }
    });
    Some(path)
}

/// Binds, replacing a stale socket file; refuses to take over a live one.
async fn bind(path: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    match UnixListener::bind(path) {
        Ok(listener) => {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
            Ok(listener)
        }
        Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => {
            if UnixStream::connect(path).await.is_ok() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    "another toolhost serves this workspace already",
                ));
            }
            std::fs::remove_file(path)?;
            let listener = UnixListener::bind(path)?;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
            Ok(listener)
        }
        Err(err) => Err(err),
    }
}

fn same_user(stream: &UnixStream) -> bool {
    let ours = rustix::process::getuid().as_raw();
    stream.peer_cred().is_ok_and(|cred| cred.uid() == ours)
}

#[derive(Deserialize)]
struct CancelParams {
    id: Value,
}

/// One `toolhost mcp` connection.
async fn serve_connection(host: Arc<Host>, stop: CancellationToken, stream: UnixStream) {
    let (read, mut write) = stream.into_split();
    let (out, mut outgoing) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        while let Some(mut body) = outgoing.recv().await {
            body.push(b'\n');
            if write.write_all(&body).await.is_err() {
                return;
            }
        }
    });
    // The agent's name, once it attached: it labels the cards of its calls.
    let caller: Arc<Mutex<Option<String>>> = Arc::default();
    let requests: Arc<Mutex<HashMap<Id, CancellationToken>>> = Arc::default();
    let replies: Replies = Arc::default();
    let next_id = Arc::new(std::sync::atomic::AtomicI64::new(1));
    let closed = CancellationToken::new();
    {
        let mut changes = host.registry().changes();
        let out = out.clone();
        let closed = closed.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { return },
                    () = closed.cancelled() => return,
                }
                let generation = *changes.borrow();
                if let Ok(body) = message::encode_notification(
                    methods::TOOLS_CHANGED,
                    &json!({"generation": generation}),
                ) {
                    let _ = out.send(body);
                }
            }
        });
    }
    let decoder = LineDecoder::new(LineLimits { max_line: crate::MAX_LINE }, LimitPolicy::Drain);
    let mut frames = AsyncFrames::new(read, decoder);
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
                let _ = out.send(message::encode_error(&Id::Null, &error));
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
                    && let Ok(requests) = requests.lock()
                    && let Some(token) = requests.get(&id)
                {
                    token.cancel();
                }
                continue;
            }
            Ok(Incoming::Response(response)) => {
                let waiter = response
                    .id
                    .as_i64()
                    .and_then(|id| replies.lock().ok().and_then(|mut r| r.remove(&id)));
                if let Some(waiter) = waiter {
                    let _ = waiter.send(response.result);
                }
                continue;
            }
            Err(Some(invalid)) => {
                let _ = out.send(message::encode_error(&invalid.id, &invalid.error()));
                continue;
            }
            Err(None) => {
                let error = ErrorObject::new(codes::PARSE_ERROR, "Parse error");
                let _ = out.send(message::encode_error(&Id::Null, &error));
                continue;
            }
        };
        let token = CancellationToken::new();
        if let Ok(mut requests) = requests.lock() {
            requests.insert(request.id.clone(), token.clone());
        }
        let (host, out, caller, requests) =
            (Arc::clone(&host), out.clone(), Arc::clone(&caller), Arc::clone(&requests));
        let asker: QuestionsHandle = Arc::new(AttachAsker {
            out: out.clone(),
            replies: Arc::clone(&replies),
            next_id: Arc::clone(&next_id),
        });
        tokio::spawn(async move {
            let id = request.id.clone();
            let work = answer(&host, request.method, request.params, &caller, &out, asker);
            let body = tokio::select! {
                answered = work => match answered {
                    Ok(value) => message::encode_result(&id, &value)
                        .unwrap_or_else(|e| message::encode_error(&id, &ErrorObject::internal(e.to_string()))),
                    Err(error) => message::encode_error(&id, &error),
                },
                () = token.cancelled() => message::encode_error(&id, &ErrorObject::cancelled()),
            };
            if let Ok(mut requests) = requests.lock() {
                requests.remove(&id);
            }
            let _ = out.send(body);
        });
    }
    closed.cancel();
    // Calls still running are cancelled with their connection (their bodies are awaited and
    // logged as any cancelled call).
    if let Ok(requests) = requests.lock() {
        for token in requests.values() {
            token.cancel();
        }
    }
    drop(out);
    let _ = writer.await;
}

/// The answer to one request of the attach protocol.
async fn answer(
    host: &Arc<Host>,
    method: String,
    params: Option<Value>,
    caller: &Mutex<Option<String>>,
    out: &mpsc::UnboundedSender<Vec<u8>>,
    asker: QuestionsHandle,
) -> Result<Value, ErrorObject> {
    let params = params.unwrap_or_else(|| json!({}));
    let invalid =
        |e: serde_json::Error| ErrorObject::invalid_params(format!("Invalid params: {e}"));
    let attached = caller.lock().map(|c| c.is_some()).unwrap_or(false);
    if !attached && method != methods::ATTACH {
        return Err(ErrorObject::new(
            codes::SERVER_NOT_INITIALIZED,
            format!("{method} before {}: attach first", methods::ATTACH),
        ));
    }
    match method.as_str() {
        methods::ATTACH => {
            let p: AttachParams = serde_json::from_value(params).map_err(invalid)?;
            tracing::info!(
                client = p.caller.name,
                protocol = p.protocol_version.as_deref().unwrap_or(""),
                results = p.results.as_deref().unwrap_or(""),
                "MCP client attached"
            );
            if let Some(log) = host.session() {
                let data = json!({
                    "name": p.caller.name, "version": p.caller.version,
                    "protocolVersion": p.protocol_version, "results": p.results, "attached": true,
                });
                let _ = log.append("mcp/client", data, true).await;
            }
            if let Ok(mut caller) = caller.lock() {
                *caller = Some(p.caller.name);
            }
            let result = AttachResult {
                session_id: host.session_id().map(str::to_owned),
                workspace: host.root_display().to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            };
            serde_json::to_value(result).map_err(|e| ErrorObject::internal(e.to_string()))
        }
        methods::LIST_TOOLS => {
            // Listed for an agent's model: as the host's `[code] mode` offers them, without
            // the session tools another agent defined.
            let who = caller.lock().ok().and_then(|c| c.clone());
            serde_json::to_value(ListToolsResult {
                tools: host.model_tools_of(host.mcp_presentation(), who.as_deref()),
            })
            .map_err(|e| ErrorObject::internal(e.to_string()))
        }
        methods::CALL_TOOL => {
            let p: CallToolParams = serde_json::from_value(params).map_err(invalid)?;
            let who = caller.lock().ok().and_then(|c| c.clone());
            // The agent's progress messages quote the call's live output: it follows the call
            // here and is forwarded as `toolhost/callOutput`, as to the editor.
            let call_id = p.call_id.unwrap_or_else(toolhost_host::new_call_id);
            let (live, mut lines) = mpsc::unbounded_channel::<String>();
            let forward = out.clone();
            let id = call_id.clone();
            tokio::spawn(async move {
                while let Some(text) = lines.recv().await {
                    let params = CallOutputParams { call_id: id.clone(), text };
                    if let Ok(body) = message::encode_notification(methods::CALL_OUTPUT, &params) {
                        let _ = forward.send(body);
                    }
                }
            });
            // A lane of its own, as in `toolhost mcp`: the agent schedules its own calls, and
            // neither the editor nor another agent waits for them.
            let request = CallRequest::new(p.name, p.arguments)
                .in_lane(Lane::new())
                .id(call_id)
                .by(who)
                .asked_through(p.can_ask.then_some(asker))
                .following(Some(live));
            let request =
                if p.model_facing { request.offered_as(host.mcp_presentation()) } else { request };
            let handle =
                host.call(request).map_err(|e| ErrorObject::invalid_params(e.to_string()))?;
            let outcome =
                handle.finish().await.map_err(|e| ErrorObject::internal(e.to_string()))?;
            let result = CallToolResult {
                // Built before the fields it is built from move out.
                card: outcome.card(),
                session_id: host.session_id().map(str::to_owned),
                call_id: outcome.call_id,
                result: outcome.finalized.result,
            };
            serde_json::to_value(result).map_err(|e| ErrorObject::internal(e.to_string()))
        }
        methods::SET_REVIEW => {
            let p: toolhost_protocol::lsp_ext::SetReviewParams =
                serde_json::from_value(params).map_err(invalid)?;
            serde_json::to_value(host.review().update(&p))
                .map_err(|e| ErrorObject::internal(e.to_string()))
        }
        methods::SET_PLAN_MODE => {
            let p: toolhost_protocol::lsp_ext::SetPlanModeParams =
                serde_json::from_value(params).map_err(invalid)?;
            serde_json::to_value(host.interaction().set_plan_mode(p.active).await)
                .map_err(|e| ErrorObject::internal(e.to_string()))
        }
        methods::STRUCTURED_OUTPUT => {
            let p: toolhost_protocol::lsp_ext::StructuredOutputParams =
                serde_json::from_value(params).map_err(invalid)?;
            let state =
                host.interaction().structured(p).await.map_err(ErrorObject::invalid_params)?;
            serde_json::to_value(state).map_err(|e| ErrorObject::internal(e.to_string()))
        }
        other => {
            Err(ErrorObject::new(codes::METHOD_NOT_FOUND, format!("Method not found: {other}")))
        }
    }
}
