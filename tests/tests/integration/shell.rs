//! The shell tools over the wire (`toolhost serve`, real `bash`): the documented Native texts,
//! pagers that cannot hang a call, timeouts and cancellation that leave no process behind (checked
//! in `/proc`), output far larger than memory with a bounded server, invalid UTF-8 and a 10 MB
//! line, 100 concurrent calls, background jobs with their completion notice, live terminal output,
//! and an editor whose death takes every job with it.
#![allow(clippy::unwrap_used)]

use crate::server;
use crate::server::proc_number;

use serde_json::{Value, json};
use server::{Env, call_ok, is_response, pid_exists, raw_request, wait_response};
use std::collections::HashSet;
use std::process::Command;
use std::time::{Duration, Instant};
use toolhost_harness::client::Client;

fn text(call: &Value) -> String {
    call["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

fn bash(client: &mut Client, command: &str) -> Value {
    call_ok(client, "bash", json!({"command": command, "description": "test"}))
}

/// Pids whose command line contains `needle` (zombies excluded: they hold no resources and are
/// reaped by their parent).
fn processes_with(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
            .unwrap_or(true);
        if cmdline.contains(needle) && !zombie && pid != std::process::id() {
            out.push(pid);
        }
    }
    out
}

fn wait_gone(needle: &str, within: Duration) -> Vec<u32> {
    let deadline = Instant::now() + within;
    loop {
        let left = processes_with(needle);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `sleep` argument no other process on the machine uses.
fn unique_seconds() -> String {
    format!("{}.{}", 1000 + std::process::id() % 1000, rand_suffix())
}

fn rand_suffix() -> u32 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    nanos.subsec_nanos() % 1_000_000 + 1
}

#[test]
fn native_text_is_the_documented_format() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    let out = bash(&mut client, "echo build ok; echo warn: x >&2; exit 2");
    assert_eq!(text(&out), "build ok\n[stderr]\nwarn: x\n[exit code: 2]");
    assert_eq!(out["card"]["kind"], "terminal");
    assert_eq!(out["card"]["terminal"]["exitCode"], 2);
    assert_eq!(out["card"]["terminal"]["output"], "build ok\n[stderr]\nwarn: x");
    assert_eq!(text(&bash(&mut client, "true")), "(no output)");
    assert_eq!(text(&bash(&mut client, "printf 'a\\nb\\n'")), "a\nb\n");
    assert_eq!(text(&bash(&mut client, "kill -9 $$")), "(no output)\n[killed by signal: SIGKILL]");
    // A non-zero exit is a result, not a failure.
    assert_eq!(bash(&mut client, "exit 3")["result"]["isError"], false);
    // Each call is a fresh shell in the workspace root with the documented environment.
    let env_out = text(&bash(
        &mut client,
        "pwd; echo $NO_COLOR $TERM $PAGER $GIT_PAGER $GIT_EDITOR $GIT_TERMINAL_PROMPT; cd /; export X=1",
    ));
    assert_eq!(env_out, format!("{}\n1 dumb cat cat true 0\n", env.root.display()));
    assert_eq!(
        text(&bash(&mut client, "echo \"[$X]\"; pwd")),
        format!("[]\n{}\n", env.root.display())
    );
    // stdin is /dev/null: a command that reads it ends at once.
    assert_eq!(text(&bash(&mut client, "cat; echo done")), "done\n");
}

#[test]
fn arguments_are_checked_and_workdir_is_confined() {
    let env = Env::new();
    std::fs::create_dir(env.root.join("sub")).unwrap();
    let mut client = env.start(json!({}));
    for (args, message) in [
        (
            json!({"command": "  ", "description": "d"}),
            "invalid command: expected a non-empty string",
        ),
        (
            json!({"command": "true", "description": "\u{feff}\n"}),
            "invalid description: expected a non-empty string",
        ),
        (
            json!({"command": "true", "description": "d", "timeoutMs": -5}),
            "invalid timeoutMs: expected a positive number, got -5",
        ),
        (
            json!({"command": "true", "description": "d", "timeoutMs": -1.5}),
            "invalid timeoutMs: expected a positive number, got -1.5",
        ),
        (
            json!({"command": "true", "description": "d", "timeoutMs": "5"}),
            "invalid arguments: \"timeoutMs\" must be a number",
        ),
    ] {
        let out = client.call_tool("bash", args).unwrap();
        assert_eq!(out["result"]["isError"], true, "{out}");
        assert_eq!(text(&out), format!("Error: {message}"), "{out}");
    }
    let out = call_ok(
        &mut client,
        "bash",
        json!({"command": "pwd", "description": "d", "workdir": "sub"}),
    );
    assert_eq!(text(&out), format!("{}/sub\n", env.root.display()));
    let outside = client
        .call_tool("bash", json!({"command": "pwd", "description": "d", "workdir": "/"}))
        .unwrap();
    assert_eq!(outside["result"]["isError"], true, "{outside}");
    let escape = client
        .call_tool("bash", json!({"command": "pwd", "description": "d", "workdir": "../.."}))
        .unwrap();
    assert_eq!(escape["result"]["isError"], true, "{escape}");
    // Credentials of the server's environment never reach a command.
    let out = text(&bash(&mut client, "env | grep -c -i -E 'KEY|PASSWORD|SECRET|TOKEN' || true"));
    assert_eq!(out, "0\n");
}

#[test]
fn git_log_does_not_wait_for_a_pager() {
    let env = Env::new();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(args)
            .current_dir(&env.root)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    for i in 0..200 {
        env.write("f.txt", &format!("{i}\n"));
        git(&["add", "f.txt"]);
        git(&["commit", "-q", "-m", &format!("change {i}")]);
    }
    let mut client = env.start(json!({}));
    let start = Instant::now();
    let out = call_ok(
        &mut client,
        "bash",
        json!({"command": "git log", "description": "log", "timeoutMs": 20000}),
    );
    assert!(start.elapsed() < Duration::from_secs(15));
    let body = text(&out);
    assert!(body.contains("change 199") && body.contains("change 0"), "{body}");
    assert!(!body.contains("[timed out"), "{body}");
}

#[test]
fn a_timed_out_command_leaves_no_process_behind() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    let seconds = unique_seconds();
    let command = format!("sleep {seconds} & sleep {seconds}");
    let start = Instant::now();
    let out = call_ok(
        &mut client,
        "bash",
        json!({"command": command, "description": "t", "timeoutMs": 1000}),
    );
    assert!(start.elapsed() < Duration::from_secs(6), "{:?}", start.elapsed());
    assert_eq!(text(&out), "(no output)\n[timed out after 1000ms]\n[killed by signal: SIGTERM]");
    assert_eq!(out["card"]["terminal"]["timedOut"], true);
    assert_eq!(out["card"]["terminal"]["signal"], "SIGTERM");
    assert!(wait_gone(&seconds, Duration::from_secs(3)).is_empty(), "sleep survived the timeout");
    // A command that merely leaves a child in the background ends when the shell does.
    let seconds = unique_seconds();
    let out = bash(&mut client, &format!("sleep {seconds} & echo started"));
    assert_eq!(text(&out), "started\n");
    assert!(wait_gone(&seconds, Duration::from_secs(3)).is_empty(), "background child survived");
}

