//! The writer thread of a session log and the queue in front of it: lines are committed in
//! batches (one write and, when somebody waits, one sync for the whole batch), lines nobody
//! waits for are held in process and sent in front of the next command somebody waits for.
//! [`super::SessionLog`] is the API over it; the durability policy is described there.

use super::{MAX_BATCH, closed};
use crate::blob::BlobStore;
use crate::durability::SYNC_WINDOW;
use crate::encoded::{Data, encoded_line};
use crate::error::SessionError;
use crate::large_strings::{self, LARGE_STRING_BYTES};
use crate::lines::externalize_images;
use crate::paths::now_ms;
use crate::scan::{TOOL_CALL, TOOL_RESULT};
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Instant;
use tokio::sync::oneshot;
use toolhost_protocol::session_log::Envelope;

/// One line to commit.
pub(super) struct Item {
    pub(super) kind: String,
    pub(super) data: Data,
    pub(super) ignorable: bool,
    /// Fixed time (repair uses the last event's, so repair is deterministic); else now.
    pub(super) time: Option<u64>,
}

impl Item {
    /// A line of `kind` with `data`, stamped when it is written.
    pub(super) fn new(kind: &str, data: Data, ignorable: bool) -> Self {
        Item { kind: kind.to_owned(), data, ignorable, time: None }
    }
}

pub(super) type AppendReply = oneshot::Sender<Result<u64, SessionError>>;

pub(super) enum Command {
    Append(Item, Option<AppendReply>),
    /// Write what is held now (a line nobody waits for that is to be written at once, and
    /// synced within [`SYNC_WINDOW`], was held). One is in the channel at a time, so a burst of
    /// such lines wakes the writer once.
    Drain,
    /// Lines nobody waits for, in order; sent in the same message as the command after them,
    /// so the writer wakes once for both.
    Held(Vec<Item>, Box<Command>),
    Flush(oneshot::Sender<Result<(), SessionError>>),
    Shutdown,
    Nothing,
}

/// The state owned by the writer thread.
pub(super) struct Writer {
    pub(super) file: File,
    pub(super) blobs: BlobStore,
    pub(super) next_seq: u64,
    /// Written length: everything before it ends with a newline; synced unless
    /// `unsynced_since` says otherwise.
    pub(super) len: u64,
    /// Appends nobody waits for, held until the next batch someone waits for.
    pub(super) deferred: Vec<Item>,
    /// When the oldest written but unsynced line was written (lazy lines only).
    pub(super) unsynced_since: Option<Instant>,
    /// The length known to be synced, for [`super::SessionLog::durable_len`].
    pub(super) durable: Arc<AtomicU64>,
    /// The queue's held lines, taken on [`Command::Drain`].
    pub(super) held: Arc<std::sync::Mutex<Held>>,
}

