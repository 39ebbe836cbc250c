//! What the stdio reader may take: the requests in flight by id, and the bytes that wait.
//!
//! A line read is held in memory until it is done with — a request until it is answered (it
//! waits for its turn and runs with its arguments), a notification or response until rmcp takes
//! it. The reader stops reading (the client's writes then block: back-pressure) while
//!
//! - [`MAX_WAITING_BYTES`] of lines wait (a line larger than that is taken when nothing else
//!   waits, alone), or
//! - [`MAX_IN_FLIGHT`] requests are unanswered, or
//! - more than [`MAX_PENDING_BYTES`] of answers wait to be written (a client that never reads).
//!
//! A request whose id is already in flight is refused here (never handed on, where its answer
//! would be lost with the first one's). Once a large amount has waited and nothing waits any
//! more, memory is given back to the system ([`crate::memory`]).
//!
//! What the queues held at their fullest ([`QueuePeaks`]) is logged at `debug` under the
//! [`QUEUE_LOG_TARGET`] target each time the reader starts waiting and when the session ends:
//! that is the bound the caps promise, measured where it is kept (`TOOLHOST_LOG=
//! toolhost_mcp::queue=debug`), independent of how busy the machine is.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;
use toolhost_jsonrpc::Outbox;

/// Requests forwarded and not yet answered before the reader waits.
pub const MAX_IN_FLIGHT: usize = 64;
/// Answer bytes waiting to be written before the reader waits.
pub const MAX_PENDING_BYTES: usize = 16 * 1024 * 1024;
/// Bytes of lines read and not yet done with (requests in flight, notifications rmcp has not
/// taken) before the reader waits.
pub const MAX_WAITING_BYTES: usize = 16 * 1024 * 1024;
/// Once this many bytes have waited at once, memory is given back when nothing waits any more.
const GIVE_BACK_AFTER: usize = 4 * 1024 * 1024;

/// How often a waiting reader looks again whether the client went away.
const RECHECK: Duration = Duration::from_millis(20);

/// The tracing target of the queue status lines.
pub const QUEUE_LOG_TARGET: &str = "toolhost_mcp::queue";

/// The most each queue held at once over the session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueuePeaks {
    /// Answer bytes queued for the client and not yet written.
    pub answer_bytes: usize,
    /// Bytes of lines read and not yet done with.
    pub line_bytes: usize,
    /// Requests forwarded and not yet answered.
    pub in_flight: usize,
    /// How many times the reader stopped reading until the queues drained.
    pub stalls: usize,
}

#[derive(Default)]
struct Waiting {
    /// Requests in flight: their id's JSON and their line's length.
    requests: HashMap<String, usize>,
    /// Bytes of every line not yet done with.
    bytes: usize,
    /// The most bytes that waited at once since memory was last given back.
    high: usize,
    peaks: QueuePeaks,
}

impl Waiting {
    fn hold(&mut self, bytes: usize) {
        self.bytes = self.bytes.saturating_add(bytes);
        self.high = self.high.max(self.bytes);
        self.peaks.line_bytes = self.peaks.line_bytes.max(self.bytes);
    }

    /// Gives `bytes` back; whether memory should now be returned to the system.
    fn release(&mut self, bytes: usize) -> bool {
        self.bytes = self.bytes.saturating_sub(bytes);
        if self.bytes == 0 && self.high >= GIVE_BACK_AFTER {
            self.high = 0;
            return true;
        }
        false
    }

    /// What a waiting reader waits for, as the status line says it.
    fn reason(&self, pending_answers: usize) -> &'static str {
        if pending_answers > MAX_PENDING_BYTES {
            "the client to read its answers"
        } else if self.requests.len() >= MAX_IN_FLIGHT {
            "requests in flight to be answered"
        } else {
            "lines to be done with"
        }
    }

    fn over_budget(&self, bytes: usize) -> bool {
        self.bytes > 0 && self.bytes.saturating_add(bytes) > MAX_WAITING_BYTES
    }
}

/// A request refused because its id is already in flight.
#[derive(Debug, PartialEq, Eq)]
pub struct DuplicateId;