#[test]
fn cancelling_a_call_kills_its_whole_group() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    let seconds = unique_seconds();
    let id = json!(777_001);
    let params = json!({
        "name": "bash",
        "callId": "cancel-me",
        "arguments": {"command": format!("sleep {seconds} & sleep {seconds} & wait"), "description": "t"}
    });
    client.write_raw(&raw_request(id.clone(), "toolhost/callTool", params)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes_with(&seconds).len() < 2 {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    client.notify("$/cancelRequest", json!({"id": id})).unwrap();
    let reply = wait_response(&mut client, &id, Duration::from_secs(10)).unwrap();
    assert_eq!(reply["error"]["code"], -32800, "{reply}");
    assert!(wait_gone(&seconds, Duration::from_secs(5)).is_empty(), "cancelled command survived");
}

#[test]
fn two_gib_of_output_keep_the_server_small_and_the_spill_bounded() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    // Warm up: the first call loads what every call needs.
    bash(&mut client, "yes | head -c 1M");
    let before = proc_number(client.pid(), "status", "VmHWM:");
    let mut client_timeout = client.timeout;
    client_timeout = client_timeout.max(Duration::from_secs(120));
    client.timeout = client_timeout;
    let out = call_ok(
        &mut client,
        "bash",
        json!({"command": "yes | head -c 2G", "description": "flood", "timeoutMs": 120000}),
    );
    let after = proc_number(client.pid(), "status", "VmHWM:");
    let growth_mib = (after.saturating_sub(before)) as f64 / 1024.0;
    eprintln!("RSS peak before {before} KiB, after {after} KiB: growth {growth_mib:.1} MiB");
    assert!(growth_mib < 16.0, "RSS grew by {growth_mib:.1} MiB");
    let card = &out["card"]["terminal"];
    let spill = card["spillPaths"][0].as_str().unwrap_or_else(|| panic!("no spill path: {out}"));
    let spilled = std::fs::metadata(spill).unwrap().len();
    let cap = 64 * 1024 * 1024;
    assert!(spilled > cap && spilled < cap + 200, "spill file holds {spilled} bytes");
    let bytes = std::fs::read(spill).unwrap();
    assert!(bytes[..cap as usize].chunks(2).all(|c| c == b"y\n" || c == b"y"));
    let tail = String::from_utf8_lossy(&bytes[cap as usize..]).into_owned();
    assert_eq!(
        tail,
        format!("\n[spill truncated: the first {cap} of 2147483648 bytes are kept]\n")
    );
}

