//! Large strings of a `tool/call` record kept in the blob store (docs/design.md §6).
//!
//! A call's big argument strings would otherwise be logged twice — in `arguments` and again in
//! the presentation built from them (a `write` previews its whole content) — and a third time as
//! the `fs/change` blob of the file the call writes. The writer moves every string of the
//! record's `arguments` and `card` longer than [`LARGE_STRING_BYTES`] to the content-addressed
//! blob store (so the bytes a `write` leaves in its file are one blob, shared with its
//! `fs/change`), leaves `""` in its place and lists it in the envelope's `externalized` field
//! (pointer, blob, length). Readers put the strings back before anyone sees the call, so replay
//! and revert see what was called.
//!
//! The list lives beside `data`, never inside it: arguments may hold any JSON, so no key or
//! string value in them can be taken for a reference. A string whose blob is gone stays `""` and
//! is named in the call's record ([`CallRecord::strings_not_kept`]), so one lost blob costs that
//! argument, not the replay of the log.
//!
//! [`CallRecord::strings_not_kept`]: crate::CallRecord::strings_not_kept

use crate::blob::BlobStore;
use crate::error::SessionError;
use serde_json::Value;
use toolhost_protocol::session_log::{ExternalizedString, ToolCallEvent};

/// Strings longer than this many UTF-8 bytes go to the blob store. A blob costs a file, an
/// inode, an fsync of it and of its folder — milliseconds, and a 4 KiB block however small it is
/// — so below one page inline is cheaper and keeps the log readable on its own (paths, commands,
/// edits' old and new strings and titles stay in the line). Above it the copies are what made a
/// 10 MiB `write` a 21 MB line; one blob instead is a small cost next to the write itself.
pub const LARGE_STRING_BYTES: usize = 4096;

/// The members of a `tool/call`'s data whose strings may be kept apart: what the caller sent and
/// what the tool built from it. Ids, names and labels always stay in the line.
const ROOTS: [&str; 2] = ["arguments", "card"];

/// Moves every string under `data`'s [`ROOTS`] longer than [`LARGE_STRING_BYTES`] to `blobs`
/// (each durable before this returns, so a record naming it is never on disk without it) and
/// leaves `""` in its place; returns where they were. Equal strings (a `write`'s content and its
/// preview) are stored once. On an error `data` is unchanged.
pub(crate) fn externalize(
    data: &mut Value,
    blobs: &BlobStore,
) -> Result<Vec<ExternalizedString>, SessionError> {
    let found = large_strings_of(data);
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let mut stored: Vec<(&str, String)> = Vec::with_capacity(found.len());
    let mut out = Vec::with_capacity(found.len());
    for (pointer, text) in &found {
        // `==` on strings compares lengths first: the usual miss costs nothing.
        let blob = match stored.iter().find(|(seen, _)| seen == text) {
            Some((_, hash)) => hash.clone(),
            None => {
                let hash = blobs.put_bytes(text.as_bytes())?;
                stored.push((text, hash.clone()));
                hash
            }
        };
        out.push(ExternalizedString { pointer: pointer.clone(), blob, bytes: text.len() as u64 });
    }
    drop(stored);
    drop(found);
    for entry in &out {
        if let Some(Value::String(text)) = data.pointer_mut(&entry.pointer) {
            text.clear();
            text.shrink_to_fit();
        }
    }
    Ok(out)
}

/// (pointer, string) of every large string under [`ROOTS`], in document order.
fn large_strings_of(data: &Value) -> Vec<(String, &str)> {
    let mut found = Vec::new();
    for root in ROOTS {
        if let Some(value) = data.get(root) {
            collect(value, &mut format!("/{root}"), &mut found);
        }
    }
    found
}

/// Depth-first over `value`, pushing (pointer, string) for each large string; `path` is the
/// pointer of `value` and is left as it was found.
fn collect<'a>(value: &'a Value, path: &mut String, found: &mut Vec<(String, &'a str)>) {
    match value {
        Value::String(text) if text.len() > LARGE_STRING_BYTES => {
            found.push((path.clone(), text));
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&index.to_string());
                collect(item, path, found);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = path.len();
                path.push('/');
                push_escaped(path, key);
                collect(item, path, found);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Appends `key` as one JSON pointer token (`~` → `~0`, `/` → `~1`).
fn push_escaped(path: &mut String, key: &str) {
    for c in key.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

/// Puts the strings of `externalized` back into `call` from `blobs`. Returns the pointers of
/// those that could not be (no store, the blob is gone or is not the string that was kept, or
/// the pointer names no string of the record): they stay `""`.
pub(crate) fn restore(
    call: &mut ToolCallEvent,
    externalized: &[ExternalizedString],
    blobs: Option<&BlobStore>,
) -> Vec<String> {
    let Some(blobs) = blobs else {
        return all_pointers(externalized);
    };
    // Through the record's JSON, where the pointers point; cheap, since the kept strings are
    // empty in it.
    let Ok(mut data) = serde_json::to_value(&*call) else {
        return all_pointers(externalized);
    };
    let mut missing = Vec::new();
    for entry in externalized {
        let restored = match data.pointer_mut(&entry.pointer) {
            Some(Value::String(slot)) => match read_string(blobs, entry) {
                Some(text) => {
                    *slot = text;
                    true
                }
                None => false,
            },
            _ => false,
        };
        if !restored {
            missing.push(entry.pointer.clone());
        }
    }
    match serde_json::from_value::<ToolCallEvent>(data) {
        Ok(restored) => {
            *call = restored;
            missing
        }
        // Cannot happen for a record that was just serialized with strings replaced by strings;
        // if it did, the call keeps its empty strings rather than fail the read.
        Err(_) => all_pointers(externalized),
    }
}

fn all_pointers(externalized: &[ExternalizedString]) -> Vec<String> {
    externalized.iter().map(|e| e.pointer.clone()).collect()
}

/// The string `entry` names, if its blob is there with the recorded length and is UTF-8.
fn read_string(blobs: &BlobStore, entry: &ExternalizedString) -> Option<String> {
    let bytes = blobs.get_bytes(&entry.blob).ok()?;
    if bytes.len() as u64 != entry.bytes {
        return None;
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_escape_keys_and_index_arrays() {
        let big = "x".repeat(LARGE_STRING_BYTES + 1);
        let args = json!({"a/b": {"c~d": [1, big.clone()]}, "": big, "small": "y"});
        let data = json!({"callId": big, "arguments": args, "card": {"title": big}});
        let found = large_strings_of(&data);
        let pointers: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(pointers, vec!["/arguments/a~1b/c~0d/1", "/arguments/", "/card/title"]);
        for (pointer, text) in found {
            assert_eq!(data.pointer(&pointer).and_then(Value::as_str), Some(text));
        }
    }

    #[test]
    fn the_threshold_is_exclusive() {
        let args = json!({"at": "x".repeat(LARGE_STRING_BYTES), "over": "é".repeat(2049)});
        let data = json!({"arguments": args});
        let found = large_strings_of(&data);
        let pointers: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(pointers, vec!["/arguments/over"], "a length in bytes, not characters");
    }
}
