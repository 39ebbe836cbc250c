//! MCP resources for what toolhost already keeps:
//!
//! - **spilled outputs**: when a result's Native text names the file its complete output was
//!   stored in (`… stored at: <path>. …`, `[output truncated; full output: <path>]`), the result
//!   also carries a `resource_link` to `toolhost://spill/<file name>`, and `resources/read` of
//!   that uri returns the file: `text` when it is UTF-8, `blob` (base64) otherwise, refused over
//!   [`MAX_READ_BYTES`]. Only files this server linked are served (the uri names a link, not a
//!   path), so `resources/read` is never a way to read an arbitrary file.
//! - **a session's transcript**: `toolhost://session/<id>/cards`, the session's cards in log
//!   order as JSON (what the editor draws), listed for the live session and readable for any
//!   session of the workspace through the template; a subscription to the live session's
//!   transcript sends `notifications/resources/updated` whenever one of its cards changes.
//!
//! An unknown uri is the spec's resource-not-found error (-32002).

use crate::backend::{Backend, BackendError};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, ContentBlock as McpContent, ReadResourceResult, Resource, ResourceContents,
    ResourceTemplate,
};
use serde_json::json;
use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The most bytes one `resources/read` returns; larger resources are refused (read them with the
/// `read` tool, a page at a time).
pub const MAX_READ_BYTES: u64 = 8 * 1024 * 1024;

/// The spill links one server remembers (the oldest are forgotten first).
const MAX_LINKS: usize = 4096;

/// Bytes looked at to tell text from binary when a link is made.
const SNIFF_BYTES: usize = 4096;

/// The scheme and host of every toolhost resource.
const SPILL_PREFIX: &str = "toolhost://spill/";
const SESSION_PREFIX: &str = "toolhost://session/";
const CARDS_SUFFIX: &str = "/cards";

/// The template of a session's transcript.
pub const TRANSCRIPT_TEMPLATE: &str = "toolhost://session/{sessionId}/cards";

/// What introduces a spill file's path in Native text, and what may end it.
const MARKERS: &[&str] = &["stored at: ", "full output: "];

/// The uri of session `id`'s transcript.
pub fn transcript_uri(id: &str) -> String {
    format!("{SESSION_PREFIX}{id}{CARDS_SUFFIX}")
}

/// The session id a transcript uri names.
pub fn transcript_id(uri: &str) -> Option<&str> {
    let id = uri.strip_prefix(SESSION_PREFIX)?.strip_suffix(CARDS_SUFFIX)?;
    let valid = (1..=64).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    valid.then_some(id)
}

/// The absolute paths of spill files `text` names, in order, each once.
pub fn spill_paths(text: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for marker in MARKERS {
        let mut rest = text;
        while let Some(at) = rest.find(marker) {
            rest = &rest[at + marker.len()..];
            let end = rest.find(['\n', ']']).unwrap_or(rest.len());
            let mut candidate = &rest[..end];
            // `… stored at: <path>. Use read …`: the sentence goes on after the path.
            if let Some(cut) = candidate.find(". ") {
                candidate = &candidate[..cut];
            }
            let candidate = candidate.trim_end_matches(['.', ')', ' ']);
            let path = PathBuf::from(candidate);
            if path.is_absolute() && !found.contains(&path) {
                found.push(path);
            }
        }
    }
    found
}

/// A spill file this server linked.
#[derive(Clone, Debug)]
struct Link {
    path: PathBuf,
    mime: &'static str,
}

/// The spill links of one server and the resources they make.
#[derive(Default)]
pub struct Resources {
    links: Mutex<Links>,
}

#[derive(Default)]
struct Links {
    by_name: HashMap<String, Link>,
    order: VecDeque<String>,
}

/// Opens `path` for reading without following a final symlink and without blocking on a FIFO,
/// and checks on the handle that it is a regular file.
fn open_regular(path: &Path) -> std::io::Result<(std::fs::File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc_flags::NONBLOCK | libc_flags::NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok((file, meta.len()))
}

/// `O_NONBLOCK` and `O_NOFOLLOW` of Linux (the values every Linux architecture toolhost builds
/// for uses), without a dependency for two constants.
mod libc_flags {
    pub const NONBLOCK: i32 = 0o4000;
    #[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
    pub const NOFOLLOW: i32 = 0o100000;
    #[cfg(not(any(target_arch = "aarch64", target_arch = "arm")))]
    pub const NOFOLLOW: i32 = 0o400000;
}

fn mime_of(head: &[u8]) -> &'static str {
    match std::str::from_utf8(head) {
        Ok(_) => "text/plain",
        // A multi-byte character cut at the end of the sniffed bytes is still text.
        Err(e) if e.error_len().is_none() => "text/plain",
        Err(_) => "application/octet-stream",
    }
}