impl Writer {
    /// Writes `items` as one batch and, with `sync`, syncs (everything written before too).
    /// Items fail individually when their images cannot be stored (nothing of theirs is
    /// written); the whole batch fails when the write or sync does, after rolling the file back
    /// to the written length.
    pub(super) fn commit(
        &mut self,
        items: Vec<Item>,
        sync: bool,
    ) -> Result<Vec<Result<u64, SessionError>>, SessionError> {
        let now = now_ms();
        let mut buf = Vec::new();
        let mut outcomes = Vec::with_capacity(items.len());
        let mut seq = self.next_seq;
        for mut item in items {
            if item.kind == TOOL_RESULT
                && let Data::Value(data) = &mut item.data
                && let Err(e) = externalize_images(data, &self.blobs)
            {
                outcomes.push(Err(e));
                continue;
            }
            let time = item.time.unwrap_or(now);
            let data = match item.data {
                Data::Value(data) => data,
                Data::Encoded(json) => {
                    buf.extend_from_slice(&encoded_line(
                        &item.kind,
                        seq,
                        time,
                        &json,
                        item.ignorable,
                    ));
                    buf.push(b'\n');
                    outcomes.push(Ok(seq));
                    seq += 1;
                    continue;
                }
            };
            let mut env = Envelope {
                kind: item.kind,
                seq,
                time,
                data,
                externalized: Vec::new(),
                ignorable: item.ignorable,
            };
            match serde_json::to_vec(&env).map(|line| self.keep_large_strings(&mut env, line)) {
                Ok(line) => {
                    buf.extend_from_slice(&line);
                    buf.push(b'\n');
                    outcomes.push(Ok(seq));
                    seq += 1;
                }
                Err(e) => outcomes.push(Err(SessionError::InvalidEvent {
                    kind: env.kind,
                    detail: e.to_string(),
                })),
            }
        }
        let must_sync = sync && (!buf.is_empty() || self.unsynced_since.is_some());
        if !buf.is_empty() || must_sync {
            let written = self.file.write_all(&buf);
            if let Err(e) =
                written.and_then(|()| if must_sync { self.file.sync_data() } else { Ok(()) })
            {
                // Best effort: a partial line must not stay for the next append to glue onto;
                // if even this fails, the next open's repair cuts it as a torn tail.
                let _ = self.file.set_len(self.len).and_then(|()| self.file.sync_data());
                return Err(SessionError::io("cannot append to the session log", e));
            }
            self.len += buf.len() as u64;
            self.next_seq = seq;
            if must_sync {
                self.unsynced_since = None;
                self.durable.store(self.len, Ordering::Release);
            } else if !buf.is_empty() {
                self.unsynced_since.get_or_insert_with(Instant::now);
            }
        }
        Ok(outcomes)
    }

    /// Syncs what lazy lines left unsynced (the writer's timer).
    pub(super) fn sync_pending(&mut self) -> Result<(), SessionError> {
        self.commit(Vec::new(), true).map(drop)
    }

    /// The next command, or `None` once every sender is gone. While lazy lines wait for their
    /// sync, waits only until their window closes, and syncs them then.
    pub(super) fn next_command(
        &mut self,
        rx: &mpsc::Receiver<Command>,
    ) -> Result<Option<Command>, SessionError> {
        loop {
            let Some(since) = self.unsynced_since else { return Ok(rx.recv().ok()) };
            let left = SYNC_WINDOW.saturating_sub(since.elapsed());
            match rx.recv_timeout(left) {
                Ok(cmd) => return Ok(Some(cmd)),
                Err(mpsc::RecvTimeoutError::Timeout) => self.sync_pending()?,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    self.sync_pending()?;
                    return Ok(None);
                }
            }
        }
    }

    /// The line of a `tool/call` with its large strings in the blob store (see
    /// `large_strings`), or `line` as it is. A line no longer than the threshold cannot hold a
    /// string over it, so the common small call costs one comparison. The blobs are durable
    /// before the line is even written. If they cannot be stored the record is kept whole:
    /// a big line is better than a call missing from the log.
    pub(super) fn keep_large_strings(&self, env: &mut Envelope, line: Vec<u8>) -> Vec<u8> {
        if env.kind != TOOL_CALL || line.len() <= LARGE_STRING_BYTES {
            return line;
        }
        match large_strings::externalize(&mut env.data, &self.blobs) {
            Ok(kept) if !kept.is_empty() => {
                env.externalized = kept;
                serde_json::to_vec(&*env).unwrap_or(line)
            }
            Ok(_) | Err(_) => line,
        }
    }

    pub(super) fn run(mut self, rx: mpsc::Receiver<Command>) {
        // A failed timed sync stops the writer like any failed sync: later appends fail.
        while let Ok(Some(first)) = self.next_command(&rx) {
            let mut commands = vec![first];
            while commands.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(cmd) => commands.push(cmd),
                    Err(_) => break,
                }
            }
            // Held lines are newer than every command sent: senders take them with them under
            // the same lock, so with the channel emptied under it they go last.
            let mut drained = Vec::new();
            if commands.iter().any(|c| matches!(c, Command::Drain))
                && let Ok(mut held) = self.held.lock()
            {
                while let Ok(cmd) = rx.try_recv() {
                    commands.push(cmd);
                }
                drained = std::mem::take(&mut held.items);
                held.wake_sent = false;
            }
            let mut items = std::mem::take(&mut self.deferred);
            let mut replies: Vec<Option<AppendReply>> = items.iter().map(|_| None).collect();
            let mut flushes = Vec::new();
            let mut shutdown = false;
            let mut write_now = false;
            let mut pending = commands;
            while let Some(cmd) = (!pending.is_empty()).then(|| pending.remove(0)) {
                match cmd {
                    Command::Append(item, reply) => {
                        items.push(item);
                        replies.push(reply);
                    }
                    Command::Drain => write_now = true,
                    Command::Held(held, then) => {
                        replies.extend(held.iter().map(|_| None));
                        items.extend(held);
                        pending.insert(0, *then);
                    }
                    Command::Flush(reply) => flushes.push(reply),
                    Command::Shutdown => shutdown = true,
                    Command::Nothing => {}
                }
            }
            replies.extend(drained.iter().map(|_| None));
            items.extend(drained);
            let waited_for = replies.iter().any(Option::is_some) || !flushes.is_empty();
            if !waited_for && !shutdown && !write_now && items.len() < MAX_BATCH {
                self.deferred = items;
                continue;
            }
            match self.commit(items, waited_for || shutdown) {
                Ok(outcomes) => {
                    for (outcome, reply) in outcomes.into_iter().zip(replies) {
                        if let Some(reply) = reply {
                            let _ = reply.send(outcome);
                        }
                    }
                    for reply in flushes {
                        let _ = reply.send(Ok(()));
                    }
                }
                Err(err) => {
                    for reply in replies.into_iter().flatten() {
                        let _ = reply.send(Err(err.duplicate()));
                    }
                    for reply in flushes {
                        let _ = reply.send(Err(err.duplicate()));
                    }
                    return;
                }
            }
            if shutdown {
                return;
            }
        }
    }
}

