//! A tiny HTTP/1.1 server on 127.0.0.1 for the web tests (included with `#[path]`): one handler per path, every accepted
//! connection counted (the SSRF matrix asserts a denied server saw none), responses written
//! whole or dribbled (a slow-loris body). Plus a table resolver and helpers to call the tools.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolhost_contract::{Capabilities, ToolContext};
use toolhost_tools_web::{AllowEntry, Lookup, WebConfig};

/// A request as the handler sees it.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

/// What to answer.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Write the body this many bytes at a time with this pause in between.
    pub dribble: Option<(usize, Duration)>,
    /// Send no `Content-Length` (the body ends when the connection closes).
    pub omit_length: bool,
}

impl Response {
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Response {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
            dribble: None,
            omit_length: false,
        }
    }

    pub fn redirect(status: u16, location: &str) -> Self {
        Response {
            status,
            headers: vec![("Location".into(), location.into())],
            body: Vec::new(),
            dribble: None,
            omit_length: false,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

type Handler = Arc<dyn Fn(&Request) -> Response + Send + Sync>;

/// A running server; dropped at the end of the test's runtime.
pub struct Server {
    pub addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    pub requests: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    pub async fn start(handler: impl Fn(&Request) -> Response + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let (count, log) = (Arc::clone(&connections), Arc::clone(&requests));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let (handler, log) = (Arc::clone(&handler), Arc::clone(&log));
                tokio::spawn(serve(stream, handler, log));
            }
        });
        Server { addr, connections, requests }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.addr.port())
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    pub fn allow(&self) -> AllowEntry {
        AllowEntry::Addr(self.addr.ip(), self.addr.port())
    }
}

async fn serve(mut stream: tokio::net::TcpStream, handler: Handler, log: Arc<Mutex<Vec<Request>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_owned();
    let path = first.next().unwrap_or("").to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    let request = Request { method, path, headers, body };
    let response = handler(&request);
    log.lock().expect("log").push(request);
    let mut out = format!("HTTP/1.1 {} X\r\nConnection: close\r\n", response.status);
    for (name, value) in &response.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    if !response.omit_length {
        out.push_str(&format!("Content-Length: {}\r\n", response.body.len()));
    }
    out.push_str("\r\n");
    if stream.write_all(out.as_bytes()).await.is_err() {
        return;
    }
    match response.dribble {
        None => {
            let _ = stream.write_all(&response.body).await;
        }
        Some((size, pause)) => {
            for piece in response.body.chunks(size.max(1)) {
                if stream.write_all(piece).await.is_err() || stream.flush().await.is_err() {
                    return;
                }
                tokio::time::sleep(pause).await;
            }
        }
    }
    let _ = stream.shutdown().await;
}

/// Answers names from a table; anything else does not resolve.
#[derive(Default)]
pub struct TableLookup(pub HashMap<String, Vec<IpAddr>>);

impl TableLookup {
    pub fn with(mut self, name: &str, ips: &[&str]) -> Self {
        let ips = ips.iter().map(|ip| ip.parse().expect("ip")).collect();
        self.0.insert(name.to_owned(), ips);
        self
    }
}

impl Lookup for TableLookup {
    fn lookup(
        &self,
        host: &str,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
        let answer = self.0.get(host.trim_end_matches('.').to_ascii_lowercase().as_str()).cloned();
        Box::pin(async move {
            answer.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such name"))
        })
    }
}

/// A config with these targets allowed.
pub fn config(allow: &[AllowEntry]) -> WebConfig {
    WebConfig { allow: allow.to_vec(), ..WebConfig::default() }
}

/// A context with the given capabilities.
pub fn context(capabilities: Capabilities) -> ToolContext {
    ToolContext::detached("call-1", Arc::new(capabilities))
}
