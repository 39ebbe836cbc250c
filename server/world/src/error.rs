//! What can go wrong reaching a world, each with a stable code.

use toolhost_protocol::world::WorldErrorData;

/// A failed world request.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// The world could not be started or reached (ssh failed, the binary is missing).
    #[error("the execution world cannot be reached: {0}")]
    Unreachable(String),
    /// The connection dropped while the request was in flight; the next request reconnects.
    #[error("the connection to the execution world was lost: {0}")]
    Disconnected(String),
    /// The server speaks another major version of the protocol.
    #[error("the execution world speaks protocol {server}, this toolhost {client}")]
    Version { server: String, client: String },
    /// The world refused or failed the request; `code` is the stable code a local tool reports.
    #[error("{message}")]
    Remote { code: String, message: String, path: Option<String>, size: Option<u64> },
    /// An answer that does not parse.
    #[error("the execution world answered something unexpected: {0}")]
    Protocol(String),
    /// The caller stopped waiting.
    #[error("the request was cancelled")]
    Cancelled,
}

impl WorldError {
    /// The stable code (`info.code` of a tool error built from it).
    pub fn code(&self) -> &str {
        match self {
            WorldError::Unreachable(_) => "WORLD_UNREACHABLE",
            WorldError::Disconnected(_) => "WORLD_DISCONNECTED",
            WorldError::Version { .. } => "WORLD_VERSION",
            WorldError::Remote { code, .. } => code,
            WorldError::Protocol(_) => "WORLD_PROTOCOL",
            WorldError::Cancelled => "WORLD_CANCELLED",
        }
    }

    pub(crate) fn remote(message: String, data: Option<WorldErrorData>) -> Self {
        match data {
            Some(WorldErrorData { code, path, size }) => {
                WorldError::Remote { code, message, path, size }
            }
            None => WorldError::Remote {
                code: "WORLD_ERROR".to_owned(),
                message,
                path: None,
                size: None,
            },
        }
    }
}
