//! Capturing one output stream of a command without holding it in memory: the last
//! `max_output_bytes` in a ring (what the model reads), the whole stream — up to the spill cap —
//! in a spill file opened only once the ring overflows, and every piece forwarded to the live
//! card as it arrives.

use crate::live::LiveFeed;
use std::collections::VecDeque;
use toolhost_contract::spill::{SpillError, SpillStream};

/// Opens the spill file of a stream when it is first needed.
pub type SpillOpener = Box<dyn FnMut() -> Result<Box<dyn SpillStream>, SpillError> + Send>;

/// The captured result of one stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CapturedStream {
    /// The retained tail, decoded as UTF-8 (invalid sequences become U+FFFD).
    pub text: String,
    /// More was written than the tail holds.
    pub truncated: bool,
    /// The spill file holding the stream from its first byte (absent when nothing overflowed, or
    /// when the spill store failed).
    pub spill_path: Option<String>,
    /// Bytes the command wrote to this stream.
    pub total_bytes: u64,
}

enum Spill {
    /// Nothing has overflowed yet.
    Idle(Option<SpillOpener>),
    Open(Box<dyn SpillStream>),
    /// The store could not open or write it; the tail is all there is.
    Failed,
}

/// One stream being captured.
pub struct Capture {
    tail: VecDeque<u8>,
    cap: usize,
    total: u64,
    spill: Spill,
    spill_cap: u64,
    live: Option<(LiveFeed, usize)>,
}

impl Capture {
    /// A capture keeping `cap` bytes in memory and at most `spill_cap` bytes in its spill file.
    pub fn new(cap: usize, spill_cap: u64, opener: Option<SpillOpener>) -> Self {
        Capture {
            tail: VecDeque::with_capacity(cap.min(64 * 1024)),
            cap,
            total: 0,
            spill: Spill::Idle(opener),
            spill_cap,
            live: None,
        }
    }

    /// Forwards every piece to `feed` as stream `index` (0 stdout, 1 stderr).
    pub fn with_live(mut self, feed: LiveFeed, index: usize) -> Self {
        self.live = Some((feed, index));
        self
    }

    /// Takes the next piece of the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        if let Some((feed, index)) = &self.live {
            feed.push(*index, chunk);
        }
        let before = self.total;
        self.total += chunk.len() as u64;
        if self.total > self.cap as u64 {
            if let Spill::Idle(opener) = &mut self.spill {
                // The ring still holds everything so far: it starts the file.
                self.spill = match opener.take().map(|mut open| open()) {
                    Some(Ok(mut stream)) => {
                        let (a, b) = self.tail.as_slices();
                        match stream.write(a).and_then(|()| stream.write(b)) {
                            Ok(()) => Spill::Open(stream),
                            Err(err) => {
                                tracing::warn!(%err, "command output spill failed");
                                Spill::Failed
                            }
                        }
                    }
                    Some(Err(err)) => {
                        tracing::warn!(%err, "command output spill unavailable");
                        Spill::Failed
                    }
                    None => Spill::Failed,
                };
                debug_assert!(before <= self.cap as u64);
            }
            if let Spill::Open(stream) = &mut self.spill {
                let room = self.spill_cap.saturating_sub(stream.written());
                let take = (chunk.len() as u64).min(room) as usize;
                if take > 0
                    && let Err(err) = stream.write(&chunk[..take])
                {
                    tracing::warn!(%err, "command output spill failed");
                    self.spill = Spill::Failed;
                }
            }
        }
        if chunk.len() >= self.cap {
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - self.cap..]);
        } else {
            let overflow = (self.tail.len() + chunk.len()).saturating_sub(self.cap);
            self.tail.drain(..overflow);
            self.tail.extend(chunk);
        }
    }

    /// Whether finishing touches the disk (a spill file is open and will be synced).
    pub fn spilled(&self) -> bool {
        matches!(self.spill, Spill::Open(_))
    }

    /// Ends the stream: closes the spill file (with a marker when it hit its cap) and decodes
    /// the tail. Blocking (the spill file is synced).
    pub fn finish(self) -> CapturedStream {
        let truncated = self.total > self.cap as u64;
        let spill_path = match self.spill {
            Spill::Open(mut stream) => {
                if self.total > stream.written() {
                    let marker = format!(
                        "\n[spill truncated: the first {} of {} bytes are kept]\n",
                        stream.written(),
                        self.total
                    );
                    let _ = stream.write(marker.as_bytes());
                }
                match stream.finish() {
                    Ok(receipt) => Some(receipt.locator),
                    Err(err) => {
                        tracing::warn!(%err, "command output spill failed");
                        None
                    }
                }
            }
            Spill::Idle(_) | Spill::Failed => None,
        };
        let (a, b) = self.tail.as_slices();
        let mut bytes = Vec::with_capacity(a.len() + b.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        CapturedStream {
            text: decode_tail(&bytes, truncated, self.cap),
            truncated,
            spill_path,
            total_bytes: self.total,
        }
    }
}