#[test]
fn invalid_utf8_and_a_ten_megabyte_line() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    assert_eq!(text(&bash(&mut client, "printf 'a\\377b\\n'")), "a\u{fffd}b\n");
    let out = bash(&mut client, "head -c 10000000 /dev/zero | tr '\\0' x; echo; echo end");
    let card = &out["card"]["terminal"];
    let spill = card["spillPaths"][0].as_str().unwrap();
    assert_eq!(std::fs::metadata(spill).unwrap().len(), 10_000_005);
    // What the model reads is bounded (the generic spill may shorten it further).
    assert!(text(&out).len() < 70_000, "{}", text(&out).len());
    assert!(text(&out).contains("end\n"));
}

#[test]
fn a_hundred_concurrent_calls_all_answer() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    client.timeout = Duration::from_secs(60);
    let ids: Vec<Value> = (0..100).map(|i| json!(900_000 + i)).collect();
    for (i, id) in ids.iter().enumerate() {
        let params = json!({"name": "bash", "arguments": {"command": format!("echo call-{i}"), "description": "c"}});
        client.write_raw(&raw_request(id.clone(), "toolhost/callTool", params)).unwrap();
    }
    let mut seen = HashSet::new();
    for (i, id) in ids.iter().enumerate() {
        let reply = wait_response(&mut client, id, Duration::from_secs(60))
            .unwrap_or_else(|| panic!("no answer for call {i}"));
        assert_eq!(
            reply["result"]["result"]["content"][0]["text"],
            format!("call-{i}\n"),
            "{reply}"
        );
        seen.insert(i);
    }
    assert_eq!(seen.len(), 100);
    assert!(client.seen.iter().filter(|m| is_response(m)).count() >= 100);
}

