//! Editor buffers and external changes over the wire (docs/protocol.md, Editor buffers):
//! `didOpen`/`didChange` (full sync)/`didSave`/`didClose` tracking makes `edit` of a file with
//! unsaved editor changes fail `FS_DIRTY_BUFFER` (never a silent overwrite); a buffer equal to
//! the disk is not dirty; the workspace watcher lets a same-content rewrite (new mtime only)
//! through and refuses a real external change with `FS_STALE_VERSION`.
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::{Value, json};
use server::{Env, call_err, call_ok, uri};
use std::path::Path;
use std::time::{Duration, SystemTime};
use toolhost_harness::client::Client;

fn did_open(client: &mut Client, path: &Path, version: i32, text: &str) {
    let doc =
        json!({"uri": uri(path), "languageId": "plaintext", "version": version, "text": text});
    client.notify("textDocument/didOpen", json!({"textDocument": doc})).unwrap();
}

fn did_change(client: &mut Client, path: &Path, version: i32, text: &str) {
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri(path), "version": version},
                "contentChanges": [{"text": text}]
            }),
        )
        .unwrap();
}

fn did_save(client: &mut Client, path: &Path) {
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": uri(path)}})).unwrap();
}

fn did_close(client: &mut Client, path: &Path) {
    client.notify("textDocument/didClose", json!({"textDocument": {"uri": uri(path)}})).unwrap();
}

fn edit(old: &str, new: &str) -> Value {
    json!({"file_path": "doc.txt", "old_string": old, "new_string": new})
}

#[test]
fn unsaved_editor_changes_block_edits_until_saved_reverted_or_closed() {
    let env = Env::new();
    let path = env.write("doc.txt", "alpha\n");
    let mut client = env.start(json!({}));
    call_ok(&mut client, "read", json!({"file_path": "doc.txt"}));

    // Opened with the disk content: clean.
    did_open(&mut client, &path, 1, "alpha\n");
    // Typed into: dirty.
    did_change(&mut client, &path, 2, "alpha typed\n");
    let out = call_err(&mut client, "edit", edit("alpha", "beta"), "FS_DIRTY_BUFFER");
    let message = out["result"]["error"]["message"].as_str().unwrap();
    assert!(message.contains("unsaved changes in the editor"), "{out}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "alpha\n", "the file was overwritten");
    call_err(
        &mut client,
        "write",
        json!({"file_path": "doc.txt", "content": "x\n"}),
        "FS_DIRTY_BUFFER",
    );

    // Typed back to the disk content: not dirty.
    did_change(&mut client, &path, 3, "alpha\n");
    call_ok(&mut client, "edit", edit("alpha", "beta"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "beta\n");

    // Dirty again; the editor saves (the disk now holds the buffer), then didSave: clean. The
    // save is an external change, so the file is read again first.
    did_change(&mut client, &path, 4, "beta saved\n");
    call_err(&mut client, "edit", edit("beta", "gamma"), "FS_DIRTY_BUFFER");
    std::fs::write(&path, "beta saved\n").unwrap();
    did_save(&mut client, &path);
    call_ok(&mut client, "read", json!({"file_path": "doc.txt"}));
    call_ok(&mut client, "edit", edit("beta saved", "gamma"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "gamma\n");

    // Dirty again, then closed without saving (reverted): clean.
    did_change(&mut client, &path, 5, "gamma unsaved\n");
    call_err(&mut client, "edit", edit("gamma", "delta"), "FS_DIRTY_BUFFER");
    did_close(&mut client, &path);
    call_ok(&mut client, "edit", edit("gamma", "delta"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "delta\n");

    // Opened with text that differs from the disk: dirty from the start.
    did_open(&mut client, &path, 1, "something else\n");
    call_err(&mut client, "edit", edit("delta", "epsilon"), "FS_DIRTY_BUFFER");
    // A stale (older) didChange does not undo a newer state.
    did_change(&mut client, &path, 3, "delta\n");
    did_change(&mut client, &path, 2, "older\n");
    call_ok(&mut client, "edit", edit("delta", "epsilon"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "epsilon\n");
    client.shutdown().unwrap();
}

/// Gives the watcher (100 ms debounce, 250 ms poll) time to see a change.
fn settle() {
    std::thread::sleep(Duration::from_millis(700));
}

#[test]
fn an_mtime_only_change_is_accepted_and_a_content_change_is_stale() {
    let env = Env::new();
    let path = env.write("doc.txt", "one\n");
    let mut client = env.start(json!({}));
    call_ok(&mut client, "read", json!({"file_path": "doc.txt"}));

    // Same content, new mtime (a touch, a formatter that changed nothing): accepted.
    std::fs::write(&path, "one\n").unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(60)).unwrap();
    drop(file);
    settle();
    call_ok(&mut client, "edit", edit("one", "two"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");

    // A real external change: refused until read again.
    std::fs::write(&path, "two changed\n").unwrap();
    settle();
    call_err(&mut client, "edit", edit("two", "three"), "FS_STALE_VERSION");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "two changed\n");
    call_ok(&mut client, "read", json!({"file_path": "doc.txt"}));
    call_ok(&mut client, "edit", edit("two changed", "three"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "three\n");

    // The same without waiting for the watcher: the ledger compares contents anyway.
    std::fs::write(&path, "three external\n").unwrap();
    call_err(&mut client, "edit", edit("three", "four"), "FS_STALE_VERSION");
    client.shutdown().unwrap();
}
