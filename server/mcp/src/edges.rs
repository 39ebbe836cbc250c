//! Protocol edges rmcp would answer loosely, screened on the parsed message before rmcp sees it,
//! the same way for every transport (stdio and HTTP):
//!
//! - a `cursor` that is not a string (`tools/list`, `prompts/list`, `resources/list`,
//!   `resources/templates/list`) is `-32602`: rmcp would ignore it and list from the start, so a
//!   client with a broken paginator would loop forever;
//! - `ping` is answered here with `{}`: under 2026-07-28 rmcp wants the per-request `_meta` on
//!   every request once the session has its revision, but a keep-alive `ping` carries none (the
//!   spec's ping has no params);
//! - `tools/call` whose `arguments` is not an object (a string, an array, a number) still reaches
//!   the pipeline, which answers what docs/tools.md says of every front end: an `INVALID_ARGS`
//!   result, `invalid arguments: "arguments" must be an object`, carded and logged like any other
//!   call. rmcp's typed params only take an object, so the value travels in `_meta` under
//!   [`RAW_ARGUMENTS_KEY`] and the handler takes it back out.

use serde_json::{Map, Value};
use toolhost_jsonrpc::message::ErrorObject;

/// Where a `tools/call`'s non-object `arguments` travel to the handler.
pub const RAW_ARGUMENTS_KEY: &str = "toolhost/rawArguments";

/// The list methods that page with a `cursor`.
const PAGED: &[&str] =
    &["tools/list", "prompts/list", "resources/list", "resources/templates/list"];

/// What to do with one request.
#[derive(Debug, PartialEq)]
pub enum Screened {
    /// Hand it on (possibly rewritten in place).
    Forward,
    /// Answer it with this result without handing it on.
    Answer(Value),
    /// Answer it with this error.
    Refuse(ErrorObject),
}

/// Screens request `method` (its whole message in `message`), rewriting it in place when it is
/// handed on.
pub fn screen(method: &str, message: &mut Value) -> Screened {
    if method == "ping" {
        return Screened::Answer(Value::Object(Map::new()));
    }
    let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else {
        return Screened::Forward;
    };
    if PAGED.contains(&method)
        && let Some(cursor) = params.get("cursor")
        && !cursor.is_string()
        && !cursor.is_null()
    {
        return Screened::Refuse(ErrorObject::invalid_params(format!(
            "Invalid params for {method}: cursor must be a string (the nextCursor of an earlier \
             page), not {}",
            kind(cursor)
        )));
    }
    if method == "tools/call"
        && let Some(arguments) = params.get("arguments")
        && !arguments.is_object()
        && !arguments.is_null()
        && let Some(arguments) = params.remove("arguments")
    {
        let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        match meta {
            Value::Object(meta) => {
                meta.insert(RAW_ARGUMENTS_KEY.to_owned(), arguments);
            }
            // A `_meta` that is not an object is rmcp's to refuse; the arguments go back.
            _ => {
                params.insert("arguments".to_owned(), arguments);
            }
        }
    }
    Screened::Forward
}

/// A JSON value's type, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cursor_that_is_not_a_string_is_invalid_params() {
        for method in PAGED {
            let mut message = json!({"params": {"cursor": 5}});
            let Screened::Refuse(error) = screen(method, &mut message) else {
                panic!("{method}: not refused");
            };
            assert_eq!(error.code, -32602);
            assert!(error.message.contains("cursor must be a string"), "{}", error.message);
        }
        let mut message = json!({"params": {"cursor": "abc"}});
        assert_eq!(screen("tools/list", &mut message), Screened::Forward);
    }

    #[test]
    fn ping_is_answered_without_meta() {
        let mut message = json!({"id": 1, "method": "ping"});
        assert_eq!(screen("ping", &mut message), Screened::Answer(json!({})));
    }

    #[test]
    fn arguments_that_are_not_an_object_travel_in_meta() {
        let mut message = json!({"params": {"name": "glob", "arguments": "x"}});
        assert_eq!(screen("tools/call", &mut message), Screened::Forward);
        assert_eq!(message, json!({"params": {"name": "glob", "_meta": {RAW_ARGUMENTS_KEY: "x"}}}));
        let mut object = json!({"params": {"name": "glob", "arguments": {"pattern": "*"}}});
        let before = object.clone();
        assert_eq!(screen("tools/call", &mut object), Screened::Forward);
        assert_eq!(object, before);
    }
}
