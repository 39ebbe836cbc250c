//! Line indexes of text files, so paging through a big file costs a page, not the file.
//!
//! A model reads a long file in windows (`read` with `offset`/`limit`); each window needs where
//! its first line starts and how many lines the file has, and without help both take a scan of
//! the whole file — a 2 MB file paged in 41 windows was read 41 times. A full read builds a
//! [`LineIndex`] on the way (the byte offset of every [`STRIDE`]th line, the line count and the
//! content's version), kept per file *identity* — device, inode, size, modification and change
//! times in nanoseconds — so the next window seeks to the checkpoint before its first line and
//! reads only until it is full.
//!
//! Any change of the file changes its identity, and an entry is only ever found by an equal one,
//! so a stale index is never used — with one hole that is closed here: file times have a coarse
//! granularity (a kernel tick, up to seconds on some filesystems), so a file written twice within
//! one tick, at the same size, keeps its identity. An index is therefore kept only when the file's
//! times are at least [`SETTLED_AFTER`] older than the start of the read that built it (git's
//! "racily clean" rule): any later write then gets strictly newer times. A file changed more
//! recently is read whole each time until it settles.
//!
//! The cache is process-wide, because the key is the file itself, not a path in one workspace:
//! two workspaces over the same folder read the same file. It is bounded ([`MAX_ENTRIES`] files,
//! [`MAX_CHECKPOINT_BYTES`] of offsets), least recently used first out.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Lines between two checkpoints: a window starts at most this many lines after the one it
/// seeks to (a few KiB of extra reading), and the index takes 8 bytes per this many lines.
pub(crate) const STRIDE: u64 = 256;

/// How much older than the read that built it a file's times must be for its index to be kept.
pub(crate) const SETTLED_AFTER: Duration = Duration::from_secs(2);

/// Most files indexed at once.
pub(crate) const MAX_ENTRIES: usize = 256;

/// Most bytes of checkpoints kept at once (a 1 GB file of 25-byte lines takes about 1.3 MB).
pub(crate) const MAX_CHECKPOINT_BYTES: usize = 16 * 1024 * 1024;

/// What identifies one content of one file: any write changes at least one member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FileIdentity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl FileIdentity {
    /// The identity of the open file (`None` when it cannot be had: then nothing is indexed).
    pub(crate) fn of(file: &File) -> Option<FileIdentity> {
        let meta = file.metadata().ok()?;
        Some(FileIdentity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        })
    }

    /// Whether the file's times are settled relative to a read started at `started`: older by
    /// at least [`SETTLED_AFTER`], so a later write cannot keep them.
    fn settled_before(&self, started: SystemTime) -> bool {
        let Ok(since_epoch) = started.duration_since(UNIX_EPOCH) else { return false };
        let limit = since_epoch.saturating_sub(SETTLED_AFTER).as_nanos() as i128;
        self.mtime_ns < limit && self.ctime_ns < limit
    }
}

/// Where lines start in one content of a file, and what that content is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct LineIndex {
    /// The content's version (sha256 hex), as the ledger records it.
    pub(crate) version: String,
    /// Lines as `read` counts them (see [`IndexBuilder`]).
    pub(crate) total_lines: u64,
    /// `starts[i]` is the byte offset of line `1 + i * STRIDE`.
    starts: Vec<u64>,
}

impl LineIndex {
    /// The last checkpoint at or before `line` (1-based): its line number and byte offset.
    pub(crate) fn checkpoint_for(&self, line: u64) -> (u64, u64) {
        let slot = (line.max(1) - 1) / STRIDE;
        let slot = (slot as usize).min(self.starts.len().saturating_sub(1));
        match self.starts.get(slot) {
            Some(&offset) => (1 + slot as u64 * STRIDE, offset),
            None => (1, 0),
        }
    }

    fn cost(&self) -> usize {
        self.starts.len() * 8 + self.version.len() + 64
    }
}

