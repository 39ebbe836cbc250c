//! A front end needs nothing of the host but its one call entry point (`Host::call`) and a
//! listener: the whole front end below (`TestFrontEnd`, under 40 lines) starts calls on behalf of
//! its caller and stops them from their cards, and the host gives it the pending card, the
//! call's live output, Stop, a child call under a parent, and the final card with the caller's
//! label.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use toolhost_host::{CallHandle, CallRequest, Host, HostListener};
use toolhost_protocol::card::{Card, CardStatus};

// --- the front end: everything it does goes through `Host::call` -----------------------------

/// What the front end has drawn: each card as it came, and the live output.
#[derive(Default)]
struct Screen {
    cards: Mutex<Vec<Card>>,
    output: Mutex<String>,
}

impl HostListener for Screen {
    fn card(&self, card: &Card) {
        self.cards.lock().unwrap().push(card.clone());
    }
    fn call_output(&self, _call_id: &str, text: &str) {
        self.output.lock().unwrap().push_str(text);
    }
}

struct TestFrontEnd {
    host: Arc<Host>,
    screen: Arc<Screen>,
}

impl TestFrontEnd {
    fn attach(host: Arc<Host>) -> Self {
        let screen = Arc::new(Screen::default());
        host.add_listener(screen.clone());
        TestFrontEnd { host, screen }
    }
    /// A call on behalf of this front end's user, under `parent` when given.
    fn start(&self, tool: &str, args: Value, parent: Option<&str>) -> CallHandle {
        let request = CallRequest::new(tool, args)
            .by(Some("test front end".to_owned()))
            .child_of(parent.map(str::to_owned));
        self.host.call(request).unwrap()
    }
    /// The Stop button of a card.
    fn stop(&self, card: &Card) -> bool {
        self.host.cancel_call(&card.call_id)
    }
}

// --- what it shows ----------------------------------------------------------------------------

fn bash(command: &str) -> Value {
    json!({"command": command, "description": "wait"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_front_end_of_a_few_lines_gets_pending_and_final_cards_output_stop_and_children() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let opened =
        toolhost_host::session::open_session(&root.join(".sessions"), &root, "front").unwrap();
    let config = toolhost_host::config::Config::default();
    let front =
        TestFrontEnd::attach(toolhost_host::open_host(&config, &root, Some(&opened)).unwrap());

    // A call with live output, stopped from its card.
    let mut parent = front.start("bash", bash("echo started; sleep 60"), None);
    let pending = parent.started().await.unwrap();
    assert_eq!(pending.status, CardStatus::Pending);
    assert_eq!(pending.caller.as_deref(), Some("test front end"));
    // A child of the running call: it takes no turn of its own at the barrier (the parent, an
    // exclusive call, holds it), it is listed, and stopping the parent stops it too.
    let mut child = front.start("bash", bash("echo child; sleep 60"), Some(&pending.call_id));
    let child_pending = child.started().await.unwrap();
    // Both calls' live output reaches the front end (throttled, so it may come a little later).
    while !["started", "child"].iter().all(|s| front.screen.output.lock().unwrap().contains(s)) {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(front.stop(&pending));
    let (parent_done, child_done) = (parent.finish().await.unwrap(), child.finish().await.unwrap());
    for (done, pending) in [(&parent_done.card(), &pending), (&child_done.card(), &child_pending)] {
        assert_eq!(done.call_id, pending.call_id);
        assert_eq!(done.status, CardStatus::Failed, "{}", done.rendered);
        assert_eq!(done.caller.as_deref(), Some("test front end"));
    }
    assert_eq!(
        parent_done.finalized.result.error().unwrap().info.as_ref().unwrap().code,
        "ABORTED"
    );
    // The listener drew every card: each call's pending and final one.
    let ids: Vec<(String, CardStatus)> =
        front.screen.cards.lock().unwrap().iter().map(|c| (c.call_id.clone(), c.status)).collect();
    assert_eq!(ids.len(), 4, "{ids:?}");
    // The log knows which call ran under which.
    opened.log.flush().await.unwrap();
    let log = std::fs::read_to_string(opened.log.log_path()).unwrap();
    let child_call = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "tool/call" && e["data"]["callId"] == child_pending.call_id.as_str())
        .unwrap();
    assert_eq!(child_call["data"]["parentCallId"], pending.call_id.as_str());
}
