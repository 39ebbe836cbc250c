//! Newline-delimited framing (MCP's and ACP's stdio transports): one JSON message per line,
//! `\n` or `\r\n` terminated. Blank lines are skipped. A line over the cap is skipped without
//! being buffered ([`LimitPolicy::Drain`], reported as [`Frame::Oversized`]) or ends the stream
//! ([`LimitPolicy::Fail`]). A last line without its newline still counts at the end of input.

use crate::{Decode, Frame, FrameError, LimitPolicy};
use std::collections::VecDeque;

/// Caps of a line decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineLimits {
    /// Largest line kept (without its line ending).
    pub max_line: usize,
}

/// The push decoder of newline-delimited frames.
pub struct LineDecoder {
    limits: LineLimits,
    policy: LimitPolicy,
    line: Vec<u8>,
    /// The current line is over the cap and being skipped.
    skipping: Option<Skip>,
    failed: bool,
    ready: VecDeque<Result<Frame, FrameError>>,
}

/// A line being skipped: bytes so far, and whether the last one was `\r` (part of a `\r\n`
/// line ending if the newline comes next).
struct Skip {
    count: usize,
    last_cr: bool,
}

impl LineDecoder {
    pub fn new(limits: LineLimits, policy: LimitPolicy) -> Self {
        LineDecoder {
            limits,
            policy,
            line: Vec::new(),
            skipping: None,
            failed: false,
            ready: VecDeque::new(),
        }
    }

    fn too_long(&mut self, len: usize) {
        match self.policy {
            LimitPolicy::Drain => self.ready.push_back(Ok(Frame::Oversized(len))),
            LimitPolicy::Fail => {
                self.ready.push_back(Err(FrameError::LineTooLong { max: self.limits.max_line }));
                self.failed = true;
            }
        }
    }

    /// A line ended (at a newline or at the end of input).
    fn end_line(&mut self) {
        if let Some(skip) = self.skipping.take() {
            self.too_long(skip.count - usize::from(skip.last_cr));
            return;
        }
        let mut line = std::mem::take(&mut self.line);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.len() > self.limits.max_line {
            self.too_long(line.len());
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            self.ready.push_back(Ok(Frame::Body(line)));
        }
    }
}

impl Decode for LineDecoder {
    fn push(&mut self, mut input: &[u8]) {
        while !input.is_empty() && !self.failed {
            let newline = input.iter().position(|b| *b == b'\n');
            let content = &input[..newline.unwrap_or(input.len())];
            input = &input[newline.map_or(input.len(), |i| i + 1)..];
            if let Some(skip) = &mut self.skipping {
                skip.count += content.len();
                if let Some(last) = content.last() {
                    skip.last_cr = *last == b'\r';
                }
            } else if self.line.len() + content.len() > self.limits.max_line.saturating_add(1) {
                // Over the cap even if the line ends in `\r\n`: stop buffering it.
                let count = self.line.len() + content.len();
                let last_cr = content.last() == Some(&b'\r');
                if self.policy == LimitPolicy::Fail {
                    self.too_long(count);
                    return;
                }
                self.line.clear();
                self.skipping = Some(Skip { count, last_cr });
            } else {
                self.line.extend_from_slice(content);
            }
            if newline.is_some() {
                self.end_line();
            }
        }
    }

    fn pop(&mut self) -> Option<Result<Frame, FrameError>> {
        self.ready.pop_front()
    }

    fn finish(&mut self) -> Result<(), FrameError> {
        if !self.failed && (self.skipping.is_some() || !self.line.is_empty()) {
            self.end_line();
        }
        self.failed = true;
        Ok(())
    }
}

/// One message as a line: the body (which must not contain a raw newline; serde_json never
/// writes one) and `\n`.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 1);
    encode_into(body, &mut out);
    out
}

/// Appends one message line to `out`.
pub fn encode_into(body: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(body);
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn decode(input: &[u8], max: usize, policy: LimitPolicy) -> Vec<String> {
        let mut decoder = LineDecoder::new(LineLimits { max_line: max }, policy);
        decoder.push(input);
        decoder.finish().unwrap();
        let mut out = Vec::new();
        while let Some(item) = decoder.pop() {
            out.push(match item {
                Ok(Frame::Body(b)) => String::from_utf8_lossy(&b).into_owned(),
                Ok(Frame::Oversized(n)) => format!("<oversized {n}>"),
                Err(e) => format!("<{e}>"),
            });
        }
        out
    }

    #[test]
    fn lines_blank_lines_crlf_and_a_last_line_without_newline() {
        assert_eq!(
            decode(b"{\"a\":1}\n\n  \r\n{\"b\":2}\r\n{\"c\":3}", 100, LimitPolicy::Drain),
            ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]
        );
    }

    #[test]
    fn long_lines_are_skipped_or_fatal() {
        let input = b"12345\n1234567890\n123\n";
        assert_eq!(decode(input, 5, LimitPolicy::Drain), ["12345", "<oversized 10>", "123"]);
        assert_eq!(decode(input, 5, LimitPolicy::Fail), ["12345", "<line of more than 5 bytes>"]);
        assert_eq!(decode(b"12345\r\n", 5, LimitPolicy::Drain), ["12345"]);
        assert_eq!(decode(b"123456", 5, LimitPolicy::Drain), ["<oversized 6>"]);
    }
}
