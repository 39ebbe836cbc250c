//! How a world's exec-server is started: a command whose stdin and stdout speak the protocol.
//! Over ssh that is `ssh -T <host> <toolhost> exec-server --root <root>` with the person's own ssh
//! configuration and agent — no port is opened on either side.

use std::path::Path;

/// The command that starts a world's exec-server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    argv: Vec<String>,
}

/// `value` quoted for the remote shell ssh hands its command line to.
fn shell_quoted(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

impl Launch {
    /// Any command (program first).
    pub fn command(argv: Vec<String>) -> Self {
        Launch { argv }
    }

    /// `program exec-server --root <root>` on this machine.
    pub fn local(program: &Path, root: &Path) -> Self {
        Launch {
            argv: vec![
                program.to_string_lossy().into_owned(),
                "exec-server".to_owned(),
                "--root".to_owned(),
                root.to_string_lossy().into_owned(),
            ],
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
        Launch { argv }
    }

    /// The command line.
    pub fn argv(&self) -> &[String] {
        &self.argv
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
