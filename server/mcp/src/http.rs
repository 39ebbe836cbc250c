//! MCP over Streamable HTTP: rmcp's `StreamableHttpService` (sessions with `Mcp-Session-Id`,
//! `DELETE`, 404 for an unknown session, SSE for progress and notifications, the 2026-07-28
//! stateless requests) served by hyper on a loopback address, with what toolhost adds in front:
//!
//! - **a bearer token**, random, created at start and written to a file only its owner can read
//!   ([`token_path`]); every request without `Authorization: Bearer <token>` is `401`, unless
//!   `[mcp] http_auth = false` in the user's configuration;
//! - **DNS-rebinding protection**: only loopback `Host`s and `Origin`s are accepted (`403`),
//!   plus what `[mcp] http_allowed_hosts` / `http_allowed_origins` add;
//! - **bounded bodies**: a request body over the line cap (`[mcp] max_line_bytes`) is `413`
//!   before it is held whole;
//! - **the same protocol edges as stdio** ([`crate::edges`]);
//! - **one label per session**: each HTTP session's calls are made as `<clientInfo.name> #<n>`,
//!   so several agents of the same kind are told apart on their cards.

use crate::backend::Backend;
use crate::config::McpConfig;
use crate::edges::{Screened, screen};
use crate::handler::{McpServer, SessionNumbers};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The path the endpoint is served at.
pub const ENDPOINT: &str = "/mcp";

/// Why the HTTP server could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("cannot write the token file {path}: {source}")]
    Token { path: PathBuf, source: std::io::Error },
    #[error("cannot watch for SIGTERM: {0}")]
    Signal(std::io::Error),
}

/// A running HTTP endpoint; dropping it does not stop it, [`HttpServer::stop`] does.
pub struct HttpServer {
    /// Where it listens (the port chosen when 0 was asked).
    pub addr: SocketAddr,
    /// The token file, when a token is required.
    pub token_file: Option<PathBuf>,
    cancel: CancellationToken,
}

impl HttpServer {
    /// The endpoint's URL.
    pub fn url(&self) -> String {
        format!("http://{}{ENDPOINT}", self.addr)
    }

    /// Stops accepting connections and ends every session.
    pub fn stop(&self) {
        self.cancel.cancel();
    }

    /// Resolves once the server stopped.
    pub async fn stopped(&self) {
        self.cancel.cancelled().await;
    }
}

/// Where the token for a server on `port` is written: `$XDG_RUNTIME_DIR/toolhost/`, else
/// `$XDG_STATE_HOME/toolhost/`, else `~/.local/state/toolhost/`, as `mcp-http-<port>.token`.
pub fn token_path(port: u16) -> PathBuf {
    let env = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty()).map(PathBuf::from);
    let dir = env("XDG_RUNTIME_DIR")
        .or_else(|| env("XDG_STATE_HOME"))
        .or_else(|| env("HOME").map(|home| home.join(".local/state")))
        .unwrap_or_else(std::env::temp_dir)
        .join("toolhost");
    dir.join(format!("mcp-http-{port}.token"))
}

/// A new random token, 256 bits as hex.
fn new_token() -> String {
    use rand::Rng;
    let bytes: [u8; 32] = rand::rng().random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `token` to `path`, readable and writable by its owner only (the folder likewise).
fn write_token(path: &Path, token: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // A file left by an earlier run keeps its mode on open: set it again.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(token.as_bytes())?;
    file.sync_all()
}

/// Compares without leaking where two tokens differ.
fn same_token(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// Every request's way in: token, body cap and edges, then rmcp.
struct Front {
    service: StreamableHttpService<McpServer, LocalSessionManager>,
    token: Option<String>,
    max_body: usize,
    /// `Host` names accepted (loopback and `[mcp] http_allowed_hosts`).
    hosts: Vec<String>,
    /// `[mcp] http_allowed_origins` (loopback origins are always accepted).
    origins: Vec<String>,
}

/// The host of an authority (`[::1]:8080` → `::1`, `localhost:3000` → `localhost`).
fn host_of(authority: &str) -> String {
    let host = match authority.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => match authority.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
            _ => authority,
        },
    };
    host.to_ascii_lowercase()
}

