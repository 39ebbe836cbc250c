//! Parsing a log's bytes into typed records, with the one set of rules both the writer's crash
//! repair and the read-only reader apply:
//!
//! - the last line is *torn* when it has no trailing newline or does not parse as JSON; it is
//!   reported (the writer cuts it, the reader ignores it in memory) — a torn write can only ever
//!   be the tail, since every append is one write of whole lines followed by `sync_data`;
//! - any other bad line (unparsable, NUL bytes, wrong `seq`, a known event with a malformed
//!   `data`) is [`SessionError::Corrupt`] naming the line and the expected seq — never skipped;
//! - an unknown event type is skipped when `ignorable`, otherwise [`SessionError::UnknownEvent`].
//!
//! A *salvaging* scan ([`scan_salvaging`]) applies the same rules but steps over what a strict
//! scan refuses: each stretch of unreadable lines is reported as [`SkippedLines`], and the first
//! readable line after it may have any later seq (the skipped lines used up the ones between).
//! Replay uses it to show what is left of a damaged log, and `repair` to rewrite one.
//!
//! Lines are the protocol's `Envelope`s; they are parsed with a typed envelope so a 100,000-event
//! log reads in well under a second.

use crate::error::SessionError;
use serde::Deserialize;
use serde::de::{Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::error::Category;
use toolhost_protocol::session_log::{
    ExternalizedString, FsChangeEvent, FsObservedEvent, LOG_VERSION, SessionHeader, ToolCallEvent,
    ToolResultEvent,
};

/// Event type names.
pub const TOOL_CALL: &str = "tool/call";
pub const TOOL_RESULT: &str = "tool/result";
pub const FS_OBSERVED: &str = "fs/observed";
pub const FS_CHANGE: &str = "fs/change";

/// One accepted envelope.
#[derive(Debug)]
pub(crate) struct Record {
    pub seq: u64,
    pub time: u64,
    pub event: Event,
    /// Strings of a `tool/call`'s data kept as blobs (empty for every other line).
    pub externalized: Vec<ExternalizedString>,
}

/// Whether events of `kind` hold session state a resumed session restores.
pub fn is_state_event(kind: &str) -> bool {
    kind.starts_with("todo/") || kind.starts_with("plan/") || kind.starts_with("structured/")
}

/// Whether events of `kind` are the conversation of toolhost's own agent (`agent/run`,
/// `agent/message`, `agent/usage`, `agent/compaction`, `agent/end`): kept for replay and for a
/// chat that continues.
pub fn is_conversation_event(kind: &str) -> bool {
    kind.starts_with("agent/")
}

/// The typed payload of a record.
#[derive(Debug)]
pub(crate) enum Event {
    /// Boxed: a call (with its presentation) is far larger than the other records.
    Call(Box<ToolCallEvent>),
    Result(ToolResultEvent),
    Observed(FsObservedEvent),
    Change(FsChangeEvent),
    /// Session state a tool changed (`todo/write`, `plan/mode`, `structured/*`): kept for the
    /// host that resumes the session.
    State {
        kind: String,
        data: Value,
    },
    /// A record of the agent's conversation, kept as written.
    Conversation {
        kind: String,
        data: Value,
    },
    /// An unknown type marked `ignorable` (it still consumed its seq).
    Ignored,
}

/// A stretch of consecutive log lines a salvaging scan could not read (corrupt bytes, a record
/// out of sequence, an unknown event type not marked ignorable).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedLines {
    /// 1-based number of its first line (the header is line 1).
    pub line: usize,
    /// How many lines it spans.
    pub lines: usize,
    /// Byte offset of its first line in the log.
    pub offset: u64,
    /// Its length in bytes, newlines included.
    pub bytes: u64,
    /// The seq the first skipped line should have had.
    pub seq: u64,
    /// Why its first line could not be read.
    pub reason: String,
}

/// A readable line of a salvaging scan: where it is and the seq it carries.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LineSpan {
    pub start: usize,
    pub end: usize,
    /// `None` for the header.
    pub seq: Option<u64>,
}

