//! Putting this toolhost on an ssh host before the first connection ([`crate::launch::Provision`]):
//! found by its path, or streamed through ssh (`cat >` on the remote: no scp or SFTP subsystem
//! needed) to a temporary name and renamed into place, so a copy cut short is never taken for
//! the binary.

use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;

use crate::error::WorldError;
use crate::launch::{Provision, shell_quoted};

/// How long one step (a check, the copy) may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(300);
/// Bytes of a step's stdout and stderr kept.
const KEPT: u64 = 64 << 10;

/// Runs `argv` with `input` (a file) as stdin; its stdout, or `Unreachable` with what it printed.
async fn step(argv: &[String], input: Option<&std::path::Path>) -> Result<String, WorldError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(WorldError::Unreachable("an empty command".to_owned()));
    };
    let stdin = match input {
        Some(path) => Stdio::from(std::fs::File::open(path).map_err(|e| {
            WorldError::Unreachable(format!("cannot read {}: {e}", path.display()))
        })?),
        None => Stdio::null(),
    };
    let mut command = tokio::process::Command::new(program);
    command.args(args).stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut group = toolhost_process::spawn(command, toolhost_process::SpawnOptions::default())
        .map_err(|e| WorldError::Unreachable(format!("cannot start {program}: {e}")))?;
    let (Some(stdout), Some(stderr)) = (group.take_stdout(), group.take_stderr()) else {
        return Err(WorldError::Unreachable(format!("{program} has no pipes")));
    };
    let finished = async {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let (mut stdout, mut stderr) = (stdout.take(KEPT), stderr.take(KEPT));
        let _ = tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err));
        (group.wait().await, out, err)
    };
    let Ok((status, out, err)) = tokio::time::timeout(STEP_TIMEOUT, finished).await else {
        group.terminate(Duration::from_millis(500)).await;
        return Err(WorldError::Unreachable(format!("{program} took over {STEP_TIMEOUT:?}")));
    };
    if status.is_some_and(|s| s.success()) {
        return Ok(String::from_utf8_lossy(&out).into_owned());
    }
    let why = String::from_utf8_lossy(&err).trim().to_owned();
    Err(WorldError::Unreachable(format!("{} failed: {why}", argv.join(" "))))
}

/// Makes sure the host has the binary; `true` when it had to be copied.
pub(crate) async fn provision(p: &Provision) -> Result<bool, WorldError> {
    let remote = shell_quoted(&p.remote_binary);
    let mut check = p.ssh.clone();
    check.push(format!("test -x {remote} && echo found || echo missing"));
    if step(&check, None).await?.trim() == "found" {
        return Ok(false);
    }
    let partial = format!("{}.partial-{}", p.remote_binary, std::process::id());
    let folder = p.remote_binary.rsplit_once('/').map_or(".", |(dir, _)| dir);
    let mut copy = p.ssh.clone();
    copy.push(format!(
        "mkdir -p {folder} && cat > {partial} && chmod 755 {partial} && mv -f {partial} {remote}",
        folder = shell_quoted(folder),
        partial = shell_quoted(&partial),
    ));
    step(&copy, Some(&p.local_binary)).await?;
    Ok(true)
}
