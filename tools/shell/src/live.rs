//! Live output of a running command: what both streams write is decoded as it arrives and handed
//! to the host (`HostEvents::call_output`) at most every `interval` — appended text only, so a
//! client just appends. A client that cannot keep up is never waited for: past a bound, the
//! oldest unsent text is dropped and a one-line marker says how much.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost_contract::EventsHandle;

/// Unsent text kept between two updates.
const PENDING_CAP: usize = 16 * 1024;

/// How often a live card is updated (at most ten times a second).
pub const LIVE_INTERVAL: Duration = Duration::from_millis(100);

#[derive(Default)]
struct LiveBuffer {
    pending: String,
    skipped: u64,
    /// An incomplete UTF-8 sequence at the end of each stream's last piece.
    carry: [Vec<u8>; 2],
}

/// The producer side, shared by the stream captures of one call.
#[derive(Clone, Default)]
pub struct LiveFeed {
    inner: Arc<Mutex<LiveBuffer>>,
}

impl LiveFeed {
    /// Appends a piece of stream `index` (0 stdout, 1 stderr).
    pub fn push(&self, index: usize, mut chunk: &[u8]) {
        let Ok(mut buffer) = self.inner.lock() else { return };
        let buffer = &mut *buffer;
        if chunk.len() > PENDING_CAP {
            buffer.skipped += (chunk.len() - PENDING_CAP + buffer.pending.len()) as u64;
            buffer.pending.clear();
            buffer.carry[index % 2].clear();
            chunk = &chunk[chunk.len() - PENDING_CAP..];
            while let Some((first, rest)) = chunk.split_first() {
                if first & 0xC0 != 0x80 {
                    break;
                }
                chunk = rest;
            }
        }
        decode_into(&mut buffer.pending, &mut buffer.carry[index % 2], chunk);
        if buffer.pending.len() > PENDING_CAP {
            let mut cut = buffer.pending.len() - PENDING_CAP;
            while !buffer.pending.is_char_boundary(cut) {
                cut += 1;
            }
            buffer.pending.drain(..cut);
            buffer.skipped += cut as u64;
        }
    }

    /// The text to send now, if any.
    fn take(&self) -> Option<String> {
        let mut buffer = self.inner.lock().ok()?;
        if buffer.pending.is_empty() && buffer.skipped == 0 {
            return None;
        }
        let mut text = String::new();
        if buffer.skipped > 0 {
            text = format!("[… {} bytes not shown live …]\n", buffer.skipped);
            buffer.skipped = 0;
        }
        text.push_str(&std::mem::take(&mut buffer.pending));
        Some(text)
    }
}

/// Decodes `chunk` after `carry` into `out`: invalid sequences become U+FFFD, an incomplete one
/// at the end waits in `carry` for the next piece.
pub fn decode_into(out: &mut String, carry: &mut Vec<u8>, chunk: &[u8]) {
    let joined;
    let mut rest: &[u8] = if carry.is_empty() {
        chunk
    } else {
        carry.extend_from_slice(chunk);
        joined = std::mem::take(carry);
        &joined
    };
    loop {
        match std::str::from_utf8(rest) {
            Ok(text) => {
                out.push_str(text);
                return;
            }
            Err(err) => {
                let valid = err.valid_up_to();
                if let Ok(text) = std::str::from_utf8(&rest[..valid]) {
                    out.push_str(text);
                }
                match err.error_len() {
                    Some(bad) => {
                        out.push('\u{fffd}');
                        rest = &rest[valid + bad..];
                    }
                    None => {
                        carry.extend_from_slice(&rest[valid..]);
                        return;
                    }
                }
            }
        }
    }
}

/// The task that sends a call's live output until the call ends.
pub struct LiveForwarder {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl LiveForwarder {
    /// Starts forwarding `feed` for `call_id` to `events`.
    pub fn start(events: EventsHandle, call_id: String, feed: LiveFeed) -> LiveForwarder {
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(LIVE_INTERVAL);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    () = stopped.cancelled() => break,
                }
                if let Some(text) = feed.take() {
                    events.call_output(&call_id, &text);
                }
            }
            if let Some(text) = feed.take() {
                events.call_output(&call_id, &text);
            }
        });
        LiveForwarder { stop, task }
    }

    /// Sends what is left and stops.
    pub async fn finish(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_split_across_pieces_is_decoded_once_whole() {
        let feed = LiveFeed::default();
        let bytes = "aé".as_bytes();
        feed.push(0, &bytes[..2]);
        feed.push(0, &bytes[2..]);
        assert_eq!(feed.take().as_deref(), Some("aé"));
        assert_eq!(feed.take(), None);
    }

    #[test]
    fn a_flood_keeps_the_newest_text_and_says_what_it_dropped() {
        let feed = LiveFeed::default();
        feed.push(0, &vec![b'x'; PENDING_CAP * 3]);
        let text = feed.take().unwrap_or_default();
        assert!(text.starts_with("[… 32768 bytes not shown live …]\n"), "{}", &text[..40]);
        assert!(text.len() <= PENDING_CAP + 64);
    }
}
