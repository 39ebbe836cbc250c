//! Malformed-input corpus of `toolhost serve` (docs/protocol.md, Framing and Error codes).
//!
//! Body-level cases run in batches on one connection each (before `initialize`, after it, after
//! `shutdown`, and with a 4 KiB body cap): every case gets its exact expected reply (code and id)
//! or none, and a valid request sent right after it is still answered. Header-level cases (an
//! unusable `Content-Length` and friends) each get their own process, which must close the
//! connection with a logged reason and exit code 1.
#![allow(clippy::unwrap_used)]

use crate::server;
use crate::server::proc_number;

use serde_json::{Value, json};
use server::{Env, frame, is_response, ms, wait_response};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolhost_harness::client::Client;

/// What a case must produce.
#[derive(Clone, Debug)]
enum Want {
    /// An error response with this code and id.
    Code(i64, Value),
    /// A success response with this id.
    Result(Value),
    /// No response at all.
    Silent,
}

struct Case {
    name: String,
    bytes: Vec<u8>,
    want: Want,
}

fn case(name: impl Into<String>, bytes: Vec<u8>, want: Want) -> Case {
    Case { name: name.into(), bytes, want }
}

/// A case whose body is `body` in a normal frame.
fn body_case(name: impl Into<String>, body: &[u8], want: Want) -> Case {
    case(name, frame(body), want)
}

fn req(id: Value, method: &str, params: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string().into_bytes()
}

fn notif(method: &str, params: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string().into_bytes()
}

fn code(code: i64, id: Value) -> Want {
    Want::Code(code, id)
}

const PARSE: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const NOT_INITIALIZED: i64 = -32002;

/// Running totals over the whole corpus.
#[derive(Default)]
struct Report {
    passed: usize,
    failures: Vec<String>,
    /// Slowest answer to the valid request sent after a case.
    worst_follow_up_ms: f64,
}

impl Report {
    fn check(&mut self, name: &str, ok: bool, detail: impl FnOnce() -> String) {
        if ok {
            self.passed += 1;
        } else {
            self.failures.push(format!("{name}: {}", detail()));
        }
    }

    fn finish(&self, what: &str, min_cases: usize) {
        println!(
            "{what}: {} passed, {} failed (slowest follow-up {:.1} ms)",
            self.passed,
            self.failures.len(),
            self.worst_follow_up_ms
        );
        for failure in &self.failures {
            println!("  FAILED {failure}");
        }
        assert!(self.failures.is_empty(), "{} case(s) failed", self.failures.len());
        assert!(self.passed >= min_cases, "only {} cases ran", self.passed);
    }
}

/// The follow-up every case is chased with: `toolhost/listTools` must be answered with
/// `expect_code` (an error code) or, with `None`, a tool list.
fn follow_up(client: &mut Client, expect_code: Option<i64>) -> Result<f64, String> {
    let start = Instant::now();
    let reply = client.request_raw("toolhost/listTools", json!({})).map_err(|e| e.to_string())?;
    let elapsed = ms(start);
    let got = reply.pointer("/error/code").and_then(Value::as_i64);
    match expect_code {
        Some(code) if got == Some(code) => Ok(elapsed),
        None if reply.pointer("/result/tools").is_some_and(Value::is_array) => Ok(elapsed),
        _ => Err(format!("follow-up answered {reply}")),
    }
}

