//! A call's record on disk before its change, without holding its whole body.
//!
//! A call that may change the world has its `tool/call` record synced before the change, so a
//! crash never leaves a change no record names. Most such calls (a shell command) change things
//! from their first instruction, so the host waits for the record before their body starts. A
//! tool whose every change is a write or edit through the workspace
//! (`Tool::changes_only_through_workspace`: `edit`, `write`) changes nothing until the workspace
//! replaces a file, and the workspace asks its change keepers first: for those, the record is
//! synced while the body reads, diffs and writes its new bytes, and the keeper installed here
//! holds the replace until the record is durable (or refuses it, with nothing changed, when the
//! record could not be written). One fewer sync stands between an edit and its answer.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use toolhost_session::{Durable, SessionError};
use toolhost_workspace::{KeepError, Workspace};

/// The records being synced, by call id.
#[derive(Default)]
pub struct RecordGates {
    open: Mutex<HashMap<String, Arc<Gate>>>,
}

/// One call's record: `None` while it is being synced, then whether it was.
#[derive(Default)]
struct Gate {
    state: Mutex<Option<Result<(), String>>>,
    settled: Condvar,
}

impl Gate {
    fn settle(&self, outcome: Result<(), String>) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
        self.settled.notify_all();
    }

    /// Blocks (on a writing thread) until the record is durable or failed.
    fn wait(&self) -> Result<(), String> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(outcome) = state.as_ref() {
                return outcome.clone();
            }
            state = self.settled.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// A call whose record is being synced while its body runs; [`OpenGate::close`] it when the
/// body is done.
pub struct OpenGate {
    gates: Arc<RecordGates>,
    call_id: String,
    synced: tokio::task::JoinHandle<Result<u64, SessionError>>,
}

impl OpenGate {
    /// Waits for the record (the body may have ended before it was durable) and forgets the
    /// call; the record's error is the call's.
    pub async fn close(self) -> Result<(), SessionError> {
        let OpenGate { gates, call_id, synced } = self;
        let outcome = synced.await;
        gates.open.lock().unwrap_or_else(PoisonError::into_inner).remove(&call_id);
        match outcome {
            Ok(synced) => synced.map(drop),
            Err(join) => Err(SessionError::WriterClosed(format!(
                "the wait for a call's record ended unexpectedly: {join}"
            ))),
        }
    }
}

impl RecordGates {
    /// Holds the workspace's replaces made for calls with an open gate until their record is
    /// durable.
    pub fn install(self: &Arc<Self>, workspace: &Workspace) {
        let gates = Arc::downgrade(self);
        workspace.keep_before_write(Arc::new(move |event| {
            let (Some(call_id), Some(gates)) = (event.call_id, gates.upgrade()) else {
                return Ok(None);
            };
            let gate =
                gates.open.lock().unwrap_or_else(PoisonError::into_inner).get(call_id).cloned();
            let Some(gate) = gate else { return Ok(None) };
            Ok(Some(Box::new(move || {
                gate.wait().map_err(|err| {
                    KeepError(format!(
                        "nothing was changed: the session could not record the call before its \
                         change ({err})"
                    ))
                })
            })))
        }));
    }

    /// Opens the gate of `call_id`, whose record `durable` says when it is on disk.
    pub fn open(self: &Arc<Self>, call_id: &str, durable: Durable) -> OpenGate {
        let gate = Arc::new(Gate::default());
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(call_id.to_owned(), Arc::clone(&gate));
        let synced = tokio::spawn(async move {
            let synced = durable.await;
            gate.settle(synced.as_ref().map(drop).map_err(ToString::to_string));
            synced
        });
        OpenGate { gates: Arc::clone(self), call_id: call_id.to_owned(), synced }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_waiting_writer_is_released_by_the_outcome() {
        let gate = Arc::new(Gate::default());
        let waiter = {
            let gate = Arc::clone(&gate);
            std::thread::spawn(move || gate.wait())
        };
        gate.settle(Err("disk full".to_owned()));
        assert_eq!(waiter.join().unwrap(), Err("disk full".to_owned()));
        assert_eq!(gate.wait(), Err("disk full".to_owned()));
    }
}