#[test]
fn background_jobs_report_output_and_their_end() {
    let env = Env::new();
    let session = "jobs-test";
    let mut client = env.start(json!({"session_id": session}));
    let out = call_ok(
        &mut client,
        "bash",
        json!({"command": "echo one; sleep 0.3; echo two; exit 4", "description": "bg", "run_in_background": true}),
    );
    assert_eq!(text(&out), "started background job bash-1");
    assert_eq!(out["result"]["value"], json!({"kind": "background", "jobId": "bash-1"}));
    let out = call_ok(
        &mut client,
        "job_output",
        json!({"job_id": "bash-1", "wait": true, "timeout_ms": 10000}),
    );
    assert_eq!(text(&out), "one\ntwo\n[status: completed, exit code: 4]");
    // Deltas are consumed.
    let out = call_ok(&mut client, "job_output", json!({"job_id": "bash-1"}));
    assert_eq!(text(&out), "(no new output)\n[status: completed, exit code: 4]");
    let notice = client
        .wait_for(Duration::from_secs(5), |m| m["method"] == "toolhost/notice")
        .expect("no completion notice");
    assert_eq!(
        notice["params"]["text"],
        "background job bash-1 (bash: echo one; sleep 0.3; echo two; exit 4) finished [status: completed, exit code: 4]. Read its output with job_output."
    );
    // A long job, listed, then stopped.
    let seconds = unique_seconds();
    call_ok(
        &mut client,
        "bash",
        json!({"command": format!("sleep {seconds}"), "description": "bg", "run_in_background": true}),
    );
    let list = text(&call_ok(&mut client, "job_list", json!({})));
    assert_eq!(
        list,
        format!(
            "bash-1 [bash] completed — echo one; sleep 0.3; echo two; exit 4\nbash-2 [bash] running — sleep {seconds}"
        )
    );
    let kill = call_ok(&mut client, "job_kill", json!({"job_id": "bash-2"}));
    assert_eq!(text(&kill), "requested cancellation of job bash-2");
    let out = call_ok(&mut client, "job_output", json!({"job_id": "bash-2", "wait": true}));
    assert_eq!(text(&out), "(no new output)\n[status: killed, signal: SIGTERM]");
    assert!(wait_gone(&seconds, Duration::from_secs(3)).is_empty());
    let again = call_ok(&mut client, "job_kill", json!({"job_id": "bash-2"}));
    assert_eq!(text(&again), "job bash-2 had already finished [status: killed, signal: SIGTERM]");
    // Errors.
    for (args, message) in [
        (json!({"job_id": "bash-99"}), "Error: unknown job bash-99"),
        (json!({"job_id": ""}), "Error: invalid job_id: expected a non-empty string, got \"\""),
    ] {
        let out = client.call_tool("job_output", args).unwrap();
        assert_eq!(text(&out), message);
    }
    // The notices are in the session log.
    client.shutdown().unwrap();
    let notices =
        env.session_events(session).into_iter().filter(|e| e["type"] == "job/notice").count();
    assert_eq!(notices, 2);
}

#[test]
fn at_most_ten_jobs_run_per_session() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    let seconds = unique_seconds();
    for _ in 0..10 {
        call_ok(
            &mut client,
            "bash",
            json!({"command": format!("sleep {seconds}"), "description": "bg", "run_in_background": true}),
        );
    }
    let out = client
        .call_tool(
            "bash",
            json!({"command": "true", "description": "bg", "run_in_background": true}),
        )
        .unwrap();
    assert_eq!(out["result"]["isError"], true);
    assert!(text(&out).contains("job_kill"), "{out}");
    client.shutdown().unwrap();
    assert!(wait_gone(&seconds, Duration::from_secs(5)).is_empty(), "jobs outlived the server");
}

