//! Chaos tests: a misbehaving fake server (`support/fake_lsp_server.py`) that crashes
//! mid-request, never answers, sends garbage, oversized or non-JSON messages, or malformed
//! results. Every case ends in a typed error within a short deadline, never a hang, and leaves no
//! process behind (checked in `/proc`, helpers in the server's process group included).
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use toolhost_contract::CancellationToken;
use toolhost_contract::lsp::{
    LspAnswer, LspOperation, LspPosition, LspProvider, LspRequest, file_uri,
};
use toolhost_lsp_host::{FileChange, FileChangeKind, LspHost, LspHostConfig, ServerSpec};

/// The real interpreter behind `python3` (not a pyenv shim), found once.
fn python() -> &'static PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 is required for the chaos tests");
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake_lsp_server.py")
}

struct Fake {
    _dir: tempfile::TempDir,
    root: PathBuf,
    log: PathBuf,
    host: LspHost,
}

impl Fake {
    fn new(flags: &str) -> Fake {
        Fake::with_config(flags, LspHostConfig::default())
    }

    fn with_config(flags: &str, config: LspHostConfig) -> Fake {
        Fake::with_spec(flags, config, |_| {})
    }

    fn with_spec(flags: &str, config: LspHostConfig, edit: impl FnOnce(&mut ServerSpec)) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        let root = dir.path().join("ws").canonicalize().unwrap();
        let log = dir.path().join("server.log");
        let mut spec = ServerSpec::new("fake", python().display().to_string())
            .with_args([
                script().display().to_string(),
                flags.to_owned(),
                log.display().to_string(),
            ])
            .with_extension(".fk", "fake");
        edit(&mut spec);
        let config = LspHostConfig {
            servers: vec![spec],
            well_known: false,
            kill_grace: Duration::from_millis(300),
            ..config
        };
        Fake { _dir: dir, root, log, host: LspHost::new(config) }
    }

    fn request(&self, op: LspOperation, text: &str, line: u32, character: u32) -> LspRequest {
        let path = self.root.join("doc.fk");
        std::fs::write(&path, text).unwrap();
        LspRequest {
            operation: op,
            workspace_root: self.root.clone(),
            uri: file_uri(&path),
            display: path.display().to_string(),
            path,
            position: LspPosition { line, character },
            text: Arc::from(text),
        }
    }

    async fn query(&self, op: LspOperation) -> Result<LspAnswer, toolhost_contract::ToolError> {
        let request = self.request(op, "hello\n", 0, 1);
        self.host.query(&request, &CancellationToken::new()).await
    }

    fn log(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Every pid the fake logged (servers and their helpers).
    fn pids(&self) -> Vec<i32> {
        self.log()
            .iter()
            .filter_map(|v| v.get("pid").or_else(|| v.get("child")).and_then(Value::as_i64))
            .map(|p| p as i32)
            .collect()
    }
}

