//! How a world's exec-server is started: a command whose stdin and stdout speak the protocol.
//! Over ssh that is `ssh -T <host> <toolhost> exec-server --root <root>` with the person's own ssh
//! configuration and agent — no port is opened on either side. In a container it is `podman run
//! -i` (or docker's) of an image the person names, with this toolhost mounted read-only and the
//! workspace mounted at `/workspace`, no network, and a name of its own so the container can be
//! removed when the world is done with — whatever happened to the client that started it.

use std::path::Path;

/// The command that starts a world's exec-server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    argv: Vec<String>,
    /// Run after the connection ends (and before a reconnect): removes what the launch left,
    /// e.g. the container.
    cleanup: Option<Vec<String>>,
    /// Before the first connection: make sure the remote has this toolhost (see [`Provision`]).
    provision: Option<Provision>,
}

/// Putting this toolhost on an ssh host: found there under a folder named after its version and
/// the hash of its bytes, or copied there once through ssh (to a temporary name, then renamed,
/// so a cut copy is never run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provision {
    /// `ssh -T -o BatchMode=yes <options> <host> --`: what runs a remote shell command.
    pub ssh: Vec<String>,
    pub local_binary: std::path::PathBuf,
    /// The binary's path on the remote (relative paths are under the remote home).
    pub remote_binary: String,
}

/// The folder under the remote home an ssh world's toolhost is kept in.
pub const REMOTE_CACHE: &str = ".cache/toolhost";

/// `<version>-<first 16 hex digits of the sha256 of the binary>`: a rebuilt binary of the same
/// version gets a folder of its own.
pub fn binary_tag(binary: &Path) -> std::io::Result<String> {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    let mut file = std::fs::File::open(binary)?;
    std::io::copy(&mut file, &mut hasher)?;
    let digest = hex::encode(hasher.finalize());
    Ok(format!("{}-{}", env!("CARGO_PKG_VERSION"), &digest[..16]))
}

/// A container world: which engine, which image, what is mounted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerSpec {
    /// `podman` or `docker` (see [`container_engine`]).
    pub engine: String,
    pub image: String,
    /// The folder mounted at `/workspace` (the world's root).
    pub workspace: std::path::PathBuf,
    /// This toolhost, mounted read-only into the container to run the exec-server.
    pub binary: std::path::PathBuf,
    /// The container's name (unique per session).
    pub name: String,
    /// More `run` options, before the image (runtime, ulimits, …).
    pub options: Vec<String>,
}

/// Where the container sees the workspace.
pub const CONTAINER_ROOT: &str = "/workspace";
/// Where the container sees toolhost.
const CONTAINER_BINARY: &str = "/opt/toolhost/toolhost";

/// The container engine installed here: podman when it is on PATH, else docker.
pub fn container_engine() -> Option<&'static str> {
    let on_path = |program: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
    };
    ["podman", "docker"].into_iter().find(|engine| on_path(engine))
}

