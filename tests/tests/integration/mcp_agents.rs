//! Real agents use toolhost's tools over MCP: the Claude Code and Codex binaries from npm
//! (installed by `cargo xtask install-deps` under `.client-tools/agents`), each set up with its
//! own one-line `mcp add` command and driven by a scripted model API on 127.0.0.1 that asks for
//! a toolhost `read` then `edit`. The file changes on disk; the requests the agent sends back to
//! the model hold toolhost's Native text for those calls (not a JSON dump of the value); and the
//! editor — a harness running `toolhost serve` on the same workspace — received each call's
//! cards live, labelled with the agent. Loopback only.
#![allow(clippy::unwrap_used)]

use crate::server;

use crate::model_server;

use model_server::{ModelServer, Recorded, Reply};
use serde_json::{Value, json};
use server::{Env, binary, workspace_root};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use toolhost_harness::client::Client;

pub(crate) const CLAUDE_CODE: &str = "claude-code-2.1.328/package/claude";
const CODEX: &str = "codex-0.169.0/package/vendor/x86_64-unknown-linux-musl/bin/codex";

const ORIGINAL: &str = "fn greet() {\n    println!(\"hello\");\n}\n";
const EDITED: &str = "fn greet() {\n    println!(\"hello, toolhost\");\n}\n";

pub(crate) fn agent(rel: &str) -> PathBuf {
    let path = workspace_root().join(".client-tools/agents").join(rel);
    assert!(
        path.is_file(),
        "{} is missing: `cargo xtask install-deps` installs the agents the MCP tests drive",
        path.display()
    );
    path
}

/// The workspace with one file, the editor attached to it, and a private home for the agent.
struct Setup {
    env: Env,
    editor: Client,
    home: PathBuf,
}

fn setup() -> Setup {
    let env = Env::new();
    env.write("greet.rs", ORIGINAL);
    let editor = env.start(json!({}));
    let home = env.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    Setup { env, editor, home }
}

/// The cards the editor received for `tool`, by status.
fn cards_for(editor: &mut Client, tool: &str) -> Vec<Value> {
    editor.wait_for(Duration::from_secs(5), |m| {
        m["method"] == "toolhost/card"
            && m["params"]["tool"] == tool
            && m["params"]["status"] != "pending"
    });
    editor
        .seen
        .iter()
        .filter(|m| m["method"] == "toolhost/card" && m["params"]["tool"] == tool)
        .map(|m| m["params"].clone())
        .collect()
}