/// Whether `pid` is a live (non-zombie) process.
fn running(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

/// Waits (briefly) until none of `pids` runs; fails naming the survivors.
async fn assert_no_orphans(pids: &[i32]) {
    assert!(!pids.is_empty(), "the fake server logged no pid");
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let alive: Vec<i32> = pids.iter().copied().filter(|p| running(*p)).collect();
        if alive.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "processes left running: {alive:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn code(err: &toolhost_contract::ToolError) -> &str {
    err.code().unwrap_or("<plain>")
}

#[tokio::test]
async fn answers_normalize_and_the_instance_is_pooled() {
    let fake = Fake::new("");
    let answer = fake.query(LspOperation::GoToDefinition).await.unwrap();
    let LspAnswer::Locations(locations) = answer else { panic!("{answer:?}") };
    assert_eq!(locations[0].range.start, LspPosition { line: 0, character: 1 });
    let refs = fake.query(LspOperation::FindReferences).await.unwrap();
    assert!(matches!(refs, LspAnswer::Locations(ref l) if l.len() == 2), "{refs:?}");
    let hover = fake.query(LspOperation::Hover).await.unwrap();
    let LspAnswer::Hover(Some(hover)) = hover else { panic!("{hover:?}") };
    assert_eq!(hover.contents, "pos 0:1");
    assert_eq!(fake.host.started(), 1);
    let pids = fake.pids();
    // After shutdown the server has processed (and logged) every earlier message.
    fake.host.shutdown_all().await;
    let log = fake.log();
    // UTF-16 preferred, UTF-8 and UTF-32 offered.
    assert_eq!(log[1]["initialize"], json!({"positionEncodings": ["utf-16", "utf-8", "utf-32"]}));
    // References include the declaration; every query opens and closes the document.
    let refs_request = log.iter().find(|v| v["request"] == "textDocument/references").unwrap();
    assert_eq!(refs_request["context"], json!({"includeDeclaration": true}));
    let opens = log.iter().filter(|v| v.get("textDocument/didOpen").is_some()).count();
    let closes = log.iter().filter(|v| v.get("textDocument/didClose").is_some()).count();
    assert_eq!((opens, closes), (3, 3));
    assert_no_orphans(&pids).await;
}

#[tokio::test]
async fn crash_mid_request_is_a_typed_error_with_the_stderr_tail() {
    let fake = Fake::new("crash,child");
    let started = Instant::now();
    let err = fake.query(LspOperation::GoToDefinition).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(code(&err), "LSP_UNAVAILABLE", "{err:?}");
    assert!(err.message.contains("exited"), "{}", err.message);
    assert!(err.message.contains("fatal: simulated crash"), "{}", err.message);
    // The helper in the crashed server's group is not left behind.
    drop(fake.host);
    assert_no_orphans(&fake_pids(&fake.log)).await;
}

fn fake_pids(log: &Path) -> Vec<i32> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.get("pid").or_else(|| v.get("child")).and_then(Value::as_i64))
        .map(|p| p as i32)
        .collect()
}

#[tokio::test]
async fn a_server_that_never_answers_is_torn_down_after_cancellation() {
    let fake = Fake::new("hang,child");
    let request = fake.request(LspOperation::Hover, "x\n", 0, 0);
    let cancel = CancellationToken::new();
    let timer = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            cancel.cancel();
        })
    };
    let started = Instant::now();
    let err = fake.host.query(&request, &cancel).await.unwrap_err();
    let elapsed = started.elapsed();
    timer.await.unwrap();
    assert_eq!(code(&err), "ABORTED", "{err:?}");
    // Cancellation (0.5 s) + kill grace (0.3 s), with slack for a busy machine.
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    assert!(fake.log().iter().any(|v| v.get("cancel").is_some()), "no $/cancelRequest was sent");
    assert_no_orphans(&fake.pids()).await;
    assert!(fake.host.live_pids().is_empty());
}

#[tokio::test]
async fn a_cancelled_request_that_settles_keeps_the_instance() {
    let fake = Fake::new("hang-cancellable");
    let request = fake.request(LspOperation::Hover, "x\n", 0, 0);
    let cancel = CancellationToken::new();
    let fire = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        fire.cancel();
    });
    let err = fake.host.query(&request, &cancel).await.unwrap_err();
    assert_eq!(code(&err), "ABORTED");
    assert_eq!(fake.host.live_pids().len(), 1, "the instance should stay pooled");
    fake.host.shutdown_all().await;
    assert_no_orphans(&fake.pids()).await;
}

#[tokio::test]
async fn garbage_kills_the_instance() {
    for flags in ["garbage,child", "badjson,child", "oversized,child"] {
        let fake = Fake::new(flags);
        let started = Instant::now();
        let err = fake.query(LspOperation::GoToDefinition).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5), "{flags}");
        assert_eq!(code(&err), "LSP_UNAVAILABLE", "{flags}: {err:?}");
        assert!(err.message.contains("invalid message"), "{flags}: {}", err.message);
        assert_no_orphans(&fake.pids()).await;
    }
}

