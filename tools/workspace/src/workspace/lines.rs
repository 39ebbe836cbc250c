//! Reading a window of a text file's lines: the read tool's path. The first read of a file
//! streams all of it (checked, hashed and recorded as [`Workspace::read_streaming`] does) and
//! builds its line index on the way; a later read of the same, unchanged file seeks to the
//! checkpoint before its window and reads only until the window is full, taking the line count
//! and the version from the index (see `line_index`).

use std::io::{Seek, SeekFrom};
use std::time::SystemTime;

use tokio_util::sync::CancellationToken;

use super::read::{Utf8Pieces, chunk_len, invalid_utf8};
use super::*;
use crate::line_index::{self, FileIdentity, IndexBuilder, LineIndex};

/// A [`TextSink`] that wants a window of lines, so a read may start near it and stop once the
/// window is full.
pub trait LineSink: TextSink {
    /// The first line (1-based) the sink shows.
    fn first_line(&self) -> u64;
    /// The text pushed next starts line `line` (> 1): the lines before it were skipped, and
    /// the start of the file (its BOM) with them.
    fn resume_at(&mut self, line: u64);
    /// Whether no later text can change what the sink keeps.
    fn full(&self) -> bool;
    /// Forgets everything pushed: the read starts over from the file's first byte.
    fn restart(&mut self);
}

/// A sink with the file's line index built beside it.
struct Indexing<S> {
    sink: S,
    builder: IndexBuilder,
}

impl<S: TextSink> TextSink for Indexing<S> {
    fn push(&mut self, text: &str) {
        self.builder.push(text);
        self.sink.push(text);
    }
}

/// A file had whole (from an editor or a world) pushed through `sink`, with its line count.
fn whole_text_as_lines<S: LineSink>(file: ReadFile, sink: S) -> (StreamedFile, S, u64) {
    let mut indexing = Indexing { sink, builder: IndexBuilder::new() };
    indexing.push(&file.text);
    let total = indexing.builder.finish(String::new()).total_lines;
    (file.streamed(), indexing.sink, total)
}

impl Workspace {
    /// Reads a window of a text file's lines through `sink` and records the file's version, like
    /// [`Workspace::read_streaming`] (the same errors), and returns how many lines the file has.
    /// With the file's line index at hand only the window is read.
    pub async fn read_lines<S: LineSink>(
        &self,
        input: &str,
        sink: S,
        cancel: &CancellationToken,
    ) -> Result<(StreamedFile, S, u64), FsError> {
        // A world hands over the whole (bounded) file: nothing to index or seek here.
        if let Some(file) = self.world_whole_read(input, cancel).await? {
            return Ok(whole_text_as_lines(file, sink));
        }
        let owned = input.to_owned();
        let token = cancel.clone();
        let fast = self
            .blocking(Op::Read, input, move |ws| {
                let target = ws.resolve_blocking(&owned, Op::Read)?;
                if ws.backend_for(&target).is_some() {
                    return Ok(Err((target, sink)));
                }
                match ws.shared.locks.try_lock(&target.key()) {
                    Some(_lock) => ws.lines_blocking(&target, sink, &token).map(Ok),
                    None => Ok(Err((target, sink))),
                }
            })
            .await?;
        let (target, sink) = match fast {
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
            // An editor hands over the whole text at once: nothing to index or seek.
            let file = self.read_via_backend(backend.as_ref(), target, None).await?;
            return Ok(whole_text_as_lines(file, sink));
        }
        let token = cancel.clone();
        self.blocking(Op::Read, input, move |ws| ws.lines_blocking(&target, sink, &token)).await
    }

    /// The disk half of [`Workspace::read_lines`]. Runs under the path lock.
    fn lines_blocking<S: LineSink>(
        &self,
        target: &ResolvedPath,
        mut sink: S,
        cancel: &CancellationToken,
    ) -> Result<(StreamedFile, S, u64), FsError> {
        // Before the file is looked at: an index is kept only for times older than this.
        let started = SystemTime::now();
        let mut file = self.open_for_read(target)?;
        let identity = FileIdentity::of(&file);
        if let Some(index) = identity.as_ref().and_then(line_index::lookup) {
            match self.page(target, &mut file, &index, identity, &mut sink, cancel)? {
                Some(streamed) => return Ok((streamed, sink, index.total_lines)),
                None => {
                    // Changed while it was read: read it anew, whole.
                    sink.restart();
                    file = self.open_for_read(target)?;
                }
            }
        }
        let identity = FileIdentity::of(&file);
        let mut indexing = Indexing { sink, builder: IndexBuilder::new() };
        let streamed = self.stream_open(target, &mut file, &mut indexing, cancel)?;
        let Indexing { sink, builder } = indexing;
        let index = builder.finish(streamed.version.clone());
        let total = index.total_lines;
        if let Some(identity) = identity
            && FileIdentity::of(&file) == Some(identity)
        {
            line_index::keep(identity, index, started);
        }
        Ok((streamed, sink, total))
    }

    /// Reads `sink`'s window from the checkpoint before it. `None` when the file's identity
    /// changed meanwhile (what was pushed is then not the indexed content).
    fn page<S: LineSink>(
        &self,
        target: &ResolvedPath,
        file: &mut File,
        index: &LineIndex,
        identity: Option<FileIdentity>,
        sink: &mut S,
        cancel: &CancellationToken,
    ) -> Result<Option<StreamedFile>, FsError> {
        let path = &target.display;
        let io_err = |err: io::Error| FsError::from_io(Op::Read, path, &err);
        let (line, offset) = index.checkpoint_for(sink.first_line());
        file.seek(SeekFrom::Start(offset)).map_err(io_err)?;
        if line > 1 {
            sink.resume_at(line);
        }
        // A checkpoint is a line start, so the text there starts with a whole character.
        let mut decoder = Utf8Pieces::default();
        let mut chunk = vec![0u8; chunk_len(file)];
        while !sink.full() {
            if cancel.is_cancelled() {
                return Err(FsError::Aborted { op: Op::Read, path: path.clone() });
            }
            let n = match file.read(&mut chunk) {
                Ok(n) => n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(io_err(err)),
            };
            if n == 0 {
                break;
            }
            decoder.feed(&chunk[..n], sink).map_err(|()| invalid_utf8(path))?;
        }
        if FileIdentity::of(file) != identity {
            return Ok(None);
        }
        self.ledger.record(&target.key(), Observation::Present(index.version.clone()));
        Ok(Some(StreamedFile {
            display: path.clone(),
            real_path: target.real_path.clone(),
            version: index.version.clone(),
        }))
    }
}
