//! No call hangs the server, and a call's memory does not grow with the file it reads, through
//! the real binary (`toolhost mcp --standalone`).
//!
//! What broke: a `grep` whose `path` was a FIFO blocked forever in `open`, and every later call
//! of the MCP server waited behind it, cancellation included; a `read` with `limit: 1` of a 1 GB
//! file took 1 GB of memory (a 200 MB file, 215 MB). Every wait here has a deadline; the files
//! are sparse, so no disk is filled.
#![allow(clippy::unwrap_used)]

use crate::server;
use crate::server::proc_number;

use crate::mcp;

use mcp::{Mcp, error_code_of, text_of};
use serde_json::{Value, json};
use server::Env;
use std::path::Path;
use std::time::{Duration, Instant};

/// What "answers at once" allows for (a debug build on a busy machine included).
const AT_ONCE: Duration = Duration::from_secs(5);

const MIB: u64 = 1024 * 1024;

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

/// A started server with its handshake done; calls that do not answer in 20 s fail the test.
fn server(env: &Env) -> Mcp {
    let mut mcp = Mcp::spawn(env, &["--standalone"]);
    mcp.initialize("some-agent");
    mcp
}

/// `tools/call`, asserting it answered within [`AT_ONCE`].
fn call_at_once(mcp: &mut Mcp, name: &str, arguments: Value) -> Value {
    let started = Instant::now();
    let result = mcp.call(name, arguments.clone());
    let took = started.elapsed();
    assert!(took < AT_ONCE, "{name} {arguments} took {took:?}: {result}");
    result
}

/// A sparse file: `head`, zeros up to `size` bytes, then `tail`.
fn sparse(path: &Path, head: &[u8], size: u64, tail: &[u8]) {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = std::fs::File::create(path).unwrap();
    file.write_all(head).unwrap();
    file.seek(SeekFrom::Start(size - tail.len() as u64)).unwrap();
    file.write_all(tail).unwrap();
}

/// Text first: a NUL in the first 8 KiB would make the file binary.
fn text_head() -> Vec<u8> {
    format!("first line\n{}\n", "x".repeat(9000)).into_bytes()
}

