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
//! bytes as its before side, and the baseline moves on. A file over the snapshot's size limit is
//! never read whole and never compared (a wrong earlier side would make its revert destroy it).
//! Without git (or outside a repository) there is no baseline and only named files are seen.

use super::MAX_FILE_BYTES;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use toolhost_workspace::Workspace;

/// The most files a baseline holds; past it, further files are not seen by this fallback.
const MAX_BASELINE_FILES: usize = 256;
/// The most bytes of git's answer read: a file within the snapshot's limit, and then some.
const MAX_GIT_OUTPUT: usize = (MAX_FILE_BYTES as usize) + (1 << 20);
/// How long one git command may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(10);

/// A turn's baseline: each file's bytes as git saw it changed (`None`: absent), by real path.
#[derive(Debug)]
pub(crate) struct Baseline {
    root: PathBuf,
    files: HashMap<String, Option<Vec<u8>>>,
    /// Files too large to keep when the turn began: never compared.
    unseen: HashSet<String>,
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
        // One byte past the limit tells an answer that did not fit from one that did.
        let mut limited = (&mut stdout).take(MAX_GIT_OUTPUT as u64 + 1);
        limited.read_to_end(&mut out).await.ok()?;
        if out.len() > MAX_GIT_OUTPUT {
            return None;
        }
        let status = group.wait().await?;
        status.success().then_some(out)
    };
    let answered = tokio::time::timeout(GIT_TIMEOUT, read).await.ok().flatten();
    if answered.is_none() {
        // Too slow, too long or failed: nothing of it is used, and nothing of it lingers.
        group.terminate(Duration::from_millis(200)).await;
    }
    answered
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

/// The index's bytes of `relative`: `Some(None)` when it is not in the index, `None` when they
/// cannot be known here (git failed, or the file is over [`MAX_FILE_BYTES`]).
async fn index_bytes(root: &Path, relative: &str) -> Option<Option<Vec<u8>>> {
    let pathspec = format!(":(literal){relative}");
    let staged = git(root, &["ls-files", "-z", "--stage", "--", &pathspec]).await?;
    // `<mode> <object> <stage>\t<path>`; nothing when the index does not hold the file.
    let Some(line) = staged.split(|b| *b == 0).find(|l| !l.is_empty()) else {
        return Some(None);
    };
    let line = std::str::from_utf8(line).ok()?;
    let object = line.split_whitespace().nth(1)?;
    let size = git(root, &["cat-file", "-s", object]).await?;
    let size: u64 = std::str::from_utf8(&size).ok()?.trim().parse().ok()?;
    if size > MAX_FILE_BYTES {
        return None;
    }
    git(root, &["cat-file", "blob", object]).await.map(Some)
}

/// A file's bytes now (`None` inside: absent), or `None` when too large to keep.
async fn bytes_now(ws: &Workspace, key: &str) -> Option<Option<Vec<u8>>> {
    ws.disk_bytes_within(key, MAX_FILE_BYTES).await.ok()
}

/// The real path of `input` in the workspace.
async fn key_of(ws: &Workspace, input: &str) -> Option<String> {
    let resolved = ws.resolve(input).await.ok()?;
    Some(resolved.real_path.to_string_lossy().into_owned())
}

impl Baseline {
    /// The workspace as git sees it now; `None` outside a git repository or without git.
    pub(crate) async fn take(root: &Path, ws: &Workspace) -> Option<Baseline> {
        // Real paths, as the workspace resolves them, lie under the real root.
        let root = tokio::fs::canonicalize(root).await.ok()?;
        let changed = changed_files(&root).await?;
        let mut files = HashMap::new();
        let mut unseen = HashSet::new();
        for relative in changed.iter().take(MAX_BASELINE_FILES) {
            let Some(key) = key_of(ws, relative).await else { continue };
            match bytes_now(ws, &key).await {
                Some(bytes) => {
                    files.insert(key, bytes);
                }
                None => {
                    unseen.insert(key);
                }
            }
        }
        Some(Baseline { root, files, unseen })
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
            if covered(&key) || self.unseen.contains(&key) {
                continue;
            }
            // A side that cannot be known (too large, git failed) is never guessed: such a
            // file is left out rather than recorded with a wrong earlier side.
            let before = match self.files.get(&key) {
                Some(bytes) => bytes.clone(),
                None => match index_bytes(&self.root, &relative).await {
                    Some(bytes) => bytes,
                    None => continue,
                },
            };
            let Some(now) = bytes_now(ws, &key).await else { continue };
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use toolhost_workspace::WorkspaceConfig;

    fn git_in(root: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    #[tokio::test]
    async fn a_file_too_large_to_keep_is_never_recorded_with_a_guessed_earlier_side() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let big = (MAX_FILE_BYTES + 1) as usize;
        std::fs::write(root.join("small.txt"), "one\n").unwrap();
        std::fs::write(root.join("big.bin"), vec![b'a'; big]).unwrap();
        std::fs::write(root.join("dirty.txt"), "x\n").unwrap();
        git_in(root, &["init", "-q"]);
        git_in(root, &["add", "."]);
        git_in(root, &["commit", "-q", "-m", "base"]);
        std::fs::write(root.join("dirty.txt"), "changed before the turn\n").unwrap();
        let ws = Workspace::new(WorkspaceConfig::new(root)).unwrap();
        let mut baseline = Baseline::take(root, &ws).await.expect("a git workspace");

        std::fs::write(root.join("small.txt"), "ONE\n").unwrap();
        std::fs::write(root.join("big.bin"), vec![b'b'; big]).unwrap();
        std::fs::write(root.join("dirty.txt"), "changed by the step\n").unwrap();
        std::fs::write(root.join("new.txt"), "new\n").unwrap();
        let mut changes = baseline.changes(&ws, &|_| false).await;
        changes.sort();
        let seen: Vec<(String, Option<String>)> = changes
            .into_iter()
            .map(|(key, before)| {
                let name = Path::new(&key).file_name().unwrap().to_string_lossy().into_owned();
                (name, before.map(|b| String::from_utf8(b).unwrap()))
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("dirty.txt".to_owned(), Some("changed before the turn\n".to_owned())),
                ("new.txt".to_owned(), None),
                ("small.txt".to_owned(), Some("one\n".to_owned())),
            ]
        );
        // Taken: the next step starts from here.
        assert!(baseline.changes(&ws, &|_| false).await.is_empty());
    }
}