/// `value` quoted for the remote shell ssh hands its command line to.
pub(crate) fn shell_quoted(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

impl Launch {
    /// Any command (program first).
    pub fn command(argv: Vec<String>) -> Self {
        Launch { argv, cleanup: None, provision: None }
    }

    /// `program exec-server --root <root>` on this machine.
    /// An exec-server already listening on a loopback websocket (`url`, `ws://127.0.0.1:<port>`),
    /// reached through this toolhost as a stdio bridge (`exec-server --connect`) with the token
    /// the server wrote to `token_file`.
    pub fn websocket(program: &Path, url: &str, token_file: &Path) -> Self {
        Launch {
            argv: vec![
                program.to_string_lossy().into_owned(),
                "exec-server".to_owned(),
                "--connect".to_owned(),
                url.to_owned(),
                "--token-file".to_owned(),
                token_file.to_string_lossy().into_owned(),
            ],
            cleanup: None,
            provision: None,
        }
    }

    pub fn local(program: &Path, root: &Path) -> Self {
        Launch {
            argv: vec![
                program.to_string_lossy().into_owned(),
                "exec-server".to_owned(),
                "--root".to_owned(),
                root.to_string_lossy().into_owned(),
            ],
            cleanup: None,
            provision: None,
        }
    }

    /// The exec-server on `host` over ssh: `remote_program` there, serving `root` there.
    /// `options` go to ssh before the host (`-p`, `-i`, `-F`, `-o …`). Batch mode: a password
    /// prompt would hang an editor, so a host that needs one fails instead.
    pub fn ssh(host: &str, root: &str, remote_program: &str, options: &[String]) -> Self {
        let mut argv =
            vec!["ssh".to_owned(), "-T".to_owned(), "-o".to_owned(), "BatchMode=yes".to_owned()];
        argv.extend(options.iter().cloned());
        argv.extend([
            host.to_owned(),
            "--".to_owned(),
            format!("{} exec-server --root {}", shell_quoted(remote_program), shell_quoted(root)),
        ]);
        Launch { argv, cleanup: None, provision: None }
    }

    /// As [`Launch::ssh`] with this toolhost (`local_binary`) put on the host first: kept under
    /// `cache` (default [`REMOTE_CACHE`], relative to the remote home) in a folder named by
    /// [`binary_tag`], copied there through ssh on first use.
    pub fn ssh_provisioned(
        host: &str,
        root: &str,
        local_binary: &Path,
        options: &[String],
        cache: Option<&str>,
    ) -> std::io::Result<Self> {
        let tag = binary_tag(local_binary)?;
        let remote_binary = format!("{}/{tag}/toolhost", cache.unwrap_or(REMOTE_CACHE));
        let mut launch = Launch::ssh(host, root, &remote_binary, options);
        let mut ssh =
            vec!["ssh".to_owned(), "-T".to_owned(), "-o".to_owned(), "BatchMode=yes".to_owned()];
        ssh.extend(options.iter().cloned());
        ssh.extend([host.to_owned(), "--".to_owned()]);
        launch.provision =
            Some(Provision { ssh, local_binary: local_binary.to_path_buf(), remote_binary });
        Ok(launch)
    }

    /// The exec-server in a container of `spec.image`: the workspace mounted read-write at
    /// [`CONTAINER_ROOT`], toolhost read-only, no network, removed (`rm -f`) when done.
    pub fn container(spec: &ContainerSpec) -> Self {
        let mut argv = vec![
            spec.engine.clone(),
            "run".to_owned(),
            "--rm".to_owned(),
            "-i".to_owned(),
            "--name".to_owned(),
            spec.name.clone(),
            "--network".to_owned(),
            "none".to_owned(),
            "-v".to_owned(),
            format!("{}:{CONTAINER_ROOT}", spec.workspace.display()),
            "-v".to_owned(),
            format!("{}:{CONTAINER_BINARY}:ro", spec.binary.display()),
        ];
        argv.extend(spec.options.iter().cloned());
        argv.extend([
            spec.image.clone(),
            CONTAINER_BINARY.to_owned(),
            "exec-server".to_owned(),
            "--root".to_owned(),
            CONTAINER_ROOT.to_owned(),
        ]);
        let cleanup =
            Some(vec![spec.engine.clone(), "rm".to_owned(), "-f".to_owned(), spec.name.clone()]);
        Launch { argv, cleanup, provision: None }
    }

    /// The command line.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// What must be done before the first connection, if anything.
    pub fn provision(&self) -> Option<&Provision> {
        self.provision.as_ref()
    }

    /// What removes what the launch left behind, if anything.
    pub fn cleanup(&self) -> Option<&[String]> {
        self.cleanup.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ssh_launch_quotes_what_the_remote_shell_reads() {
        let launch =
            Launch::ssh("box", "/srv/it's here", "toolhost", &["-p".into(), "2222".into()]);
        assert_eq!(
            launch.argv(),
            [
                "ssh",
                "-T",
                "-o",
                "BatchMode=yes",
                "-p",
                "2222",
                "box",
                "--",
                r"'toolhost' exec-server --root '/srv/it'\''s here'"
            ]
        );
    }
}
