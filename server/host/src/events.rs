//! What a host tells the world as calls run: every call's cards, live output and session notices
//! go to the [`HostListener`]s front ends install (an editor's connection turns them into
//! `toolhost/card`, `toolhost/callOutput` and `toolhost/notice`); a call's live output also goes
//! to whoever follows that call ([`CallWatchers`]: an MCP client quoting it in its progress); a
//! notice also goes into the session log as an ignorable `job/notice` event, so the log says when
//! a background job ended even though no call was running then.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use tokio::sync::mpsc::UnboundedSender;
use toolhost_contract::{HostEvents, Notice};
use toolhost_protocol::card::Card;
use toolhost_protocol::lsp_ext::NoticeParams;
use toolhost_session::SessionLog;

/// A front end following a host: it hears every call's cards, live output and the notices.
pub trait HostListener: Send + Sync {
    /// A call's card: the pending one when it starts, the final one when it ends.
    fn card(&self, card: &Card);
    /// Whether this listener reads the cards it is given. One that only needs to know a card
    /// changed says no and gets [`HostListener::card_changed`] instead of a call's final card,
    /// which is then not built for it (a big read's card costs about what the read does).
    fn reads_cards(&self) -> bool {
        true
    }
    /// A call's final card changed (for a listener that does not read cards).
    fn card_changed(&self) {}
    /// Live output of a running call.
    fn call_output(&self, _call_id: &str, _text: &str) {}
    /// A notice of the session (a background job ended).
    fn notice(&self, _notice: &NoticeParams) {}
}

/// The listeners of one host.
#[derive(Clone, Default)]
pub struct Listeners {
    listeners: Arc<RwLock<Vec<Arc<dyn HostListener>>>>,
}

impl Listeners {
    pub fn add(&self, listener: Arc<dyn HostListener>) {
        self.listeners.write().unwrap_or_else(PoisonError::into_inner).push(listener);
    }

    fn each(&self, f: impl Fn(&dyn HostListener)) {
        let listeners = self.listeners.read().unwrap_or_else(PoisonError::into_inner).clone();
        for listener in listeners {
            f(listener.as_ref());
        }
    }

    /// Hands a card built by `build` to the listeners that read cards — built once, and only if
    /// one does — and tells the others it changed.
    pub fn card_built(&self, build: impl FnOnce() -> Card) {
        let listeners = self.listeners.read().unwrap_or_else(PoisonError::into_inner).clone();
        let mut build = Some(build);
        let mut card = None;
        for listener in listeners {
            if !listener.reads_cards() {
                listener.card_changed();
                continue;
            }
            if card.is_none()
                && let Some(build) = build.take()
            {
                card = Some(build());
            }
            if let Some(card) = &card {
                listener.card(card);
            }
        }
    }

    pub fn card(&self, card: &Card) {
        self.each(|l| l.card(card));
    }
}

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

/// Events of one host: its listeners, the session log when there is one, and the watchers of
/// running calls.
pub struct HostEventSink {
    log: Option<Arc<SessionLog>>,
    watchers: CallWatchers,
    listeners: Listeners,
}

impl HostEventSink {
    pub fn new(log: Option<Arc<SessionLog>>, watchers: CallWatchers, listeners: Listeners) -> Self {
        HostEventSink { log, watchers, listeners }
    }
}

impl HostEvents for HostEventSink {
    fn call_output(&self, call_id: &str, text: &str) {
        self.watchers.forward(call_id, text);
        self.listeners.each(|l| l.call_output(call_id, text));
    }

    fn notice(&self, _session_id: Option<&str>, notice: Notice) {
        let params = NoticeParams { source: notice.source, text: notice.text, data: notice.data };
        self.listeners.each(|l| l.notice(&params));
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
