//! An execution world over ssh: `toolhost exec-server` on a "remote" host — Debian's sshd in a
//! network namespace this test creates, whose workspace exists only in that host's mount
//! namespace — reached with `ssh -T` as a person's toolhost would reach a bigger machine. Files,
//! search and processes run there; path escapes are refused there; a killed connection fails
//! the call in flight clearly and the next call reconnects; and the overhead against a local
//! world is measured (printed: a small read, a grep, bytes per call).

use crate::server;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_protocol::world::{GlobParams, GrepParams, RunParams};
use toolhost_world::{Launch, WorldClient, WorldError};

use crate::ssh_host::SshHost;

fn seed(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("a.txt"), "remote\n").unwrap();
    for i in 0..300 {
        let body = if i % 50 == 7 { "fn main() { needle(); }\n" } else { "fn other() {}\n" };
        std::fs::write(dir.join(format!("src/m{i:03}.rs")), body).unwrap();
    }
}

fn run_params(argv: &[&str]) -> RunParams {
    RunParams {
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        cwd: None,
        stdin: None,
        timeout_ms: None,
    }
}

fn text(b64: &str) -> String {
    use base64::Engine as _;
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap()
}

fn p50(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

async fn timed_reads(client: &WorldClient, n: usize) -> Duration {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        client.read("a.txt", None).await.unwrap().unwrap();
        samples.push(started.elapsed());
    }
    p50(samples)
}

