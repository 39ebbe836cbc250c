//! What the search may open without blocking. Opening a FIFO for reading waits for a writer that
//! may never come, and a device may block or act on being opened, so the search opens only
//! regular files for their content: walked and explicit files through [`open_regular`]
//! (non-blocking, type checked on the handle), and ignore files only after
//! [`blocking_ignore_file`] found none of them to be something else — those the walker's own
//! crate opens, by name and blocking, and nothing can be checked on its handle.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Ignore files the walk reads in every directory (grep's filters, `.rgignore` included).
const IGNORE_FILES: [&str; 3] = [".rgignore", ".ignore", ".gitignore"];

/// The longest first line of a `.git` file (a worktree's pointer) read to follow it.
const POINTER_MAX_BYTES: u64 = 4096;

/// What an entry that is neither a regular file nor a directory is, for messages.
pub(super) use toolhost_contract::regular_file::kind_name;

/// Opens `path` for reading if it is a regular file: `Ok(Err(kind))` when it is something else.
/// Non-blocking, so a FIFO put there after the caller looked cannot hang the open; `nofollow`
/// refuses a final symbolic link (walked entries are never links: one that is now was swapped
/// in, possibly pointing out of the workspace).
pub(super) fn open_regular(path: &Path, nofollow: bool) -> io::Result<Result<File, &'static str>> {
    let mut flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    if nofollow {
        flags |= rustix::fs::OFlags::NOFOLLOW;
    }
    let file = OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path)?;
    let file_type = file.metadata()?.file_type();
    if file_type.is_file() {
        Ok(Ok(file))
    } else if file_type.is_dir() {
        Ok(Err("a directory"))
    } else {
        Ok(Err(kind_name(file_type)))
    }
}

/// The first ignore file of `dir` that the walker would open and that is neither a regular file
/// nor a directory (a directory fails to read at once, harmlessly), with what it is.
pub(super) fn blocking_ignore_file(dir: &Path) -> Option<(PathBuf, &'static str)> {
    for name in IGNORE_FILES {
        if let Some(found) = special(&dir.join(name)) {
            return Some(found);
        }
    }
    let git = dir.join(".git");
    match std::fs::metadata(&git) {
        Ok(md) if md.is_dir() => special(&git.join("info/exclude")),
        // A worktree: `.git` names the real git folder, whose `commondir` names the folder
        // holding `info/exclude`.
        Ok(md) if md.is_file() => {
            let git_dir = PathBuf::from(first_line(&git)?.strip_prefix("gitdir: ")?);
            let commondir = git_dir.join("commondir");
            if let Some(found) = special(&commondir) {
                return Some(found);
            }
            let common = first_line(&commondir)?;
            let common =
                if common.starts_with('.') { git_dir.join(common) } else { PathBuf::from(common) };
            special(&common.join("info/exclude"))
        }
        _ => None,
    }
}

/// `path` with what it is, when it exists and is neither a regular file nor a directory.
fn special(path: &Path) -> Option<(PathBuf, &'static str)> {
    let file_type = std::fs::metadata(path).ok()?.file_type();
    if file_type.is_file() || file_type.is_dir() {
        return None;
    }
    Some((path.to_path_buf(), kind_name(file_type)))
}

/// The first line of a small regular file, read without blocking.
fn first_line(path: &Path) -> Option<String> {
    let file = open_regular(path, false).ok()?.ok()?;
    let mut text = String::new();
    file.take(POINTER_MAX_BYTES).read_to_string(&mut text).ok()?;
    text.lines().next().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
    }

    #[test]
    fn a_fifo_is_refused_on_its_handle_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let pipe = dir.path().join("pipe");
        fifo(&pipe);
        assert_eq!(open_regular(&pipe, true).unwrap().unwrap_err(), "a FIFO");
        std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
        assert!(open_regular(&dir.path().join("a.txt"), true).unwrap().is_ok());
        std::os::unix::fs::symlink("a.txt", dir.path().join("link")).unwrap();
        assert!(open_regular(&dir.path().join("link"), true).is_err());
        assert!(open_regular(&dir.path().join("link"), false).unwrap().is_ok());
    }

    #[test]
    fn ignore_files_that_would_block_are_found() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(blocking_ignore_file(dir.path()), None);
        std::fs::write(dir.path().join(".ignore"), "x\n").unwrap();
        std::fs::create_dir_all(dir.path().join(".git/info")).unwrap();
        assert_eq!(blocking_ignore_file(dir.path()), None);
        fifo(&dir.path().join(".git/info/exclude"));
        let found = blocking_ignore_file(dir.path()).unwrap();
        assert_eq!(found, (dir.path().join(".git/info/exclude"), "a FIFO"));

        let worktree = tempfile::tempdir().unwrap();
        let git_dir = worktree.path().join("real-git");
        std::fs::create_dir(&git_dir).unwrap();
        let pointer = format!("gitdir: {}\n", git_dir.display());
        std::fs::write(worktree.path().join(".git"), pointer).unwrap();
        assert_eq!(blocking_ignore_file(worktree.path()), None);
        fifo(&git_dir.join("commondir"));
        assert_eq!(blocking_ignore_file(worktree.path()).unwrap().1, "a FIFO");
    }
}
