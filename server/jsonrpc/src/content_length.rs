//! `Content-Length` framing (LSP): `Content-Length: <n>\r\n` (other headers allowed and ignored,
//! `\n` line endings tolerated), an empty line, then `n` bytes of body.
//!
//! The header section is bounded in bytes and in lines; a header the decoder cannot use (no
//! length, a length that is not a decimal number, two different lengths, a line without a colon,
//! bytes that are not UTF-8) is fatal, because nothing tells where the next frame starts.

use crate::{Decode, Frame, FrameError, LimitPolicy};
use std::collections::VecDeque;

/// Default cap on one body for a server reading its client (64 MiB).
pub const DEFAULT_SERVER_MAX_BODY: usize = 64 * 1024 * 1024;
/// Default cap on one body read from a child language server (16 MB).
pub const DEFAULT_CHILD_MAX_BODY: usize = 16_000_000;

/// Caps of one decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLimits {
    /// Largest body kept; larger ones follow the [`LimitPolicy`].
    pub max_body: usize,
    /// Largest header section, newlines included.
    pub max_header_bytes: usize,
    /// Most header lines in one section.
    pub max_header_lines: usize,
}

impl FrameLimits {
    /// A server reading its client: small headers (8 KiB, 16 lines), `max_body` bodies.
    pub fn server(max_body: usize) -> Self {
        FrameLimits { max_body, max_header_bytes: 8 * 1024, max_header_lines: 16 }
    }

    /// A client reading a child process: generous headers (64 KiB, 256 lines).
    pub fn child(max_body: usize) -> Self {
        FrameLimits { max_body, max_header_bytes: 64 * 1024, max_header_lines: 256 }
    }
}

enum State {
    /// Reading header lines; `line` holds the current partial line.
    Header { line: Vec<u8>, bytes: usize, lines: usize, length: Option<usize> },
    /// Reading a body of `len` bytes into `body`.
    Body { len: usize, body: Vec<u8> },
    /// Skipping `remaining` bytes of an oversized body of `len` bytes.
    Drain { len: usize, remaining: usize },
    /// A fatal error was queued; everything else is ignored.
    Failed,
}

impl State {
    fn header() -> State {
        State::Header { line: Vec::new(), bytes: 0, lines: 0, length: None }
    }
}

/// The push decoder of `Content-Length` frames.
pub struct ContentLengthDecoder {
    limits: FrameLimits,
    policy: LimitPolicy,
    state: State,
    ready: VecDeque<Result<Frame, FrameError>>,
}

impl ContentLengthDecoder {
    pub fn new(limits: FrameLimits, policy: LimitPolicy) -> Self {
        ContentLengthDecoder { limits, policy, state: State::header(), ready: VecDeque::new() }
    }

    fn fail(&mut self, err: FrameError) {
        self.ready.push_back(Err(err));
        self.state = State::Failed;
    }

