//! Running `git` for worktree sessions: a child of its own process group (through
//! `toolhost-process`), its output bounded, its error text kept for the message, and a time limit
//! after which the whole group is stopped.

use super::WorktreeError;
use std::path::Path;
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// The most bytes of one git answer kept (a blob of a file being merged, a tree listing).
const MAX_OUTPUT: u64 = 64 << 20;
/// How long one git command may take (`git add -A` of a large tree hashes every file).
const TIMEOUT: Duration = Duration::from_secs(300);

/// `git -C <dir> <args>` with `env`; its standard output when it succeeded.
pub(crate) async fn git(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
) -> Result<Vec<u8>, WorktreeError> {
    let shown = format!("git {}", args.join(" "));
    let mut command = tokio::process::Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let failed = |why: String| WorktreeError::Git { command: shown.clone(), why };
    let mut group = toolhost_process::spawn(command, toolhost_process::SpawnOptions::default())
        .map_err(|e| failed(format!("cannot start git: {e}")))?;
    let (Some(stdout), Some(stderr)) = (group.take_stdout(), group.take_stderr()) else {
        group.terminate(Duration::from_millis(200)).await;
        return Err(failed("no pipes to git".to_owned()));
    };
    let run = async {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut limited = stdout.take(MAX_OUTPUT + 1);
        let mut err_limited = stderr.take(64 << 10);
        let (read, _) =
            tokio::join!(limited.read_to_end(&mut out), err_limited.read_to_end(&mut err));
        read.map_err(|e| failed(e.to_string()))?;
        if out.len() as u64 > MAX_OUTPUT {
            return Err(failed(format!("its answer is over {} MiB", MAX_OUTPUT >> 20)));
        }
        let status = group.wait().await.ok_or_else(|| failed("it was lost".to_owned()))?;
        if !status.success() {
            let text = String::from_utf8_lossy(&err).trim().to_owned();
            return Err(failed(if text.is_empty() { status.to_string() } else { text }));
        }
        Ok(out)
    };
    let answer = tokio::time::timeout(TIMEOUT, run).await;
    if !matches!(answer, Ok(Ok(_))) {
        // Failed, too long or too slow: nothing of it lingers.
        group.terminate(Duration::from_millis(200)).await;
    }
    answer.unwrap_or_else(|_| Err(failed(format!("it took longer than {} s", TIMEOUT.as_secs()))))
}

/// The first line of git's answer, as text.
pub(crate) fn line(out: &[u8]) -> String {
    String::from_utf8_lossy(out).lines().next().unwrap_or_default().trim().to_owned()
}