impl Resources {
    /// Adds a `resource_link` beside every spill file the result's text names (files that are
    /// not there, or not regular files, get none).
    pub fn link(&self, result: &mut CallToolResult) {
        // The paths first (a read's page is tens of kilobytes of text: not copied to be scanned).
        let paths: Vec<PathBuf> = result
            .content
            .iter()
            .filter_map(|c| c.as_text())
            .flat_map(|t| spill_paths(&t.text))
            .collect();
        for path in paths {
            let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
                continue;
            };
            let Ok((mut file, size)) = open_regular(&path) else { continue };
            let mut head = Vec::with_capacity(SNIFF_BYTES);
            let _ = (&mut file).take(SNIFF_BYTES as u64).read_to_end(&mut head);
            let mime = mime_of(&head);
            self.remember(&name, Link { path: path.clone(), mime });
            let mut link = Resource::new(format!("{SPILL_PREFIX}{name}"), name)
                .with_mime_type(mime)
                .with_size(size)
                .with_description(format!("The complete output, stored at {}", path.display()));
            link.title = Some("Full output".to_owned());
            result.content.push(McpContent::resource_link(link));
        }
    }

    fn remember(&self, name: &str, link: Link) {
        let Ok(mut links) = self.links.lock() else { return };
        if links.by_name.insert(name.to_owned(), link).is_none() {
            links.order.push_back(name.to_owned());
        }
        while links.order.len() > MAX_LINKS {
            if let Some(oldest) = links.order.pop_front() {
                links.by_name.remove(&oldest);
            }
        }
    }

    /// `resources/list`: the live session's transcript (spill links are not listed: they are
    /// found in the results that name them).
    pub async fn list(&self, backend: &dyn Backend) -> Vec<Resource> {
        let Some(id) = backend.live_session().await else { return Vec::new() };
        let mut transcript = Resource::new(transcript_uri(&id), format!("session {id} cards"))
            .with_mime_type("application/json")
            .with_description(
                "Every call of the live session as the card the editor shows, in log order",
            );
        transcript.title = Some(format!("Transcript of session {id}"));
        vec![transcript]
    }

    /// `resources/templates/list`.
    pub fn templates() -> Vec<ResourceTemplate> {
        vec![
            ResourceTemplate::new(TRANSCRIPT_TEMPLATE, "session cards")
                .with_title("Transcript of a session")
                .with_description("The cards of a session of this workspace, in log order")
                .with_mime_type("application/json"),
        ]
    }

    /// `resources/read`.
    pub async fn read(
        &self,
        backend: &dyn Backend,
        uri: &str,
    ) -> Result<ReadResourceResult, McpError> {
        if let Some(name) = uri.strip_prefix(SPILL_PREFIX) {
            let link = self.links.lock().ok().and_then(|links| links.by_name.get(name).cloned());
            let Some(link) = link else { return Err(not_found(uri)) };
            let uri = uri.to_owned();
            return tokio::task::spawn_blocking(move || read_spill(&uri, &link))
                .await
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        }
        let Some(id) = transcript_id(uri) else { return Err(not_found(uri)) };
        let cards = match backend.session_cards(id).await {
            Ok(Some(cards)) => cards,
            Ok(None) => return Err(not_found(uri)),
            Err(BackendError::Unavailable(e) | BackendError::Internal(e)) => {
                return Err(McpError::internal_error(e, None));
            }
        };
        let text = serde_json::to_string(&json!({"sessionId": id, "cards": cards}))
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        if text.len() as u64 > MAX_READ_BYTES {
            return Err(too_large(uri, text.len() as u64, None));
        }
        Ok(ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
            uri: uri.to_owned(),
            mime_type: Some("application/json".to_owned()),
            text,
            meta: None,
        }]))
    }

    /// Whether `uri` can be subscribed to: the live session's transcript.
    pub async fn subscribable(&self, backend: &dyn Backend, uri: &str) -> Result<(), McpError> {
        let live = backend.live_session().await;
        match transcript_id(uri) {
            Some(id) if live.as_deref() == Some(id) => Ok(()),
            Some(_) => Err(McpError::invalid_params(
                format!("{uri} is not the live session's transcript: only it changes"),
                None,
            )),
            None if self.is_linked(uri) => Err(McpError::invalid_params(
                format!("{uri} never changes: a spilled output is stored once"),
                None,
            )),
            None => Err(not_found(uri)),
        }
    }

    fn is_linked(&self, uri: &str) -> bool {
        uri.strip_prefix(SPILL_PREFIX).is_some_and(|name| {
            self.links.lock().map(|links| links.by_name.contains_key(name)).unwrap_or(false)
        })
    }
}

fn not_found(uri: &str) -> McpError {
    McpError::resource_not_found(format!("Resource not found: {uri}"), Some(json!({"uri": uri})))
}

fn too_large(uri: &str, size: u64, path: Option<&Path>) -> McpError {
    let how = match path {
        Some(path) => format!(": read {} with the read tool, a page at a time", path.display()),
        None => String::new(),
    };
    McpError::invalid_params(
        format!(
            "{uri} is {size} bytes, over the {MAX_READ_BYTES}-byte limit of resources/read{how}"
        ),
        Some(json!({"uri": uri, "size": size, "limit": MAX_READ_BYTES})),
    )
}