/// Decodes a retained tail: a cut through a multi-byte character at the start is skipped rather
/// than shown as U+FFFD, and the decoded text (replacement characters are 3 bytes) stays within
/// `cap` bytes.
pub fn decode_tail(bytes: &[u8], cut: bool, cap: usize) -> String {
    let mut start = 0;
    if cut {
        while start < bytes.len().min(3) && (bytes[start] & 0xC0) == 0x80 {
            start += 1;
        }
    }
    let text = String::from_utf8_lossy(&bytes[start..]);
    if text.len() <= cap {
        return text.into_owned();
    }
    toolhost_contract::spill::tail_bytes(&text, cap).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use toolhost_contract::spill::SpillReceipt;

    struct MemStream(Arc<Mutex<Vec<u8>>>);
    impl SpillStream for MemStream {
        fn write(&mut self, bytes: &[u8]) -> Result<(), SpillError> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(())
        }
        fn written(&self) -> u64 {
            self.0.lock().unwrap().len() as u64
        }
        fn finish(self: Box<Self>) -> Result<SpillReceipt, SpillError> {
            Ok(SpillReceipt { locator: "/spill".into(), bytes: 0, retrieval_hint: String::new() })
        }
    }

    fn capture(cap: usize, spill_cap: u64) -> (Capture, Arc<Mutex<Vec<u8>>>) {
        let store = Arc::new(Mutex::new(Vec::new()));
        let inner = Arc::clone(&store);
        let opener: SpillOpener =
            Box::new(move || Ok(Box::new(MemStream(Arc::clone(&inner))) as Box<dyn SpillStream>));
        (Capture::new(cap, spill_cap, Some(opener)), store)
    }

    #[test]
    fn small_output_stays_in_memory() {
        let (mut c, spilled) = capture(10, 100);
        c.push(b"hello");
        let out = c.finish();
        assert_eq!(out.text, "hello");
        assert!(!out.truncated && out.spill_path.is_none());
        assert!(spilled.lock().unwrap().is_empty());
    }

    #[test]
    fn overflow_keeps_the_tail_and_spills_everything_from_the_start() {
        let (mut c, spilled) = capture(4, 100);
        for piece in [&b"abc"[..], b"defg", b"hi"] {
            c.push(piece);
        }
        let out = c.finish();
        assert_eq!(out.text, "fghi");
        assert!(out.truncated);
        assert_eq!(out.spill_path.as_deref(), Some("/spill"));
        assert_eq!(&spilled.lock().unwrap()[..], b"abcdefghi");
    }

    #[test]
    fn the_spill_stops_at_its_cap_with_a_marker() {
        let (mut c, spilled) = capture(2, 5);
        c.push(b"0123456789");
        let out = c.finish();
        assert_eq!(out.text, "89");
        let spilled = String::from_utf8(spilled.lock().unwrap().clone()).unwrap();
        assert_eq!(spilled, "01234\n[spill truncated: the first 5 of 10 bytes are kept]\n");
    }

    #[test]
    fn a_cut_character_is_skipped_and_invalid_bytes_replaced() {
        assert_eq!(decode_tail("é".as_bytes()[1..].iter().as_slice(), true, 10), "");
        assert_eq!(decode_tail(b"a\xffb", false, 10), "a\u{fffd}b");
    }
}