fn run_batch(client: &mut Client, cases: &[Case], follow: Option<i64>, report: &mut Report) {
    for case in cases {
        client.seen.clear();
        if let Err(err) = client.write_raw(&case.bytes) {
            report.check(&case.name, false, || format!("write failed: {err}"));
            continue;
        }
        let verdict: Result<(), String> = match &case.want {
            Want::Code(code, id) => match wait_response(client, id, Duration::from_secs(5)) {
                Some(reply) => {
                    let got = reply.pointer("/error/code").and_then(Value::as_i64);
                    if got == Some(*code) {
                        Ok(())
                    } else {
                        Err(format!("want error {code} id {id}, got {reply}"))
                    }
                }
                None => Err(format!("no reply with id {id} (seen {:?})", client.seen)),
            },
            Want::Result(id) => match wait_response(client, id, Duration::from_secs(5)) {
                Some(reply) if reply.get("result").is_some() => Ok(()),
                Some(reply) => Err(format!("want a result, got {reply}")),
                None => Err(format!("no reply with id {id} (seen {:?})", client.seen)),
            },
            Want::Silent => Ok(()),
        };
        let follow = follow_up(client, follow);
        if let Ok(elapsed) = &follow {
            report.worst_follow_up_ms = report.worst_follow_up_ms.max(*elapsed);
        }
        // A silent case must stay silent (the follow-up's own reply is tracked, not in `seen`).
        let stray: Vec<&Value> = client.seen.iter().filter(|m| is_response(m)).collect();
        let verdict = verdict.and(follow.map(drop)).and_then(|()| {
            if matches!(case.want, Want::Silent) && !stray.is_empty() {
                Err(format!("expected no reply, got {stray:?}"))
            } else {
                Ok(())
            }
        });
        let detail = verdict.as_ref().err().cloned().unwrap_or_default();
        report.check(&case.name, verdict.is_ok(), || detail);
    }
}

/// Cases for an uninitialized server.
fn before_initialize_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let requests = [
        ("toolhost/listTools", json!({})),
        ("toolhost/callTool", json!({"name": "read", "arguments": {"file_path": "a.txt"}})),
        ("toolhost/listSessions", json!({})),
        ("toolhost/replaySession", json!({"sessionId": "x"})),
        (
            "workspace/executeCommand",
            json!({"command": "toolhost.callTool", "arguments": ["read", {}]}),
        ),
        ("shutdown", Value::Null),
        (
            "textDocument/hover",
            json!({"textDocument": {"uri": "file:///x"}, "position": {"line": 0, "character": 0}}),
        ),
    ];
    for (i, (method, params)) in requests.into_iter().enumerate() {
        let id = json!(100 + i);
        cases.push(body_case(
            format!("before initialize: {method}"),
            &req(id.clone(), method, params),
            code(NOT_INITIALIZED, id),
        ));
    }
    cases.push(body_case(
        "before initialize: unknown method",
        &req(json!(120), "foo/bar", json!({})),
        code(NOT_INITIALIZED, json!(120)),
    ));
    cases.push(body_case(
        "before initialize: unknown $/ request",
        &req(json!(121), "$/unknownRequest", json!({})),
        code(NOT_INITIALIZED, json!(121)),
    ));
    cases.push(body_case(
        "before initialize: string id",
        &req(json!("early"), "toolhost/listTools", json!({})),
        code(NOT_INITIALIZED, json!("early")),
    ));
    for method in ["textDocument/didOpen", "initialized", "foo/notification", "$/setTrace"] {
        cases.push(body_case(
            format!("before initialize: notification {method}"),
            &notif(method, json!({})),
            Want::Silent,
        ));
    }
    cases.push(body_case(
        "before initialize: invalid JSON",
        b"{\"jsonrpc\":",
        code(PARSE, Value::Null),
    ));
    cases.push(body_case(
        "before initialize: batch",
        &format!("[{}]", String::from_utf8(req(json!(1), "initialize", json!({}))).unwrap())
            .into_bytes(),
        code(INVALID_REQUEST, Value::Null),
    ));
    // Wrongly shaped initialize params: -32602, and the server stays uninitialized.
    let bad_initialize = [
        ("capabilities is a number", json!({"capabilities": 3})),
        ("params is an array", json!([])),
        ("params is a string", json!("x")),
        ("processId is a string", json!({"capabilities": {}, "processId": "x"})),
        ("rootUri is a number", json!({"capabilities": {}, "rootUri": 5})),
        ("workspaceFolders is a string", json!({"capabilities": {}, "workspaceFolders": "x"})),
        (
            "session_id is a number",
            json!({"capabilities": {}, "initializationOptions": {"session_id": 5}}),
        ),
        (
            "initializationOptions is an array",
            json!({"capabilities": {}, "initializationOptions": [1]}),
        ),
        (
            "limits is a string",
            json!({"capabilities": {}, "initializationOptions": {"limits": "x"}}),
        ),
    ];
    for (i, (what, params)) in bad_initialize.into_iter().enumerate() {
        let id = json!(200 + i);
        cases.push(body_case(
            format!("initialize: {what}"),
            &req(id.clone(), "initialize", params),
            code(INVALID_PARAMS, id),
        ));
    }
    cases.push(body_case(
        "initialize: params missing",
        br#"{"jsonrpc":"2.0","id":250,"method":"initialize"}"#,
        code(INVALID_PARAMS, json!(250)),
    ));
    // A session id outside [A-Za-z0-9_-]{1,64} is refused with the session error (-32001).
    cases.push(body_case(
        "initialize: invalid session id",
        &req(
            json!(251),
            "initialize",
            json!({"capabilities": {}, "initializationOptions": {"session_id": "../x"}}),
        ),
        code(-32001, json!(251)),
    ));
    cases
}

