//! Errors of the stdio provider, each with its `LspError` code (or none, for a plain
//! JSON-RPC error messages), converted to tool failures at the seam.

use toolhost_contract::ToolError;
use toolhost_contract::lsp::{codes, lsp_error};

/// Why a query failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum LspHostError {
    #[error("no LSP provider handles \"{0}\"")]
    NoProvider(String),
    #[error("cannot start language server \"{id}\" ({command}): {detail}")]
    Spawn { id: String, command: String, detail: String },
    /// The process ended (or its pipes closed) while we needed it.
    #[error("language server \"{id}\" exited{}", stderr_suffix(.stderr))]
    Exited { id: String, stderr: String },
    /// Bad framing or JSON: the instance was killed.
    #[error("language server \"{id}\" sent an invalid message ({detail}); it was stopped")]
    Protocol { id: String, detail: String },
    #[error("language server \"{id}\" failed to initialize: {detail}")]
    Initialize { id: String, detail: String },
    #[error(
        "language server \"{id}\" crashed {crashes} times within {window_secs} s; not restarting it again yet"
    )]
    RestartBudget { id: String, crashes: usize, window_secs: u64 },
    #[error("server does not support {0}")]
    Unsupported(String),
    #[error("{0}")]
    Malformed(String),
    /// A JSON-RPC error answer: its message verbatim (a plain failure).
    #[error("{message}")]
    Rpc { code: i64, message: String },
    #[error("the LSP host is shut down")]
    Disposed,
    #[error("tool call aborted")]
    Aborted,
}

fn stderr_suffix(stderr: &str) -> String {
    let tail = stderr.trim();
    if tail.is_empty() { String::new() } else { format!("; stderr: {tail}") }
}

impl LspHostError {
    /// The stable code (`None` for plain failures).
    pub fn code(&self) -> Option<&'static str> {
        match self {
            LspHostError::NoProvider(_)
            | LspHostError::Spawn { .. }
            | LspHostError::Exited { .. }
            | LspHostError::Protocol { .. }
            | LspHostError::Initialize { .. }
            | LspHostError::RestartBudget { .. } => Some(codes::UNAVAILABLE),
            LspHostError::Unsupported(_) => Some(codes::UNSUPPORTED_OPERATION),
            LspHostError::Malformed(_) => Some(codes::MALFORMED_RESPONSE),
            LspHostError::Disposed => Some(codes::DISPOSED),
            LspHostError::Aborted => Some("ABORTED"),
            LspHostError::Rpc { .. } => None,
        }
    }

    /// Whether the instance is gone (so a pooled instance may be replaced and the query retried).
    pub(crate) fn is_transport(&self) -> bool {
        matches!(self, LspHostError::Exited { .. } | LspHostError::Protocol { .. })
    }
}

impl From<LspHostError> for ToolError {
    fn from(err: LspHostError) -> Self {
        match (&err, err.code()) {
            (LspHostError::Aborted, _) => toolhost_contract::lsp::aborted(),
            (_, Some(code)) => lsp_error(code, err.to_string()),
            (_, None) => ToolError::plain(err.to_string()),
        }
    }
}