/// What a scan found.
#[derive(Debug)]
pub(crate) struct Scan {
    /// `None` only when the log is empty or its only line is a torn header.
    pub header: Option<SessionHeader>,
    pub records: Vec<Record>,
    /// Length of the intact prefix (ends with a newline, or 0).
    pub good_len: usize,
    /// Byte count of the torn tail after `good_len` (0 when none).
    pub torn_len: usize,
    /// The seq the next append gets.
    pub next_seq: u64,
    /// `time` of the last record (or the header's `createdAt`).
    pub last_time: u64,
    /// What a salvaging scan stepped over, in log order (always empty for a strict scan).
    pub skipped: Vec<SkippedLines>,
    /// The readable lines (header included) of a salvaging scan, in order (empty for a strict
    /// scan), so a repair can copy them.
    pub lines: Vec<LineSpan>,
}

enum LineError {
    /// Not JSON at all (truncated, NUL bytes, broken UTF-8): torn if it is the last line.
    Unparsable(String),
    /// JSON, but not what it must be: always corruption.
    Invalid(String),
    Unknown(String),
}

fn describe(line: &[u8], err: &serde_json::Error) -> String {
    match line.iter().position(|&b| b == 0) {
        Some(at) => {
            let run = line[at..].iter().take_while(|&&b| b == 0).count();
            format!("a run of {run} NUL bytes at byte {at} of the line")
        }
        None => format!("unparsable JSON: {err}"),
    }
}

fn classify(line: &[u8], err: serde_json::Error) -> LineError {
    match err.classify() {
        Category::Data => LineError::Invalid(format!("malformed record: {err}")),
        Category::Syntax | Category::Eof | Category::Io => {
            LineError::Unparsable(describe(line, &err))
        }
    }
}

fn parse_header(line: &[u8]) -> Result<SessionHeader, LineError> {
    let header: SessionHeader = serde_json::from_slice(line).map_err(|e| classify(line, e))?;
    if header.kind != "session" {
        return Err(LineError::Invalid(format!(
            "first line has type {:?}, not \"session\"",
            header.kind
        )));
    }
    if header.version != LOG_VERSION {
        return Err(LineError::Invalid(format!(
            "log format version {} is not supported (this build reads {LOG_VERSION})",
            header.version
        )));
    }
    Ok(header)
}

/// The payload of an envelope, typed as it is parsed when `type` precedes `data` (as the writer
/// always serializes it) — one pass, no intermediate `Value` tree for the big `tool/result`s.
enum Data {
    Call(Box<ToolCallEvent>),
    Result(ToolResultEvent),
    Observed(FsObservedEvent),
    Change(FsChangeEvent),
    /// Unknown type, or `data` came before `type` (hand-edited): converted after the fact.
    Raw(Value),
}

/// An [`Envelope`] whose `data` is parsed straight into the event type.
struct TypedEnvelope {
    kind: String,
    seq: u64,
    time: u64,
    data: Data,
    externalized: Vec<ExternalizedString>,
    ignorable: bool,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Field {
    Type,
    Seq,
    Time,
    Data,
    Externalized,
    Ignorable,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for TypedEnvelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TypedEnvelope;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a session log envelope")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TypedEnvelope, A::Error> {
                let (mut kind, mut seq, mut time, mut data) = (None::<String>, None, None, None);
                let mut ignorable = false;
                let mut externalized = Vec::new();
                while let Some(field) = map.next_key::<Field>()? {
                    match field {
                        Field::Type => kind = Some(map.next_value()?),
                        Field::Seq => seq = Some(map.next_value()?),
                        Field::Time => time = Some(map.next_value()?),
                        Field::Ignorable => ignorable = map.next_value()?,
                        Field::Externalized => externalized = map.next_value()?,
                        Field::Data => {
                            data = Some(match kind.as_deref() {
                                Some(TOOL_CALL) => Data::Call(Box::new(map.next_value()?)),
                                Some(TOOL_RESULT) => Data::Result(map.next_value()?),
                                Some(FS_OBSERVED) => Data::Observed(map.next_value()?),
                                Some(FS_CHANGE) => Data::Change(map.next_value()?),
                                _ => Data::Raw(map.next_value()?),
                            })
                        }
                        Field::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(TypedEnvelope {
                    kind: kind.ok_or_else(|| A::Error::missing_field("type"))?,
                    seq: seq.ok_or_else(|| A::Error::missing_field("seq"))?,
                    time: time.ok_or_else(|| A::Error::missing_field("time"))?,
                    data: data.ok_or_else(|| A::Error::missing_field("data"))?,
                    externalized,
                    ignorable,
                })
            }
        }
        deserializer.deserialize_map(V)
    }
}

