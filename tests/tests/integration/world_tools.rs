//! The tools in an ssh execution world, driven through the editor's harness (`toolhost serve`):
//! the same script of calls — read, edit, write, glob, grep, bash (foreground and a background
//! job), a terminal, revert, refusals — run once
//! against files on this machine and once with `[world] kind = "ssh"` against the same files on
//! a "remote" host (Debian's sshd in a network namespace the test creates; the workspace there
//! exists only in that host's mount namespace, and the local folder stays empty). Every result's
//! text and card must be the same; the files change there, never here; a killed ssh connection
//! fails the running call clearly and the next call reconnects.

use crate::server::{self, Env, call_err, call_ok, children_of};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};
use toolhost_harness::client::Client;

use crate::ssh_host::SshHost;

const A_TXT: &str = "alpha\nbeta\ngamma\n";
const LIB_RS: &str = "pub fn needle() -> u32 {\n    42\n}\n";

fn seed(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("a.txt"), A_TXT).unwrap();
    std::fs::write(dir.join("src/lib.rs"), LIB_RS).unwrap();
    std::fs::write(dir.join("notes.md"), "no needle here? yes: needle\n").unwrap();
}

/// Call ids, times and the workspace's own path differ between the runs; nothing else may.
fn normalized(value: &Value, root: &str) -> Value {
    match value {
        Value::String(s) => {
            let parent = Path::new(root).parent().map(|p| p.to_string_lossy().into_owned());
            let s = s.replace(root, "<root>");
            Value::String(match parent {
                Some(parent) => s.replace(&parent, "<env>"),
                None => s,
            })
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| normalized(v, root)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "callId"
                            | "sessionId"
                            | "durationMs"
                            | "startedAt"
                            | "endedAt"
                            | "at"
                            | "pid"
                    )
                })
                .map(|(k, v)| (k.clone(), normalized(v, root)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// What a caller of the script sees of one call: its text, value or error, and its card.
fn seen(out: &Value, root: &str, ids: &[(String, String)]) -> Value {
    let mut out = json!({
        "text": out["result"]["content"],
        "isError": out["result"]["isError"],
        "error": out["result"]["error"],
        "card": out["card"],
    });
    let mut text = out.to_string();
    for (id, name) in ids {
        text = text.replace(id, name);
    }
    out = serde_json::from_str(&text).unwrap();
    normalized(&out, root)
}

/// The script, identical for both runs. Returns what each call showed.
fn script(client: &mut Client, root: &str) -> Vec<(String, Value)> {
    let mut shown = Vec::new();
    let mut ids: Vec<(String, String)> = Vec::new();
    let mut step = |client: &mut Client, name: &str, tool: &str, args: Value, ok: Option<&str>| {
        let out = match ok {
            None => call_ok(client, tool, args),
            Some(code) => call_err(client, tool, args, code),
        };
        if let Some(id) = out["callId"].as_str() {
            ids.push((id.to_owned(), format!("<{name}>")));
        }
        shown.push((name.to_owned(), seen(&out, root, &ids)));
        out
    };
    step(client, "read", "read", json!({"file_path": "a.txt"}), None);
    let edited = step(
        client,
        "edit",
        "edit",
        json!({"file_path": "a.txt", "old_string": "beta", "new_string": "BETA"}),
        None,
    );
    step(
        client,
        "write",
        "write",
        json!({"file_path": "src/new.rs", "content": "fn new() {}\n"}),
        None,
    );
    step(
        client,
        "unread-write",
        "write",
        json!({"file_path": "notes.md", "content": "x"}),
        Some("FS_NOT_OBSERVED"),
    );
    step(client, "glob", "glob", json!({"pattern": "**/lib.rs"}), None);
    step(client, "grep", "grep", json!({"pattern": "needle", "include": "*.rs"}), None);
    step(client, "grep-path", "grep", json!({"pattern": "needle", "path": "notes.md"}), None);
    step(
        client,
        "bash",
        "bash",
        json!({
            "command": "cat a.txt; ls src; echo to-stderr >&2; test -z \"$OPENAI_API_KEY\" && echo no-key; exit 3",
            "description": "look around"
        }),
        None,
    );
    step(
        client,
        "bash-workdir",
        "bash",
        json!({"command": "ls", "description": "list src", "workdir": "src"}),
        None,
    );
    step(
        client,
        "background",
        "bash",
        json!({
            "command": "echo started; sleep 0.3; echo finished; ls src >&2",
            "description": "a job",
            "run_in_background": true
        }),
        None,
    );
    step(client, "job-output", "job_output", json!({"job_id": "bash-1", "wait": true}), None);
    step(client, "terminal-open", "terminal_open", json!({"type": "shell"}), None);
    step(
        client,
        "terminal-send",
        "terminal_send",
        json!({"sessionId": "pty-1", "text": "cat a.txt; ls src", "submit": true}),
        None,
    );
    step(client, "terminal-read", "terminal_read", json!({"sessionId": "pty-1"}), None);
    step(client, "terminal-close", "terminal_close", json!({"sessionId": "pty-1"}), None);
    step(
        client,
        "escape",
        "read",
        json!({"file_path": "../outside.txt"}),
        Some("FS_SANDBOX_DENIED"),
    );
    step(client, "missing", "read", json!({"file_path": "nope.txt"}), Some("FS_NOT_FOUND"));
    let edit_id = edited["callId"].as_str().unwrap().to_owned();
    step(client, "revert", "revert", json!({"call_id": edit_id}), None);
    step(client, "read-after-revert", "read", json!({"file_path": "a.txt"}), None);
    shown
}

fn ssh_world_config(host: &SshHost) -> String {
    let quoted =
        |items: &[String]| items.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ");
    format!(
        "[world]\nkind = \"ssh\"\nhost = {:?}\nroot = {:?}\nprogram = {:?}\nssh_options = [{}]\n",
        host.target,
        host.remote_root.to_string_lossy(),
        server::binary().to_string_lossy(),
        quoted(&host.ssh_options),
    )
}

/// The ssh client the server started for its world (its child named `ssh`).
fn ssh_child(server: u32) -> Option<u32> {
    children_of(server).into_iter().find(|pid| {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "ssh")
    })
}

#[test]
fn the_tool_suite_runs_in_an_ssh_world_with_the_same_results_and_cards_as_here() {
    // Here: the files in the workspace on this machine.
    let local = Env::new();
    seed(&local.root);
    let mut client = local.start(json!({}));
    let here = script(&mut client, &local.root.to_string_lossy());
    let _ = client.shutdown();
    assert_eq!(std::fs::read_to_string(local.root.join("a.txt")).unwrap(), A_TXT);

    // There: the same files on the ssh host only; the local folder is empty.
    let seed_dir = tempfile::tempdir().unwrap();
    seed(seed_dir.path());
    let host = SshHost::start(seed_dir.path());
    let remote = Env::new();
    remote.write_user_config(&ssh_world_config(&host));
    let mut client = remote.start(json!({}));
    let there = script(&mut client, &remote.root.to_string_lossy());

    assert_eq!(here.len(), there.len());
    for ((name, local_seen), (_, world_seen)) in here.iter().zip(&there) {
        assert_eq!(
            world_seen, local_seen,
            "{name}: the ssh world showed\n{world_seen:#}\nwhere this machine showed\n{local_seen:#}"
        );
    }
    // The changes happened there, and nothing here.
    let root = host.remote_root.to_string_lossy().into_owned();
    assert_eq!(host.remote(&format!("cat {root}/a.txt")), A_TXT, "reverted there");
    assert_eq!(host.remote(&format!("cat {root}/src/new.rs")), "fn new() {}\n");
    let local_files: Vec<_> = std::fs::read_dir(&remote.root).unwrap().collect();
    assert!(local_files.is_empty(), "nothing was written to the local folder: {local_files:?}");

    // A terminal there: its foreground program is interrupted there.
    call_ok(&mut client, "terminal_open", json!({"type": "shell", "name": "t"}));
    let sleeping = call_ok(
        &mut client,
        "terminal_send",
        json!({"sessionId": "pty-2", "text": "sleep 41", "submit": true, "timeoutMs": 700}),
    );
    assert_ne!(sleeping["result"]["value"]["waitReason"], "stdin_read", "{sleeping}");
    assert!(!host.remote("pgrep -f '[s]leep 41' || true").trim().is_empty(), "sleeping there");
    let signalled =
        call_ok(&mut client, "terminal_signal", json!({"sessionId": "pty-2", "signal": "SIGINT"}));
    assert_eq!(signalled["result"]["value"]["delivered"], true, "{signalled}");
    let back = call_ok(
        &mut client,
        "terminal_send",
        json!({"sessionId": "pty-2", "text": "echo back-$((40+2))", "submit": true}),
    );
    let viewport = back["result"]["value"]["viewport"].as_str().unwrap_or_default();
    assert!(viewport.contains("back-42"), "{back}");
    assert!(host.remote("pgrep -f '[s]leep 41' || true").trim().is_empty(), "interrupted there");
    call_ok(&mut client, "terminal_close", json!({"sessionId": "pty-2"}));

    // A killed connection fails the running call clearly; the next call reconnects.
    let server_pid = client.pid();
    let killer = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let sleeping = host.remote("pgrep -f '[s]leep 37' || true");
            if !sleeping.trim().is_empty()
                && let Some(ssh) = ssh_child(server_pid)
            {
                rustix::process::kill_process(
                    rustix::process::Pid::from_raw(ssh as i32).unwrap(),
                    rustix::process::Signal::KILL,
                )
                .unwrap();
                return host;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the remote sleep never started");
    });
    let started = Instant::now();
    let out =
        client.call_tool("bash", json!({"command": "sleep 37", "description": "wait"})).unwrap();
    let host = killer.join().unwrap();
    assert_eq!(out["result"]["isError"], true, "{out}");
    assert_eq!(server::error_code(&out).as_deref(), Some("WORLD_DISCONNECTED"), "{out}");
    let message = out["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(message.contains("connection to the execution world"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(30), "failed when the connection died");
    let again = call_ok(&mut client, "read", json!({"file_path": "src/new.rs"}));
    assert!(again["result"]["content"][0]["text"].as_str().unwrap().contains("fn new() {}"));
    let _ = client.shutdown();
    drop(host);
}

/// A workspace whose files are in a world served by a local exec-server over `there`.
fn workspace_in_world(here: &Path, there: &Path) -> toolhost_workspace::Workspace {
    use toolhost_world::{Launch, RemoteWorld, WorldClient};
    let ws =
        toolhost_workspace::Workspace::new(toolhost_workspace::WorkspaceConfig::new(here)).unwrap();
    let client = WorldClient::new(Launch::local(&server::binary(), there));
    ws.set_world(Some(std::sync::Arc::new(RemoteWorld::new(client.into(), "test world"))));
    ws
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_in_the_world_after_it_was_read_is_stale_there_not_overwritten() {
    let (here, there) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(there.path().join("a.txt"), "one\n").unwrap();
    let ws = workspace_in_world(here.path(), there.path());

    // Written there by someone else after the session read it: the write is stale.
    assert_eq!(ws.read_file("a.txt").await.unwrap().text, "one\n");
    std::fs::write(there.path().join("a.txt"), "theirs\n").unwrap();
    let stale = ws.write_file("a.txt", b"mine\n").await.unwrap_err();
    assert_eq!(stale.code(), "FS_STALE_VERSION", "{stale}");
    assert_eq!(std::fs::read_to_string(there.path().join("a.txt")).unwrap(), "theirs\n");

    // Changed there while an edit was under way (after its load, before its commit): the world
    // refuses the replace, since the file no longer has the version the edit started from.
    assert_eq!(ws.read_file("a.txt").await.unwrap().text, "theirs\n");
    let edit = ws.begin_edit("a.txt").await.unwrap();
    std::fs::write(there.path().join("a.txt"), "theirs again\n").unwrap();
    let stale = edit.commit(b"mine\n".to_vec()).await.unwrap_err();
    assert_eq!(stale.code(), "FS_STALE_VERSION", "{stale}");
    assert_eq!(std::fs::read_to_string(there.path().join("a.txt")).unwrap(), "theirs again\n");

    // Nothing reached this machine's folder; an unread file there cannot be overwritten.
    assert_eq!(std::fs::read_dir(here.path()).unwrap().count(), 0);
    let unread = ws.write_file("b.txt", b"new\n").await;
    assert!(unread.is_ok(), "{unread:?}");
    std::fs::write(there.path().join("c.txt"), "exists\n").unwrap();
    let refused = ws.write_file("c.txt", b"x").await.unwrap_err();
    assert_eq!(refused.code(), "FS_NOT_OBSERVED", "{refused}");
    assert_eq!(std::fs::read_to_string(there.path().join("b.txt")).unwrap(), "new\n");
    assert_eq!(std::fs::read_dir(here.path()).unwrap().count(), 0);
}

const TWO_HUNKS: &str = "line 1\nline 2 old\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11 old\nline 12\n";

/// A reviewed edit: the editor accepts the second hunk only. Returns the question the editor
/// was asked and what the call showed, both normalized.
fn reviewed_edit(env: &Env, root: &str) -> (serde_json::Value, serde_json::Value) {
    let answer = json!({"accepted": [1], "comment": "not line 2"});
    let (mut client, asked) = server::reviewing_editor(env, Some(answer), Duration::ZERO);
    client.request("toolhost/setReview", json!({"mode": "ask"})).unwrap();
    call_ok(&mut client, "read", json!({"file_path": "two.txt"}));
    let args = json!({"file_path": "two.txt", "old_string": " old", "new_string": " new", "replace_all": true});
    let out = call_ok(&mut client, "edit", args);
    let mut question = asked.lock().unwrap()[0].clone();
    question.as_object_mut().unwrap().remove("requestId");
    let _ = client.shutdown();
    (normalized(&question, root), seen(&out, root, &[]))
}

#[test]
fn a_reviewed_edit_in_an_ssh_world_asks_the_same_question_and_writes_the_same_hunk() {
    let local = Env::new();
    local.write("two.txt", TWO_HUNKS);
    let here = reviewed_edit(&local, &local.root.to_string_lossy());
    let written_here = std::fs::read_to_string(local.root.join("two.txt")).unwrap();
    assert_eq!(written_here, TWO_HUNKS.replace("line 11 old", "line 11 new"));

    let seed_dir = tempfile::tempdir().unwrap();
    std::fs::write(seed_dir.path().join("two.txt"), TWO_HUNKS).unwrap();
    let host = SshHost::start(seed_dir.path());
    let remote = Env::new();
    remote.write_user_config(&ssh_world_config(&host));
    let there = reviewed_edit(&remote, &remote.root.to_string_lossy());
    assert_eq!(there.0, here.0, "the editor's question");
    assert_eq!(there.1, here.1, "the call's result and card");
    let root = host.remote_root.to_string_lossy().into_owned();
    assert_eq!(
        host.remote(&format!("cat {root}/two.txt")),
        written_here,
        "the accepted hunk, there"
    );
    assert!(!remote.root.join("two.txt").exists(), "nothing here");
}
