//! Running one command: `bash -c` as the leader of its own process group (through
//! `toolhost-process`, so it is always reaped), stdin from `/dev/null`, both streams pumped into
//! sinks until the command ends, its time runs out or the caller stops it. Stopping is the
//! group's: SIGTERM to every member, a grace period, SIGKILL, reaped — children the command put
//! in the background included.

use crate::config::ShellConfig;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use toolhost_process::{ChildGroup, SpawnOptions};

/// How long output is still read after the leader exited, for writers that left its group and
/// hold the pipes open (a daemon that called `setsid`): they are not waited for.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// Where one stream's bytes go.
pub trait Sink {
    fn push(&mut self, chunk: &[u8]);
}

impl Sink for crate::capture::Capture {
    fn push(&mut self, chunk: &[u8]) {
        crate::capture::Capture::push(self, chunk);
    }
}

/// Why the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    Exited,
    TimedOut,
    Stopped,
}

/// How a command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunEnd {
    pub ending: Ending,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
}

/// Starts `command` in `cwd` with exactly `env`; with `confine`, through the sandbox launcher,
/// writable only beneath those folders.
pub fn spawn(
    config: &ShellConfig,
    command: &str,
    cwd: &Path,
    env: Vec<(OsString, OsString)>,
    confine: Option<(&Path, &[std::path::PathBuf])>,
) -> std::io::Result<ChildGroup> {
    let mut cmd = match confine {
        Some((launcher, writable)) => {
            let mut cmd = tokio::process::Command::new(launcher);
            cmd.arg("sandbox-exec");
            for dir in writable {
                cmd.arg("--write").arg(dir);
            }
            cmd.arg("--").arg(&config.shell);
            cmd
        }
        None => tokio::process::Command::new(&config.shell),
    };
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The group dies with its leader: a command's leftovers (`sleep 1000 &`) do not outlive it
    // and cannot hold its pipes open. Long-lived processes belong in a background job.
    toolhost_process::spawn(cmd, SpawnOptions { kill_group_with_leader: true })
}

/// The pipe capacity asked for: a command that writes fast wakes this reader a sixteenth as often
/// as with the default 64 KiB (the kernel may grant less; then the default stays).
const PIPE_CAPACITY: usize = 1024 * 1024;

async fn pump<R: AsyncRead + Unpin + std::os::fd::AsFd>(reader: Option<R>, sink: &mut impl Sink) {
    let Some(mut reader) = reader else { return };
    let _ = rustix::pipe::fcntl_setpipe_size(reader.as_fd(), PIPE_CAPACITY);
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => sink.push(&buf[..n]),
        }
    }
}

/// Runs a spawned group to its end: until it exits, `timeout` passes, or `stop` fires. Then the
/// group is terminated (TERM, `grace`, KILL) and reaped.
pub async fn run(
    mut group: ChildGroup,
    stdout: &mut impl Sink,
    stderr: &mut impl Sink,
    timeout: Option<Duration>,
    stop: &CancellationToken,
    grace: Duration,
) -> RunEnd {
    let out = group.take_stdout();
    let err = group.take_stderr();
    let pumps = async { tokio::join!(pump(out, stdout), pump(err, stderr)) };
    tokio::pin!(pumps);
    let far = Instant::now() + Duration::from_secs(86_400 * 365);
    let deadline = timeout.map_or(far, |t| Instant::now() + t);
    let mut drain_until = far;
    let (mut streams_done, mut leader_done) = (false, false);
    let ending = loop {
        if streams_done && leader_done {
            break Ending::Exited;
        }
        tokio::select! {
            _ = &mut pumps, if !streams_done => streams_done = true,
            _ = group.wait(), if !leader_done => {
                leader_done = true;
                drain_until = Instant::now() + DRAIN_AFTER_EXIT;
            }
            () = tokio::time::sleep_until(drain_until), if leader_done && !streams_done => {
                break Ending::Exited;
            }
            () = tokio::time::sleep_until(deadline) => break Ending::TimedOut,
            () = stop.cancelled() => break Ending::Stopped,
        }
    };
    if ending != Ending::Exited {
        group.terminate(grace).await;
    }
    // After a normal exit the monitor has killed what the command left in its group and reaps
    // it; nobody waits for that here.
    if !streams_done {
        // What the members wrote before they died is still in the pipes.
        let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, &mut pumps).await;
    }
    let status = group.wait().await;
    let (exit_code, signal) = describe(status);
    RunEnd { ending, exit_code, signal }
}

/// The exit code, or the name of the signal that ended the leader.
pub(crate) fn describe(status: Option<ExitStatus>) -> (Option<i32>, Option<String>) {
    match status {
        Some(status) => match (status.code(), status.signal()) {
            (Some(code), _) => (Some(code), None),
            (None, Some(signal)) => (None, Some(signal_name(signal))),
            (None, None) => (None, None),
        },
        None => (None, None),
    }
}

/// `SIGTERM` for 15, …; unknown numbers as `SIG<n>`.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        17 => "SIGCHLD",
        18 => "SIGCONT",
        19 => "SIGSTOP",
        20 => "SIGTSTP",
        21 => "SIGTTIN",
        22 => "SIGTTOU",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        26 => "SIGVTALRM",
        27 => "SIGPROF",
        31 => "SIGSYS",
        other => return format!("SIG{other}"),
    };
    name.to_owned()
}
