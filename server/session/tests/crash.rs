//! Crash test: a child process (this test binary re-executed with `CHILD_ENV` set) opens a log —
//! repairing what the previous child left — and appends in a loop, printing each seq only after
//! its append returned. The parent `kill -9`s it at random moments, sometimes adds a torn tail of
//! its own (a crash mid-write on real hardware), and checks after every kill that:
//! every reported seq is in the log with the content the child wrote, the log has no gaps, the
//! intact prefix survived (at most the torn tail was dropped), and the next child's appends start
//! on a fresh line.
#![allow(clippy::unwrap_used)]

use rand::Rng;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolhost_protocol::session_log::{ToolCallEvent, ToolResultEvent};
use toolhost_protocol::{ContentBlock, ErrorInfo};
use toolhost_session::{OUTCOME_UNKNOWN_CODE, SessionLog, read_session};

const CHILD_ENV: &str = "TOOLHOST_SESSION_CRASH_CHILD";
const KILLS: usize = 300;
const KILLS_PER_SESSION: usize = 30;

/// The child's entry point; a no-op in a normal test run.
#[test]
fn crash_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return };
    let mut parts = spec.split('\n');
    let (sessions, root, id) =
        (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    let mut out = std::io::stdout();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (log, _) = match SessionLog::open(Path::new(sessions), Path::new(root), id, true) {
        Ok(opened) => opened,
        Err(e) => {
            writeln!(out, "ERR open: {e}").unwrap();
            return;
        }
    };
    let pid = std::process::id();
    let mut report = |seq: u64, tag: String| {
        // Written straight to fd 1 (not print!, which the harness may capture) and flushed, so
        // the line exists before the next append starts.
        writeln!(out, "SEQ {seq} {tag}").unwrap();
        out.flush().unwrap();
    };
    rt.block_on(async {
        for i in 0.. {
            let call_id = format!("c-{pid}-{i}");
            let call = ToolCallEvent {
                call_id: call_id.clone(),
                name: "edit".into(),
                arguments: json!({"file_path": "é/a.txt", "old_string": "x", "new_string": "y"}),
                card: None,
                caller: None,
                parent_call_id: None,
            };
            match log.append_tool_call(&call).await {
                Ok(seq) => report(seq, format!("call:{call_id}")),
                Err(e) => return report(u64::MAX, format!("ERR {e}")),
            }
            log.observe(&format!("/w/{i}"), Some("v"));
            // Two appends in flight together exercise group commit.
            let note = format!("n-{pid}-{i}");
            let path = format!("/w/{pid}-{i}");
            let (a, b) = tokio::join!(
                log.append_fs_observed(&path, None),
                log.append("test/note", json!({"tag": note}), true),
            );
            report(a.unwrap(), format!("obs:/w/{pid}-{i}"));
            report(b.unwrap(), format!("note:{note}"));
            let result = ToolResultEvent {
                call_id: call_id.clone(),
                name: "edit".into(),
                content: vec![ContentBlock::text("The file was updated — ok.")],
                is_error: false,
                error: None::<ErrorInfo>,
                meta: Some(json!({"diffs": [], "patch": "@@ -1,1 +1,1 @@\n-x\n+y\n"})),
                renderer_version: 1,
            };
            match log.append_tool_result(&result).await {
                Ok(seq) => report(seq, format!("result:{call_id}")),
                Err(e) => return report(u64::MAX, format!("ERR {e}")),
            }
        }
    });
}

/// seq → tag of every intact line, as the parent sees the file.
fn tags(bytes: &[u8], good_len: usize) -> Vec<String> {
    let mut out = Vec::new();
    for line in bytes[..good_len].split(|&b| b == b'\n').skip(1).filter(|l| !l.is_empty()) {
        let env: Value = serde_json::from_slice(line).unwrap();
        assert_eq!(env["seq"].as_u64().unwrap(), out.len() as u64, "seq gap");
        let data = &env["data"];
        let tag = match env["type"].as_str().unwrap() {
            "tool/call" => format!("call:{}", data["callId"].as_str().unwrap()),
            "tool/result" => format!("result:{}", data["callId"].as_str().unwrap()),
            "fs/observed" => format!("obs:{}", data["path"].as_str().unwrap()),
            "test/note" => format!("note:{}", data["tag"].as_str().unwrap()),
            other => panic!("unexpected type {other}"),
        };
        out.push(tag);
    }
    out
}

fn torn_garbage(rng: &mut impl Rng, next_seq: u64) -> Vec<u8> {
    let line = format!(
        "{{\"type\":\"tool/call\",\"seq\":{next_seq},\"time\":1,\"data\":{{\"callId\":\"torn\",\"name\":\"édit\",\"arguments\":{{}}}}}}"
    );
    match rng.random_range(0..3) {
        // A prefix, possibly cut inside the multi-byte 'é'.
        0 => line.as_bytes()[..rng.random_range(1..line.len())].to_vec(),
        // A NUL run, as an interrupted ext4 append leaves it.
        1 => vec![0; rng.random_range(1..300)],
        // An unparsable but newline-terminated last line.
        _ => format!("{}\n", &line[..20]).into_bytes(),
    }
}

