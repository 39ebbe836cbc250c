//! Parsing a log's bytes into typed records, with the one set of rules both the writer's crash
//! repair and the read-only reader apply:
//!
//! - the last line is *torn* when it has no trailing newline or does not parse as JSON; it is
//!   reported (the writer cuts it, the reader ignores it in memory) — a torn write can only ever
//!   be the tail, since every append is one write of whole lines followed by `sync_data`;
//! - any other bad line (unparsable, NUL bytes, wrong `seq`, a known event with a malformed
//!   `data`) is [`SessionError::Corrupt`] naming the line and the expected seq — never skipped;
//! - an unknown event type is skipped when `ignorable`, otherwise [`SessionError::UnknownEvent`].

use crate::error::SessionError;
use serde_json::error::Category;
use toolhost_protocol::session_log::{
    Envelope, FsObservedEvent, LOG_VERSION, SessionHeader, ToolCallEvent, ToolResultEvent,
};

/// Event type names.
pub const TOOL_CALL: &str = "tool/call";
pub const TOOL_RESULT: &str = "tool/result";
pub const FS_OBSERVED: &str = "fs/observed";

/// One accepted envelope.
#[derive(Debug)]
pub(crate) struct Record {
    pub seq: u64,
    pub time: u64,
    pub event: Event,
}

/// The typed payload of a record.
#[derive(Debug)]
pub(crate) enum Event {
    Call(ToolCallEvent),
    Result(ToolResultEvent),
    Observed(FsObservedEvent),
    /// An unknown type marked `ignorable` (it still consumed its seq).
    Ignored,
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

fn parse_record(line: &[u8], expected_seq: u64) -> Result<Record, LineError> {
    let env: Envelope = serde_json::from_slice(line).map_err(|e| classify(line, e))?;
    if env.seq != expected_seq {
        return Err(LineError::Invalid(format!(
            "seq {} where {expected_seq} was expected",
            env.seq
        )));
    }
    let typed = |what: &str, e: serde_json::Error| {
        LineError::Invalid(format!("malformed {what} data: {e}"))
    };
    let event = match env.kind.as_str() {
        TOOL_CALL => {
            Event::Call(serde_json::from_value(env.data).map_err(|e| typed(TOOL_CALL, e))?)
        }
        TOOL_RESULT => {
            Event::Result(serde_json::from_value(env.data).map_err(|e| typed(TOOL_RESULT, e))?)
        }
        FS_OBSERVED => {
            Event::Observed(serde_json::from_value(env.data).map_err(|e| typed(FS_OBSERVED, e))?)
        }
        _ if env.ignorable => Event::Ignored,
        _ => return Err(LineError::Unknown(env.kind)),
    };
    Ok(Record { seq: env.seq, time: env.time, event })
}

/// Scans a whole log. Errors name 1-based line numbers (the header is line 1).
pub(crate) fn scan(bytes: &[u8]) -> Result<Scan, SessionError> {
    let mut out = Scan {
        header: None,
        records: Vec::new(),
        good_len: 0,
        torn_len: 0,
        next_seq: 0,
        last_time: 0,
    };
    let mut pos = 0;
    let mut line_no = 0;
    while pos < bytes.len() {
        let Some(nl) = bytes[pos..].iter().position(|&b| b == b'\n') else {
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
            })
        } else {
            parse_record(line, out.next_seq).map(|r| {
                out.next_seq += 1;
                out.last_time = r.time;
                if !matches!(r.event, Event::Ignored) {
                    out.records.push(r);
                }
            })
        };
        match parsed {
            Ok(()) => pos = end,
            Err(LineError::Unparsable(_)) if end == bytes.len() => {
                out.torn_len = bytes.len() - pos;
                break;
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
    out.good_len = pos;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"type":"session","version":1,"id":"s","cwd":"/w","createdAt":5}"#;

    fn log(lines: &[&str]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
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
}
