//! Running one command in the session's execution world instead of on this machine: the same
//! `bash -c` in the world's folder, its output streamed into the same sinks, stopped the same way
//! (TERM to the group, the grace period, KILL) when its time runs out or the caller stops it.
//!
//! The command gets the world's own environment; only the shell's fixed variables (pagers off,
//! `TERM=dumb`, …) and `[shell] env` are set over it — nothing of this machine's environment
//! (its credentials included) crosses.

use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use toolhost_contract::{ExecutionWorld, WorldCommand, WorldProcess, WorldProcessEvent};
use toolhost_workspace::Workspace;

use crate::config::ShellConfig;
use crate::exec::{Ending, RunEnd, Sink, signal_name};

/// The folder a command runs in, as a path beneath the world's root (`cwd` is the workspace's
/// real path of that folder, which resolution mapped onto this machine's root).
pub(crate) fn world_folder(workspace: &Workspace, cwd: &Path) -> String {
    let root = workspace.primary_root().canonical();
    cwd.strip_prefix(root).map(|rel| rel.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The command `bash -c <command>` in `cwd` (beneath the world's root).
pub(crate) fn world_command(config: &ShellConfig, command: &str, cwd: String) -> WorldCommand {
    let mut env: Vec<(String, String)> = config.env.clone();
    for (name, value) in crate::env::FIXED {
        env.retain(|(n, _)| n != name);
        env.push((name.to_owned(), value.to_owned()));
    }
    WorldCommand {
        argv: vec![config.shell.clone(), "-c".to_owned(), command.to_owned()],
        cwd,
        env,
        kill_group_with_leader: true,
        pty: None,
    }
}

/// Runs `command` in `world` to its end: until it exits, `timeout` passes or `stop` fires; then
/// the group is stopped. A lost connection ends the run with an error naming it.
pub(crate) async fn run(
    world: &dyn ExecutionWorld,
    command: &WorldCommand,
    stdout: &mut impl Sink,
    stderr: &mut impl Sink,
    timeout: Option<Duration>,
    stop: &CancellationToken,
    grace: Duration,
) -> Result<RunEnd, String> {
    let process = world.spawn(command).await.map_err(|f| f.to_string())?;
    drive(&world.describe(), process, stdout, stderr, timeout, stop, grace).await
}

/// Runs a started `process` to its end, as [`run`] does; `world` names it in messages.
pub(crate) async fn drive(
    world: &str,
    mut process: Box<dyn WorldProcess>,
    stdout: &mut impl Sink,
    stderr: &mut impl Sink,
    timeout: Option<Duration>,
    stop: &CancellationToken,
    grace: Duration,
) -> Result<RunEnd, String> {
    let far = Instant::now() + Duration::from_secs(86_400 * 365);
    let deadline = timeout.map_or(far, |t| Instant::now() + t);
    let ending = loop {
        tokio::select! {
            event = process.next_event() => match event {
                Some(WorldProcessEvent::Stdout(bytes)) => stdout.push(&bytes),
                Some(WorldProcessEvent::Stderr(bytes)) => stderr.push(&bytes),
                Some(WorldProcessEvent::Exited { exit_code, signal }) => {
                    return Ok(RunEnd {
                        ending: Ending::Exited,
                        exit_code,
                        signal: signal.map(signal_name),
                    });
                }
                None => return Err(lost(world)),
            },
            () = tokio::time::sleep_until(deadline) => break Ending::TimedOut,
            () = stop.cancelled() => break Ending::Stopped,
        }
    };
    let (exit_code, signal) = terminate(process.as_mut(), stdout, stderr, grace).await;
    Ok(RunEnd { ending, exit_code, signal: signal.map(signal_name) })
}

fn lost(world: &str) -> String {
    format!("the connection to the execution world ({world}) was lost while the command ran")
}

/// TERM to the group, `grace`, then KILL; what it still wrote is kept. Returns how it ended
/// (nothing when the connection went away meanwhile).
async fn terminate(
    process: &mut dyn WorldProcess,
    stdout: &mut impl Sink,
    stderr: &mut impl Sink,
    grace: Duration,
) -> (Option<i32>, Option<i32>) {
    let _ = process.signal("TERM").await;
    let mut killed = false;
    let mut until = Instant::now() + grace;
    loop {
        tokio::select! {
            event = process.next_event() => match event {
                Some(WorldProcessEvent::Stdout(bytes)) => stdout.push(&bytes),
                Some(WorldProcessEvent::Stderr(bytes)) => stderr.push(&bytes),
                Some(WorldProcessEvent::Exited { exit_code, signal }) => return (exit_code, signal),
                None => return (None, None),
            },
            () = tokio::time::sleep_until(until) => {
                if killed {
                    return (None, None);
                }
                let _ = process.signal("KILL").await;
                killed = true;
                until = Instant::now() + grace;
            }
        }
    }
}