/// Invalid JSON bodies: -32700 with id null.
fn parse_error_cases() -> Vec<Case> {
    let valid = String::from_utf8(req(json!(7), "toolhost/listTools", json!({}))).unwrap();
    let mut bodies: Vec<(String, Vec<u8>)> = Vec::new();
    // Truncations of a valid request at many points.
    for cut in
        [1, 2, 3, 5, 8, 10, 12, 15, 20, 25, 30, 35, 40, 45, 50, valid.len() - 2, valid.len() - 1]
    {
        bodies.push((format!("truncated at {cut}"), valid.as_bytes()[..cut].to_vec()));
    }
    for (name, body) in [
        ("trailing garbage", format!("{valid}garbage")),
        ("trailing brace", format!("{valid}}}")),
        ("two objects", format!("{valid}{valid}")),
        ("empty body", String::new()),
        ("whitespace only", "  \r\n\t ".to_owned()),
        ("single quotes", "{'jsonrpc':'2.0','id':1,'method':'x'}".to_owned()),
        ("unquoted keys", "{jsonrpc:\"2.0\",id:1,method:\"x\"}".to_owned()),
        ("trailing comma", r#"{"jsonrpc":"2.0","id":1,"method":"x",}"#.to_owned()),
        ("comment", r#"{"jsonrpc":"2.0", /* c */ "id":1,"method":"x"}"#.to_owned()),
        ("NaN", r#"{"jsonrpc":"2.0","id":NaN,"method":"x"}"#.to_owned()),
        ("Infinity", r#"{"jsonrpc":"2.0","id":Infinity,"method":"x"}"#.to_owned()),
        ("lone surrogate", r#"{"jsonrpc":"2.0","id":1,"method":"\ud800"}"#.to_owned()),
        ("bad escape", r#"{"jsonrpc":"2.0","id":1,"method":"\q"}"#.to_owned()),
        ("unterminated string", r#"{"jsonrpc":"2.0","id":1,"method":"x}"#.to_owned()),
        (
            "raw control character",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\u{1}b\"}".to_owned(),
        ),
        ("bare word", "hello".to_owned()),
        ("lone closing bracket", "]".to_owned()),
        ("number overflowing exponent", "1e999999".to_owned()),
        ("deep arrays 10000", "[".repeat(10_000) + &"]".repeat(10_000)),
        ("deep objects 10000", "{\"a\":".repeat(10_000) + "1" + &"}".repeat(10_000)),
        (
            "deep params 10000",
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"foo","params":{}{}}}"#,
                "[".repeat(10_000),
                "]".repeat(10_000)
            ),
        ),
        ("unclosed deep 10000", "[".repeat(10_000)),
    ] {
        bodies.push((name.to_owned(), body.into_bytes()));
    }
    // Bytes that are not UTF-8.
    bodies.push(("non-UTF-8 bytes".to_owned(), vec![0xff, 0xfe, 0xfd]));
    bodies.push((
        "non-UTF-8 inside a string".to_owned(),
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}".to_vec(),
    ));
    bodies.push((
        "overlong UTF-8 encoding".to_owned(),
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc0\xaf\"}".to_vec(),
    ));
    bodies.push(("UTF-8 BOM".to_owned(), [&b"\xef\xbb\xbf"[..], valid.as_bytes()].concat()));
    bodies.push((
        "UTF-16 body".to_owned(),
        valid.encode_utf16().flat_map(u16::to_le_bytes).collect(),
    ));
    bodies.push(("NUL bytes".to_owned(), vec![0; 16]));
    bodies
        .into_iter()
        .map(|(name, body)| {
            body_case(format!("parse error: {name}"), &body, code(PARSE, Value::Null))
        })
        .collect()
}

/// Cases for an initialized server.
fn initialized_cases() -> Vec<Case> {
    let mut cases = parse_error_cases();
    // Valid JSON that is not a request object.
    for body in ["null", "true", "false", "1", "-1", "1.5", "\"str\"", "\"\""] {
        cases.push(body_case(
            format!("not an object: {body}"),
            body.as_bytes(),
            code(INVALID_REQUEST, Value::Null),
        ));
    }
    // Batches are not supported (LSP has none).
    let one = String::from_utf8(req(json!(1), "toolhost/listTools", json!({}))).unwrap();
    let note = String::from_utf8(notif("foo/bar", json!({}))).unwrap();
    for (name, body) in [
        ("empty", "[]".to_owned()),
        ("one request", format!("[{one}]")),
        ("two requests", format!("[{one},{one}]")),
        ("one notification", format!("[{note}]")),
        ("numbers", "[1,2,3]".to_owned()),
        ("nested", "[[]]".to_owned()),
    ] {
        cases.push(body_case(
            format!("batch array: {name}"),
            body.as_bytes(),
            code(INVALID_REQUEST, Value::Null),
        ));
    }
    // Wrong or missing `jsonrpc` (the request's own id is echoed when usable).
    for (i, version) in [
        json!("1.0"),
        json!("2"),
        json!(2.0),
        json!(2),
        Value::Null,
        json!("2.0 "),
        json!(""),
        json!(["2.0"]),
    ]
    .into_iter()
    .enumerate()
    {
        let id = json!(300 + i);
        let body =
            json!({"jsonrpc": version, "id": id, "method": "toolhost/listTools", "params": {}});
        cases.push(body_case(
            format!("jsonrpc {version}"),
            body.to_string().as_bytes(),
            code(INVALID_REQUEST, id),
        ));
    }
    cases.push(body_case(
        "jsonrpc missing",
        br#"{"id":310,"method":"toolhost/listTools","params":{}}"#,
        code(INVALID_REQUEST, json!(310)),
    ));
    cases.push(body_case(
        "jsonrpc missing (notification)",
        br#"{"method":"foo/bar","params":{}}"#,
        code(INVALID_REQUEST, Value::Null),
    ));
    // Missing or non-string method.
    for (i, method) in [json!(5), Value::Null, json!({}), json!(["x"])].into_iter().enumerate() {
        let id = json!(320 + i);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method});
        cases.push(body_case(
            format!("method {method}"),
            body.to_string().as_bytes(),
            code(INVALID_REQUEST, id),
        ));
    }
    cases.push(body_case(
        "method missing",
        br#"{"jsonrpc":"2.0","id":330}"#,
        code(INVALID_REQUEST, json!(330)),
    ));
    cases.push(body_case("empty object", b"{}", code(INVALID_REQUEST, Value::Null)));
    // Ids of every type on an unknown method: usable ids get -32601 with the same id; the rest
    // are invalid requests answered with id null.
    let usable = [
        json!("abc"),
        json!(""),
        json!("x".repeat(1000)),
        json!(1_000_001),
        json!(0),
        json!(-5),
        json!(i64::MAX),
        json!(i64::MIN),
        Value::Null,
    ];
    for id in usable {
        let label = id.to_string().chars().take(20).collect::<String>();
        cases.push(body_case(
            format!("unknown method, id {label}"),
            &req(id.clone(), "foo/bar", json!({})),
            code(NOT_FOUND, id),
        ));
    }
    let unusable = [
        json!(1.5),
        json!(1e3),
        json!(-0.0),
        json!({"a": 1}),
        json!({}),
        json!([1]),
        json!([]),
        json!(true),
        json!(false),
        json!(u64::MAX),
    ];
    for id in unusable {
        cases.push(body_case(
            format!("id {id}"),
            &req(id, "foo/bar", json!({})),
            code(INVALID_REQUEST, Value::Null),
        ));
    }
    // Ids of every usable type on a real method.
    for id in [json!("lt"), json!(400), json!(-400), json!(0), Value::Null] {
        cases.push(body_case(
            format!("listTools, id {id}"),
            &req(id.clone(), "toolhost/listTools", json!({})),
            Want::Result(id),
        ));
    }
    // Unknown requests: -32601.
    for (i, method) in [
        "foo",
        "foo/bar",
        "toolhost/unknown",
        "toolhost/",
        "$/unknownRequest",
        "textDocument/definition",
        "workspace/symbol",
        "",
        "toolhost/listtools",
        "TOOLHOST/LISTTOOLS",
    ]
    .into_iter()
    .enumerate()
    {
        let id = json!(500 + i);
        let params = if method.starts_with("textDocument/") {
            json!({"textDocument": {"uri": "file:///x"}, "position": {"line": 0, "character": 0}})
        } else if method == "workspace/symbol" {
            json!({"query": "x"})
        } else {
            json!({})
        };
        cases.push(body_case(
            format!("unknown request {method:?}"),
            &req(id.clone(), method, params),
            code(NOT_FOUND, id),
        ));
    }
    cases.push(body_case(
        "unknown request with a 100 KB method name",
        &req(json!(520), &"m".repeat(100_000), json!({})),
        code(NOT_FOUND, json!(520)),
    ));
    // Unknown (or malformed) notifications: ignored, no reply.
    for (method, params) in [
        ("foo/bar", json!({})),
        ("$/unknown", json!({})),
        ("toolhost/unknown", json!({})),
        ("textDocument/didFoo", json!({})),
        ("", json!({})),
        ("textDocument/didOpen", json!(5)),
        ("textDocument/didChange", json!({"textDocument": 1})),
        ("$/cancelRequest", json!({"id": 987_654})),
        ("$/cancelRequest", json!({"id": {"x": 1}})),
        ("$/setTrace", json!({"value": "off"})),
        ("initialized", json!({})),
    ] {
        cases.push(body_case(
            format!("notification {method:?} {params}"),
            &notif(method, params),
            Want::Silent,
        ));
    }
    // Responses to requests the server never sent: ignored.
    for body in [
        r#"{"jsonrpc":"2.0","id":424242,"result":null}"#,
        r#"{"jsonrpc":"2.0","id":"zz","error":{"code":1,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":1}"#,
        r#"{"jsonrpc":"1.0","id":5,"result":1}"#,
    ] {
        cases.push(body_case(format!("stray response {body}"), body.as_bytes(), Want::Silent));
    }
    // Wrongly shaped params: -32602.
    let bad_params = [
        ("toolhost/callTool", json!([])),
        ("toolhost/callTool", json!(5)),
        ("toolhost/callTool", json!("read")),
        ("toolhost/callTool", json!(true)),
        ("toolhost/callTool", Value::Null),
        ("toolhost/callTool", json!({})),
        ("toolhost/callTool", json!({"name": 5})),
        ("toolhost/callTool", json!({"name": null})),
        ("toolhost/callTool", json!({"name": ["read"]})),
        ("toolhost/callTool", json!({"name": "read", "callId": 5})),
        ("toolhost/callTool", json!({"arguments": {}})),
        ("toolhost/listSessions", json!({"all": "yes"})),
        ("toolhost/replaySession", json!({})),
        ("toolhost/replaySession", json!({"sessionId": 5})),
        ("toolhost/replaySession", json!({"sessionId": "../escape"})),
        ("workspace/executeCommand", json!({"command": "nope"})),
        ("workspace/executeCommand", json!({"command": "toolhost.callTool", "arguments": [5]})),
        ("workspace/executeCommand", json!({"command": "toolhost.callTool"})),
        ("workspace/executeCommand", json!(5)),
        ("workspace/executeCommand", json!({})),
    ];
    for (i, (method, params)) in bad_params.into_iter().enumerate() {
        let id = json!(600 + i);
        cases.push(body_case(
            format!("{method} params {params}"),
            &req(id.clone(), method, params),
            code(INVALID_PARAMS, id),
        ));
    }
    // A second initialize is an invalid request.
    cases.push(body_case(
        "initialize twice",
        &req(json!(700), "initialize", json!({"capabilities": {}})),
        code(INVALID_REQUEST, json!(700)),
    ));
    // Unusual but valid framing: answered normally.
    let body = req(json!(800), "toolhost/listTools", json!({}));
    let with_headers = |headers: &str| {
        let mut bytes = headers.replace("{len}", &body.len().to_string()).into_bytes();
        bytes.extend_from_slice(&body);
        bytes
    };
    for (name, headers) in [
        ("lowercase header name", "content-length: {len}\r\n\r\n"),
        ("upper-case header name", "CONTENT-LENGTH: {len}\r\n\r\n"),
        (
            "Content-Type utf-8",
            "Content-Length: {len}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
        ),
        (
            "Content-Type first",
            "Content-Type: application/vscode-jsonrpc; charset=utf8\r\nContent-Length: {len}\r\n\r\n",
        ),
        ("unknown extra header", "X-Foo: bar\r\nContent-Length: {len}\r\n\r\n"),
        ("LF line endings", "Content-Length: {len}\n\n"),
        ("spaces around the value", "Content-Length:    {len}   \r\n\r\n"),
        ("leading zeros", "Content-Length: 000{len}\r\n\r\n"),
        ("identical duplicate", "Content-Length: {len}\r\nContent-Length: {len}\r\n\r\n"),
    ] {
        cases.push(case(
            format!("framing: {name}"),
            with_headers(headers),
            Want::Result(json!(800)),
        ));
    }
    let mut padded = body.clone();
    padded.extend_from_slice(b"\r\n  \n");
    cases.push(body_case("trailing whitespace in the body", &padded, Want::Result(json!(800))));
    let nested = format!(
        r#"{{"jsonrpc":"2.0","id":801,"method":"toolhost/listTools","params":{{"x":{}{}}}}}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    cases.push(body_case(
        "nesting depth 100 in params",
        nested.as_bytes(),
        Want::Result(json!(801)),
    ));
    let mut two = frame(&req(json!(802), "foo/a", json!({})));
    two.extend(frame(&req(json!(803), "toolhost/listTools", json!({}))));
    cases.push(case("two frames in one write", two, Want::Result(json!(803))));
    cases
}

