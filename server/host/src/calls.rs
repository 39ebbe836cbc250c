//! The running calls of one host: each call's cancellation by id (a card's Stop, a front end
//! going away), its parent, the barriers that order calls, and the count a wind-down waits on.
//!
//! The barrier orders the calls of one caller — one [`Lane`]: a concurrency-safe call takes its
//! lane's barrier shared, any other call exclusively, so within a lane an exclusive call never
//! overlaps another call and calls start in the order they came. Lanes never wait for each
//! other: an agent's ten-minute `bash` does not hold up the editor or a second agent, whose
//! calls meet the first agent's only where they touch the same file (the workspace's per-path
//! locks and its "unchanged since read" check), as two processes would. A child call (a
//! subagent's, a nested call of a program) takes no permit of its own: its parent holds one for
//! as long as the child runs, and a child waiting for the barrier would wait on its own parent.
//! A call cancelled while it runs gives its permit back at once, not when its body returns: a
//! body stuck in the kernel must not hold up its lane.

use crate::permissions::AgentCall;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{Notify, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};
use toolhost_contract::{CancellationToken, QuestionsHandle};

/// What a running call hands down to the calls a program makes under it: who asked, who
/// answers its questions, and the agent's permission mode — a nested call is made by the same
/// caller as its program, so it is asked about, labelled and permitted the same way.
#[derive(Clone, Default)]
pub struct Heritage {
    pub caller: Option<String>,
    pub asker: Option<QuestionsHandle>,
    pub agent: Option<AgentCall>,
}

/// One running call.
struct Running {
    token: CancellationToken,
    heritage: Heritage,
}

/// How many ended calls' heritage is kept: a background program or subagent makes calls under
/// its call after that call answered, and they are still made by its caller.
const RETAINED_HERITAGE: usize = 256;

#[derive(Default)]
struct Inner {
    calls: Mutex<HashMap<String, Running>>,
    /// The heritage of the calls that ended last, newest at the back.
    retained: Mutex<VecDeque<(String, Heritage)>>,
    active: AtomicUsize,
    idle: Notify,
    /// The lane of calls whose request names none (the editor's, a CLI call's).
    shared_lane: Lane,
}

/// The calls of one caller, ordered by one barrier: the editor's, one run of an agent, one MCP
/// request (an MCP client schedules its own calls: what it sends at once it meant to overlap).
/// Clones are the same lane.
#[derive(Clone, Default)]
pub struct Lane {
    barrier: Arc<RwLock<()>>,
}

impl Lane {
    /// A lane of its own, ordered with no other caller's calls.
    pub fn new() -> Self {
        Lane::default()
    }
}

/// The running calls of a host.
#[derive(Clone, Default)]
pub struct CallTable {
    inner: Arc<Inner>,
}

