//! A server's reading side of a `Content-Length` connection (an LSP server's stdin), on an OS
//! thread of its own: [`read_loop`] decodes frames (bodies over the cap are drained without being
//! buffered), parses and classifies each body and hands the result to the caller's routing
//! function, on the reading thread. Only an unusable header ends it early: nothing tells where
//! the next frame would start. The writing side is [`crate::Outbox`].

use crate::content_length::{ContentLengthDecoder, FrameLimits};
use crate::io::{BlockingFrames, ReadError};
use crate::message::{self, Incoming, Invalid};
use crate::{Frame, LimitPolicy};
use std::io::Read;

/// What the reader hands to the router.
#[derive(Debug)]
pub enum Inbound {
    /// A well-formed request, notification or response.
    Message(Incoming),
    /// JSON that is not a usable message: answer `-32600`.
    Invalid(Invalid),
    /// A body that is not JSON: answer `-32700` with id null.
    ParseError,
    /// A body over the cap (its length), already drained: answer `-32600` with id null.
    Oversized(usize),
}

/// Why reading stopped.
#[derive(Debug)]
pub enum ReadEnd {
    /// End of input between frames.
    Eof,
    /// The router asked to stop (an `exit` notification).
    Stopped,
    /// The input cannot be decoded further (an unusable header, input ending inside a frame).
    Fatal(String),
}

/// Reads frames from `input` until it ends, the router returns `false`, or a fatal framing
/// error. Runs on the calling thread.
pub fn read_loop(
    input: impl Read,
    max_body: usize,
    mut route: impl FnMut(Inbound) -> bool,
) -> ReadEnd {
    let decoder = ContentLengthDecoder::new(FrameLimits::server(max_body), LimitPolicy::Drain);
    let mut frames = BlockingFrames::new(input, decoder);
    loop {
        let inbound = match frames.next_frame() {
            Ok(None) => return ReadEnd::Eof,
            Ok(Some(Frame::Oversized(len))) => Inbound::Oversized(len),
            Ok(Some(Frame::Body(body))) => match message::parse(&body) {
                Ok(incoming) => Inbound::Message(incoming),
                Err(Some(invalid)) => Inbound::Invalid(invalid),
                Err(None) => Inbound::ParseError,
            },
            Err(ReadError::Frame(err)) => return ReadEnd::Fatal(err.to_string()),
            Err(ReadError::Io(err)) => {
                return ReadEnd::Fatal(format!("cannot read from the client: {err}"));
            }
        };
        if !route(inbound) {
            return ReadEnd::Stopped;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content_length;

    #[test]
    fn the_reader_sorts_bodies() {
        let mut input = Vec::new();
        for body in [
            &b"{"[..],
            b"[]",
            br#"{"jsonrpc":"2.0","id":1,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":null}"#,
        ] {
            content_length::encode_into(body, &mut input);
        }
        input.extend(content_length::header(5000).as_bytes());
        input.extend(vec![b' '; 5000]);
        input.extend(b"Content-Length: x\r\n\r\n");
        let mut seen = Vec::new();
        let end = read_loop(&input[..], 1024, |inbound| {
            seen.push(match inbound {
                Inbound::ParseError => "parse".to_owned(),
                Inbound::Invalid(i) => format!("invalid {}", i.id),
                Inbound::Message(Incoming::Request(r)) => format!("request {}", r.method),
                Inbound::Message(Incoming::Response(_)) => "response".to_owned(),
                Inbound::Message(Incoming::Notification(_)) => "notification".to_owned(),
                Inbound::Oversized(n) => format!("oversized {n}"),
            });
            true
        });
        assert_eq!(seen, ["parse", "invalid null", "request m", "response", "oversized 5000"]);
        assert!(
            matches!(end, ReadEnd::Fatal(reason) if reason.contains("unusable Content-Length"))
        );
    }
}