#[tokio::test]
async fn an_oversized_message_respects_the_configured_cap() {
    let config = LspHostConfig { max_message_bytes: 64, ..LspHostConfig::default() };
    let fake = Fake::with_config("", config);
    let err = fake.query(LspOperation::Hover).await.unwrap_err();
    assert_eq!(code(&err), "LSP_UNAVAILABLE", "{err:?}");
    assert!(err.message.contains("exceeds the 64-byte limit"), "{}", err.message);
    assert_no_orphans(&fake.pids()).await;
}

#[tokio::test]
async fn malformed_results_are_typed_and_keep_the_instance() {
    let fake = Fake::new("malformed");
    let err = fake.query(LspOperation::GoToDefinition).await.unwrap_err();
    assert_eq!(code(&err), "LSP_MALFORMED_RESPONSE", "{err:?}");
    let err = fake.query(LspOperation::Hover).await.unwrap_err();
    assert_eq!(code(&err), "LSP_MALFORMED_RESPONSE", "{err:?}");
    assert_eq!(fake.host.started(), 1);
    fake.host.shutdown_all().await;
}

#[tokio::test]
async fn unsupported_operations_and_encodings() {
    let fake = Fake::new("no-impl");
    let err = fake.query(LspOperation::GoToImplementation).await.unwrap_err();
    assert_eq!(code(&err), "LSP_UNSUPPORTED_OPERATION");
    assert_eq!(err.message, "server does not support goToImplementation");
    fake.host.shutdown_all().await;

    let fake = Fake::new("encoding-bogus");
    let err = fake.query(LspOperation::Hover).await.unwrap_err();
    assert_eq!(code(&err), "LSP_UNAVAILABLE");
    assert!(err.message.contains("unsupported position encoding \"utf-7\""), "{}", err.message);
    assert_no_orphans(&fake.pids()).await;
}

#[tokio::test]
async fn a_hanging_initialize_is_cancellable() {
    let fake = Fake::new("init-hang");
    let request = fake.request(LspOperation::Hover, "x\n", 0, 0);
    let cancel = CancellationToken::new();
    let fire = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        fire.cancel();
    });
    let started = Instant::now();
    let err = fake.host.query(&request, &cancel).await.unwrap_err();
    assert_eq!(code(&err), "ABORTED");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_no_orphans(&fake.pids()).await;
}

#[tokio::test]
async fn crashes_restart_within_a_budget() {
    let config = LspHostConfig { restart_budget: 2, ..LspHostConfig::default() };
    let fake = Fake::with_config("crash", config);
    let mut codes = Vec::new();
    for _ in 0..5 {
        let err = fake.query(LspOperation::Hover).await.unwrap_err();
        codes.push((code(&err).to_owned(), err.message.contains("not restarting")));
    }
    // The first start plus two restarts crash; then the host refuses.
    assert_eq!(fake.host.started(), 3);
    assert_eq!(codes.iter().filter(|(_, refused)| *refused).count(), 2);
    assert!(codes.iter().all(|(c, _)| c == "LSP_UNAVAILABLE"));
    assert_no_orphans(&fake.pids()).await;
}

#[tokio::test]
async fn a_pooled_instance_that_died_is_replaced_transparently() {
    // Dies while idle (right after its first answer).
    let fake = Fake::new("exit-after-first");
    fake.query(LspOperation::Hover).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    fake.query(LspOperation::Hover).await.unwrap();
    assert_eq!(fake.host.started(), 2);
    fake.host.shutdown_all().await;

    // Dies during the second request: retried once on a fresh instance.
    let fake = Fake::new("crash-second");
    fake.query(LspOperation::Hover).await.unwrap();
    let answer = fake.query(LspOperation::Hover).await.unwrap();
    assert!(matches!(answer, LspAnswer::Hover(Some(_))));
    assert_eq!(fake.host.started(), 2);
    let pids = fake.pids();
    fake.host.shutdown_all().await;
    assert_no_orphans(&pids).await;
}