async fn timed_greps(client: &WorldClient, n: usize) -> Duration {
    let params = GrepParams { pattern: "needle".into(), path: None, include: None };
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        assert_eq!(client.grep(&params).await.unwrap().matches.len(), 6);
        samples.push(started.elapsed());
    }
    p50(samples)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_run_on_an_ssh_host_and_a_dropped_connection_reconnects() {
    let seed_dir = tempfile::tempdir().unwrap();
    seed(seed_dir.path());
    let host = SshHost::start(seed_dir.path());
    let binary = server::binary();
    let root = host.remote_root.to_string_lossy().into_owned();
    assert!(
        !host.remote_root.join("a.txt").exists(),
        "the remote workspace exists only on the remote side"
    );
    let client = std::sync::Arc::new(WorldClient::new(Launch::ssh(
        &host.target,
        &root,
        &binary.to_string_lossy(),
        &host.ssh_options,
    )));
    let hello = client.hello().await.unwrap();
    assert_eq!(hello.root, root);

    // Files: read, replace with the version read, a stale replace refused.
    let (bytes, version) = client.read("a.txt", None).await.unwrap().unwrap();
    assert_eq!(bytes, b"remote\n");
    let replaced =
        client.replace("a.txt", Some(&version), Some(b"changed remotely\n")).await.unwrap();
    assert_eq!(replaced.operation, "update");
    let remote_a = tokio::task::block_in_place(|| host.remote(&format!("cat {root}/a.txt")));
    assert_eq!(remote_a, "changed remotely\n");
    let stale = client.replace("a.txt", Some(&version), Some(b"x")).await.unwrap_err();
    assert_eq!(stale.code(), "FS_STALE_VERSION", "{stale}");
    let created = client.replace("src/new.rs", None, Some(b"fn new() {}\n")).await.unwrap();
    assert_eq!(created.operation, "create");
    assert!(!host.remote_root.join("src/new.rs").exists(), "written there, not here");
    let listed = client.list("src").await.unwrap();
    assert_eq!(listed.entries.len(), 301);

    // Search runs where the files are.
    let grep = GrepParams { pattern: "needle".into(), path: None, include: None };
    let found = client.grep(&grep).await.unwrap();
    assert_eq!(found.matches.len(), 6, "{found:?}");
    assert_eq!(found.matches[0].path, "src/m007.rs");
    let glob = GlobParams { pattern: "src/new*.rs".into(), path: None };
    assert_eq!(client.glob(&glob).await.unwrap().paths, ["src/new.rs"]);

    // Processes run there, in the workspace, with the remote's environment.
    let ran = client
        .run(&run_params(&["sh", "-c", "echo $((6*7)); pwd; cat a.txt"]), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(ran.exit_code, Some(0));
    assert_eq!(text(&ran.stdout), format!("42\n{root}\nchanged remotely\n"));

    // Confinement is the remote's: escapes sent over ssh are refused there.
    for escape in ["../x", "/etc/passwd", "src/../../a.txt"] {
        let refused = client.read(escape, None).await.unwrap_err();
        assert_eq!(refused.code(), "FS_SANDBOX_DENIED", "{escape}: {refused}");
    }

    // A killed connection fails the call in flight clearly; the next call reconnects.
    let marker = "31.4159";
    let waiting = {
        let client = std::sync::Arc::clone(&client);
        tokio::spawn(async move {
            client.run(&run_params(&["sleep", marker]), &CancellationToken::new()).await
        })
    };
    let running_remotely = || {
        let found = tokio::task::block_in_place(|| {
            host.remote(&format!("pgrep -f 'slee[p] {marker}' || true"))
        });
        !found.trim().is_empty()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    // The sleep is running on the remote before the connection is cut.
    while !running_remotely() {
        assert!(Instant::now() < deadline, "the remote sleep never started");
    }
    let pid = client.launcher_pid().await.unwrap();
    let pgid = rustix::process::Pid::from_raw(pid as i32).unwrap();
    rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL).unwrap();
    let cut = waiting.await.unwrap();
    let cut = cut.unwrap_err();
    assert!(matches!(cut, WorldError::Disconnected(_)), "{cut:?}");
    assert_eq!(cut.code(), "WORLD_DISCONNECTED");
    let (bytes, _) = client.read("a.txt", None).await.unwrap().unwrap();
    assert_eq!(bytes, b"changed remotely\n", "the next call reconnected");
    // The exec-server of the cut connection saw its input end and ended its process.
    let deadline = Instant::now() + Duration::from_secs(30);
    while running_remotely() {
        assert!(Instant::now() < deadline, "the remote sleep outlived its connection");
    }

    // Overhead: the same requests against an exec-server on this machine, and over ssh.
    let local_dir = tempfile::tempdir().unwrap();
    seed(local_dir.path());
    let local = WorldClient::new(Launch::local(&binary, local_dir.path()));
    local.hello().await.unwrap();
    // Warm both (page cache, the remote's first walk).
    timed_reads(&local, 5).await;
    timed_reads(&client, 5).await;
    timed_greps(&local, 2).await;
    timed_greps(&client, 2).await;
    let before = client.traffic();
    let (read_local, read_ssh) = (timed_reads(&local, 200).await, timed_reads(&client, 200).await);
    let after_reads = client.traffic();
    let (grep_local, grep_ssh) = (timed_greps(&local, 20).await, timed_greps(&client, 20).await);
    let after_greps = client.traffic();
    let per = |a: toolhost_world::Traffic, b: toolhost_world::Traffic| {
        let n = (b.requests - a.requests).max(1);
        ((b.sent - a.sent) / n, (b.received - a.received) / n)
    };
    let (read_sent, read_received) = per(before, after_reads);
    let (grep_sent, grep_received) = per(after_reads, after_greps);
    // And the same work in process, as the local tools do it today (no protocol at all).
    let in_process = toolhost_workspace::Workspace::new(toolhost_workspace::WorkspaceConfig::new(
        local_dir.path(),
    ))
    .unwrap();
    let mut samples = Vec::new();
    for _ in 0..200 {
        let started = Instant::now();
        in_process.disk_bytes("a.txt").await.unwrap().unwrap();
        samples.push(started.elapsed());
    }
    let read_in_process = p50(samples);
    let workdir = local_dir.path().canonicalize().unwrap();
    let mut samples = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let never = || false;
        let options = toolhost_workspace::search::GrepOptions::new(
            &workdir, &workdir, "needle", None, &never,
        );
        assert_eq!(toolhost_workspace::search::grep(&options).unwrap().len(), 6);
        samples.push(started.elapsed());
    }
    let grep_in_process = p50(samples);
    println!("world overhead (p50; bytes per call of protocol payload, client side)");
    println!(
        "in process (today's local tools): small read {read_in_process:?}, grep {grep_in_process:?}"
    );
    println!("| call | local exec-server | over ssh | ratio | bytes sent / received |");
    println!("|---|---|---|---|---|");
    let ratio = |a: Duration, b: Duration| b.as_secs_f64() / a.as_secs_f64().max(1e-9);
    println!(
        "| small read | {read_local:?} | {read_ssh:?} | {:.2} | {read_sent} / {read_received} |",
        ratio(read_local, read_ssh)
    );
    println!(
        "| grep over 301 files | {grep_local:?} | {grep_ssh:?} | {:.2} | {grep_sent} / {grep_received} |",
        ratio(grep_local, grep_ssh)
    );
    client.disconnect().await;
    local.disconnect().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolhost_is_copied_to_an_ssh_host_once_and_found_there_after() {
    let seed_dir = tempfile::tempdir().unwrap();
    seed(seed_dir.path());
    let host = SshHost::start(seed_dir.path());
    let binary = server::binary();
    let root = host.remote_root.to_string_lossy().into_owned();
    let cache = host.remote_only.join("cache").to_string_lossy().into_owned();
    let launch = || {
        Launch::ssh_provisioned(&host.target, &root, &binary, &host.ssh_options, Some(&cache))
            .unwrap()
    };
    let first = WorldClient::new(launch());
    assert_eq!(first.hello().await.unwrap().root, root);
    assert_eq!(first.copies(), 1, "the host had no toolhost: it was copied");
    let tag = toolhost_world::binary_tag(&binary).unwrap();
    let remote_binary = format!("{cache}/{tag}/toolhost");
    let listed = tokio::task::block_in_place(|| host.remote(&format!("ls {cache}/{tag}")));
    assert_eq!(listed, "toolhost\n", "copied under its tag, no partial copy left");
    assert!(!Path::new(&remote_binary).exists(), "the copy exists on the remote side only");
    let (bytes, _) = first.read("a.txt", None).await.unwrap().unwrap();
    assert_eq!(bytes, b"remote\n");
    first.disconnect().await;

    let second = WorldClient::new(launch());
    second.hello().await.unwrap();
    assert_eq!(second.copies(), 0, "found there the second time");
    second.disconnect().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolhost_world_check_and_run_reach_the_configured_ssh_world() {
    let seed_dir = tempfile::tempdir().unwrap();
    seed(seed_dir.path());
    let host = SshHost::start(seed_dir.path());
    let binary = server::binary();
    let (config_home, workspace) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::create_dir_all(config_home.path().join("toolhost")).unwrap();
    let quoted =
        |items: &[String]| items.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ");
    std::fs::write(
        config_home.path().join("toolhost/config.toml"),
        format!(
            "[world]\nkind = \"ssh\"\nhost = {:?}\nroot = {:?}\nprogram = {:?}\nssh_options = [{}]\n",
            host.target,
            host.remote_root.to_string_lossy(),
            binary.to_string_lossy(),
            quoted(&host.ssh_options),
        ),
    )
    .unwrap();
    let toolhost = |args: &[&str]| {
        let out = std::process::Command::new(&binary)
            .args(args)
            .current_dir(workspace.path())
            .env("XDG_CONFIG_HOME", config_home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = tokio::task::block_in_place(|| toolhost(&["world", "check"]));
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("world: ssh\n"), "{out}");
    assert!(out.contains(&format!("root: {}\n", host.remote_root.display())), "{out}");
    let (code, out, err) = tokio::task::block_in_place(|| {
        toolhost(&["world", "run", "--", "sh", "-c", "cat a.txt; echo gone >&2; exit 4"])
    });
    assert_eq!((code, out.as_str()), (Some(4), "remote\n"), "{err}");
    assert!(err.ends_with("gone\n"), "{err}");
    // Nothing warns that tools would still run here: they all run in the world.
    let (_, _, err) = tokio::task::block_in_place(|| toolhost(&["tools"]));
    assert!(!err.contains("[world]"), "{err}");
}
