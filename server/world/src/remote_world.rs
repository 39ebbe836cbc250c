//! [`RemoteWorld`]: a [`WorldClient`] as the execution world the tools use
//! (`toolhost_contract::ExecutionWorld`) — paths relative to the world's root both ways, the
//! world's refusals as `WorldFailure`s with the codes a local tool reports.

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolhost_contract::{
    BoxFuture, ExecutionWorld, WorldCommand, WorldEntry, WorldFailure, WorldGrepHit, WorldPath,
    WorldProcess, WorldProcessControl, WorldProcessEvent, WorldResult, WorldTerminalState,
};
use toolhost_protocol::world::{
    EntryKind, EnvVar, GlobParams, GlobResult, GrepParams, GrepResult, OutputStream, PtySize,
    SpawnParams, methods,
};

use crate::client::{ProcessEvent, RemoteProcess, WorldClient};
use crate::error::WorldError;

/// A world reached through a [`WorldClient`] (a local child, ssh or a container).
pub struct RemoteWorld {
    client: Arc<WorldClient>,
    description: String,
    root: tokio::sync::OnceCell<String>,
}

impl std::fmt::Debug for RemoteWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteWorld").field("description", &self.description).finish()
    }
}

impl RemoteWorld {
    /// `description` names the world in messages (`ssh build-box:/srv/repo`).
    pub fn new(client: Arc<WorldClient>, description: impl Into<String>) -> Self {
        RemoteWorld { client, description: description.into(), root: Default::default() }
    }

    pub fn client(&self) -> &Arc<WorldClient> {
        &self.client
    }

    /// The world's root as it names it (asked once).
    async fn root(&self) -> WorldResult<&str> {
        let root = self
            .root
            .get_or_try_init(|| async { self.client.hello().await.map(|hello| hello.root) })
            .await
            .map_err(|e| failure(&e))?;
        Ok(root.as_str())
    }
}

/// A path relative to the root as the world reads it (`.`: the root).
fn asked(rel: &str) -> &str {
    if rel.is_empty() { "." } else { rel }
}

fn failure(err: &WorldError) -> WorldFailure {
    let size = match err {
        WorldError::Remote { size, .. } => *size,
        _ => None,
    };
    WorldFailure { code: err.code().to_owned(), message: err.to_string(), size }
}

impl ExecutionWorld for RemoteWorld {
    fn describe(&self) -> String {
        self.description.clone()
    }

    fn root(&self) -> BoxFuture<'_, WorldResult<String>> {
        Box::pin(async move { self.root().await.map(str::to_owned) })
    }

    fn resolve<'a>(&'a self, rel: &'a str) -> BoxFuture<'a, WorldResult<WorldPath>> {
        Box::pin(async move {
            let root = self.root().await?.to_owned();
            let found = self.client.resolve(asked(rel)).await.map_err(|e| failure(&e))?;
            let real_rel = match Path::new(&found.real_path).strip_prefix(&root) {
                Ok(rel) => rel.to_string_lossy().into_owned(),
                Err(_) => {
                    return Err(WorldFailure::new(
                        "FS_SANDBOX_DENIED",
                        format!("the world resolved {rel:?} outside its root"),
                    ));
                }
            };
            let entry = match found.kind {
                EntryKind::File => WorldEntry::File,
                EntryKind::Dir => WorldEntry::Dir,
                EntryKind::Other => WorldEntry::Other,
                EntryKind::Missing => WorldEntry::Missing,
            };
            Ok(WorldPath { real_rel, entry })
        })
    }

    fn read<'a>(
        &'a self,
        rel: &'a str,
        max_bytes: u64,
    ) -> BoxFuture<'a, WorldResult<Option<Vec<u8>>>> {
        Box::pin(async move {
            let read = self.client.read(asked(rel), Some(max_bytes)).await;
            read.map(|found| found.map(|(bytes, _)| bytes)).map_err(|e| failure(&e))
        })
    }

    fn replace<'a>(
        &'a self,
        rel: &'a str,
        expected: Option<&'a str>,
        content: Option<&'a [u8]>,
    ) -> BoxFuture<'a, WorldResult<()>> {
        Box::pin(async move {
            self.client.replace(asked(rel), expected, content).await.map_err(|e| failure(&e))?;
            Ok(())
        })
    }

    fn glob<'a>(
        &'a self,
        pattern: &'a str,
        path: Option<&'a str>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, WorldResult<Vec<String>>> {
        Box::pin(async move {
            let params = GlobParams { pattern: pattern.to_owned(), path: path.map(str::to_owned) };
            let found: GlobResult = self
                .client
                .request(methods::GLOB, &params, cancel)
                .await
                .map_err(|e| failure(&e))?;
            Ok(found.paths)
        })
    }

    fn grep<'a>(
        &'a self,
        pattern: &'a str,
        path: Option<&'a str>,
        include: Option<&'a str>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, WorldResult<Vec<WorldGrepHit>>> {
        Box::pin(async move {
            let params = GrepParams {
                pattern: pattern.to_owned(),
                path: path.map(str::to_owned),
                include: include.map(str::to_owned),
            };
            let found: GrepResult = self
                .client
                .request(methods::GREP, &params, cancel)
                .await
                .map_err(|e| failure(&e))?;
            let hits = found.matches.into_iter().map(|m| WorldGrepHit {
                path: m.path,
                line_number: m.line_number,
                line: m.line,
            });
            Ok(hits.collect())
        })
    }

    fn spawn<'a>(
        &'a self,
        command: &'a WorldCommand,
    ) -> BoxFuture<'a, WorldResult<Box<dyn WorldProcess>>> {
        Box::pin(async move {
            let params = SpawnParams {
                argv: command.argv.clone(),
                cwd: Some(asked(&command.cwd).to_owned()),
                env: command
                    .env
                    .iter()
                    .map(|(name, value)| EnvVar { name: name.clone(), value: value.clone() })
                    .collect(),
                kill_group_with_leader: command.kill_group_with_leader,
                pty: command.pty.map(|(rows, cols)| PtySize { rows, cols }),
            };
            let process = self.client.spawn(&params).await.map_err(|e| failure(&e))?;
            let client = Arc::downgrade(&self.client);
            let control = Arc::new(Control { client, id: process.id });
            Ok(Box::new(Spawned { control, process }) as Box<dyn WorldProcess>)
        })
    }
}

