//! Live vs replay: a scripted session of more than 30 calls over the file tools and `bash`
//! (successes, failures, spills, post-execute replacements, terminal cards) is replayed from its log alone, and every card and
//! Native text is byte-identical to what the live session produced.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::sync::Arc;
use toolhost_contract::{BoxFuture, ToolError};
use toolhost_host::CallRequest;
use toolhost_host::config::Config;
use toolhost_host::session::open_session;
use toolhost_protocol::ContentBlock;
use toolhost_registry::{CanonicalResult, Execution, PostDecision, PostExecute, PostNext};

/// Replaces the content of `glob` results (a presentation policy; value and meta are kept).
struct RedactGlob;

impl PostExecute for RedactGlob {
    fn decide<'a>(
        &'a self,
        exec: &'a Execution,
        _result: &'a CanonicalResult,
        next: PostNext<'a>,
    ) -> BoxFuture<'a, Result<PostDecision, ToolError>> {
        Box::pin(async move {
            let decision = next.run().await?;
            if exec.name == "glob"
                && exec.arguments.get("pattern").and_then(Value::as_str) == Some("*.secret")
            {
                return Ok(PostDecision::Accept {
                    content: Some(vec![ContentBlock::text("(redacted by policy)")]),
                    value: None,
                    additional_contexts: Vec::new(),
                });
            }
            Ok(decision)
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayed_cards_and_text_equal_the_live_ones() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let root = root.canonicalize().unwrap();
    for i in 0..5 {
        std::fs::write(root.join(format!("f{i}.txt")), format!("alpha {i}\nbeta\ngamma\n"))
            .unwrap();
    }
    std::fs::write(root.join("x.secret"), "s\n").unwrap();
    let big: String = (0..3000).map(|i| format!("row {i} needle\n")).collect();
    std::fs::write(root.join("big.txt"), big).unwrap();
    let opened = open_session(&dir.path().join("sessions"), &root, "fidelity").unwrap();
    let config = Config { spill_max_inline_bytes: 4096, ..Config::default() };
    let host = toolhost_host::open_host(&config, &root, Some(&opened)).unwrap();
    host.registry().add_post_execute(Arc::new(RedactGlob), false);

    let mut calls: Vec<(&str, Value)> = Vec::new();
    for i in 0..5 {
        let path = format!("f{i}.txt");
        calls.push(("read", json!({"file_path": path})));
        calls.push((
            "edit",
            json!({"file_path": path, "old_string": "beta", "new_string": format!("BETA {i}")}),
        ));
        calls
            .push(("edit", json!({"file_path": path, "old_string": "missing", "new_string": "x"})));
    }
    calls.extend([
        ("write", json!({"file_path": "new.txt", "content": "one\ntwo\n"})),
        ("write", json!({"file_path": "f0.txt", "content": "overwrite\n"})),
        ("read", json!({"file_path": "f0.txt", "offset": 2})),
        ("read", json!({"file_path": "nope.txt"})),
        ("glob", json!({"pattern": "*.txt"})),
        ("glob", json!({"pattern": "*.secret"})),
        ("grep", json!({"pattern": "alpha"})),
        ("grep", json!({"pattern": "needle"})),
        ("grep", json!({"pattern": "("})),
        ("read", json!({"file_path": "big.txt", "limit": 5})),
        ("edit", json!({"file_path": "../outside", "old_string": "a", "new_string": "b"})),
        ("write", json!({"file_path": ".git/config", "content": "x"})),
        ("nope", json!({})),
        ("read", json!({"offset": "x"})),
        ("glob", json!({"pattern": "["})),
        ("edit", json!({"file_path": "new.txt", "old_string": "one", "new_string": "ONE"})),
        // Terminal cards: exit pill, signal, timeout and spill link come back from the log.
        ("bash", json!({"command": "echo out; echo err >&2; exit 3", "description": "exit"})),
        ("bash", json!({"command": "sleep 5", "description": "slow", "timeoutMs": 200})),
        ("bash", json!({"command": "head -c 100000 /dev/zero | tr '\\0' y", "description": "big"})),
        ("bash", json!({"command": "true", "description": "bg", "run_in_background": true})),
        ("bash", json!({"command": "", "description": "empty"})),
    ]);
    assert!(calls.len() >= 30);
    let mut live = Vec::new();
    for (idx, (tool, args)) in calls.iter().enumerate() {
        let outcome =
            host.run(CallRequest::new(*tool, args.clone()).id(format!("c{idx}"))).await.unwrap();
        let text = toolhost_protocol::content::joined_text(outcome.finalized.result.content());
        live.push((outcome.card(), text));
    }
    let kinds: Vec<bool> =
        live.iter().map(|(c, _)| c.status == toolhost_protocol::CardStatus::Failed).collect();
    assert!(kinds.iter().filter(|f| **f).count() >= 8, "the script must include failures");
    assert!(live.iter().any(|(_, t)| t.contains("Full formatted result stored at")
        || t.contains("Full grep result stored at")));
    assert!(live.iter().any(|(_, t)| t == "(redacted by policy)"));

    opened.log.flush().await.unwrap();
    let replayed = toolhost_host::session::replay(host.registry(), opened.log.log_path()).unwrap();
    assert_eq!(replayed.len(), live.len());
    for ((card, text), again) in live.iter().zip(&replayed) {
        assert_eq!(&again.card, card, "card of {} differs on replay", card.call_id);
        assert_eq!(&again.text, text, "Native text of {} differs on replay", card.call_id);
        assert!(!again.stale_renderer);
    }
}
