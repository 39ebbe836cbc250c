//! The world's side of each method: a confined [`Workspace`] over the server's root does every
//! file operation, the workspace's search engine every search, and `run.rs` every process — so
//! a path the client sends gets exactly the checks a local tool call gets, made here.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;
use toolhost_jsonrpc::ErrorObject;
use toolhost_protocol::world::{
    EntryKind, GlobParams, GlobResult, GrepHit, GrepParams, GrepResult, HelloParams, HelloResult,
    ListEntry, ListResult, PathParams, ReadParams, ReadResult, ReplaceParams, ReplaceResult,
    ResolveResult, RunParams, WORLD_ERROR_CODE, WORLD_PROTOCOL_VERSION, WorldErrorData, methods,
};
use toolhost_workspace::search::{self, GlobOptions, GrepOptions, SearchError};
use toolhost_workspace::{EntryState, FsError, Workspace, WorkspaceConfig, WriteOperation};

/// The largest file `fs/read` returns (a client asks for less with `maxBytes`).
pub const MAX_READ_BYTES: u64 = 32 << 20;
/// The most entries `fs/list` returns.
pub const MAX_LIST_ENTRIES: usize = 10_000;

/// A world rooted at one folder.
#[derive(Clone)]
pub struct World {
    workspace: Workspace,
    root: PathBuf,
}

/// An error the client gets: the stable code in `data`.
pub(crate) fn world_error(
    code: &str,
    message: impl Into<String>,
    path: Option<&str>,
) -> ErrorObject {
    let data = WorldErrorData { code: code.to_owned(), path: path.map(str::to_owned), size: None };
    ErrorObject::new(WORLD_ERROR_CODE, message)
        .with_data(serde_json::to_value(data).unwrap_or(Value::Null))
}

fn fs_error(err: &FsError) -> ErrorObject {
    let size = match err {
        FsError::TooLarge { size, .. } => Some(*size),
        _ => None,
    };
    let data =
        WorldErrorData { code: err.code().to_owned(), path: Some(err.path().to_owned()), size };
    ErrorObject::new(WORLD_ERROR_CODE, err.to_string())
        .with_data(serde_json::to_value(data).unwrap_or(Value::Null))
}

fn search_error(err: &SearchError) -> ErrorObject {
    world_error(err.code(), err.to_string(), None)
}

pub(crate) fn params<T: DeserializeOwned>(params: Option<Value>) -> Result<T, ErrorObject> {
    serde_json::from_value(params.unwrap_or(Value::Null))
        .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))
}

fn answer<T: Serialize>(value: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|e| ErrorObject::internal(e.to_string()))
}

fn kind_of(state: &EntryState) -> EntryKind {
    match state {
        EntryState::Present(toolhost_workspace::EntryKind::File) => EntryKind::File,
        EntryState::Present(toolhost_workspace::EntryKind::Dir) => EntryKind::Dir,
        EntryState::Present(toolhost_workspace::EntryKind::Other) => EntryKind::Other,
        EntryState::Missing | EntryState::ParentNotDir => EntryKind::Missing,
    }
}

fn decode(field: &str, data: &str) -> Result<Vec<u8>, ErrorObject> {
    BASE64
        .decode(data)
        .map_err(|e| ErrorObject::invalid_params(format!("{field} is not base64: {e}")))
}

