//! An execution world on a loopback websocket: `toolhost exec-server --listen 127.0.0.1:0
//! --token-file F` serves a folder; it writes a fresh token readable by its owner only, refuses
//! an upgrade without that token or from a web page (an `Origin`), and a session configured with
//! `[world] kind = "websocket"` runs its tools there through the stdio bridge.

use crate::server::{self, Env, call_ok};
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

/// The status line an upgrade request with `headers` gets.
fn upgrade_status(addr: &str, headers: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let request = format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{headers}\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = vec![0u8; 256];
    let n = stream.read(&mut answer).unwrap();
    String::from_utf8_lossy(&answer[..n]).lines().next().unwrap_or_default().to_owned()
}

#[test]
fn a_websocket_world_needs_its_token_refuses_pages_and_serves_a_session() {
    let served = tempfile::tempdir().unwrap();
    std::fs::write(served.path().join("a.txt"), "served\n").unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let token_file = secrets.path().join("token");
    let mut child = Command::new(server::binary())
        .args(["exec-server", "--root"])
        .arg(served.path())
        .args(["--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url =
        line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("{line}")).to_owned();
    let addr = url.trim_start_matches("ws://").to_owned();
    let token = std::fs::read_to_string(&token_file).unwrap();
    assert_eq!(token.len(), 64, "32 random bytes, hex");
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the token is its owner's only");
    assert!(
        Command::new(server::binary())
            .args(["exec-server", "--root", "/", "--listen", "0.0.0.0:0", "--token-file"])
            .arg(secrets.path().join("t2"))
            .output()
            .unwrap()
            .status
            .code()
            != Some(0),
        "only loopback is served"
    );

    // Without the token, with a wrong one, or from a page: refused.
    assert!(upgrade_status(&addr, "").contains(" 401"), "no token");
    assert!(upgrade_status(&addr, "Authorization: Bearer 00\r\n").contains(" 401"), "wrong token");
    let page = format!("Authorization: Bearer {token}\r\nOrigin: http://evil.example\r\n");
    assert!(upgrade_status(&addr, &page).contains(" 403"), "a page");
    let ok = format!("Authorization: Bearer {token}\r\n");
    assert!(upgrade_status(&addr, &ok).contains(" 101"), "the token opens it");

    // A session whose world is that server: its files and commands are there.
    let env = Env::new();
    env.write_user_config(&format!(
        "[world]\nkind = \"websocket\"\nurl = {url:?}\ntoken_file = {:?}\n",
        token_file.to_string_lossy()
    ));
    let mut client = env.start(json!({}));
    let read = call_ok(&mut client, "read", json!({"file_path": "a.txt"}));
    assert!(read["result"]["content"][0]["text"].as_str().unwrap().contains("served"), "{read}");
    call_ok(&mut client, "write", json!({"file_path": "b.txt", "content": "made there\n"}));
    assert_eq!(std::fs::read_to_string(served.path().join("b.txt")).unwrap(), "made there\n");
    let pwd = call_ok(&mut client, "bash", json!({"command": "pwd", "description": "where"}));
    let shown = pwd["result"]["content"][0]["text"].as_str().unwrap();
    let here = served.path().canonicalize().unwrap();
    assert!(shown.starts_with(&*here.to_string_lossy()), "{shown}");
    assert!(!env.root.join("b.txt").exists(), "nothing written on the client's side");
    let _ = client.shutdown();
    let _ = child.kill();
    let _ = child.wait();
}
