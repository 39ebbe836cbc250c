//! A malicious client talking straight to the exec-server: every path escape it can send —
//! `..`, absolute paths, symbolic links out of the root (relative, absolute, to a parent),
//! `/proc` tricks, NUL bytes — through every method that takes a path. The server must answer
//! each with an error or with nothing from outside, and leave the outside untouched.
#![allow(clippy::unwrap_used)]

use base64::Engine as _;
use serde_json::{Value, json};
use std::path::Path;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;
use toolhost_world::{World, serve};

const SECRET: &str = "TOP-SECRET-OUTSIDE";

struct RawClient {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    next: i64,
}

impl RawClient {
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        self.write.write_all(format!("{body}\n").as_bytes()).await.unwrap();
        let line = self.lines.next_line().await.unwrap().unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(reply["id"], self.next, "{reply}");
        reply
    }
}

fn start(root: &Path) -> RawClient {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server);
    let world = World::open(root).unwrap();
    tokio::spawn(serve(world, server_read, server_write, CancellationToken::new()));
    let (read, write) = tokio::io::split(client);
    RawClient { write, lines: BufReader::new(read).lines(), next: 0 }
}

/// Whether an answer carries anything from outside the root: the secret's text (also inside
/// base64 data) or the outside file's name in a listing or search.
fn leaks(reply: &Value) -> bool {
    let text = reply.to_string();
    if text.contains(SECRET) || text.contains("secret.txt\"") && reply.get("result").is_some() {
        return true;
    }
    let decoded = |v: &Value| {
        v.as_str()
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
            .is_some_and(|b| String::from_utf8_lossy(&b).contains(SECRET))
    };
    let result = &reply["result"];
    decoded(&result["data"]) || decoded(&result["stdout"]) || decoded(&result["stderr"])
}

fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())
        })
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_escapes_sent_straight_to_the_exec_server_all_fail() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(outside.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(ws.join("a.txt"), "inside\n").unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    let abs_outside = outside.canonicalize().unwrap();
    let abs = abs_outside.to_str().unwrap().to_owned();
    std::os::unix::fs::symlink("../outside", ws.join("link_out")).unwrap();
    std::os::unix::fs::symlink(abs_outside.join("secret.txt"), ws.join("abs_link")).unwrap();
    std::os::unix::fs::symlink("..", ws.join("dotdot")).unwrap();
    std::os::unix::fs::symlink("../../outside", ws.join("src/deep_out")).unwrap();
    let before = snapshot(&outside);

    let mut client = start(&ws);
    let hello = client.call("world/hello", json!({"version": "1.0"})).await;
    assert!(hello.get("result").is_some(), "{hello}");

    let escapes: Vec<String> = vec![
        "../outside/secret.txt".into(),
        format!("{abs}/secret.txt"),
        "link_out/secret.txt".into(),
        "abs_link".into(),
        "dotdot/outside/secret.txt".into(),
        "src/deep_out/secret.txt".into(),
        format!("/proc/self/root{abs}/secret.txt"),
        "/proc/self/cwd/../outside/secret.txt".into(),
        "a.txt/../../outside/secret.txt".into(),
        "./src/../../outside/secret.txt".into(),
        "//..//..//..//..//outside/secret.txt".into(),
        "a.txt\u{0}/../../outside/secret.txt".into(),
        format!("{}/../outside/secret.txt", ws.canonicalize().unwrap().display()),
    ];
    let mut attacks: Vec<(&str, Value)> = Vec::new();
    for path in &escapes {
        attacks.push(("fs/read", json!({"path": path})));
        attacks.push(("fs/resolve", json!({"path": path})));
        attacks.push(("search/grep", json!({"pattern": "SECRET", "path": path})));
        attacks
            .push(("fs/replace", json!({"path": path, "expectedVersion": null, "data": "eA=="})));
        attacks.push((
            "fs/replace",
            json!({"path": path.replace("secret.txt", "planted.txt"), "expectedVersion": null, "data": "eA=="}),
        ));
    }
    for dir_path in
        ["..", "link_out", "dotdot", "src/deep_out", "/", abs.as_str(), "/proc/self/root"]
    {
        attacks.push(("fs/list", json!({"path": dir_path})));
        attacks.push(("search/glob", json!({"pattern": "**", "path": dir_path})));
        attacks.push(("search/grep", json!({"pattern": "SECRET", "path": dir_path})));
        attacks.push(("process/run", json!({"argv": ["ls"], "cwd": dir_path})));
        attacks.push(("process/spawn", json!({"argv": ["ls"], "cwd": dir_path})));
    }
    // Walks of the root itself follow no link out, and patterns cannot climb.
    attacks.push(("search/grep", json!({"pattern": "SECRET"})));
    attacks.push(("search/grep", json!({"pattern": "SECRET", "include": "../**"})));
    attacks.push(("search/glob", json!({"pattern": "../**"})));
    attacks.push(("search/glob", json!({"pattern": "**/secret.txt"})));
    attacks.push(("search/glob", json!({"pattern": format!("{abs}/**")})));
    // Protected paths stay protected when asked remotely.
    attacks.push((
        "fs/replace",
        json!({"path": ".git/config", "expectedVersion": null, "data": "eA=="}),
    ));

    let mut leaked = Vec::new();
    for (method, params) in &attacks {
        let reply = client.call(method, params.clone()).await;
        if leaks(&reply) {
            leaked.push(format!("{method} {params} → {reply}"));
        }
        if ["fs/replace", "fs/read", "fs/list", "process/run", "process/spawn"].contains(method) {
            assert!(reply.get("error").is_some(), "{method} {params} was not refused: {reply}");
        }
    }
    println!("{} escape attempts, {} escapes", attacks.len(), leaked.len());
    assert!(leaked.is_empty(), "escapes:\n{}", leaked.join("\n"));
    assert_eq!(snapshot(&outside), before, "nothing outside changed");
    assert_eq!(std::fs::read_to_string(ws.join(".git/config")).unwrap(), "[core]\n");

    // And the world still works for what is inside.
    let read = client.call("fs/read", json!({"path": "a.txt"})).await;
    let data = read["result"]["data"].as_str().unwrap();
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(data).unwrap(), b"inside\n");
    let version = read["result"]["version"].as_str().unwrap().to_owned();
    let replaced = client
        .call(
            "fs/replace",
            json!({"path": "a.txt", "expectedVersion": version, "data": "bmV3Cg=="}),
        )
        .await;
    assert_eq!(replaced["result"]["operation"], "update", "{replaced}");
    let stale = client
        .call("fs/replace", json!({"path": "a.txt", "expectedVersion": version, "data": "eA=="}))
        .await;
    assert_eq!(stale["error"]["data"]["code"], "FS_STALE_VERSION", "{stale}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_but_hello_is_answered_first_and_a_major_version_mismatch_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut client = start(dir.path());
    let early = client.call("fs/read", json!({"path": "a"})).await;
    assert_eq!(early["error"]["code"], -32002, "{early}");
    let old = client.call("world/hello", json!({"version": "0.9"})).await;
    assert_eq!(old["error"]["data"]["code"], "WORLD_VERSION", "{old}");
    let hello = client.call("world/hello", json!({"version": "1.4"})).await;
    assert_eq!(hello["result"]["version"], "1.0", "{hello}");
    let again = client.call("world/hello", json!({"version": "1.0"})).await;
    assert!(again.get("error").is_some(), "{again}");
    let unknown = client.call("fs/chmod", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let bad = client
        .call("fs/replace", json!({"path": "x", "expectedVersion": null, "data": "@@"}))
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}
