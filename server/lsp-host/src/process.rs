//! Server processes: each starts in its own process group (`process_group(0)`), so stopping it
//! reaches every helper it spawned (clangd and rust-analyzer start children). A monitor task
//! waits for the leader: when it exits, the rest of its group is killed (helpers would otherwise
//! outlive it, and keep its pipes open so nobody notices the death). Dropping the guard SIGKILLs
//! the whole group; [`ProcessGroup::terminate`] sends SIGTERM first and waits.

use std::time::Duration;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio_util::sync::CancellationToken;

/// A running server's process group.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Option<rustix::process::Pid>,
    exited: CancellationToken,
}

/// The pipes of a freshly spawned server.
pub struct Pipes {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

fn kill_group(pgid: Option<rustix::process::Pid>, signal: rustix::process::Signal) {
    if let Some(pgid) = pgid {
        // ESRCH (already gone) is fine.
        let _ = rustix::process::kill_process_group(pgid, signal);
    }
}

impl ProcessGroup {
    /// Spawns `command` as the leader of a new process group with piped stdio.
    pub fn spawn(mut command: Command) -> std::io::Result<(ProcessGroup, Pipes)> {
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw);
        let missing = || std::io::Error::other("child pipes missing");
        let pipes = Pipes {
            stdin: child.stdin.take().ok_or_else(missing)?,
            stdout: child.stdout.take().ok_or_else(missing)?,
            stderr: child.stderr.take().ok_or_else(missing)?,
        };
        let exited = CancellationToken::new();
        let fired = exited.clone();
        tokio::spawn(async move {
            let _ = child.wait().await;
            kill_group(pgid, rustix::process::Signal::KILL);
            fired.cancel();
        });
        Ok((ProcessGroup { pgid, exited }, pipes))
    }

    /// The leader's pid (also the group id).
    pub fn pid(&self) -> Option<i32> {
        self.pgid.map(|p| p.as_raw_nonzero().get())
    }

    /// Fired once the leader has exited (and its group was killed).
    pub fn exited(&self) -> CancellationToken {
        self.exited.clone()
    }

    /// SIGTERM to the group, up to `grace` for the leader to exit, then SIGKILL to the group.
    pub async fn terminate(&mut self, grace: Duration) {
        kill_group(self.pgid, rustix::process::Signal::TERM);
        let _ = tokio::time::timeout(grace, self.exited.cancelled()).await;
        self.kill();
        let _ = tokio::time::timeout(Duration::from_millis(500), self.exited.cancelled()).await;
        self.pgid = None;
    }

    /// SIGKILL to the whole group (no waiting; the monitor reaps the leader).
    pub fn kill(&mut self) {
        if !self.exited.is_cancelled() {
            kill_group(self.pgid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
