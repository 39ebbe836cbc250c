//! Readers that drive a [`Decode`]r: [`BlockingFrames`] over [`std::io::Read`] (stdin on its own
//! thread, the harness) and [`AsyncFrames`] over tokio's `AsyncRead` (child processes).

use crate::{Decode, Frame, FrameError};
use std::io::Read;
use tokio::io::{AsyncRead, AsyncReadExt};

/// How much is read at once.
const CHUNK: usize = 64 * 1024;

/// Why reading frames stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The stream cannot be decoded further.
    #[error(transparent)]
    Frame(#[from] FrameError),
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Frames from a blocking reader.
pub struct BlockingFrames<R, D> {
    reader: R,
    decoder: D,
    chunk: Vec<u8>,
    ended: bool,
}

impl<R: Read, D: Decode> BlockingFrames<R, D> {
    pub fn new(reader: R, decoder: D) -> Self {
        BlockingFrames { reader, decoder, chunk: vec![0; CHUNK], ended: false }
    }

    /// The next frame; `Ok(None)` at a clean end of input (between frames).
    pub fn next_frame(&mut self) -> Result<Option<Frame>, ReadError> {
        loop {
            if let Some(item) = self.decoder.pop() {
                return Ok(Some(item?));
            }
            if self.ended {
                return Ok(None);
            }
            let n = match self.reader.read(&mut self.chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            if n == 0 {
                self.ended = true;
                self.decoder.finish()?;
            } else {
                self.decoder.push(&self.chunk[..n]);
            }
        }
    }
}

/// Frames from an async reader.
pub struct AsyncFrames<R, D> {
    reader: R,
    decoder: D,
    chunk: Vec<u8>,
    ended: bool,
}

impl<R: AsyncRead + Unpin, D: Decode> AsyncFrames<R, D> {
    pub fn new(reader: R, decoder: D) -> Self {
        AsyncFrames { reader, decoder, chunk: vec![0; CHUNK], ended: false }
    }

    /// The next frame; `Ok(None)` at a clean end of input (between frames).
    pub async fn next_frame(&mut self) -> Result<Option<Frame>, ReadError> {
        loop {
            if let Some(item) = self.decoder.pop() {
                return Ok(Some(item?));
            }
            if self.ended {
                return Ok(None);
            }
            let n = self.reader.read(&mut self.chunk).await?;
            if n == 0 {
                self.ended = true;
                self.decoder.finish()?;
            } else {
                self.decoder.push(&self.chunk[..n]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::content_length::{ContentLengthDecoder, FrameLimits, encode};
    use crate::{LimitPolicy, LineDecoder, LineLimits};

    #[test]
    fn blocking_reader_yields_frames_then_the_end() {
        let mut input = encode(b"{\"a\":1}");
        input.extend(encode(b"[]"));
        let decoder = ContentLengthDecoder::new(FrameLimits::server(100), LimitPolicy::Drain);
        let mut frames = BlockingFrames::new(&input[..], decoder);
        assert_eq!(frames.next_frame().unwrap(), Some(Frame::Body(b"{\"a\":1}".to_vec())));
        assert_eq!(frames.next_frame().unwrap(), Some(Frame::Body(b"[]".to_vec())));
        assert!(frames.next_frame().unwrap().is_none());
        assert!(frames.next_frame().unwrap().is_none());
    }

    #[tokio::test]
    async fn async_reader_reports_a_truncated_body() {
        let input = b"Content-Length: 10\r\n\r\n{}".to_vec();
        let decoder = ContentLengthDecoder::new(FrameLimits::child(100), LimitPolicy::Fail);
        let mut frames = AsyncFrames::new(&input[..], decoder);
        let err = frames.next_frame().await.unwrap_err();
        assert_eq!(err.to_string(), "the input ended inside a 10-byte body");
        let lines = LineDecoder::new(LineLimits { max_line: 10 }, LimitPolicy::Drain);
        let mut frames = AsyncFrames::new(&b"{}\n[1]"[..], lines);
        assert_eq!(frames.next_frame().await.unwrap(), Some(Frame::Body(b"{}".to_vec())));
        assert_eq!(frames.next_frame().await.unwrap(), Some(Frame::Body(b"[1]".to_vec())));
        assert!(frames.next_frame().await.unwrap().is_none());
    }
}
