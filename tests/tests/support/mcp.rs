//! A line-based MCP client for the `mcp_*` tests (included with `#[path = "support/mcp.rs"]`,
//! after `support/server.rs`): starts `toolhost mcp` in an [`Env`]'s workspace and speaks
//! newline-delimited JSON-RPC to it, keeping every message it did not wait for.
#![allow(dead_code)]

use super::server::{Env, binary};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// The protocol revision the tests initialize with unless they say otherwise.
pub const PROTOCOL: &str = "2025-11-25";

pub struct Mcp {
    pub child: Child,
    stdin: Option<ChildStdin>,
    incoming: Receiver<Value>,
    /// Messages received and not yet consumed by a wait (notifications, other responses).
    pub seen: Vec<Value>,
    next_id: i64,
    pub timeout: Duration,
}

impl Mcp {
    /// Starts `toolhost mcp <args>` in the workspace of `env`.
    pub fn spawn(env: &Env, args: &[&str]) -> Mcp {
        let mut command = Command::new(binary());
        command
            .arg("mcp")
            .args(args)
            .current_dir(&env.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (key, value) in env.env() {
            command.env(key, value);
        }
        Mcp::start(command)
    }

    /// Starts an arbitrary command that speaks MCP on stdio.
    pub fn start(mut command: Command) -> Mcp {
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, incoming) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value = serde_json::from_str::<Value>(&line)
                    .unwrap_or_else(|_| json!({"unparsable": line}));
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Mcp {
            child,
            stdin,
            incoming,
            seen: Vec::new(),
            next_id: 1000,
            timeout: Duration::from_secs(20),
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.send_raw(&line);
    }

    /// The pipe to the server's stdin, for a test that writes from another thread.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin is open")
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next message, or `None` after `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Option<Value> {
        self.incoming.recv_timeout(timeout).ok()
    }

    /// The first message (already seen or arriving within `timeout`) matching `pred`, removed.
    pub fn wait_for(&mut self, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        if let Some(at) = self.seen.iter().position(&pred) {
            return Some(self.seen.remove(at));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            let message = self.next(left)?;
            if pred(&message) {
                return Some(message);
            }
            self.seen.push(message);
        }
    }

    /// The response to request `id`.
    pub fn response(&mut self, id: &Value) -> Value {
        let timeout = self.timeout;
        let id = id.clone();
        self.wait_for(timeout, |m| m.get("id") == Some(&id) && m.get("method").is_none())
            .unwrap_or_else(|| panic!("no response to request {id} within {timeout:?}"))
    }

    /// Sends a request and returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and waits for its full response (`result` or `error`).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(&id)
    }

    /// The `result` of a request that must succeed.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// `initialize` as `client` at `protocol`, then `notifications/initialized`.
    pub fn initialize_as(&mut self, client: &str, protocol: &str) -> Value {
        let result = self.ok(
            "initialize",
            json!({
                "protocolVersion": protocol,
                "capabilities": {},
                "clientInfo": {"name": client, "version": "1.0.0"}
            }),
        );
        self.notify("notifications/initialized", json!({}));
        result
    }

    pub fn initialize(&mut self, client: &str) -> Value {
        self.initialize_as(client, PROTOCOL)
    }

    /// `tools/call` and its `result` (a JSON-RPC error panics).
    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.ok("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// The tools, from `tools/list`.
    pub fn tools(&mut self) -> Vec<Value> {
        self.ok("tools/list", json!({}))["tools"].as_array().unwrap().clone()
    }

    /// Waits for the process to end (after stdin closed).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        self.stdin = None;
        if self.wait_exit(Duration::from_secs(5)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The text of a tool result's first content block.
pub fn text_of(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

/// The error code toolhost puts in a failed result's `_meta`.
pub fn error_code_of(result: &Value) -> Option<String> {
    result["_meta"]["toolhost/error"]["code"].as_str().map(str::to_owned)
}
