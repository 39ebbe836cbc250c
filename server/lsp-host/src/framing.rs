//! Bounded `Content-Length` framing (seed §6.3): headers up to [`MAX_HEADER_BYTES`], bodies up
//! to the configured cap. Other headers are ignored. Any violation is fatal for the connection.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The header block limit (64 KiB).
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// The default body limit (the seed's `maxMessageBytes`, 16,000,000).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16_000_000;

/// Why the stream cannot be read further.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("header block exceeds {MAX_HEADER_BYTES} bytes")]
    HeaderTooLarge,
    #[error("header without a usable Content-Length")]
    MissingLength,
    #[error("invalid header line {0:?}")]
    BadHeader(String),
    #[error("message body of {len} bytes exceeds the {max}-byte limit")]
    BodyTooLarge { len: usize, max: usize },
    #[error("stream ended inside a message")]
    Truncated,
}

/// Reads frames from a server's stdout.
pub struct FrameReader<R> {
    reader: BufReader<R>,
    max_body: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(reader: R, max_body: usize) -> Self {
        FrameReader { reader: BufReader::new(reader), max_body }
    }

    /// The next body; `Ok(None)` at a clean end of stream (between messages).
    pub async fn next(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        let mut header_bytes = 0usize;
        let mut length: Option<usize> = None;
        let mut first = true;
        loop {
            let mut line = Vec::new();
            let n = read_line_capped(
                &mut self.reader,
                &mut line,
                MAX_HEADER_BYTES.saturating_sub(header_bytes),
            )
            .await?;
            if n == 0 {
                return if first { Ok(None) } else { Err(FrameError::Truncated) };
            }
            first = false;
            header_bytes += n;
            if header_bytes > MAX_HEADER_BYTES {
                return Err(FrameError::HeaderTooLarge);
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\r', '\n']);
            if text.is_empty() {
                break;
            }
            let Some((name, value)) = text.split_once(':') else {
                return Err(FrameError::BadHeader(text.chars().take(80).collect()));
            };
            if name.trim().eq_ignore_ascii_case("content-length") {
                let len = value.trim().parse::<usize>().map_err(|_| FrameError::MissingLength)?;
                length = Some(len);
            }
        }
        let len = length.ok_or(FrameError::MissingLength)?;
        if len > self.max_body {
            return Err(FrameError::BodyTooLarge { len, max: self.max_body });
        }
        let mut body = vec![0u8; len];
        tokio::io::AsyncReadExt::read_exact(&mut self.reader, &mut body).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                FrameError::Truncated
            } else {
                FrameError::Io(e)
            }
        })?;
        Ok(Some(body))
    }
}

/// Reads one `\n`-terminated line, failing once more than `cap` bytes arrive without one.
async fn read_line_capped<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
    cap: usize,
) -> Result<usize, FrameError> {
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(line.len());
        }
        let (take, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(idx) => (idx + 1, true),
            None => (buf.len(), false),
        };
        line.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if line.len() > cap {
            return Err(FrameError::HeaderTooLarge);
        }
        if done {
            return Ok(line.len());
        }
    }
}

/// Writes one frame and flushes.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> std::io::Result<()> {
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    writer.write_all(header.as_bytes()).await?;
    writer.write_all(body).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Result<Option<Vec<u8>>, String>> {
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
    async fn reads_frames_and_ignores_other_headers() {
        let input = b"Content-Length: 2\r\n\r\n{}Content-Type: x\r\ncontent-length:3\r\n\r\n[1]";
        let got = frames(input, 100).await;
        assert_eq!(got[0], Ok(Some(b"{}".to_vec())));
        assert_eq!(got[1], Ok(Some(b"[1]".to_vec())));
        assert_eq!(got[2], Ok(None));
    }

    #[tokio::test]
    async fn violations_are_errors() {
        let too_big = frames(b"Content-Length: 101\r\n\r\n", 100).await;
        assert!(too_big[0].as_ref().unwrap_err().contains("exceeds the 100-byte limit"));
        let garbage = frames(b"hello world\r\n\r\n", 100).await;
        assert!(garbage[0].is_err());
        let no_len = frames(b"X-Foo: 1\r\n\r\n", 100).await;
        assert!(no_len[0].as_ref().unwrap_err().contains("Content-Length"));
        let truncated = frames(b"Content-Length: 10\r\n\r\n{}", 100).await;
        assert!(truncated[0].as_ref().unwrap_err().contains("ended"));
        let endless = vec![b'a'; MAX_HEADER_BYTES + 10];
        let long = frames(&endless, 100).await;
        assert!(long[0].as_ref().unwrap_err().contains("header block"));
    }
}