pub(crate) fn run_logged(command: &mut Command, what: &str) -> std::process::Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let out = wait_with_timeout(child, Duration::from_secs(180), what);
    if !out.status.success() {
        panic!(
            "{what} failed ({}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

fn wait_with_timeout(
    mut child: std::process::Child,
    timeout: Duration,
    what: &str,
) -> std::process::Output {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} did not finish within {timeout:?}:\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn edit_args(root: &Path) -> Value {
    json!({
        "file_path": root.join("greet.rs").display().to_string(),
        "old_string": "println!(\"hello\");",
        "new_string": "println!(\"hello, toolhost\");"
    })
}

// ---------------------------------------------------------------- Claude Code

/// Claude Code's scripted model: a toolhost `read` with `read`, then an `edit` with `edit`, then an
/// answer; side requests (a title, a summary) get plain text.
pub(crate) fn claude_script(read: Value, edit: Value) -> Box<model_server::Script> {
    Box::new(move |request: &Recorded| {
        if !request.path.starts_with("/v1/messages") || request.path.contains("count_tokens") {
            return Reply::json(&json!({"input_tokens": 10}));
        }
        let Some(body) = request.json() else { return Reply::not_found() };
        let offers_toolhost = body["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "mcp__toolhost__edit"));
        if !offers_toolhost {
            // A side request (a title, a summary): plain text.
            return model_server::anthropic_turn(
                json!({"type": "text", "text": "Greeting"}),
                "end_turn",
            );
        }
        match model_server::anthropic_tool_results(&body) {
            0 => model_server::anthropic_turn(
                json!({"type": "tool_use", "id": "toolu_read", "name": "mcp__toolhost__read",
                       "input": read}),
                "tool_use",
            ),
            1 => model_server::anthropic_turn(
                json!({"type": "tool_use", "id": "toolu_edit", "name": "mcp__toolhost__edit",
                       "input": edit}),
                "tool_use",
            ),
            _ => model_server::anthropic_turn(json!({"type": "text", "text": "Done."}), "end_turn"),
        }
    })
}

/// Runs Claude Code in `cwd` with a private `home`, against the scripted `model` only.
pub(crate) fn claude_env(command: &mut Command, cwd: &Path, home: &Path, model: &ModelServer) {
    command
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", model.base_url())
        .env("ANTHROPIC_API_KEY", "scripted")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
}

#[test]
fn claude_code_edits_through_toolhost_and_the_editor_shows_it() {
    let claude = agent(CLAUDE_CODE);
    let Setup { env, mut editor, home } = setup();
    let read = json!({"file_path": env.root.join("greet.rs").display().to_string()});
    let model = ModelServer::start(claude_script(read, edit_args(&env.root)));
    let agent_env = |command: &mut Command| claude_env(command, &env.root, &home, &model);
    // The README's one-line setup (with the test's state folder, where the editor listens).
    let toolhost = binary();
    let mut add = Command::new(&claude);
    agent_env(&mut add);
    add.args(["mcp", "add", "toolhost", "-e"])
        .arg(format!("XDG_STATE_HOME={}", env.state.display()))
        .arg("-e")
        .arg("TOOLHOST_TEST_TOOLS=1")
        .arg("--")
        .arg(&toolhost)
        .arg("mcp");
    run_logged(&mut add, "claude mcp add");

    let mut run = Command::new(&claude);
    agent_env(&mut run);
    run.args(["-p", "Make greet() say hello to toolhost."])
        .args(["--allowedTools", "mcp__toolhost__read,mcp__toolhost__edit"])
        .args(["--output-format", "json"]);
    let out = run_logged(&mut run, "claude -p");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(answer["is_error"], false, "{}", String::from_utf8_lossy(&out.stdout));

    assert_eq!(std::fs::read_to_string(env.root.join("greet.rs")).unwrap(), EDITED);
    // What Claude Code sent back to the model for the two calls: toolhost's Native text.
    let turns: Vec<Value> = model
        .recorded()
        .iter()
        .filter_map(Recorded::json)
        .filter(|b| model_server::anthropic_tool_results(b) >= 2)
        .collect();
    let last = turns.last().expect("a request after both tool calls");
    let results: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "tool_result")
        .map(|c| c["content"].to_string())
        .collect();
    assert!(
        results[0].contains("<content>") && results[0].contains("1: fn greet()"),
        "{results:?}"
    );
    assert!(
        !results[0].contains("\\\"totalLines\\\""),
        "the value's JSON reached the model: {results:?}"
    );
    assert!(results[1].contains("has been updated successfully"), "{results:?}");

    let read = cards_for(&mut editor, "read");
    assert!(read.iter().any(|c| c["status"] == "pending"), "{read:?}");
    assert!(read.iter().all(|c| c["caller"] == "claude-code"), "{read:?}");
    let edit = cards_for(&mut editor, "edit");
    let done = edit.iter().find(|c| c["status"] == "completed").expect("a completed edit card");
    assert_eq!(done["caller"], "claude-code");
    assert_eq!(done["kind"], "diff");
    assert!(done["rendered"].as_str().unwrap().contains("+    println!(\"hello, toolhost\");"));
}

// ---------------------------------------------------------------- Codex

fn codex_script(root: PathBuf) -> Box<model_server::Script> {
    Box::new(move |request: &Recorded| {
        if !request.path.ends_with("/responses") {
            return Reply::json(&json!({"data": [], "models": []}));
        }
        let Some(body) = request.json() else { return Reply::not_found() };
        let call = |id: &str, name: &str, arguments: Value| {
            json!({"type": "function_call", "namespace": "mcp__toolhost", "name": name,
                   "arguments": arguments.to_string(), "call_id": id})
        };
        match model_server::codex_outputs(&body).len() {
            0 => model_server::responses_stream(call(
                "call_read",
                "read",
                json!({"file_path": root.join("greet.rs").display().to_string()}),
            )),
            1 => model_server::responses_stream(call("call_edit", "edit", edit_args(&root))),
            _ => model_server::responses_stream(
                json!({"type": "message", "role": "assistant", "id": "msg_done",
                "content": [{"type": "output_text", "text": "Done."}]}),
            ),
        }
    })
}

#[test]
fn codex_edits_through_toolhost_and_the_editor_shows_it() {
    let codex = agent(CODEX);
    let Setup { env, mut editor, home } = setup();
    let model = ModelServer::start(codex_script(env.root.clone()));
    let agent_env = |command: &mut Command| {
        command
            .current_dir(&env.root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("CODEX_HOME", home.join(".codex"))
            .env("FAKE_KEY", "scripted");
    };
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    let toolhost = binary();
    let mut add = Command::new(&codex);
    agent_env(&mut add);
    add.args(["mcp", "add", "toolhost", "--env"])
        .arg(format!("XDG_STATE_HOME={}", env.state.display()))
        .args(["--env", "TOOLHOST_TEST_TOOLS=1", "--"])
        .arg(&toolhost)
        .arg("mcp");
    run_logged(&mut add, "codex mcp add");

    let provider = format!(
        "model_providers.fake={{name=\"fake\",base_url=\"{}/v1\",wire_api=\"responses\",env_key=\"FAKE_KEY\"}}",
        model.base_url()
    );
    let mut run = Command::new(&codex);
    agent_env(&mut run);
    run.args(["exec", "--skip-git-repo-check"])
        .args(["-c", "model=\"fake\"", "-c", "model_provider=\"fake\"", "-c", &provider])
        .args(["-c", "mcp_servers.toolhost.default_tools_approval_mode=\"approve\""])
        .arg("Make greet() say hello to toolhost.");
    run_logged(&mut run, "codex exec");

    assert_eq!(std::fs::read_to_string(env.root.join("greet.rs")).unwrap(), EDITED);
    let last = model
        .recorded()
        .iter()
        .filter_map(Recorded::json)
        .rfind(|b| model_server::codex_outputs(b).len() >= 2)
        .expect("a request after both tool calls");
    let outputs: Vec<String> =
        model_server::codex_outputs(&last).iter().map(|o| o["output"].to_string()).collect();
    assert!(
        outputs[0].contains("<content>") && outputs[0].contains("1: fn greet()"),
        "{outputs:?}"
    );
    assert!(!outputs[0].contains("totalLines"), "the value's JSON reached the model: {outputs:?}");
    assert!(outputs[1].contains("has been updated successfully"), "{outputs:?}");

    let edit = cards_for(&mut editor, "edit");
    let done = edit.iter().find(|c| c["status"] == "completed").expect("a completed edit card");
    assert_eq!(done["caller"], "codex-mcp-client", "{done}");
    assert!(edit.iter().any(|c| c["status"] == "pending"), "{edit:?}");
    let read = cards_for(&mut editor, "read");
    assert!(read.iter().all(|c| c["caller"] == "codex-mcp-client"), "{read:?}");
}
