//! The `toolhost` command line: exit codes, sessions continued across calls, replay, and the
//! environment errors (a locked session, an unwritable state dir) that must exit 3.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn toolhost(workspace: &Path, state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(args)
        .current_dir(workspace)
        .env("XDG_STATE_HOME", state)
        .env("XDG_CONFIG_HOME", state.join("config"))
        .output()
        .unwrap()
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let state = dir.path().join("state");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(ws.join("a.txt"), "hello\nworld\n").unwrap();
    (dir, ws, state)
}

#[test]
fn exit_codes_follow_the_contract() {
    let (_dir, ws, state) = setup();
    assert_eq!(
        toolhost(&ws, &state, &["call", "read", r#"{"file_path":"a.txt"}"#]).status.code(),
        Some(0)
    );
    assert_eq!(
        toolhost(&ws, &state, &["call", "read", r#"{"file_path":"nope.txt"}"#]).status.code(),
        Some(1)
    );
    assert_eq!(toolhost(&ws, &state, &["call", "nope", "{}"]).status.code(), Some(1));
    assert_eq!(
        toolhost(&ws, &state, &["call", "read", r#"{"offset":"x"}"#]).status.code(),
        Some(1)
    );
    let bad = toolhost(&ws, &state, &["call", "read", "{not json"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not valid JSON"));
    assert_eq!(toolhost(&ws, &state, &["call"]).status.code(), Some(2));
    assert_eq!(toolhost(&ws, &state, &["--version"]).status.code(), Some(0));
    assert_eq!(toolhost(&ws, &state, &["tools", "--json"]).status.code(), Some(0));
}

#[test]
fn a_read_in_one_call_authorizes_an_edit_in_a_later_call_of_the_same_session() {
    let (_dir, ws, state) = setup();
    let read = toolhost(
        &ws,
        &state,
        &["call", "read", r#"{"file_path":"a.txt"}"#, "--json", "--session", "s1"],
    );
    assert_eq!(read.status.code(), Some(0));
    let body: Value = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!(body["sessionId"], "s1");
    let edit = r#"{"file_path":"a.txt","old_string":"world","new_string":"there"}"#;
    // Another session was never authorized by that read.
    let other = toolhost(&ws, &state, &["call", "edit", edit, "--session", "s2"]);
    assert_eq!(other.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&other.stdout).contains("edit requires reading"));
    let same = toolhost(&ws, &state, &["call", "edit", edit, "--session", "s1"]);
    assert_eq!(same.status.code(), Some(0), "{}", String::from_utf8_lossy(&same.stdout));
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "hello\nthere\n");

    let sessions = toolhost(&ws, &state, &["sessions", "--json"]);
    let list: Value = serde_json::from_slice(&sessions.stdout).unwrap();
    let ids: Vec<&str> =
        list["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"s1") && ids.contains(&"s2"), "{ids:?}");

    let replay = toolhost(&ws, &state, &["replay", "s1"]);
    assert_eq!(replay.status.code(), Some(0));
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(text.contains("read Read a.txt · completed"), "{text}");
    assert!(
        text.contains("edit Edit a.txt · completed\n@@ -1,2 +1,2 @@\n hello\n-world\n+there"),
        "{text}"
    );
    let json = toolhost(&ws, &state, &["replay", "s1", "--json"]);
    assert_eq!(String::from_utf8_lossy(&json.stdout).lines().count(), 2);

    let delete = toolhost(&ws, &state, &["sessions", "--delete", "s2"]);
    assert_eq!(delete.status.code(), Some(0));
    let prune = toolhost(&ws, &state, &["sessions", "--prune", "--older-than", "30d"]);
    assert_eq!(prune.status.code(), Some(0));
}

#[test]
fn a_new_session_is_announced_on_stderr() {
    let (_dir, ws, state) = setup();
    let out = toolhost(&ws, &state, &["call", "read", r#"{"file_path":"a.txt"}"#, "--json"]);
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = body["sessionId"].as_str().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("session {id}")));
}

#[test]
fn a_session_locked_by_another_process_exits_3() {
    let (_dir, ws, state) = setup();
    let sessions = state.join("toolhost").join("sessions");
    // Hold the session's lock from this process, as a running server would.
    let (_log, _) =
        toolhost_session::SessionLog::open(&sessions, &ws.canonicalize().unwrap(), "busy", true)
            .unwrap();
    let out =
        toolhost(&ws, &state, &["call", "read", r#"{"file_path":"a.txt"}"#, "--session", "busy"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("in use by another toolhost process"));
}

#[test]
fn an_unwritable_state_dir_exits_3() {
    let (_dir, ws, state) = setup();
    // A file where the state directory should be cannot hold sessions (works as root too).
    let blocker = state.join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["call", "read", r#"{"file_path":"a.txt"}"#])
        .current_dir(&ws)
        .env("XDG_STATE_HOME", &blocker)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_spill_can_be_read_back_through_its_locator() {
    let (_dir, ws, state) = setup();
    let big: String = (0..4000).map(|i| format!("line {i} needle\n")).collect();
    std::fs::write(ws.join("big.txt"), big).unwrap();
    let out =
        toolhost(&ws, &state, &["call", "grep", r#"{"pattern":"needle"}"#, "--session", "sp"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let locator = text.split("stored at: ").nth(1).unwrap().split(". ").next().unwrap().to_owned();
    assert!(locator.contains("/blobs/"), "{locator}");
    let args = serde_json::json!({"file_path": locator, "limit": 3}).to_string();
    let read = toolhost(&ws, &state, &["call", "read", &args, "--session", "sp"]);
    assert_eq!(read.status.code(), Some(0), "{}", String::from_utf8_lossy(&read.stdout));
    assert!(
        String::from_utf8_lossy(&read.stdout).contains("1: Found 4000 of 4000 matches")
            || String::from_utf8_lossy(&read.stdout).contains("1: Found 4000 matches")
    );
    // The blob folder is read-only for the tools.
    let write = serde_json::json!({"file_path": locator, "content": "x"}).to_string();
    let denied = toolhost(&ws, &state, &["call", "write", &write, "--session", "sp"]);
    assert_eq!(denied.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&denied.stdout).contains("read-only"),
        "{}",
        String::from_utf8_lossy(&denied.stdout)
    );
}

#[test]
fn session_last_continues_the_newest_session_so_a_read_authorizes_the_next_edit() {
    let (_dir, ws, state) = setup();
    let edit = r#"{"file_path":"a.txt","old_string":"world","new_string":"there"}"#;
    // Without a session, each call starts a new one: the edit is refused.
    let read = toolhost(&ws, &state, &["call", "read", r#"{"file_path":"a.txt"}"#, "--json"]);
    let first: Value = serde_json::from_slice(&read.stdout).unwrap();
    let refused = toolhost(&ws, &state, &["call", "edit", edit]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stdout).contains("edit requires reading"));
    // The refused edit's session is now the newest; read and edit with `last` continue it.
    let read = toolhost(
        &ws,
        &state,
        &["call", "read", r#"{"file_path":"a.txt"}"#, "--session", "last", "--json"],
    );
    let second: Value = serde_json::from_slice(&read.stdout).unwrap();
    assert_ne!(second["sessionId"], first["sessionId"]);
    let out = toolhost(&ws, &state, &["call", "edit", edit, "--session", "last", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let edited: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(edited["sessionId"], second["sessionId"]);
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "hello\nthere\n");
    // `replay last` shows that session's cards.
    let replay = toolhost(&ws, &state, &["replay", "last"]);
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(
        text.contains("read Read a.txt · completed")
            && text.contains("edit Edit a.txt · completed")
    );

    // A session held by another process (a running editor) is skipped.
    let sessions = state.join("toolhost").join("sessions");
    let canonical = ws.canonicalize().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (_held, _) =
        toolhost_session::SessionLog::open(&sessions, &canonical, "zz-held", true).unwrap();
    let out = toolhost(
        &ws,
        &state,
        &[
            "call",
            "edit",
            r#"{"file_path":"a.txt","old_string":"there","new_string":"again"}"#,
            "--session",
            "last",
            "--json",
        ],
    );
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["sessionId"], second["sessionId"], "the held session must be skipped");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn skills_lists_the_workspace_skills_by_name() {
    let (_dir, ws, state) = setup();
    let skill = ws.join(".claude/skills/fix-ci");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: fix-ci\ndescription: Fix a red CI run\n---\nSteps.\n",
    )
    .unwrap();
    let manual = ws.join(".toolhost/skills/deploy");
    std::fs::create_dir_all(&manual).unwrap();
    std::fs::write(
        manual.join("SKILL.md"),
        "---\nname: deploy\ndescription: Deploy\ndisable-model-invocation: true\n---\nOnly people.\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["skills", "--json"])
        .current_dir(&ws)
        .env("HOME", &state)
        .env("XDG_STATE_HOME", &state)
        .env("XDG_CONFIG_HOME", state.join("config"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let skills = listed["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 2, "{listed}");
    assert_eq!(skills[0]["name"], "deploy");
    assert_eq!(skills[0]["modelInvocable"], false);
    assert_eq!(skills[1]["name"], "fix-ci");
    assert_eq!(skills[1]["description"], "Fix a red CI run");
    assert_eq!(skills[1]["provider"], "workspace");
}

#[test]
fn a_structured_schema_makes_the_session_one_run_that_ends_with_its_value() {
    let (_dir, ws, state) = setup();
    let schema = r#"{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}"#;
    let call = |tool: &str, args: &str, schema: &str| {
        let out = toolhost(
            &ws,
            &state,
            &["call", tool, args, "--session", "run", "--structured-schema", schema],
        );
        (out.status.code(), String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let (code, text) = call("structured_output", r#"{"ok":"yes"}"#, schema);
    assert_eq!(code, Some(1));
    assert_eq!(text, r#"Error: invalid arguments: "value.ok" must be a boolean"#);
    assert_eq!(
        call("structured_output", r#"{"ok":true}"#, schema),
        (Some(0), "Structured output recorded.".to_owned())
    );
    let (code, text) = call("read", r#"{"file_path":"a.txt"}"#, schema);
    assert_eq!(code, Some(1));
    assert_eq!(
        text,
        "Error: structured output already recorded: the run is complete, so `read` is not executed"
    );
    // Another schema is another run.
    assert_eq!(call("read", r#"{"file_path":"a.txt"}"#, r#"{"type":"object"}"#).0, Some(0));
    let bad = toolhost(&ws, &state, &["call", "read", "{}", "--structured-schema", "{nope"]);
    assert_eq!(bad.status.code(), Some(2));
    let unusable = toolhost(&ws, &state, &["call", "read", "{}", "--structured-schema", "[1]"]);
    assert_eq!(unusable.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unusable.stderr).contains("must be a JSON Schema object"));
}

#[test]
fn a_person_at_a_terminal_answers_the_question_there() {
    let (_dir, ws, state) = setup();
    // `script` (util-linux) gives the call a terminal; the person types "2".
    let command = format!(
        "{} call ask_user_question '{}'",
        env!("CARGO_BIN_EXE_toolhost"),
        r#"{"questions":[{"id":"db","question":"Which database?","header":"DB","options":[{"label":"Postgres"},{"label":"SQLite"}]}]}"#
    );
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(&ws)
        .env("XDG_STATE_HOME", &state)
        .env("XDG_CONFIG_HOME", state.join("config"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("`script` (util-linux) runs the call on a terminal");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"2\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("? DB: Which database?") && text.contains("2. SQLite"), "{text}");
    assert!(text.contains(r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#), "{text}");
}