#[test]
fn kill_9_at_random_moments() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("sessions");
    let root = tmp.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = rand::rng();
    let started = Instant::now();
    let (mut total_reported, mut torn_injected, mut torn_by_kill, mut max_lines) =
        (0usize, 0, 0, 0);
    let mut silent_children = 0;

    for session in 0..KILLS / KILLS_PER_SESSION {
        let id = format!("crash-{session}");
        let log_path: PathBuf =
            sessions.join(toolhost_session::workspace_key(&root)).join(&id).join("session.jsonl");
        let mut reported: BTreeMap<u64, String> = BTreeMap::new();
        let mut prefix: Vec<u8> = Vec::new();
        let mut injected_pending = false;
        let mut injected_len = 0;
        for _ in 0..KILLS_PER_SESSION {
            let mut child = Command::new(&exe)
                .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
                .env(CHILD_ENV, format!("{}\n{}\n{id}", sessions.display(), root.display()))
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let reader = std::thread::spawn(move || {
                BufReader::new(stdout).lines().map_while(Result::ok).collect::<Vec<String>>()
            });
            std::thread::sleep(Duration::from_micros(rng.random_range(3_000..45_000)));
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            let lines = reader.join().unwrap();
            silent_children += usize::from(!lines.iter().any(|l| l.starts_with("SEQ ")));
            for line in lines {
                assert!(!line.contains("ERR"), "child failed: {line}");
                if let Some(rest) = line.strip_prefix("SEQ ") {
                    let (seq, tag) = rest.split_once(' ').unwrap();
                    reported.insert(seq.parse().unwrap(), tag.to_owned());
                    total_reported += 1;
                }
            }
            if !log_path.exists() {
                continue; // killed before it created the log
            }

            // Read-only check of what the crash left.
            let bytes = std::fs::read(&log_path).unwrap();
            let view = read_session(&log_path).unwrap();
            let good_len = bytes.len() - view.torn_tail_bytes as usize;
            // A torn tail we injected survives when the next child died before repairing it.
            let repaired = !injected_pending || bytes.len() != prefix.len() + injected_len;
            torn_by_kill += usize::from(view.torn_tail_bytes > 0 && repaired);
            injected_pending = injected_pending && !repaired;
            assert!(bytes.starts_with(&prefix), "bytes before the torn tail were lost");
            let on_disk = tags(&bytes, good_len);
            for (seq, tag) in &reported {
                assert_eq!(on_disk.get(*seq as usize), Some(tag), "acknowledged seq {seq} lost");
            }
            max_lines = max_lines.max(on_disk.len());
            prefix = bytes[..good_len].to_vec();

            // Sometimes leave a torn tail of our own for the next child's repair (only on a
            // repaired log: a real writer always repairs before it appends, so torn tails never
            // stack).
            if view.torn_tail_bytes == 0 && rng.random_bool(0.35) {
                let garbage = torn_garbage(&mut rng, view.next_seq);
                let mut f = std::fs::OpenOptions::new().append(true).open(&log_path).unwrap();
                f.write_all(&garbage).unwrap();
                torn_injected += 1;
                injected_pending = true;
                injected_len = garbage.len();
            }
        }

        // Final repair by the parent: at most the torn tail goes, every call gets a result.
        let before = std::fs::read(&log_path).unwrap();
        let (log, report) = SessionLog::open(&sessions, &root, &id, false).unwrap();
        let cut = report.torn_tail.as_ref().map_or(0, |t| t.bytes.len());
        assert_eq!(
            &before[..before.len() - cut],
            &std::fs::read(&log_path).unwrap()[..before.len() - cut]
        );
        assert!(report.view.calls.iter().all(|c| c.result.is_some()));
        let unknown = report
            .view
            .calls
            .iter()
            .filter(|c| {
                c.result
                    .as_ref()
                    .unwrap()
                    .error
                    .as_ref()
                    .is_some_and(|e| e.code == OUTCOME_UNKNOWN_CODE)
            })
            .count();
        assert!(unknown >= report.synthetic_results.len());
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let seq = rt.block_on(log.append("test/note", json!({"tag": "after"}), true)).unwrap();
        assert_eq!(seq, report.view.next_seq);
        drop(log);
        let bytes = std::fs::read(&log_path).unwrap();
        let on_disk = tags(&bytes, bytes.len());
        assert_eq!(on_disk.last().unwrap(), "note:after");
        for (seq, tag) in &reported {
            assert_eq!(
                on_disk.get(*seq as usize),
                Some(tag),
                "acknowledged seq {seq} lost after repair"
            );
        }
    }
    eprintln!(
        "crash test: {KILLS} kills in {:.1?}, {total_reported} acknowledged appends verified, \
         {torn_injected} injected torn tails, {torn_by_kill} torn tails left by kills, \
         largest log {max_lines} lines, {silent_children} children killed before their first ack",
        started.elapsed()
    );
}
