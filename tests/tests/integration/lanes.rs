//! The barrier orders one caller's calls, never another caller's: an agent's long `bash` holds
//! up neither the editor nor a second agent, its own later calls still wait their turn, a call
//! cancelled while its body is stuck gives the lane back at once, and in `toolhost mcp` a
//! `read` sent while a `bash` runs answers at once (the MCP client schedules its own calls).
#![allow(clippy::unwrap_used)]

use crate::server;

use crate::mcp;

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use toolhost_host::{CallRequest, Host, Lane};
use toolhost_protocol::card::CardStatus;

fn bash(command: &str) -> Value {
    json!({"command": command, "description": "wait"})
}

fn open(root: &std::path::Path) -> Arc<Host> {
    let opened =
        toolhost_host::session::open_session(&root.join(".sessions"), root, "lanes").unwrap();
    let config = toolhost_host::config::Config::default();
    toolhost_host::open_host(&config, root, Some(&opened)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_bash_of_one_agent_holds_up_neither_the_editor_nor_a_second_agent() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "one\ntwo\n").unwrap();
    let host = open(&root);
    let first_agent = Lane::new();

    // The first agent's exclusive call, running (its pending card is out).
    let mut long = host
        .call(CallRequest::new("bash", bash("sleep 120")).in_lane(first_agent.clone()))
        .unwrap();
    let long_card = long.started().await.unwrap();

    // The editor (the shared lane) reads, and a second agent writes: both finish meanwhile.
    let read = CallRequest::new("read", json!({"file_path": root.join("notes.txt")}));
    let read = host.run(read).await.unwrap();
    assert_eq!(read.card().status, CardStatus::Completed, "{}", read.card().rendered);
    let write = CallRequest::new(
        "write",
        json!({"file_path": root.join("other.txt"), "content": "from the second agent\n"}),
    )
    .in_lane(Lane::new());
    let write = host.run(write).await.unwrap();
    assert_eq!(write.card().status, CardStatus::Completed, "{}", write.card().rendered);
    assert!(host.call_running(&long_card.call_id), "the long bash still runs");

    // The first agent's own next call waits for its turn: no pending card while bash runs.
    let mut next = host
        .call(
            CallRequest::new("read", json!({"file_path": root.join("notes.txt")}))
                .in_lane(first_agent.clone()),
        )
        .unwrap();
    let next_card = {
        let started = next.started();
        tokio::pin!(started);
        let waited = tokio::time::timeout(Duration::from_millis(300), &mut started).await;
        assert!(waited.is_err(), "a call of the same lane started while its exclusive call ran");
        assert!(host.cancel_call(&long_card.call_id));
        started.await.unwrap()
    };
    assert_eq!(next_card.status, CardStatus::Pending);
    assert_eq!(next.finish().await.unwrap().card().status, CardStatus::Completed);
    assert_eq!(long.finish().await.unwrap().card().status, CardStatus::Failed);
}

#[test]
fn a_read_sent_while_a_bash_runs_in_toolhost_mcp_answers_at_once() {
    let env = server::Env::new();
    env.write("notes.txt", "one\n");
    let mut mcp = mcp::Mcp::spawn(&env, &["--standalone"]);
    mcp.initialize("two-agents");
    let long = mcp.send_request(
        "tools/call",
        json!({"name": "bash", "arguments": bash("touch begun; sleep 120")}),
    );
    // The bash really runs (it holds its turn) before the read is sent.
    let begun = env.root.join("begun");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !begun.exists() {
        assert!(std::time::Instant::now() < deadline, "the bash never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let read = json!({"name": "read", "arguments": {"file_path": env.root.join("notes.txt")}});
    let read = mcp.send_request("tools/call", read);
    let answer = mcp.response(&read);
    assert!(mcp::text_of(&answer["result"]).contains("one"), "{answer}");
    assert!(
        !mcp.seen.iter().any(|m| m.get("id") == Some(&long) && m.get("method").is_none()),
        "the bash answered first: the read waited behind it"
    );
    // Cancelled, the bash ends and the server, its stdin closed, exits.
    mcp.notify("notifications/cancelled", json!({"requestId": long, "reason": "done"}));
    mcp.close_stdin();
    assert!(mcp.wait_exit(Duration::from_secs(60)).is_some(), "toolhost mcp did not exit");
}
