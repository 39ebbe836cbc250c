//! A `tool/call`'s large strings go to the blob store once and come back on reading: the line
//! stays small, the arguments and the presentation read back whole (also through crash repair and
//! the held, unsynced path), arguments that look like references are left alone, and a lost blob
//! costs its string, never the read or the replay.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use toolhost_protocol::ContentBlock;
use toolhost_protocol::card::{self, CallOrigin, CallPresentation, CardKind, CardOutcome};
use toolhost_protocol::session_log::{ToolCallEvent, ToolResultEvent};
use toolhost_session::{
    BLOB_DIR_NAME, LARGE_STRING_BYTES, SessionLog, blob_hash, read_session, replay_cards,
};

#[path = "support/fixture.rs"]
mod support;
use support::fixture;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// Text of `len` bytes whose lines differ, so it is no run of one byte.
fn text_of(len: usize) -> String {
    let mut text = String::with_capacity(len + 64);
    let mut n = 0;
    while text.len() < len {
        text.push_str(&format!("line {n:06} of a large write\n"));
        n += 1;
    }
    text.truncate(len);
    text
}

/// A `write` call as the host logs it: the content in the arguments and in the preview.
fn write_call(id: &str, content: &str) -> ToolCallEvent {
    let card = CallPresentation::new(CardKind::Diff, "Write big.txt")
        .with_location("big.txt", 1)
        .with_preview("big.txt", None, content)
        .preview_is_result();
    ToolCallEvent {
        call_id: id.into(),
        name: "write".into(),
        arguments: json!({"file_path": "big.txt", "content": content}),
        card: Some(card),
        caller: None,
        parent_call_id: None,
    }
}

fn done(id: &str, name: &str) -> ToolResultEvent {
    ToolResultEvent {
        call_id: id.into(),
        name: name.into(),
        content: vec![ContentBlock::text("Created file")],
        is_error: false,
        error: None,
        meta: Some(json!({"diffs": []})),
        renderer_version: 1,
    }
}

fn lines(path: &Path) -> Vec<(usize, Value)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| (l.len(), serde_json::from_str(l).unwrap()))
        .collect()
}

fn blob_files(log: &Path) -> Vec<PathBuf> {
    let dir = log.parent().unwrap().join(BLOB_DIR_NAME);
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect()
}

/// The card the live host builds for `call` ended with `result`.
fn live_card(call: &ToolCallEvent, result: &ToolResultEvent, root: &str) -> card::Card {
    let outcome = CardOutcome::Done {
        content: &result.content,
        is_error: result.is_error,
        meta: result.meta.as_ref(),
    };
    card::build(CallOrigin::new(&call.call_id, &call.name), &call.presentation(), root, outcome)
}

#[test]
fn a_large_write_keeps_its_content_in_one_blob_and_reads_back_whole() {
    let fx = fixture();
    let rt = rt();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, "s", true).unwrap();
    let path = log.log_path().to_owned();
    let content = text_of(256 * 1024);
    let mut call = write_call("c1", &content);
    // Keys that need escaping in a pointer, and a second large string of the arguments.
    let other = text_of(LARGE_STRING_BYTES + 1).replace("line", "LINE");
    call.arguments["odd/key~"] = json!([1, other.clone()]);
    let result = done("c1", "write");
    rt.block_on(async {
        log.append_tool_call(&call).await.unwrap();
        log.append_tool_result(&result).await.unwrap();
    });
    // What the host stores for the file's `fs/change` is the same blob.
    let after = log.blobs().put_bytes(content.as_bytes()).unwrap();
    drop(log);

    let on_disk = lines(&path);
    let (len, line) = &on_disk[1];
    assert!(*len < 2048, "the tool/call line is {len} bytes");
    assert_eq!(line["data"]["arguments"]["content"], "");
    assert_eq!(line["data"]["card"]["preview"][0]["newText"], "");
    assert_eq!(line["data"]["arguments"]["file_path"], "big.txt", "small strings stay inline");
    assert_eq!(
        line["externalized"],
        json!([
            {"pointer": "/arguments/content", "blob": after, "bytes": content.len()},
            {"pointer": "/arguments/odd~1key~0/1", "blob": blob_hash(other.as_bytes()),
             "bytes": other.len()},
            {"pointer": "/card/preview/0/newText", "blob": after, "bytes": content.len()},
        ]),
    );
    assert!(on_disk[2].1.get("externalized").is_none(), "only tool/call lines");
    assert_eq!(blob_files(&path).len(), 2, "the content once, the other string once");

    let view = read_session(&path).unwrap();
    let record = &view.calls[0];
    assert_eq!(record.arguments, call.arguments);
    assert_eq!(Some(&record.presentation), call.card.as_ref());
    assert!(record.strings_not_kept.is_empty());
    let root = fx.root.to_str().unwrap();
    let replayed = replay_cards(&view, root, |_| Some(1));
    assert_eq!(replayed[0].card, live_card(&call, &result, root));

    // The writer's own reading (crash repair on open) restores them as well.
    let (_log, report) = SessionLog::open(&fx.sessions, &fx.root, "s", false).unwrap();
    assert_eq!(report.view.calls[0].arguments, call.arguments);
}

