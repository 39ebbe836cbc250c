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
use toolhost_contract::{
    ExecutionWorld, ToolContext, ToolError, WorldCommand, WorldProcess, WorldProcessEvent,
};
use toolhost_process::ChildGroup;
use toolhost_workspace::Workspace;

use crate::config::ShellConfig;
use crate::exec::{Ending, RunEnd, Sink, signal_name};

/// A command started here or in the session's execution world, to be run to its end.
pub(crate) enum Started {
    Here(ChildGroup),
    /// In the world `world` names.
    World {
        world: String,
        process: Box<dyn WorldProcess>,
    },
}

impl Started {
    /// Runs the command to its end (see [`crate::exec::run`] and [`drive`]); `Err` names a
    /// connection to the world lost meanwhile.
    pub(crate) async fn run(
        self,
        stdout: &mut impl Sink,
        stderr: &mut impl Sink,
        timeout: Option<Duration>,
        stop: &CancellationToken,
        grace: Duration,
    ) -> Result<RunEnd, String> {
        match self {
            Started::Here(group) => {
                Ok(crate::exec::run(group, stdout, stderr, timeout, stop, grace).await)
            }
            Started::World { world, process } => {
                drive(&world, process, stdout, stderr, timeout, stop, grace).await
            }
        }
    }
}

/// The workspace and the execution world its files and processes live in, when not here.
pub(crate) fn in_world(
    cx: &ToolContext,
) -> Option<(Workspace, std::sync::Arc<dyn ExecutionWorld>)> {
    let workspace = cx.capability::<Workspace>()?;
    let world = workspace.world()?;
    Some((workspace, world))
}

/// Starts `bash -c <command>` in the session's execution world, in the folder whose real path
/// here is `cwd`; `None` when the session has no world (the command runs here).
pub(crate) async fn start_in_world(
    config: &ShellConfig,
    cx: &ToolContext,
    command: &str,
    cwd: &Path,
) -> Result<Option<Started>, ToolError> {
    let Some((workspace, world)) = in_world(cx) else { return Ok(None) };
    let command = world_command(config, command, world_folder(&workspace, cwd));
    let process = world.spawn(&command).await.map_err(|f| {
        ToolError::typed("WorldError", &f.code, format!("cannot start {}: {f}", config.shell))
    })?;
    Ok(Some(Started::World { world: world.describe(), process }))
}

/// The folder a command runs in, as a path beneath the world's root (`cwd` is the workspace's
/// real path of that folder, which resolution mapped onto this machine's root).
pub(crate) fn world_folder(workspace: &Workspace, cwd: &Path) -> String {
    let root = workspace.primary_root().canonical();
    cwd.strip_prefix(root).map(|rel| rel.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The command `bash -c <command>` in `cwd` (beneath the world's root).
pub(crate) fn world_command(config: &ShellConfig, command: &str, cwd: String) -> WorldCommand {
    // Over the world's own environment: nothing of this machine's.
    let env = crate::env::command_env(std::iter::empty(), config)
        .into_iter()
        .map(|(n, v)| (n.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
        .collect();
    WorldCommand {
        argv: vec![config.shell.clone(), "-c".to_owned(), command.to_owned()],
        cwd,
        env,
        kill_group_with_leader: true,
        pty: None,
    }
}

/// Runs a `process` started in a world to its end: until it exits, `timeout` passes or `stop`
/// fires; then the group is stopped. A lost connection ends the run with an error naming it;
/// `world` names the world in it.
async fn drive(
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
