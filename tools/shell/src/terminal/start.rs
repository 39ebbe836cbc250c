//! Starting a terminal's shell: the program and environment a terminal type runs, and the two
//! places it can run — on a new pseudo-terminal of this machine, or on one in the session's
//! execution world (`process/spawn` with a `pty`) — each with the task that feeds the screen from
//! its output and marks the session ended when its shell is.

use super::*;
use toolhost_process::SpawnOptions;

/// The program a terminal of `kind` runs, and its environment over `env`.
pub(super) fn terminal_command(
    kind: &str,
    id: &str,
    mut env: Vec<(OsString, OsString)>,
) -> (Vec<String>, Vec<(OsString, OsString)>) {
    if kind == "shell" {
        // Plain and predictable: no rc file may change the prompt or print a banner; the
        // command environment's `TERM=dumb` and pagers stay.
        for (name, value) in [
            ("PS1", SHELL_PS1),
            ("PROMPT_COMMAND", SHELL_PROMPT_COMMAND),
            ("DSH_PTY_SESSION_ID", id),
        ] {
            env.retain(|(n, _)| n != name);
            env.push((name.into(), value.into()));
        }
        let argv = ["/bin/bash", "--noprofile", "--norc", "-i"].map(str::to_owned).to_vec();
        return (argv, env);
    }
    // A real terminal: programs may draw (the screen is emulated), and a pager is readable in
    // the viewport.
    for (name, value) in [("TERM", "xterm-256color"), ("PAGER", "less"), ("GIT_PAGER", "less")] {
        env.retain(|(n, _)| n != name);
        env.push((name.into(), value.into()));
    }
    env.retain(|(n, _)| n != "NO_COLOR");
    (vec![kind.to_owned()], env)
}

/// A fresh screen for a terminal of the standard size.
fn new_screen() -> Screen {
    let rows = std::num::NonZeroU16::new(ROWS).unwrap_or(std::num::NonZeroU16::MIN);
    let cols = std::num::NonZeroU16::new(COLS).unwrap_or(std::num::NonZeroU16::MIN);
    Screen {
        parser: vt100::Parser::new(rows, cols, 1000),
        transcript: Transcript::default(),
        last_output: Instant::now(),
        output_seq: 0,
        sanitizer: Sanitizer::default(),
        stream: String::new(),
        stream_total: 0,
    }
}

impl Term {
    /// A terminal whose shell (`pid`) just started, running, with an empty screen.
    fn started(
        id: String,
        name: Option<String>,
        kind: &str,
        owner: String,
        pid: u32,
        io: Io,
    ) -> Arc<Term> {
        let (status, _) = watch::channel(SessionStatus::Running);
        Arc::new(Term {
            id,
            name,
            kind: kind.to_owned(),
            owner,
            pid,
            io,
            screen: Mutex::new(new_screen()),
            status,
            closing: AtomicBool::new(false),
            sending: AtomicBool::new(false),
            output: tokio::sync::Notify::new(),
        })
    }

    /// Takes output the terminal printed.
    fn take_output(&self, bytes: &[u8]) {
        let mut screen = lock(&self.screen);
        screen.parser.process(bytes);
        screen.transcript.push(bytes);
        if self.is_plain() {
            screen.push_plain(bytes);
        }
        screen.last_output = Instant::now();
        screen.output_seq += 1;
        drop(screen);
        self.output.notify_waiters();
    }
}

impl TerminalRegistry {
    /// Starts `argv` on a new terminal of this machine.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn open_here(
        &self,
        kind: &str,
        name: Option<String>,
        owner: String,
        id: String,
        argv: &[String],
        env: Vec<(OsString, OsString)>,
        cwd: &std::path::Path,
    ) -> Result<Arc<Term>, TerminalError> {
        let (pty, pts) = pty_process::open().map_err(|e| TerminalError::Open(e.to_string()))?;
        pty.resize(pty_process::Size::new(ROWS, COLS))
            .map_err(|e| TerminalError::Open(e.to_string()))?;
        let master =
            pty.as_fd().try_clone_to_owned().map_err(|e| TerminalError::Open(e.to_string()))?;
        let secondary =
            pts.as_fd().try_clone_to_owned().map_err(|e| TerminalError::Open(e.to_string()))?;
        drop(pts);
        let Some((program, args)) = argv.split_first() else {
            return Err(TerminalError::Open("no program".to_owned()));
        };
        let mut command = tokio::process::Command::new(program);
        command.args(args).current_dir(cwd).env_clear().envs(env);
        let group = toolhost_process::spawn_in_terminal(
            command,
            secondary,
            SpawnOptions { kill_group_with_leader: true },
        )
        .map_err(|e| TerminalError::Open(format!("{kind}: {e}")))?;
        let (reader, writer) = pty.into_split();
        let io =
            Io::Here { master, writer: tokio::sync::Mutex::new(writer), group: group.handle() };
        let term = Term::started(id, name, kind, owner, group.id(), io);
        let reading = Arc::clone(&term);
        tokio::spawn(async move {
            let mut reader = reader;
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                // EIO once the last process on the terminal is gone: the end, like EOF.
                match reader.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => reading.take_output(&buf[..n]),
                }
            }
        });
        let watching = Arc::clone(&term);
        tokio::spawn(async move {
            let status = group.wait().await;
            let (exit_code, signal) = crate::exec::describe(status);
            watching.status.send_replace(SessionStatus::Exited { exit_code, signal });
            // The group (and its session) is reaped by its monitor; keep `group` alive until then.
            group.reaped().await;
        });
        Ok(term)
    }

    /// Starts `argv` on a new terminal in `world`, in `folder` there.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn open_in_world(
        &self,
        kind: &str,
        name: Option<String>,
        owner: String,
        id: String,
        argv: Vec<String>,
        env: Vec<(OsString, OsString)>,
        world: &dyn ExecutionWorld,
        folder: String,
    ) -> Result<Arc<Term>, TerminalError> {
        let env = env
            .into_iter()
            .map(|(n, v)| (n.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
            .collect();
        let command = toolhost_contract::WorldCommand {
            argv,
            cwd: folder,
            env,
            kill_group_with_leader: true,
            pty: Some((ROWS, COLS)),
        };
        let mut process = world
            .spawn(&command)
            .await
            .map_err(|f| TerminalError::Open(format!("{kind} in {}: {f}", world.describe())))?;
        let io = Io::World(process.control());
        let term = Term::started(id, name, kind, owner, process.pid().unwrap_or(0), io);
        let reading = Arc::clone(&term);
        tokio::spawn(async move {
            let (mut exit_code, mut signal) = (None, None);
            while let Some(event) = process.next_event().await {
                match event {
                    WorldProcessEvent::Stdout(bytes) | WorldProcessEvent::Stderr(bytes) => {
                        reading.take_output(&bytes);
                    }
                    WorldProcessEvent::Exited { exit_code: code, signal: number } => {
                        (exit_code, signal) = (code, number.map(crate::exec::signal_name));
                        break;
                    }
                }
            }
            // A lost connection ends the session too (its shell is killed there with it).
            reading.status.send_replace(SessionStatus::Exited { exit_code, signal });
        });
        Ok(term)
    }
}
