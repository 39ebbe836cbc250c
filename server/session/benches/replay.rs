//! Replay benchmark: writes a 100,000-event log (50,000 edit `tool/call` + `tool/result` pairs
//! with realistic diff meta and patch), then times `read_session` + `replay_cards`. Also times
//! durable appends, one at a time and from many concurrent tasks (group commit).
//! Target: read + replay of 100,000 events in under 1 s.
#![allow(clippy::unwrap_used)]

use serde_json::json;
use std::io::{BufWriter, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_protocol::ContentBlock;
use toolhost_protocol::session_log::{
    Envelope, LOG_VERSION, SessionHeader, ToolCallEvent, ToolResultEvent,
};
use toolhost_session::{SessionLog, read_session, replay_cards};

const PAIRS: usize = 50_000;

fn edit_pair(i: usize) -> (ToolCallEvent, ToolResultEvent) {
    let path = format!("src/module_{}/file_{}.rs", i % 37, i % 211);
    let line = 10 + i % 400;
    let old = format!("    let value = compute_{i}(input, &config);");
    let new = format!("    let value = compute_{i}(input, &config).context(\"compute {i}\")?;");
    let ctx_before = [
        "    let config = Config::load(path)?;",
        "    // Read the input once.",
        "    let input = read(path)?;",
    ];
    let ctx_after = ["    if value.is_empty() {", "        return Ok(None);", "    }"];
    let mut patch = format!("--- a/{path}\n+++ b/{path}\n@@ -{},7 +{},7 @@\n", line - 3, line - 3);
    for c in ctx_before {
        patch.push_str(&format!(" {c}\n"));
    }
    patch.push_str(&format!("-{old}\n+{new}\n"));
    for c in ctx_after {
        patch.push_str(&format!(" {c}\n"));
    }
    let old_text = [&ctx_before[..], &[old.as_str()], &ctx_after[..]].concat().join("\n");
    let new_text = [&ctx_before[..], &[new.as_str()], &ctx_after[..]].concat().join("\n");
    let call_id = format!("call_{i}");
    let call = ToolCallEvent {
        call_id: call_id.clone(),
        name: "edit".into(),
        arguments: json!({"file_path": path, "old_string": old, "new_string": new}),
        card: None,
        caller: None,
        parent_call_id: None,
    };
    let result = ToolResultEvent {
        call_id,
        name: "edit".into(),
        content: vec![ContentBlock::text(format!(
            "The file /work/project/{path} has been updated successfully."
        ))],
        is_error: false,
        error: None,
        meta: Some(json!({
            "diffs": [{
                "path": path, "oldText": old_text, "newText": new_text,
                "oldStart": line - 3, "oldLines": 7, "newStart": line - 3, "newLines": 7
            }],
            "patch": patch
        })),
        renderer_version: 1,
    };
    (call, result)
}

fn write_log(path: &std::path::Path) -> u64 {
    let mut out = BufWriter::new(std::fs::File::create(path).unwrap());
    let header = SessionHeader {
        kind: "session".into(),
        version: LOG_VERSION,
        id: "bench".into(),
        cwd: "/work/project".into(),
        created_at: 1_760_000_000_000,
    };
    serde_json::to_writer(&mut out, &header).unwrap();
    out.write_all(b"\n").unwrap();
    let mut seq = 0;
    for i in 0..PAIRS {
        let (call, result) = edit_pair(i);
        for (kind, data) in [
            ("tool/call", serde_json::to_value(call).unwrap()),
            ("tool/result", serde_json::to_value(result).unwrap()),
        ] {
            let env = Envelope {
                kind: kind.into(),
                seq,
                time: 1_760_000_000_000 + seq,
                data,
                externalized: Vec::new(),
                ignorable: false,
            };
            serde_json::to_writer(&mut out, &env).unwrap();
            out.write_all(b"\n").unwrap();
            seq += 1;
        }
    }
    out.flush().unwrap();
    seq
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let log_path = tmp.path().join("session.jsonl");
    let events = write_log(&log_path);
    let size = std::fs::metadata(&log_path).unwrap().len();
    println!("log: {events} events, {:.1} MiB", size as f64 / (1024.0 * 1024.0));

    let mut times: Vec<(Duration, Duration)> = Vec::new();
    for _ in 0..5 {
        let t0 = Instant::now();
        let view = read_session(&log_path).unwrap();
        let t1 = Instant::now();
        let cards = replay_cards(&view, "/work/project", |_| Some(1));
        let t2 = Instant::now();
        assert_eq!(cards.len(), PAIRS);
        assert!(cards.iter().all(|c| c.card.hunks.is_some()));
        times.push((t1 - t0, t2 - t1));
    }
    times.sort_by_key(|(r, p)| *r + *p);
    let (read, replay) = times[times.len() / 2];
    let total = read + replay;
    println!(
        "read_session + replay_cards (median of 5): {:.0} ms ({:.0} ms read, {:.0} ms replay) = {:.0} events/s{}",
        total.as_secs_f64() * 1e3,
        read.as_secs_f64() * 1e3,
        replay.as_secs_f64() * 1e3,
        events as f64 / total.as_secs_f64(),
        if total < Duration::from_secs(1) {
            "  [target < 1 s: met]"
        } else {
            "  [target < 1 s: MISSED]"
        }
    );

    // Durable appends through the writer thread.
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let sessions = tmp.path().join("sessions");
    let (log, _) = SessionLog::open(&sessions, tmp.path(), "appends", true).unwrap();
    let (call, result) = edit_pair(1);
    let n = 2_000;
    let t0 = Instant::now();
    rt.block_on(async {
        for _ in 0..n / 2 {
            log.append_tool_call(&call).await.unwrap();
            log.append_tool_result(&result).await.unwrap();
        }
    });
    let sequential = t0.elapsed();
    println!(
        "sequential durable appends: {n} in {:.0} ms = {:.0} appends/s",
        sequential.as_secs_f64() * 1e3,
        n as f64 / sequential.as_secs_f64()
    );
    let log = Arc::new(log);
    let tasks = 64;
    let per_task = 320;
    let t0 = Instant::now();
    rt.block_on(async {
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let (log, result) = (log.clone(), result.clone());
                tokio::spawn(async move {
                    for _ in 0..per_task {
                        log.append_tool_result(&result).await.unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
    });
    let concurrent = t0.elapsed();
    let total_appends = tasks * per_task;
    println!(
        "concurrent durable appends ({tasks} tasks, group commit): {total_appends} in {:.0} ms = {:.0} appends/s",
        concurrent.as_secs_f64() * 1e3,
        total_appends as f64 / concurrent.as_secs_f64()
    );
}
