//! A running command's output on its way to the client: its tail as `tool_call_update`s, at most
//! ten times a second, until the call's final update, after which nothing more is sent.

use crate::client::ClientLine;
use crate::updates;
use agent_client_protocol::v1::schema::{
    SessionUpdate, ToolCallContent, ToolCallId, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use std::sync::{Arc, Mutex, PoisonError};
use toolhost_host::events::{CallWatchers, WatchGuard};

/// How much of the output the client is shown (the tail).
const TAIL: usize = 64 * 1024;

/// A followed call's output.
pub struct LiveOutput {
    _watch: WatchGuard,
    /// Set with the call's final update: no output update may follow it.
    finished: Arc<Mutex<bool>>,
}

impl LiveOutput {
    /// Follows call `call_id`'s output (a command's, shown as a console block).
    pub fn follow(
        watchers: &CallWatchers,
        line: Arc<ClientLine>,
        call_id: &str,
        command: Option<String>,
    ) -> LiveOutput {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let finished = Arc::new(Mutex::new(false));
        let live =
            LiveOutput { _watch: watchers.watch(call_id, tx), finished: Arc::clone(&finished) };
        let call_id = call_id.to_owned();
        tokio::spawn(async move {
            let mut output = String::new();
            while let Some(chunk) = rx.recv().await {
                output.push_str(&chunk);
                while let Ok(more) = rx.try_recv() {
                    output.push_str(&more);
                }
                if output.len() > TAIL {
                    let mut cut = output.len() - TAIL;
                    while !output.is_char_boundary(cut) {
                        cut += 1;
                    }
                    output.drain(..cut);
                }
                let shown = match &command {
                    Some(command) => format!("```console\n$ {command}\n{output}\n```"),
                    None => output.clone(),
                };
                {
                    let finished = finished.lock().unwrap_or_else(PoisonError::into_inner);
                    if *finished {
                        return;
                    }
                    line.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        ToolCallId::new(call_id.as_str()),
                        ToolCallUpdateFields::new()
                            .status(ToolCallStatus::InProgress)
                            .content(vec![updates::text(&shown)] as Vec<ToolCallContent>),
                    )));
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        });
        live
    }

    /// The call ended: its final update goes out, under the flag the forwarder sends with, so no
    /// output update follows it.
    pub fn finish(self, last: SessionUpdate, line: &ClientLine) {
        let mut finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
        *finished = true;
        line.send(last);
    }
}
