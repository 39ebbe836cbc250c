//! A damaged log still serves what it can: a salvaging read steps over the damage and says what
//! it skipped, opening names the command that repairs it, and the repair keeps every readable
//! record (renumbered past the gap), moves the damage aside byte for byte and lets the session
//! continue.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use toolhost_protocol::ContentBlock;
use toolhost_protocol::session_log::{ToolCallEvent, ToolResultEvent};
use toolhost_session::{
    DAMAGED_FILE_NAME, SessionError, SessionLog, read_session, read_session_salvaging,
    repair_session,
};

#[path = "support/fixture.rs"]
mod support;
use support::{Fixture, fixture};

fn call(id: &str) -> ToolCallEvent {
    ToolCallEvent {
        call_id: id.into(),
        name: "read".into(),
        arguments: json!({"file_path": format!("{id}.txt")}),
        card: None,
        caller: None,
        parent_call_id: None,
    }
}

fn result(id: &str) -> ToolResultEvent {
    ToolResultEvent {
        call_id: id.into(),
        name: "read".into(),
        content: vec![ContentBlock::text(format!("text of {id}"))],
        is_error: false,
        error: None,
        meta: None,
        renderer_version: 1,
    }
}

/// Session `s` with five finished calls c0..c4 (seqs 0..9); returns the log's path.
fn five_calls(fx: &Fixture) -> PathBuf {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, "s", true).unwrap();
    rt.block_on(async {
        for i in 0..5 {
            let id = format!("c{i}");
            log.append_tool_call(&call(&id)).await.unwrap();
            log.append_tool_result(&result(&id)).await.unwrap();
        }
    });
    log.log_path().to_owned()
}

/// Byte range of 1-based line `n`, newline included.
fn line_range(bytes: &[u8], n: usize) -> std::ops::Range<usize> {
    let mut start = 0;
    for _ in 1..n {
        start += bytes[start..].iter().position(|&b| b == b'\n').unwrap() + 1;
    }
    let end = start + bytes[start..].iter().position(|&b| b == b'\n').unwrap() + 1;
    start..end
}

/// Sets the byte in the middle of line `n` to `to`; returns the damaged line as it was.
fn corrupt_line(path: &Path, n: usize, to: u8) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    let range = line_range(&bytes, n);
    let middle = range.start + (range.end - range.start) / 2;
    bytes[middle] = to;
    let damaged = bytes[range].to_vec();
    std::fs::write(path, &bytes).unwrap();
    damaged
}

fn call_ids(path: &Path) -> Vec<String> {
    read_session_salvaging(path).unwrap().calls.iter().map(|c| c.call_id.clone()).collect()
}

#[test]
fn a_corrupt_byte_mid_log_is_skipped_and_named_by_a_salvaging_read() {
    let fx = fixture();
    let path = five_calls(&fx);
    // Line 6 is seq 4, the tool/call of c2.
    corrupt_line(&path, 6, b'\x01');
    assert_eq!(read_session(&path).unwrap_err().code(), "SESSION_CORRUPT");
    let view = read_session_salvaging(&path).unwrap();
    assert_eq!(view.skipped.len(), 1);
    let skipped = &view.skipped[0];
    assert_eq!((skipped.line, skipped.lines, skipped.seq), (6, 1, 4));
    let bytes = std::fs::read(&path).unwrap();
    let range = line_range(&bytes, 6);
    assert_eq!((skipped.offset, skipped.bytes), (range.start as u64, range.len() as u64));
    // Every call is there; c2 only through its result (its call line is gone).
    let ids: Vec<&str> = view.calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids, ["c0", "c1", "c2", "c3", "c4"]);
    assert_eq!(view.calls[2].arguments, Value::Null);
    assert_eq!(view.calls[3].arguments, json!({"file_path": "c3.txt"}));
    assert_eq!(view.next_seq, 10);
}