/// Requests in flight, bytes waiting, and the condition the reader waits on.
#[derive(Default)]
pub struct Gate {
    state: Mutex<Waiting>,
    changed: Condvar,
}

impl Gate {
    fn key(id: &Value) -> String {
        id.to_string()
    }

    /// Waits while `stop` holds (and the client still reads); `None` if the lock is poisoned.
    fn wait_while<'a>(
        &'a self,
        mut state: MutexGuard<'a, Waiting>,
        outbox: &Outbox,
        stop: impl Fn(&Waiting) -> bool,
    ) -> Option<MutexGuard<'a, Waiting>> {
        if stop(&state) && !outbox.is_broken() {
            state.peaks.stalls += 1;
        }
        // Logged when the reader starts waiting and whenever what it waits for changes (the
        // requests in flight are answered, and then the unread answers hold it).
        let mut logged = None;
        while stop(&state) && !outbox.is_broken() {
            let pending = outbox.pending_bytes();
            state.peaks.answer_bytes = state.peaks.answer_bytes.max(pending);
            let reason = state.reason(pending);
            if logged != Some(reason) {
                logged = Some(reason);
                log_status(&format!("the reader waits for {reason}"), &state, pending);
            }
            state = self.changed.wait_timeout(state, RECHECK).ok()?.0;
        }
        Some(state)
    }

    /// Waits until a line of `bytes` may be held (at once when nothing waits).
    pub fn room(&self, bytes: usize, outbox: &Outbox) {
        let Ok(state) = self.state.lock() else { return };
        let _ = self.wait_while(state, outbox, |s| s.over_budget(bytes));
    }

    /// Holds a notification's or response's `bytes` until rmcp takes it ([`Gate::taken`]).
    pub fn hold(&self, bytes: usize) {
        if let Ok(mut state) = self.state.lock() {
            state.hold(bytes);
        }
    }

    /// rmcp took a message held with [`Gate::hold`].
    pub fn taken(&self, bytes: usize) {
        self.give(|state| state.release(bytes));
    }

    /// Records request `id` of `bytes` as in flight, once another request may be taken; refused
    /// at once when `id` is already in flight.
    pub fn admit(&self, id: &Value, bytes: usize, outbox: &Outbox) -> Result<(), DuplicateId> {
        let key = Self::key(id);
        let Ok(state) = self.state.lock() else { return Ok(()) };
        if state.requests.contains_key(&key) {
            return Err(DuplicateId);
        }
        let stop = |s: &Waiting| {
            s.requests.len() >= MAX_IN_FLIGHT
                || outbox.pending_bytes() > MAX_PENDING_BYTES
                || s.over_budget(bytes)
        };
        let Some(mut state) = self.wait_while(state, outbox, stop) else { return Ok(()) };
        state.requests.insert(key, bytes);
        state.hold(bytes);
        state.peaks.in_flight = state.peaks.in_flight.max(state.requests.len());
        Ok(())
    }

    /// An answer was queued: `pending` answer bytes now wait to be written.
    pub fn answers_queued(&self, pending: usize) {
        if let Ok(mut state) = self.state.lock() {
            state.peaks.answer_bytes = state.peaks.answer_bytes.max(pending);
        }
    }

    /// What the queues held at their fullest so far.
    pub fn peaks(&self) -> QueuePeaks {
        self.state.lock().map(|s| s.peaks).unwrap_or_default()
    }

    /// Logs the peaks (at the end of a session).
    pub fn log_peaks(&self, pending: usize) {
        if let Ok(state) = self.state.lock() {
            log_status("the session ended", &state, pending);
        }
    }

    /// Request `id` was answered (or cancelled): its id is free and its bytes given back.
    pub fn done(&self, id: &Value) {
        let key = Self::key(id);
        self.give(|state| match state.requests.remove(&key) {
            Some(bytes) => state.release(bytes),
            None => false,
        });
    }

    fn give(&self, change: impl FnOnce(&mut Waiting) -> bool) {
        let give_back = match self.state.lock() {
            Ok(mut state) => change(&mut state),
            Err(_) => false,
        };
        self.changed.notify_all();
        if give_back {
            crate::memory::give_back();
        }
    }

    /// Bytes of lines not yet done with (for tests).
    pub fn waiting_bytes(&self) -> usize {
        self.state.lock().map(|s| s.bytes).unwrap_or(0)
    }
}