/// Cases after `shutdown`: requests are invalid, parse errors still -32700.
fn after_shutdown_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for (i, (method, params)) in [
        ("toolhost/listTools", json!({})),
        ("toolhost/callTool", json!({"name": "read", "arguments": {"file_path": "a.txt"}})),
        ("toolhost/listSessions", json!({})),
        ("shutdown", Value::Null),
        ("initialize", json!({"capabilities": {}})),
        (
            "workspace/executeCommand",
            json!({"command": "toolhost.callTool", "arguments": ["read", {}]}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let id = json!(900 + i);
        cases.push(body_case(
            format!("after shutdown: {method}"),
            &req(id.clone(), method, params),
            code(INVALID_REQUEST, id),
        ));
    }
    cases.push(body_case("after shutdown: invalid JSON", b"{", code(PARSE, Value::Null)));
    cases.push(body_case("after shutdown: batch", b"[]", code(INVALID_REQUEST, Value::Null)));
    cases.push(body_case(
        "after shutdown: notification",
        &notif("textDocument/didClose", json!({"textDocument": {"uri": "file:///x"}})),
        Want::Silent,
    ));
    cases
}

#[test]
fn malformed_bodies_get_exact_codes_and_the_connection_survives() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let mut report = Report::default();

    // One connection: before initialize, initialized, after shutdown, then a clean exit.
    let mut client = env.spawn();
    run_batch(&mut client, &before_initialize_cases(), Some(NOT_INITIALIZED), &mut report);
    let init = client.initialize(&env.root, json!({}), json!({}));
    report
        .check("initialize after the pre-initialize corpus", init.is_ok(), || format!("{init:?}"));
    run_batch(&mut client, &initialized_cases(), None, &mut report);

    // A duplicate id while the first request is still running: -32600 for the duplicate.
    client.seen.clear();
    let id = json!(1_000_001);
    client
        .write_raw(&server::raw_request(
            id.clone(),
            "toolhost/callTool",
            json!({"name": "test_sleep", "arguments": {"seconds": 30}, "callId": "dup"}),
        ))
        .unwrap();
    client.wait_for(Duration::from_secs(5), |m| m["params"]["callId"] == "dup").unwrap();
    client.write_raw(&server::raw_request(id.clone(), "toolhost/listTools", json!({}))).unwrap();
    let dup = wait_response(&mut client, &id, Duration::from_secs(5));
    report.check(
        "duplicate in-flight id",
        dup.as_ref().is_some_and(|r| r["error"]["code"] == INVALID_REQUEST),
        || format!("{dup:?}"),
    );
    client.seen.clear();
    client.notify("$/cancelRequest", json!({"id": id})).unwrap();
    let cancelled = wait_response(&mut client, &id, Duration::from_secs(5));
    report.check(
        "cancel after a duplicate id",
        cancelled.as_ref().is_some_and(|r| r["error"]["code"] == -32800),
        || format!("{cancelled:?}"),
    );

    let shutdown = client.request_raw("shutdown", Value::Null).unwrap();
    report.check("shutdown", shutdown.get("result").is_some(), || shutdown.to_string());
    run_batch(&mut client, &after_shutdown_cases(), Some(INVALID_REQUEST), &mut report);
    client.notify("exit", Value::Null).unwrap();
    let status = client.wait(Duration::from_secs(5)).unwrap();
    report.check("exit after shutdown ⇒ 0", status.and_then(|s| s.code()) == Some(0), || {
        format!("{status:?}")
    });

    // A 4 KiB cap: oversized bodies are drained and answered -32600 with id null.
    let mut capped = env.spawn_with(&["--max-message-bytes", "4096"], server::echo_handler());
    capped.initialize(&env.root, json!({}), json!({})).unwrap();
    let padded = |len: usize, id: i64| {
        let head = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"toolhost/listTools","params":{{"pad":""#
        );
        let tail = r#""}}"#;
        let mut body = head.into_bytes();
        body.resize(len - tail.len(), b'x');
        body.extend_from_slice(tail.as_bytes());
        assert_eq!(body.len(), len);
        body
    };
    let oversize = vec![
        body_case(
            "oversized 10,000-byte request",
            &padded(10_000, 1),
            code(INVALID_REQUEST, Value::Null),
        ),
        body_case("oversized by one byte", &padded(4097, 2), code(INVALID_REQUEST, Value::Null)),
        body_case("exactly at the cap", &padded(4096, 3), Want::Result(json!(3))),
        body_case(
            "oversized 1 MiB request",
            &padded(1 << 20, 4),
            code(INVALID_REQUEST, Value::Null),
        ),
        body_case("oversized garbage", &[0xffu8; 50_000], code(INVALID_REQUEST, Value::Null)),
        body_case(
            "oversized deep nesting",
            "[".repeat(10_000).as_bytes(),
            code(INVALID_REQUEST, Value::Null),
        ),
    ];
    run_batch(&mut capped, &oversize, None, &mut report);
    let status = capped.shutdown().unwrap();
    report.check("capped connection exits 0", status.and_then(|s| s.code()) == Some(0), || {
        format!("{status:?}")
    });

    report.finish("body-level corpus", 200);
}

#[test]
fn a_one_gib_body_is_drained_without_buffering() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    assert!(client.request("toolhost/listTools", json!({})).is_ok());
    let before = proc_number(client.pid(), "status", "VmHWM:");
    let total: usize = 1 << 30;
    let start = Instant::now();
    client.write_raw(format!("Content-Length: {total}\r\n\r\n").as_bytes()).unwrap();
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..(total / chunk.len()) {
        client.write_raw(&chunk).unwrap();
    }
    let reply = wait_response(&mut client, &Value::Null, Duration::from_secs(30)).unwrap();
    assert_eq!(reply["error"]["code"], INVALID_REQUEST, "{reply}");
    let drained = start.elapsed();
    let next = client.request("toolhost/listTools", json!({}));
    assert!(next.is_ok(), "{next:?}");
    let after = proc_number(client.pid(), "status", "VmHWM:");
    println!(
        "1 GiB body drained in {:.2} s; peak RSS {before} KiB → {after} KiB (+{} KiB)",
        drained.as_secs_f64(),
        after.saturating_sub(before)
    );
    assert!(after.saturating_sub(before) < 8 * 1024, "peak RSS rose by more than 8 MiB");
    client.shutdown().unwrap();
}