/// Builds a [`LineIndex`] from a file's text as it streams by, counting lines the way `read`
/// does: lines end at `\n`; a last line without one counts when it has any text; a leading BOM
/// is not text (so a file that is only a BOM has no lines).
#[derive(Debug)]
pub(crate) struct IndexBuilder {
    starts: Vec<u64>,
    /// Bytes seen so far.
    offset: u64,
    newlines: u64,
    /// Bytes since the last `\n` (or the start), not counting a leading BOM.
    open_bytes: u64,
    started: bool,
}

impl IndexBuilder {
    pub(crate) fn new() -> Self {
        IndexBuilder { starts: vec![0], offset: 0, newlines: 0, open_bytes: 0, started: false }
    }

    /// The next piece of the text (pieces in order, each valid UTF-8).
    pub(crate) fn push(&mut self, text: &str) {
        let mut body = text.as_bytes();
        if !self.started && !body.is_empty() {
            self.started = true;
            if let Some(rest) = text.strip_prefix('\u{feff}') {
                self.offset += (text.len() - rest.len()) as u64;
                body = rest.as_bytes();
            }
        }
        let base = self.offset;
        let mut last_end = 0usize;
        for at in memchr_iter(body) {
            self.newlines += 1;
            // Line `newlines + 1` starts after this newline.
            if self.newlines.is_multiple_of(STRIDE) {
                self.starts.push(base + at as u64 + 1);
            }
            last_end = at + 1;
            self.open_bytes = 0;
        }
        self.open_bytes += (body.len() - last_end) as u64;
        self.offset += body.len() as u64;
    }

    /// The index of the text pushed, whose content hashes to `version`.
    pub(crate) fn finish(self, version: String) -> LineIndex {
        let total_lines = self.newlines + u64::from(self.open_bytes > 0);
        LineIndex { version, total_lines, starts: self.starts }
    }
}

/// Positions of `\n` in `bytes` (a byte search: `\n` never occurs inside a UTF-8 character).
fn memchr_iter(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(at, _)| at)
}

struct Entry {
    index: Arc<LineIndex>,
    used: u64,
}

#[derive(Default)]
struct Cache {
    entries: HashMap<FileIdentity, Entry>,
    bytes: usize,
    clock: u64,
}

