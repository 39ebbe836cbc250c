//! The host's `HostEvents`: where a running tool's live output and session notices go. Live
//! output goes to the editor (`toolhost/callOutput`) when one is connected; a notice goes to the
//! editor (`toolhost/notice`) and into the session log as an ignorable `job/notice` event, so the
//! log says when a background job ended even though no call was running then.

use crate::editor::EditorBridge;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedSender;
use toolhost_contract::{HostEvents, Notice};
use toolhost_protocol::lsp_ext::{CallOutputParams, NoticeParams, methods};
use toolhost_session::SessionLog;

/// The log event a notice becomes.
pub const NOTICE_EVENT: &str = "job/notice";

/// Who else follows a call's live output, by call id: an MCP client waiting on the call (its
/// progress messages quote the output), directly or across the attach socket.
#[derive(Clone, Default)]
pub struct CallWatchers {
    watchers: Arc<Mutex<HashMap<String, UnboundedSender<String>>>>,
}

/// Stops the watch when dropped.
pub struct WatchGuard {
    watchers: CallWatchers,
    call_id: String,
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        if let Ok(mut map) = self.watchers.watchers.lock() {
            map.remove(&self.call_id);
        }
    }
}

impl CallWatchers {
    /// Sends `call_id`'s live output to `sender` until the guard is dropped.
    pub fn watch(&self, call_id: &str, sender: UnboundedSender<String>) -> WatchGuard {
        if let Ok(mut map) = self.watchers.lock() {
            map.insert(call_id.to_owned(), sender);
        }
        WatchGuard { watchers: self.clone(), call_id: call_id.to_owned() }
    }

    /// Sends text to whoever follows `call_id` (not to the editor).
    pub fn forward(&self, call_id: &str, text: &str) {
        if let Some(sender) = self.watchers.lock().ok().and_then(|m| m.get(call_id).cloned()) {
            let _ = sender.send(text.to_owned());
        }
    }
}

/// Events of one host: the editor when there is one, the session log when there is one, and the
/// watchers of running calls.
pub struct HostEventSink {
    editor: Option<EditorBridge>,
    log: Option<Arc<SessionLog>>,
    watchers: CallWatchers,
}

impl HostEventSink {
    pub fn new(
        editor: Option<EditorBridge>,
        log: Option<Arc<SessionLog>>,
        watchers: CallWatchers,
    ) -> Self {
        HostEventSink { editor, log, watchers }
    }
}

impl HostEvents for HostEventSink {
    fn call_output(&self, call_id: &str, text: &str) {
        self.watchers.forward(call_id, text);
        if let Some(editor) = &self.editor {
            let params = CallOutputParams { call_id: call_id.to_owned(), text: text.to_owned() };
            editor.notify(methods::CALL_OUTPUT, &params);
        }
    }

    fn notice(&self, _session_id: Option<&str>, notice: Notice) {
        let params = NoticeParams { source: notice.source, text: notice.text, data: notice.data };
        if let Some(editor) = &self.editor {
            editor.notify(methods::NOTICE, &params);
        }
        if let (Some(log), Ok(runtime)) = (&self.log, tokio::runtime::Handle::try_current()) {
            let log = Arc::clone(log);
            let data = serde_json::to_value(&params).unwrap_or_default();
            runtime.spawn(async move {
                if let Err(err) = log.append(NOTICE_EVENT, data, true).await {
                    tracing::warn!(%err, "cannot record a notice in the session log");
                }
            });
        }
    }
}