const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// Whether `origin` (`scheme://authority`) may call: a loopback one, or a configured one
/// (`:*` at the end of an entry: any port).
fn origin_allowed(origin: &str, configured: &[String]) -> bool {
    let origin = origin.to_ascii_lowercase();
    let authority = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    if authority.is_some_and(|a| LOOPBACK.contains(&host_of(a).as_str())) {
        return true;
    }
    configured.iter().map(|c| c.to_ascii_lowercase()).any(|c| match c.strip_suffix('*') {
        Some(prefix) if prefix.ends_with(':') => {
            origin.strip_prefix(prefix).is_some_and(|port| port.bytes().all(|b| b.is_ascii_digit()))
        }
        _ => c == origin,
    })
}

type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *response.status_mut() = status;
    response
}

fn json(value: &Value) -> Response<Body> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    if let Ok(kind) = http::HeaderValue::from_str("application/json") {
        response.headers_mut().insert(http::header::CONTENT_TYPE, kind);
    }
    response
}

impl Front {
    fn authorized(&self, request: &Request<Incoming>) -> bool {
        let Some(token) = &self.token else { return true };
        request
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
            .is_some_and(|given| same_token(given, token.as_bytes()))
    }

    /// DNS-rebinding protection, before anything else answers: a `Host` that is not loopback
    /// (or configured), or an `Origin` that is not, is `403`. rmcp checks the same again.
    fn rebinding_refusal(&self, request: &Request<Incoming>) -> Option<Response<Body>> {
        let headers = request.headers();
        let host = headers.get(http::header::HOST).and_then(|h| h.to_str().ok());
        let host_ok = host.is_some_and(|authority| {
            let name = host_of(authority);
            self.hosts
                .iter()
                .any(|h| h.eq_ignore_ascii_case(&name) || h.eq_ignore_ascii_case(authority))
        });
        if !host_ok {
            return Some(plain(StatusCode::FORBIDDEN, "Forbidden: Host is not allowed"));
        }
        let origin = headers.get(http::header::ORIGIN).map(|o| o.to_str().unwrap_or_default());
        if origin.is_some_and(|origin| !origin_allowed(origin, &self.origins)) {
            return Some(plain(StatusCode::FORBIDDEN, "Forbidden: Origin is not allowed"));
        }
        None
    }

    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        if let Some(refusal) = self.rebinding_refusal(&request) {
            return refusal;
        }
        if !self.authorized(&request) {
            let mut response = plain(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send `Authorization: Bearer <token>` with the token from the file \
                 toolhost printed at start",
            );
            if let Ok(value) = http::HeaderValue::from_str("Bearer realm=\"toolhost\"") {
                response.headers_mut().insert(http::header::WWW_AUTHENTICATE, value);
            }
            return response;
        }
        let (mut parts, body) = request.into_parts();
        let bytes = match Limited::new(body, self.max_body).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(err) if err.is::<http_body_util::LengthLimitError>() => {
                return plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("request body exceeds the {}-byte limit", self.max_body),
                );
            }
            Err(_) => return plain(StatusCode::BAD_REQUEST, "the request body could not be read"),
        };
        let session = parts.headers.contains_key("mcp-session-id");
        let bytes = if parts.method == http::Method::POST {
            match self.screened(bytes, session) {
                Ok(bytes) => bytes,
                Err(answer) => return json(&answer),
            }
        } else {
            bytes
        };
        parts.headers.insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(bytes.len()));
        self.service.handle(Request::from_parts(parts, Full::new(bytes))).await
    }

    /// The body as rmcp gets it, or toolhost's own JSON-RPC answer ([`crate::edges`]). A body that is
    /// not one request goes on unchanged: rmcp answers it.
    fn screened(&self, bytes: Bytes, session: bool) -> Result<Bytes, Value> {
        let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else { return Ok(bytes) };
        let (Some(method), Some(id)) = (
            value.get("method").and_then(Value::as_str).map(str::to_owned),
            value.get("id").cloned(),
        ) else {
            return Ok(bytes);
        };
        // A session's ping is rmcp's (it knows the session); a stateless one is answered here.
        if method == "ping" && session {
            return Ok(bytes);
        }
        match screen(&method, &mut value) {
            Screened::Forward => Ok(serde_json::to_vec(&value).map(Bytes::from).unwrap_or(bytes)),
            Screened::Answer(result) => {
                Err(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}))
            }
            Screened::Refuse(error) => {
                Err(serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error}))
            }
        }
    }
}

/// The `Host`s a local server accepts.
fn allowed_hosts(config: &McpConfig) -> Vec<String> {
    let mut hosts: Vec<String> = LOOPBACK.iter().map(|h| (*h).to_owned()).collect();
    hosts.extend(config.http_allowed_hosts.iter().cloned());
    hosts
}