#[test]
fn the_editor_dying_takes_every_job_with_it() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    let seconds = unique_seconds();
    for _ in 0..3 {
        call_ok(
            &mut client,
            "bash",
            json!({"command": format!("sleep {seconds} & sleep {seconds}"), "description": "bg", "run_in_background": true}),
        );
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_with(&seconds).len() < 6 {
        assert!(Instant::now() < deadline, "jobs did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = client.pid();
    client.close_stdin();
    client.wait(Duration::from_secs(10)).unwrap();
    assert!(!pid_exists(pid) || client.wait(Duration::from_secs(1)).unwrap().is_some());
    assert!(wait_gone(&seconds, Duration::from_secs(5)).is_empty(), "a job outlived its editor");
}

#[test]
fn live_output_streams_to_the_editor_while_the_command_runs() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    let id = json!(424_242);
    let params = json!({
        "name": "bash",
        "callId": "live-1",
        "arguments": {"command": "for i in 1 2 3 4 5; do echo line $i; sleep 0.2; done", "description": "live"}
    });
    client.write_raw(&raw_request(id.clone(), "toolhost/callTool", params)).unwrap();
    let first = client
        .wait_for(Duration::from_secs(10), |m| {
            m["method"] == "toolhost/callOutput" && m["params"]["callId"] == "live-1"
        })
        .expect("no live output");
    assert!(first["params"]["text"].as_str().unwrap().starts_with("line 1"));
    let reply = wait_response(&mut client, &id, Duration::from_secs(10)).unwrap();
    assert_eq!(
        reply["result"]["result"]["content"][0]["text"],
        "line 1\nline 2\nline 3\nline 4\nline 5\n"
    );
    let pieces: Vec<&Value> = client
        .seen
        .iter()
        .filter(|m| m["method"] == "toolhost/callOutput" && m["params"]["callId"] == "live-1")
        .collect();
    assert!(pieces.len() >= 3, "only {} live updates", pieces.len());
    let streamed: String = pieces.iter().map(|m| m["params"]["text"].as_str().unwrap()).collect();
    assert_eq!(streamed, "line 1\nline 2\nline 3\nline 4\nline 5\n");
    // The pending card was a terminal card already.
    let pending = client
        .seen
        .iter()
        .find(|m| {
            m["method"] == "toolhost/card"
                && m["params"]["callId"] == "live-1"
                && m["params"]["status"] == "pending"
        })
        .unwrap();
    assert_eq!(pending["params"]["kind"], "terminal");
    assert_eq!(
        pending["params"]["terminal"]["command"],
        "for i in 1 2 3 4 5; do echo line $i; sleep 0.2; done"
    );
}

#[test]
fn a_card_stop_button_cancels_the_call_by_its_id() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    let seconds = unique_seconds();
    let id = json!(515_151);
    let params = json!({
        "name": "bash",
        "callId": "stop-me",
        "arguments": {"command": format!("sleep {seconds}"), "description": "t"}
    });
    client.write_raw(&raw_request(id.clone(), "toolhost/callTool", params)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes_with(&seconds).is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let stopped = client.request("toolhost/cancelCall", json!({"callId": "stop-me"})).unwrap();
    assert_eq!(stopped, json!({"cancelled": true}));
    let reply = wait_response(&mut client, &id, Duration::from_secs(10)).unwrap();
    assert_eq!(reply["result"]["result"]["error"]["info"]["code"], "ABORTED", "{reply}");
    assert!(wait_gone(&seconds, Duration::from_secs(5)).is_empty());
    let again = client.request("toolhost/cancelCall", json!({"callId": "stop-me"})).unwrap();
    assert_eq!(again, json!({"cancelled": false}));
}

fn session_of(call: &Value) -> String {
    call["result"]["value"]["sessionId"].as_str().unwrap().to_owned()
}

#[test]
fn an_interactive_python_repl_is_driven_through_a_terminal() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    client.timeout = Duration::from_secs(60);
    let opened = call_ok(&mut client, "terminal_open", json!({"type": "bash", "name": "repl"}));
    let id = session_of(&opened);
    assert!(
        text(&opened).starts_with(&format!("started terminal session {id} (repl) [type: bash]\n")),
        "{}",
        text(&opened)
    );
    let send = |client: &mut Client, text: &str| {
        call_ok(
            client,
            "terminal_send",
            json!({"sessionId": id, "text": text, "timeout_ms": 20000}),
        )
    };
    let out = send(&mut client, "python3 -q");
    assert_eq!(out["result"]["value"]["waitReason"], "stdin_read", "{}", text(&out));
    assert!(text(&out).contains(">>>"), "{}", text(&out));
    let out = send(&mut client, "print(6 * 7)");
    let body = text(&out);
    assert!(body.contains("\n42\n"), "{body}");
    assert!(body.ends_with("\n[wait: stdin_read]\n[session: running]"), "{body}");
    assert_eq!(out["result"]["meta"]["waitReason"], "stdin_read");
    // A running program is interrupted with a signal; the REPL survives it.
    let out = call_ok(
        &mut client,
        "terminal_send",
        json!({"sessionId": id, "text": "import time; time.sleep(30)", "timeout_ms": 700}),
    );
    assert_eq!(out["result"]["value"]["waitReason"], "timeout", "{}", text(&out));
    let signalled =
        call_ok(&mut client, "terminal_signal", json!({"sessionId": id, "signal": "SIGINT"}));
    assert!(
        text(&signalled).starts_with("delivered SIGINT to foreground process group "),
        "{}",
        text(&signalled)
    );
    // Nothing typed: just wait until the REPL is back at its prompt.
    let out = call_ok(
        &mut client,
        "terminal_send",
        json!({"sessionId": id, "text": "", "submit": false, "timeout_ms": 20000}),
    );
    assert_eq!(out["result"]["value"]["waitReason"], "stdin_read", "{}", text(&out));
    let out = send(&mut client, "print('still here')");
    assert!(text(&out).contains("KeyboardInterrupt"), "{}", text(&out));
    assert!(text(&out).contains("still here"), "{}", text(&out));
    let out = send(&mut client, "exit()");
    assert_eq!(out["result"]["value"]["waitReason"], "stdin_read");
    // The transcript keeps everything, escape sequences removed.
    let read = call_ok(&mut client, "terminal_read", json!({"sessionId": id}));
    let transcript = text(&read);
    assert!(transcript.contains(">>> print(6 * 7)\n42\n"), "{transcript}");
    assert!(!transcript.contains('\u{1b}'), "{transcript}");
    let list = text(&call_ok(&mut client, "terminal_list", json!({})));
    assert!(list.starts_with(&format!("{id} (repl) [bash] running pid=")), "{list}");
    let out = send(&mut client, "exit");
    assert_eq!(out["result"]["value"]["waitReason"], "session_exit", "{}", text(&out));
    assert!(text(&out).ends_with("[session: exited code=0 signal=null]"), "{}", text(&out));
    let closed = call_ok(&mut client, "terminal_close", json!({"sessionId": id}));
    assert_eq!(text(&closed), format!("closed terminal session {id}"));
    let unknown = client.call_tool("terminal_send", json!({"sessionId": id, "text": "x"})).unwrap();
    assert_eq!(text(&unknown), format!("Error: unknown PTY session {id}"));
}

