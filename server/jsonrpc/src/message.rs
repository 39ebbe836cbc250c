//! JSON-RPC 2.0 messages: what arrives ([`Incoming`], sorted by [`classify`]) and encoders for
//! what goes out, written straight from typed values (no intermediate `Value` for big results).

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// Standard and LSP error codes.
pub mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// LSP: a request before `initialize` completed.
    pub const SERVER_NOT_INITIALIZED: i64 = -32002;
    /// LSP: the request was cancelled (`$/cancelRequest`).
    pub const REQUEST_CANCELLED: i64 = -32800;
}

/// A request id: a number that fits an `i64`, a string, or `null` (which JSON-RPC allows for
/// requests and uses for errors that cannot name their request).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Id {
    #[default]
    Null,
    Number(i64),
    String(String),
}

impl Id {
    /// The id of a JSON value, if it is a usable one.
    pub fn from_value(value: &Value) -> Option<Id> {
        match value {
            Value::Null => Some(Id::Null),
            Value::String(s) => Some(Id::String(s.clone())),
            Value::Number(n) => n.as_i64().map(Id::Number),
            _ => None,
        }
    }

    pub fn to_value(&self) -> Value {
        match self {
            Id::Null => Value::Null,
            Id::Number(n) => Value::from(*n),
            Id::String(s) => Value::from(s.as_str()),
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Null => serializer.serialize_unit(),
            Id::Number(n) => serializer.serialize_i64(*n),
            Id::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Id::from_value(&value)
            .ok_or_else(|| serde::de::Error::custom("an id must be a string, an integer or null"))
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Null => f.write_str("null"),
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// The error member of a response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        ErrorObject::new(codes::INVALID_PARAMS, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ErrorObject::new(codes::INTERNAL_ERROR, message)
    }

    pub fn cancelled() -> Self {
        ErrorObject::new(codes::REQUEST_CANCELLED, "request cancelled")
    }
}

impl std::fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// A request: it must be answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub id: Id,
    pub method: String,
    /// `None` when the member is absent (which some methods treat differently from `null`).
    pub params: Option<Value>,
}

/// A notification: never answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    pub method: String,
    pub params: Option<Value>,
}

/// A response to one of our own requests. The id is kept as sent (a stray response may carry
/// anything).
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    pub id: Value,
    pub result: Result<Value, ErrorObject>,
}

/// Any well-formed incoming message.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    Request(Request),
    Notification(Notification),
    Response(Response),
}

/// A body that is JSON but not a usable message: answer `-32600` with `id` (null when the
/// message had no usable id).
#[derive(Clone, Debug, PartialEq)]
pub struct Invalid {
    pub id: Id,
    pub reason: String,
}

impl Invalid {
    /// The error to answer it with.
    pub fn error(&self) -> ErrorObject {
        ErrorObject::new(codes::INVALID_REQUEST, format!("Invalid request: {}", self.reason))
    }
}

/// Whether a body looks like a response: no `method`, an `id`, and a `result` or an `error`.
pub fn is_response(value: &Value) -> bool {
    value.get("method").is_none()
        && value.get("id").is_some()
        && (value.get("result").is_some() || value.get("error").is_some())
}

/// Sorts a parsed body. Responses are recognised by shape alone (so a stray or slightly wrong
/// one is routed, and dropped, rather than answered). Requests and notifications need
/// `jsonrpc: "2.0"` and a string `method`; a request's id must be a string, an `i64` or null.
pub fn classify(value: Value) -> Result<Incoming, Invalid> {
    let invalid = |id: Id, reason: &str| Invalid { id, reason: reason.to_owned() };
    if is_response(&value) {
        let Value::Object(mut map) = value else {
            return Err(invalid(Id::Null, "not an object"));
        };
        let id = map.remove("id").unwrap_or(Value::Null);
        let result = match map.remove("error") {
            Some(error) if !error.is_null() => Err(serde_json::from_value(error.clone())
                .unwrap_or_else(|_| {
                    ErrorObject::new(codes::INTERNAL_ERROR, "malformed error").with_data(error)
                })),
            _ => Ok(map.remove("result").unwrap_or(Value::Null)),
        };
        return Ok(Incoming::Response(Response { id, result }));
    }
    let mut map = match value {
        Value::Object(map) => map,
        Value::Array(_) => return Err(invalid(Id::Null, "batch arrays are not supported")),
        _ => return Err(invalid(Id::Null, "not an object")),
    };
    let id = match map.get("id") {
        None => None,
        Some(value) => match Id::from_value(value) {
            Some(id) => Some(id),
            None => return Err(invalid(Id::Null, "an id must be a string, an integer or null")),
        },
    };
    let reply_id = id.clone().unwrap_or_default();
    let method = match map.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => return Err(invalid(reply_id, "the method must be a string")),
        None => return Err(invalid(reply_id, "missing method")),
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(reply_id, "\"jsonrpc\" must be \"2.0\""));
    }
    let params = map.remove("params");
    Ok(match id {
        Some(id) => Incoming::Request(Request { id, method, params }),
        None => Incoming::Notification(Notification { method, params }),
    })
}

