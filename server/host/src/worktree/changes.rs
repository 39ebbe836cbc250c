//! What a worktree session changed since it started, file by file (its uncommitted work
//! included): each file's text at the fork and now, for `apply_changes` and the listings. A side
//! over [`MAX_MERGED_BYTES`] is listed as not text and never read whole.

use super::git::{git, line};
use super::{
    CheckoutKind, IncomingFile, WorktreeError, WorktreeSession, base_copy, io, snapshot_tree,
};
use std::path::{Path, PathBuf};

/// Text of bytes that are text; `None` for anything else.
fn text_of(bytes: Vec<u8>) -> Result<String, ()> {
    if bytes.contains(&0) {
        return Err(());
    }
    String::from_utf8(bytes).map_err(|_| ())
}

/// One file's sides: `Err(())` for a side that is not text.
fn incoming(path: String, base: Option<Vec<u8>>, theirs: Option<Vec<u8>>) -> IncomingFile {
    let base = base.map(text_of).transpose();
    let theirs = theirs.map(text_of).transpose();
    match (base, theirs) {
        (Ok(base), Ok(theirs)) => IncomingFile { path, base, theirs, not_text: false },
        _ => IncomingFile { path, base: None, theirs: None, not_text: true },
    }
}

/// What the session changed since it started, file by file (its uncommitted work included):
/// each file's text at the start and now, paths relative to the workspace.
pub async fn changes(session: &WorktreeSession) -> Result<Vec<IncomingFile>, WorktreeError> {
    match session.kind {
        CheckoutKind::Git => git_changes(session).await,
        CheckoutKind::Copy => {
            let dir = session.checkout.parent().unwrap_or(&session.checkout);
            copy_changes(&base_copy(dir, &session.name), &session.checkout)
        }
    }
}

async fn git_changes(session: &WorktreeSession) -> Result<Vec<IncomingFile>, WorktreeError> {
    let base = session.base.as_deref().unwrap_or("HEAD");
    // A tree, not a commit: looking leaves no commit behind each time.
    let now = snapshot_tree(&session.checkout, Some(base)).await?;
    let scope = if session.prefix.is_empty() { ".".to_owned() } else { session.prefix.clone() };
    let listing = git(
        &session.checkout,
        &["diff-tree", "-r", "-z", "--no-renames", "--name-status", base, &now, "--", &scope],
        &[],
    )
    .await?;
    let mut fields = listing.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut out = Vec::new();
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        let path = String::from_utf8_lossy(path).into_owned();
        let status = status.first().copied().unwrap_or(b'M');
        let relative = match path.strip_prefix(&session.prefix) {
            Some(rest) if !session.prefix.is_empty() => rest.trim_start_matches('/').to_owned(),
            _ => path.clone(),
        };
        let before = if status == b'A' { Ok(None) } else { blob(session, base, &path).await? };
        let after = if status == b'D' { Ok(None) } else { blob(session, &now, &path).await? };
        match (before, after) {
            (Ok(before), Ok(after)) => out.push(incoming(relative, before, after)),
            // Too large to merge: listed, never read whole.
            _ => {
                out.push(IncomingFile { path: relative, base: None, theirs: None, not_text: true })
            }
        }
    }
    Ok(out)
}

/// The most bytes of one side of a file merged; a larger file is listed, not merged.
const MAX_MERGED_BYTES: u64 = 8 << 20;

/// The bytes of `path` in `commit`: `Ok(None)` when absent there, `Err(())` when it is over
/// [`MAX_MERGED_BYTES`] (never read).
async fn blob(
    session: &WorktreeSession,
    commit: &str,
    path: &str,
) -> Result<Result<Option<Vec<u8>>, ()>, WorktreeError> {
    let spec = format!("{commit}:{path}");
    let Ok(size) = git(&session.checkout, &["cat-file", "-s", &spec], &[]).await else {
        return Ok(Ok(None));
    };
    if line(&size).parse::<u64>().map_or(true, |n| n > MAX_MERGED_BYTES) {
        return Ok(Err(()));
    }
    Ok(Ok(Some(git(&session.checkout, &["cat-file", "blob", &spec], &[]).await?)))
}

/// Every file under `dir` (relative paths), `.git` skipped.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name == ".git" {
                continue;
            }
            let child = rel.join(&name);
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(child),
                Ok(t) if t.is_file() => out.push(child.to_string_lossy().into_owned()),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

fn copy_changes(base: &Path, checkout: &Path) -> Result<Vec<IncomingFile>, WorktreeError> {
    let mut paths = files_under(base);
    paths.extend(files_under(checkout));
    paths.sort();
    paths.dedup();
    let read = |root: &Path, rel: &str| -> Result<Option<Vec<u8>>, WorktreeError> {
        match std::fs::read(root.join(rel)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(format!("cannot read {rel}"), e)),
        }
    };
    let stat = |root: &Path, rel: &str| std::fs::metadata(root.join(rel)).ok();
    let mut out = Vec::new();
    for rel in paths {
        let (was, now) = (stat(base, &rel), stat(checkout, &rel));
        if let (Some(was), Some(now)) = (&was, &now)
            && was.len() == now.len()
            && was.modified().ok() == now.modified().ok()
        {
            continue; // The copy keeps times: untouched since.
        }
        let large =
            |m: &Option<std::fs::Metadata>| m.as_ref().is_some_and(|m| m.len() > MAX_MERGED_BYTES);
        if large(&was) || large(&now) {
            out.push(IncomingFile { path: rel, base: None, theirs: None, not_text: true });
            continue;
        }
        let (before, after) = (read(base, &rel)?, read(checkout, &rel)?);
        if before != after {
            out.push(incoming(rel, before, after));
        }
    }
    Ok(out)
}

/// Lines added and removed over changed files (text files; others count nothing).
pub fn line_counts(files: &[IncomingFile]) -> (usize, usize) {
    let (mut added, mut removed) = (0, 0);
    for file in files {
        let before = file.base.as_deref().unwrap_or("");
        let after = file.theirs.as_deref().unwrap_or("");
        let patch = toolhost_tools_fs::diff::diff_meta(&file.path, before, after).patch;
        for line in patch.as_deref().unwrap_or("").lines() {
            if line.starts_with('+') && !line.starts_with("+++ ") {
                added += 1;
            } else if line.starts_with('-') && !line.starts_with("--- ") {
                removed += 1;
            }
        }
    }
    (added, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_counts_add_up_over_files() {
        let files = vec![IncomingFile {
            path: "a".into(),
            base: Some("a\nb\n".into()),
            theirs: Some("a\nc\nd\n".into()),
            not_text: false,
        }];
        assert_eq!(line_counts(&files), (2, 1));
    }
}
