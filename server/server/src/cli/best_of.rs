//! `toolhost agent --best-of N "<task>" [--check "<command>"]`: the same task run by N own-agent
//! sessions at once, each in a worktree session of its own; then each worktree's check command,
//! and a table of what each run changed and whether its check passed, so the person applies one
//! (`toolhost session apply <name>`; at a terminal, asked right away) and discards the rest.
//!
//! Each run is a `toolhost agent --session <id> --json` child of this process (its own host,
//! log and model conversation); the check runs as `sh -c <command>` in the worktree.

use super::session_actions::confirm;
use super::{Common, Failure, load_config, sessions_dir};
use serde::Serialize;
use serde_json::Value;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use toolhost_host::worktree::{self, WorktreeSession};

/// The most runs at once.
pub const MAX_RUNS: u32 = 8;
/// The most bytes of a check's output kept (its last line is shown).
const MAX_CHECK_OUTPUT: u64 = 1 << 20;

/// What one run did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RunRow {
    index: u32,
    name: String,
    session_id: String,
    root: PathBuf,
    /// The agent's exit code (0: it answered).
    exit_code: i32,
    /// The first line of its answer.
    answer: String,
    changed_files: usize,
    added: usize,
    removed: usize,
    /// The check's exit code, when a check was given (`None`: it could not run).
    check_exit: Option<i32>,
    /// The last line of the check's output.
    check_tail: String,
}

/// The flags of this invocation to hand to each run: everything but the best-of, the check and
/// the session, which each run gets its own of.
fn run_flags() -> Vec<String> {
    let mut out = Vec::new();
    // After the program's name comes the subcommand (`agent`: no flag goes before it).
    let mut args = std::env::args().skip(2);
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, _)) if n.starts_with("--") => (n.to_owned(), true),
            _ => (arg.clone(), false),
        };
        if matches!(name.as_str(), "--best-of" | "--check" | "--session" | "--json") {
            if !inline && name != "--json" {
                args.next();
            }
            continue;
        }
        out.push(arg);
    }
    out
}

/// Runs `command` to its end, its stdout (bounded) and exit code.
async fn run_child(mut command: tokio::process::Command) -> (Option<i32>, Vec<u8>) {
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let Ok(mut group) = toolhost_process::spawn(command, toolhost_process::SpawnOptions::default())
    else {
        return (None, Vec::new());
    };
    let mut out = Vec::new();
    if let Some(stdout) = group.take_stdout() {
        let _ = stdout.take(MAX_CHECK_OUTPUT.max(16 << 20)).read_to_end(&mut out).await;
    }
    let status = group.wait().await;
    group.terminate(Duration::from_millis(200)).await;
    (status.and_then(|s| s.code()), out)
}

/// One run: `flags` hold the task (positional) where the person wrote it, and `cwd` is where
/// they ran toolhost, so a relative `--workspace` means the same.
async fn one_run(
    index: u32,
    session: WorktreeSession,
    cwd: PathBuf,
    flags: Vec<String>,
    check: Option<String>,
) -> RunRow {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("toolhost"));
    let mut command = tokio::process::Command::new(exe);
    command
        .arg("agent")
        .args(&flags)
        .args(["--json", "--session", &session.session_id])
        .current_dir(&cwd);
    let (code, out) = run_child(command).await;
    let end: Option<Value> = String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .rfind(|l| l["type"] == "end");
    let answer = end
        .as_ref()
        .and_then(|e| e["answer"].as_str().or_else(|| e["text"].as_str()))
        .unwrap_or_default()
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    let files = worktree::changes(&session).await.unwrap_or_default();
    let (added, removed) = worktree::line_counts(&files);
    let (check_exit, check_tail) = match &check {
        Some(check) => {
            let mut command = tokio::process::Command::new("sh");
            command.arg("-c").arg(check).current_dir(&session.root);
            let (code, out) = run_child(command).await;
            let text = String::from_utf8_lossy(&out);
            (code, text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").to_owned())
        }
        None => (None, String::new()),
    };
    RunRow {
        index,
        name: session.name,
        session_id: session.session_id,
        root: session.root,
        exit_code: code.unwrap_or(-1),
        answer,
        changed_files: files.len(),
        added,
        removed,
        check_exit,
        check_tail,
    }
}