/// A process started through [`RemoteWorld::spawn`].
struct Spawned {
    control: Arc<Control>,
    process: RemoteProcess,
}

/// Signals and input of a spawned process, by its id on the connection. It does not keep the
/// client alive: a task reading a process's events (a terminal's, a language server's) holds
/// this, and the world must still end — its processes with it — when the host lets it go.
struct Control {
    client: std::sync::Weak<WorldClient>,
    id: u64,
}

impl Control {
    fn client(&self) -> WorldResult<Arc<WorldClient>> {
        self.client.upgrade().ok_or_else(|| {
            WorldFailure::new("WORLD_DISCONNECTED", "the execution world was closed")
        })
    }
}

impl WorldProcessControl for Control {
    fn signal<'a>(&'a self, signal: &'a str) -> BoxFuture<'a, WorldResult<()>> {
        Box::pin(
            async move { self.client()?.signal(self.id, signal).await.map_err(|e| failure(&e)) },
        )
    }

    fn write<'a>(&'a self, data: &'a [u8], close: bool) -> BoxFuture<'a, WorldResult<()>> {
        Box::pin(async move {
            self.client()?.write(self.id, data, close).await.map_err(|e| failure(&e))
        })
    }

    fn signal_foreground<'a>(&'a self, signal: &'a str) -> BoxFuture<'a, WorldResult<Option<i32>>> {
        Box::pin(async move {
            self.client()?.signal_foreground(self.id, signal).await.map_err(|e| failure(&e))
        })
    }

    fn terminal_state(&self) -> BoxFuture<'_, WorldResult<Option<WorldTerminalState>>> {
        Box::pin(async move {
            let state = self.client()?.terminal_state(self.id).await.map_err(|e| failure(&e))?;
            Ok(state.foreground_pgid.map(|pgid| WorldTerminalState {
                pgid,
                waits_for_input: state.waits_for_input,
                switches: state.switches,
            }))
        })
    }
}

impl WorldProcess for Spawned {
    fn next_event(&mut self) -> BoxFuture<'_, Option<WorldProcessEvent>> {
        Box::pin(async move {
            Some(match self.process.next().await? {
                ProcessEvent::Output(OutputStream::Stdout, bytes) => {
                    WorldProcessEvent::Stdout(bytes)
                }
                ProcessEvent::Output(OutputStream::Stderr, bytes) => {
                    WorldProcessEvent::Stderr(bytes)
                }
                ProcessEvent::Exited { exit_code, signal } => {
                    WorldProcessEvent::Exited { exit_code, signal }
                }
            })
        })
    }

    fn control(&self) -> Arc<dyn WorldProcessControl> {
        Arc::clone(&self.control) as Arc<dyn WorldProcessControl>
    }

    fn pid(&self) -> Option<u32> {
        self.process.pid
    }
}
