//! Requests and notifications a server sends its peer (an editor, an ACP client) over the
//! connection's [`Outbox`]. Replies are routed by the reader straight to the waiting request (a
//! pending table keyed by our own ids), so a task awaiting the peer never blocks the reader or
//! any other request. A request we stop waiting for (the caller was cancelled or timed out) is
//! withdrawn with `$/cancelRequest`, and its late reply is dropped.

use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::Outbox;
use crate::message::{self, ErrorObject, Id, Response, codes};

type Reply = Result<Value, ErrorObject>;

struct Inner {
    outbox: Outbox,
    pending: Mutex<HashMap<i64, oneshot::Sender<Reply>>>,
    next_id: AtomicI64,
}

/// Requests and notifications to the peer.
#[derive(Clone)]
pub struct Peer {
    inner: Arc<Inner>,
}

fn closed() -> ErrorObject {
    ErrorObject::internal("the connection to the peer is closed")
}

impl Peer {
    pub fn new(outbox: Outbox) -> Self {
        Peer {
            inner: Arc::new(Inner {
                outbox,
                pending: Mutex::new(HashMap::new()),
                next_id: AtomicI64::new(1),
            }),
        }
    }

    /// Sends a notification (dropped if it cannot be encoded, which typed params never are).
    pub fn notify<P: Serialize + ?Sized>(&self, method: &str, params: &P) {
        match message::encode_notification(method, params) {
            Ok(body) => self.inner.outbox.send(body),
            Err(err) => tracing::warn!(method, %err, "cannot encode a notification"),
        }
    }

    /// Sends request `method` to the editor and awaits its reply. When `cancel` fires first the
    /// editor gets `$/cancelRequest` for it and the result is `-32800`.
    ///
    /// Object params also carry `requestId`, the request's own JSON-RPC id: editors whose
    /// request handlers are not told the id (Neovim's) match a later `$/cancelRequest` with it.
    pub async fn request<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
        cancel: &CancellationToken,
    ) -> Result<Value, ErrorObject> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let encode_failed = |e: serde_json::Error| {
            ErrorObject::internal(format!("cannot encode {method} params: {e}"))
        };
        let mut params = serde_json::to_value(params).map_err(encode_failed)?;
        if let Value::Object(map) = &mut params {
            map.insert("requestId".to_owned(), Value::from(id));
        }
        let body =
            message::encode_request(&Id::Number(id), method, &params).map_err(encode_failed)?;
        let (tx, rx) = oneshot::channel();
        self.inner.pending.lock().map_err(|_| closed())?.insert(id, tx);
        if self.inner.outbox.is_broken() {
            self.forget(id);
            return Err(closed());
        }
        self.inner.outbox.send(body);
        tokio::select! {
            reply = rx => reply.unwrap_or_else(|_| Err(closed())),
            () = cancel.cancelled() => {
                self.forget(id);
                self.notify("$/cancelRequest", &json!({"id": id}));
                Err(ErrorObject::new(codes::REQUEST_CANCELLED, "request cancelled"))
            }
        }
    }

    fn forget(&self, id: i64) {
        if let Ok(mut pending) = self.inner.pending.lock() {
            pending.remove(&id);
        }
    }

    /// Delivers the editor's reply to the request waiting for it; a reply nobody waits for
    /// (cancelled, unknown, or with an id we never used) is dropped.
    pub fn complete(&self, response: Response) {
        let Some(id) = response.id.as_i64() else { return };
        let waiter = self.inner.pending.lock().ok().and_then(|mut p| p.remove(&id));
        if let Some(tx) = waiter {
            let _ = tx.send(response.result);
        }
    }

    /// Fails every waiting request (the connection is going away).
    pub fn close(&self) {
        let waiting: Vec<_> =
            self.inner.pending.lock().map(|mut p| p.drain().collect()).unwrap_or_default();
        for (_, tx) in waiting {
            let _ = tx.send(Err(closed()));
        }
    }
}