/// One queue status line (see the module docs); the numbers are `key=value` words so tests and
/// people can read them.
fn log_status(what: &str, state: &Waiting, pending: usize) {
    let peaks = state.peaks;
    tracing::debug!(
        target: QUEUE_LOG_TARGET,
        "mcp queues: {what}: answers_pending={pending} lines_waiting={} in_flight={} \
         peak_answer_bytes={} peak_line_bytes={} peak_in_flight={} stalls={} \
         cap_answer_bytes={MAX_PENDING_BYTES} cap_line_bytes={MAX_WAITING_BYTES} \
         cap_in_flight={MAX_IN_FLIGHT}",
        state.bytes,
        state.requests.len(),
        peaks.answer_bytes,
        peaks.line_bytes,
        peaks.in_flight,
        peaks.stalls,
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;
    use std::sync::Arc;
    use toolhost_jsonrpc::Framing;

    fn outbox() -> Outbox {
        Outbox::start(std::io::sink(), Framing::Lines).0
    }

    #[test]
    fn an_id_in_flight_is_refused_and_free_again_once_answered() {
        let (gate, outbox) = (Gate::default(), outbox());
        assert_eq!(gate.admit(&json!(7), 10, &outbox), Ok(()));
        assert_eq!(gate.admit(&json!(7), 10, &outbox), Err(DuplicateId));
        // The string "7" is another id than the number 7.
        assert_eq!(gate.admit(&json!("7"), 10, &outbox), Ok(()));
        gate.done(&json!(7));
        assert_eq!(gate.admit(&json!(7), 10, &outbox), Ok(()));
        assert_eq!(gate.waiting_bytes(), 20);
        let peaks = gate.peaks();
        assert_eq!((peaks.in_flight, peaks.line_bytes, peaks.stalls), (2, 20, 0));
        gate.answers_queued(300);
        gate.answers_queued(100);
        assert_eq!(gate.peaks().answer_bytes, 300);
    }

    #[test]
    fn a_line_over_the_byte_budget_waits_unless_nothing_else_does() {
        let mut waiting = Waiting::default();
        // Alone, a line larger than the budget is taken.
        assert!(!waiting.over_budget(MAX_WAITING_BYTES * 2));
        waiting.hold(MAX_WAITING_BYTES * 2);
        assert!(waiting.over_budget(1));
        // Memory goes back once a large amount waited and nothing waits any more.
        assert!(waiting.release(MAX_WAITING_BYTES * 2));
        waiting.hold(1024);
        assert!(!waiting.over_budget(MAX_WAITING_BYTES - 1024));
        assert!(waiting.over_budget(MAX_WAITING_BYTES - 1023));
        assert!(!waiting.release(1024), "nothing large waited");
    }

    #[test]
    fn a_waiting_request_is_taken_once_the_first_is_answered() {
        let (gate, outbox) = (Arc::new(Gate::default()), outbox());
        gate.admit(&json!(1), MAX_WAITING_BYTES * 2, &outbox).unwrap();
        let (second, out) = (Arc::clone(&gate), outbox.clone());
        let waiter = std::thread::spawn(move || second.admit(&json!(2), 1024, &out));
        gate.done(&json!(1));
        assert_eq!(waiter.join().unwrap(), Ok(()));
        assert_eq!(gate.waiting_bytes(), 1024);
    }

    #[test]
    fn notifications_count_until_rmcp_takes_them() {
        let (gate, outbox) = (Gate::default(), outbox());
        gate.hold(MAX_WAITING_BYTES);
        assert_eq!(gate.waiting_bytes(), MAX_WAITING_BYTES);
        gate.taken(MAX_WAITING_BYTES);
        assert_eq!(gate.waiting_bytes(), 0);
        gate.room(MAX_WAITING_BYTES * 3, &outbox);
    }
}
