//! The `lsp` tool through the real server over stdio: the editor-backed provider
//! (`toolhost/lspQuery` when the client offers `experimental.toolhost.lspProvider`), the trust
//! rule for `[lsp.servers.*]` commands (a cloned repository's `toolhost.toml` never starts a
//! program), and language servers stopped when toolhost exits. clangd is required (a missing
//! clangd is a failure; `cargo xtask test` installs it).
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::{Value, json};
use server::{Env, uri};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_harness::client::RequestHandler;

fn lsp_provider_caps() -> Value {
    json!({"experimental": {"toolhost": {"lspProvider": true}}})
}

fn text(reply: &Value) -> String {
    reply["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

/// Live (non-zombie) children of `pid` whose name starts with `prefix`.
fn children(pid: u32, prefix: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((head, rest)) = stat.rsplit_once(')') else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let name = head.split_once('(').map_or("", |(_, n)| n);
        if fields.get(1) == Some(&pid.to_string().as_str())
            && fields.first() != Some(&"Z")
            && name.starts_with(prefix)
        {
            out.push(entry.file_name().to_string_lossy().parse().unwrap_or(0));
        }
    }
    out
}

fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next()) != Some('Z')
    })
}

#[test]
fn the_editor_answers_when_it_offers_the_provider() {
    let env = Env::new();
    let doc = env.write("doc.fk", "first line\n  second line here\n");
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let handler: RequestHandler = {
        let seen = Arc::clone(&seen);
        let doc_uri = uri(&doc);
        Arc::new(move |method, params| {
            if method != "toolhost/lspQuery" {
                return Err((-32601, format!("unhandled method {method}")));
            }
            seen.lock().unwrap().push(params.clone());
            let range =
                json!({"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 8}});
            Ok(match params["operation"].as_str() {
                Some("hover") => json!({"kind": "hover", "hover": {"contents": "**second**"}}),
                _ => json!({"kind": "locations", "locations": [{"uri": doc_uri, "range": range}]}),
            })
        })
    };
    let mut client = env.spawn_with(&[], handler);
    client.initialize(&env.root, json!({}), lsp_provider_caps()).unwrap();
    let reply = client
        .call_tool("lsp", json!({"operation": "goToDefinition", "file_path": "doc.fk", "line": 2, "character": 5}))
        .unwrap();
    assert_eq!(text(&reply), "doc.fk:2:3", "{reply:#}");
    assert_eq!(reply["result"]["value"]["locations"][0]["snippet"], json!("second line here"));
    assert_eq!(reply["card"]["kind"], json!("search"));
    assert_eq!(
        reply["card"]["locations"],
        json!([{"path": env.root.join("doc.fk").display().to_string(), "line": 2}])
    );
    let hover = client
        .call_tool(
            "lsp",
            json!({"operation": "hover", "file_path": "doc.fk", "line": 1, "character": 1}),
        )
        .unwrap();
    assert_eq!(text(&hover), "**second**");
    let mut seen = seen.lock().unwrap().clone();
    // Every server→client request names its own JSON-RPC id, for `$/cancelRequest` matching.
    let request_id = seen[0].as_object_mut().unwrap().remove("requestId");
    assert!(request_id.is_some_and(|id| id.is_i64()), "{seen:?}");
    assert_eq!(
        seen[0],
        json!({"operation": "goToDefinition", "uri": uri(&doc), "position": {"line": 1, "character": 4}})
    );
    assert_eq!(seen[1]["operation"], json!("hover"));
    client.shutdown().unwrap();
}

#[test]
fn a_cancelled_call_cancels_its_editor_query() {
    // What was missing: a cancelled or timed-out call dropped its toolhost/lspQuery without
    // telling the editor, which kept computing an answer nobody would read.
    let env = Env::new();
    env.write("doc.fk", "x\n");
    let asked = Arc::new(Mutex::new(false));
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let handler: RequestHandler = {
        let asked = Arc::clone(&asked);
        Arc::new(move |method, _params| {
            if method != "toolhost/lspQuery" {
                return Err((-32601, format!("unhandled method {method}")));
            }
            *asked.lock().unwrap() = true;
            // A slow editor: answers only once the test lets it (late, after the cancel).
            let _ = release_rx.lock().unwrap().recv_timeout(Duration::from_secs(10));
            Ok(json!({"kind": "hover", "hover": {"contents": "late"}}))
        })
    };
    let mut client = env.spawn_with(&[], handler);
    client.initialize(&env.root, json!({}), lsp_provider_caps()).unwrap();
    let id = json!("slow-hover");
    let args = json!({"operation": "hover", "file_path": "doc.fk", "line": 1, "character": 1});
    client
        .write_raw(&server::raw_request(
            id.clone(),
            "toolhost/callTool",
            json!({"name": "lsp", "arguments": args, "callId": "slow"}),
        ))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !*asked.lock().unwrap() {
        assert!(Instant::now() < deadline, "the editor was never asked");
        std::thread::sleep(Duration::from_millis(10));
    }
    client.notify("$/cancelRequest", json!({"id": id})).unwrap();
    // Give the server time to forward the cancellation, then let the editor answer (late).
    std::thread::sleep(Duration::from_millis(200));
    release_tx.send(()).unwrap();
    let cancel = client
        .wait_for(Duration::from_secs(10), |m| m["method"] == "$/cancelRequest")
        .expect("the editor got no $/cancelRequest");
    assert!(cancel["params"]["id"].is_i64(), "{cancel:#}");
    let reply = server::wait_response(&mut client, &id, Duration::from_secs(10)).unwrap();
    assert_eq!(reply["error"]["code"], json!(-32800), "{reply:#}");
    // The late answer is dropped and the connection goes on.
    let after = client.call_tool("read", json!({"file_path": "doc.fk"})).unwrap();
    assert_eq!(after["result"]["isError"], json!(false), "{after:#}");
    client.shutdown().unwrap();
}

/// `pyright-langserver` on PATH (`cargo xtask test` installs it); a missing one fails.
fn require_pyright() {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("pyright-langserver").exists()));
    assert!(found, "pyright-langserver is not on PATH (cargo xtask test installs it)");
}

