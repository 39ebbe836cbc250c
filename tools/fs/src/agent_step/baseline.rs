//! What a hosted agent's steps changed without naming it: in a git workspace, the files git
//! sees changed are compared with how they were when the agent's turn began.
//!
//! A step's own snapshot covers the files it names before it acts. An agent in a mode that does
//! not ask first may act before that snapshot is taken, and a shell command may change files it
//! never names. So at the start of each turn the host takes a baseline: the bytes of every file
//! git reports as changed, deleted or new (`git ls-files -m -d -o --exclude-standard`); every
//! other file is as the index holds it. When a step ends, each file git reports changed now or
//! held in the baseline, and not covered by the step's own snapshot, is compared with its
//! baseline bytes (or the index's); what differs is this step's change, recorded with those
//! bytes as its before side, and the baseline moves on. Without git (or outside a repository)
//! there is no baseline and only named files are seen.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use toolhost_workspace::Workspace;

/// The most files a baseline holds; past it, further files are not seen by this fallback.
const MAX_BASELINE_FILES: usize = 256;
/// The most bytes of git's answer read.
const MAX_GIT_OUTPUT: usize = 4 << 20;
/// How long one git command may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(10);

/// A turn's baseline: each file's bytes as git saw it changed (`None`: absent), by real path.
#[derive(Debug)]
pub(crate) struct Baseline {
    root: PathBuf,
    files: HashMap<String, Option<Vec<u8>>>,
}

/// Runs `git` in `root` to its end; its output when it succeeded.
async fn git(root: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let mut command = tokio::process::Command::new("git");
    command
        .arg("-C")
        .arg(root)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut group = toolhost_process::spawn(command, toolhost_process::SpawnOptions::default())
        .map_err(|err| tracing::debug!(%err, "git is not available"))
        .ok()?;
    let mut stdout = group.take_stdout()?;
    let read = async {
        let mut out = Vec::new();
        let mut limited = (&mut stdout).take(MAX_GIT_OUTPUT as u64);
        limited.read_to_end(&mut out).await.ok()?;
        let status = group.wait().await?;
        status.success().then_some(out)
    };
    match tokio::time::timeout(GIT_TIMEOUT, read).await {
        Ok(out) => out,
        Err(_) => {
            group.terminate(Duration::from_millis(200)).await;
            None
        }
    }
}

/// The files git sees changed, deleted or new under `root` (relative to it).
async fn changed_files(root: &Path) -> Option<Vec<String>> {
    let out = git(root, &["ls-files", "-z", "-m", "-d", "-o", "--exclude-standard"]).await?;
    let mut paths: Vec<String> = out
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .filter_map(|p| std::str::from_utf8(p).ok().map(str::to_owned))
        .collect();
    paths.sort();
    paths.dedup();
    Some(paths)
}

/// The index's bytes of `relative` (`None`: not in the index).
async fn index_bytes(root: &Path, relative: &str) -> Option<Vec<u8>> {
    git(root, &["show", &format!(":./{relative}")]).await
}

/// The real path of `input` in the workspace and its bytes now (`None`: absent or too large).
async fn current(ws: &Workspace, input: &str) -> Option<(String, Option<Vec<u8>>)> {
    let resolved = ws.resolve(input).await.ok()?;
    let key = resolved.real_path.to_string_lossy().into_owned();
    let bytes = ws.disk_bytes(&key).await.ok()?;
    Some((key, bytes))
}

impl Baseline {
    /// The workspace as git sees it now; `None` outside a git repository or without git.
    pub(crate) async fn take(root: &Path, ws: &Workspace) -> Option<Baseline> {
        // Real paths, as the workspace resolves them, lie under the real root.
        let root = tokio::fs::canonicalize(root).await.ok()?;
        let changed = changed_files(&root).await?;
        let mut files = HashMap::new();
        for relative in changed.iter().take(MAX_BASELINE_FILES) {
            if let Some((key, bytes)) = current(ws, relative).await {
                files.insert(key, bytes);
            }
        }
        Some(Baseline { root, files })
    }

    /// The files changed since the baseline that `covered` does not hold: (real path, bytes
    /// before). Taking them moves the baseline on to how they are now.
    pub(crate) async fn changes(
        &mut self,
        ws: &Workspace,
        covered: &(dyn Fn(&str) -> bool + Sync),
    ) -> Vec<(String, Option<Vec<u8>>)> {
        let Some(changed) = changed_files(&self.root).await else { return Vec::new() };
        let mut candidates: Vec<(String, String)> = Vec::new();
        for relative in changed.iter().take(MAX_BASELINE_FILES) {
            if let Ok(resolved) = ws.resolve(relative).await {
                let key = resolved.real_path.to_string_lossy().into_owned();
                candidates.push((key, relative.clone()));
            }
        }
        // A file held in the baseline that git no longer sees changed went back to the index.
        for key in self.files.keys() {
            if !candidates.iter().any(|(k, _)| k == key)
                && let Ok(relative) = Path::new(key).strip_prefix(&self.root)
            {
                candidates.push((key.clone(), relative.to_string_lossy().into_owned()));
            }
        }
        let mut found = Vec::new();
        for (key, relative) in candidates {
            if covered(&key) {
                continue;
            }
            let before = match self.files.get(&key) {
                Some(bytes) => bytes.clone(),
                None => index_bytes(&self.root, &relative).await,
            };
            let Ok(now) = ws.disk_bytes(&key).await else { continue };
            if now != before {
                found.push((key.clone(), before));
            }
            self.files.insert(key, now);
        }
        found
    }

    /// `key` now holds `bytes` (a change the step's own snapshot recorded).
    pub(crate) fn moved_on(&mut self, key: &str, bytes: Option<Vec<u8>>) {
        if self.files.len() < MAX_BASELINE_FILES || self.files.contains_key(key) {
            self.files.insert(key.to_owned(), bytes);
        }
    }
}