fn read_spill(uri: &str, link: &Link) -> Result<ReadResourceResult, McpError> {
    let (file, size) = open_regular(&link.path).map_err(|_| not_found(uri))?;
    if size > MAX_READ_BYTES {
        return Err(too_large(uri, size, Some(&link.path)));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // The file could grow after the check: the read stays bounded anyway.
    file.take(MAX_READ_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| McpError::internal_error(format!("cannot read {uri}: {e}"), None))?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        return Err(too_large(uri, bytes.len() as u64, Some(&link.path)));
    }
    let contents = match String::from_utf8(bytes) {
        Ok(text) => ResourceContents::TextResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(link.mime.to_owned()).filter(|m| m.starts_with("text/")),
            text,
            meta: None,
        },
        Err(binary) => {
            use base64::Engine;
            ResourceContents::BlobResourceContents {
                uri: uri.to_owned(),
                mime_type: Some("application/octet-stream".to_owned()),
                blob: base64::engine::general_purpose::STANDARD.encode(binary.into_bytes()),
                meta: None,
            }
        }
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn spill_paths_are_found_where_the_tools_write_them() {
        let grep = "a.ts\n\n(Full grep result stored at: /s/blobs/ab12. Use read with offset/limit, \
                    or grep this path to search within it.)";
        assert_eq!(spill_paths(grep), vec![PathBuf::from("/s/blobs/ab12")]);
        let bash = "tail\n[output truncated; full output: /s/blob]\n[timed out after 1000ms]";
        assert_eq!(spill_paths(bash), vec![PathBuf::from("/s/blob")]);
        assert!(spill_paths("stored at: relative/path. Use read").is_empty());
        assert!(spill_paths("nothing here").is_empty());
    }

    #[test]
    fn transcript_uris_name_valid_session_ids_only() {
        assert_eq!(transcript_id(&transcript_uri("2026-ab_c")), Some("2026-ab_c"));
        assert_eq!(transcript_id("toolhost://session/../x/cards"), None);
        assert_eq!(transcript_id("toolhost://session//cards"), None);
        assert_eq!(transcript_id("toolhost://spill/x"), None);
    }

    /// A backend with nothing behind it: spills are read without one.
    struct Nothing(tokio::sync::watch::Sender<u64>);

    impl Backend for Nothing {
        fn tools(
            &self,
        ) -> toolhost_contract::BoxFuture<
            '_,
            Result<Vec<toolhost_protocol::lsp_ext::ToolDescriptor>, BackendError>,
        > {
            Box::pin(async { Ok(Vec::new()) })
        }
        fn call(
            &self,
            _call: crate::ToolCall,
            _cancel: toolhost_contract::CancellationToken,
        ) -> toolhost_contract::BoxFuture<'_, Result<crate::backend::CallDone, BackendError>>
        {
            Box::pin(async { Err(BackendError::Unavailable("nothing".to_owned())) })
        }
        fn tools_changed(&self) -> tokio::sync::watch::Receiver<u64> {
            self.0.subscribe()
        }
    }

    fn linked(resources: &Resources, dir: &Path, name: &str, bytes: &[u8]) -> Resource {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let text = format!("(Full grep result stored at: {}. Use read.)", path.display());
        let mut result = CallToolResult::success(vec![McpContent::text(text)]);
        resources.link(&mut result);
        result.content.iter().find_map(|c| c.as_resource_link().cloned()).unwrap()
    }

    #[tokio::test]
    async fn linked_spills_read_back_as_text_or_blob_and_large_ones_are_refused() {
        let dir = std::env::temp_dir().join(format!("toolhost-mcp-res-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (resources, backend) =
            (Resources::default(), Nothing(tokio::sync::watch::channel(0).0));
        let text = linked(&resources, &dir, "text.txt", b"all of it\n");
        assert_eq!((text.mime_type.as_deref(), text.size), (Some("text/plain"), Some(10)));
        let read = resources.read(&backend, &text.uri).await.unwrap();
        assert!(matches!(&read.contents[0],
            ResourceContents::TextResourceContents { text, .. } if text == "all of it\n"));
        let binary = linked(&resources, &dir, "bin", b"\xff\x00\x01");
        assert_eq!(binary.mime_type.as_deref(), Some("application/octet-stream"));
        let read = resources.read(&backend, &binary.uri).await.unwrap();
        assert!(matches!(&read.contents[0],
            ResourceContents::BlobResourceContents { blob, .. } if blob == "/wAB"));
        let big = vec![b'x'; MAX_READ_BYTES as usize + 1];
        let big = linked(&resources, &dir, "big.txt", &big);
        let refused = resources.read(&backend, &big.uri).await.unwrap_err();
        assert_eq!(refused.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(refused.message.contains("over the 8388608-byte limit"), "{}", refused.message);
        let unknown = resources.read(&backend, "toolhost://spill/other").await.unwrap_err();
        assert_eq!(unknown.code, rmcp::model::ErrorCode::RESOURCE_NOT_FOUND);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn binary_files_are_not_text() {
        assert_eq!(mime_of(b"plain text"), "text/plain");
        assert_eq!(mime_of("é".as_bytes().get(..1).unwrap()), "text/plain");
        assert_eq!(mime_of(b"\xff\xfe\x00bin"), "application/octet-stream");
    }
}
