//! kill -9 of toolhost leaves nothing: for each kind of child toolhost starts — a foreground
//! `bash` (through `toolhost call` and through `toolhost mcp`), a background job, a terminal's
//! background job, a language server (clangd through the `lsp` tool) and an MCP server (the
//! scripted stdio server, bridged) — the child is started so that it has grandchildren
//! (`sh -c 'sleep 300 & sleep 300'`), the `toolhost` process is killed with SIGKILL, and `/proc`
//! must show no process of that tree, in any state, within a bounded wait.
//!
//! The tree is found by a unique environment variable exported by the started command itself (so
//! neither toolhost nor its process guard carries it). Nothing in a killed process can reap, so
//! this test process is made the subreaper of its descendants (as an init would be) and reaps
//! what dies; a process left `<defunct>` would count as a survivor. Tests hold one lock: reaping
//! any child must not race another test's.
#![allow(clippy::unwrap_used)]

#[path = "support/server.rs"]
mod server;

#[path = "support/mcp.rs"]
mod mcp;

use mcp::Mcp;
use serde_json::{Value, json};
use server::{Env, binary, workspace_root};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

const MARK: &str = "TOOLHOST_KILL9_MARK";

/// A command with grandchildren: the shell the tool starts runs `sh`, which starts two sleeps.
const TREE: &str = "sh -c 'sleep 300 & sleep 300'";

/// One case at a time; this process made the subreaper of what its cases leave behind.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).unwrap();
    guard
}

/// A value of [`MARK`] no other process on the machine carries.
fn unique_mark(case: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    format!("{case}-{}-{}", std::process::id(), nanos.as_nanos())
}

/// `body` run with the mark exported, so every process it starts carries it.
fn marked_command(mark: &str, body: &str) -> String {
    format!("export {MARK}={mark}; {body}")
}

/// The processes (any state) whose environment holds the mark: pid, state letter, command name.
fn marked(mark: &str) -> Vec<(u32, char, String)> {
    let needle = format!("{MARK}={mark}");
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if !environ.split(|&b| b == 0).any(|v| v == needle.as_bytes()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let state = stat[close + 1..].trim_start().chars().next().unwrap_or('?');
        out.push((pid, state, stat[open + 1..close].to_owned()));
    }
    out
}

/// How many of the marked processes are live `sleep`s.
fn sleeps(mark: &str) -> usize {
    marked(mark).iter().filter(|(_, state, comm)| comm == "sleep" && *state != 'Z').count()
}

