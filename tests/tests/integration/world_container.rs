//! An execution world in a container: `toolhost exec-server` in podman (docker where podman is
//! missing) from an image built from Debian's packages by the test, the workspace mounted at
//! `/workspace`, no network. Processes run inside the container (its Debian, its network), edits
//! land in the mounted workspace, confinement holds there, and after the world is done with the
//! container is gone — also when the client was dropped without saying so. A session configured
//! with `[world] kind = "container"` runs bash, edits and the lsp tool's language server there.

use crate::server;
use std::process::Command;
use tokio_util::sync::CancellationToken;
use toolhost_protocol::world::RunParams;
use toolhost_world::{CONTAINER_ROOT, ContainerSpec, Launch, WorldClient, container_engine};

#[path = "../support/container_image.rs"]
mod container_image;

fn text(b64: &str) -> String {
    use base64::Engine as _;
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap()
}

fn container_exists(engine: &str, name: &str) -> bool {
    Command::new(engine).args(["container", "exists", name]).status().unwrap().success()
}

fn spec(engine: &str, image: &str, workspace: &std::path::Path, name: &str) -> ContainerSpec {
    ContainerSpec {
        engine: engine.to_owned(),
        image: image.to_owned(),
        workspace: workspace.to_path_buf(),
        binary: server::binary(),
        name: name.to_owned(),
        // This machine's podman: runc (crun refuses its hybrid cgroups) and ulimits within the
        // VM's hard limits.
        options: [
            "--runtime",
            "runc",
            "--ulimit",
            "nofile=20000:20000",
            "--ulimit",
            "nproc=32768:32768",
        ]
        .map(str::to_owned)
        .to_vec(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_world_runs_processes_and_edits_and_is_removed_after() {
    let engine = container_engine().expect("podman or docker: `cargo xtask test` installs podman");
    let image = container_image::ensure(engine, &server::workspace_root());
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "on the host\n").unwrap();
    let name = format!("toolhost-world-test-{}", std::process::id());
    let client = WorldClient::new(Launch::container(&spec(engine, image, ws.path(), &name)));
    let hello = client.hello().await.unwrap();
    assert_eq!(hello.root, CONTAINER_ROOT);
    assert!(container_exists(engine, &name));

    // A process runs inside: Debian's userland, the workspace at /workspace, no network but lo.
    let run = RunParams {
        argv: ["sh", "-c", "cat /etc/debian_version; pwd; ls /sys/class/net; cat a.txt"]
            .map(str::to_owned)
            .to_vec(),
        cwd: None,
        stdin: None,
        timeout_ms: Some(30_000),
    };
    let ran = client.run(&run, &CancellationToken::new()).await.unwrap();
    assert_eq!(ran.exit_code, Some(0), "{}", text(&ran.stderr));
    let out = text(&ran.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("12."), "bookworm: {out}");
    assert_eq!(lines[1..], ["/workspace", "lo", "on the host"], "{out}");

    // An edit made in the world lands in the mounted workspace, version-checked.
    let (bytes, version) = client.read("a.txt", None).await.unwrap().unwrap();
    assert_eq!(bytes, b"on the host\n");
    client.replace("a.txt", Some(&version), Some(b"edited in the container\n")).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "edited in the container\n"
    );
    let created = client.replace("b.txt", None, Some(b"b\n")).await.unwrap();
    assert_eq!(created.operation, "create");
    assert_eq!(std::fs::read_to_string(ws.path().join("b.txt")).unwrap(), "b\n");
    for escape in ["../etc/passwd", "/etc/passwd", "/opt/toolhost/toolhost"] {
        let refused = client.read(escape, None).await.unwrap_err();
        assert_eq!(refused.code(), "FS_SANDBOX_DENIED", "{escape}: {refused}");
    }

    // Done with: the container is gone.
    client.disconnect().await;
    assert!(!container_exists(engine, &name), "the container was removed");

    // A client dropped without a word removes its container too.
    let name = format!("{name}-dropped");
    let dropped = WorldClient::new(Launch::container(&spec(engine, image, ws.path(), &name)));
    dropped.hello().await.unwrap();
    assert!(container_exists(engine, &name));
    drop(dropped);
    assert!(!container_exists(engine, &name), "the dropped client's container was removed");
}

/// Containers whose name starts with `prefix`, as the engine lists them.
fn containers_named(engine: &str, prefix: &str) -> Vec<String> {
    let out = Command::new(engine).args(["ps", "-a", "--format", "{{.Names}}"]).output().unwrap();
    let names = String::from_utf8_lossy(&out.stdout).into_owned();
    names.lines().filter(|n| n.starts_with(prefix)).map(str::to_owned).collect()
}

#[test]
fn a_session_in_a_container_world_runs_bash_and_edits_there_and_removes_it_after() {
    use crate::server::{Env, call_ok};
    use serde_json::json;
    let engine = container_engine().expect("podman or docker: `cargo xtask test` installs podman");
    let image = container_image::ensure(engine, &server::workspace_root());
    let env = Env::new();
    env.write("a.txt", "alpha\nbeta\n");
    let options = spec(engine, image, env.root.as_path(), "unused").options;
    let quoted = options.iter().map(|o| format!("{o:?}")).collect::<Vec<_>>().join(", ");
    env.write_user_config(&format!(
        "[world]\nkind = \"container\"\nimage = {image:?}\nengine = {engine:?}\n\
         container_options = [{quoted}]\n"
    ));
    let mut client = env.start(json!({}));
    let prefix = format!("toolhost-world-{}-", client.pid());

    // bash runs inside the container: its Debian, no network but lo, the workspace mounted.
    let out = call_ok(
        &mut client,
        "bash",
        json!({"command": "cat /etc/debian_version; ls /sys/class/net; pwd; cat a.txt", "description": "where am I"}),
    );
    let text = out["result"]["content"][0]["text"].as_str().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("12."), "bookworm: {text}");
    assert_eq!(lines[1..5], ["lo", CONTAINER_ROOT, "alpha", "beta"], "{text}");
    assert_eq!(containers_named(engine, &prefix).len(), 1, "one container for the session");

    // An edit made through the world lands in the workspace, with its diff card.
    call_ok(&mut client, "read", json!({"file_path": "a.txt"}));
    let edit = call_ok(
        &mut client,
        "edit",
        json!({"file_path": "a.txt", "old_string": "beta", "new_string": "BETA"}),
    );
    assert_eq!(edit["card"]["kind"], "diff", "{edit}");
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "alpha\nBETA\n");
    // A file made in the container is the workspace's too.
    call_ok(&mut client, "bash", json!({"command": "echo made > made.txt", "description": "make"}));
    assert_eq!(std::fs::read_to_string(env.root.join("made.txt")).unwrap(), "made\n");
    // The language server runs in the container (the image's clangd; this machine's is not
    // asked), and its locations name this machine's files.
    let fixture = server::workspace_root()
        .join("editor-clients/conformance/101-lsp-clangd-navigation/before");
    for name in ["main.c", "util.c", "util.h", "compile_flags.txt"] {
        std::fs::copy(fixture.join(name), env.root.join(name)).unwrap();
    }
    let found = call_ok(
        &mut client,
        "lsp",
        json!({"operation": "goToDefinition", "file_path": "main.c", "line": 4, "character": 17}),
    );
    let here = format!("file://{}/util.h", env.root.display());
    assert_eq!(found["result"]["value"]["locations"][0]["uri"], here, "{found}");
    assert_eq!(found["result"]["content"][0]["text"], "util.h:5:5", "{found}");
    let ps = call_ok(
        &mut client,
        "bash",
        json!({"command": "cat /proc/[0-9]*/comm", "description": "processes"}),
    );
    let ps = ps["result"]["content"][0]["text"].as_str().unwrap();
    assert!(ps.lines().any(|l| l.starts_with("clangd")), "clangd runs in the container: {ps}");
    // A terminal runs there too.
    call_ok(&mut client, "terminal_open", json!({"type": "shell"}));
    let sent = call_ok(
        &mut client,
        "terminal_send",
        json!({"sessionId": "pty-1", "text": "cat /etc/debian_version", "submit": true}),
    );
    let viewport = sent["result"]["value"]["viewport"].as_str().unwrap_or_default();
    assert!(viewport.contains("\n12."), "bookworm's terminal: {sent}");

    // The session ends: its container goes with it.
    let _ = client.shutdown();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !containers_named(engine, &prefix).is_empty() {
        assert!(std::time::Instant::now() < deadline, "the session's container was left behind");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn two_sessions_in_container_worlds_at_once_each_get_their_own_container() {
    use crate::server::{Env, call_ok};
    use serde_json::json;
    let engine = container_engine().expect("podman or docker: `cargo xtask test` installs podman");
    let image = container_image::ensure(engine, &server::workspace_root());
    let options = spec(engine, image, std::path::Path::new("/"), "unused").options;
    let quoted = options.iter().map(|o| format!("{o:?}")).collect::<Vec<_>>().join(", ");
    let config = format!(
        "[world]\nkind = \"container\"\nimage = {image:?}\nengine = {engine:?}\n\
         container_options = [{quoted}]\n"
    );
    let (first, second) = (Env::new(), Env::new());
    let mut sessions = Vec::new();
    for env in [&first, &second] {
        env.write_user_config(&config);
        let client = env.start(json!({}));
        let prefix = format!("toolhost-world-{}-", client.pid());
        sessions.push((client, prefix));
    }
    let mut hostnames = Vec::new();
    for (client, prefix) in &mut sessions {
        let out = call_ok(
            client,
            "bash",
            json!({"command": "cat /proc/sys/kernel/hostname; echo mine > mine.txt", "description": "who"}),
        );
        hostnames.push(out["result"]["content"][0]["text"].as_str().unwrap().trim().to_owned());
        assert_eq!(containers_named(engine, prefix).len(), 1, "{prefix}");
    }
    assert_ne!(hostnames[0], hostnames[1], "two containers");
    for env in [&first, &second] {
        assert_eq!(std::fs::read_to_string(env.root.join("mine.txt")).unwrap(), "mine\n");
    }
    for (client, prefix) in sessions {
        let _ = client.shutdown();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !containers_named(engine, &prefix).is_empty() {
            assert!(std::time::Instant::now() < deadline, "{prefix} was left behind");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}