/// Parses one envelope whose seq must be `expected_seq` — or, with `skipped_before` (lines before
/// it were stepped over), any seq from `expected_seq` on.
fn parse_record(line: &[u8], expected_seq: u64, skipped_before: bool) -> Result<Record, LineError> {
    let env: TypedEnvelope = serde_json::from_slice(line).map_err(|e| classify(line, e))?;
    if env.seq != expected_seq && !(skipped_before && env.seq > expected_seq) {
        return Err(LineError::Invalid(format!(
            "seq {} where {expected_seq} was expected",
            env.seq
        )));
    }
    let typed =
        |e: serde_json::Error| LineError::Invalid(format!("malformed {} data: {e}", env.kind));
    let event = match (env.data, env.kind.as_str()) {
        (Data::Call(call), _) => Event::Call(call),
        (Data::Result(result), _) => Event::Result(result),
        (Data::Observed(observed), _) => Event::Observed(observed),
        (Data::Change(change), _) => Event::Change(change),
        (Data::Raw(data), TOOL_CALL) => {
            Event::Call(Box::new(serde_json::from_value(data).map_err(typed)?))
        }
        (Data::Raw(data), TOOL_RESULT) => {
            Event::Result(serde_json::from_value(data).map_err(typed)?)
        }
        (Data::Raw(data), FS_OBSERVED) => {
            Event::Observed(serde_json::from_value(data).map_err(typed)?)
        }
        (Data::Raw(data), FS_CHANGE) => Event::Change(serde_json::from_value(data).map_err(typed)?),
        (Data::Raw(data), kind) if env.ignorable && is_state_event(kind) => {
            Event::State { kind: env.kind, data }
        }
        (Data::Raw(data), kind) if env.ignorable && is_conversation_event(kind) => {
            Event::Conversation { kind: env.kind, data }
        }
        (Data::Raw(_), _) if env.ignorable => Event::Ignored,
        (Data::Raw(_), _) => return Err(LineError::Unknown(env.kind)),
    };
    Ok(Record { seq: env.seq, time: env.time, event, externalized: env.externalized })
}

/// Index of the first `\n`: eight bytes at a time (a word has a newline iff its XOR with a
/// newline pattern has a zero byte), since a byte-by-byte search was a fifth of the read time
/// of a big log and no SIMD search crate is among the workspace dependencies.
fn find_newline(hay: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = LO * b'\n' as u64;
    let mut start = 0;
    for chunk in hay.chunks_exact(8) {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else { break };
        let x = u64::from_le_bytes(word) ^ NL;
        if x.wrapping_sub(LO) & !x & HI != 0 {
            break;
        }
        start += 8;
    }
    hay[start..].iter().position(|&b| b == b'\n').map(|i| start + i)
}

/// Scans a whole log. Errors name 1-based line numbers (the header is line 1).
pub(crate) fn scan(bytes: &[u8]) -> Result<Scan, SessionError> {
    scan_with(bytes, false)
}

/// Scans a whole log, stepping over unreadable lines instead of failing on them (see the module
/// doc). A torn tail is still a torn tail. Fails only on a header of a format this build does not
/// read.
pub(crate) fn scan_salvaging(bytes: &[u8]) -> Result<Scan, SessionError> {
    scan_with(bytes, true)
}