#[test]
fn the_plain_shell_terminal_shows_what_was_printed_since_the_send() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    client.timeout = Duration::from_secs(60);
    let opened = call_ok(&mut client, "terminal_open", json!({"type": "shell", "name": "plain"}));
    assert_eq!(text(&opened), "started terminal session pty-1 (plain) [type: shell]\ndsh> ");
    let out = call_ok(
        &mut client,
        "terminal_send",
        json!({"sessionId": "pty-1", "text": "echo hi; echo oops >&2", "timeout_ms": 20000}),
    );
    assert_eq!(
        text(&out),
        "echo hi; echo oops >&2\nhi\noops\ndsh> \n[wait: stdin_read]\n[session: running]"
    );
    let same =
        client.call_tool("terminal_open", json!({"type": "shell", "name": "plain"})).unwrap();
    assert_eq!(text(&same), "Error: PTY session name \"plain\" already exists for this owner");
    let kill =
        client.call_tool("terminal_signal", json!({"sessionId": "pty-1", "signal": "SIGKILL"}));
    assert_eq!(
        text(&kill.unwrap()),
        "Error: refusing to SIGKILL the terminal shell; terminate the terminal session instead"
    );
    for (tool, args, message) in [
        ("terminal_open", json!({"type": ""}), "type must be a non-empty string"),
        ("terminal_open", json!({"type": "fish"}), "no PTY backend registered for \"fish\""),
        (
            "terminal_send",
            json!({"sessionId": "", "text": "x"}),
            "sessionId must be a non-empty string",
        ),
        ("terminal_read", json!({"sessionId": "pty-9"}), "unknown PTY session pty-9"),
        (
            "terminal_read",
            json!({"sessionId": "pty-1", "offset": -1}),
            "PTY read offset must be a non-negative safe integer",
        ),
        (
            "terminal_read",
            json!({"sessionId": "pty-1", "count": 0.5}),
            "PTY read count must be a positive safe integer",
        ),
    ] {
        let out = client.call_tool(tool, args).unwrap();
        assert_eq!(text(&out), format!("Error: {message}"), "{out}");
    }
    let out = call_ok(&mut client, "terminal_send", json!({"sessionId": "pty-1", "text": "exit"}));
    assert!(text(&out).ends_with("\n[wait: session_exit]\n[session: exited code=0 signal=null]"));
    let out = client.call_tool("terminal_send", json!({"sessionId": "pty-1", "text": "x"}));
    assert_eq!(text(&out.unwrap()), "Error: PTY session has exited");
    let closed = call_ok(&mut client, "terminal_close", json!({"sessionId": "pty-1"}));
    assert_eq!(text(&closed), "closed terminal session pty-1");
}

