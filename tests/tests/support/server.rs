//! Shared by the `lsp_*` tests (included with `#[path = "support/server.rs"] mod server;`): builds
//! the `toolhost` binary with the `test-tools` feature once per test process, and starts it over
//! stdio on a private temporary workspace whose state and config directories are temporary too
//! (never the real home), with the test tools switched on (`TOOLHOST_TEST_TOOLS=1`).
#![allow(dead_code)]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_harness::client::{Client, NO_REPLY, RequestHandler};

/// The workspace root (this crate's parent directory).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `<target dir>/<profile dir>`, respecting `CARGO_TARGET_DIR`.
fn target_profile_dir(release: bool) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| if dir.is_absolute() { dir } else { workspace_root().join(dir) })
        .unwrap_or_else(|| workspace_root().join("target"));
    target.join(if release { "release" } else { "debug" })
}

/// Builds `toolhost` with the test tools (once per process) and returns a private hard link to
/// it, so a concurrent build of the plain binary cannot swap it out under a running test.
pub fn binary() -> PathBuf {
    binary_for(false)
}

/// [`binary`] for the debug or the release profile.
pub fn binary_for(release: bool) -> PathBuf {
    static BINARIES: Mutex<Vec<(bool, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BINARIES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(r, _)| *r == release) {
        return path.clone();
    }
    let path = build(release);
    built.push((release, path.clone()));
    path
}

fn build(release: bool) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(["build", "--quiet", "-p", "toolhost-server", "--features", "test-tools"])
        .args(["--bin", "toolhost", "--message-format=json"])
        .current_dir(workspace_root())
        .stderr(Stdio::inherit());
    if release {
        command.arg("--release");
    }
    let output = command.output().unwrap();
    assert!(output.status.success(), "building toolhost --features test-tools failed");
    // The artifact message names the executable; fall back to <target>/<profile>/toolhost.
    let built = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "toolhost")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| target_profile_dir(release).join("toolhost"));
    let dir = target_profile_dir(release).join("lsp-tests");
    std::fs::create_dir_all(&dir).unwrap();
    // Links left by finished test processes would pin old binaries: drop them.
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name.strip_prefix("toolhost-").and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|pid| !pid_exists(pid)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let private = dir.join(format!("toolhost-{}", std::process::id()));
    let _ = std::fs::remove_file(&private);
    if std::fs::hard_link(&built, &private).is_err() {
        std::fs::copy(&built, &private).unwrap();
    }
    private
}

/// Runs a Python MCP client script of `tests/mcp-clients` (with the Python SDK `cargo xtask
/// install-deps` installs) as `<script> <toolhost binary> <workspace> <state dir>`, and returns the
/// JSON summary it prints last.
pub fn run_python_client(script: &str, env: &Env) -> Value {
    run_python_client_with(script, env, &[])
}

