//! Spawned processes of an execution world (`process/spawn`, `process/write`, `process/signal`,
//! `process/output`, `process/exited`) through a real `toolhost exec-server`: stdin written and
//! closed, stdout and stderr apart and in order, exit codes and signals, a flood of output
//! arriving whole, and every process killed when the connection ends.

use crate::server;
use std::time::{Duration, Instant};
use toolhost_protocol::world::{OutputStream, SpawnParams};
use toolhost_world::{Launch, ProcessEvent, RemoteProcess, WorldClient};

fn spawn_params(argv: &[&str]) -> SpawnParams {
    SpawnParams { argv: argv.iter().map(|s| (*s).to_owned()).collect(), ..SpawnParams::default() }
}

/// Everything a process reports until it ends: stdout, stderr, and how it ended.
async fn collect(process: &mut RemoteProcess) -> (Vec<u8>, Vec<u8>, Option<i32>, Option<i32>) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    while let Some(event) = process.next().await {
        match event {
            ProcessEvent::Output(OutputStream::Stdout, bytes) => out.extend(bytes),
            ProcessEvent::Output(OutputStream::Stderr, bytes) => err.extend(bytes),
            ProcessEvent::Exited { exit_code, signal } => return (out, err, exit_code, signal),
        }
    }
    panic!("the connection was lost before the process ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawned_processes_stream_their_output_take_input_and_signals_and_die_with_the_connection()
{
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    let client = WorldClient::new(Launch::local(&server::binary(), ws.path()));

    let mut cat = client.spawn(&spawn_params(&["cat"])).await.unwrap();
    client.write(cat.id, b"hello ", false).await.unwrap();
    client.write(cat.id, b"world\n", true).await.unwrap();
    let closed = client.write(cat.id, b"more", false).await.unwrap_err();
    assert!(matches!(closed.code(), "PROCESS_STDIN_CLOSED" | "PROCESS_UNKNOWN"), "{closed}");
    assert_eq!(collect(&mut cat).await, (b"hello world\n".to_vec(), Vec::new(), Some(0), None));

    let mut both = client
        .spawn(&SpawnParams {
            argv: ["sh", "-c", "pwd; echo oops >&2; exit 3"].map(str::to_owned).to_vec(),
            cwd: Some("sub".to_owned()),
            ..SpawnParams::default()
        })
        .await
        .unwrap();
    let sub = ws.path().join("sub").canonicalize().unwrap();
    let (out, err, code, _) = collect(&mut both).await;
    assert_eq!(String::from_utf8(out).unwrap(), format!("{}\n", sub.display()));
    assert_eq!((err.as_slice(), code), (&b"oops\n"[..], Some(3)));

    let outside = client
        .spawn(&SpawnParams {
            argv: vec!["ls".into()],
            cwd: Some("..".into()),
            ..SpawnParams::default()
        })
        .await
        .err()
        .unwrap();
    assert_eq!(outside.code(), "FS_SANDBOX_DENIED", "{outside}");

    let mut sleeper = client.spawn(&spawn_params(&["sleep", "30"])).await.unwrap();
    client.signal(sleeper.id, "TERM").await.unwrap();
    let (_, _, code, signal) = collect(&mut sleeper).await;
    assert_eq!((code, signal), (None, Some(15)));
    let gone = client.signal(sleeper.id, "TERM").await.unwrap_err();
    assert_eq!(gone.code(), "PROCESS_UNKNOWN");

    // 48 MiB of output arrive whole (the server holds the producer up rather than queueing it).
    let mut flood =
        client.spawn(&spawn_params(&["sh", "-c", "head -c 50331648 /dev/zero"])).await.unwrap();
    let (out, _, code, _) = collect(&mut flood).await;
    assert_eq!((out.len(), code), (48 << 20, Some(0)));

    // The connection ends: its processes end with it.
    let marker = "29.7182";
    let _long = client.spawn(&spawn_params(&["sleep", marker])).await.unwrap();
    let running = || {
        let out = std::process::Command::new("pgrep")
            .args(["-f", &format!("slee[p] {marker}")])
            .output()
            .unwrap();
        !out.stdout.is_empty()
    };
    assert!(running());
    client.disconnect().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while running() {
        assert!(Instant::now() < deadline, "a process outlived its connection");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An exec-server whose client closed its input while a spawned process ran hung on its own
/// output queue (the processes' sender outlived the connection) and stayed behind.
#[test]
fn an_exec_server_exits_when_its_input_ends_and_takes_its_processes_with_it() {
    use std::io::{BufRead, BufReader, Write};
    let ws = tempfile::tempdir().unwrap();
    let mut server = std::process::Command::new(server::binary())
        .args(["exec-server", "--root"])
        .arg(ws.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = server.stdin.take().unwrap();
    let mut output = BufReader::new(server.stdout.take().unwrap());
    let marker = "28.1828";
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"world/hello","params":{"version":"1.0"}}"#.to_owned(),
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"process/spawn","params":{{"argv":["sleep","{marker}"]}}}}"#
        ),
    ] {
        writeln!(input, "{line}").unwrap();
        let mut answer = String::new();
        output.read_line(&mut answer).unwrap();
        assert!(answer.contains("\"result\""), "{answer}");
    }
    drop(input);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the exec-server did not exit after its input ended");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    let left = std::process::Command::new("pgrep")
        .args(["-f", &format!("slee[p] {marker}")])
        .output()
        .unwrap();
    assert!(left.stdout.is_empty(), "the spawned process outlived the exec-server");
}
