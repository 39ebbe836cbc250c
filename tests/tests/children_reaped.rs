//! Every child toolhost starts is gone afterwards — not running, not `<defunct>` — checked in
//! `/proc`. The language server is real clangd (its main thread names itself `clangd.main`);
//! any clangd process that started after this test did and still exists in any state is a leak
//! (nothing else in this test binary starts one):
//!
//! 1. twenty one-shot `toolhost call lsp` runs;
//! 2. `toolhost serve` whose client goes away (its stdin closes);
//! 3. `toolhost serve` stopped by SIGTERM;
//! 4. `toolhost serve` killed by SIGKILL together with its client: clangd gets the parent-death
//!    signal. Nothing can reap it in a killed process, so this test process is made the
//!    subreaper of its descendants (as an init would be) and must find nothing left alive.
//!
//! One test function: it reaps any child of this process, which must not race other tests.
#![allow(clippy::unwrap_used)]

#[path = "support/server.rs"]
mod server;

use serde_json::json;
use server::{Env, binary};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The start time (clock ticks since boot, `/proc/<pid>/stat` field 22) of this test process:
/// clangd processes that started later are this test's.
fn own_start() -> u64 {
    start_time(std::process::id()).unwrap()
}

fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    // `state` is field 3; `starttime` is field 22, i.e. index 19 after the comm.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// clangd processes (running or defunct) that started after this test, with their state letter.
fn ours() -> Vec<(u32, char)> {
    let since = own_start();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        if stat[open + 1..close].starts_with("clangd")
            && start_time(pid).is_some_and(|t| t >= since)
        {
            out.push((pid, stat[close + 2..].chars().next().unwrap_or('?')));
        }
    }
    out
}

/// Waits (bounded) until none of this test's clangd processes exists; returns what is left.
fn settle() -> Vec<(u32, char)> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let left = ours();
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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

/// A workspace with a C file; clangd from the user config.
fn setup() -> Env {
    let env = Env::new();
    env.write(
        "main.c",
        "static int add(int a, int b) { return a + b; }\nint main(void) { return add(1, 2); }\n",
    );
    let config_dir = env.config.join("toolhost");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(
        config_dir.join("config.toml"),
        format!(
            "[lsp.servers.testc]\ncommand = \"{}\"\nextensions = {{ \".c\" = \"c\" }}\n",
            real_clangd().display()
        ),
    )
    .unwrap();
    env
}

fn lsp_args() -> serde_json::Value {
    json!({"operation": "goToDefinition", "file_path": "main.c", "line": 2, "character": 26})
}

fn started_server(env: &Env) -> toolhost_harness::client::Client {
    let mut client = env.start(json!({}));
    let out = client.call_tool("lsp", lsp_args()).unwrap();
    assert_eq!(out["result"]["isError"], false, "{out}");
    assert!(!ours().is_empty(), "clangd should be running");
    client
}

/// Reaps every exited child of this process (this process is the subreaper in case 4).
fn reap_children() {
    use rustix::process::{WaitOptions, wait};
    while let Ok(Some(_)) = wait(WaitOptions::NOHANG) {}
}

#[test]
fn no_language_server_survives_toolhost_in_any_state() {
    let env = setup();
    let bin = binary();

    // 1. Twenty one-shot calls.
    let started = Instant::now();
    for i in 0..20 {
        let out = Command::new(&bin)
            .args(["call", "lsp", &lsp_args().to_string()])
            .current_dir(&env.root)
            .envs(env.env())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "call {i}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("main.c:1:12"));
        let left = ours();
        assert!(left.is_empty(), "after call {i}: {left:?} (state letters: Z = defunct)");
    }
    println!("20 one-shot lsp calls in {:?}, no clangd left", started.elapsed());

    // 2. The client goes away: its end of stdin closes.
    let mut client = started_server(&env);
    client.close_stdin();
    let status = client.wait(Duration::from_secs(5)).unwrap();
    assert!(status.is_some(), "serve did not exit after its client went away");
    assert_eq!(settle(), vec![], "after the client went away");

    // 3. SIGTERM to serve.
    let mut client = started_server(&env);
    let pid = rustix::process::Pid::from_raw(client.pid() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = client.wait(Duration::from_secs(5)).unwrap();
    assert!(status.is_some(), "serve did not stop on SIGTERM");
    assert_eq!(settle(), vec![], "after SIGTERM");

    // 4. SIGKILL to serve (and its client, this test, "dies" with it: nothing shuts down).
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).unwrap();
    let mut client = started_server(&env);
    client.kill();
    let until = Instant::now() + Duration::from_secs(5);
    let left = loop {
        reap_children();
        let left = ours();
        if left.is_empty() || Instant::now() > until {
            break left;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(left, vec![], "after SIGKILL of serve: the parent-death signal must stop clangd");
}