#[test]
fn a_small_call_is_written_as_before() {
    let fx = fixture();
    let rt = rt();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, "s", true).unwrap();
    let path = log.log_path().to_owned();
    let small = write_call("c1", "hello\n");
    // Over the threshold in all, but no single string is.
    let many = ToolCallEvent {
        arguments: json!({"parts": vec![text_of(LARGE_STRING_BYTES); 3]}),
        ..write_call("c2", "x")
    };
    rt.block_on(async {
        log.append_tool_call(&small).await.unwrap();
        log.append_tool_call(&many).await.unwrap();
    });
    drop(log);
    let on_disk = lines(&path);
    assert_eq!(
        on_disk[1].1,
        json!({"type": "tool/call", "seq": 0, "time": on_disk[1].1["time"],
               "data": serde_json::to_value(&small).unwrap()})
    );
    assert!(on_disk[2].0 > 3 * LARGE_STRING_BYTES);
    assert_eq!(on_disk[2].1["data"], serde_json::to_value(&many).unwrap());
    assert!(on_disk[2].1.get("externalized").is_none());
    assert!(
        !path.parent().unwrap().join(BLOB_DIR_NAME).exists(),
        "no blob work for calls without a large string"
    );
}

#[test]
fn arguments_that_look_like_references_are_left_alone() {
    let fx = fixture();
    let rt = rt();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, "s", true).unwrap();
    let path = log.log_path().to_owned();
    let hash = log.blobs().put_bytes(b"hello").unwrap();
    let args = json!({
        "externalized": [{"pointer": "/arguments/x", "blob": hash, "bytes": 5}],
        "x": "",
        "y": format!("blob:sha256:{hash}"),
    });
    let call = ToolCallEvent { arguments: args.clone(), card: None, ..write_call("c1", "") };
    rt.block_on(log.append_tool_call(&call)).unwrap();
    drop(log);
    let view = read_session(&path).unwrap();
    assert_eq!(view.calls[0].arguments, args);
    assert!(view.calls[0].strings_not_kept.is_empty());
}

#[test]
fn a_lost_blob_costs_its_string_not_the_replay() {
    let fx = fixture();
    let rt = rt();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, "s", true).unwrap();
    let path = log.log_path().to_owned();
    let lost = text_of(64 * 1024);
    let damaged = text_of(32 * 1024).replace("line", "LINE");
    let call = ToolCallEvent {
        arguments: json!({"file_path": "big.txt", "content": lost, "also": damaged}),
        ..write_call("c1", &lost)
    };
    rt.block_on(async {
        log.append_tool_call(&call).await.unwrap();
        log.append_tool_result(&done("c1", "write")).await.unwrap();
        // A later call replays normally.
        log.append_tool_call(&write_call("c2", "small\n")).await.unwrap();
        log.append_tool_result(&done("c2", "write")).await.unwrap();
    });
    let lost_blob = log.blobs().path_of(&blob_hash(lost.as_bytes())).unwrap();
    let damaged_blob = log.blobs().path_of(&blob_hash(damaged.as_bytes())).unwrap();
    drop(log);
    std::fs::remove_file(lost_blob).unwrap();
    std::fs::write(damaged_blob, "short").unwrap();

    let view = read_session(&path).unwrap();
    let record = &view.calls[0];
    let mut not_kept = record.strings_not_kept.clone();
    not_kept.sort();
    assert_eq!(not_kept, vec!["/arguments/also", "/arguments/content", "/card/preview/0/newText"]);
    assert_eq!(record.arguments, json!({"file_path": "big.txt", "content": "", "also": ""}));
    assert_eq!(record.presentation.preview[0].new_text, "");
    assert_eq!(record.presentation.title, "Write big.txt");
    let cards = replay_cards(&view, fx.root.to_str().unwrap(), |_| Some(1));
    assert_eq!(cards.len(), 2);
    assert_eq!(cards[0].card.title, "Write big.txt");
    assert_eq!(cards[0].card.status.as_str(), "completed");
    assert_eq!(view.calls[1].arguments["content"], "small\n");
    // Reopening (repair) reads it the same way.
    let (_log, report) = SessionLog::open(&fx.sessions, &fx.root, "s", false).unwrap();
    assert_eq!(report.view.calls[0].strings_not_kept.len(), 3);
}

#[test]
fn a_held_call_keeps_its_large_strings_too_and_repair_reads_them() {
    let fx = fixture();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, "s", true).unwrap();
    let path = log.log_path().to_owned();
    let pattern = text_of(8 * 1024);
    let call = ToolCallEvent {
        name: "grep".into(),
        arguments: json!({"pattern": pattern}),
        card: None,
        ..write_call("c1", "")
    };
    // Read-only calls are held unsynced; closing the log commits them. No result: the process
    // "stopped" while the call ran.
    log.enqueue_tool_call(&call).unwrap();
    drop(log);
    assert_eq!(lines(&path)[1].1["data"]["arguments"]["pattern"], "");

    let (_log, report) = SessionLog::open(&fx.sessions, &fx.root, "s", false).unwrap();
    assert_eq!(report.synthetic_results, vec!["c1".to_owned()]);
    assert_eq!(report.view.calls[0].arguments, call.arguments);
    assert_eq!(report.view.calls[0].presentation, call.presentation(), "legacy presentation");
}

#[test]
fn a_blob_store_that_cannot_be_written_leaves_the_record_whole() {
    let fx = fixture();
    let rt = rt();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, "s", true).unwrap();
    let path = log.log_path().to_owned();
    // A file where the blob folder would be created.
    std::fs::write(path.parent().unwrap().join(BLOB_DIR_NAME), "not a folder").unwrap();
    let content = text_of(16 * 1024);
    let call = write_call("c1", &content);
    rt.block_on(log.append_tool_call(&call)).unwrap();
    drop(log);
    let on_disk = lines(&path);
    assert_eq!(on_disk[1].1["data"]["arguments"]["content"], content.as_str());
    assert!(on_disk[1].1.get("externalized").is_none());
    assert_eq!(read_session(&path).unwrap().calls[0].arguments, call.arguments);
}
