//! Review mode over the wire (`toolhost serve` and a scripted editor): the `toolhost/review`
//! question carries the call and its hunks, only the accepted hunks are written, a cancelled call
//! or a timeout withdraws the question (`$/cancelRequest`), no reviewing editor means the fallback,
//! and an MCP agent (Python `mcp`) attached to the editor gets progress while the person decides,
//! then the result naming the rejected hunk.
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::{Value, json};
use server::{Env, call_err, call_ok, raw_request, reviewing_editor, wait_response};
use std::time::Duration;
use toolhost_harness::client::Client;

const TWO_HUNKS: &str = "line 1\nline 2 old\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11 old\nline 12\n";

fn set_review(client: &mut Client, params: Value) -> Value {
    client.request("toolhost/setReview", params).unwrap()
}

fn edit_both(client: &mut Client) -> Value {
    call_ok(client, "read", json!({"file_path": "a.txt"}));
    client
        .call_tool("edit", json!({"file_path": "a.txt", "old_string": " old", "new_string": " new", "replace_all": true}))
        .unwrap()
}

#[test]
fn the_question_carries_the_call_and_only_accepted_hunks_are_written() {
    let env = Env::new();
    env.write("a.txt", TWO_HUNKS);
    let (mut client, asked) = reviewing_editor(
        &env,
        Some(json!({"accepted": [1], "comment": "not line 2"})),
        Duration::ZERO,
    );
    let settings = set_review(&mut client, json!({"mode": "ask"}));
    assert_eq!(settings, json!({"mode": "ask", "timeoutMs": 600000, "fallback": "deny"}));
    let out = edit_both(&mut client);
    assert_eq!(out["result"]["isError"], false, "{out}");

    let question = asked.lock().unwrap()[0].clone();
    assert_eq!(question["callId"], out["callId"]);
    assert_eq!(question["tool"], "edit");
    assert_eq!(question["title"], "Edit a.txt");
    assert_eq!(question["path"], env.root.join("a.txt").display().to_string());
    assert_eq!(question["before"], TWO_HUNKS);
    assert_eq!(question["after"], TWO_HUNKS.replace(" old", " new"));
    assert!(question["requestId"].is_number());
    let hunks = question["hunks"].as_array().unwrap();
    assert_eq!(hunks.len(), 2);
    assert_eq!(hunks[0]["header"], "@@ -1,5 +1,5 @@");

    let written = std::fs::read_to_string(env.root.join("a.txt")).unwrap();
    assert_eq!(written, TWO_HUNKS.replace("line 11 old", "line 11 new"));
    let text = out["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("rejected 1 of 2 hunks: hunk 1 (line 2 of the original)"), "{text}");
    assert!(text.ends_with("User comment: not line 2"), "{text}");
    // The card shows what was written, not what was proposed.
    let rendered = out["card"]["rendered"].as_str().unwrap();
    assert!(
        rendered.contains("-line 11 old\n+line 11 new") && !rendered.contains("line 2 new"),
        "{rendered}"
    );
}

#[test]
fn a_cancelled_call_withdraws_its_question() {
    let env = Env::new();
    env.write("a.txt", TWO_HUNKS);
    let (mut client, asked) = reviewing_editor(&env, None, Duration::ZERO);
    set_review(&mut client, json!({"mode": "ask"}));
    call_ok(&mut client, "read", json!({"file_path": "a.txt"}));
    let args = json!({"file_path": "a.txt", "old_string": " old", "new_string": " new", "replace_all": true});
    client
        .write_raw(&raw_request(
            json!(900),
            "toolhost/callTool",
            json!({"name": "edit", "arguments": args, "callId": "call_under_review"}),
        ))
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while asked.lock().unwrap().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the question never came");
        std::thread::sleep(Duration::from_millis(10));
    }
    let request_id = asked.lock().unwrap()[0]["requestId"].clone();
    let cancelled =
        client.request("toolhost/cancelCall", json!({"callId": "call_under_review"})).unwrap();
    assert_eq!(cancelled["cancelled"], true);
    let withdrawn = client.wait_for(Duration::from_secs(10), |m| {
        m["method"] == "$/cancelRequest" && m["params"]["id"] == request_id
    });
    assert!(withdrawn.is_some(), "the question was not withdrawn");
    let response = wait_response(&mut client, &json!(900), Duration::from_secs(10)).unwrap();
    assert_eq!(response["result"]["result"]["error"]["info"]["code"], "ABORTED", "{response}");
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), TWO_HUNKS);
}

