//! JSON-RPC 2.0 for toolhost: the message types and the two framings every front end uses.
//!
//! - [`message`]: requests, notifications and responses; [`message::classify`] turns any parsed
//!   body into one of them or into the invalid-request answer it deserves; encoders write
//!   outgoing messages straight from typed values.
//! - [`content_length`]: LSP's `Content-Length` framing, as a push decoder with caps on headers
//!   and bodies and two policies for an oversized body: [`LimitPolicy::Drain`] (skip it without
//!   buffering and report it, so a server can answer and keep the connection) and
//!   [`LimitPolicy::Fail`] (stop at once, for a child process that misbehaves).
//! - [`lines`]: newline-delimited framing (MCP and ACP over stdio) with the same two policies.
//! - [`io`]: readers that feed either decoder from a blocking [`std::io::Read`] or a tokio
//!   `AsyncRead`; [`outbox`]: the write half on its own thread, in either framing; [`peer`]:
//!   requests to the peer and their replies.
//!
//! The decoders never allocate more than their caps, never panic on any input, and return every
//! complete frame exactly once, in order, however the input is split (`tests/split_streams.rs`).
//! Nothing else in toolhost parses frames.

pub mod content_length;
pub mod io;
pub mod lines;
pub mod message;
pub mod outbox;
pub mod peer;
pub mod reader;

pub use content_length::{ContentLengthDecoder, FrameLimits};
pub use io::{AsyncFrames, BlockingFrames, ReadError};
pub use lines::{LineDecoder, LineLimits};
pub use message::{ErrorObject, Id, Incoming, Invalid, Notification, Request, Response, codes};
pub use outbox::{Framing, Outbox};

/// What a decoder yields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// One message body within the cap.
    Body(Vec<u8>),
    /// A body over the cap that was skipped without being buffered (its length in bytes).
    Oversized(usize),
}

/// What a decoder does with a body over its cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitPolicy {
    /// Skip the body without buffering it and yield [`Frame::Oversized`]; the stream goes on.
    /// For servers, which answer the oversized message and keep the connection.
    Drain,
    /// Fail with [`FrameError::BodyTooLarge`] as soon as the size is known. For a child process
    /// whose output cannot be trusted any more.
    Fail,
}

/// Why a stream cannot be decoded further. Every variant is final: a decoder that returned one
/// yields nothing else.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("header section longer than {max} bytes")]
    HeaderTooLong { max: usize },
    #[error("more than {max} header lines")]
    TooManyHeaderLines { max: usize },
    #[error("a header line is not UTF-8")]
    HeaderNotUtf8,
    #[error("malformed header line {0:?}")]
    MalformedHeader(String),
    #[error("missing Content-Length header")]
    MissingLength,
    #[error("unusable Content-Length {0:?}")]
    UnusableLength(String),
    #[error("conflicting Content-Length headers")]
    ConflictingLength,
    #[error("message body of {len} bytes exceeds the {max}-byte limit")]
    BodyTooLarge { len: usize, max: usize },
    #[error("the input ended inside a header")]
    EndedInHeader,
    #[error("the input ended inside a {len}-byte body")]
    EndedInBody { len: usize },
    #[error("the input ended inside an oversized body")]
    EndedInOversized,
    #[error("line of more than {max} bytes")]
    LineTooLong { max: usize },
}

/// A push decoder: bytes in, frames out. Implemented by [`ContentLengthDecoder`] and
/// [`LineDecoder`]; the readers in [`io`] drive either.
pub trait Decode {
    /// Consumes `bytes`. Completed frames (or the error that ends the stream) queue up for
    /// [`Decode::pop`]; bytes after an error are ignored.
    fn push(&mut self, bytes: &[u8]);
    /// The next completed frame, or the error that ended the stream.
    fn pop(&mut self) -> Option<Result<Frame, FrameError>>;
    /// Declares the end of input: `Ok` when it fell between frames, else why the last frame is
    /// incomplete. A decoder may still queue a final frame (a last line without its newline).
    fn finish(&mut self) -> Result<(), FrameError>;
}
