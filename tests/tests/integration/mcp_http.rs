//! MCP over Streamable HTTP (docs/mcp.md, HTTP): eight TypeScript SDK clients at once against
//! one `toolhost mcp --http` attached to one editor's `toolhost serve`. Every call's card reaches
//! the editor labelled with its client's session (`sdk-agent #n`), each client gets its own
//! answers and progress notifications, and the endpoint refuses a request without the token
//! (401), a foreign Origin (403) and an unknown or ended session (404). The token file is the
//! owner's only.
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::{Value, json};
use server::{Env, binary, workspace_root};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

const CLIENTS: usize = 8;

/// `toolhost mcp --http` and what it printed at start.
pub struct HttpMcp {
    pub child: Child,
    pub url: String,
    pub token_file: Option<PathBuf>,
    /// The rest of its stderr, line by line (kept so the server never blocks writing it).
    pub _stderr: Receiver<String>,
}

impl Drop for HttpMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `toolhost mcp --http 127.0.0.1:0 <args>` in `env`'s workspace and waits until it says
/// where it listens (and where its token is).
pub fn start_http(env: &Env, args: &[&str]) -> HttpMcp {
    let runtime = env.state.join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    let mut command = Command::new(binary());
    command
        .args(["mcp", "--http", "127.0.0.1:0"])
        .args(args)
        .current_dir(&env.root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env("XDG_RUNTIME_DIR", &runtime);
    for (key, value) in env.env() {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap();
    let (tx, stderr) = channel();
    let pipe = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut url, mut token_file) = (None, None);
    while url.is_none() || token_file.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = stderr.recv_timeout(left).expect("toolhost mcp --http says where it listens");
        if let Some(at) = line.strip_prefix("toolhost: MCP over HTTP at ") {
            url = Some(at.to_owned());
        } else if let Some(path) = line.strip_prefix("toolhost: bearer token in ") {
            token_file = Some(Some(PathBuf::from(path)));
        } else if line.starts_with("toolhost: no token required") {
            token_file = Some(None);
        }
    }
    HttpMcp { child, url: url.unwrap(), token_file: token_file.unwrap(), _stderr: stderr }
}

/// Runs `tests/mcp-clients/<script>` with node and returns the JSON summary it prints last.
pub fn run_node(script: &str, args: &[&str]) -> Value {
    let out = Command::new("node")
        .arg(workspace_root().join("tests/mcp-clients").join(script))
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

/// The status of a POST to `url` with `Host: <host>` and `token`, over a raw connection.
fn raw_status(url: &str, host: &str, token: &str) -> u16 {
    use std::io::{Read, Write};
    let authority = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[test]
fn eight_sdk_clients_share_one_editor_session_each_labelled_without_cross_talk() {
    let env = Env::new();
    for i in 0..CLIENTS {
        env.write(&format!("f{i}.txt"), &format!("content of client {i}\n"));
    }
    let mut editor = env.start(json!({}));
    let http = start_http(&env, &[]);
    let token_file = http.token_file.clone().expect("a token is required by default");
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode, 0o600, "the token file is the owner's only");

    let summary = run_node(
        "http_clients.mjs",
        &[&http.url, token_file.to_str().unwrap(), &CLIENTS.to_string()],
    );
    eprintln!("http_clients: {CLIENTS} clients in {} ms", summary["elapsedMs"]);
    let agents = summary["agents"].as_array().unwrap();
    assert_eq!(agents.len(), CLIENTS);
    let sessions: BTreeSet<&str> =
        agents.iter().map(|a| a["sessionId"].as_str().unwrap()).collect();
    assert_eq!(sessions.len(), CLIENTS, "one session per client: {sessions:?}");
    for agent in agents {
        let i = agent["i"].as_u64().unwrap();
        assert_eq!(agent["readError"], false, "{agent}");
        assert!(agent["read"].as_str().unwrap().contains(&format!("content of client {i}")));
        assert_eq!(agent["bashError"], false, "{agent}");
        let bash = agent["bash"].as_str().unwrap();
        assert!(bash.contains(&format!("marker-{i}")) && bash.contains(&format!("done-{i}")));
        let progress = agent["progress"].as_array().unwrap();
        assert!(!progress.is_empty(), "progress over SSE: {agent}");
        for other in (0..CLIENTS as u64).filter(|o| *o != i) {
            let theirs = format!("marker-{other}");
            assert!(!bash.contains(&theirs), "{agent}");
            assert!(progress.iter().all(|p| !p.as_str().unwrap().contains(&theirs)), "{agent}");
            assert!(!agent["read"].as_str().unwrap().contains(&format!("client {other}")));
        }
    }
    let refusals = &summary["refusals"];
    eprintln!("http_clients refusals: {refusals}");
    assert_eq!(refusals["noToken"], 401, "{refusals}");
    assert_eq!(refusals["wrongToken"], 401, "{refusals}");
    assert_eq!(refusals["foreignOrigin"], 403, "{refusals}");
    assert_eq!(refusals["loopbackOrigin"], 200, "{refusals}");
    assert_eq!(refusals["unknownSession"], 404, "{refusals}");
    assert_eq!(refusals["afterDelete"], 404, "{refusals}");
    // fetch() cannot send another Host: a raw request does (DNS rebinding: 403).
    let token = std::fs::read_to_string(&token_file).unwrap();
    assert_eq!(raw_status(&http.url, "evil.example", &token), 403);
    assert_eq!(raw_status(&http.url, "localhost", "wrong"), 401);

    // The editor's cards: every read labelled with its session, one file per label.
    let mut read_by_caller: BTreeMap<String, String> = BTreeMap::new();
    let mut bash_callers = BTreeSet::new();
    // The editor keeps every card it saw: each call is taken once.
    let mut calls: BTreeSet<String> = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while read_by_caller.len() < CLIENTS || bash_callers.len() < CLIENTS {
        assert!(Instant::now() < deadline, "cards: {read_by_caller:?} {bash_callers:?}");
        let Some(card) = editor.wait_for(Duration::from_secs(30), |m| {
            m["method"] == "toolhost/card"
                && m["params"]["status"] == "completed"
                && (m["params"]["tool"] == "read" || m["params"]["tool"] == "bash")
                && !calls.contains(m["params"]["callId"].as_str().unwrap_or_default())
        }) else {
            panic!("cards so far: {read_by_caller:?} {bash_callers:?}");
        };
        let card = &card["params"];
        calls.insert(card["callId"].as_str().unwrap().to_owned());
        let caller = card["caller"].as_str().unwrap_or_default().to_owned();
        let number = caller.strip_prefix("sdk-agent #").and_then(|n| n.parse::<usize>().ok());
        assert!(number.is_some_and(|n| (1..=CLIENTS).contains(&n)), "caller {caller:?}: {card}");
        if card["tool"] == "bash" {
            bash_callers.insert(caller);
            continue;
        }
        let text = card.to_string();
        let file = (0..CLIENTS).map(|i| format!("f{i}.txt")).find(|f| text.contains(f.as_str()));
        let file = file.unwrap_or_else(|| panic!("which file? {card}"));
        assert!(read_by_caller.insert(caller, file).is_none(), "one read per session");
    }
    let files: BTreeSet<&String> = read_by_caller.values().collect();
    assert_eq!(files.len(), CLIENTS, "each session read its own file: {read_by_caller:?}");
}
