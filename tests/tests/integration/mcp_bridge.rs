//! The MCP bridge in the binary: `[mcp.servers.*]` through the real configuration layers (an
//! untrusted `toolhost.toml` starts nothing), lazy start for a one-shot `toolhost call`,
//! `toolhost mcp` itself as a bridged server (no loop), `toolhost mcp-servers`, and in
//! `toolhost serve`: servers started with the session, `toolhost/mcpServers` and
//! `toolhost/mcpServersChanged`, the MCP card, a server's elicitation answered in the editor, and
//! no server process left when the server is killed or its client goes away.
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::{Value, json};
use server::{Env, binary, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_harness::client::RequestHandler;

fn python() -> PathBuf {
    let python = workspace_root().join(".client-tools/py/bin/python");
    assert!(python.exists(), "{} is missing: run `cargo xtask install-deps`", python.display());
    python
}

fn scripted_entry(name: &str, state: &Path, extra: &str) -> String {
    format!(
        "[mcp.servers.{name}]\ncommand = \"{}\"\nargs = [\"{}\"]\nenv = {{ SCRIPTED_STATE = \"{}\" }}\n{extra}\n",
        python().display(),
        workspace_root().join("tests/mcp-servers/scripted.py").display(),
        state.display()
    )
}

fn toolhost(env: &Env, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(binary())
        .args(args)
        .current_dir(&env.root)
        .envs(env.env())
        .env_remove(toolhost_host::BRIDGED_ENV)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Pids the scripted server wrote at each start.
fn starts(state: &Path) -> Vec<u32> {
    std::fs::read_to_string(state.join("starts"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Whether `pid` is a live process (a zombie counts as gone: it runs nothing).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().is_some_and(|stat| {
        let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
        !matches!(state, Some(Some('Z' | 'X')) | None)
    })
}

fn gone_within(pids: &[u32], timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if pids.iter().all(|p| !alive(*p)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn the_cli_starts_only_the_server_it_needs_and_bridges_toolhost_itself() {
    let env = Env::new();
    let state = env.dir.path().join("scripted");
    std::fs::create_dir_all(&state).unwrap();
    env.write("a.txt", "hello from the workspace\n");
    let config = format!(
        "{}[mcp.servers.self]\ncommand = \"{}\"\nargs = [\"mcp\", \"--workspace\", \"{}\"]\n\n\
         [mcp.servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n",
        scripted_entry("scripted", &state, "tool_call_timeout_ms = 5000"),
        binary().display(),
        env.root.display()
    );
    env.write_user_config(&config);

    // A call of a built-in tool starts no MCP server.
    let (code, out, err) = toolhost(&env, &["call", "read", r#"{"file_path": "a.txt"}"#]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(starts(&state).is_empty(), "a server was started for a built-in tool");

    // A bridged tool starts its server only, answers, and the server is gone after the call.
    // The exit never waits for the servers that were not started (it once waited 5 s for each).
    let started = Instant::now();
    let (code, out, err) = toolhost(&env, &["call", "mcp__scripted__point", "{}", "--json"]);
    assert!(started.elapsed() < Duration::from_secs(4), "the call took {:?}", started.elapsed());
    assert_eq!(code, 0, "{out}{err}");
    let body: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(body["result"]["value"]["structuredContent"], json!({"x": 1, "y": 2}));
    assert_eq!(body["card"]["kind"], "mcp");
    assert_eq!(body["card"]["title"], "scripted · point");
    assert_eq!(body["card"]["data"]["structuredContent"], json!({"x": 1, "y": 2}));
    let pids = starts(&state);
    assert_eq!(pids.len(), 1);
    assert!(gone_within(&pids, Duration::from_secs(5)), "server {pids:?} outlived the call");

    // toolhost's own MCP server as a bridged server: its tools work, and the child (which reads
    // the same user config) starts no servers of its own.
    let (code, out, err) =
        toolhost(&env, &["call", "mcp__self__read", r#"{"file_path": "a.txt"}"#]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("hello from the workspace"), "{out}");
    assert_eq!(starts(&state).len(), 1, "the bridged toolhost started a server");

    // The status of every server; a server that cannot start is reported, not fatal.
    let (code, out, err) = toolhost(&env, &["mcp-servers", "--json"]);
    assert_eq!(code, 1, "a failed server makes the exit code 1: {out}{err}");
    let status: Value = serde_json::from_str(&out).unwrap();
    let servers = status["servers"].as_array().unwrap();
    let by_name = |name: &str| servers.iter().find(|s| s["name"] == name).unwrap().clone();
    let broken = by_name("broken");
    assert_eq!(broken["state"], "failed");
    assert!(
        broken["error"].as_str().unwrap().starts_with("cannot start /nonexistent/mcp-server"),
        "{broken}"
    );
    let scripted = by_name("scripted");
    assert_eq!(scripted["state"], "ready");
    assert_eq!(scripted["transport"], "stdio");
    assert_eq!(scripted["tools"].as_array().unwrap().len(), 18);
    let own = by_name("self");
    assert_eq!(own["state"], "ready");
    assert!(own["protocolVersion"].is_string(), "{own}");
    let own_tools: Vec<&str> =
        own["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(own_tools.contains(&"mcp__self__read"), "{own_tools:?}");
    assert!(!own_tools.iter().any(|t| t.starts_with("mcp__self__mcp__")), "{own_tools:?}");
    assert!(gone_within(&starts(&state), Duration::from_secs(5)));

    let (_, text, _) = toolhost(&env, &["mcp-servers"]);
    assert!(text.contains("scripted         ready        stdio           18 tools"), "{text}");
    assert!(text.contains("    mcp__scripted__point\n"), "{text}");
    assert!(text.contains("broken           failed       stdio           0 tools"), "{text}");
    assert!(text.contains("    error: cannot start /nonexistent/mcp-server"), "{text}");

    // The full tool list includes the bridged tools.
    let (code, out, _) = toolhost(&env, &["tools"]);
    assert_eq!(code, 0);
    assert!(out.contains("mcp__scripted__kinds"), "{out}");
}

#[test]
fn an_untrusted_workspace_starts_no_mcp_server() {
    let env = Env::new();
    let state = env.dir.path().join("scripted");
    std::fs::create_dir_all(&state).unwrap();
    env.write("toolhost.toml", &scripted_entry("evil", &state, ""));
    let (code, out, err) = toolhost(&env, &["mcp-servers"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("no MCP servers"), "{out}");
    assert!(
        err.contains("ignored mcp.servers.evil.command/args/env: the workspace is not trusted"),
        "{err}"
    );
    let (_, _, _) = toolhost(&env, &["call", "mcp__evil__point"]);
    assert!(starts(&state).is_empty(), "an untrusted workspace started a server");
}

#[test]
fn serve_runs_the_servers_of_its_session_and_leaves_none_behind() {
    let env = Env::new();
    let state = env.dir.path().join("scripted");
    let lazy_state = env.dir.path().join("lazy");
    for dir in [&state, &lazy_state] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let config = format!(
        "{}{}",
        scripted_entry("scripted", &state, ""),
        scripted_entry("later", &lazy_state, "startup = \"lazy\"")
    );
    env.write_user_config(&config);
    // The editor answers the server's elicitation (it arrives as `toolhost/askUser`).
    let asked: Arc<std::sync::Mutex<Vec<Value>>> = Arc::default();
    let handler: RequestHandler = {
        let asked = Arc::clone(&asked);
        Arc::new(move |method, params| {
            if method != "toolhost/askUser" {
                return Err((-32601, format!("unhandled {method}")));
            }
            asked.lock().unwrap().push(params.clone());
            Ok(json!({"answers": [
                {"id": "color", "selected": ["Red"]},
                {"id": "count", "selected": [], "custom": "4"}
            ]}))
        })
    };
    let mut client = env.spawn_with(&[], handler);
    let capabilities = json!({"experimental": {"toolhost": {"askUser": true}}});
    client.initialize(&env.root, json!({}), capabilities).unwrap();

    let ready = client.wait_for(Duration::from_secs(20), |n| {
        n["method"] == "toolhost/mcpServersChanged"
            && n["params"]["servers"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| s["name"] == "scripted" && s["state"] == "ready"))
    });
    assert!(ready.is_some(), "no toolhost/mcpServersChanged with the server ready");
    let status = client.request("toolhost/mcpServers", json!({})).unwrap();
    let servers = status["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "{status}");
    let later = servers.iter().find(|s| s["name"] == "later").unwrap();
    assert_eq!(later["state"], "idle", "a lazy server waits for its first call: {later}");
    assert!(starts(&lazy_state).is_empty());

    // A bridged call: the MCP card, with the structured content.
    let out = client.call_tool("mcp__scripted__point", json!({})).unwrap();
    assert_eq!(out["result"]["isError"], false, "{out}");
    assert_eq!(out["card"]["kind"], "mcp");
    assert_eq!(
        out["card"]["data"],
        json!({"server": "scripted", "tool": "point", "structuredContent": {"x": 1, "y": 2}})
    );

    // The server asks; the editor answers; the server gets typed content.
    let out = client.call_tool("mcp__scripted__ask", json!({})).unwrap();
    assert_eq!(
        out["result"]["content"][0]["text"],
        r#"{"action": "accept", "content": {"color": "r", "count": 4}}"#
    );
    let question = asked.lock().unwrap()[0].clone();
    assert_eq!(question["callId"], out["callId"]);
    assert_eq!(question["tool"], "mcp__scripted__ask");
    assert_eq!(question["questions"][0]["options"][0]["label"], "Red");

    // The lazy server starts with the first call of one of its tools.
    let out = client.call_tool("mcp__later__point", json!({})).unwrap();
    assert_eq!(out["result"]["isError"], false, "{out}");
    assert_eq!(out["card"]["kind"], "mcp", "the card is the tool's own once started: {out}");
    assert_eq!(starts(&lazy_state).len(), 1);

    // The server is killed outright: its MCP servers do not outlive it.
    let pids: Vec<u32> = starts(&state).into_iter().chain(starts(&lazy_state)).collect();
    assert_eq!(pids.len(), 2);
    client.kill();
    assert!(gone_within(&pids, Duration::from_secs(10)), "servers {pids:?} outlived toolhost");
}

#[test]
fn a_client_that_goes_away_takes_the_servers_with_it() {
    let env = Env::new();
    let state = env.dir.path().join("scripted");
    std::fs::create_dir_all(&state).unwrap();
    env.write_user_config(&scripted_entry("scripted", &state, ""));
    let mut client = env.start(json!({}));
    let ready = client.wait_for(Duration::from_secs(20), |n| {
        n["method"] == "toolhost/mcpServersChanged" && n["params"]["servers"][0]["state"] == "ready"
    });
    assert!(ready.is_some());
    let pids = starts(&state);
    assert_eq!(pids.len(), 1);
    client.close_stdin();
    let exited = client.wait(Duration::from_secs(10)).unwrap();
    assert!(exited.is_some(), "toolhost did not exit when its client went away");
    assert!(gone_within(&pids, Duration::from_secs(5)), "server {pids:?} outlived toolhost");
}