#[test]
fn grep_of_a_fifo_no_longer_hangs_the_server() {
    let env = Env::new();
    env.write("a.txt", "needle\n");
    mkfifo(&env.root.join("pipe"));
    let mut mcp = server(&env);

    let grep = call_at_once(&mut mcp, "grep", json!({"pattern": "x", "path": "pipe"}));
    assert_eq!(grep["isError"], true, "{grep}");
    assert_eq!(error_code_of(&grep).as_deref(), Some("SEARCH_NOT_REGULAR_FILE"), "{grep}");
    let message = "grep cannot search \"pipe\": a FIFO is not a regular file or directory";
    assert!(text_of(&grep).contains(message), "{grep}");
    // The server is not stuck behind it.
    let read = call_at_once(&mut mcp, "read", json!({"file_path": "a.txt"}));
    assert!(text_of(&read).contains("1: needle"), "{read}");
    // Over the tree the FIFO is skipped.
    let grep = call_at_once(&mut mcp, "grep", json!({"pattern": "needle"}));
    assert_eq!(text_of(&grep), "Found 1 match\n\na.txt\nLine 1: needle", "{grep}");

    // A call cancelled while it is reading returns at once: a read of a 64 GiB (sparse) file,
    // cancelled once the server has read 64 MiB of it. The grep after it answers at once, and the
    // read's result is logged as aborted.
    sparse(&env.root.join("huge.txt"), &text_head(), 64 * 1024 * MIB, b"\n");
    let pid = mcp.child.id();
    let before = proc_number(pid, "io", "rchar:");
    let id = mcp.send_request(
        "tools/call",
        json!({"name": "read", "arguments": {"file_path": "huge.txt", "limit": 1}}),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while proc_number(pid, "io", "rchar:") < before + 64 * MIB {
        assert!(Instant::now() < deadline, "the read never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    mcp.notify("notifications/cancelled", json!({"requestId": id, "reason": "user"}));
    let grep = call_at_once(&mut mcp, "grep", json!({"pattern": "needle", "include": "a.txt"}));
    assert_eq!(grep["isError"], false, "{grep}");
    let late = mcp.wait_for(Duration::from_millis(200), |m| m.get("id") == Some(&id));
    assert!(late.is_none(), "a cancelled request was answered: {late:?}");
    drop(mcp);
    let logs = env.session_logs();
    let id = logs[0].parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
    let aborted = env.session_events(&id).into_iter().any(|e| {
        e["type"] == "tool/result"
            && e["data"]["error"]["code"].as_str().is_some_and(|c| c.ends_with("ABORTED"))
    });
    assert!(aborted, "the cancelled read's result was not logged as aborted");
}

#[test]
fn read_of_a_fifo_no_longer_hangs_the_server() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    mkfifo(&env.root.join("pipe"));
    let mut mcp = server(&env);
    let read = call_at_once(&mut mcp, "read", json!({"file_path": "pipe"}));
    assert_eq!(error_code_of(&read).as_deref(), Some("FS_NOT_REGULAR_FILE"), "{read}");
    let read = call_at_once(&mut mcp, "read", json!({"file_path": "a.txt"}));
    assert!(text_of(&read).contains("1: hello"), "{read}");
}

#[test]
fn glob_over_a_tree_with_a_fifo_no_longer_hangs_the_server() {
    let env = Env::new();
    env.write("src/a.txt", "needle\n");
    mkfifo(&env.root.join("src/pipe"));
    // A FIFO where an ignore file is read: the folder holding it is left out of grep.
    env.write("trap/b.txt", "needle\n");
    mkfifo(&env.root.join("trap/.gitignore"));
    let mut mcp = server(&env);
    let glob = call_at_once(&mut mcp, "glob", json!({"pattern": "**/*"}));
    assert_eq!(glob["isError"], false, "{glob}");
    let listed = text_of(&glob);
    let mut paths: Vec<&str> = listed.lines().collect();
    paths.sort_unstable();
    assert_eq!(paths, ["src/a.txt", "trap/b.txt"], "{glob}");
    let glob = call_at_once(&mut mcp, "glob", json!({"pattern": "*", "path": "src/pipe"}));
    assert_eq!(error_code_of(&glob).as_deref(), Some("SEARCH_NOT_REGULAR_FILE"), "{glob}");
    let grep = call_at_once(&mut mcp, "grep", json!({"pattern": "needle"}));
    assert_eq!(text_of(&grep), "Found 1 match\n\nsrc/a.txt\nLine 1: needle", "{grep}");
    let read = call_at_once(&mut mcp, "read", json!({"file_path": "src/a.txt"}));
    assert!(text_of(&read).contains("1: needle"), "{read}");
}

/// Reads one line of a `size`-byte sparse file through the server and returns the server's peak
/// resident memory (VmHWM) in bytes.
fn peak_after_reading_one_line(size: u64) -> u64 {
    let env = Env::new();
    sparse(&env.root.join("big.txt"), &text_head(), size, b"\nlast\n");
    let mut mcp = server(&env);
    mcp.timeout = Duration::from_secs(120);
    let read = mcp.call("read", json!({"file_path": "big.txt", "limit": 1}));
    assert_eq!(read["isError"], false, "{read}");
    assert!(text_of(&read).contains("1: first line\n"), "{read}");
    assert!(text_of(&read).contains("(Showing lines 1-1 of 4. Use offset=2 to continue.)"));
    // The line count and the version cover the whole file: its last line is there to read.
    let last = mcp.call("read", json!({"file_path": "big.txt", "offset": 4}));
    assert!(text_of(&last).contains("4: last\n"), "{last}");
    proc_number(mcp.child.id(), "status", "VmHWM:") * 1024
}

#[test]
fn reading_one_line_of_a_1_gb_file_stays_under_64_mib() {
    let peak = peak_after_reading_one_line(1024 * MIB);
    println!("peak RSS reading one line of a 1 GiB file: {:.1} MiB", peak as f64 / MIB as f64);
    assert!(peak < 64 * MIB, "peak RSS {} MiB", peak / MIB);
}

#[test]
fn reading_one_line_of_a_200_mb_file_stays_under_64_mib() {
    let peak = peak_after_reading_one_line(200 * MIB);
    println!("peak RSS reading one line of a 200 MiB file: {:.1} MiB", peak as f64 / MIB as f64);
    assert!(peak < 64 * MIB, "peak RSS {} MiB", peak / MIB);
}