#[tokio::test]
async fn utf8_and_utf32_servers_get_converted_columns() {
    // "é😀x": UTF-16 column 3 (before x) is byte 6 and code point 2.
    for (flags, server_column) in [("utf8", 6), ("utf32", 2)] {
        let fake = Fake::new(flags);
        let request = fake.request(LspOperation::GoToDefinition, "é😀x\n", 0, 3);
        let answer = fake.host.query(&request, &CancellationToken::new()).await.unwrap();
        let sent = fake.log().into_iter().find(|v| v.get("request").is_some()).unwrap();
        assert_eq!(sent["position"], json!({"line": 0, "character": server_column}), "{flags}");
        let LspAnswer::Locations(locations) = answer else { panic!() };
        assert_eq!(locations[0].range.start, LspPosition { line: 0, character: 3 }, "{flags}");
        fake.host.shutdown_all().await;
    }
}

#[tokio::test]
async fn server_requests_are_answered() {
    let fake = Fake::new("server-requests");
    let LspAnswer::Hover(Some(hover)) = fake.query(LspOperation::Hover).await.unwrap() else {
        panic!("no hover")
    };
    let replies: Value = serde_json::from_str(&hover.contents).unwrap();
    let root_uri = file_uri(&fake.root);
    assert_eq!(replies["workspace/configuration"], json!([null, null, null]));
    assert!(
        !fake.log().iter().any(|v| v.get("didChangeConfiguration").is_some()),
        "no settings, no push"
    );
    assert_eq!(replies["client/registerCapability"], Value::Null);
    assert_eq!(
        replies["workspace/workspaceFolders"],
        json!([{"uri": root_uri, "name": "workspace"}])
    );
    assert_eq!(replies["workspace/applyEdit"]["code"], json!(-32601));
    fake.host.shutdown_all().await;
}

#[tokio::test]
async fn configured_settings_answer_workspace_configuration_by_section() {
    let settings = json!({"a": {"x": 1}, "b": {"c": "deep", "d": 2}});
    let fake = Fake::with_spec("server-requests", LspHostConfig::default(), |spec| {
        spec.settings = Some(settings.clone());
    });
    let LspAnswer::Hover(Some(hover)) = fake.query(LspOperation::Hover).await.unwrap() else {
        panic!("no hover")
    };
    let replies: Value = serde_json::from_str(&hover.contents).unwrap();
    assert_eq!(replies["workspace/configuration"], json!([{"x": 1}, "deep", settings]));
    let pushed: Vec<Value> =
        fake.log().iter().filter_map(|v| v.get("didChangeConfiguration").cloned()).collect();
    assert_eq!(pushed, [settings], "settings pushed once after initialized");
    fake.host.shutdown_all().await;
}

#[tokio::test]
async fn changed_files_reach_the_server_through_its_registered_watchers() {
    let fake = Fake::new("watch");
    fake.query(LspOperation::Hover).await.unwrap();
    let change = |rel: &str, kind| FileChange { path: fake.root.join(rel), kind };
    fake.host.files_changed(&[
        change("doc.fk", FileChangeKind::Changed),
        change("sub/new.fk", FileChangeKind::Created),
        change("notes.txt", FileChangeKind::Changed),
        FileChange { path: "/elsewhere/x.fk".into(), kind: FileChangeKind::Deleted },
    ]);
    // Queued before the next request, so the server has it when that request arrives.
    fake.query(LspOperation::Hover).await.unwrap();
    let watched: Vec<Value> = fake.log().iter().filter_map(|v| v.get("watched").cloned()).collect();
    assert_eq!(
        watched,
        [json!([
            {"uri": file_uri(&fake.root.join("doc.fk")), "type": 2},
            {"uri": file_uri(&fake.root.join("sub/new.fk")), "type": 1},
        ])]
    );
    // A server that registered nothing hears nothing.
    let quiet = Fake::new("");
    quiet.query(LspOperation::Hover).await.unwrap();
    quiet.host.files_changed(&[FileChange {
        path: quiet.root.join("doc.fk"),
        kind: FileChangeKind::Changed,
    }]);
    quiet.query(LspOperation::Hover).await.unwrap();
    assert!(!quiet.log().iter().any(|v| v.get("watched").is_some()));
    fake.host.shutdown_all().await;
    quiet.host.shutdown_all().await;
}