/// A header case: the bytes to send, whether stdin is closed afterwards, and what the logged
/// reason must contain.
struct HeaderCase {
    name: &'static str,
    bytes: Vec<u8>,
    close: bool,
    reason: &'static str,
}

fn header_cases() -> Vec<HeaderCase> {
    let hc = |name, bytes: &[u8], close, reason| HeaderCase {
        name,
        bytes: bytes.to_vec(),
        close,
        reason,
    };
    let mut long = b"X-Pad: ".to_vec();
    long.extend(vec![b'a'; 9000]);
    long.extend_from_slice(b"\r\nContent-Length: 2\r\n\r\n{}");
    let mut many: Vec<u8> = (0..20).flat_map(|i| format!("X-H{i}: v\r\n").into_bytes()).collect();
    many.extend_from_slice(b"Content-Length: 2\r\n\r\n{}");
    let initialize =
        String::from_utf8(frame(&req(json!(1), "initialize", json!({"capabilities": {}}))))
            .unwrap();
    let unusable = "unusable Content-Length";
    vec![
        hc(
            "missing Content-Length",
            b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}",
            false,
            "missing Content-Length",
        ),
        hc("empty header section", b"\r\n{}", false, "missing Content-Length"),
        hc("non-numeric Content-Length", b"Content-Length: abc\r\n\r\n{}", false, unusable),
        hc("empty Content-Length", b"Content-Length: \r\n\r\n{}", false, unusable),
        hc("negative Content-Length", b"Content-Length: -1\r\n\r\n{}", false, unusable),
        hc("fractional Content-Length", b"Content-Length: 2.5\r\n\r\n{}", false, unusable),
        hc("hex Content-Length", b"Content-Length: 0x10\r\n\r\n{}", false, unusable),
        hc(
            "overflowing Content-Length",
            b"Content-Length: 99999999999999999999999\r\n\r\n{}",
            false,
            unusable,
        ),
        hc(
            "conflicting duplicate Content-Length",
            b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
            false,
            "conflicting Content-Length",
        ),
        hc("header line over 8 KiB", &long, false, "longer than 8192 bytes"),
        hc("more than 16 header lines", &many, false, "more than 16 header lines"),
        hc("garbage line", b"garbage\r\n\r\n", false, "malformed header line"),
        hc(
            "garbage before a frame",
            b"hello world\r\nContent-Length: 2\r\n\r\n{}",
            false,
            "malformed header line",
        ),
        hc(
            "header not UTF-8",
            b"Content-Length: 2\r\nX-Bin: \xff\xfe\r\n\r\n{}",
            false,
            "not UTF-8",
        ),
        hc("input ends inside a header", b"Content-Len", true, "ended inside a header"),
        hc(
            "input ends after a header line",
            b"Content-Length: 10\r\n",
            true,
            "ended inside a header",
        ),
        hc(
            "input ends inside a body",
            b"Content-Length: 100\r\n\r\n{\"jsonrpc\"",
            true,
            "ended inside a 100-byte body",
        ),
        hc(
            "garbage after a valid initialize",
            format!("{initialize}garbage\r\n\r\n").as_bytes(),
            false,
            "malformed header line",
        ),
    ]
}

#[test]
fn unusable_headers_close_the_connection_with_exit_code_1() {
    let env = Env::new();
    let binary = server::binary();
    let cases = header_cases();
    let mut failures = Vec::new();
    for case in &cases {
        let mut child = Command::new(&binary)
            .arg("serve")
            .current_dir(&env.root)
            .envs(env.env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(&case.bytes);
        let _ = stdin.flush();
        // Unless the case is about the end of input, stdin stays open: the server must give up
        // on its own.
        let open_stdin = if case.close {
            drop(stdin);
            None
        } else {
            Some(stdin)
        };
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if start.elapsed() > Duration::from_secs(5) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let elapsed = ms(start);
        drop(open_stdin);
        if status.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let mut stderr = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
        let code = status.and_then(|s| s.code());
        let logged = stderr.contains("closing the connection") && stderr.contains(case.reason);
        println!(
            "header case {:?}: exit {code:?} after {elapsed:.0} ms; {}",
            case.name,
            stderr.trim()
        );
        if code != Some(1) || !logged {
            failures.push(format!("{}: exit {code:?}, stderr {stderr:?}", case.name));
        }
    }
    println!(
        "header-level corpus: {} passed, {} failed",
        cases.len() - failures.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}
