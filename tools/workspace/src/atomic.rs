//! Atomic, durable replacement of one file inside a held directory handle.
//!
//! Order: exclusive-create a uniquely named temp file beside the target, copy owner and mode,
//! write everything, fsync it, rename it over the target, fsync the directory. A crash at any
//! point leaves the old content or the new content under the target name, never a torn or empty
//! file (the only debris is a hidden temp file). A failed fsync is reported, never retried: after
//! EIO the kernel may already have marked the dirty pages clean.

use std::ffi::OsStr;
use std::fs::{File, Metadata, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};

/// Prefix of every temp file, so leftovers from a crash are recognizable.
pub const TEMP_PREFIX: &str = ".toolhost-tmp-";

/// Mode for new files; the process umask applies (usually giving 0644).
const NEW_FILE_MODE: u32 = 0o666;

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_name() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{TEMP_PREFIX}{}-{n}-{nanos:08x}", std::process::id())
}

fn create_temp(parent: &Dir, mode: u32) -> io::Result<(String, File)> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).mode(mode);
    let mut last = None;
    for _ in 0..16 {
        let name = temp_name();
        match parent.open_with(&name, &options) {
            Ok(file) => return Ok((name, file.into_std())),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("could not create a temporary file")))
}

/// Replaces (or creates) `parent/name` with `content`. `prior` is the metadata of the file being
/// replaced, whose owner and permission bits the new file keeps.
pub(crate) fn replace(
    parent: &Dir,
    name: &OsStr,
    content: &[u8],
    prior: Option<&Metadata>,
) -> io::Result<()> {
    let mode = prior.map_or(NEW_FILE_MODE, |m| m.mode() & 0o7777);
    let (temp, file) = create_temp(parent, mode)?;
    let written = fill(file, content, prior).and_then(|()| parent.rename(&temp, parent, name));
    if let Err(err) = written {
        let _ = parent.remove_file(&temp);
        return Err(err);
    }
    sync_dir(parent)
}

fn fill(mut file: File, content: &[u8], prior: Option<&Metadata>) -> io::Result<()> {
    if let Some(prior) = prior {
        // Best effort: only root may give a file away. Ownership first, because chown clears
        // set-id bits and the mode must be restored after it.
        let _ = rustix::fs::fchown(
            &file,
            Some(rustix::fs::Uid::from_raw(prior.uid())),
            Some(rustix::fs::Gid::from_raw(prior.gid())),
        );
        // The create mode was filtered by the umask; the replacement keeps the exact bits.
        file.set_permissions(Permissions::from_mode(prior.mode() & 0o7777))?;
    }
    file.write_all(content)?;
    // sync_all rather than sync_data: the restored mode and owner must be durable too.
    file.sync_all()
}

/// fsyncs a directory so a rename in it survives power loss. Filesystems that cannot sync
/// directories say EINVAL/ENOTSUP; that is tolerated. Anything else (EIO) is a failure.
fn sync_dir(dir: &Dir) -> io::Result<()> {
    // cap-std holds directories as O_PATH descriptors, which fsync rejects (EBADF); reopen "."
    // for reading, which names the same directory and cannot leave it.
    use rustix::fs::{Mode, OFlags};
    let readable = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    match rustix::fs::fsync(&readable) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOTSUP) => Ok(()),
        Err(err) => Err(err.into()),
    }
}