#[tokio::test]
async fn shutdown_and_drop_kill_every_process_group() {
    let fake = Fake::new("child");
    fake.query(LspOperation::Hover).await.unwrap();
    let pids = fake.pids();
    assert_eq!(pids.len(), 2, "server and helper");
    let started = Instant::now();
    fake.host.shutdown_all().await;
    assert!(started.elapsed() < Duration::from_millis(1500), "{:?}", started.elapsed());
    assert_no_orphans(&pids).await;
    let err = fake.query(LspOperation::Hover).await.unwrap_err();
    assert_eq!(code(&err), "LSP_DISPOSED");

    let fake = Fake::new("child");
    fake.query(LspOperation::Hover).await.unwrap();
    let pids = fake.pids();
    let Fake { host, log: _, root: _, _dir } = fake;
    drop(host);
    assert_no_orphans(&pids).await;
}

#[tokio::test]
async fn a_missing_program_is_unavailable() {
    let spec = ServerSpec::new("ghost", "toolhost-no-such-server").with_extension(".fk", "fake");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let host = LspHost::new(LspHostConfig {
        servers: vec![spec],
        well_known: false,
        ..LspHostConfig::default()
    });
    let path = root.join("a.fk");
    let request = LspRequest {
        operation: LspOperation::Hover,
        workspace_root: root.clone(),
        uri: file_uri(&path),
        display: "a.fk".into(),
        path,
        position: LspPosition { line: 0, character: 0 },
        text: Arc::from(""),
    };
    let err = host.query(&request, &CancellationToken::new()).await.unwrap_err();
    assert_eq!(code(&err), "LSP_UNAVAILABLE");
    assert!(err.message.contains("toolhost-no-such-server"), "{}", err.message);
    // No server handles `.txt`.
    let other = LspRequest { path: root.join("b.txt"), display: "b.txt".into(), ..request };
    let err = host.query(&other, &CancellationToken::new()).await.unwrap_err();
    assert_eq!(err.message, "no LSP provider handles \"b.txt\"");
    assert_eq!(host.started(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_queries_share_one_start() {
    let fake = Arc::new(Fake::new(""));
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let fake = Arc::clone(&fake);
            tokio::spawn(async move { fake.query(LspOperation::Hover).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(fake.host.started(), 1, "single-flight start per workspace");
    fake.host.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distinct_workspaces_run_in_parallel() {
    let fake = Arc::new(Fake::new(""));
    let other = tempfile::tempdir().unwrap();
    let other_root = other.path().canonicalize().unwrap();
    // Workspace A hangs until cancelled…
    let hanging = fake.request(LspOperation::Hover, "HANG\n", 0, 0);
    let cancel = CancellationToken::new();
    let blocked = {
        let (fake, cancel) = (Arc::clone(&fake), cancel.clone());
        tokio::spawn(async move { fake.host.query(&hanging, &cancel).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // …while workspace B answers at once.
    let path = other_root.join("doc.fk");
    std::fs::write(&path, "ok\n").unwrap();
    let request = LspRequest {
        operation: LspOperation::Hover,
        workspace_root: other_root.clone(),
        uri: file_uri(&path),
        display: "doc.fk".into(),
        path,
        position: LspPosition { line: 0, character: 0 },
        text: Arc::from("ok\n"),
    };
    let started = Instant::now();
    let answer = fake.host.query(&request, &CancellationToken::new()).await.unwrap();
    assert!(matches!(answer, LspAnswer::Hover(Some(_))));
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert!(!blocked.is_finished(), "workspace A should still be waiting");
    assert_eq!(fake.host.started(), 2, "one instance per workspace");
    cancel.cancel();
    let err = blocked.await.unwrap().unwrap_err();
    assert_eq!(code(&err), "ABORTED");
    fake.host.shutdown_all().await;
}