    /// Handles one complete header line (without its `\n`). Returns the state to continue in.
    fn header_line(
        &mut self,
        raw: &[u8],
        lines: usize,
        length: Option<usize>,
    ) -> Result<HeaderStep, FrameError> {
        let text = raw.strip_suffix(b"\r").unwrap_or(raw);
        if text.is_empty() {
            let len = length.ok_or(FrameError::MissingLength)?;
            return Ok(HeaderStep::Done(len));
        }
        if lines + 1 > self.limits.max_header_lines {
            return Err(FrameError::TooManyHeaderLines { max: self.limits.max_header_lines });
        }
        let text = std::str::from_utf8(text).map_err(|_| FrameError::HeaderNotUtf8)?;
        let Some((name, value)) = text.split_once(':') else {
            return Err(FrameError::MalformedHeader(text.chars().take(200).collect()));
        };
        if !name.trim().eq_ignore_ascii_case("content-length") {
            return Ok(HeaderStep::More(length));
        }
        let value = value.trim();
        let parsed = value
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| value.parse::<usize>().ok())
            .flatten()
            .ok_or_else(|| FrameError::UnusableLength(value.chars().take(200).collect()))?;
        if length.is_some_and(|l| l != parsed) {
            return Err(FrameError::ConflictingLength);
        }
        Ok(HeaderStep::More(Some(parsed)))
    }

    /// The state after a complete header section announcing `len` bytes.
    fn start_body(&mut self, len: usize) -> Option<State> {
        if len <= self.limits.max_body {
            if len == 0 {
                self.ready.push_back(Ok(Frame::Body(Vec::new())));
                return Some(State::header());
            }
            // Bounded by the cap; reserve what is announced, but never more than a chunk ahead.
            return Some(State::Body { len, body: Vec::with_capacity(len.min(1 << 20)) });
        }
        match self.policy {
            LimitPolicy::Drain => Some(State::Drain { len, remaining: len }),
            LimitPolicy::Fail => {
                self.fail(FrameError::BodyTooLarge { len, max: self.limits.max_body });
                None
            }
        }
    }
}

enum HeaderStep {
    More(Option<usize>),
    Done(usize),
}

impl Decode for ContentLengthDecoder {
    fn push(&mut self, mut input: &[u8]) {
        while !input.is_empty() {
            match std::mem::replace(&mut self.state, State::Failed) {
                State::Failed => return,
                State::Header { mut line, mut bytes, mut lines, mut length } => {
                    let budget = self.limits.max_header_bytes.saturating_sub(bytes);
                    let newline = input.iter().position(|b| *b == b'\n');
                    let take = newline.map_or(input.len(), |i| i + 1);
                    if take > budget {
                        self.fail(FrameError::HeaderTooLong { max: self.limits.max_header_bytes });
                        return;
                    }
                    line.extend_from_slice(&input[..take]);
                    bytes += take;
                    input = &input[take..];
                    if newline.is_none() {
                        self.state = State::Header { line, bytes, lines, length };
                        continue;
                    }
                    let raw = &line[..line.len() - 1];
                    match self.header_line(raw, lines, length) {
                        Err(err) => {
                            self.fail(err);
                            return;
                        }
                        Ok(HeaderStep::More(next)) => {
                            length = next;
                            lines += 1;
                            line.clear();
                            self.state = State::Header { line, bytes, lines, length };
                        }
                        Ok(HeaderStep::Done(len)) => match self.start_body(len) {
                            Some(state) => self.state = state,
                            None => return,
                        },
                    }
                }
                State::Body { len, mut body } => {
                    let take = (len - body.len()).min(input.len());
                    body.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    if body.len() == len {
                        self.ready.push_back(Ok(Frame::Body(body)));
                        self.state = State::header();
                    } else {
                        self.state = State::Body { len, body };
                    }
                }
                State::Drain { len, remaining } => {
                    let take = remaining.min(input.len());
                    input = &input[take..];
                    if remaining == take {
                        self.ready.push_back(Ok(Frame::Oversized(len)));
                        self.state = State::header();
                    } else {
                        self.state = State::Drain { len, remaining: remaining - take };
                    }
                }
            }
        }
    }

    fn pop(&mut self) -> Option<Result<Frame, FrameError>> {
        self.ready.pop_front()
    }

    fn finish(&mut self) -> Result<(), FrameError> {
        let result = match &self.state {
            State::Failed => return Ok(()),
            State::Header { bytes: 0, .. } => Ok(()),
            State::Header { .. } => Err(FrameError::EndedInHeader),
            State::Body { len, .. } => Err(FrameError::EndedInBody { len: *len }),
            State::Drain { .. } => Err(FrameError::EndedInOversized),
        };
        self.state = State::Failed;
        result
    }
}

/// The header of a body of `len` bytes.
pub fn header(len: usize) -> String {
    format!("Content-Length: {len}\r\n\r\n")
}