/// Parses and sorts a body: a parse error is `Err(None)` (answer `-32700` with id null), an
/// invalid message `Err(Some(invalid))`.
pub fn parse(body: &[u8]) -> Result<Incoming, Option<Invalid>> {
    let value: Value = serde_json::from_slice(body).map_err(|_| None)?;
    classify(value).map_err(Some)
}

#[derive(Serialize)]
struct OutResult<'a, T: Serialize + ?Sized> {
    jsonrpc: &'static str,
    id: &'a Id,
    result: &'a T,
}

#[derive(Serialize)]
struct OutError<'a> {
    jsonrpc: &'static str,
    id: &'a Id,
    error: &'a ErrorObject,
}

#[derive(Serialize)]
struct OutRequest<'a, P: Serialize + ?Sized> {
    jsonrpc: &'static str,
    id: &'a Id,
    method: &'a str,
    params: &'a P,
}

#[derive(Serialize)]
struct OutNotification<'a, P: Serialize + ?Sized> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a P,
}

/// A serialization failure of an outgoing message (a non-finite float, a map with non-string
/// keys): the caller answers with an internal error instead.
pub type EncodeError = serde_json::Error;

/// The body of a successful response.
pub fn encode_result<T: Serialize + ?Sized>(id: &Id, result: &T) -> Result<Vec<u8>, EncodeError> {
    serde_json::to_vec(&OutResult { jsonrpc: "2.0", id, result })
}

/// The body of an error response (infallible: every member is plain JSON).
pub fn encode_error(id: &Id, error: &ErrorObject) -> Vec<u8> {
    serde_json::to_vec(&OutError { jsonrpc: "2.0", id, error }).unwrap_or_else(|_| {
        let fallback = serde_json::json!({"jsonrpc": "2.0", "id": id.to_value(), "error": {
            "code": codes::INTERNAL_ERROR, "message": "unencodable error"}});
        fallback.to_string().into_bytes()
    })
}

/// The body of a request.
pub fn encode_request<P: Serialize + ?Sized>(
    id: &Id,
    method: &str,
    params: &P,
) -> Result<Vec<u8>, EncodeError> {
    serde_json::to_vec(&OutRequest { jsonrpc: "2.0", id, method, params })
}

/// The body of a notification.
pub fn encode_notification<P: Serialize + ?Sized>(
    method: &str,
    params: &P,
) -> Result<Vec<u8>, EncodeError> {
    serde_json::to_vec(&OutNotification { jsonrpc: "2.0", method, params })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn classification_follows_the_spec() {
        let req = classify(json!({"jsonrpc": "2.0", "id": 3, "method": "m", "params": [1]}));
        assert_eq!(
            req,
            Ok(Incoming::Request(Request {
                id: Id::Number(3),
                method: "m".into(),
                params: Some(json!([1]))
            }))
        );
        let note = classify(json!({"jsonrpc": "2.0", "method": "n"})).unwrap();
        assert!(matches!(note, Incoming::Notification(Notification { params: None, .. })));
        let null_id = classify(json!({"jsonrpc": "2.0", "id": null, "method": "m"})).unwrap();
        assert!(matches!(null_id, Incoming::Request(Request { id: Id::Null, .. })));
        let resp =
            classify(json!({"jsonrpc": "2.0", "id": 9, "error": {"code": 1, "message": "x"}}));
        assert_eq!(
            resp,
            Ok(Incoming::Response(Response {
                id: json!(9),
                result: Err(ErrorObject::new(1, "x"))
            }))
        );
        for (body, id) in [
            (json!([]), Id::Null),
            (json!(5), Id::Null),
            (json!({"jsonrpc": "2.0", "id": 1.5, "method": "m"}), Id::Null),
            (json!({"jsonrpc": "2.0", "id": u64::MAX, "method": "m"}), Id::Null),
            (json!({"jsonrpc": "1.0", "id": "a", "method": "m"}), Id::String("a".into())),
            (json!({"id": 4, "method": "m"}), Id::Number(4)),
            (json!({"jsonrpc": "2.0", "id": 5, "method": 5}), Id::Number(5)),
            (json!({"jsonrpc": "2.0", "id": 6}), Id::Number(6)),
            (json!({}), Id::Null),
        ] {
            assert_eq!(classify(body.clone()).unwrap_err().id, id, "{body}");
        }
        assert_eq!(parse(b"{"), Err(None));
    }

    #[test]
    fn encoders_write_compact_json() {
        let body = encode_result(&Id::String("a".into()), &json!({"x": 1})).unwrap();
        assert_eq!(body, br#"{"jsonrpc":"2.0","id":"a","result":{"x":1}}"#);
        let body = encode_error(&Id::Null, &ErrorObject::new(-32700, "Parse error"));
        assert_eq!(
            body,
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#
        );
        let body = encode_notification("toolhost/card", &json!({})).unwrap();
        assert_eq!(body, br#"{"jsonrpc":"2.0","method":"toolhost/card","params":{}}"#);
        let body = encode_request(&Id::Number(1), "m", &Value::Null).unwrap();
        assert_eq!(body, br#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#);
    }
}
