//! Reads what the typed MCP model drops: a tool's `execution.taskSupport`. A stdio server's
//! output passes through [`ListingTap`] unchanged on its way to the MCP client; lines that
//! mention `taskSupport` are parsed, and every tool of a `tools/list` answer is recorded as
//! needing task-based execution or not. Servers reached over HTTP are not tapped: a tool there
//! that requires tasks fails with the server's own error when called.

use serde_json::Value;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// Raw tool name → whether its listing said `taskSupport: "required"`.
pub(crate) type TaskRequired = Arc<Mutex<HashMap<String, bool>>>;

/// Lines longer than this are passed through unexamined (a listing is far smaller).
const MAX_LINE: usize = 16 << 20;
const NEEDLE: &[u8] = b"\"taskSupport\"";

pub(crate) struct ListingTap<R> {
    inner: R,
    line: Vec<u8>,
    overflow: bool,
    required: TaskRequired,
}

impl<R> ListingTap<R> {
    pub(crate) fn new(inner: R, required: TaskRequired) -> Self {
        ListingTap { inner, line: Vec::new(), overflow: false, required }
    }

    fn scan(&mut self, mut bytes: &[u8]) {
        while let Some(end) = bytes.iter().position(|b| *b == b'\n') {
            self.push(&bytes[..end]);
            self.finish_line();
            bytes = &bytes[end + 1..];
        }
        self.push(bytes);
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.overflow {
            return;
        }
        if self.line.len() + bytes.len() > MAX_LINE {
            self.overflow = true;
            self.line = Vec::new();
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    fn finish_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        let overflow = std::mem::replace(&mut self.overflow, false);
        if overflow || !line.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
            return;
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else { return };
        let Some(tools) = message.pointer("/result/tools").and_then(Value::as_array) else {
            return;
        };
        if let Ok(mut required) = self.required.lock() {
            for tool in tools {
                if let Some(name) = tool.get("name").and_then(Value::as_str) {
                    let task = tool.pointer("/execution/taskSupport").and_then(Value::as_str);
                    required.insert(name.to_owned(), task == Some("required"));
                }
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for ListingTap<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let filled = buf.filled()[before..].to_vec();
            this.scan(&filled);
        }
        polled
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn listings_split_across_reads_are_recorded_and_bytes_pass_unchanged() {
        let listing = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"slow","execution":{"taskSupport":"required"}},{"name":"fast","execution":{"taskSupport":"optional"}},{"name":"plain"}]}}"#;
        let input = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"x\"}}\n{listing}\n");
        let required = TaskRequired::default();
        // A reader that hands out 7 bytes at a time splits every line.
        let (mut writer, reader) = tokio::io::duplex(7);
        let bytes = input.clone().into_bytes();
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            writer.write_all(&bytes).await.unwrap();
        });
        let mut tap = ListingTap::new(reader, Arc::clone(&required));
        let mut out = String::new();
        tap.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, input);
        let required = required.lock().unwrap();
        assert_eq!(required.get("slow"), Some(&true));
        assert_eq!(required.get("fast"), Some(&false));
        assert_eq!(required.get("plain"), Some(&false));
    }
}
