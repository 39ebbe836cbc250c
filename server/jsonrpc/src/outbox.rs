//! [`Outbox`]: the write half of a connection on its own OS thread. Senders never block (a slow
//! or stalled peer cannot hold up a handler); bodies are framed by the writer, and whatever
//! queued up while a write was in progress goes out in the next single write. The bytes still
//! queued are counted, so a reader can stop taking new work from a peer that does not read its
//! answers ([`Outbox::pending_bytes`]).

use crate::{content_length, lines};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// Most bytes gathered into one write.
const MAX_WRITE_BATCH: usize = 4 << 20;

/// How bodies are framed on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length` headers (LSP).
    ContentLength,
    /// One message per line (MCP, ACP).
    Lines,
}

impl Framing {
    fn encode_into(self, body: &[u8], out: &mut Vec<u8>) {
        match self {
            Framing::ContentLength => content_length::encode_into(body, out),
            Framing::Lines => lines::encode_into(body, out),
        }
    }
}

/// The write half of a connection: cheap to clone, never blocks the caller.
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Option<Vec<u8>>>,
    state: Arc<State>,
}

struct State {
    broken: AtomicBool,
    pending: AtomicUsize,
}

impl Outbox {
    /// Starts the writer thread over `output`. The handle joins it after [`Outbox::close`].
    pub fn start(
        output: impl Write + Send + 'static,
        framing: Framing,
    ) -> (Outbox, std::thread::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel::<Option<Vec<u8>>>();
        let state =
            Arc::new(State { broken: AtomicBool::new(false), pending: AtomicUsize::new(0) });
        let shared = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("toolhost-writer".into())
            .spawn(move || write_loop(output, framing, &rx, &shared))
            .unwrap_or_else(|err| {
                eprintln!("toolhost: cannot start the output thread: {err}");
                std::thread::spawn(|| {})
            });
        (Outbox { tx, state }, thread)
    }

    /// Queues one message body.
    pub fn send(&self, body: Vec<u8>) {
        self.state.pending.fetch_add(body.len(), Ordering::SeqCst);
        let len = body.len();
        if self.tx.send(Some(body)).is_err() {
            self.state.pending.fetch_sub(len, Ordering::SeqCst);
        }
    }

    /// Queues an error response.
    pub fn send_error(&self, id: &crate::Id, error: &crate::ErrorObject) {
        self.send(crate::message::encode_error(id, error));
    }

    /// Whether writing failed (the peer closed its end); later bodies are dropped.
    pub fn is_broken(&self) -> bool {
        self.state.broken.load(Ordering::SeqCst)
    }

    /// Bytes queued and not yet written.
    pub fn pending_bytes(&self) -> usize {
        self.state.pending.load(Ordering::SeqCst)
    }

    /// Writes out what is queued and stops the writer.
    pub fn close(&self) {
        let _ = self.tx.send(None);
    }
}

fn write_loop(
    mut output: impl Write,
    framing: Framing,
    rx: &mpsc::Receiver<Option<Vec<u8>>>,
    state: &State,
) {
    let mut buffer = Vec::with_capacity(64 * 1024);
    while let Ok(Some(first)) = rx.recv() {
        buffer.clear();
        let mut bodies = first.len();
        framing.encode_into(&first, &mut buffer);
        let mut closing = false;
        while buffer.len() < MAX_WRITE_BATCH {
            match rx.try_recv() {
                Ok(Some(body)) => {
                    bodies += body.len();
                    framing.encode_into(&body, &mut buffer);
                }
                Ok(None) => {
                    closing = true;
                    break;
                }
                Err(_) => break,
            }
        }
        if !state.broken.load(Ordering::SeqCst)
            && output.write_all(&buffer).and_then(|()| output.flush()).is_err()
        {
            // Keep draining (senders never block), but write nothing more.
            state.broken.store(true, Ordering::SeqCst);
        }
        state.pending.fetch_sub(bodies, Ordering::SeqCst);
        if closing {
            break;
        }
    }
    let _ = output.flush();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::{BlockingFrames, Decode, Frame, LimitPolicy, LineDecoder, LineLimits};
    use std::sync::Mutex;

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn all_frames(bytes: &[u8], decoder: impl Decode) -> Vec<Vec<u8>> {
        let mut frames = BlockingFrames::new(bytes, decoder);
        let mut out = Vec::new();
        while let Some(Frame::Body(body)) = frames.next_frame().unwrap() {
            out.push(body);
        }
        out
    }

    #[test]
    fn everything_sent_is_written_framed_before_close() {
        for framing in [Framing::ContentLength, Framing::Lines] {
            let sink = Sink::default();
            let (outbox, thread) = Outbox::start(sink.clone(), framing);
            for i in 0..100 {
                outbox.send(format!("{{\"n\":{i}}}").into_bytes());
            }
            outbox.close();
            thread.join().unwrap();
            assert_eq!(outbox.pending_bytes(), 0);
            let bytes = sink.0.lock().unwrap().clone();
            let frames = match framing {
                Framing::ContentLength => all_frames(
                    &bytes,
                    content_length::ContentLengthDecoder::new(
                        content_length::FrameLimits::server(1024),
                        LimitPolicy::Fail,
                    ),
                ),
                Framing::Lines => all_frames(
                    &bytes,
                    LineDecoder::new(LineLimits { max_line: 1024 }, LimitPolicy::Fail),
                ),
            };
            assert_eq!(frames.len(), 100);
            assert_eq!(frames[99], b"{\"n\":99}");
        }
    }
}
