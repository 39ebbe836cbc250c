//! The attach socket's client side, what `toolhost mcp` (and `toolhost revert`) use to reach the
//! editor's host: requests with cancellation, the call's live output and questions coming back,
//! and the server's notice that the set of tools changed.

use crate::MAX_LINE;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::sync::{oneshot, watch};
use toolhost_contract::CancellationToken;
use toolhost_contract::{QuestionError, QuestionRequest, QuestionsHandle};
use toolhost_jsonrpc::message::{self, ErrorObject, Id, Incoming};
use toolhost_jsonrpc::{AsyncFrames, Frame, LimitPolicy, LineDecoder, LineLimits};
use toolhost_protocol::lsp_ext::{AskUserParams, AskUserResult, CallOutputParams, methods};

type Waiter = oneshot::Sender<Result<Value, ErrorObject>>;

struct Shared {
    pending: Mutex<HashMap<i64, Waiter>>,
    writer: tokio::sync::Mutex<tokio::net::unix::OwnedWriteHalf>,
    next_id: AtomicI64,
    closed: CancellationToken,
    tools: watch::Sender<u64>,
    /// Live output of calls in flight, by call id.
    outputs: Mutex<HashMap<String, tokio::sync::mpsc::UnboundedSender<String>>>,
    /// Who answers the questions of calls in flight (our MCP client), by call id.
    askers: Mutex<HashMap<String, QuestionsHandle>>,
    /// Questions being asked, by the server's request id (for `$/cancelRequest`).
    asking: Mutex<HashMap<i64, CancellationToken>>,
}

/// Answers the server's `toolhost/askUser` for a call of ours by asking our MCP client. An
/// answer is the result; anything else an error reply the server turns into the call's failure
/// (`-32601` when nobody here can ask, so the editor is asked instead).
async fn answer_question(shared: Arc<Shared>, id: Id, params: Option<Value>) {
    let parsed = params.and_then(|p| serde_json::from_value::<AskUserParams>(p).ok());
    let asker = parsed
        .as_ref()
        .and_then(|p| shared.askers.lock().ok().and_then(|a| a.get(&p.call_id).cloned()));
    let body = match (parsed, asker) {
        (Some(params), Some(asker)) => {
            let stop = CancellationToken::new();
            let key = match &id {
                Id::Number(n) => Some(*n),
                _ => None,
            };
            if let (Some(key), Ok(mut asking)) = (key, shared.asking.lock()) {
                asking.insert(key, stop.clone());
            }
            let request = QuestionRequest::from(params);
            let answer = asker.ask(request, stop).await;
            if let (Some(key), Ok(mut asking)) = (key, shared.asking.lock()) {
                asking.remove(&key);
            }
            match answer {
                Ok(answers) => {
                    message::encode_result(&id, &AskUserResult { answers, dismissed: false })
                        .unwrap_or_else(|e| {
                            message::encode_error(&id, &ErrorObject::internal(e.to_string()))
                        })
                }
                Err(QuestionError::NoProvider(reason)) => message::encode_error(
                    &id,
                    &ErrorObject::new(toolhost_jsonrpc::message::codes::METHOD_NOT_FOUND, reason),
                ),
                Err(QuestionError::Aborted) => {
                    message::encode_error(&id, &ErrorObject::cancelled())
                }
                Err(other) => message::encode_error(&id, &ErrorObject::internal(other.to_string())),
            }
        }
        _ => message::encode_error(
            &id,
            &ErrorObject::new(
                toolhost_jsonrpc::message::codes::METHOD_NOT_FOUND,
                "this agent's client cannot answer questions",
            ),
        ),
    };
    let mut line = body;
    line.push(b'\n');
    let mut writer = shared.writer.lock().await;
    let _ = writer.write_all(&line).await;
}

/// A connection to the editor's toolhost.
#[derive(Clone)]
pub struct AttachClient {
    shared: Arc<Shared>,
}

fn gone() -> ErrorObject {
    ErrorObject::internal("the editor's toolhost closed the attach connection")
}