/// The way to the writer thread. Appends nobody waits for are held here, in process, and sent
/// in front of the next command someone waits for — all under one lock, so the order of lines
/// is the order of calls, and a read-only call wakes the writer once, not three times.
pub(super) struct Queue {
    pub(super) held: Arc<std::sync::Mutex<Held>>,
    pub(super) tx: mpsc::Sender<Command>,
}

/// Lines nobody waits for, in order, and whether a [`Command::Drain`] is on its way.
#[derive(Default)]
pub(super) struct Held {
    pub(super) items: Vec<Item>,
    pub(super) wake_sent: bool,
}

impl Queue {
    /// Holds a line to be written at once (without a sync of its own): wakes the writer unless
    /// a wake is already on its way, which will take this line too.
    pub(super) fn write_soon(&self, item: Item) -> Result<(), SessionError> {
        let mut held = self.held.lock().map_err(|_| closed())?;
        held.items.push(item);
        if !held.wake_sent {
            held.wake_sent = true;
            self.tx.send(Command::Drain).map_err(|_| closed())?;
        }
        Ok(())
    }

    /// Holds an append nobody waits for (sent with the next waited-for command; a full hold is
    /// sent at once, which bounds the memory it takes).
    pub(super) fn hold(&self, item: Item) -> Result<(), SessionError> {
        let mut held = self.held.lock().map_err(|_| closed())?;
        held.items.push(item);
        if held.items.len() >= MAX_BATCH {
            let items = std::mem::take(&mut held.items);
            self.tx.send(Command::Held(items, Box::new(Command::Nothing))).map_err(|_| closed())?;
        }
        Ok(())
    }

    /// Sends what is held, then `command`.
    pub(super) fn send(&self, command: Command) -> Result<(), SessionError> {
        let mut held = self.held.lock().map_err(|_| closed())?;
        let command = if held.items.is_empty() {
            command
        } else {
            Command::Held(std::mem::take(&mut held.items), Box::new(command))
        };
        self.tx.send(command).map_err(|_| closed())
    }
}
