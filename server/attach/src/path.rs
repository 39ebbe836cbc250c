//! Where a workspace's attach socket lives, and its folder's permissions.

use std::path::{Path, PathBuf};

/// Longest socket path the kernel accepts (`sun_path` is 108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 100;

/// The attach socket of the workspace at `root`: `<state dir>/toolhost/run/<workspace key>.sock`
/// (whatever session directory either side logs to, so an agent finds the editor of its
/// workspace), or a short name in a private folder of /tmp when that path is too long for a
/// socket address or there is no state directory.
pub fn socket_path(root: &Path) -> PathBuf {
    let key = toolhost_host::session::workspace_key_of(root);
    let uid = rustix::process::getuid().as_raw();
    let fallback = PathBuf::from(format!("/tmp/toolhost-{uid}"));
    let base = toolhost_session::state_dir()
        .and_then(|sessions| sessions.parent().map(|state| state.join("run")))
        .unwrap_or_else(|| fallback.clone());
    let path = base.join(format!("{key}.sock"));
    if path.as_os_str().len() <= MAX_SOCKET_PATH {
        return path;
    }
    // Still unique to the long path, short enough for `sun_path`.
    fallback.join(format!("{}.sock", toolhost_session::workspace_key(&path)))
}

/// Creates the socket's folder, private to the user.
pub fn prepare_dir(socket: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let Some(dir) = socket.parent() else { return Ok(()) };
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}