impl AttachClient {
    /// Connects to `socket` (an error when nothing listens there).
    pub async fn connect(socket: &Path) -> std::io::Result<AttachClient> {
        let stream = UnixStream::connect(socket).await?;
        let (read, write) = stream.into_split();
        let shared = Arc::new(Shared {
            pending: Mutex::new(HashMap::new()),
            writer: tokio::sync::Mutex::new(write),
            next_id: AtomicI64::new(1),
            closed: CancellationToken::new(),
            tools: watch::Sender::new(0),
            outputs: Mutex::new(HashMap::new()),
            askers: Mutex::new(HashMap::new()),
            asking: Mutex::new(HashMap::new()),
        });
        let reader = Arc::clone(&shared);
        tokio::spawn(async move {
            let decoder = LineDecoder::new(LineLimits { max_line: MAX_LINE }, LimitPolicy::Fail);
            let mut frames = AsyncFrames::new(read, decoder);
            while let Ok(Some(Frame::Body(body))) = frames.next_frame().await {
                match message::parse(&body) {
                    Ok(Incoming::Response(response)) => {
                        let waiter = response
                            .id
                            .as_i64()
                            .and_then(|id| reader.pending.lock().ok()?.remove(&id));
                        if let Some(waiter) = waiter {
                            let _ = waiter.send(response.result);
                        }
                    }
                    Ok(Incoming::Request(request)) if request.method == methods::ASK_USER => {
                        tokio::spawn(answer_question(
                            Arc::clone(&reader),
                            request.id,
                            request.params,
                        ));
                    }
                    Ok(Incoming::Notification(note)) if note.method == "$/cancelRequest" => {
                        let id =
                            note.params.as_ref().and_then(|p| p.get("id")).and_then(Value::as_i64);
                        let stop = id.and_then(|id| reader.asking.lock().ok()?.get(&id).cloned());
                        if let Some(stop) = stop {
                            stop.cancel();
                        }
                    }
                    Ok(Incoming::Notification(note)) if note.method == methods::TOOLS_CHANGED => {
                        reader.tools.send_modify(|g| *g += 1);
                    }
                    Ok(Incoming::Notification(note)) if note.method == methods::CALL_OUTPUT => {
                        let output = note
                            .params
                            .and_then(|p| serde_json::from_value::<CallOutputParams>(p).ok());
                        if let Some(output) = output {
                            let sender = reader
                                .outputs
                                .lock()
                                .ok()
                                .and_then(|o| o.get(&output.call_id).cloned());
                            if let Some(sender) = sender {
                                let _ = sender.send(output.text);
                            }
                        }
                    }
                    _ => {}
                }
            }
            reader.closed.cancel();
            let waiting: Vec<Waiter> = reader
                .pending
                .lock()
                .map(|mut p| p.drain().map(|(_, w)| w).collect())
                .unwrap_or_default();
            for waiter in waiting {
                let _ = waiter.send(Err(gone()));
            }
        });
        Ok(AttachClient { shared })
    }

    /// Sends call `call_id`'s live output to `sender` (until [`AttachClient::unwatch`]).
    pub fn watch(&self, call_id: &str, sender: tokio::sync::mpsc::UnboundedSender<String>) {
        if let Ok(mut outputs) = self.shared.outputs.lock() {
            outputs.insert(call_id.to_owned(), sender);
        }
    }

    pub fn unwatch(&self, call_id: &str) {
        if let Ok(mut outputs) = self.shared.outputs.lock() {
            outputs.remove(call_id);
        }
        if let Ok(mut askers) = self.shared.askers.lock() {
            askers.remove(call_id);
        }
    }

    /// Answers call `call_id`'s questions with `asker` (until [`AttachClient::unwatch`]).
    pub fn answer_questions(&self, call_id: &str, asker: QuestionsHandle) {
        if let Ok(mut askers) = self.shared.askers.lock() {
            askers.insert(call_id.to_owned(), asker);
        }
    }

    /// Whether the connection is gone.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.is_cancelled()
    }

    /// Changes whenever the server says the set of tools changed.
    pub fn tools_changed(&self) -> watch::Receiver<u64> {
        self.shared.tools.subscribe()
    }

    async fn write(&self, body: Vec<u8>) -> Result<(), ErrorObject> {
        let mut line = body;
        line.push(b'\n');
        let mut writer = self.shared.writer.lock().await;
        writer.write_all(&line).await.map_err(|_| gone())
    }

    /// Sends request `method` and awaits its result; when `cancel` fires first the server gets
    /// `$/cancelRequest` and the answer is `-32800`.
    pub async fn request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        cancel: &CancellationToken,
    ) -> Result<R, ErrorObject> {
        if self.is_closed() {
            return Err(gone());
        }
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let body = message::encode_request(&Id::Number(id), method, params)
            .map_err(|e| ErrorObject::internal(format!("cannot encode {method}: {e}")))?;
        let (tx, rx) = oneshot::channel();
        self.shared.pending.lock().map_err(|_| gone())?.insert(id, tx);
        if let Err(err) = self.write(body).await {
            if let Ok(mut pending) = self.shared.pending.lock() {
                pending.remove(&id);
            }
            return Err(err);
        }
        let value = tokio::select! {
            reply = rx => reply.unwrap_or_else(|_| Err(gone()))?,
            () = cancel.cancelled() => {
                if let Ok(mut pending) = self.shared.pending.lock() {
                    pending.remove(&id);
                }
                if let Ok(body) = message::encode_notification("$/cancelRequest", &json!({"id": id})) {
                    let _ = self.write(body).await;
                }
                return Err(ErrorObject::cancelled());
            }
        };
        serde_json::from_value(value)
            .map_err(|e| ErrorObject::internal(format!("unexpected {method} result: {e}")))
    }
}