#[test]
fn a_pooled_server_sees_the_agents_and_the_users_changes() {
    // What broke: pyright stayed running between calls and answered from the text it had read
    // before an agent's write moved a definition (goToDefinition still said line 1).
    require_pyright();
    let env = Env::new();
    env.write("b.py", "def moved():\n    return 1\n");
    env.write("a.py", "from b import moved\n\nmoved()\n");
    let mut client = env.start(json!({}));
    let definition =
        json!({"operation": "goToDefinition", "file_path": "a.py", "line": 3, "character": 1});
    let reply = client.call_tool("lsp", definition.clone()).unwrap();
    assert_eq!(text(&reply), "b.py:1:5", "{reply:#}");

    // The agent moves it (read, then write): the very next query sees the new text.
    client.call_tool("read", json!({"file_path": "b.py"})).unwrap();
    let write = client
        .call_tool(
            "write",
            json!({"file_path": "b.py", "content": "\n\n\ndef moved():\n    return 2\n"}),
        )
        .unwrap();
    assert_eq!(write["result"]["isError"], json!(false), "{write:#}");
    let reply = client.call_tool("lsp", definition.clone()).unwrap();
    assert_eq!(text(&reply), "b.py:4:5", "{reply:#}");

    // The user moves it outside toolhost: the watcher tells the server (debounced, so poll).
    env.write("b.py", "\ndef moved():\n    return 3\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = client.call_tool("lsp", definition.clone()).unwrap();
        if text(&reply) == "b.py:2:5" {
            break;
        }
        assert!(Instant::now() < deadline, "still {} after an external change", text(&reply));
        std::thread::sleep(Duration::from_millis(100));
    }
    client.shutdown().unwrap();
}

#[test]
fn external_changes_in_a_second_workspace_folder_reach_its_server() {
    // What broke: the watcher watched only the first workspace folder.
    require_pyright();
    let env = Env::new();
    let second = env.root.join("..").join("second");
    std::fs::create_dir_all(&second).unwrap();
    let second = second.canonicalize().unwrap();
    std::fs::write(second.join("b.py"), "def moved():\n    return 1\n").unwrap();
    std::fs::write(second.join("a.py"), "from b import moved\n\nmoved()\n").unwrap();
    let mut client = env.spawn();
    client
        .request(
            "initialize",
            json!({"processId": std::process::id(), "capabilities": {}, "workspaceFolders": [
                {"uri": uri(&env.root), "name": "first"},
                {"uri": uri(&second), "name": "second"},
            ]}),
        )
        .unwrap();
    client.notify("initialized", json!({})).unwrap();
    let a = second.join("a.py").display().to_string();
    let definition =
        json!({"operation": "goToDefinition", "file_path": a, "line": 3, "character": 1});
    let reply = client.call_tool("lsp", definition.clone()).unwrap();
    assert!(text(&reply).ends_with("b.py:1:5"), "{reply:#}");
    std::fs::write(second.join("b.py"), "\n\ndef moved():\n    return 3\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = client.call_tool("lsp", definition.clone()).unwrap();
        if text(&reply).ends_with("b.py:3:5") {
            break;
        }
        assert!(Instant::now() < deadline, "still {} after an external change", text(&reply));
        std::thread::sleep(Duration::from_millis(100));
    }
    client.shutdown().unwrap();
}

