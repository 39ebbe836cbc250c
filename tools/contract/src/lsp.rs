//! The LSP seam (docs/tools.md, lsp): the `LspProvider` capability the `lsp` tool queries.
//!
//! A provider answers one closed operation (`goToDefinition`, `findReferences`,
//! `goToImplementation`, `hover`) at a zero-based UTF-16 position and returns a normalized
//! answer; there is no generic JSON-RPC escape hatch. Implementations: the stdio language-server
//! pool (`toolhost-lsp-host`) and the editor-backed provider (`toolhost/lspQuery`, in the server).
//! Also here: the `LspError` codes and the `file:` URI conversions both sides share.

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub use toolhost_protocol::lsp_ext::LspPosition;

/// The closed set of operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum LspOperation {
    #[serde(rename = "goToDefinition")]
    GoToDefinition,
    #[serde(rename = "findReferences")]
    FindReferences,
    #[serde(rename = "goToImplementation")]
    GoToImplementation,
    #[serde(rename = "hover")]
    Hover,
}

impl LspOperation {
    /// The tool-facing name (`goToDefinition`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            LspOperation::GoToDefinition => "goToDefinition",
            LspOperation::FindReferences => "findReferences",
            LspOperation::GoToImplementation => "goToImplementation",
            LspOperation::Hover => "hover",
        }
    }

    /// The LSP request method.
    pub fn method(self) -> &'static str {
        match self {
            LspOperation::GoToDefinition => "textDocument/definition",
            LspOperation::FindReferences => "textDocument/references",
            LspOperation::GoToImplementation => "textDocument/implementation",
            LspOperation::Hover => "textDocument/hover",
        }
    }

    /// Parses the tool-facing name.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::GoToDefinition, Self::FindReferences, Self::GoToImplementation, Self::Hover]
            .into_iter()
            .find(|op| op.as_str() == name)
    }
}

/// A zero-based UTF-16 range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LspRange {
    pub start: LspPosition,
    pub end: LspPosition,
}

/// One navigation target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LspLocation {
    pub uri: String,
    pub range: LspRange,
}

/// Hover text (markdown or plain text, verbatim) and its optional range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LspHover {
    pub contents: String,
    pub range: Option<LspRange>,
}

/// A provider's normalized answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LspAnswer {
    Locations(Vec<LspLocation>),
    Hover(Option<LspHover>),
}

/// One query. The tool resolves the file through the workspace (confinement first) and passes
/// its current disk text, so providers never read the source themselves.
#[derive(Clone, Debug)]
pub struct LspRequest {
    pub operation: LspOperation,
    /// The canonical workspace root (one server instance per server and root).
    pub workspace_root: PathBuf,
    /// The canonical path of the file.
    pub path: PathBuf,
    /// The file's `file:` URI (of `path`).
    pub uri: String,
    /// How messages name the file.
    pub display: String,
    /// Zero-based, UTF-16 code units.
    pub position: LspPosition,
    /// The file's current text on disk.
    pub text: Arc<str>,
}

/// The capability: answers queries or fails with an `LspError` (or an abort once `cancel`
/// fires). Implementations must observe `cancel` and return promptly after it fires.
pub trait LspProvider: Send + Sync {
    fn query<'a>(
        &'a self,
        request: &'a LspRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<LspAnswer, ToolError>>;
}

/// How providers are stored in [`crate::Capabilities`].
pub type LspHandle = Arc<dyn LspProvider>;

/// The provider of a tool context, if the host offers one.
pub fn provider(cx: &ToolContext) -> Option<LspHandle> {
    cx.capability::<LspHandle>()
}

/// The `LspError` codes (docs/tools.md, lsp).
pub mod codes {
    pub const WORKSPACE_REQUIRED: &str = "LSP_WORKSPACE_REQUIRED";
    pub const UNAVAILABLE: &str = "LSP_UNAVAILABLE";
    pub const MALFORMED_RESPONSE: &str = "LSP_MALFORMED_RESPONSE";
    pub const UNSUPPORTED_OPERATION: &str = "LSP_UNSUPPORTED_OPERATION";
    pub const DISPOSED: &str = "LSP_DISPOSED";
}

/// A typed `LspError` failure.
pub fn lsp_error(code: &str, message: impl Into<String>) -> ToolError {
    ToolError::typed("LspError", code, message)
}

/// `LSP_UNAVAILABLE`: `no LSP provider handles "<file>"`.
pub fn no_provider(file: &str) -> ToolError {
    lsp_error(codes::UNAVAILABLE, format!("no LSP provider handles \"{file}\""))
}

/// The abort failure a provider returns once its cancellation fired.
pub fn aborted() -> ToolError {
    ToolError::typed("AbortError", "ABORTED", "tool call aborted")
}

fn keep_in_path(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b)
}

/// The `file:` URI of an absolute path (percent-encoded like `url::Url::from_file_path`).
pub fn file_uri(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut out = String::with_capacity(text.len() + 7);
    out.push_str("file://");
    if !text.starts_with('/') {
        out.push('/');
    }
    for &b in text.as_bytes() {
        if keep_in_path(b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The path of a local `file:` URI (`file:///p` or `file://localhost/p`); `None` for other
/// schemes, remote hosts, bad escapes, or a decoded NUL.
pub fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://").or_else(|| {
        uri.get(..7).filter(|s| s.eq_ignore_ascii_case("file://")).map(|_| &uri[7..])
    })?;
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let bytes = percent_decode(path)?;
    if bytes.contains(&0) {
        return None;
    }
    Some(PathBuf::from(String::from_utf8(bytes).ok()?))
}

/// Decodes `%XX` escapes; `None` on a malformed escape.
pub fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn uris_round_trip() {
        let path = Path::new("/tmp/a b/ü#1%.c");
        let uri = file_uri(path);
        assert_eq!(uri, "file:///tmp/a%20b/%C3%BC%231%25.c");
        assert_eq!(file_uri_path(&uri).unwrap(), path);
        assert_eq!(file_uri_path("file://localhost/x").unwrap(), Path::new("/x"));
        assert_eq!(file_uri_path("untitled:1"), None);
        assert_eq!(file_uri_path("file:///a%00b"), None);
        assert_eq!(file_uri_path("file:///a%zz"), None);
    }

    #[test]
    fn operations_parse() {
        for op in ["goToDefinition", "findReferences", "goToImplementation", "hover"] {
            assert_eq!(LspOperation::parse(op).unwrap().as_str(), op);
        }
        assert_eq!(LspOperation::parse("rename"), None);
    }
}
