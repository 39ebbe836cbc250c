//! `process/run`: one process group on the world's side, run to its end. The environment is the
//! server's own — nothing of the client's environment crosses, so its secrets stay where they
//! are — and the output kept is bounded; a timeout or a cancelled request ends the whole group.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStderr, ChildStdout};
use tokio_util::sync::CancellationToken;
use toolhost_jsonrpc::ErrorObject;
use toolhost_process::ChildGroup;
use toolhost_protocol::world::{RunParams, RunResult};

use crate::handlers::world_error;

/// Bytes of stdout, and of stderr, kept per run.
pub const MAX_OUTPUT_BYTES: usize = 1 << 20;
/// How long a run may take when the client names no timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a group has between TERM and KILL.
const GRACE: Duration = Duration::from_millis(500);

/// Reads `pipe` to its end, keeping the first [`MAX_OUTPUT_BYTES`] (the rest is drained so the
/// writer never blocks on a full pipe).
async fn bounded(mut pipe: impl AsyncRead + Unpin) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let mut truncated = false;
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return (kept, truncated),
            Ok(n) => {
                let room = MAX_OUTPUT_BYTES - kept.len();
                kept.extend_from_slice(&chunk[..n.min(room)]);
                truncated |= n > room;
            }
        }
    }
}

/// Starts `argv` as a process group in `cwd` (already confined by the caller) with `stdin`, its
/// stdout and stderr piped: what `process/run` and `process/spawn` both start. A group whose
/// pipes cannot be had is dropped, which kills it.
pub(crate) fn start(
    argv: &[String],
    cwd: &Path,
    stdin: Stdio,
    env: &[toolhost_protocol::world::EnvVar],
    options: toolhost_process::SpawnOptions,
) -> Result<(ChildGroup, ChildStdout, ChildStderr), ErrorObject> {
    let Some((program, args)) = argv.split_first() else {
        return Err(ErrorObject::invalid_params("argv must name a program"));
    };
    let mut command = tokio::process::Command::new(program);
    command.args(args).current_dir(cwd).stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
    command.envs(env.iter().map(|var| (&var.name, &var.value)));
    let mut group = toolhost_process::spawn(command, options).map_err(|e| {
        world_error("PROCESS_SPAWN_FAILED", format!("cannot start {program}: {e}"), None)
    })?;
    let (Some(stdout), Some(stderr)) = (group.take_stdout(), group.take_stderr()) else {
        return Err(ErrorObject::internal("the process has no output pipes"));
    };
    Ok((group, stdout, stderr))
}

/// Runs `params.argv` in `cwd` (already confined by the caller).
pub(crate) async fn run(
    params: RunParams,
    cwd: &Path,
    cancel: &CancellationToken,
) -> Result<RunResult, ErrorObject> {
    let stdin = params
        .stdin
        .as_deref()
        .map(|d| BASE64.decode(d))
        .transpose()
        .map_err(|e| ErrorObject::invalid_params(format!("stdin is not base64: {e}")))?;
    let piped = if stdin.is_some() { Stdio::piped() } else { Stdio::null() };
    let (mut group, stdout, stderr) = start(&params.argv, cwd, piped, &[], Default::default())?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, group.take_stdin()) {
        tokio::spawn(async move {
            let _ = pipe.write_all(&bytes).await;
        });
    }
    let timeout = params.timeout_ms.map_or(DEFAULT_TIMEOUT, Duration::from_millis);
    let finished = async {
        let ((out, out_cut), (err, err_cut)) = tokio::join!(bounded(stdout), bounded(stderr));
        (group.wait().await, out, err, out_cut || err_cut)
    };
    let ended = tokio::select! {
        ended = tokio::time::timeout(timeout, finished) => ended,
        () = cancel.cancelled() => {
            group.terminate(GRACE).await;
            return Err(ErrorObject::cancelled());
        }
    };
    let Ok((status, stdout, stderr, truncated)) = ended else {
        group.terminate(GRACE).await;
        return Ok(RunResult {
            exit_code: None,
            signal: None,
            stdout: String::new(),
            stderr: String::new(),
            truncated: false,
            timed_out: true,
        });
    };
    // The leader is done; helpers it left in its group go with it.
    group.terminate(GRACE).await;
    Ok(RunResult {
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        stdout: BASE64.encode(stdout),
        stderr: BASE64.encode(stderr),
        truncated,
        timed_out: false,
    })
}
