//! A run's calls as ACP tool calls while they happen: each started call becomes a tool call (the
//! todo list excepted: it is the plan), a running command's output follows live, and the
//! finished card closes the tool call.

use crate::client::ClientLine;
use crate::live::LiveOutput;
use crate::updates;
use agent_client_protocol::v1::schema::SessionUpdate;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use toolhost_host::Host;
use toolhost_host::agent::RunUpdate;
use toolhost_protocol::card::CardKind;

/// Follows the calls of one session's runs.
pub struct CallFollower {
    host: Arc<Host>,
    line: Arc<ClientLine>,
    /// The running commands whose output is followed.
    live: Mutex<HashMap<String, LiveOutput>>,
}

impl CallFollower {
    pub fn new(host: Arc<Host>, line: Arc<ClientLine>) -> Self {
        Self { host, line, live: Mutex::new(HashMap::new()) }
    }

    /// A call of the run started or ended: its tool call (or the plan), and a command's live
    /// output in between.
    pub fn update(&self, update: RunUpdate) {
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