/// A barrier guard, held (never read) until the permit goes.
enum Guard {
    Shared(#[allow(dead_code)] OwnedRwLockReadGuard<()>),
    Exclusive(#[allow(dead_code)] OwnedRwLockWriteGuard<()>),
}

/// A call's turn at its lane's barrier: held until the call ends or is cancelled, whichever
/// comes first.
pub struct Permit {
    guard: Arc<Mutex<Option<Guard>>>,
    release_on_cancel: tokio::task::JoinHandle<()>,
}

impl Permit {
    fn new(guard: Guard, token: &CancellationToken) -> Self {
        let guard = Arc::new(Mutex::new(Some(guard)));
        let release_on_cancel = {
            let (guard, token) = (Arc::clone(&guard), token.clone());
            tokio::spawn(async move {
                token.cancelled().await;
                guard.lock().unwrap_or_else(PoisonError::into_inner).take();
            })
        };
        Permit { guard, release_on_cancel }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.guard.lock().unwrap_or_else(PoisonError::into_inner).take();
        self.release_on_cancel.abort();
    }
}

/// Keeps a call listed; dropping it removes the call and wakes a waiting wind-down.
pub struct Listed {
    table: CallTable,
    call_id: String,
}

impl Drop for Listed {
    fn drop(&mut self) {
        let inner = &self.table.inner;
        let ended =
            inner.calls.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.call_id);
        if let Some(ended) = ended {
            let mut retained = inner.retained.lock().unwrap_or_else(PoisonError::into_inner);
            if retained.len() == RETAINED_HERITAGE {
                retained.pop_front();
            }
            retained.push_back((self.call_id.clone(), ended.heritage));
        }
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
        heritage: Heritage,
    ) -> Option<(CancellationToken, Listed)> {
        let mut calls = self.inner.calls.lock().unwrap_or_else(PoisonError::into_inner);
        if calls.contains_key(call_id) {
            return None;
        }
        let token = match (cancel, parent.and_then(|p| calls.get(p))) {
            (Some(cancel), _) => cancel.child_token(),
            (None, Some(parent)) => parent.token.child_token(),
            (None, None) => CancellationToken::new(),
        };
        calls.insert(call_id.to_owned(), Running { token: token.clone(), heritage });
        self.inner.active.fetch_add(1, Ordering::SeqCst);
        Some((token, Listed { table: self.clone(), call_id: call_id.to_owned() }))
    }

    /// Waits for the call's turn at the barrier of `lane` (the shared lane when `None`). A call
    /// whose token fires while it waits gets no permit (it must not run its body, and returns at
    /// once).
    pub async fn permit(
        &self,
        lane: Option<&Lane>,
        concurrency_safe: bool,
        token: &CancellationToken,
    ) -> Option<Permit> {
        let barrier = Arc::clone(&lane.unwrap_or(&self.inner.shared_lane).barrier);
        let guard = tokio::select! {
            guard = async {
                if concurrency_safe {
                    Guard::Shared(barrier.read_owned().await)
                } else {
                    Guard::Exclusive(barrier.write_owned().await)
                }
            } => guard,
            () = token.cancelled() => return None,
        };
        Some(Permit::new(guard, token))
    }

    /// Cancels running call `call_id` (and so its children); `false` when it is not running.
    pub fn cancel(&self, call_id: &str) -> bool {
        let calls = self.inner.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.get(call_id).map(|running| running.token.cancel()).is_some()
    }

    /// Cancels every running call.
    pub fn cancel_all(&self) {
        let calls = self.inner.calls.lock().unwrap_or_else(PoisonError::into_inner);
        for running in calls.values() {
            running.token.cancel();
        }
    }

    /// Whether call `call_id` runs now.
    pub fn running(&self, call_id: &str) -> bool {
        self.inner.calls.lock().unwrap_or_else(PoisonError::into_inner).contains_key(call_id)
    }

    /// What call `call_id` hands down to calls made under it: while it runs, or for a while
    /// after it ended (a background program's calls come after its call answered).
    pub fn heritage(&self, call_id: &str) -> Option<Heritage> {
        let calls = self.inner.calls.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(running) = calls.get(call_id) {
            return Some(running.heritage.clone());
        }
        drop(calls);
        let retained = self.inner.retained.lock().unwrap_or_else(PoisonError::into_inner);
        retained.iter().rev().find(|(id, _)| id == call_id).map(|(_, h)| h.clone())
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
        let (parent, _p) = table.enter("p", None, None, Heritage::default()).unwrap();
        let (child, _c) = table.enter("c", Some("p"), None, Heritage::default()).unwrap();
        assert!(
            table.enter("p", None, None, Heritage::default()).is_none(),
            "ids are unique while running"
        );
        assert!(table.running("c"));
        assert!(table.cancel("c"));
        assert!(child.is_cancelled() && !parent.is_cancelled());
        let (second, _c2) = table.enter("c2", Some("p"), None, Heritage::default()).unwrap();
        table.cancel("p");
        assert!(second.is_cancelled());
        assert_eq!(table.active(), 3);
    }

    #[tokio::test]
    async fn an_exclusive_call_waits_for_shared_ones_and_a_cancelled_wait_gets_no_permit() {
        let table = CallTable::default();
        let token = CancellationToken::new();
        let shared = table.permit(None, true, &token).await;
        assert!(shared.is_some());
        assert!(table.permit(None, true, &token).await.is_some(), "shared permits overlap");
        let waiting = CancellationToken::new();
        let exclusive = {
            let (table, waiting) = (table.clone(), waiting.clone());
            tokio::spawn(async move { table.permit(None, false, &waiting).await.is_some() })
        };
        tokio::task::yield_now().await;
        waiting.cancel();
        assert!(!exclusive.await.unwrap(), "a cancelled wait returns without a permit");
        drop(shared);
        assert!(table.permit(None, false, &token).await.is_some());
    }

    #[tokio::test]
    async fn an_exclusive_call_of_one_lane_holds_up_no_other_lane() {
        let table = CallTable::default();
        let token = CancellationToken::new();
        let (agent, editor) = (Lane::new(), None);
        let _long_bash = table.permit(Some(&agent), false, &token).await.unwrap();
        let read = table.permit(editor, true, &token).await;
        assert!(read.is_some(), "the shared lane does not wait for another lane");
        let second_agent = table.permit(Some(&Lane::new()), false, &token).await;
        assert!(second_agent.is_some(), "nor does a second agent's lane");
        let same_lane = {
            let (table, agent, token) = (table.clone(), agent.clone(), token.clone());
            tokio::spawn(async move { table.permit(Some(&agent), true, &token).await.is_some() })
        };
        tokio::task::yield_now().await;
        assert!(!same_lane.is_finished(), "the same lane waits for its exclusive call");
    }

    #[tokio::test]
    async fn a_cancelled_call_gives_its_lane_back_before_its_body_returns() {
        let table = CallTable::default();
        let lane = Lane::new();
        let stuck = CancellationToken::new();
        // The permit of a call whose body never returns (it is kept alive below).
        let _held = table.permit(Some(&lane), false, &stuck).await.unwrap();
        stuck.cancel();
        let next = CancellationToken::new();
        let after = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            table.permit(Some(&lane), false, &next),
        )
        .await;
        assert!(after.is_ok_and(|p| p.is_some()), "the lane is free once the call is cancelled");
    }
}