#[test]
fn a_job_read_keeps_stdout_then_its_stderr() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    call_ok(
        &mut client,
        "bash",
        json!({"command": "printf out; echo err >&2; sleep 0.3; echo more >&2", "description": "bg", "run_in_background": true}),
    );
    let out = call_ok(
        &mut client,
        "job_output",
        json!({"job_id": "bash-1", "wait": true, "timeout_ms": 10000}),
    );
    assert_eq!(text(&out), "out\n[stderr]\nerr\nmore\n[status: completed, exit code: 0]");
    let out = call_ok(&mut client, "job_output", json!({"job_id": "bash-1"}));
    assert_eq!(text(&out), "(no new output)\n[status: completed, exit code: 0]");
    let bad = client
        .call_tool("job_output", json!({"job_id": "bash-1", "wait": true, "timeout_ms": 0}))
        .unwrap();
    assert_eq!(
        text(&bad),
        "Error: invalid wait timeout: expected a positive number of milliseconds, got 0"
    );
}

#[test]
fn a_pager_in_a_terminal_is_readable_and_the_session_dies_with_the_editor() {
    let env = Env::new();
    for i in 0..100 {
        env.write(&format!("f{i:03}.txt"), "x\n");
    }
    let mut client = env.start(json!({}));
    client.timeout = Duration::from_secs(60);
    let id = session_of(&call_ok(&mut client, "terminal_open", json!({"type": "bash"})));
    let out = call_ok(
        &mut client,
        "terminal_send",
        json!({"sessionId": id, "text": "ls -1 | less", "timeout_ms": 20000}),
    );
    let body = text(&out);
    // less shows the first screen and waits for a key.
    assert!(body.contains("f000.txt") && !body.contains("f099.txt"), "{body}");
    assert_eq!(out["result"]["value"]["waitReason"], "stdin_read", "{body}");
    let out = call_ok(
        &mut client,
        "terminal_send",
        json!({"sessionId": id, "text": "G", "submit": false, "timeout_ms": 20000}),
    );
    assert!(text(&out).contains("f099.txt"), "{}", text(&out));
    call_ok(
        &mut client,
        "terminal_send",
        json!({"sessionId": id, "text": "q", "submit": false, "timeout_ms": 20000}),
    );
    // A job of the interactive shell in a group of its own, then the editor goes away.
    let seconds = unique_seconds();
    call_ok(
        &mut client,
        "terminal_send",
        json!({"sessionId": id, "text": format!("sleep {seconds} &"), "timeout_ms": 5000}),
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_with(&seconds).is_empty() {
        assert!(Instant::now() < deadline, "the terminal's job did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    client.close_stdin();
    client.wait(Duration::from_secs(10)).unwrap();
    assert!(
        wait_gone(&seconds, Duration::from_secs(5)).is_empty(),
        "a terminal's job outlived its editor"
    );
}

#[test]
fn the_workspace_write_sandbox_confines_writes_and_says_what_it_enforced() {
    let env = Env::new();
    // Outside the workspace and outside the temp folder (both are writable under the sandbox):
    // a checkout may itself live in the temp folder, so take the first candidate that does not.
    let temp = std::env::temp_dir().canonicalize().unwrap();
    let base = [
        std::env::var_os("HOME").map(std::path::PathBuf::from),
        Some(std::path::PathBuf::from("/var/tmp")),
        Some(server::workspace_root().join("target")),
    ]
    .into_iter()
    .flatten()
    .filter_map(|p| p.canonicalize().ok())
    .find(|p| !p.starts_with(&temp) && !p.starts_with(&env.root))
    .expect("a writable folder outside the temp folder");
    let outside = base.join(format!(".toolhost-sandbox-test-{}", std::process::id()));
    std::fs::create_dir_all(&outside).unwrap();
    let probe = Command::new(server::binary()).args(["sandbox-exec", "--probe"]).output().unwrap();
    let enforced = String::from_utf8_lossy(&probe.stdout).trim().to_owned();
    assert!(["full", "partial", "unavailable"].contains(&enforced.as_str()), "{probe:?}");
    let mut client = env.start(json!({"shell": {"sandbox": "workspace-write"}}));
    let inside = bash(
        &mut client,
        "echo ok > inside.txt && cat inside.txt && echo tmp > \"${TMPDIR:-/tmp}/th-sandbox-$$\" && rm \"${TMPDIR:-/tmp}/th-sandbox-$$\" && echo tmp-ok",
    );
    assert_eq!(text(&inside), "ok\ntmp-ok\n");
    assert_eq!(inside["result"]["value"]["sandbox"]["enforcement"], enforced.as_str());
    assert_eq!(inside["result"]["value"]["sandbox"]["denied"], false);
    let target = outside.join("denied.txt");
    let out = bash(&mut client, &format!("echo x > {}", target.display()));
    let body = text(&out);
    if enforced == "unavailable" {
        // Nothing was confined, and the result does not pretend otherwise.
        assert_eq!(out["result"]["value"]["sandbox"]["denied"], false, "{body}");
        assert!(!body.contains("[sandbox:"), "{body}");
    } else {
        assert!(!target.exists(), "the sandbox let a write outside the workspace through");
        assert!(
            body.ends_with("Permission denied\n[sandbox: file access denied under workspace-write mode]\n[exit code: 1]"),
            "{body}"
        );
        assert_eq!(out["result"]["value"]["sandbox"]["denied"], true);
    }
    // Off by default: the same write goes through without the sandbox.
    let mut plain = env.start(json!({}));
    let out = bash(&mut plain, &format!("echo x > {} && echo written", target.display()));
    assert_eq!(text(&out), "written\n");
    assert!(out["result"]["value"].get("sandbox").is_none());
    let _ = std::fs::remove_dir_all(&outside);
}