fn table(rows: &[RunRow], checked: bool) -> String {
    let mut text = String::from("| # | worktree session | answered | files | lines | check |\n");
    text.push_str("|---|---|---|---|---|---|\n");
    for row in rows {
        let check = match (checked, row.check_exit) {
            (false, _) => "—".to_owned(),
            (true, Some(0)) => "passed".to_owned(),
            (true, Some(code)) => format!("failed (exit {code}): {}", row.check_tail),
            (true, None) => "could not run".to_owned(),
        };
        text.push_str(&format!(
            "| {} | {} | {} | {} | +{} -{} | {} |\n",
            row.index,
            row.name,
            if row.exit_code == 0 { "yes" } else { "no" },
            row.changed_files,
            row.added,
            row.removed,
            check
        ));
    }
    text
}

/// `--best-of n`.
pub async fn run(
    common: &Common,
    task: &str,
    n: u32,
    check: Option<String>,
    json: bool,
) -> Result<u8, Failure> {
    if !(2..=MAX_RUNS).contains(&n) {
        return Err(Failure::usage(format!("--best-of {n}: expected 2 to {MAX_RUNS} runs")));
    }
    let cwd = std::env::current_dir().map_err(|e| Failure::env(e.to_string()))?;
    let root = common.workspace.as_ref().map_or(cwd.clone(), |dir| cwd.join(dir));
    let config = load_config(&root)?;
    let sessions = sessions_dir(&config, common)?;
    let stamp = format!("{:04x}", rand::random::<u16>());
    let mut made = Vec::new();
    for k in 1..=n {
        let name = format!("best-{stamp}-{k}");
        match worktree::create(&sessions, &root, Some(&name)).await {
            Ok(session) => made.push(session),
            Err(err) => {
                for session in &made {
                    let _ = worktree::discard(&sessions, session).await;
                }
                return Err(Failure::env(err.to_string()));
            }
        }
    }
    if !json {
        eprintln!("toolhost: {n} runs of the task, each in its own worktree session");
    }
    let flags = run_flags();
    let runs = made.into_iter().zip(1..).map(|(session, index)| {
        tokio::spawn(one_run(index, session, cwd.clone(), flags.clone(), check.clone()))
    });
    let mut rows = Vec::new();
    for run in runs.collect::<Vec<_>>() {
        if let Ok(row) = run.await {
            rows.push(row);
        }
    }
    if json {
        let value = serde_json::json!({ "type": "best-of", "task": task, "runs": rows });
        println!("{value}");
    } else {
        print!("{}", table(&rows, check.is_some()));
        println!(
            "apply one: toolhost session apply <worktree session> [--all]; remove the others: toolhost session discard <worktree session> --yes"
        );
    }
    let answered = rows.iter().any(|r| r.exit_code == 0);
    if !json && std::io::stdin().is_terminal() {
        pick_and_apply(common, &root, &sessions, &rows).await?;
    }
    Ok(if answered { 0 } else { 1 })
}

/// At a terminal: which run to apply (hunk by hunk), then whether to discard the others.
async fn pick_and_apply(
    common: &Common,
    root: &Path,
    sessions: &Path,
    rows: &[RunRow],
) -> Result<(), Failure> {
    let mut stderr = std::io::stderr();
    let _ = write!(stderr, "apply which run [1-{}, Enter: none]? ", rows.len());
    let _ = stderr.flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    let Some(chosen) =
        line.trim().parse::<u32>().ok().and_then(|i| rows.iter().find(|r| r.index == i))
    else {
        return Ok(());
    };
    let apply = tokio::process::Command::new(
        std::env::current_exe().unwrap_or_else(|_| PathBuf::from("toolhost")),
    )
    .args(["session", "apply", &chosen.name])
    .current_dir(root)
    .args(
        common
            .session_dir
            .iter()
            .flat_map(|d| [std::ffi::OsStr::new("--session-dir"), d.as_os_str()]),
    )
    .status()
    .await;
    if !apply.is_ok_and(|s| s.success()) {
        return Ok(());
    }
    if confirm("discard the other runs' worktree sessions?") {
        for row in rows.iter().filter(|r| r.index != chosen.index) {
            if let Some(session) = worktree::find(sessions, root, &row.name) {
                let _ = worktree::discard(sessions, &session).await;
            }
        }
    }
    Ok(())
}
