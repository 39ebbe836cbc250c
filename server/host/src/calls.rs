//! The running calls of one host: each call's cancellation by id (a card's Stop, a front end
//! going away), its parent, the barrier that orders calls, and the count a wind-down waits on.
//!
//! The barrier: a concurrency-safe call takes it shared, any other call exclusively, so an
//! exclusive call never overlaps another call of the host. A child call (a subagent's, a nested
//! call of a program) takes no permit of its own: its parent holds one for as long as the child
//! runs, and a child waiting for the barrier would wait on its own parent.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{Notify, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};
use toolhost_contract::CancellationToken;

#[derive(Default)]
struct Inner {
    calls: Mutex<HashMap<String, CancellationToken>>,
    active: AtomicUsize,
    idle: Notify,
    barrier: Arc<RwLock<()>>,
}

/// The running calls of a host.
#[derive(Clone, Default)]
pub struct CallTable {
    inner: Arc<Inner>,
}

/// A barrier permit, held (never read) until the call ends.
pub enum Permit {
    Shared(#[allow(dead_code)] OwnedRwLockReadGuard<()>),
    Exclusive(#[allow(dead_code)] OwnedRwLockWriteGuard<()>),
}

/// Keeps a call listed; dropping it removes the call and wakes a waiting wind-down.
pub struct Listed {
    table: CallTable,
    call_id: String,
}

impl Drop for Listed {
    fn drop(&mut self) {
        let inner = &self.table.inner;
        inner.calls.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.call_id);
        if inner.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            inner.idle.notify_waiters();
        }
    }
}

impl CallTable {
    /// Lists call `call_id` with a token of its own: a child of `cancel` when given, else of its
    /// parent's token when the parent runs (cancelling a parent cancels its children), else a
    /// fresh one. `None` when a call with that id is already running.
    pub fn enter(
        &self,
        call_id: &str,
        parent: Option<&str>,
        cancel: Option<&CancellationToken>,
    ) -> Option<(CancellationToken, Listed)> {
        let mut calls = self.inner.calls.lock().unwrap_or_else(PoisonError::into_inner);
        if calls.contains_key(call_id) {
            return None;
        }
        let token = match (cancel, parent.and_then(|p| calls.get(p))) {
            (Some(cancel), _) => cancel.child_token(),
            (None, Some(parent)) => parent.child_token(),
            (None, None) => CancellationToken::new(),
        };
        calls.insert(call_id.to_owned(), token.clone());
        self.inner.active.fetch_add(1, Ordering::SeqCst);
        Some((token, Listed { table: self.clone(), call_id: call_id.to_owned() }))
    }

    /// Waits for the call's turn at the barrier. A call whose token fires while it waits gets no
    /// permit (it must not run its body, and returns at once).
    pub async fn permit(
        &self,
        concurrency_safe: bool,
        token: &CancellationToken,
    ) -> Option<Permit> {
        let barrier = Arc::clone(&self.inner.barrier);
        tokio::select! {
            permit = async {
                if concurrency_safe {
                    Permit::Shared(barrier.read_owned().await)
                } else {
                    Permit::Exclusive(barrier.write_owned().await)
                }
            } => Some(permit),
            () = token.cancelled() => None,
        }
    }

    /// Cancels running call `call_id` (and so its children); `false` when it is not running.
    pub fn cancel(&self, call_id: &str) -> bool {
        let calls = self.inner.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.get(call_id).map(CancellationToken::cancel).is_some()
    }

    /// Cancels every running call.
    pub fn cancel_all(&self) {
        let calls = self.inner.calls.lock().unwrap_or_else(PoisonError::into_inner);
        for token in calls.values() {
            token.cancel();
        }
    }

    /// Whether call `call_id` runs now.
    pub fn running(&self, call_id: &str) -> bool {
        self.inner.calls.lock().unwrap_or_else(PoisonError::into_inner).contains_key(call_id)
    }

    /// How many calls run now.
    pub fn active(&self) -> usize {
        self.inner.active.load(Ordering::SeqCst)
    }

    /// Waits until no call runs.
    pub async fn idle(&self) {
        loop {
            let notified = self.inner.idle.notified();
            if self.active() == 0 {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_cancelled_with_its_parent_but_not_the_other_way() {
        let table = CallTable::default();
        let (parent, _p) = table.enter("p", None, None).unwrap();
        let (child, _c) = table.enter("c", Some("p"), None).unwrap();
        assert!(table.enter("p", None, None).is_none(), "ids are unique while running");
        assert!(table.running("c"));
        assert!(table.cancel("c"));
        assert!(child.is_cancelled() && !parent.is_cancelled());
        let (second, _c2) = table.enter("c2", Some("p"), None).unwrap();
        table.cancel("p");
        assert!(second.is_cancelled());
        assert_eq!(table.active(), 3);
    }

    #[tokio::test]
    async fn an_exclusive_call_waits_for_shared_ones_and_a_cancelled_wait_gets_no_permit() {
        let table = CallTable::default();
        let token = CancellationToken::new();
        let shared = table.permit(true, &token).await;
        assert!(matches!(shared, Some(Permit::Shared(_))));
        let waiting = CancellationToken::new();
        let exclusive = {
            let (table, waiting) = (table.clone(), waiting.clone());
            tokio::spawn(async move { table.permit(false, &waiting).await.is_some() })
        };
        tokio::task::yield_now().await;
        waiting.cancel();
        assert!(!exclusive.await.unwrap(), "a cancelled wait returns without a permit");
        drop(shared);
        assert!(table.permit(false, &token).await.is_some());
    }
}
