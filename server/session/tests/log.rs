//! Writer, repair, reader and replay behaviour of the session log, through the public API.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use toolhost_protocol::ContentBlock;
use toolhost_protocol::card::{CardKind, CardStatus};
use toolhost_protocol::session_log::{ToolCallEvent, ToolResultEvent};
use toolhost_session::{
    OUTCOME_UNKNOWN_CODE, SessionError, SessionLog, image_data, read_session, replay_cards,
};

#[path = "support/fixture.rs"]
mod support;
use support::Fixture;

fn fixture() -> Fixture {
    support::fixture_at("state/toolhost/sessions")
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn call(id: &str, name: &str, args: Value) -> ToolCallEvent {
    ToolCallEvent {
        call_id: id.into(),
        name: name.into(),
        arguments: args,
        card: None,
        caller: None,
        parent_call_id: None,
    }
}

fn result(id: &str, name: &str, text: &str, meta: Option<Value>) -> ToolResultEvent {
    ToolResultEvent {
        call_id: id.into(),
        name: name.into(),
        content: vec![ContentBlock::text(text)],
        is_error: false,
        error: None,
        meta,
        renderer_version: 1,
    }
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn round_trip_reopen_restores_events_and_ledger() {
    let fx = fixture();
    let rt = rt();
    let (log, report) = SessionLog::open(&fx.sessions, &fx.root, "s1", true).unwrap();
    assert!(report.created);
    assert!(report.torn_tail.is_none() && report.synthetic_results.is_empty());
    let path = log.log_path().to_owned();

    let edit_args = json!({"file_path": "a.txt", "old_string": "x", "new_string": "y"});
    let meta = json!({"diffs": [], "patch": "--- a/a.txt\n+++ b/a.txt\n@@ -1,1 +1,1 @@\n-x\n+y\n"});
    rt.block_on(async {
        assert_eq!(log.append_tool_call(&call("c1", "edit", edit_args.clone())).await.unwrap(), 0);
        log.observe("/w/a.txt", Some("v1"));
        let r = result(
            "c1",
            "edit",
            "The file a.txt has been updated successfully.",
            Some(meta.clone()),
        );
        assert_eq!(log.append_tool_result(&r).await.unwrap(), 2, "the observe is ordered before");
        assert_eq!(log.append_fs_observed("/w/b.txt", None).await.unwrap(), 3);
        let hook = log.observer();
        hook("/w/a.txt", Some("v2"));
        log.flush().await.unwrap();
    });

    // A second opener (even in this process) is refused while the lock is held.
    let err = SessionLog::open(&fx.sessions, &fx.root, "s1", false).unwrap_err();
    assert!(matches!(err, SessionError::Locked(_)), "{err:?}");
    assert_eq!(err.code(), "SESSION_LOCKED");
    drop(log);

    let on_disk = lines(&path);
    assert_eq!(on_disk[0]["type"], "session");
    assert_eq!(on_disk[0]["version"], 1);
    assert_eq!(on_disk[0]["id"], "s1");
    assert_eq!(on_disk[0]["cwd"], fx.root.to_str().unwrap());
    let seqs: Vec<u64> = on_disk[1..].iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, vec![0, 1, 2, 3, 4]);
    assert_eq!(on_disk[2]["ignorable"], true);
    assert!(on_disk[1].get("ignorable").is_none());

    let (log, report) = SessionLog::open(&fx.sessions, &fx.root, "s1", false).unwrap();
    assert!(!report.created && report.torn_tail.is_none() && report.synthetic_results.is_empty());
    assert_eq!(
        report.observed,
        vec![("/w/a.txt".to_owned(), Some("v2".to_owned())), ("/w/b.txt".to_owned(), None)]
    );
    assert_eq!(report.view.calls.len(), 1);
    let rec = &report.view.calls[0];
    assert_eq!((rec.seq, rec.call_id.as_str(), &rec.arguments), (0, "c1", &edit_args));
    assert_eq!(rec.result.as_ref().unwrap().meta.as_ref(), Some(&meta));
    assert_eq!(report.view.next_seq, 5);
    assert_eq!(rt.block_on(log.append_tool_call(&call("c2", "read", json!({})))).unwrap(), 5);
    drop(log);
    assert_eq!(read_session(&path).unwrap(), {
        let mut v = report.view.clone();
        v.calls.push(toolhost_session::CallRecord {
            seq: 5,
            call_id: "c2".into(),
            name: "read".into(),
            arguments: json!({}),
            presentation: toolhost_protocol::card::legacy::presentation("read", &json!({})),
            caller: None,
            parent_call_id: None,
            strings_not_kept: Vec::new(),
            result: None,
        });
        v.next_seq = 6;
        v
    });

    // Private permissions all the way down.
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    assert_eq!(mode(path.parent().unwrap().parent().unwrap()), 0o700);
}

#[test]
fn missing_session_without_create_and_invalid_ids() {
    let fx = fixture();
    let err = SessionLog::open(&fx.sessions, &fx.root, "nope", false).unwrap_err();
    assert_eq!(err.code(), "SESSION_NOT_FOUND");
    for bad in ["../x", "", "a b", &"x".repeat(65)] {
        let err = SessionLog::open(&fx.sessions, &fx.root, bad, true).unwrap_err();
        assert_eq!(err.code(), "SESSION_INVALID_ID", "{bad:?}");
    }
    assert!(!fx.sessions.exists(), "an invalid id must not create anything");
}

#[test]
fn concurrent_appends_share_syncs_and_stay_contiguous() {
    let fx = fixture();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, "s", true).unwrap();
    let log = std::sync::Arc::new(log);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let mut seqs: Vec<u64> = rt.block_on(async {
        let tasks: Vec<_> = (0..200)
            .map(|i| {
                let log = log.clone();
                tokio::spawn(async move {
                    log.append_tool_call(&call(&format!("c{i}"), "read", json!({"i": i})))
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });
    seqs.sort();
    assert_eq!(seqs, (0..200).collect::<Vec<_>>());
    let path = log.log_path().to_owned();
    drop(log);
    assert_eq!(read_session(&path).unwrap().calls.len(), 200);
}

/// A log with a header, a finished call (seqs 0, 1) and an open call (seq 2).
fn sample(fx: &Fixture, id: &str) -> PathBuf {
    let rt = rt();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, id, true).unwrap();
    rt.block_on(async {
        log.append_tool_call(&call("c1", "read", json!({"file_path": "a.txt"}))).await.unwrap();
        log.append_tool_result(&result("c1", "read", "one", None)).await.unwrap();
        log.append_tool_call(&call(
            "c2",
            "write",
            json!({"file_path": "b.txt", "content": "hi\n"}),
        ))
        .await
        .unwrap();
    });
    log.log_path().to_owned()
}

fn replace_line(path: &Path, index: usize, with: &[u8]) {
    let text = std::fs::read(path).unwrap();
    let mut parts: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    parts[index] = with;
    std::fs::write(path, parts.join(&b'\n')).unwrap();
}

#[test]
fn corrupt_middle_line_is_reported_with_line_and_seq_and_nothing_changes() {
    let fx = fixture();
    let path = sample(&fx, "s");
    replace_line(&path, 2, b"{\"type\":\"tool/result\",\"seq\":1,\"ti");
    let before = std::fs::read(&path).unwrap();
    let open_err = SessionLog::open(&fx.sessions, &fx.root, "s", false).unwrap_err();
    assert_eq!(open_err.code(), "SESSION_CORRUPT");
    assert!(open_err.to_string().contains("toolhost sessions repair s"), "{open_err}");
    let SessionError::Damaged { source, .. } = open_err else { panic!("{open_err:?}") };
    for err in [read_session(&path).unwrap_err(), *source] {
        match err {
            SessionError::Corrupt { line: 3, expected_seq: 1, detail } => {
                assert!(detail.contains("unparsable"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(std::fs::read(&path).unwrap(), before, "a failed open must not repair anything");
}

#[test]
fn nul_run_in_the_middle_is_detected() {
    let fx = fixture();
    let path = sample(&fx, "s");
    let mut bytes = std::fs::read(&path).unwrap();
    // Zero a run inside line 2 (seq 0), as an interrupted ext4 append leaves it.
    let start = bytes.iter().position(|&b| b == b'\n').unwrap() + 10;
    bytes[start..start + 20].fill(0);
    std::fs::write(&path, &bytes).unwrap();
    let SessionError::Damaged { source, .. } =
        SessionLog::open(&fx.sessions, &fx.root, "s", false).unwrap_err()
    else {
        panic!("not reported as damage")
    };
    match *source {
        SessionError::Corrupt { line: 2, expected_seq: 0, detail } => {
            assert!(detail.contains("20 NUL bytes"), "{detail}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn seq_gap_is_corruption() {
    let fx = fixture();
    let path = sample(&fx, "s");
    replace_line(
        &path,
        2,
        br#"{"type":"tool/result","seq":7,"time":1,"data":{"callId":"c1","name":"read","content":[],"isError":false,"rendererVersion":1}}"#,
    );
    let err = read_session(&path).unwrap_err();
    assert!(matches!(err, SessionError::Corrupt { line: 3, expected_seq: 1, .. }), "{err:?}");
    assert!(err.to_string().contains("seq 7 where 1 was expected"), "{err}");
}

#[test]
fn unknown_events_need_ignorable() {
    let fx = fixture();
    let rt = rt();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, "s", true).unwrap();
    rt.block_on(async {
        // The writer refuses what would make the log unloadable.
        let err = log.append("todo/write", json!({"todos": []}), false).await.unwrap_err();
        assert_eq!(err.code(), "SESSION_INVALID_EVENT");
        let err = log.append("tool/call", json!({"callId": 1}), false).await.unwrap_err();
        assert_eq!(err.code(), "SESSION_INVALID_EVENT");
        assert_eq!(log.append("todo/write", json!({"todos": []}), true).await.unwrap(), 0);
        assert_eq!(log.append_tool_call(&call("c1", "read", json!({}))).await.unwrap(), 1);
    });
    let path = log.log_path().to_owned();
    drop(log);
    let view = read_session(&path).unwrap();
    assert_eq!((view.calls.len(), view.next_seq), (1, 2), "ignorable unknown event skipped");

    // The same event without `ignorable` (written by someone else) is an error.
    replace_line(&path, 1, br#"{"type":"todo/write","seq":0,"time":1,"data":{"todos":[]}}"#);
    let err = read_session(&path).unwrap_err();
    assert!(
        matches!(err, SessionError::UnknownEvent { line: 2, seq: 0, ref kind } if kind == "todo/write")
    );
    assert_eq!(err.code(), "SESSION_UNKNOWN_EVENT");
}

#[test]
fn live_log_replays_read_only_and_repair_closes_open_calls() {
    let fx = fixture();
    let rt = rt();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, "live", true).unwrap();
    let path = log.log_path().to_owned();
    rt.block_on(async {
        log.append_tool_call(&call("c1", "read", json!({"file_path": "a.txt"}))).await.unwrap();
        log.append_tool_result(&result("c1", "read", "one", None)).await.unwrap();
        log.append_tool_call(&call(
            "c2",
            "write",
            json!({"file_path": "b.txt", "content": "hi\n"}),
        ))
        .await
        .unwrap();
    });
    // A torn tail, as a writer killed mid-append (or still writing) leaves it.
    let torn = "{\"type\":\"tool/result\",\"seq\":3,\"time\":1,\"data\":{\"callId\":\"c2\",\"na";
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(torn.as_bytes()).unwrap();
    }
    let before = std::fs::read(&path).unwrap();

    // Reading while another handle holds the lock: no lock needed, nothing written.
    let view = read_session(&path).unwrap();
    assert_eq!(view.torn_tail_bytes, torn.len() as u64);
    assert_eq!(view.calls.len(), 2);
    assert!(view.calls[1].result.is_none());
    let cards = replay_cards(&view, fx.root.to_str().unwrap(), |_| Some(1));
    assert_eq!(cards[0].card.status, CardStatus::Completed);
    assert_eq!(cards[0].text, "one");
    assert_eq!(cards[1].card.status, CardStatus::Pending);
    assert_eq!(cards[1].card.kind, CardKind::Diff, "pending write previews its content");
    assert_eq!(cards[1].text, "");
    assert_eq!(std::fs::read(&path).unwrap(), before, "replay must leave the log byte-identical");
    drop(log);
    assert_eq!(std::fs::read(&path).unwrap(), before);

    // Repair by the next lock holder: cut, sidecar, synthetic result.
    let (log, report) = SessionLog::open(&fx.sessions, &fx.root, "live", false).unwrap();
    let tail = report.torn_tail.clone().unwrap();
    assert_eq!(tail.bytes, torn.as_bytes());
    assert_eq!(tail.offset as usize, before.len() - torn.len());
    let sidecar = std::fs::read(log.dir().join(toolhost_session::TORN_FILE_NAME)).unwrap();
    assert_eq!(sidecar, format!("{torn}\n").as_bytes());
    assert_eq!(report.synthetic_results, vec!["c2".to_owned()]);
    let synthetic = report.view.calls[1].result.clone().unwrap();
    assert!(synthetic.is_error);
    assert_eq!(synthetic.renderer_version, 0);
    assert_eq!(synthetic.error.as_ref().unwrap().code, OUTCOME_UNKNOWN_CODE);
    assert_eq!(synthetic.error.as_ref().unwrap().name, "ToolOutcomeUnknownError");
    let text = synthetic.content[0].as_text().unwrap();
    assert!(text.starts_with("Error: The outcome of this write call is unknown"), "{text}");
    assert!(text.contains("before retrying anything that is not idempotent"), "{text}");

    // The next append starts on a fresh line.
    assert_eq!(rt.block_on(log.append_tool_call(&call("c3", "read", json!({})))).unwrap(), 4);
    drop(log);
    let view = read_session(&path).unwrap();
    assert_eq!(view.torn_tail_bytes, 0);
    assert_eq!(view.calls.len(), 3);
    let cards = replay_cards(&view, fx.root.to_str().unwrap(), |_| Some(1));
    assert_eq!(cards[1].card.status, CardStatus::Failed);
    assert!(!cards[1].stale_renderer, "synthetic results have no renderer");
    assert_eq!(view.calls[1].result.as_ref().unwrap(), &synthetic);
}

#[test]
fn torn_header_is_rewritten_by_the_lock_holder() {
    let fx = fixture();
    let path = sample(&fx, "s");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..20]).unwrap();
    assert_eq!(read_session(&path).unwrap_err().code(), "SESSION_CORRUPT");
    let (_log, report) = SessionLog::open(&fx.sessions, &fx.root, "s", false).unwrap();
    assert!(report.created);
    assert_eq!(report.torn_tail.unwrap().bytes.len(), 20);
    assert_eq!(read_session(&path).unwrap().header.id, "s");
}

#[test]
fn replay_builds_cards_and_flags_stale_renderers() {
    let fx = fixture();
    let rt = rt();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, "s", true).unwrap();
    let args = json!({"file_path": "src/a.txt", "old_string": "OLD", "new_string": "NEW"});
    let meta = json!({"diffs": [], "patch": "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -2,3 +2,3 @@\n b\n-OLD\n+NEW\n d\n"});
    rt.block_on(async {
        log.append_tool_call(&call("e1", "edit", args.clone())).await.unwrap();
        log.append_tool_result(&result("e1", "edit", "updated", Some(meta))).await.unwrap();
    });
    let view = read_session(log.log_path()).unwrap();
    let root = fx.root.to_str().unwrap();
    let cards = replay_cards(&view, root, |tool| (tool == "edit").then_some(2));
    assert_eq!(cards.len(), 1);
    let c = &cards[0];
    assert_eq!(c.card.kind, CardKind::Diff);
    assert_eq!(c.card.locations[0].path, format!("{root}/src/a.txt"));
    assert_eq!(c.card.locations[0].line, 2);
    assert_eq!(
        c.card.rendered,
        "edit Edit src/a.txt · completed\n@@ -2,3 +2,3 @@\n b\n-OLD\n+NEW\n d"
    );
    assert_eq!((c.renderer_version, c.stale_renderer), (1, true));
    assert!(!replay_cards(&view, root, |_| Some(1))[0].stale_renderer);
    assert!(!replay_cards(&view, root, |_| None)[0].stale_renderer);
}

#[test]
fn image_blocks_are_stored_as_blob_references() {
    let fx = fixture();
    let rt = rt();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, "img", true).unwrap();
    let png: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    let b64 = image_data::encode(&png);
    let event = ToolResultEvent {
        content: vec![
            ContentBlock::text("look:"),
            ContentBlock::Image { data: b64.clone(), mime_type: "image/png".into() },
            // Not canonical base64: kept inline rather than changed.
            ContentBlock::Image { data: "not base64!".into(), mime_type: "image/png".into() },
        ],
        ..result("i1", "screenshot", "", None)
    };
    rt.block_on(async {
        log.append_tool_call(&call("i1", "screenshot", json!({}))).await.unwrap();
        log.append_tool_result(&event).await.unwrap();
    });
    let raw = std::fs::read_to_string(log.log_path()).unwrap();
    assert!(!raw.contains(&b64), "no inline base64 in the log");
    let hash = toolhost_session::blob_hash(&png);
    assert!(raw.contains(&format!("\"data\":\"blob:sha256:{hash}\"")), "{raw}");
    let blob = log.blobs().path_of(&hash).unwrap();
    assert_eq!(std::fs::read(&blob).unwrap(), png);
    assert_eq!(mode(&blob), 0o600);
    assert_eq!(mode(log.blobs().blob_dir()), 0o700);

    let view = read_session(log.log_path()).unwrap();
    assert_eq!(view.calls[0].result.as_ref().unwrap().content, event.content, "bytes come back");

    // Without the blob the reference stays (and the card still renders).
    std::fs::remove_file(&blob).unwrap();
    let view = read_session(log.log_path()).unwrap();
    let ContentBlock::Image { data, .. } = &view.calls[0].result.as_ref().unwrap().content[1]
    else {
        panic!()
    };
    assert_eq!(data, &format!("blob:sha256:{hash}"));
    assert_eq!(
        replay_cards(&view, "/", |_| None)[0].text,
        "look:\n[image content]\n[image content]"
    );
}

/// Under load a reopen in the same process met `Locked`: a child process another thread was
/// starting still held the log's descriptor (and with it the lock) until it exec'd or exited.
#[test]
fn a_lock_held_for_a_moment_by_a_child_process_does_not_refuse_the_session() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let fx = fixture();
    let (log, _) = SessionLog::open(&fx.sessions, &fx.root, "s1", true).unwrap();
    let path = log.log_path().to_path_buf();
    drop(log);
    // The child's stdout is a locked description of the log: the child alone holds the lock now,
    // until its stdin closes and it exits (it writes nothing).
    let held = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    held.lock().unwrap();
    let mut child = Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(held.try_clone().unwrap())
        .spawn()
        .unwrap();
    drop(held);
    let probe = std::fs::File::open(&path).unwrap();
    assert!(probe.try_lock().is_err(), "the child holds the lock");
    drop(probe);
    let mut stdin = child.stdin.take().unwrap();
    let ending = std::thread::spawn(move || {
        stdin.flush().unwrap();
        drop(stdin);
        child.wait().unwrap()
    });
    let reopened = SessionLog::open(&fx.sessions, &fx.root, "s1", false);
    assert!(ending.join().unwrap().success());
    assert!(reopened.is_ok(), "{:?}", reopened.err());
}
