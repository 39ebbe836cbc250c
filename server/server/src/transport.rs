//! The stdio transport of `toolhost serve`: `Content-Length` frames in and out, each on its own
//! OS thread, so neither a slow editor nor a busy handler ever blocks the other direction.
//!
//! - [`read_loop`] reads stdin, decodes frames (bodies over the cap are drained without being
//!   buffered), parses and classifies each body and hands the result to the caller's routing
//!   function, on the reading thread. Only an unusable header ends it early: nothing tells where
//!   the next frame would start.
//! - [`Outbox`] owns stdout through a writer thread: bodies are framed there, and whatever queued
//!   up while a write was in progress goes out in the next single write.

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use toolhost_jsonrpc::content_length::{self, ContentLengthDecoder, FrameLimits};
use toolhost_jsonrpc::message::{self, ErrorObject, Id, Incoming, Invalid};
use toolhost_jsonrpc::{BlockingFrames, Frame, LimitPolicy, ReadError};

/// Default cap on one incoming message body (64 MiB).
pub const DEFAULT_MAX_BODY: usize = content_length::DEFAULT_SERVER_MAX_BODY;

/// Most bytes gathered into one write to stdout.
const MAX_WRITE_BATCH: usize = 4 << 20;

/// What the reader hands to the router.
#[derive(Debug)]
pub enum Inbound {
    /// A well-formed request, notification or response.
    Message(Incoming),
    /// JSON that is not a usable message: answer `-32600`.
    Invalid(Invalid),
    /// A body that is not JSON: answer `-32700` with id null.
    ParseError,
    /// A body over the cap (its length), already drained: answer `-32600` with id null.
    Oversized(usize),
}

/// Why reading stopped.
#[derive(Debug)]
pub enum ReadEnd {
    /// End of input between frames.
    Eof,
    /// The router asked to stop (an `exit` notification).
    Stopped,
    /// The input cannot be decoded further (an unusable header, input ending inside a frame).
    Fatal(String),
}

/// Reads frames from `input` until it ends, the router returns `false`, or a fatal framing
/// error. Runs on the calling thread.
pub fn read_loop(
    input: impl Read,
    max_body: usize,
    mut route: impl FnMut(Inbound) -> bool,
) -> ReadEnd {
    let decoder = ContentLengthDecoder::new(FrameLimits::server(max_body), LimitPolicy::Drain);
    let mut frames = BlockingFrames::new(input, decoder);
    loop {
        let inbound = match frames.next_frame() {
            Ok(None) => return ReadEnd::Eof,
            Ok(Some(Frame::Oversized(len))) => Inbound::Oversized(len),
            Ok(Some(Frame::Body(body))) => match message::parse(&body) {
                Ok(incoming) => Inbound::Message(incoming),
                Err(Some(invalid)) => Inbound::Invalid(invalid),
                Err(None) => Inbound::ParseError,
            },
            Err(ReadError::Frame(err)) => return ReadEnd::Fatal(err.to_string()),
            Err(ReadError::Io(err)) => {
                return ReadEnd::Fatal(format!("cannot read from the client: {err}"));
            }
        };
        if !route(inbound) {
            return ReadEnd::Stopped;
        }
    }
}

/// The write half of the connection: cheap to clone, never blocks the caller.
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Option<Vec<u8>>>,
    broken: Arc<AtomicBool>,
}

impl Outbox {
    /// Starts the writer thread over `output`. The handle joins it after [`Outbox::close`].
    pub fn start(output: impl Write + Send + 'static) -> (Outbox, std::thread::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel::<Option<Vec<u8>>>();
        let broken = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&broken);
        let thread = std::thread::Builder::new()
            .name("toolhost-stdout".into())
            .spawn(move || write_loop(output, &rx, &flag))
            .unwrap_or_else(|err| {
                eprintln!("toolhost: cannot start the output thread: {err}");
                std::thread::spawn(|| {})
            });
        (Outbox { tx, broken }, thread)
    }

    /// Queues one message body (framed by the writer).
    pub fn send(&self, body: Vec<u8>) {
        let _ = self.tx.send(Some(body));
    }

    /// Queues an error response.
    pub fn send_error(&self, id: &Id, error: &ErrorObject) {
        self.send(message::encode_error(id, error));
    }

    /// Whether writing to the client failed (it closed its end).
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::SeqCst)
    }

    /// Writes out what is queued and stops the writer.
    pub fn close(&self) {
        let _ = self.tx.send(None);
    }
}

fn write_loop(mut output: impl Write, rx: &mpsc::Receiver<Option<Vec<u8>>>, broken: &AtomicBool) {
    let mut buffer = Vec::with_capacity(64 * 1024);
    while let Ok(Some(first)) = rx.recv() {
        buffer.clear();
        content_length::encode_into(&first, &mut buffer);
        let mut closing = false;
        while buffer.len() < MAX_WRITE_BATCH {
            match rx.try_recv() {
                Ok(Some(body)) => content_length::encode_into(&body, &mut buffer),
                Ok(None) => {
                    closing = true;
                    break;
                }
                Err(_) => break,
            }
        }
        if !broken.load(Ordering::SeqCst)
            && output.write_all(&buffer).and_then(|()| output.flush()).is_err()
        {
            // Keep draining (senders never block), but write nothing more.
            broken.store(true, Ordering::SeqCst);
        }
        if closing {
            break;
        }
    }
    let _ = output.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn the_outbox_frames_everything_it_was_given_before_closing() {
        let sink = Sink::default();
        let (outbox, thread) = Outbox::start(sink.clone());
        for i in 0..100 {
            outbox.send(format!("{{\"n\":{i}}}").into_bytes());
        }
        outbox.close();
        thread.join().unwrap();
        let bytes = sink.0.lock().unwrap().clone();
        let mut frames = Vec::new();
        let end = read_loop(&bytes[..], 1024, |inbound| {
            frames.push(inbound);
            true
        });
        assert!(matches!(end, ReadEnd::Eof));
        assert_eq!(frames.len(), 100);
        assert!(frames.iter().all(|f| matches!(f, Inbound::Invalid(_))));
    }

    #[test]
    fn the_reader_sorts_bodies() {
        let mut input = Vec::new();
        for body in [
            &b"{"[..],
            b"[]",
            br#"{"jsonrpc":"2.0","id":1,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":null}"#,
        ] {
            content_length::encode_into(body, &mut input);
        }
        input.extend(content_length::header(5000).as_bytes());
        input.extend(vec![b' '; 5000]);
        input.extend(b"Content-Length: x\r\n\r\n");
        let mut seen = Vec::new();
        let end = read_loop(&input[..], 1024, |inbound| {
            seen.push(match inbound {
                Inbound::ParseError => "parse".to_owned(),
                Inbound::Invalid(i) => format!("invalid {}", i.id),
                Inbound::Message(Incoming::Request(r)) => format!("request {}", r.method),
                Inbound::Message(Incoming::Response(_)) => "response".to_owned(),
                Inbound::Message(Incoming::Notification(_)) => "notification".to_owned(),
                Inbound::Oversized(n) => format!("oversized {n}"),
            });
            true
        });
        assert_eq!(seen, ["parse", "invalid null", "request m", "response", "oversized 5000"]);
        assert!(
            matches!(end, ReadEnd::Fatal(reason) if reason.contains("unusable Content-Length"))
        );
    }
}