/// Waits (bounded) until both sleeps of the tree run.
fn wait_for_tree(mark: &str) {
    let until = Instant::now() + Duration::from_secs(30);
    while sleeps(mark) < 2 {
        assert!(Instant::now() < until, "the tree did not start: {:?}", marked(mark));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGKILL to toolhost (`pid`), then: every marked process gone, reaping what this process
/// inherited, within a bounded wait.
fn kill_and_expect_nothing_left(pid: u32, mark: &str, wait_toolhost: impl FnOnce()) {
    let before = marked(mark);
    let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    wait_toolhost();
    let started = Instant::now();
    let until = started + Duration::from_secs(10);
    let left = loop {
        while let Ok(Some(_)) = rustix::process::wait(rustix::process::WaitOptions::NOHANG) {}
        let left = marked(mark);
        if left.is_empty() || Instant::now() > until {
            break left;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(left, vec![], "survivors of kill -9 (the tree before: {before:?})");
    println!("{} processes gone {:?} after kill -9", before.len(), started.elapsed());
}

fn mcp(env: &Env) -> Mcp {
    let mut command = Command::new(binary());
    command
        .arg("mcp")
        .current_dir(&env.root)
        .envs(env.env())
        .env_remove(toolhost_host::BRIDGED_ENV)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut server = Mcp::start(command);
    server.timeout = Duration::from_secs(60);
    server.initialize("kill9");
    server
}

fn kill_mcp(mut server: Mcp, mark: &str) {
    let pid = server.child.id();
    kill_and_expect_nothing_left(pid, mark, || {
        server.child.wait().unwrap();
    });
}

fn bash_args(command: String, background: bool) -> Value {
    json!({"command": command, "description": "kill9", "run_in_background": background})
}

fn call_ok(server: &mut Mcp, name: &str, arguments: Value) -> Value {
    let result = server.call(name, arguments);
    assert_eq!(result["isError"], false, "{name}: {result}");
    result
}

#[test]
fn a_foreground_bash_of_toolhost_call_leaves_nothing() {
    let _serial = serial();
    let env = Env::new();
    let mark = unique_mark("call");
    let arguments = bash_args(marked_command(&mark, TREE), false);
    let mut child = Command::new(binary())
        .args(["call", "bash", &arguments.to_string()])
        .current_dir(&env.root)
        .envs(env.env())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_tree(&mark);
    kill_and_expect_nothing_left(child.id(), &mark, || {
        child.wait().unwrap();
    });
}

#[test]
fn a_foreground_bash_of_toolhost_mcp_leaves_nothing() {
    let _serial = serial();
    let env = Env::new();
    let mark = unique_mark("mcp");
    let mut server = mcp(&env);
    // Not waited for: it runs until toolhost dies.
    server.send_request(
        "tools/call",
        json!({"name": "bash", "arguments": bash_args(marked_command(&mark, TREE), false)}),
    );
    wait_for_tree(&mark);
    kill_mcp(server, &mark);
}

#[test]
fn a_background_job_leaves_nothing() {
    let _serial = serial();
    let env = Env::new();
    let mark = unique_mark("job");
    let mut server = mcp(&env);
    let started = call_ok(&mut server, "bash", bash_args(marked_command(&mark, TREE), true));
    assert_eq!(started["structuredContent"]["kind"], "background", "{started}");
    wait_for_tree(&mark);
    kill_mcp(server, &mark);
}

#[test]
fn a_terminals_background_job_leaves_nothing() {
    let _serial = serial();
    let env = Env::new();
    let mark = unique_mark("terminal");
    let mut server = mcp(&env);
    let opened = call_ok(&mut server, "terminal_open", json!({"type": "bash"}));
    let id = opened["structuredContent"]["sessionId"].as_str().unwrap().to_owned();
    // A job of the interactive shell: a process group of its own inside the terminal's session.
    call_ok(
        &mut server,
        "terminal_send",
        json!({"sessionId": id, "text": marked_command(&mark, &format!("{TREE} &")), "timeout_ms": 5000}),
    );
    wait_for_tree(&mark);
    kill_mcp(server, &mark);
}

fn real_clangd() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["clangd", "clangd-19", "clangd-18", "clangd-17", "clangd-16", "clangd-14"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate.canonicalize().unwrap();
            }
        }
    }
    panic!("clangd is required (cargo xtask test installs it)");
}

/// A TOML basic string holding `text`.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

#[test]
fn a_language_server_leaves_nothing() {
    let _serial = serial();
    let env = Env::new();
    let mark = unique_mark("lsp");
    env.write(
        "main.c",
        "static int add(int a, int b) { return a + b; }\nint main(void) { return add(1, 2); }\n",
    );
    // clangd started by a shell that first put two sleeps in the background: the server's tree.
    let script = marked_command(&mark, &format!("{TREE} & exec {}", real_clangd().display()));
    env.write_user_config(&format!(
        "[lsp.servers.kill9]\ncommand = \"/bin/sh\"\nargs = [\"-c\", {}]\nextensions = {{ \".c\" = \"c\" }}\n",
        toml_string(&script)
    ));
    let mut server = mcp(&env);
    let result = call_ok(
        &mut server,
        "lsp",
        json!({"operation": "goToDefinition", "file_path": "main.c", "line": 2, "character": 26}),
    );
    assert!(mcp::text_of(&result).contains("main.c:1:12"), "{result}");
    wait_for_tree(&mark);
    assert!(marked(&mark).iter().any(|(_, _, comm)| comm.starts_with("clangd")));
    kill_mcp(server, &mark);
}

#[test]
fn an_mcp_server_leaves_nothing() {
    let _serial = serial();
    let env = Env::new();
    let mark = unique_mark("mcp-server");
    let python = workspace_root().join(".client-tools/py/bin/python");
    assert!(python.exists(), "{} is missing: run `cargo xtask install-deps`", python.display());
    let script = marked_command(
        &mark,
        &format!(
            "{TREE} & exec {} {}",
            python.display(),
            workspace_root().join("tests/mcp-servers/scripted.py").display()
        ),
    );
    env.write_user_config(&format!(
        "[mcp.servers.kill9]\ncommand = \"/bin/sh\"\nargs = [\"-c\", {}]\nenv = {{ SCRIPTED_STATE = {} }}\n",
        toml_string(&script),
        toml_string(&env.state.display().to_string())
    ));
    let mut server = mcp(&env);
    call_ok(&mut server, "mcp__kill9__point", json!({}));
    wait_for_tree(&mark);
    assert!(marked(&mark).iter().any(|(_, _, comm)| comm.starts_with("python")));
    kill_mcp(server, &mark);
}
