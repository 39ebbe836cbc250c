//! Reading a text file by streaming: the read tool's path, which must not hold a file of any size
//! in memory. The bytes go through in fixed-size chunks — checked the way a whole read checks them
//! (a NUL in the first [`BINARY_SNIFF_BYTES`] is binary, anything not UTF-8 is not text), hashed
//! into the version the ledger records, and handed on as text to a [`TextSink`] that keeps only
//! what it needs (a window of lines and a count).

use tokio_util::sync::CancellationToken;

use super::*;
use crate::ledger::VersionHasher;

/// Bytes read from the disk at a time; also how often cancellation is polled.
const CHUNK_BYTES: usize = 64 * 1024;

/// Receives a file's text in order, in pieces that are each valid UTF-8 (a piece never splits a
/// character). A leading BOM is passed on like any other text.
pub trait TextSink: Send + 'static {
    fn push(&mut self, text: &str);
}

impl ReadFile {
    /// What a streamed read of the same file records (the text went to the sink).
    pub(super) fn streamed(self) -> StreamedFile {
        StreamedFile { display: self.display, real_path: self.real_path, version: self.version }
    }
}

/// What a streamed read recorded: the file as displayed, its real path, and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamedFile {
    pub display: String,
    pub real_path: PathBuf,
    /// sha256 hex of the bytes, as recorded in the ledger.
    pub version: String,
}

impl Workspace {
    /// Reads a text file through `sink` and records its version, like [`Workspace::read_file`]
    /// (the same errors, in the same order) but never holding more than a chunk of it. The sink
    /// is handed back with what it kept. A cancelled `cancel` stops the read between chunks with
    /// `FS_ABORTED`; nothing is recorded then.
    pub async fn read_streaming<S: TextSink>(
        &self,
        input: &str,
        sink: S,
        cancel: &CancellationToken,
    ) -> Result<(StreamedFile, S), FsError> {
        // A world hands over the whole (bounded) file at once; there is nothing to stream.
        if let Some(file) = self.world_whole_read(input, cancel).await? {
            let mut sink = sink;
            sink.push(&file.text);
            return Ok((file.streamed(), sink));
        }
        // As `read_impl`: resolve, lock and read in one trip off the async threads when the
        // path's lock is free; otherwise wait for the lock and read in a second trip.
        let owned = input.to_owned();
        let token = cancel.clone();
        let fast = self
            .blocking(Op::Read, input, move |ws| {
                let mut sink = sink;
                let target = ws.resolve_blocking(&owned, Op::Read)?;
                if ws.backend_for(&target).is_some() {
                    return Ok(Err((target, sink)));
                }
                match ws.shared.locks.try_lock(&target.key()) {
                    Some(_lock) => {
                        let file = ws.stream_blocking(&target, &mut sink, &token)?;
                        Ok(Ok((file, sink)))
                    }
                    None => Ok(Err((target, sink))),
                }
            })
            .await?;
        let (target, mut sink) = match fast {
            Ok(done) => return Ok(done),
            Err(pending) => pending,
        };
        let aborted = || FsError::Aborted { op: Op::Read, path: target.display.clone() };
        let key = target.key();
        let _lock = tokio::select! {
            lock = self.shared.locks.lock(&key) => lock,
            () = cancel.cancelled() => return Err(aborted()),
        };
        if let Some(backend) = self.backend_for(&target) {
            // An editor hands over the whole text at once; there is nothing to stream.
            let file = self.read_via_backend(backend.as_ref(), target, None).await?;
            sink.push(&file.text);
            return Ok((file.streamed(), sink));
        }
        let token = cancel.clone();
        self.blocking(Op::Read, input, move |ws| {
            let file = ws.stream_blocking(&target, &mut sink, &token)?;
            Ok((file, sink))
        })
        .await
    }

    /// The disk half of [`Workspace::read_streaming`]. Runs under the path lock.
    pub(super) fn stream_blocking(
        &self,
        target: &ResolvedPath,
        sink: &mut dyn TextSink,
        cancel: &CancellationToken,
    ) -> Result<StreamedFile, FsError> {
        let mut file = self.open_for_read(target)?;
        self.stream_open(target, &mut file, sink, cancel)
    }

    /// Opens `target` for reading; a missing file is recorded absent and `FS_NOT_FOUND`.
    pub(super) fn open_for_read(&self, target: &ResolvedPath) -> Result<File, FsError> {
        match self.open_existing(target, Op::Read)? {
            Some(file) => Ok(file),
            None => {
                self.ledger.record(&target.key(), Observation::Absent);
                Err(FsError::NotFound { op: Op::Read, path: target.display.clone() })
            }
        }
    }