/// [`run_python_client`] with more arguments after the state dir.
pub fn run_python_client_with(script: &str, env: &Env, extra: &[&str]) -> Value {
    let python = workspace_root().join(".client-tools/py/bin/python");
    assert!(
        python.exists(),
        "{} is missing: `cargo xtask install-deps` installs the MCP clients the tests use",
        python.display()
    );
    let out = Command::new(python)
        .arg(workspace_root().join("tests/mcp-clients").join(script))
        .arg(binary())
        .arg(&env.root)
        .arg(&env.state)
        .args(extra)
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

/// A temporary workspace plus private state and config directories.
pub struct Env {
    pub dir: tempfile::TempDir,
    /// The canonical workspace root.
    pub root: PathBuf,
    pub state: PathBuf,
    pub config: PathBuf,
}

impl Default for Env {
    fn default() -> Self {
        Self::new()
    }
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("workspace");
        let state = dir.path().join("state");
        let config = dir.path().join("config");
        for d in [&root, &state, &config] {
            std::fs::create_dir_all(d).unwrap();
        }
        let root = root.canonicalize().unwrap();
        Env { dir, root, state, config }
    }

    /// Writes a workspace file (relative path).
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Writes the user's configuration (`$XDG_CONFIG_HOME/toolhost/config.toml`).
    pub fn write_user_config(&self, text: &str) {
        let dir = self.config.join("toolhost");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), text).unwrap();
    }

    /// `[agent]` in the user's configuration: the scripted model server at `base`, no key,
    /// `mode`, prices (so costs show). The user's, because an untrusted workspace's
    /// `toolhost.toml` or an editor's settings may not choose the endpoint or `auto`.
    pub fn write_agent_config(&self, base: &str, mode: &str) {
        self.write_user_config(&format!(
            "[agent]\nbase_url = \"{base}\"\napi_key_env = \"\"\nmode = \"{mode}\"\n\n\
             [agent.price]\ninput = 1.0\noutput = 2.0\n"
        ));
    }

    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("XDG_STATE_HOME".into(), self.state.display().to_string()),
            ("XDG_CONFIG_HOME".into(), self.config.display().to_string()),
            ("TOOLHOST_TEST_TOOLS".into(), "1".into()),
            ("RUST_BACKTRACE".into(), "0".into()),
            ("RUST_LOG".into(), "off".into()),
        ]
    }

    /// Starts `toolhost serve <args>` in the workspace.
    pub fn spawn_with(&self, args: &[&str], handler: RequestHandler) -> Client {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut client = Client::spawn(&binary(), &self.root, args, &env, handler).unwrap();
        client.timeout = Duration::from_secs(20);
        client
    }

    pub fn spawn(&self) -> Client {
        self.spawn_with(&[], echo_handler())
    }

    /// Starts the server and completes the handshake (optional initializationOptions).
    pub fn start(&self, init_options: Value) -> Client {
        let mut client = self.spawn();
        client.initialize(&self.root, init_options, json!({})).unwrap();
        client
    }

    /// Every `session.jsonl` under the state directory.
    pub fn session_logs(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            let Ok(entries) = std::fs::read_dir(dir) else { return };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.file_name().is_some_and(|n| n == "session.jsonl") {
                    out.push(path);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.state, &mut out);
        out
    }

    /// The parsed lines of session `id`'s log.
    pub fn session_events(&self, id: &str) -> Vec<Value> {
        let log = self
            .session_logs()
            .into_iter()
            .find(|p| p.parent().and_then(Path::file_name).is_some_and(|n| n == id))
            .unwrap_or_else(|| panic!("no log for session {id}"));
        std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// An editor that answers questions (`toolhost/askUser`): every question is kept and answered
/// with `answer` (or never); `init_options` are its initializationOptions.
pub fn asking_editor(
    env: &Env,
    init_options: Value,
    answer: Option<Value>,
) -> (Client, Arc<Mutex<Vec<Value>>>) {
    let asked: Arc<Mutex<Vec<Value>>> = Arc::default();
    let handler: RequestHandler = {
        let asked = Arc::clone(&asked);
        Arc::new(move |method, params| {
            if method != "toolhost/askUser" {
                return Err((-32601, format!("unhandled {method}")));
            }
            asked.lock().unwrap().push(params.clone());
            answer.clone().ok_or((NO_REPLY, String::new()))
        })
    };
    let mut client = env.spawn_with(&[], handler);
    let capabilities = json!({"experimental": {"toolhost": {"askUser": true}}});
    client.initialize(&env.root, init_options, capabilities).unwrap();
    (client, asked)
}

/// An editor that reviews: every question is kept, and answered with `answer` (or not at all).
pub fn reviewing_editor(
    env: &Env,
    answer: Option<Value>,
    delay: Duration,
) -> (Client, Arc<Mutex<Vec<Value>>>) {
    let asked: Arc<Mutex<Vec<Value>>> = Arc::default();
    let handler: RequestHandler = {
        let asked = Arc::clone(&asked);
        Arc::new(move |method, params| {
            if method != "toolhost/review" {
                return Err((-32601, format!("unhandled {method}")));
            }
            asked.lock().unwrap().push(params.clone());
            std::thread::sleep(delay);
            answer.clone().ok_or((NO_REPLY, String::new()))
        })
    };
    let mut client = env.spawn_with(&[], handler);
    let capabilities = json!({"experimental": {"toolhost": {"review": true}}});
    client.initialize(&env.root, json!({}), capabilities).unwrap();
    (client, asked)
}

/// Answers `toolhost/test/echo` with `{echo: params}`; refuses everything else.
pub fn echo_handler() -> RequestHandler {
    Arc::new(|method, params| match method {
        "toolhost/test/echo" => Ok(json!({"echo": params})),
        other => Err((-32601, format!("unhandled method {other}"))),
    })
}

/// `file://` URI of a path.
pub fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// One framed message (raw bytes).
pub fn frame(body: &[u8]) -> Vec<u8> {
    toolhost_jsonrpc::content_length::encode(body)
}

/// A raw JSON-RPC request (for ids the harness does not track).
pub fn raw_request(id: Value, method: &str, params: Value) -> Vec<u8> {
    frame(
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            .to_string()
            .as_bytes(),
    )
}

/// Whether `message` is a response (not a request or notification).
pub fn is_response(message: &Value) -> bool {
    message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// Waits for the response with `id` among the client's untracked messages.
pub fn wait_response(client: &mut Client, id: &Value, timeout: Duration) -> Option<Value> {
    client.wait_for(timeout, |m| is_response(m) && m.get("id") == Some(id))
}

/// The result code of a tool call (`None` on success).
pub fn error_code(call: &Value) -> Option<String> {
    call.pointer("/result/error/info/code").and_then(Value::as_str).map(str::to_owned)
}

/// A tool call that must succeed.
pub fn call_ok(client: &mut Client, name: &str, arguments: Value) -> Value {
    let out = client.call_tool(name, arguments.clone()).unwrap();
    assert_eq!(out["result"]["isError"], false, "{name} {arguments} failed: {out}");
    out
}

/// A tool call that must fail with `code`.
pub fn call_err(client: &mut Client, name: &str, arguments: Value, code: &str) -> Value {
    let out = client.call_tool(name, arguments.clone()).unwrap();
    assert_eq!(out["result"]["isError"], true, "{name} {arguments} succeeded: {out}");
    assert_eq!(error_code(&out).as_deref(), Some(code), "{name} {arguments}: {out}");
    out
}

/// Pids of the live processes whose parent is `pid` (from `/proc`).
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return out };
    for entry in entries.flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // `pid (comm) state ppid …`; comm may contain spaces, so split after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}

/// Whether a process with this pid exists (zombies included).
pub fn pid_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Milliseconds since `start`, as a float.
pub fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

/// A number of `/proc/<pid>/<file>`: the first word after `field` (`VmHWM:` and `VmRSS:` of
/// `status`, in KiB; `rchar:` of `io`, in bytes).
pub fn proc_number(pid: u32, file: &str, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number for {field} in /proc/{pid}/{file}"))
}

/// `git -C <root> <args>` with a test identity; its standard output. Fails the test when git does.
pub fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
