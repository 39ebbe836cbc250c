//! A remote host made on this machine for a test: Debian's `sshd` in a network namespace the
//! test creates (its own address on a veth pair), key-only, with a mount namespace of its own in
//! which the "remote" workspace (and a second folder) is a tmpfs filled at start — so the folder exists with its files
//! only on the remote side, and anything read through the world provably came from there.
//! Everything is torn down on drop: sshd's process group, the namespace, the veth pair.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The programs this needs; a missing one fails the test (the test command installs them).
const PROGRAMS: [&str; 5] = ["/usr/sbin/sshd", "ssh", "ssh-keygen", "ip", "unshare"];

pub struct SshHost {
    namespace: String,
    host_link: String,
    sshd: Child,
    /// `root@<address>`.
    pub target: String,
    /// The remote workspace (empty on this side).
    pub remote_root: PathBuf,
    /// A folder that exists only on the remote side too (empty here), for what is put there.
    pub remote_only: PathBuf,
    /// What ssh needs besides the target: key, no config, no known-hosts file.
    pub ssh_options: Vec<String>,
    _dir: tempfile::TempDir,
}

fn run(command: &mut Command) {
    let shown = format!("{command:?}");
    let out = command.output().unwrap_or_else(|e| panic!("{shown}: {e}"));
    assert!(out.status.success(), "{shown}: {}", String::from_utf8_lossy(&out.stderr));
}

fn which(program: &str) -> bool {
    if program.starts_with('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
}

impl SshHost {
    /// Starts the host; `seed` is copied into the remote workspace (its files exist there only).
    pub fn start(seed: &Path) -> SshHost {
        for program in PROGRAMS {
            assert!(
                which(program),
                "{program} is missing: `cargo xtask test` installs openssh-server"
            );
        }
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}{n}", std::process::id() % 100_000);
        let namespace = format!("thw{tag}");
        let (host_link, ns_link) = (format!("thwh{tag}"), format!("thwn{tag}"));
        // A /30 of 10.213.0.0/16 per host, from the pid and a counter: tests of other processes
        // running at once get other subnets.
        let net = (std::process::id() * 7 + n) % 16_000;
        let (a, b) = (net / 64, (net % 64) * 4);
        let (host_ip, remote_ip) =
            (format!("10.213.{a}.{}", b + 1), format!("10.213.{a}.{}", b + 2));

        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for key in ["host_key", "client_key"] {
            run(Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(key)));
        }
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        let remote_root = d.join("remote-ws");
        std::fs::create_dir(&remote_root).unwrap();
        let remote_only = d.join("remote-only");
        std::fs::create_dir(&remote_only).unwrap();
        let config = d.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port 22\nListenAddress {remote_ip}\nHostKey {}\nAuthorizedKeysFile {}\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile {}\n\
                 LogLevel ERROR\nSetEnv PATH={}\n",
                d.join("host_key").display(),
                d.join("authorized_keys").display(),
                d.join("sshd.pid").display(),
                // The remote has the programs the tests installed (language servers), as a
                // build machine has its toolchain.
                std::env::var("PATH").unwrap_or_default(),
            ),
        )
        .unwrap();

        run(Command::new("ip").args(["netns", "add", &namespace]));
        let mut host = SshHost {
            namespace: namespace.clone(),
            host_link: host_link.clone(),
            sshd: Command::new("true").spawn().unwrap(),
            target: format!("root@{remote_ip}"),
            remote_root: remote_root.clone(),
            remote_only: remote_only.clone(),
            ssh_options: vec![
                "-i".into(),
                d.join("client_key").to_string_lossy().into_owned(),
                "-F".into(),
                "/dev/null".into(),
                "-o".into(),
                "StrictHostKeyChecking=no".into(),
                "-o".into(),
                "UserKnownHostsFile=/dev/null".into(),
                "-o".into(),
                "LogLevel=ERROR".into(),
                "-o".into(),
                "ConnectTimeout=10".into(),
            ],
            _dir: dir,
        };
        run(Command::new("ip")
            .args(["link", "add", &host_link, "type", "veth", "peer", "name", &ns_link]));
        run(Command::new("ip").args(["link", "set", &ns_link, "netns", &namespace]));
        run(Command::new("ip").args(["addr", "add", &format!("{host_ip}/30"), "dev", &host_link]));
        run(Command::new("ip").args(["link", "set", &host_link, "up"]));
        let in_ns = |args: &[&str]| {
            let mut command = Command::new("ip");
            command.args(["netns", "exec", &namespace]).args(args);
            command
        };
        run(&mut in_ns(&["ip", "addr", "add", &format!("{remote_ip}/30"), "dev", &ns_link]));
        run(&mut in_ns(&["ip", "link", "set", &ns_link, "up"]));
        run(&mut in_ns(&["ip", "link", "set", "lo", "up"]));
        // The remote's workspace: a tmpfs over the (empty) folder, in sshd's mount namespace
        // only, filled from the seed; then sshd in the foreground, in a process group of its own.
        let script = format!(
            "set -e; mount -t tmpfs tmpfs '{root}'; mount -t tmpfs tmpfs '{only}'; \
             cp -a '{seed}/.' '{root}/'; mkdir -p /run/sshd; exec /usr/sbin/sshd -D -e -f '{config}'",
            root = remote_root.display(),
            only = remote_only.display(),
            seed = seed.display(),
            config = config.display(),
        );
        let mut sshd =
            in_ns(&["unshare", "--mount", "--propagation", "private", "sh", "-c", &script]);
        std::os::unix::process::CommandExt::process_group(&mut sshd, 0);
        host.sshd = sshd.stdin(Stdio::null()).stdout(Stdio::null()).spawn().unwrap();
        host.wait_until_ready();
        host
    }

    /// An ssh command to the host (options and target set).
    pub fn ssh(&self) -> Command {
        let mut command = Command::new("ssh");
        command.args(["-T", "-o", "BatchMode=yes"]).args(&self.ssh_options).arg(&self.target);
        command
    }

    fn wait_until_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = self.sshd.try_wait() {
                panic!("sshd exited at start: {status}");
            }
            let out = self.ssh().args(["--", "echo", "ok"]).stdin(Stdio::null()).output().unwrap();
            if out.status.success() && out.stdout == b"ok\n" {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "sshd did not answer: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs `command` on the remote host and returns its stdout.
    pub fn remote(&self, command: &str) -> String {
        let out = self.ssh().args(["--", command]).stdin(Stdio::null()).output().unwrap();
        assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for SshHost {
    fn drop(&mut self) {
        let pgid = rustix::process::Pid::from_raw(self.sshd.id() as i32);
        if let Some(pgid) = pgid {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
        let _ = self.sshd.wait();
        // Connections sshd forked live in the namespace too: end them before it goes.
        let _ = Command::new("ip").args(["netns", "pids", &self.namespace]).output().map(|out| {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = Command::new("kill").args(["-KILL", pid]).status();
            }
        });
        let _ = Command::new("ip").args(["link", "del", &self.host_link]).status();
        let _ = Command::new("ip").args(["netns", "del", &self.namespace]).status();
    }
}