    /// Streams the whole of `file` (`target`, opened) through `sink`: checked, hashed and
    /// recorded as [`Workspace::stream_blocking`] says.
    pub(super) fn stream_open(
        &self,
        target: &ResolvedPath,
        file: &mut File,
        sink: &mut dyn TextSink,
        cancel: &CancellationToken,
    ) -> Result<StreamedFile, FsError> {
        let path = &target.display;
        let io_err = |err: io::Error| FsError::from_io(Op::Read, path, &err);
        let mut hasher = VersionHasher::new();
        let mut decoder = Utf8Pieces::default();
        let mut chunk = vec![0u8; chunk_len(file)];
        // The head is gathered first: a NUL in it makes the file binary whatever follows, and
        // that verdict comes before any verdict on the encoding.
        let mut head: Option<Vec<u8>> = Some(Vec::with_capacity(BINARY_SNIFF_BYTES));
        loop {
            if cancel.is_cancelled() {
                return Err(FsError::Aborted { op: Op::Read, path: path.clone() });
            }
            let n = match file.read(&mut chunk) {
                Ok(n) => n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(io_err(err)),
            };
            let bytes = &chunk[..n];
            hasher.update(bytes);
            if let Some(gathered) = head.as_mut() {
                gathered.extend_from_slice(bytes);
                if n != 0 && gathered.len() < BINARY_SNIFF_BYTES {
                    continue;
                }
                let gathered = head.take().unwrap_or_default();
                if gathered[..gathered.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
                    return Err(FsError::Binary { op: Op::Read, path: path.clone() });
                }
                decoder.feed(&gathered, sink).map_err(|()| invalid_utf8(path))?;
            } else {
                decoder.feed(bytes, sink).map_err(|()| invalid_utf8(path))?;
            }
            if n == 0 {
                break;
            }
        }
        decoder.finish().map_err(|()| invalid_utf8(path))?;
        let version = hasher.finish();
        self.ledger.record(&target.key(), Observation::Present(version.clone()));
        Ok(StreamedFile { display: path.clone(), real_path: target.real_path.clone(), version })
    }
}

/// The read buffer for `file`: a chunk, or less for a smaller file. Most files read are small,
/// and a 64 KiB buffer taken and given back per read costs more than the read (zeroing it, and
/// the allocator consolidating its free lists on a free that large).
pub(super) fn chunk_len(file: &File) -> usize {
    let len = file.metadata().map_or(CHUNK_BYTES as u64, |m| m.len());
    // One byte more than the file, so the read that finds its end needs no second buffer.
    (len.saturating_add(1)).min(CHUNK_BYTES as u64) as usize
}

pub(super) fn invalid_utf8(path: &str) -> FsError {
    FsError::InvalidUtf8 { op: Op::Read, path: path.to_owned() }
}

/// Turns bytes arriving in arbitrary pieces into valid UTF-8 text pieces, carrying a character
/// split across two pieces over to the next one.
#[derive(Debug, Default)]
pub(super) struct Utf8Pieces {
    /// The start of a character whose remaining bytes have not arrived (at most 3 bytes).
    carry: Vec<u8>,
}

impl Utf8Pieces {
    /// `Err` at the first byte sequence that can never be UTF-8.
    pub(super) fn feed(&mut self, mut bytes: &[u8], sink: &mut dyn TextSink) -> Result<(), ()> {
        // Complete the carried character first, one byte at a time (it needs at most three).
        while !self.carry.is_empty() {
            let Some((&first, rest)) = bytes.split_first() else { return Ok(()) };
            self.carry.push(first);
            bytes = rest;
            match std::str::from_utf8(&self.carry) {
                Ok(text) => {
                    sink.push(text);
                    self.carry.clear();
                }
                Err(err) if err.error_len().is_some() => return Err(()),
                Err(_) => {}
            }
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                if !text.is_empty() {
                    sink.push(text);
                }
                Ok(())
            }
            Err(err) if err.error_len().is_some() => Err(()),
            Err(err) => {
                let (valid, rest) = bytes.split_at(err.valid_up_to());
                // `valid_up_to` is the end of the valid prefix: no error check is needed.
                if let Ok(text) = std::str::from_utf8(valid)
                    && !text.is_empty()
                {
                    sink.push(text);
                }
                self.carry.extend_from_slice(rest);
                Ok(())
            }
        }
    }

    /// `Err` when the text ended in the middle of a character.
    fn finish(self) -> Result<(), ()> {
        if self.carry.is_empty() { Ok(()) } else { Err(()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect(String);

    impl TextSink for Collect {
        fn push(&mut self, text: &str) {
            self.0.push_str(text);
        }
    }

    fn decode(bytes: &[u8], piece: usize) -> Result<String, ()> {
        let mut decoder = Utf8Pieces::default();
        let mut sink = Collect::default();
        for part in bytes.chunks(piece) {
            decoder.feed(part, &mut sink)?;
        }
        decoder.finish()?;
        Ok(sink.0)
    }

    #[test]
    fn characters_split_across_pieces_come_through_whole() {
        let text = "aé€𝄞\u{feff}z\n";
        for piece in 1..=text.len() {
            assert_eq!(decode(text.as_bytes(), piece).as_deref(), Ok(text), "piece {piece}");
        }
    }

    #[test]
    fn invalid_and_truncated_text_is_refused() {
        for piece in 1..=4 {
            assert!(decode(b"ab\xffcd", piece).is_err());
            assert!(decode(b"ab\xe2\x82", piece).is_err());
            assert!(decode(b"\xe2\x28\xa1", piece).is_err());
        }
    }
}