fn scan_with(bytes: &[u8], salvage: bool) -> Result<Scan, SessionError> {
    let mut out = Scan {
        header: None,
        records: Vec::new(),
        good_len: 0,
        torn_len: 0,
        next_seq: 0,
        last_time: 0,
        skipped: Vec::new(),
        lines: Vec::new(),
    };
    let mut pos = 0;
    let mut line_no = 0;
    // The stretch of unreadable lines being stepped over, while it lasts.
    let mut skipping: Option<SkippedLines> = None;
    while pos < bytes.len() {
        let Some(nl) = find_newline(&bytes[pos..]) else {
            // No newline: the append that wrote it never completed, so it was never acknowledged.
            out.torn_len = bytes.len() - pos;
            break;
        };
        let line = &bytes[pos..pos + nl];
        let end = pos + nl + 1;
        line_no += 1;
        let parsed = if line_no == 1 {
            parse_header(line).map(|h| {
                out.last_time = h.created_at;
                out.header = Some(h);
                None
            })
        } else {
            parse_record(line, out.next_seq, skipping.is_some()).map(|r| {
                let seq = r.seq;
                out.next_seq = seq + 1;
                out.last_time = r.time;
                if !matches!(r.event, Event::Ignored) {
                    out.records.push(r);
                }
                Some(seq)
            })
        };
        match parsed {
            Ok(seq) => {
                if salvage {
                    out.skipped.extend(skipping.take());
                    out.lines.push(LineSpan { start: pos, end, seq });
                }
                pos = end;
            }
            Err(LineError::Unparsable(_)) if end == bytes.len() => {
                out.torn_len = bytes.len() - pos;
                break;
            }
            // A header that reads but is not one this build can read (another version) is no
            // damage to step over.
            Err(LineError::Unparsable(reason)) if salvage => {
                step_over(&mut skipping, line_no, pos, end, out.next_seq, reason);
                pos = end;
            }
            Err(LineError::Invalid(reason)) if salvage && line_no > 1 => {
                step_over(&mut skipping, line_no, pos, end, out.next_seq, reason);
                pos = end;
            }
            Err(LineError::Unknown(kind)) if salvage => {
                let reason = format!("unknown event type {kind:?} not marked ignorable");
                step_over(&mut skipping, line_no, pos, end, out.next_seq, reason);
                pos = end;
            }
            Err(LineError::Unparsable(detail) | LineError::Invalid(detail)) => {
                return Err(SessionError::Corrupt {
                    line: line_no,
                    expected_seq: out.next_seq,
                    detail,
                });
            }
            Err(LineError::Unknown(kind)) => {
                return Err(SessionError::UnknownEvent { line: line_no, seq: out.next_seq, kind });
            }
        }
    }
    out.skipped.extend(skipping);
    out.good_len = pos;
    Ok(out)
}

