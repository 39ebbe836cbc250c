//! The framing filter in front of the LSP framework (design.md §4).
//!
//! It reads `Content-Length` frames from the client with bounded headers and a bounded body: an
//! oversized body is drained in chunks without being buffered and answered `-32600` with id null;
//! a frame without a usable `Content-Length` is fatal (the connection closes, exit code 1). Bodies
//! that are JSON-RPC responses (to the server's own requests) are routed straight to the waiting
//! request, so they are never stuck behind busy handlers.

use std::io;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};

/// Default cap on one message body (64 MiB).
pub const DEFAULT_MAX_BODY: usize = 64 * 1024 * 1024;
/// Cap on the header section of one frame.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;
/// Cap on the number of header lines of one frame.
pub const MAX_HEADER_LINES: usize = 16;

/// One frame read from the client.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A body within the cap.
    Body(Vec<u8>),
    /// A body over the cap, already drained (its declared length).
    Oversized(usize),
}

/// Why reading stopped.
#[derive(Debug, thiserror::Error)]
pub enum FramingError {
    /// The header section cannot be used; the stream cannot be resynchronised.
    #[error("unusable frame header: {0}")]
    Fatal(String),
    #[error("cannot read from the client: {0}")]
    Io(#[from] io::Error),
}

/// Reads frames with caps.
pub struct FrameReader<R> {
    inner: BufReader<R>,
    max_body: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(reader: R, max_body: usize) -> Self {
        FrameReader { inner: BufReader::with_capacity(64 * 1024, reader), max_body }
    }

    /// The next frame; `Ok(None)` at a clean end of input (between frames).
    pub async fn next(&mut self) -> Result<Option<Frame>, FramingError> {
        let Some(length) = read_headers(&mut self.inner).await? else {
            return Ok(None);
        };
        if length > self.max_body {
            drain(&mut self.inner, length).await?;
            return Ok(Some(Frame::Oversized(length)));
        }
        let mut body = vec![0u8; length];
        self.inner.read_exact(&mut body).await.map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                FramingError::Fatal(format!("the input ended inside a {length}-byte body"))
            } else {
                FramingError::Io(e)
            }
        })?;
        Ok(Some(Frame::Body(body)))
    }
}

async fn read_headers<R: AsyncBufRead + Unpin>(
    reader: &mut R,
) -> Result<Option<usize>, FramingError> {
    let mut total = 0usize;
    let mut lines = 0usize;
    let mut length: Option<usize> = None;
    loop {
        let mut line = Vec::new();
        let budget = (MAX_HEADER_BYTES - total) as u64 + 1;
        let n = (&mut *reader).take(budget).read_until(b'\n', &mut line).await?;
        if n == 0 {
            if total == 0 {
                return Ok(None);
            }
            return Err(FramingError::Fatal("the input ended inside a header".to_owned()));
        }
        total += n;
        if total > MAX_HEADER_BYTES {
            return Err(FramingError::Fatal(format!(
                "header section longer than {MAX_HEADER_BYTES} bytes"
            )));
        }
        if !line.ends_with(b"\n") {
            // Within the budget, a line without its newline means the input ended.
            return Err(FramingError::Fatal("the input ended inside a header".to_owned()));
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.is_empty() {
            return match length {
                Some(length) => Ok(Some(length)),
                None => Err(FramingError::Fatal("missing Content-Length header".to_owned())),
            };
        }
        lines += 1;
        if lines > MAX_HEADER_LINES {
            return Err(FramingError::Fatal(format!("more than {MAX_HEADER_LINES} header lines")));
        }
        let text = std::str::from_utf8(text)
            .map_err(|_| FramingError::Fatal("a header line is not UTF-8".to_owned()))?;
        let Some((name, value)) = text.split_once(':') else {
            return Err(FramingError::Fatal(format!("malformed header line {text:?}")));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let value = value.trim();
            let parsed: usize = value
                .parse()
                .map_err(|_| FramingError::Fatal(format!("unusable Content-Length {value:?}")))?;
            if length.is_some_and(|l| l != parsed) {
                return Err(FramingError::Fatal("conflicting Content-Length headers".to_owned()));
            }
            length = Some(parsed);
        }
    }
}

async fn drain<R: AsyncRead + Unpin>(
    reader: &mut R,
    mut remaining: usize,
) -> Result<(), FramingError> {
    let mut chunk = vec![0u8; 64 * 1024];
    while remaining > 0 {
        let want = remaining.min(chunk.len());
        let n = reader.read(&mut chunk[..want]).await?;
        if n == 0 {
            return Err(FramingError::Fatal("the input ended inside an oversized body".to_owned()));
        }
        remaining -= n;
    }
    Ok(())
}

/// `Content-Length` framing of one body.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Writes one framed body and flushes.
pub async fn write_frame<W: AsyncWrite + Unpin>(writer: &mut W, body: &[u8]) -> io::Result<()> {
    writer.write_all(&encode(body)).await?;
    writer.flush().await
}

/// Whether a JSON-RPC body is a response (to a server→client request).
pub fn is_response(body: &serde_json::Value) -> bool {
    body.get("method").is_none()
        && body.get("id").is_some()
        && (body.get("result").is_some() || body.get("error").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Result<Option<Frame>, String>> {
        let mut reader = FrameReader::new(input, max);
        let mut out = Vec::new();
        loop {
            let next = reader.next().await.map_err(|e| e.to_string());
            let stop = !matches!(next, Ok(Some(_)));
            out.push(next);
            if stop {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn reads_frames_and_drains_oversized_bodies() {
        let mut input = encode(b"{}");
        input.extend(encode(&[b'x'; 100]));
        input.extend(b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[]");
        let got = frames(&input, 10).await;
        assert_eq!(got[0], Ok(Some(Frame::Body(b"{}".to_vec()))));
        assert_eq!(got[1], Ok(Some(Frame::Oversized(100))));
        assert_eq!(got[2], Ok(Some(Frame::Body(b"[]".to_vec()))));
        assert_eq!(got[3], Ok(None));
    }

    #[tokio::test]
    async fn unusable_headers_are_fatal() {
        for input in [
            &b"Content-Type: x\r\n\r\n{}"[..],
            b"Content-Length: -1\r\n\r\n{}",
            b"Content-Length: abc\r\n\r\n",
            b"Content-Length: 99999999999999999999999\r\n\r\n",
            b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
            b"garbage\r\n\r\n",
            b"\r\n",
            b"Content-Length: 10\r\n\r\n{}",
        ] {
            let got = frames(input, 100).await;
            assert!(
                got.last().unwrap().is_err(),
                "{:?} gave {got:?}",
                String::from_utf8_lossy(input)
            );
        }
        let long = format!("X-Pad: {}\r\n", "a".repeat(9000));
        assert!(frames(long.as_bytes(), 100).await.last().unwrap().is_err());
    }
}
