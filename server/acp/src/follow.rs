//! A run's calls as ACP tool calls while they happen: each started call becomes a tool call (the
//! todo list excepted: it is the plan), a running command's output follows live, and the
//! finished card closes the tool call. Calls made under a followed call (a `run_code` program's
//! nested calls, a subagent's calls) are followed too: they reach the host's listeners, not the
//! run, and carry their parent in `_meta.toolhost.parentCallId`.

use crate::client::ClientLine;
use crate::live::LiveOutput;
use crate::updates;
use agent_client_protocol::v1::schema::SessionUpdate;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use toolhost_host::agent::RunUpdate;
use toolhost_host::{Host, HostListener};
use toolhost_protocol::card::{Card, CardKind, CardStatus};

/// Follows the calls of one session's runs.
pub struct CallFollower {
    inner: Arc<Following>,
}

struct Following {
    host: Arc<Host>,
    line: Arc<ClientLine>,
    /// The running commands whose output is followed.
    live: Mutex<HashMap<String, LiveOutput>>,
}

impl CallFollower {
    pub fn new(host: Arc<Host>, line: Arc<ClientLine>) -> Self {
        let inner = Arc::new(Following { host, line, live: Mutex::new(HashMap::new()) });
        inner.host.add_listener(Arc::new(NestedCalls(Arc::downgrade(&inner))));
        CallFollower { inner }
    }

    /// A call of the run started or ended: its tool call (or the plan), and a command's live
    /// output in between.
    pub fn update(&self, update: RunUpdate) {
        self.inner.update(update);
    }
}

/// Hears the host's cards: every running call's pending card, and the calls made under a
/// followed call (weakly: the host outlives the session).
struct NestedCalls(Weak<Following>);

impl HostListener for NestedCalls {
    fn card(&self, card: &Card) {
        let Some(following) = self.0.upgrade() else { return };
        // Every running call's pending card, heard before its body runs (its permission request
        // shows the proposed diff from it).
        {
            let mut announced =
                following.line.announced.lock().unwrap_or_else(PoisonError::into_inner);
            if card.status == CardStatus::Pending {
                announced.insert(card.call_id.clone(), card.clone());
            } else {
                announced.remove(&card.call_id);
            }
        }
        let Some(parent) = card.parent_call_id.as_deref() else { return };
        let followed = following
            .line
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(parent);
        if !followed {
            return;
        }
        let update = if card.status == CardStatus::Pending {
            RunUpdate::CallStarted { card: card.clone() }
        } else {
            let text = card.text.clone();
            let is_error = card.status == CardStatus::Failed;
            RunUpdate::CallFinished { card: card.clone(), text, is_error }
        };
        following.update(update);
    }
}

impl Following {
    fn update(&self, update: RunUpdate) {
        match update {
            RunUpdate::CallStarted { card } => {
                self.line
                    .pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(card.call_id.clone(), card.clone());
                if updates::is_plan(&card) {
                    return;
                }
                self.line.send(SessionUpdate::ToolCall(updates::started(&self.line.root, &card)));
                if card.kind == CardKind::Terminal {
                    let command = card.terminal.as_ref().map(|t| t.command.clone());
                    let live = LiveOutput::follow(
                        self.host.call_watchers(),
                        Arc::clone(&self.line),
                        &card.call_id,
                        command,
                    );
                    self.live
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(card.call_id.clone(), live);
                }
            }
            RunUpdate::CallFinished { card, .. } => {
                self.line
                    .pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&card.call_id);
                let followed =
                    self.live.lock().unwrap_or_else(PoisonError::into_inner).remove(&card.call_id);
                let update = updates::finished_update(&self.line.root, &card);
                match followed {
                    Some(live) => live.finish(update, &self.line),
                    None => self.line.send(update),
                }
            }
        }
    }
}
