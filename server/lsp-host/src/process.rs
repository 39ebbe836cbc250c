//! Language-server processes, on this machine or in an execution world.
//!
//! Here they run on the one child-process helper (`toolhost-process`): each server leads its own
//! process group (clangd and rust-analyzer start helpers), dies with toolhost, and its group is
//! killed as soon as the leader exits (helpers would otherwise outlive it and keep its pipes
//! open, so nobody would notice the death). In a world the server is a process group there
//! (`process/spawn`, the group dying with its leader too), its stdio carried by the world's
//! connection: [`ProcessGroup::spawn_in_world`] turns its events into the same pipes.
//! [`ProcessGroup::terminate`] sends SIGTERM to the group, waits, then SIGKILL.

use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;
use toolhost_contract::{
    ExecutionWorld, WorldCommand, WorldFailure, WorldProcessControl, WorldProcessEvent,
};
use toolhost_process::{ChildGroup, SpawnOptions};

use crate::connection::{ServerInput, ServerOutput};

/// Bytes of a world server's output queued before its reader waits for this side.
const WORLD_PIPE_BYTES: usize = 1 << 20;

/// A running server's process group.
pub struct ProcessGroup {
    leader: Leader,
    exited: CancellationToken,
}

enum Leader {
    Here(ChildGroup),
    World(Arc<dyn WorldProcessControl>),
}

impl std::fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessGroup").field("pid", &self.pid()).finish()
    }
}

/// The pipes of a freshly spawned server.
pub struct Pipes {
    pub stdin: ServerInput,
    pub stdout: ServerOutput,
    pub stderr: ServerOutput,
}

impl ProcessGroup {
    /// Spawns `command` as the leader of a new process group with piped stdio.
    pub fn spawn(mut command: Command) -> std::io::Result<(ProcessGroup, Pipes)> {
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut group =
            toolhost_process::spawn(command, SpawnOptions { kill_group_with_leader: true })?;
        let missing = || std::io::Error::other("child pipes missing");
        let pipes = Pipes {
            stdin: Box::new(group.take_stdin().ok_or_else(missing)?),
            stdout: Box::new(group.take_stdout().ok_or_else(missing)?),
            stderr: Box::new(group.take_stderr().ok_or_else(missing)?),
        };
        let exited = CancellationToken::new();
        let fired = exited.clone();
        let handle = group.handle();
        tokio::spawn(async move {
            handle.wait().await;
            fired.cancel();
        });
        Ok((ProcessGroup { leader: Leader::Here(group), exited }, pipes))
    }

    /// Starts `command` in `world`; its output and exit arrive over the world's connection.
    pub async fn spawn_in_world(
        world: &dyn ExecutionWorld,
        command: &WorldCommand,
    ) -> Result<(ProcessGroup, Pipes), WorldFailure> {
        let mut process = world.spawn(command).await?;
        let control = process.control();
        let (mut stdout_in, stdout) = tokio::io::duplex(WORLD_PIPE_BYTES);
        let (mut stderr_in, stderr) = tokio::io::duplex(WORLD_PIPE_BYTES);
        let (stdin, mut stdin_out) = tokio::io::duplex(WORLD_PIPE_BYTES);
        let exited = CancellationToken::new();
        let fired = exited.clone();
        // Output: the events, in order, into the pipes the connection reads; the end (or a
        // lost connection) closes them and is the leader's exit.
        tokio::spawn(async move {
            while let Some(event) = process.next_event().await {
                let written = match event {
                    WorldProcessEvent::Stdout(bytes) => stdout_in.write_all(&bytes).await,
                    WorldProcessEvent::Stderr(bytes) => stderr_in.write_all(&bytes).await,
                    WorldProcessEvent::Exited { .. } => break,
                };
                if written.is_err() {
                    break;
                }
            }
            fired.cancel();
        });
        // Input: what the connection writes, sent on as it comes.
        let writer = Arc::clone(&control);
        tokio::spawn(async move {
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                match stdin_out.read(&mut chunk).await {
                    Ok(0) | Err(_) => {
                        let _ = writer.write(&[], true).await;
                        return;
                    }
                    Ok(n) => {
                        if writer.write(&chunk[..n], false).await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let pipes =
            Pipes { stdin: Box::new(stdin), stdout: Box::new(stdout), stderr: Box::new(stderr) };
        Ok((ProcessGroup { leader: Leader::World(control), exited }, pipes))
    }

    /// The leader's pid (also the group id); `None` in a world (its pids are the world's).
    pub fn pid(&self) -> Option<i32> {
        match &self.leader {
            Leader::Here(group) => i32::try_from(group.id()).ok(),
            Leader::World(_) => None,
        }
    }

    /// Fired once the leader has exited (its group is then killed and reaped).
    pub fn exited(&self) -> CancellationToken {
        self.exited.clone()
    }

    /// SIGTERM to the group, up to `grace` for the leader to exit, then SIGKILL to the group,
    /// and a bounded wait until every member is reaped.
    pub async fn terminate(&mut self, grace: Duration) {
        match &self.leader {
            Leader::Here(group) => group.terminate(grace).await,
            Leader::World(control) => {
                let _ = control.signal("TERM").await;
                if tokio::time::timeout(grace, self.exited.cancelled()).await.is_err() {
                    let _ = control.signal("KILL").await;
                }
            }
        }
    }

    /// SIGKILL to the whole group (no waiting; the helper's monitor reaps every member).
    pub fn kill(&mut self) {
        match &self.leader {
            Leader::Here(group) => group.kill(),
            Leader::World(control) => toolhost_contract::world::kill_detached(control),
        }
    }
}
