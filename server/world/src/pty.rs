//! A process on a new pseudo-terminal (`process/spawn` with `pty`): the session leader of a
//! session whose controlling terminal it is, as a terminal emulator starts a shell. Its output is
//! the terminal's (one stream), its input is typed into the terminal, and `process/terminal`
//! reads what the foreground program does from the terminal's master side.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use toolhost_jsonrpc::ErrorObject;
use toolhost_process::{ChildGroup, SpawnOptions};
use toolhost_protocol::world::{EnvVar, PtySize};

use crate::handlers::world_error;

/// A started terminal process: its group, the terminal's two directions and its master side.
pub(crate) struct PtyProcess {
    pub group: ChildGroup,
    pub reader: pty_process::OwnedReadPty,
    pub writer: pty_process::OwnedWritePty,
    pub master: OwnedFd,
}

/// Starts `argv` in `cwd` on a new terminal of `size`.
pub(crate) fn start(
    argv: &[String],
    cwd: &Path,
    env: &[EnvVar],
    size: PtySize,
    options: SpawnOptions,
) -> Result<PtyProcess, ErrorObject> {
    let Some((program, args)) = argv.split_first() else {
        return Err(ErrorObject::invalid_params("argv must name a program"));
    };
    let failed = |e: &dyn std::fmt::Display| {
        world_error(
            "PROCESS_SPAWN_FAILED",
            format!("cannot start {program} on a terminal: {e}"),
            None,
        )
    };
    let (pty, pts) = pty_process::open().map_err(|e| failed(&e))?;
    pty.resize(pty_process::Size::new(size.rows.max(1), size.cols.max(1)))
        .map_err(|e| failed(&e))?;
    let master = pty.as_fd().try_clone_to_owned().map_err(|e| failed(&e))?;
    let secondary = pts.as_fd().try_clone_to_owned().map_err(|e| failed(&e))?;
    drop(pts);
    let mut command = tokio::process::Command::new(program);
    command.args(args).current_dir(cwd);
    command.envs(env.iter().map(|var| (&var.name, &var.value)));
    let group =
        toolhost_process::spawn_in_terminal(command, secondary, options).map_err(|e| failed(&e))?;
    let (reader, writer) = pty.into_split();
    Ok(PtyProcess { group, reader, writer, master })
}
