//! The world protocol over a websocket on this machine's loopback, for a world that is already
//! running (started by hand, by a service manager, in a VM with a forwarded port) rather than
//! started over ssh or by a container engine.
//!
//! [`listen`] serves a root on `127.0.0.1:<port>` (loopback only): a fresh random token is written
//! to a file only its owner can read, and a connection is accepted only when its upgrade request
//! carries `Authorization: Bearer <token>` and no `Origin` (a web page may not reach it). Each
//! connection is a session of its own, exactly as one started over stdio: one text message is
//! one JSON-RPC message. [`bridge`] is the client's side: stdio on one end, the websocket on the
//! other — so a host reaches a websocket world the way it reaches an ssh one, through a child
//! process whose stdin and stdout speak the protocol (`toolhost exec-server --connect`).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest};
use tokio_util::sync::CancellationToken;

use crate::handlers::World;
use crate::serve::MAX_MESSAGE_BYTES;

/// Why a websocket world could not be served or reached.
#[derive(Debug, thiserror::Error)]
pub enum WebsocketError {
    #[error("the exec-server listens on loopback only, not {0}")]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    #[error("cannot write the token file {path}: {source}")]
    Token { path: PathBuf, source: std::io::Error },
    #[error("cannot reach {url}: {detail}")]
    Connect { url: String, detail: String },
}

impl WebsocketError {
    pub fn code(&self) -> &'static str {
        match self {
            WebsocketError::NotLoopback(_) => "WORLD_NOT_LOOPBACK",
            WebsocketError::Listen { .. } => "WORLD_LISTEN_FAILED",
            WebsocketError::Token { .. } => "WORLD_TOKEN_FILE",
            WebsocketError::Connect { .. } => "WORLD_UNREACHABLE",
        }
    }
}

fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES))
}

/// A fresh token: 32 random bytes, hex.
fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom").and_then(|mut f| {
        use std::io::Read as _;
        f.read_exact(&mut bytes)
    })?;
    Ok(hex::encode(bytes))
}

/// Writes `token` to `path` readable by its owner only, atomically (a reader never sees half).
fn write_token(path: &Path, token: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let partial = path.with_extension("partial");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)?;
    file.write_all(token.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&partial, path)
}

/// Serves `root` on `addr` until `stop`; the token goes to `token_file`. Returns the address
/// bound (port 0 picks one) once listening, through `bound`.
pub async fn listen(
    root: PathBuf,
    addr: SocketAddr,
    token_file: &Path,
    bound: impl FnOnce(SocketAddr),
    stop: CancellationToken,
) -> Result<(), WebsocketError> {
    if !addr.ip().is_loopback() {
        return Err(WebsocketError::NotLoopback(addr));
    }
    let token_error = |source| WebsocketError::Token { path: token_file.to_path_buf(), source };
    let token = new_token().map_err(token_error)?;
    write_token(token_file, &token).map_err(token_error)?;
    let listener =
        TcpListener::bind(addr).await.map_err(|source| WebsocketError::Listen { addr, source })?;
    let local = listener.local_addr().map_err(|source| WebsocketError::Listen { addr, source })?;
    bound(local);
    let expected = format!("Bearer {token}");
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(_) => continue,
            },
            () = stop.cancelled() => return Ok(()),
        };
        let (expected, root, stop) = (expected.clone(), root.clone(), stop.child_token());
        tokio::spawn(async move {
            // The error's shape is the handshake library's (an HTTP response), not ours.
            #[allow(clippy::result_large_err)]
            let check = |request: &Request, response: Response| check(request, response, &expected);
            let Ok(socket) =
                tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config()))
                    .await
            else {
                return;
            };
            let Ok(world) = World::open(&root) else { return };
            let (server_in, bridge_out) = tokio::io::duplex(1 << 20);
            let (bridge_in, server_out) = tokio::io::duplex(1 << 20);
            let serving = crate::serve(world, server_in, server_out, stop);
            let bridging = carry(socket, bridge_in, bridge_out);
            tokio::join!(serving, bridging);
        });
    }
}

/// The upgrade request must carry the token and no `Origin`.
#[allow(clippy::result_large_err)]
fn check(request: &Request, response: Response, expected: &str) -> Result<Response, ErrorResponse> {
    let refuse = |status: StatusCode, why: &str| {
        let mut refusal = ErrorResponse::new(Some(why.to_owned()));
        *refusal.status_mut() = status;
        Err(refusal)
    };
    if request.headers().contains_key("origin") {
        return refuse(StatusCode::FORBIDDEN, "a page in a browser may not reach an exec-server");
    }
    let given = request.headers().get("authorization").map(|v| v.as_bytes()).unwrap_or_default();
    if !same_secret(given, expected.as_bytes()) {
        return refuse(StatusCode::UNAUTHORIZED, "the exec-server's token is required");
    }
    Ok(response)
}

/// Whether `given` is `expected`, in a time that does not depend on where they differ.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given.iter().zip(expected).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
}

/// Carries messages between a websocket and a byte stream of newline-delimited messages:
/// `lines_out` is read a line at a time into text messages, and each message received is
/// written to `lines_in` with its newline. Ends when either side does.
async fn carry<S>(
    socket: tokio_tungstenite::WebSocketStream<S>,
    lines_out: impl AsyncRead + Unpin,
    mut lines_in: impl AsyncWrite + Unpin,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut sink, mut stream) = socket.split();
    let sending = async {
        let mut lines = BufReader::new(lines_out);
        let mut line = String::new();
        loop {
            line.clear();
            match lines.read_line(&mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let text = line.trim_end_matches('\n').to_owned();
                    if sink.send(Message::text(text)).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = sink.close().await;
    };
    let receiving = async {
        while let Some(Ok(message)) = stream.next().await {
            let bytes = match message {
                Message::Text(text) => text.as_bytes().to_vec(),
                Message::Binary(bytes) => bytes.to_vec(),
                Message::Close(_) => break,
                _ => continue,
            };
            if lines_in.write_all(&bytes).await.is_err() || lines_in.write_all(b"\n").await.is_err()
            {
                break;
            }
            let _ = lines_in.flush().await;
        }
        let _ = lines_in.shutdown().await;
    };
    // Either side ending ends the session (the other side's pending work is dropped).
    tokio::select! {
        () = sending => {}
        () = receiving => {}
    }
}

/// Connects to the exec-server at `url` (`ws://127.0.0.1:<port>`) with `token`, and carries
/// this process's stdin and stdout to and from it until either ends.
pub async fn bridge(url: &str, token: &str) -> Result<(), WebsocketError> {
    let failed = |detail: String| WebsocketError::Connect { url: url.to_owned(), detail };
    let mut request = url.into_client_request().map_err(|e| failed(e.to_string()))?;
    let authorization =
        format!("Bearer {token}").parse().map_err(|_| failed("bad token".into()))?;
    request.headers_mut().insert("authorization", authorization);
    let host = request.uri().host().unwrap_or("127.0.0.1").to_owned();
    let port = request.uri().port_u16().unwrap_or(80);
    let stream =
        TcpStream::connect((host.as_str(), port)).await.map_err(|e| failed(e.to_string()))?;
    let (socket, _) = tokio_tungstenite::client_async_with_config(request, stream, Some(config()))
        .await
        .map_err(|e| failed(e.to_string()))?;
    carry(socket, tokio::io::stdin(), tokio::io::stdout()).await;
    Ok(())
}
