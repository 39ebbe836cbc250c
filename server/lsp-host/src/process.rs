//! Language-server processes on the one child-process helper (`toolhost-process`): each server
//! leads its own process group (clangd and rust-analyzer start helpers), dies with toolhost, and
//! its group is killed as soon as the leader exits (helpers would otherwise outlive it and keep
//! its pipes open, so nobody would notice the death). [`ProcessGroup::terminate`] sends SIGTERM
//! to the group, waits, sends SIGKILL and waits until every member is reaped.

use std::time::Duration;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio_util::sync::CancellationToken;
use toolhost_process::{ChildGroup, SpawnOptions};

/// A running server's process group.
pub struct ProcessGroup {
    group: ChildGroup,
    exited: CancellationToken,
}

impl std::fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessGroup").field("pid", &self.group.id()).finish()
    }
}

/// The pipes of a freshly spawned server.
pub struct Pipes {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
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
            stdin: group.take_stdin().ok_or_else(missing)?,
            stdout: group.take_stdout().ok_or_else(missing)?,
            stderr: group.take_stderr().ok_or_else(missing)?,
        };
        let exited = CancellationToken::new();
        let fired = exited.clone();
        let handle = group.handle();
        tokio::spawn(async move {
            handle.wait().await;
            fired.cancel();
        });
        Ok((ProcessGroup { group, exited }, pipes))
    }

    /// The leader's pid (also the group id).
    pub fn pid(&self) -> Option<i32> {
        i32::try_from(self.group.id()).ok()
    }

    /// Fired once the leader has exited (its group is then killed and reaped).
    pub fn exited(&self) -> CancellationToken {
        self.exited.clone()
    }

    /// SIGTERM to the group, up to `grace` for the leader to exit, then SIGKILL to the group,
    /// and a bounded wait until every member is reaped.
    pub async fn terminate(&mut self, grace: Duration) {
        self.group.terminate(grace).await;
    }

    /// SIGKILL to the whole group (no waiting; the helper's monitor reaps every member).
    pub fn kill(&mut self) {
        self.group.kill();
    }
}
