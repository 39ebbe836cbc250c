//! Log lines whose `data` is encoded before it reaches the writer thread.
//!
//! A call's `tool/result` is most of what a session log holds: a read's page of text and its
//! presentation (every line again, structured) are tens of kilobytes each. Copying them into a
//! `serde_json::Value` only to serialize that value on the writer thread cost more than the read
//! itself, so a result is serialized once, straight from the call's borrowed result
//! ([`ToolResultRecord`]), and the writer puts the envelope around the text.

use crate::error::SessionError;
use crate::scan::TOOL_RESULT;
use serde_json::Value;
use toolhost_protocol::session_log::ToolResultRecord;

/// An item's `data`: a value, or a record already encoded as JSON text (a call's result, encoded
/// straight from the borrowed result rather than copied into a value first).
pub(crate) enum Data {
    Value(Value),
    Encoded(String),
}

/// A call's result as an item's data: encoded straight from the borrowed record, unless it has
/// images, which the writer moves to the blob store (that edit needs a value).
pub(crate) fn encode_result(record: &ToolResultRecord<'_>) -> Result<Data, SessionError> {
    let invalid = |e: serde_json::Error| SessionError::InvalidEvent {
        kind: TOOL_RESULT.to_owned(),
        detail: e.to_string(),
    };
    if record.has_images() {
        return serde_json::to_value(record).map(Data::Value).map_err(invalid);
    }
    serde_json::to_string(record).map(Data::Encoded).map_err(invalid)
}

/// The line of an envelope whose `data` is encoded already: the same bytes
/// `serde_json::to_vec(&Envelope { .. })` writes (no `externalized`: only calls have any).
pub(crate) fn encoded_line(
    kind: &str,
    seq: u64,
    time: u64,
    data: &str,
    ignorable: bool,
) -> Vec<u8> {
    let mut line = Vec::with_capacity(data.len() + kind.len() + 64);
    line.extend_from_slice(b"{\"type\":");
    // A `&str` always serializes.
    let _ = serde_json::to_writer(&mut line, kind);
    line.extend_from_slice(format!(",\"seq\":{seq},\"time\":{time},\"data\":").as_bytes());
    line.extend_from_slice(data.as_bytes());
    if ignorable {
        line.extend_from_slice(b",\"ignorable\":true");
    }
    line.push(b'}');
    line
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;
    use toolhost_protocol::ContentBlock;
    use toolhost_protocol::session_log::{Envelope, ToolResultEvent};

    fn event(content: Vec<ContentBlock>) -> ToolResultEvent {
        ToolResultEvent {
            call_id: "c1".to_owned(),
            name: "read".to_owned(),
            content,
            is_error: false,
            error: None,
            meta: Some(json!({"path": "/w/a \"b\".txt", "lines": [{"number": 1, "text": "x\ty"}]})),
            renderer_version: 1,
        }
    }

    /// The encoded line is the very line the writer wrote for the same event as a value.
    #[test]
    fn an_encoded_result_line_is_byte_for_byte_the_envelope_of_its_value() {
        let event = event(vec![ContentBlock::text("1: x\ty \u{1F600} \"quoted\"\n")]);
        let Data::Encoded(json) = encode_result(&(&event).into()).unwrap() else {
            panic!("a result without images is encoded")
        };
        for ignorable in [false, true] {
            let envelope = Envelope {
                kind: TOOL_RESULT.to_owned(),
                seq: 7,
                time: 1_760_000_000_042,
                data: serde_json::to_value(&event).unwrap(),
                externalized: Vec::new(),
                ignorable,
            };
            let line = encoded_line(TOOL_RESULT, 7, 1_760_000_000_042, &json, ignorable);
            assert_eq!(String::from_utf8(line).unwrap(), serde_json::to_string(&envelope).unwrap());
        }
    }

    /// Images go to the blob store, which edits the value: such a result stays a value.
    #[test]
    fn a_result_with_an_image_stays_a_value() {
        let image =
            ContentBlock::Image { data: "AAAA".to_owned(), mime_type: "image/png".to_owned() };
        let event = event(vec![image]);
        assert!(matches!(encode_result(&(&event).into()).unwrap(), Data::Value(_)));
    }
}
