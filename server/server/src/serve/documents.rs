//! The editor's open documents, as far as the dirty-buffer guard needs them: whether each open
//! buffer differs from the file on disk. `write`/`edit` of a file whose buffer has unsaved
//! changes fails `FS_DIRTY_BUFFER` instead of silently overwriting the person's work.

use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use toolhost_contract::lsp::file_uri_path;
use toolhost_workspace::Workspace;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OpenedDocument {
    uri: String,
    version: i32,
    text: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct VersionedDocument {
    uri: String,
    version: i32,
}

#[derive(Deserialize)]
struct DocumentId {
    uri: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DidOpen {
    text_document: OpenedDocument,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContentChange {
    /// Present for an incremental change, absent for a whole-document one.
    #[serde(default)]
    range: Option<Value>,
    text: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DidChange {
    text_document: VersionedDocument,
    content_changes: Vec<ContentChange>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DidSaveOrClose {
    text_document: DocumentId,
}

/// What a document notification says about the editor's buffer.
enum Buffer<'a> {
    /// Its whole text (didOpen, full-sync didChange).
    Text(&'a str),
    /// Changed in a way whose text we cannot rebuild (an incremental change): never assume clean.
    Modified,
    /// A didChange without changes.
    Unchanged,
    Closed,
}

/// Highest version seen per document URI, so a stale notification never overrides a newer one.
#[derive(Default)]
pub struct Documents {
    versions: Mutex<HashMap<String, i32>>,
}

impl Documents {
    /// Handles `textDocument/did{Open,Change,Save,Close}`; other methods and malformed params
    /// are ignored (notifications are never answered). Returns whether `method` was one of them.
    pub fn notification(&self, workspace: &Workspace, method: &str, params: Value) -> bool {
        match method {
            "textDocument/didOpen" => {
                if let Ok(p) = serde_json::from_value::<DidOpen>(params) {
                    let doc = p.text_document;
                    self.track(workspace, &doc.uri, Some(doc.version), Buffer::Text(&doc.text));
                }
            }
            "textDocument/didChange" => {
                if let Ok(p) = serde_json::from_value::<DidChange>(params) {
                    // Full sync: the last whole-document change holds the text.
                    let text = p
                        .content_changes
                        .iter()
                        .rev()
                        .find(|c| c.range.is_none())
                        .map(|c| c.text.as_str());
                    let buffer = match text {
                        Some(text) => Buffer::Text(text),
                        None if p.content_changes.is_empty() => Buffer::Unchanged,
                        None => Buffer::Modified,
                    };
                    let doc = p.text_document;
                    self.track(workspace, &doc.uri, Some(doc.version), buffer);
                }
            }
            "textDocument/didSave" => {
                if let Ok(p) = serde_json::from_value::<DidSaveOrClose>(params)
                    && let Some(path) = file_uri_path(&p.text_document.uri)
                {
                    workspace.dirty_buffers().set(path, false);
                }
            }
            "textDocument/didClose" => {
                if let Ok(p) = serde_json::from_value::<DidSaveOrClose>(params) {
                    self.track(workspace, &p.text_document.uri, None, Buffer::Closed);
                }
            }
            _ => return false,
        }
        true
    }

    fn track(&self, workspace: &Workspace, uri: &str, version: Option<i32>, buffer: Buffer<'_>) {
        let Some(path) = file_uri_path(uri) else { return };
        if let (Some(version), Ok(mut versions)) = (version, self.versions.lock()) {
            let last = versions.get(uri).copied().unwrap_or(i32::MIN);
            if version < last {
                return;
            }
            versions.insert(uri.to_owned(), version);
        }
        let dirty = match buffer {
            Buffer::Text(text) => buffer_differs(&path, text),
            Buffer::Modified => true,
            Buffer::Unchanged => false,
            Buffer::Closed => {
                if let Ok(mut versions) = self.versions.lock() {
                    versions.remove(uri);
                }
                false
            }
        };
        workspace.dirty_buffers().set(path, dirty);
    }
}

/// Whether an editor buffer's text differs from the file on disk. Editors drop a UTF-8 BOM
/// from buffer text, and an empty buffer of a file that does not exist yet (`""` or one line
/// ending) holds nothing to lose, so neither counts as unsaved.
fn buffer_differs(path: &Path, text: &str) -> bool {
    // Read without blocking (a FIFO is no saved file) and no further than the buffer's length
    // and a byte-order mark: a longer file differs.
    let bound = text.len() as u64 + 3;
    match toolhost_contract::regular_file::read_regular(path, bound) {
        Err(toolhost_contract::regular_file::RegularFileError::TooLarge { .. }) => true,
        Ok(disk) => {
            let disk = disk.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(&disk);
            let text = text.strip_prefix('\u{feff}').unwrap_or(text);
            disk != text.as_bytes()
        }
        Err(_) => !matches!(text, "" | "\n" | "\r\n"),
    }
}