impl Cache {
    fn evict_to_fit(&mut self, incoming: usize) {
        while !self.entries.is_empty()
            && (self.entries.len() >= MAX_ENTRIES || self.bytes + incoming > MAX_CHECKPOINT_BYTES)
        {
            let Some(oldest) = self.entries.iter().min_by_key(|(_, e)| e.used).map(|(k, _)| *k)
            else {
                return;
            };
            if let Some(gone) = self.entries.remove(&oldest) {
                self.bytes -= gone.index.cost();
            }
        }
    }
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

fn with_cache<T>(f: impl FnOnce(&mut Cache) -> T) -> T {
    let mut guard = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    f(guard.get_or_insert_with(Cache::default))
}

/// The index of the file with exactly this identity, if one is kept.
pub(crate) fn lookup(identity: &FileIdentity) -> Option<Arc<LineIndex>> {
    with_cache(|cache| {
        cache.clock += 1;
        let now = cache.clock;
        cache.entries.get_mut(identity).map(|entry| {
            entry.used = now;
            Arc::clone(&entry.index)
        })
    })
}

/// Keeps `index` for the file with `identity`, built by a read that started at `started` and
/// saw the same identity before and after it — unless the file changed too recently for its
/// identity to tell its contents apart (see the module doc), or the index alone exceeds the
/// bound.
pub(crate) fn keep(identity: FileIdentity, index: LineIndex, started: SystemTime) -> bool {
    if !identity.settled_before(started) || index.cost() > MAX_CHECKPOINT_BYTES {
        return false;
    }
    with_cache(|cache| {
        if let Some(old) = cache.entries.remove(&identity) {
            cache.bytes -= old.index.cost();
        }
        cache.evict_to_fit(index.cost());
        cache.clock += 1;
        cache.bytes += index.cost();
        let entry = Entry { index: Arc::new(index), used: cache.clock };
        cache.entries.insert(identity, entry);
        true
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Write;

    fn build(text: &str, piece: usize) -> LineIndex {
        let mut builder = IndexBuilder::new();
        let chars: Vec<char> = text.chars().collect();
        for part in chars.chunks(piece.max(1)) {
            builder.push(&part.iter().collect::<String>());
        }
        builder.finish("v".to_owned())
    }

    /// `read`'s documented count, on the whole text.
    fn oracle_lines(text: &str) -> u64 {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if text.is_empty() {
            return 0;
        }
        let body = text.strip_suffix('\n').unwrap_or(text);
        body.split('\n').count() as u64
    }

    #[test]
    fn counts_lines_as_read_does_in_any_pieces() {
        for text in ["", "\n", "\n\n", "a", "a\n", "a\r\nb", "\u{feff}", "\u{feff}\n", "\u{feff}x"]
        {
            for piece in [1, 2, 3, usize::MAX] {
                assert_eq!(build(text, piece).total_lines, oracle_lines(text), "{text:?} {piece}");
            }
        }
    }

    #[test]
    fn checkpoints_point_at_line_starts() {
        let text: String = (1..=1000).map(|i| format!("é line {i}\n")).collect();
        let text = format!("\u{feff}{text}");
        let index = build(&text, 7);
        assert_eq!(index.total_lines, 1000);
        for line in [1, 2, 256, 257, 258, 513, 999, 1000, 5000] {
            let (at, offset) = index.checkpoint_for(line);
            assert!(at <= line && line.min(1000) - at < STRIDE, "{line}");
            let rest = &text[offset as usize..];
            if at > 1 {
                assert!(rest.starts_with(&format!("é line {at}\n")), "{line}: {at}");
            } else {
                assert_eq!(offset, 0);
            }
        }
    }

    fn file_with(dir: &std::path::Path, name: &str, text: &str) -> File {
        let path = dir.join(name);
        let mut file = File::create(&path).unwrap();
        file.write_all(text.as_bytes()).unwrap();
        drop(file);
        File::open(path).unwrap()
    }

    #[test]
    fn a_changed_file_is_not_found_under_its_old_identity() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_with(dir.path(), "a.txt", "one\ntwo\n");
        let before = FileIdentity::of(&file).unwrap();
        // As if the read had started long after the file was written.
        let later = SystemTime::now() + SETTLED_AFTER * 2;
        assert!(keep(before, build("one\ntwo\n", 3), later));
        assert_eq!(lookup(&before).unwrap().total_lines, 2);

        // Same size, new content: the times (and so the identity) move on.
        std::thread::sleep(Duration::from_millis(20));
        let rewritten = file_with(dir.path(), "a.txt", "uno\ndos\n");
        let after = FileIdentity::of(&rewritten).unwrap();
        assert_ne!(before, after);
        assert!(lookup(&after).is_none(), "the old index is not the new content's");
    }

    #[test]
    fn a_file_changed_just_now_is_not_indexed() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_with(dir.path(), "b.txt", "x\n");
        let identity = FileIdentity::of(&file).unwrap();
        assert!(!keep(identity, build("x\n", 1), SystemTime::now()));
        assert!(lookup(&identity).is_none());
    }

    #[test]
    fn the_cache_is_bounded_and_drops_the_least_recently_used() {
        let mut cache = Cache::default();
        let id = |n: u64| FileIdentity { dev: 1, ino: n, size: 0, mtime_ns: 0, ctime_ns: 0 };
        for n in 0..(MAX_ENTRIES as u64 + 10) {
            cache.evict_to_fit(1);
            cache.clock += 1;
            let index = Arc::new(build("a\n", 1));
            cache.bytes += index.cost();
            cache.entries.insert(id(n), Entry { index, used: cache.clock });
        }
        assert_eq!(cache.entries.len(), MAX_ENTRIES);
        assert!(!cache.entries.contains_key(&id(0)));
        assert!(cache.entries.contains_key(&id(MAX_ENTRIES as u64 + 9)));
    }
}
