//! Sessions in worktrees through the binary: three own-agent sessions on three worktrees at once
//! (a scripted chat completions server on 127.0.0.1), each editing the same file differently and
//! only in its own worktree; one applied with `--all`, another hunk by hunk through the editor's
//! review with a three-way conflict listed, not resolved; the apply reverted as one call;
//! Claude Code (npm binary, scripted model) attached with `toolhost mcp --session` editing in its
//! worktree only; best of three with a check command; and nothing left behind by discard.
#![allow(clippy::unwrap_used)]

use crate::mcp_agents::{
    CLAUDE_CODE, agent as agent_binary, claude_env, claude_script, run_logged,
};
use crate::model_server::ModelServer;
use crate::server::{self, Env, binary, git};
use crate::sse::{Answer, first_prompt, last_tool_result, server as model_server_sse};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Twenty lines, one word each, so every edit names one line.
const WORDS: [&str; 20] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
];

fn original() -> String {
    WORDS.iter().map(|w| format!("{w}\n")).collect()
}

/// `original()` with `(word, replacement)` applied.
fn with(changes: &[(&str, &str)]) -> String {
    WORDS
        .iter()
        .map(|w| {
            let now = changes.iter().find(|(from, _)| from == w).map_or(*w, |(_, to)| *to);
            format!("{now}\n")
        })
        .collect()
}

/// A git workspace holding `a.txt`.
fn repository() -> Env {
    let env = Env::new();
    env.write("a.txt", &original());
    git(&env.root, &["init", "-q", "-b", "main"]);
    git(&env.root, &["add", "."]);
    git(&env.root, &["commit", "-q", "-m", "base"]);
    env
}