#[test]
fn without_the_offer_or_a_server_the_file_is_unavailable() {
    let env = Env::new();
    env.write("doc.fk", "x\n");
    let mut client = env.start(json!({}));
    let reply = client
        .call_tool(
            "lsp",
            json!({"operation": "hover", "file_path": "doc.fk", "line": 1, "character": 1}),
        )
        .unwrap();
    let path = env.root.join("doc.fk").display().to_string();
    assert_eq!(
        reply["result"]["error"],
        json!({"message": format!("no LSP provider handles \"{path}\""),
               "info": {"name": "LspError", "code": "LSP_UNAVAILABLE"}})
    );
    client.shutdown().unwrap();
}

#[test]
fn a_workspace_config_starts_a_server_only_when_trusted() {
    let env = Env::new();
    env.write("doc.fk", "x\n");
    env.write(
        "toolhost.toml",
        "[lsp.servers.evil]\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"touch pwned; exit 1\"]\nextensions = { \".fk\" = \"fake\" }\n",
    );
    let args = json!({"operation": "hover", "file_path": "doc.fk", "line": 1, "character": 1});
    let mut client = env.start(json!({}));
    let reply = client.call_tool("lsp", args.clone()).unwrap();
    assert_eq!(reply["result"]["error"]["info"]["code"], json!("LSP_UNAVAILABLE"));
    assert!(text(&reply).contains("no LSP provider handles"), "{reply:#}");
    client.shutdown().unwrap();
    assert!(!env.root.join("pwned").exists(), "an untrusted toolhost.toml started a program");

    // initializationOptions are no more trusted than the file.
    let init = json!({"lsp": {"servers": {"evil2": {"command": "/bin/sh",
        "args": ["-c", "touch pwned"], "extensions": {".fk": "fake"}}}}});
    let mut client = env.start(init);
    client.call_tool("lsp", args.clone()).unwrap();
    client.shutdown().unwrap();
    assert!(!env.root.join("pwned").exists(), "initializationOptions started a program");

    // Once the user trusts the workspace, its server starts (and here dies at once).
    let user = env.config.join("toolhost");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("config.toml"),
        format!("trusted_workspaces = [{:?}]\n", env.root.display().to_string()),
    )
    .unwrap();
    let mut client = env.start(json!({}));
    let reply = client.call_tool("lsp", args).unwrap();
    assert_eq!(reply["result"]["error"]["info"]["code"], json!("LSP_UNAVAILABLE"), "{reply:#}");
    assert!(text(&reply).contains("language server \"evil\" exited"), "{reply:#}");
    client.shutdown().unwrap();
    assert!(env.root.join("pwned").exists(), "the trusted server did not start");
}

#[test]
fn language_servers_stop_when_toolhost_exits() {
    let env = Env::new();
    env.write("compile_flags.txt", "-Wall\n");
    env.write("util.h", "int add(int a, int b);\n");
    env.write("main.c", "#include \"util.h\"\nint main(void) { return add(1, 2); }\n");
    let mut client = env.start(json!({}));
    let reply = client
        .call_tool(
            "lsp",
            json!({"operation": "goToDefinition", "file_path": "main.c", "line": 2,
                                 "character": 25, "symbol": "add"}),
        )
        .unwrap();
    assert_eq!(text(&reply), "util.h:1:5", "{reply:#} (is clangd installed?)");
    let servers = children(client.pid(), "clangd");
    assert_eq!(servers.len(), 1, "one clangd for the workspace");
    let started = Instant::now();
    let status = client.shutdown().unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    assert!(started.elapsed() < Duration::from_secs(4), "exit took {:?}", started.elapsed());
    let deadline = Instant::now() + Duration::from_secs(2);
    while servers.iter().any(|p| running(*p)) {
        assert!(Instant::now() < deadline, "clangd outlived toolhost: {servers:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
