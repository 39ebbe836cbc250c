//! What each `[session] durability` mode promises: a mutation's record is synced before its
//! append returns, always; a read-only call's result is written at once and synced within the
//! window (`batched`) or before its append returns (`every-call`).
#![allow(clippy::unwrap_used)]

use serde_json::json;
use std::time::{Duration, Instant};
use toolhost_protocol::ContentBlock;
use toolhost_protocol::session_log::{ToolCallEvent, ToolResultEvent};
use toolhost_session::{Durability, SYNC_WINDOW, SessionLog, read_session};

#[path = "support/fixture.rs"]
mod support;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn call(id: &str, name: &str) -> ToolCallEvent {
    ToolCallEvent {
        call_id: id.into(),
        name: name.into(),
        arguments: json!({"file_path": "a.txt"}),
        card: None,
        caller: None,
        parent_call_id: None,
    }
}

fn result(id: &str, name: &str) -> ToolResultEvent {
    ToolResultEvent {
        call_id: id.into(),
        name: name.into(),
        content: vec![ContentBlock::text("done")],
        is_error: false,
        error: None,
        meta: None,
        renderer_version: 1,
    }
}

fn file_len(log: &SessionLog) -> u64 {
    std::fs::metadata(log.log_path()).unwrap().len()
}

/// Waits until everything written to `log` is synced; returns how long that took.
fn wait_synced(log: &SessionLog, from: Instant) -> Duration {
    let deadline = from + Duration::from_secs(10);
    while log.durable_len() < file_len(log) {
        assert!(Instant::now() < deadline, "the written lines were never synced");
        std::thread::sleep(Duration::from_millis(1));
    }
    from.elapsed()
}

#[test]
fn batched_read_results_are_written_at_once_and_synced_within_the_window() {
    let f = support::fixture();
    let (log, _) = SessionLog::open(&f.sessions, &f.root, "s", true).unwrap();
    assert_eq!(log.durability(), Durability::Batched, "the default");
    rt().block_on(async {
        log.enqueue_tool_call(&call("r1", "read")).unwrap();
        let before = file_len(&log);
        let sent = Instant::now();
        log.append_read_only_result(&result("r1", "read")).await.unwrap();
        // Written without anyone waiting: the writer thread gets to it at once.
        let deadline = sent + Duration::from_secs(10);
        while file_len(&log) == before {
            assert!(Instant::now() < deadline, "the lines were never written");
            std::thread::sleep(Duration::from_millis(1));
        }
        let took = wait_synced(&log, sent);
        // The window plus the sync itself; generous, since a loaded machine delays both.
        assert!(took < SYNC_WINDOW + Duration::from_millis(990), "synced after {took:?}");
    });
    let view = read_session(log.log_path()).unwrap();
    assert_eq!(view.calls.len(), 1);
    assert!(view.calls[0].result.is_some(), "the call and its result, in order");
}

#[test]
fn a_mutation_is_synced_before_its_append_returns_and_takes_pending_reads_with_it() {
    let f = support::fixture();
    let (log, _) = SessionLog::open(&f.sessions, &f.root, "s", true).unwrap();
    rt().block_on(async {
        log.enqueue_tool_call(&call("r1", "read")).unwrap();
        log.append_read_only_result(&result("r1", "read")).await.unwrap();
        log.append_tool_call(&call("e1", "edit")).await.unwrap();
        assert_eq!(log.durable_len(), file_len(&log), "the call is synced before the body runs");
        log.append_tool_result(&result("e1", "edit")).await.unwrap();
        assert_eq!(log.durable_len(), file_len(&log), "synced before the answer");
    });
    let view = read_session(log.log_path()).unwrap();
    let names: Vec<&str> = view.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["read", "edit"]);
}

#[test]
fn every_call_syncs_a_read_result_before_its_append_returns() {
    let f = support::fixture();
    let (log, _) = SessionLog::open(&f.sessions, &f.root, "s", true).unwrap();
    log.set_durability(Durability::EveryCall);
    rt().block_on(async {
        for n in 0..3 {
            let id = format!("r{n}");
            log.enqueue_tool_call(&call(&id, "read")).unwrap();
            log.append_read_only_result(&result(&id, "read")).await.unwrap();
            assert_eq!(log.durable_len(), file_len(&log), "read {n}");
        }
    });
}

#[test]
fn closing_syncs_what_is_pending() {
    let f = support::fixture();
    let (log, _) = SessionLog::open(&f.sessions, &f.root, "s", true).unwrap();
    rt().block_on(async {
        log.enqueue_tool_call(&call("r1", "read")).unwrap();
        log.append_read_only_result(&result("r1", "read")).await.unwrap();
    });
    let path = log.log_path().to_path_buf();
    drop(log);
    let view = read_session(&path).unwrap();
    assert_eq!(view.calls.len(), 1);
    assert!(view.calls[0].result.is_some());
}

#[test]
fn a_burst_of_read_results_keeps_the_order_of_the_calls() {
    let f = support::fixture();
    let (log, _) = SessionLog::open(&f.sessions, &f.root, "s", true).unwrap();
    rt().block_on(async {
        for n in 0..300 {
            let id = format!("r{n}");
            log.enqueue_tool_call(&call(&id, "read")).unwrap();
            log.append_read_only_result(&result(&id, "read")).await.unwrap();
            if n % 50 == 49 {
                // A mutation in the middle: its lines go after every read before it.
                let id = format!("e{n}");
                log.append_tool_call(&call(&id, "edit")).await.unwrap();
                log.append_tool_result(&result(&id, "edit")).await.unwrap();
            }
        }
        log.flush().await.unwrap();
    });
    let view = read_session(log.log_path()).unwrap();
    assert_eq!(view.calls.len(), 306);
    assert!(view.calls.iter().all(|c| c.result.is_some()));
    let ids: Vec<&str> = view.calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(&ids[48..52], ["r48", "r49", "e49", "r50"]);
}