/// Adds the line `start..end` to the stretch being stepped over, starting one if none is open.
fn step_over(
    skipping: &mut Option<SkippedLines>,
    line: usize,
    start: usize,
    end: usize,
    seq: u64,
    reason: String,
) {
    let stretch = skipping.get_or_insert_with(|| SkippedLines {
        line,
        lines: 0,
        offset: start as u64,
        bytes: 0,
        seq,
        reason,
    });
    stretch.lines += 1;
    stretch.bytes += (end - start) as u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"type":"session","version":1,"id":"s","cwd":"/w","createdAt":5}"#;

    fn log(lines: &[&str]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    #[test]
    fn newline_search() {
        for len in 0..40 {
            for at in 0..=len {
                let mut hay = vec![b'x'; len];
                let expected = (at < len).then(|| {
                    hay[at] = b'\n';
                    at
                });
                if at + 3 < len {
                    hay[at + 3] = b'\n';
                }
                // Bytes that differ from '\n' by one bit must not match.
                if at > 0 {
                    hay[at - 1] = b'\n' ^ 0x80;
                }
                assert_eq!(find_newline(&hay), expected, "len {len} at {at}");
            }
        }
    }

    #[test]
    fn clean_log() {
        let text = log(&[
            HEADER,
            r#"{"type":"tool/call","seq":0,"time":6,"data":{"callId":"c","name":"read","arguments":{}}}"#,
            r#"{"type":"x/y","seq":1,"time":7,"data":null,"ignorable":true}"#,
        ]);
        let scan = scan(text.as_bytes()).unwrap();
        assert_eq!(scan.records.len(), 1);
        assert_eq!(scan.next_seq, 2);
        assert_eq!(scan.good_len, text.len());
        assert_eq!(scan.torn_len, 0);
        assert_eq!(scan.last_time, 7);
    }

    #[test]
    fn torn_tails() {
        let base = log(&[HEADER]);
        for tail in [r#"{"type":"tool/ca"#, "{\"type\":\"x\"}", "\0\0\0\0", "{\"a\":\"\u{e9}"] {
            let text = format!("{base}{tail}");
            let scan = scan(text.as_bytes()).unwrap();
            assert_eq!((scan.good_len, scan.torn_len), (base.len(), tail.len()), "{tail:?}");
        }
        // An unparsable last line with its newline is torn as well.
        let text = format!("{base}{{\"type\":\n");
        assert_eq!(scan(text.as_bytes()).unwrap().good_len, base.len());
        // A torn header leaves nothing.
        let scan = scan(&HEADER.as_bytes()[..10]).unwrap();
        assert!(scan.header.is_none());
        assert_eq!(scan.torn_len, 10);
    }

    #[test]
    fn middle_problems_are_errors() {
        let call = r#"{"type":"tool/call","seq":0,"time":6,"data":{"callId":"c","name":"read","arguments":{}}}"#;
        let wrong_seq = r#"{"type":"tool/call","seq":3,"time":6,"data":{"callId":"c","name":"read","arguments":{}}}"#;
        let text = log(&[HEADER, "garbage", call]);
        match scan(text.as_bytes()).unwrap_err() {
            SessionError::Corrupt { line: 2, expected_seq: 0, .. } => {}
            other => panic!("{other:?}"),
        }
        let text = log(&[HEADER, wrong_seq]);
        assert!(matches!(
            scan(text.as_bytes()),
            Err(SessionError::Corrupt { line: 2, expected_seq: 0, .. })
        ));
        let text = log(&[HEADER, r#"{"type":"nope","seq":0,"time":1,"data":{}}"#]);
        assert!(matches!(
            scan(text.as_bytes()),
            Err(SessionError::UnknownEvent { line: 2, seq: 0, .. })
        ));
    }

    #[test]
    fn key_order_does_not_matter_and_bad_data_is_corrupt() {
        let text = log(&[
            HEADER,
            r#"{"data":{"callId":"c","name":"read","arguments":{}},"time":6,"seq":0,"type":"tool/call","extra":1}"#,
            r#"{"type":"fs/observed","seq":1,"time":7,"data":{"path":"/a","version":null},"ignorable":true}"#,
        ]);
        let scanned = scan(text.as_bytes()).unwrap();
        assert!(matches!(&scanned.records[0].event, Event::Call(c) if c.call_id == "c"));
        assert!(matches!(&scanned.records[1].event, Event::Observed(o) if o.path == "/a"));
        for bad in [
            r#"{"type":"tool/call","seq":0,"time":6,"data":{"name":"read","arguments":{}}}"#,
            r#"{"data":{"name":"read"},"type":"tool/call","seq":0,"time":6}"#,
            r#"{"type":"tool/call","time":6,"data":{"callId":"c","name":"read","arguments":{}}}"#,
        ] {
            let text = log(&[HEADER, bad, bad]);
            let err = scan(text.as_bytes()).unwrap_err();
            assert!(
                matches!(err, SessionError::Corrupt { line: 2, expected_seq: 0, .. }),
                "{err:?}"
            );
        }
    }
}