#[test]
fn an_unanswered_question_times_out_is_withdrawn_and_the_fallback_applies() {
    let env = Env::new();
    env.write("a.txt", TWO_HUNKS);
    let (mut client, asked) = reviewing_editor(&env, None, Duration::ZERO);
    set_review(&mut client, json!({"mode": "ask", "timeoutMs": 300}));
    call_ok(&mut client, "read", json!({"file_path": "a.txt"}));
    let args = json!({"file_path": "a.txt", "old_string": "line 2 old", "new_string": "x"});
    let out = call_err(&mut client, "edit", args.clone(), "REVIEW_TIMEOUT");
    assert!(out["result"]["content"][0]["text"].as_str().unwrap().contains("within 300 ms"));
    let request_id = asked.lock().unwrap()[0]["requestId"].clone();
    assert!(
        client
            .wait_for(Duration::from_secs(5), |m| m["method"] == "$/cancelRequest"
                && m["params"]["id"] == request_id)
            .is_some()
    );
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), TWO_HUNKS);
    // With the accept fallback the change is written, and the model is told nobody reviewed it.
    set_review(&mut client, json!({"fallback": "accept"}));
    let out = call_ok(&mut client, "edit", args);
    let text = out["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.ends_with("This change was written without review: nobody reviewed it within 300 ms."),
        "{text}"
    );
}

#[test]
fn without_a_reviewing_editor_the_fallback_denies_at_once() {
    let env = Env::new();
    env.write("a.txt", TWO_HUNKS);
    let mut client = env.start(json!({"review": {"mode": "ask"}}));
    call_ok(&mut client, "read", json!({"file_path": "a.txt"}));
    let started = std::time::Instant::now();
    call_err(
        &mut client,
        "edit",
        json!({"file_path": "a.txt", "old_string": "line 2 old", "new_string": "x"}),
        "REVIEW_UNAVAILABLE",
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // A new file under review: the whole content is one hunk; reads are never reviewed.
    call_err(
        &mut client,
        "write",
        json!({"file_path": "new.txt", "content": "x\n"}),
        "REVIEW_UNAVAILABLE",
    );
    assert!(!env.root.join("new.txt").exists());
    let off = set_review(&mut client, json!({"mode": "off"}));
    assert_eq!(off["mode"], "off");
    call_ok(&mut client, "write", json!({"file_path": "new.txt", "content": "x\n"}));
}

#[test]
fn an_mcp_agent_gets_progress_while_the_person_decides_then_the_rejected_hunk() {
    let env = Env::new();
    env.write("a.txt", TWO_HUNKS);
    // The person takes a few seconds (progress is reported every 2 s), then keeps hunk 1 only.
    let answer = json!({"accepted": [0], "comment": "leave line 11 alone"});
    let (mut editor, asked) = reviewing_editor(&env, Some(answer), Duration::from_millis(4500));
    set_review(&mut editor, json!({"mode": "ask"}));
    let summary = server::run_python_client("python_review.py", &env);
    let progress: Vec<&str> =
        summary["progress"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert!(
        progress.iter().any(|p| p.contains("waiting for the user's review of 2 hunks in a.txt")),
        "{progress:?}"
    );
    assert_eq!(summary["isError"], false);
    let text = summary["text"].as_str().unwrap();
    assert!(text.contains("rejected 1 of 2 hunks: hunk 2 (line 11 of the original)"), "{text}");
    assert!(text.contains("User comment: leave line 11 alone"), "{text}");
    assert_eq!(asked.lock().unwrap()[0]["caller"], "mcp");
    assert_eq!(
        std::fs::read_to_string(env.root.join("a.txt")).unwrap(),
        TWO_HUNKS.replace("line 2 old", "line 2 new")
    );
}