/// rmcp's settings: the same `Host`s and `Origin`s, the same body cap.
fn loopback_config(config: &McpConfig, max_body: usize) -> StreamableHttpServerConfig {
    let hosts = allowed_hosts(config);
    let mut origins: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
        .into_iter()
        .flat_map(|host| [format!("http://{host}:*"), format!("https://{host}:*")])
        .collect();
    origins.extend(config.http_allowed_origins.iter().cloned());
    StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(max_body)
}

/// Serves MCP over HTTP on `addr` (port 0: any free port) until [`HttpServer::stop`]; each
/// session gets a server over `backend`.
pub async fn start(
    backend: Arc<dyn Backend>,
    config: McpConfig,
    addr: SocketAddr,
) -> Result<HttpServer, HttpError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| HttpError::Bind { addr, source })?;
    let addr = listener.local_addr().map_err(|source| HttpError::Bind { addr, source })?;
    let (token, token_file) = if config.http_auth {
        let token = new_token();
        let path = token_path(addr.port());
        write_token(&path, &token)
            .map_err(|source| HttpError::Token { path: path.clone(), source })?;
        (Some(token), Some(path))
    } else {
        (None, None)
    };
    let cancel = CancellationToken::new();
    let max_body = config.max_line_bytes;
    let numbers = Arc::new(SessionNumbers::default());
    let config_for_front = config.clone();
    let http_config = loopback_config(&config, max_body).with_cancellation_token(cancel.clone());
    let service = StreamableHttpService::new(
        move || {
            Ok(McpServer::new(Arc::clone(&backend), config.clone())
                .numbering_sessions(Arc::clone(&numbers)))
        },
        Arc::new(LocalSessionManager::default()),
        http_config,
    );
    let front = Arc::new(Front {
        service,
        token,
        max_body,
        hosts: allowed_hosts(&config_for_front),
        origins: config_for_front.http_allowed_origins.clone(),
    });
    let stop = cancel.clone();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                () = stop.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else { continue };
            let front = Arc::clone(&front);
            let stop = stop.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let front = Arc::clone(&front);
                    async move { Ok::<_, std::convert::Infallible>(front.handle(request).await) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                tokio::pin!(connection);
                tokio::select! {
                    _ = connection.as_mut() => return,
                    () = stop.cancelled() => {}
                }
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            });
        }
    });
    Ok(HttpServer { addr, token_file, cancel })
}

/// `toolhost mcp --http`: serves until SIGINT or SIGTERM, saying on stderr where it listens and
/// where the token is.
pub async fn serve_until_signal(
    backend: Arc<dyn Backend>,
    config: McpConfig,
    addr: SocketAddr,
) -> Result<(), HttpError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).map_err(HttpError::Signal)?;
    let server = start(backend, config, addr).await?;
    eprintln!("toolhost: MCP over HTTP at {}", server.url());
    match &server.token_file {
        Some(path) => eprintln!("toolhost: bearer token in {}", path.display()),
        None => eprintln!("toolhost: no token required ([mcp] http_auth = false)"),
    }
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    server.stop();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_origins_and_hosts_unless_configured() {
        assert_eq!(host_of("[::1]:8080"), "::1");
        assert_eq!(host_of("LocalHost:3000"), "localhost");
        assert_eq!(host_of("evil.example"), "evil.example");
        assert!(origin_allowed("http://localhost:3000", &[]));
        assert!(origin_allowed("http://[::1]", &[]));
        assert!(!origin_allowed("https://evil.example", &[]));
        assert!(!origin_allowed("null", &[]));
        assert!(!origin_allowed("http://localhost.evil.example", &[]));
        let configured = ["https://app.example:*".to_owned(), "null".to_owned()];
        assert!(origin_allowed("https://app.example:8443", &configured));
        assert!(origin_allowed("null", &configured));
        assert!(!origin_allowed("https://app.example.evil:1", &configured));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token(b"abc", b"abc"));
        assert!(!same_token(b"abd", b"abc"));
        assert!(!same_token(b"ab", b"abc"));
        assert_eq!(new_token().len(), 64);
    }

    #[test]
    fn the_token_file_is_the_owners_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("toolhost-token-{}", std::process::id()));
        let path = dir.join("t.token");
        write_token(&path, "secret").expect("written");
        let mode = std::fs::metadata(&path).expect("metadata").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "secret");
        let _ = std::fs::remove_dir_all(dir);
    }
}