impl World {
    /// The world of the folder `root` (which must exist), with the default protected paths.
    pub fn open(root: &Path) -> std::io::Result<Self> {
        let workspace = Workspace::new(WorkspaceConfig::new(root))?;
        let root = workspace.primary_root().canonical().to_path_buf();
        Ok(World { workspace, root })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Checks the client's hello: the same major version.
    pub(crate) fn hello(&self, raw: Option<Value>) -> Result<Value, ErrorObject> {
        let hello: HelloParams = params(raw)?;
        let major = |v: &str| v.split('.').next().unwrap_or_default().to_owned();
        if major(&hello.version) != major(WORLD_PROTOCOL_VERSION) {
            return Err(world_error(
                "WORLD_VERSION",
                format!(
                    "this exec-server speaks protocol {WORLD_PROTOCOL_VERSION}, the client {}",
                    hello.version
                ),
                None,
            ));
        }
        answer(&HelloResult {
            version: WORLD_PROTOCOL_VERSION.to_owned(),
            toolhost: env!("CARGO_PKG_VERSION").to_owned(),
            root: self.root.to_string_lossy().into_owned(),
        })
    }

    /// Answers one request (after the hello).
    pub(crate) async fn handle(
        &self,
        method: &str,
        raw: Option<Value>,
        cancel: &CancellationToken,
    ) -> Result<Value, ErrorObject> {
        match method {
            methods::RESOLVE => self.resolve(params(raw)?).await,
            methods::READ => self.read(params(raw)?).await,
            methods::REPLACE => self.replace(params(raw)?).await,
            methods::LIST => self.list(params(raw)?).await,
            methods::GLOB => self.glob(params(raw)?, cancel).await,
            methods::GREP => self.grep(params(raw)?, cancel).await,
            methods::RUN => {
                let run: RunParams = params(raw)?;
                let cwd = match &run.cwd {
                    Some(cwd) => self.folder(cwd).await?,
                    None => self.root.clone(),
                };
                answer(&crate::run::run(run, &cwd, cancel).await?)
            }
            methods::HELLO => Err(ErrorObject::new(
                toolhost_jsonrpc::codes::INVALID_REQUEST,
                "world/hello was already answered",
            )),
            other => Err(ErrorObject::new(
                toolhost_jsonrpc::codes::METHOD_NOT_FOUND,
                format!("unknown method {other}"),
            )),
        }
    }

    async fn resolve(&self, p: PathParams) -> Result<Value, ErrorObject> {
        let resolved = self.workspace.resolve(&p.path).await.map_err(|e| fs_error(&e))?;
        answer(&ResolveResult {
            display: resolved.display,
            real_path: resolved.real_path.to_string_lossy().into_owned(),
            kind: kind_of(&resolved.state),
        })
    }

    async fn read(&self, p: ReadParams) -> Result<Value, ErrorObject> {
        let limit = p.max_bytes.unwrap_or(MAX_READ_BYTES).min(MAX_READ_BYTES);
        let bytes =
            self.workspace.disk_bytes_within(&p.path, limit).await.map_err(|e| fs_error(&e))?;
        answer(&ReadResult {
            version: bytes.as_deref().map(toolhost_workspace::content_version),
            data: bytes.map(|b| BASE64.encode(b)),
        })
    }

    async fn replace(&self, p: ReplaceParams) -> Result<Value, ErrorObject> {
        let data = p.data.as_deref().map(|d| decode("data", d)).transpose()?;
        let outcome = self
            .workspace
            .restore(&p.path, p.expected_version.as_deref(), data.as_deref())
            .await
            .map_err(|e| fs_error(&e))?;
        let operation = match outcome.operation {
            WriteOperation::Create => "create",
            WriteOperation::Update => "update",
            WriteOperation::Remove => "remove",
        };
        answer(&ReplaceResult {
            display: outcome.display,
            operation: operation.to_owned(),
            version: outcome.version,
        })
    }

    /// The real path of a folder beneath the root, or the error a tool would report.
    pub(crate) async fn folder(&self, path: &str) -> Result<PathBuf, ErrorObject> {
        let resolved = self.workspace.resolve(path).await.map_err(|e| fs_error(&e))?;
        match resolved.state {
            EntryState::Present(toolhost_workspace::EntryKind::Dir) => Ok(resolved.real_path),
            EntryState::Missing | EntryState::ParentNotDir => Err(world_error(
                "FS_NOT_FOUND",
                format!("{} does not exist", resolved.display),
                Some(&resolved.display),
            )),
            EntryState::Present(_) => Err(world_error(
                "FS_NOT_DIRECTORY",
                format!("{} is not a folder", resolved.display),
                Some(&resolved.display),
            )),
        }
    }

    async fn list(&self, p: PathParams) -> Result<Value, ErrorObject> {
        let dir = self.folder(&p.path).await?;
        let listed = tokio::task::spawn_blocking(move || -> std::io::Result<ListResult> {
            let mut entries = Vec::new();
            let mut truncated = false;
            for entry in std::fs::read_dir(&dir)? {
                let entry = entry?;
                if entries.len() == MAX_LIST_ENTRIES {
                    truncated = true;
                    break;
                }
                // Not followed: a link is listed as what it is, never as where it leads.
                let kind = match entry.file_type() {
                    Ok(t) if t.is_file() => EntryKind::File,
                    Ok(t) if t.is_dir() => EntryKind::Dir,
                    _ => EntryKind::Other,
                };
                entries.push(ListEntry {
                    name: entry.file_name().to_string_lossy().into_owned(),
                    kind,
                });
            }
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(ListResult { entries, truncated })
        })
        .await
        .map_err(|e| ErrorObject::internal(e.to_string()))?
        .map_err(|e| {
            world_error("FS_IO_ERROR", format!("cannot list {}: {e}", p.path), Some(&p.path))
        })?;
        answer(&listed)
    }

    async fn search_root(&self, path: Option<&str>) -> Result<PathBuf, ErrorObject> {
        match path {
            Some(path) => {
                let resolved = self.workspace.resolve(path).await.map_err(|e| fs_error(&e))?;
                Ok(resolved.real_path)
            }
            None => Ok(self.root.clone()),
        }
    }

    async fn glob(&self, p: GlobParams, cancel: &CancellationToken) -> Result<Value, ErrorObject> {
        let search_root = self.search_root(p.path.as_deref()).await?;
        let (workdir, cancel) = (self.root.clone(), cancel.clone());
        let found = tokio::task::spawn_blocking(move || {
            let cancelled = || cancel.is_cancelled();
            search::glob(&GlobOptions::new(&workdir, &search_root, &p.pattern, &cancelled))
        })
        .await
        .map_err(|e| ErrorObject::internal(e.to_string()))?
        .map_err(|e| search_error(&e))?;
        answer(&GlobResult { paths: found })
    }

    async fn grep(&self, p: GrepParams, cancel: &CancellationToken) -> Result<Value, ErrorObject> {
        let search_root = self.search_root(p.path.as_deref()).await?;
        let (workdir, cancel) = (self.root.clone(), cancel.clone());
        let found = tokio::task::spawn_blocking(move || {
            let cancelled = || cancel.is_cancelled();
            search::grep(&GrepOptions::new(
                &workdir,
                &search_root,
                &p.pattern,
                p.include.as_deref(),
                &cancelled,
            ))
        })
        .await
        .map_err(|e| ErrorObject::internal(e.to_string()))?
        .map_err(|e| search_error(&e))?;
        let matches = found
            .into_iter()
            .map(|m| GrepHit { path: m.path, line_number: m.line_number, line: m.line })
            .collect();
        answer(&GrepResult { matches })
    }
}
