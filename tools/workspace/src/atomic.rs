//! Atomic, durable replacement of one file inside a held directory handle.
//!
//! Order: exclusive-create a uniquely named temp file beside the target, copy owner and mode,
//! write everything, fsync it, rename it over the target, fsync the directory. A crash at any
//! point leaves the old content or the new content under the target name, never a torn or empty
//! file (the only debris is a hidden temp file). A failed fsync is reported, never retried: after
//! EIO the kernel may already have marked the dirty pages clean.
//!
//! Debris is swept: the first write into a directory (per process) removes the temp files there
//! whose writer process is gone and that are older than [`STALE_TEMP_AGE`].
//!
//! Atomic here means no reader ever sees half a file. That no writer loses another's change is
//! the caller's part: it holds the folder's lock (`locks::DirLock`) across its check of the
//! version being replaced and this replace, and hands the lock's descriptor in for the fsync.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{File, Metadata, Permissions};
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
/// replaced, whose owner and permission bits the new file keeps; `readable` is `parent` opened
/// for reading, fsynced after the rename. `before_rename` runs once the new bytes are durable in
/// their temp file; its error leaves the target untouched.
pub(crate) fn replace(
    parent: &Dir,
    readable: BorrowedFd<'_>,
    name: &OsStr,
    content: &[u8],
    prior: Option<&Metadata>,
    before_rename: impl FnOnce() -> io::Result<()>,
) -> io::Result<()> {
    let mode = prior.map_or(NEW_FILE_MODE, |m| m.mode() & 0o7777);
    let (temp, file) = match create_temp(parent, mode) {
        Ok(created) => created,
        Err(err) => {
            // What a keeper started must still end before the error is reported.
            let _ = before_rename();
            return Err(err);
        }
    };
    let filled = fill(file, content, prior);
    let settled = before_rename();
    let written = filled.and(settled).and_then(|()| parent.rename(&temp, parent, name));
    if let Err(err) = written {
        let _ = parent.remove_file(&temp);
        return Err(err);
    }
    sync_dir_fd(readable)?;
    if first_write_into(parent) {
        sweep_stale_temps(parent, SystemTime::now());
    }
    Ok(())
}

/// A temp file this old whose writer is gone is debris. The age guard keeps the sweep away from
/// writers it cannot see: another PID namespace or another host sharing the directory.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(10 * 60);

/// Directories (device, inode) this process already swept; cleared when it grows large.
static SWEPT: Mutex<Option<HashSet<(u64, u64)>>> = Mutex::new(None);

fn first_write_into(dir: &Dir) -> bool {
    let Ok(stat) = rustix::fs::fstat(dir) else { return false };
    let key = (stat.st_dev, stat.st_ino);
    let Ok(mut swept) = SWEPT.lock() else { return false };
    let swept = swept.get_or_insert_with(HashSet::new);
    if swept.len() >= 4096 {
        swept.clear();
    }
    swept.insert(key)
}

/// The writer's pid in a temp name (`.toolhost-tmp-<pid>-<n>-<nanos>`).
fn temp_writer(name: &str) -> Option<i32> {
    name.strip_prefix(TEMP_PREFIX)?.split('-').next()?.parse().ok()
}

fn process_exists(pid: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid) else { return false };
    // EPERM: it exists, owned by someone else.
    !matches!(rustix::process::test_kill_process(pid), Err(rustix::io::Errno::SRCH))
}

/// Removes the crash debris in `dir` (best effort; errors are ignored — it is only cleanup).
/// Returns how many temp files were removed.
pub(crate) fn sweep_stale_temps(dir: &Dir, now: SystemTime) -> usize {
    let Ok(entries) = dir.entries() else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_writer) else { continue };
        if pid == std::process::id() as i32 || process_exists(pid) {
            continue;
        }
        let Ok(metadata) = entry.metadata() else { continue };
        let Ok(modified) = metadata.modified() else { continue };
        let age = now.duration_since(modified.into_std()).unwrap_or(Duration::ZERO);
        if metadata.is_file() && age >= STALE_TEMP_AGE && dir.remove_file(&name).is_ok() {
            removed += 1;
        }
    }
    removed
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

/// fsyncs a directory (opened for reading: cap-std's O_PATH handles are refused with EBADF) so
/// a rename in it survives power loss. Filesystems that cannot sync directories say
/// EINVAL/ENOTSUP; that is tolerated. Anything else (EIO) is a failure.
pub(crate) fn sync_dir_fd(readable: impl AsFd) -> io::Result<()> {
    match rustix::fs::fsync(readable) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOTSUP) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use cap_std::ambient_authority;

    /// A pid that existed a moment ago and no longer does.
    fn dead_pid() -> i32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert!(!process_exists(pid));
        pid
    }

    #[test]
    fn crash_debris_is_swept_only_when_its_writer_is_gone_and_it_is_old() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), ambient_authority()).unwrap();
        let dead = dead_pid();
        let own = std::process::id();
        let names = [
            format!("{TEMP_PREFIX}{dead}-0-00000000"),
            format!("{TEMP_PREFIX}{dead}-7-0badf00d"),
            format!("{TEMP_PREFIX}1-0-00000000"),
            format!("{TEMP_PREFIX}{own}-0-00000000"),
            format!("{TEMP_PREFIX}notapid-0-0"),
            "data.txt".to_owned(),
        ];
        for name in &names {
            std::fs::write(tmp.path().join(name), b"x").unwrap();
        }
        std::fs::create_dir(tmp.path().join(format!("{TEMP_PREFIX}{dead}-9-dir"))).unwrap();

        // Fresh debris stays (its writer might be invisible to us).
        assert_eq!(sweep_stale_temps(&dir, SystemTime::now()), 0);
        let later = SystemTime::now() + STALE_TEMP_AGE + Duration::from_secs(1);
        assert_eq!(sweep_stale_temps(&dir, later), 2);
        let mut left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut want = vec![
            format!("{TEMP_PREFIX}1-0-00000000"),
            format!("{TEMP_PREFIX}{own}-0-00000000"),
            format!("{TEMP_PREFIX}{dead}-9-dir"),
            format!("{TEMP_PREFIX}notapid-0-0"),
            "data.txt".to_owned(),
        ];
        want.sort();
        assert_eq!(left, want);
    }

    #[test]
    fn the_first_write_into_a_directory_sweeps_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), ambient_authority()).unwrap();
        let debris = tmp.path().join(format!("{TEMP_PREFIX}{}-0-00000000", dead_pid()));
        std::fs::write(&debris, b"half a file").unwrap();
        let old = SystemTime::now() - STALE_TEMP_AGE - Duration::from_secs(60);
        std::fs::File::options().write(true).open(&debris).unwrap().set_modified(old).unwrap();
        // A deleted directory of an earlier test may have had this inode: forget them all.
        *SWEPT.lock().unwrap() = None;
        let lock = crate::locks::DirLock::acquire(&dir, Duration::ZERO).unwrap();
        replace(&dir, lock.dir_fd(), OsStr::new("a.txt"), b"new\n", None, || Ok(())).unwrap();
        assert!(!debris.exists(), "the debris of a dead writer survived the first write");
        assert_eq!(std::fs::read(tmp.path().join("a.txt")).unwrap(), b"new\n");
    }
}