/// `toolhost <args>` in the workspace; (exit code, stdout, stderr).
fn toolhost(env: &Env, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(binary())
        .args(args)
        .current_dir(&env.root)
        .envs(env.env())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn new_worktree(env: &Env, name: &str) -> Value {
    let (code, out, err) = toolhost(env, &["session", "new", "--worktree", name, "--json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// The edits a task asks for: the prompt is `edit a.txt: <from>=><to>; …`.
fn edits_of(prompt: &str) -> Vec<(String, String)> {
    let list = prompt.split_once(": ").map_or("", |(_, rest)| rest);
    list.split("; ")
        .filter_map(|pair| pair.split_once("=>"))
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect()
}

/// The scripted model for every run at once: read a.txt, make the prompt's edits, answer.
async fn scripted_model() -> crate::sse::Server {
    model_server_sse(|_, body| {
        let tool_answers = body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        let prompt = first_prompt(body);
        match tool_answers {
            0 => Answer::calling(&[("read", r#"{"file_path":"a.txt"}"#)], None, 100),
            1 => {
                let calls: Vec<(String, String)> = edits_of(&prompt)
                    .into_iter()
                    .map(|(from, to)| {
                        let args = json!({"file_path": "a.txt", "old_string": format!("{from}\n"),
                                          "new_string": format!("{to}\n")});
                        ("edit".to_owned(), args.to_string())
                    })
                    .collect();
                let refs: Vec<(&str, &str)> =
                    calls.iter().map(|(n, a)| (n.as_str(), a.as_str())).collect();
                Answer::calling(&refs, None, 200)
            }
            _ => Answer::answering(&["Done."], 300, 5),
        }
    })
    .await
}

async fn run_agent(env: &Env, base: &str, session: &str, task: &str) -> (i32, String) {
    let out = tokio::process::Command::new(binary())
        .args(["agent", task, "--json", "--mode", "auto", "--base-url", base])
        .args(["--api-key-env", "", "--session", session])
        .current_dir(&env.root)
        .envs(env.env())
        .output()
        .await
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn root_of(made: &Value) -> PathBuf {
    PathBuf::from(made["root"].as_str().unwrap())
}

/// No worktree, branch, checkout folder or description left of `names`.
fn nothing_left(env: &Env, names: &[&str]) {
    let worktrees = git(&env.root, &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    assert_eq!(git(&env.root, &["branch", "--list", "toolhost/*"]), "");
    let (_, out, _) = toolhost(env, &["sessions", "--json"]);
    let listed: Value = serde_json::from_str(&out).unwrap();
    // `worktrees` is left out when there are none.
    let rows = listed["worktrees"].as_array().cloned().unwrap_or_default();
    for name in names {
        assert!(!rows.iter().any(|w| w["name"] == *name), "{listed}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn three_agents_in_three_worktrees_then_two_applied_hunk_by_hunk_with_a_conflict_listed() {
    let env = repository();
    let made: Vec<Value> = ["w1", "w2", "w3"].iter().map(|n| new_worktree(&env, n)).collect();
    let model = scripted_model().await;
    let tasks = [
        "edit a.txt: bravo=>bravo-w1; juliet=>juliet-w1",
        // Line 2 as w1 changed it, differently; lines 12 and 20 far enough apart to be two hunks.
        "edit a.txt: bravo=>bravo-w2; lima=>lima-w2; tango=>tango-w2",
        "edit a.txt: echo=>echo-w3",
    ];
    let ids: Vec<String> = made.iter().map(|m| m["sessionId"].as_str().unwrap().into()).collect();
    let (r1, r2, r3) = tokio::join!(
        run_agent(&env, &model.base, &ids[0], tasks[0]),
        run_agent(&env, &model.base, &ids[1], tasks[1]),
        run_agent(&env, &model.base, &ids[2], tasks[2]),
    );
    for (code, err) in [&r1, &r2, &r3] {
        assert_eq!(*code, 0, "{err}");
    }
    // Each edit landed in its own worktree, the workspace untouched.
    assert_eq!(
        read(&root_of(&made[0]).join("a.txt")),
        with(&[("bravo", "bravo-w1"), ("juliet", "juliet-w1")])
    );
    let w2_text = with(&[("bravo", "bravo-w2"), ("lima", "lima-w2"), ("tango", "tango-w2")]);
    assert_eq!(read(&root_of(&made[1]).join("a.txt")), w2_text);
    assert_eq!(read(&root_of(&made[2]).join("a.txt")), with(&[("echo", "echo-w3")]));
    assert_eq!(read(&env.root.join("a.txt")), original());
    // Each session's log holds its own calls only.
    for (id, edits) in ids.iter().zip([2, 3, 1]) {
        let events = env.session_events(id);
        let calls: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool/call").collect();
        let edit_calls = calls.iter().filter(|c| c["data"]["name"] == "edit").count();
        assert_eq!(edit_calls, edits, "session {id}: {calls:?}");
    }
    // `toolhost sessions` lists them with branch, state, changed files and agent.
    let (_, out, _) = toolhost(&env, &["sessions", "--json"]);
    let listed: Value = serde_json::from_str(&out).unwrap();
    let rows = listed["worktrees"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{listed}");
    for row in rows {
        assert_eq!(row["changedFiles"], 1, "{row}");
        assert_eq!(row["state"], "idle", "{row}");
        assert_eq!(row["agent"], "toolhost agent", "{row}");
        assert!(row["branch"].as_str().unwrap().starts_with("toolhost/w"), "{row}");
    }

    // w1 hunk by hunk through the editor's review: both of its hunks (bravo, juliet) accepted.
    let (editor, asked) =
        server::reviewing_editor(&env, Some(json!({"accepted": [0, 1]})), Duration::ZERO);
    let (code, out, err) = toolhost(&env, &["session", "apply", "w1", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let applied: Value = serde_json::from_str(&out).unwrap();
    let w1_text = with(&[("bravo", "bravo-w1"), ("juliet", "juliet-w1")]);
    assert_eq!(read(&env.root.join("a.txt")), w1_text);
    assert_eq!(applied["card"]["kind"], "diff");
    assert_eq!(asked.lock().unwrap()[0]["hunks"].as_array().unwrap().len(), 2);
    drop(editor);

    // w2 hunk by hunk through the editor's review: of its two clean hunks (lima, tango) the
    // person takes the second; bravo conflicts with w1's change and is listed, not written.
    let (editor, asked) =
        server::reviewing_editor(&env, Some(json!({"accepted": [1]})), Duration::ZERO);
    let (code, out, err) = toolhost(&env, &["session", "apply", "w2"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        read(&env.root.join("a.txt")),
        with(&[("bravo", "bravo-w1"), ("juliet", "juliet-w1"), ("tango", "tango-w2")])
    );
    assert!(out.contains("partly applied a.txt (hunk 2 of 2; the rest stays there)"), "{out}");
    assert!(out.contains("1 conflict left as it is here"), "{out}");
    assert!(
        out.contains(
            "conflict at line 2: both sides changed it. The other side has:\n  | bravo-w2"
        ),
        "{out}"
    );
    let question = asked.lock().unwrap()[0].clone();
    assert_eq!(question["tool"], "apply_changes");
    assert_eq!(question["title"], "Apply changes from worktree session w2");
    assert_eq!(question["hunks"].as_array().unwrap().len(), 2, "{question}");
    // What was not applied stays in the worktree.
    assert_eq!(read(&root_of(&made[1]).join("a.txt")), w2_text);
    drop(editor);

    // The w1 apply is one call: reverting it takes both of its hunks back, keeping w2's.
    let call = applied["callId"].as_str().unwrap();
    let session = applied["sessionId"].as_str().unwrap();
    let (code, out, err) = toolhost(&env, &["revert", session, "--call", call]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(read(&env.root.join("a.txt")), with(&[("tango", "tango-w2")]));

    // Discard: no worktree, branch or session left; a discard without --yes off a terminal
    // is refused.
    let (code, _, err) = toolhost(&env, &["session", "discard", "w3"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("add --yes"), "{err}");
    for name in ["w1", "w2", "w3"] {
        let (code, out, err) = toolhost(&env, &["session", "discard", name, "--yes"]);
        assert_eq!(code, 0, "{out}{err}");
    }
    nothing_left(&env, &["w1", "w2", "w3"]);
    for made in &made {
        assert!(!PathBuf::from(made["checkout"].as_str().unwrap()).exists());
    }
}

#[test]
fn a_worktree_session_in_use_is_not_discarded_and_outside_git_the_folder_is_copied() {
    let env = Env::new();
    env.write("notes.txt", "one\n");
    let made = new_worktree(&env, "plain");
    assert_eq!(made["kind"], "copy");
    let root = root_of(&made);
    assert_eq!(read(&root.join("notes.txt")), "one\n");
    std::fs::write(root.join("notes.txt"), "one\ntwo\n").unwrap();
    std::fs::write(root.join("new.txt"), "new\n").unwrap();
    // A toolhost working in it holds the session: discard is refused while it runs.
    let id = made["sessionId"].as_str().unwrap();
    let mut holder = Command::new(binary())
        .args(["mcp", "--standalone", "--session", id])
        .current_dir(&env.root)
        .envs(env.env())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The session opens with the first call.
    {
        use std::io::Write;
        let stdin = holder.stdin.as_mut().unwrap();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "holder", "version": "1"}}});
        let ready = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "read", "arguments": {"file_path": "notes.txt"}}});
        writeln!(stdin, "{init}\n{ready}\n{call}").unwrap();
        stdin.flush().unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (_, out, _) = toolhost(&env, &["sessions", "--json"]);
        let listed: Value = serde_json::from_str(&out).unwrap();
        if listed["worktrees"][0]["state"] == "inUse" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the session never showed as in use");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, _, err) = toolhost(&env, &["session", "discard", "plain", "--yes"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("in use by a running toolhost"), "{err}");
    drop(holder.stdin.take());
    holder.wait().unwrap();

    let (code, out, err) = toolhost(&env, &["session", "apply", "plain", "--all"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(read(&env.root.join("notes.txt")), "one\ntwo\n");
    assert_eq!(read(&env.root.join("new.txt")), "new\n");
    let (code, out, err) = toolhost(&env, &["session", "discard", "plain", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!root.exists());
    let (_, out, _) = toolhost(&env, &["sessions", "--json"]);
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed.get("worktrees"), None, "{listed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn best_of_three_runs_each_check_and_one_is_applied() {
    let env = repository();
    // Each run makes a different edit (the third none): the model tells the runs apart by the
    // worktree folder its read answered with.
    let model = model_server_sse(|_, body| {
        let tool_answers = body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        let read = last_tool_result(body);
        let which = ["-1/a.txt", "-2/a.txt", "-3/a.txt"].iter().position(|k| read.contains(k));
        let word = ["bravo-one", "bravo-two", "bravo"][which.unwrap_or(2)];
        match tool_answers {
            0 => Answer::calling(&[("read", r#"{"file_path":"a.txt"}"#)], None, 100),
            1 if word != "bravo" => {
                let args = json!({"file_path": "a.txt", "old_string": "bravo\n",
                                  "new_string": format!("{word}\n")});
                Answer::calling(&[("edit", &args.to_string())], None, 200)
            }
            _ => Answer::answering(&["Done."], 300, 5),
        }
    })
    .await;
    let out = tokio::process::Command::new(binary())
        .args(["agent", "rename bravo", "--best-of", "3", "--mode", "auto"])
        .args(["--base-url", &model.base, "--api-key-env", ""])
        .args(["--check", "grep -q '^bravo-two$' a.txt"])
        .current_dir(&env.root)
        .envs(env.env())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("| # | worktree session | answered | files | lines | check |"),
        "{stdout}"
    );
    let rows: Vec<&str> =
        stdout.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| #")).collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    assert_eq!(rows.iter().filter(|r| r.ends_with("| passed |")).count(), 1, "{stdout}");
    assert_eq!(rows.iter().filter(|r| r.contains("failed (exit 1)")).count(), 2, "{stdout}");
    // The run whose check passed is applied.
    let passed = rows.iter().find(|r| r.ends_with("| passed |")).unwrap();
    let name = passed.split('|').nth(2).unwrap().trim().to_owned();
    assert!(passed.contains("| 1 | +1 -1 |"), "{passed}");
    let (code, out, err) = toolhost(&env, &["session", "apply", &name, "--all"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(read(&env.root.join("a.txt")), with(&[("bravo", "bravo-two")]));
    let (_, out, _) = toolhost(&env, &["sessions", "--json"]);
    let listed: Value = serde_json::from_str(&out).unwrap();
    let names: Vec<String> = listed["worktrees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names.len(), 3, "{listed}");
    for name in &names {
        let (code, out, err) = toolhost(&env, &["session", "discard", name, "--yes"]);
        assert_eq!(code, 0, "{out}{err}");
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    nothing_left(&env, &refs);
}

#[test]
fn claude_code_attached_with_mcp_session_edits_its_worktree_only() {
    let claude = agent_binary(CLAUDE_CODE);
    let env = repository();
    let made = new_worktree(&env, "claude");
    let id = made["sessionId"].as_str().unwrap().to_owned();
    // The editor serves the workspace itself; the agent must not reach it.
    let mut editor = env.start(json!({}));
    let home = env.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // Relative paths: the file is the one of the session toolhost serves.
    let edit =
        json!({"file_path": "a.txt", "old_string": "bravo\n", "new_string": "bravo-claude\n"});
    let model = ModelServer::start(claude_script(json!({"file_path": "a.txt"}), edit));
    let agent_env = |command: &mut Command| claude_env(command, &env.root, &home, &model);
    let mut add = Command::new(&claude);
    agent_env(&mut add);
    add.args(["mcp", "add", "toolhost", "-e"])
        .arg(format!("XDG_STATE_HOME={}", env.state.display()))
        .arg("-e")
        .arg(format!("XDG_CONFIG_HOME={}", env.config.display()))
        .arg("--")
        .arg(binary())
        .args(["mcp", "--session", &id]);
    run_logged(&mut add, "claude mcp add");
    let mut run = Command::new(&claude);
    agent_env(&mut run);
    run.args(["-p", "Rename bravo."])
        .args(["--allowedTools", "mcp__toolhost__read,mcp__toolhost__edit"])
        .args(["--output-format", "json"]);
    let out = run_logged(&mut run, "claude -p");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(answer["is_error"], false, "{}", String::from_utf8_lossy(&out.stdout));

    assert_eq!(read(&root_of(&made).join("a.txt")), with(&[("bravo", "bravo-claude")]));
    assert_eq!(read(&env.root.join("a.txt")), original());
    // The calls are the worktree session's, and the editor of the workspace saw none of them.
    let events = env.session_events(&id);
    let edits: Vec<&Value> =
        events.iter().filter(|e| e["type"] == "tool/call" && e["data"]["name"] == "edit").collect();
    assert_eq!(edits.len(), 1, "{events:?}");
    assert_eq!(edits[0]["data"]["caller"], "claude-code");
    // A round trip, so any card sent before it has arrived.
    let _ = editor.request("toolhost/listSessions", json!({}));
    assert!(
        !editor
            .seen
            .iter()
            .any(|m| m["method"] == "toolhost/card" && m["params"]["tool"] == "edit"),
        "the workspace's editor got a card of the worktree's edit"
    );
    let (code, out, err) = toolhost(&env, &["session", "discard", "claude", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    nothing_left(&env, &["claude"]);
}

#[test]
fn an_editor_makes_watches_applies_and_discards_a_worktree_session() {
    let env = repository();
    let (mut editor, asked) =
        server::reviewing_editor(&env, Some(json!({"accepted": [0]})), Duration::ZERO);
    let made = editor.request("toolhost/worktreeNew", json!({"name": "ed"})).unwrap();
    assert_eq!(made["name"], "ed");
    assert_eq!(made["branch"], "toolhost/ed");
    assert_eq!(made["state"], "idle");
    let id = made["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(
        editor.request("toolhost/watchSession", json!({"sessionId": id})).unwrap(),
        Value::Null
    );

    // Another process works in the worktree session: the editor hears its log grow.
    for (tool, args) in [
        ("read", json!({"file_path": "a.txt"})),
        (
            "edit",
            json!({"file_path": "a.txt", "old_string": "bravo\n", "new_string": "bravo-ed\n"}),
        ),
    ] {
        let (code, out, err) = toolhost(&env, &["call", tool, &args.to_string(), "--session", &id]);
        assert_eq!(code, 0, "{out}{err}");
    }
    let changed = editor.wait_for(Duration::from_secs(30), |m| {
        m["method"] == "toolhost/sessionChanged" && m["params"]["sessionId"] == id.as_str()
    });
    assert!(changed.is_some(), "no toolhost/sessionChanged");
    let replayed = editor.request("toolhost/replaySession", json!({"sessionId": id})).unwrap();
    let cards = replayed["cards"].as_array().unwrap();
    assert!(cards.iter().any(|c| c["tool"] == "edit" && c["kind"] == "diff"), "{replayed}");
    // The workspace's own cards never showed the worktree's edit.
    assert!(
        !editor
            .seen
            .iter()
            .any(|m| m["method"] == "toolhost/card" && m["params"]["tool"] == "edit")
    );

    let listed = editor.request("toolhost/listSessions", json!({})).unwrap();
    assert_eq!(listed["worktrees"][0]["name"], "ed", "{listed}");
    assert_eq!(listed["worktrees"][0]["changedFiles"], 1, "{listed}");

    let applied = editor.request("toolhost/worktreeApply", json!({"name": "ed"})).unwrap();
    assert_eq!(applied["call"]["result"]["isError"], false, "{applied}");
    assert_eq!(read(&env.root.join("a.txt")), with(&[("bravo", "bravo-ed")]));
    assert_eq!(asked.lock().unwrap()[0]["tool"], "apply_changes");
    // The apply's cards reach this editor like any call's.
    assert!(
        editor
            .wait_for(Duration::from_secs(10), |m| m["method"] == "toolhost/card"
                && m["params"]["tool"] == "apply_changes"
                && m["params"]["status"] == "completed")
            .is_some()
    );
    // Nothing more to apply.
    let again =
        editor.request("toolhost/worktreeApply", json!({"name": "ed", "all": true})).unwrap();
    let text = again["call"]["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("unchanged a.txt"), "{again}");

    assert_eq!(editor.request("toolhost/watchSession", json!({})).unwrap(), Value::Null);
    assert_eq!(
        editor.request("toolhost/worktreeDiscard", json!({"name": "ed"})).unwrap(),
        Value::Null
    );
    assert!(!root_of(&made).exists());
    let unknown = editor.request("toolhost/worktreeDiscard", json!({"name": "ed"})).unwrap_err();
    assert!(
        unknown.to_string().contains("WORKTREE_UNKNOWN")
            || unknown.to_string().contains("no worktree session"),
        "{unknown}"
    );
    nothing_left(&env, &["ed"]);
}

#[test]
fn an_editor_window_on_a_worktree_folder_continues_its_session_and_the_workspace_sees_it_live() {
    let env = repository();
    let made = new_worktree(&env, "win");
    let id = made["sessionId"].as_str().unwrap().to_owned();
    let mut main = env.start(json!({}));
    main.request("toolhost/watchSession", json!({"sessionId": id})).unwrap();
    // A second window, on the worktree's folder: the worktree session continues there, so an
    // agent the editor hosts (or its own) works in it.
    let mut window = env.spawn_with(&[], server::echo_handler());
    let started = window.initialize(&root_of(&made), json!({}), json!({})).unwrap();
    assert_eq!(started["capabilities"]["experimental"]["toolhost"]["sessionId"], id.as_str());
    server::call_ok(&mut window, "read", json!({"file_path": "a.txt"}));
    server::call_ok(
        &mut window,
        "edit",
        json!({"file_path": "a.txt", "old_string": "bravo\n", "new_string": "bravo-win\n"}),
    );
    assert_eq!(read(&root_of(&made).join("a.txt")), with(&[("bravo", "bravo-win")]));
    assert_eq!(read(&env.root.join("a.txt")), original());
    let changed = main.wait_for(Duration::from_secs(30), |m| {
        m["method"] == "toolhost/sessionChanged" && m["params"]["sessionId"] == id.as_str()
    });
    assert!(changed.is_some(), "no toolhost/sessionChanged");
    let listed = main.request("toolhost/listSessions", json!({})).unwrap();
    assert_eq!(listed["worktrees"][0]["state"], "inUse", "{listed}");
    // While the window holds it, a plain `toolhost call` in the folder gets a session of its own.
    let out = Command::new(binary())
        .args(["call", "read", r#"{"file_path":"a.txt"}"#, "--json"])
        .current_dir(root_of(&made))
        .envs(env.env())
        .output()
        .unwrap();
    let called: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_ne!(called["sessionId"], id.as_str());
    drop(window);
    let replayed = main.request("toolhost/replaySession", json!({"sessionId": id})).unwrap();
    let cards = replayed["cards"].as_array().unwrap();
    assert!(cards.iter().any(|c| c["tool"] == "edit"), "{replayed}");
}