/// One framed body.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 32);
    encode_into(body, &mut out);
    out
}

/// Appends one framed body to `out` (so many frames can go out in one write).
pub fn encode_into(body: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(header(body.len()).as_bytes());
    out.extend_from_slice(body);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn decode_all(input: &[u8], limits: FrameLimits, policy: LimitPolicy) -> Vec<String> {
        let mut decoder = ContentLengthDecoder::new(limits, policy);
        decoder.push(input);
        let mut out = Vec::new();
        while let Some(item) = decoder.pop() {
            out.push(match item {
                Ok(Frame::Body(b)) => format!("body {}", String::from_utf8_lossy(&b)),
                Ok(Frame::Oversized(n)) => format!("oversized {n}"),
                Err(e) => format!("error {e}"),
            });
        }
        if let Err(e) = decoder.finish() {
            out.push(format!("end {e}"));
        }
        out
    }

    #[test]
    fn frames_headers_and_oversized_bodies() {
        let mut input = encode(b"{}");
        input.extend(encode(&[b'x'; 100]));
        input.extend(
            b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[]",
        );
        input.extend(b"Content-Length: 000\n\n");
        let limits = FrameLimits::server(10);
        assert_eq!(
            decode_all(&input, limits, LimitPolicy::Drain),
            ["body {}", "oversized 100", "body []", "body "]
        );
        assert_eq!(
            decode_all(&input, limits, LimitPolicy::Fail),
            ["body {}", "error message body of 100 bytes exceeds the 10-byte limit"]
        );
    }

    #[test]
    fn unusable_headers_are_fatal_with_their_reason() {
        let cases: &[(&[u8], &str)] = &[
            (b"Content-Type: x\r\n\r\n{}", "missing Content-Length header"),
            (b"\r\n{}", "missing Content-Length header"),
            (b"Content-Length: -1\r\n\r\n{}", "unusable Content-Length \"-1\""),
            (b"Content-Length: +2\r\n\r\n{}", "unusable Content-Length \"+2\""),
            (b"Content-Length: \r\n\r\n{}", "unusable Content-Length \"\""),
            (b"Content-Length: 99999999999999999999999\r\n\r\n", "unusable Content-Length"),
            (b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "conflicting"),
            (b"garbage\r\n\r\n", "malformed header line \"garbage\""),
            (b"Content-Length: 2\r\nX: \xff\r\n\r\n{}", "not UTF-8"),
            (b"Content-Length: 10\r\n\r\n{}", "ended inside a 10-byte body"),
            (b"Content-Len", "ended inside a header"),
        ];
        for (input, want) in cases {
            let got = decode_all(input, FrameLimits::server(100), LimitPolicy::Drain);
            assert!(
                got.last().is_some_and(|l| l.contains(want)),
                "{:?}: {got:?}",
                String::from_utf8_lossy(input)
            );
        }
        let long = format!("X-Pad: {}\r\n", "a".repeat(9000));
        let got = decode_all(long.as_bytes(), FrameLimits::server(100), LimitPolicy::Drain);
        assert_eq!(got, ["error header section longer than 8192 bytes"]);
        let many: String = (0..20).map(|i| format!("X-{i}: v\r\n")).collect();
        let got = decode_all(many.as_bytes(), FrameLimits::server(100), LimitPolicy::Drain);
        assert_eq!(got, ["error more than 16 header lines"]);
    }

    #[test]
    fn a_huge_body_is_drained_in_pieces_without_buffering() {
        let mut decoder = ContentLengthDecoder::new(FrameLimits::server(1024), LimitPolicy::Drain);
        decoder.push(header(1 << 30).as_bytes());
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..1024 {
            decoder.push(&chunk);
            if let State::Drain { .. } = decoder.state {
            } else {
                break;
            }
        }
        assert_eq!(decoder.pop(), Some(Ok(Frame::Oversized(1 << 30))));
        assert!(decoder.finish().is_ok());
    }
}