#[test]
fn opening_a_damaged_log_names_the_repair_command_and_changes_nothing() {
    let fx = fixture();
    let path = five_calls(&fx);
    corrupt_line(&path, 4, b'#');
    let before = std::fs::read(&path).unwrap();
    let err = SessionLog::open(&fx.sessions, &fx.root, "s", false).unwrap_err();
    assert_eq!(err.code(), "SESSION_CORRUPT");
    let text = err.to_string();
    assert!(text.contains("line 4") && text.contains("`toolhost sessions repair s`"), "{text}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn repair_moves_the_damage_aside_renumbers_what_follows_and_the_session_continues() {
    let fx = fixture();
    let path = five_calls(&fx);
    let original = std::fs::read(&path).unwrap();
    // A newline in the middle of line 7 (c2's result) splits it into two unreadable lines.
    let damaged = corrupt_line(&path, 7, b'\n');
    let report = repair_session(&fx.sessions, &fx.root, "s").unwrap();
    assert_eq!(report.moved.len(), 1);
    assert_eq!((report.moved[0].line, report.moved[0].lines), (7, 2));
    assert_eq!((report.kept, report.renumbered, report.header_rewritten), (9, 4, false));
    let dir = path.parent().unwrap();
    assert_eq!(report.moved_to, dir.join(DAMAGED_FILE_NAME));
    assert_eq!(std::fs::read(&report.moved_to).unwrap(), damaged, "moved aside, byte for byte");
    // Everything before the damage is untouched.
    let repaired = std::fs::read(&path).unwrap();
    let before_damage = line_range(&original, 7).start;
    assert_eq!(repaired[..before_damage], original[..before_damage]);

    // The strict reader and the writer accept it; c2 lost its result and gets an unknown outcome.
    let view = read_session(&path).unwrap();
    assert_eq!(view.next_seq, 9);
    let (log, report) = SessionLog::open(&fx.sessions, &fx.root, "s", false).unwrap();
    assert_eq!(report.synthetic_results, ["c2"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let seq = rt.block_on(log.append_tool_call(&call("c5"))).unwrap();
    assert_eq!(seq, 10, "seq 9 is c2's synthetic result");
    drop(log);
    let ids: Vec<String> =
        read_session(&path).unwrap().calls.into_iter().map(|c| c.call_id).collect();
    assert_eq!(ids, ["c0", "c1", "c2", "c3", "c4", "c5"]);

    // A second repair finds nothing to do and writes nothing.
    let again = repair_session(&fx.sessions, &fx.root, "s").unwrap();
    assert!(again.moved.is_empty());
    assert_eq!(std::fs::read(&again.moved_to).unwrap(), damaged);
}

#[test]
fn repair_rewrites_an_unreadable_header_and_refuses_a_session_in_use() {
    let fx = fixture();
    let path = five_calls(&fx);
    corrupt_line(&path, 1, b'\0');
    assert_eq!(call_ids(&path).len(), 5, "the records read without their header");
    let report = repair_session(&fx.sessions, &fx.root, "s").unwrap();
    assert!(report.header_rewritten);
    assert_eq!((report.kept, report.renumbered), (10, 0));
    let view = read_session(&path).unwrap();
    assert_eq!(
        (view.header.id.as_str(), view.header.cwd.as_str()),
        ("s", fx.root.to_str().unwrap())
    );

    let (_log, _) = SessionLog::open(&fx.sessions, &fx.root, "s", false).unwrap();
    let err = repair_session(&fx.sessions, &fx.root, "s").unwrap_err();
    assert!(matches!(err, SessionError::Locked(_)), "{err:?}");
}

#[test]
fn a_record_out_of_sequence_is_damage_too() {
    let fx = fixture();
    let path = five_calls(&fx);
    // seq 2 (line 4) turned into seq 7: a digit hit by the corrupt byte.
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("\"seq\":2,", "\"seq\":7,", 1)).unwrap();
    let view = read_session_salvaging(&path).unwrap();
    assert_eq!((view.skipped[0].line, view.skipped[0].seq), (4, 2));
    assert!(view.skipped[0].reason.contains("seq 7 where 2 was expected"), "{:?}", view.skipped);
    assert_eq!(view.calls.len(), 5);
    repair_session(&fx.sessions, &fx.root, "s").unwrap();
    assert_eq!(read_session(&path).unwrap().next_seq, 9);
}
