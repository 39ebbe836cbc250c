//! The guard: one helper process per toolhost process that kills every child group still alive
//! when toolhost goes away — however it goes away, SIGKILL included, when nothing in toolhost
//! runs any more.
//!
//! Why: the parent-death signal reaches only a direct child. A command's own children
//! (`sleep 300 &`), a terminal's jobs, a language server's helpers would survive a killed toolhost,
//! adopted by an init that may never stop them.
//!
//! How: the guard is forked once and holds one end of a `SOCK_SEQPACKET` socket pair; toolhost
//! holds the other end, close-on-exec, so no program it starts keeps it. When the kernel closes
//! toolhost's end (toolhost died or exited), the guard's `recv` reads end-of-file; it sends SIGKILL
//! to every registered process group and to every process of a registered session (a terminal's
//! interactive shell puts each job in a group of its own), then exits.
//!
//! - **Registering costs one `send`**, made by the child itself between fork and exec
//!   ([`register_self`]): there is no moment in which a started program could fork unguarded.
//!   toolhost unregisters a group once every member is reaped ([`forget`]), so a group id the
//!   kernel hands out again is never killed by mistake.
//! - **The guard is forked, not executed**: there is no binary to find, so any program linking this
//!   crate (toolhost, its tests, benches) is guarded alike. After the fork it runs only raw system
//!   calls on stack memory — no allocation, no lock — as the child of a multi-threaded process
//!   must. It closes every inherited descriptor first (a copy of a pipe's write end would keep a
//!   child from ever seeing end-of-file), leaves toolhost's session (a terminal's Ctrl-C or hangup
//!   is not for it) and ignores the polite signals (SIGTERM, SIGINT, SIGHUP, …): it lives exactly
//!   as long as toolhost.
//! - **A guard that died is replaced** at the next spawn (and every live group registered again);
//!   its socket takes over the same descriptor number, which children forked meanwhile captured.

use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use rustix::process::{Pid, Signal};
use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

/// A message: operation, three bytes of padding, the pid (native byte order: both ends are this
/// process's image).
const MESSAGE_LEN: usize = 8;
const ADD_GROUP: u8 = 1;
const ADD_SESSION: u8 = 2;
const REMOVE: u8 = 3;

/// How many groups the guard tracks at once (8 bytes each, on its stack); toolhost runs a few
/// dozen at most.
const CAPACITY: usize = 2048;

/// The descriptor number of toolhost's end, `-1` before the first spawn. It never changes once
/// set: a replacement guard's socket is duplicated onto it.
static FD: AtomicI32 = AtomicI32::new(-1);

/// toolhost's end of the socket (owning the number in [`FD`]) and a pidfd of the guard.
struct Running {
    socket: OwnedFd,
    /// Names the guard itself, never a later process that got its pid (`None` before Linux 5.3).
    pidfd: Option<OwnedFd>,
}

static GUARD: Mutex<Option<Running>> = Mutex::new(None);

/// The declarations of the C library functions this module calls that rustix does not wrap
/// (`fork` must go through the C library, which keeps its own state consistent across it).
#[allow(unsafe_code)]
mod sys {
    use std::ffi::{c_char, c_int, c_uint};

    unsafe extern "C" {
        pub fn fork() -> c_int;
        pub fn _exit(status: c_int) -> !;
        pub fn dup2(old: c_int, new: c_int) -> c_int;
        pub fn close(fd: c_int) -> c_int;
        pub fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int;
        pub fn signal(signum: c_int, handler: usize) -> usize;
        pub fn prctl(option: c_int, ...) -> c_int;
    }

    pub const SIG_IGN: usize = 1;
    pub const PR_SET_NAME: c_int = 15;
    pub const NAME: &[u8] = b"toolhost-guard\0";

    pub fn name_ptr() -> *const c_char {
        NAME.as_ptr().cast()
    }
}

/// Makes sure a guard runs; returns the descriptor children register through (`None` when no
/// guard can be started: spawning goes on, unguarded as before). `live` lists the groups to
/// register again when a guard had to be replaced: `(pgid, leads a session)`.
pub(crate) fn arm(live: impl FnOnce() -> Vec<(Pid, bool)>) -> Option<RawFd> {
    let mut guard = GUARD.lock().ok()?;
    if let Some(running) = guard.as_ref().filter(|running| !exited(running)) {
        return Some(running.socket.as_raw_fd());
    }
    let (mut socket, pidfd) = match start() {
        Ok(started) => started,
        Err(err) => {
            eprintln!("toolhost: cannot start the process guard: {err}");
            return guard.as_ref().map(|r| r.socket.as_raw_fd());
        }
    };
    let replaced = guard.take();
    if let Some(mut old) = replaced {
        // Keep the number: a child forked meanwhile may have captured it.
        if rustix::io::dup3(&socket, &mut old.socket, rustix::io::DupFlags::CLOEXEC).is_ok() {
            socket = old.socket;
        }
        for (pgid, session) in live() {
            send(socket.as_fd(), if session { ADD_SESSION } else { ADD_GROUP }, pgid);
        }
    }
    FD.store(socket.as_raw_fd(), Ordering::SeqCst);
    let fd = socket.as_raw_fd();
    *guard = Some(Running { socket, pidfd });
    Some(fd)
}

/// Whether the guard is gone (reaping it if it is a zombie).
fn exited(running: &Running) -> bool {
    use rustix::io::Errno;
    use rustix::process::{WaitId, WaitIdOptions, waitid};
    // Without a pidfd it is taken to live: its pid may name another child of ours by now.
    let Some(pidfd) = &running.pidfd else { return false };
    match waitid(WaitId::PidFd(pidfd.as_fd()), WaitIdOptions::EXITED | WaitIdOptions::NOHANG) {
        Ok(None) => false,
        // It exited (reaped just now), or something else reaped it (`reap_all`'s `wait`).
        Ok(Some(_)) | Err(Errno::CHILD) => true,
        Err(_) => false,
    }
}

/// Registers the calling process (a child between fork and exec, leading its group, or its
/// session when `session`) with the guard behind `fd`. Only a system call: safe after fork.
pub(crate) fn register_self(fd: RawFd, session: bool) {
    // SAFETY (borrow_raw): `fd` is toolhost's end of the socket, which lives as long as the
    // process and was inherited by this child; it is only borrowed for one `send`.
    #[allow(unsafe_code)]
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    send(fd, if session { ADD_SESSION } else { ADD_GROUP }, rustix::process::getpid());
}

/// Unregisters `pgid` once none of its members is left (nothing to kill; its id may be reused).
pub(crate) fn forget(pgid: Pid) {
    let fd = FD.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY (borrow_raw): the number in `FD` always refers to toolhost's end of the socket,
        // which is never closed (a replacement is duplicated onto it).
        #[allow(unsafe_code)]
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        send(fd, REMOVE, pgid);
    }
}

/// One message, never blocking and never raising SIGPIPE (the guard may be gone; registering is
/// best effort, like the parent-death signal it completes).
fn send(fd: BorrowedFd<'_>, op: u8, pid: Pid) {
    use rustix::net::SendFlags;
    let mut message = [0u8; MESSAGE_LEN];
    message[0] = op;
    message[4..].copy_from_slice(&pid.as_raw_nonzero().get().to_ne_bytes());
    let _ = rustix::net::send(fd, &message, SendFlags::NOSIGNAL | SendFlags::DONTWAIT);
}

/// Forks the guard; returns toolhost's end of its socket and a pidfd of the guard.
fn start() -> std::io::Result<(OwnedFd, Option<OwnedFd>)> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType, socketpair};
    let (ours, theirs) =
        socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)?;
    let theirs_raw = theirs.as_raw_fd();
    // SAFETY: the child runs `guard_main`, which makes only raw system calls on its own stack
    // and never returns (it ends in `_exit`), as is required after fork in a multi-threaded
    // process.
    #[allow(unsafe_code)]
    let pid = unsafe { sys::fork() };
    if pid == 0 {
        guard_main(theirs_raw);
    }
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    drop(theirs);
    let pid = Pid::from_raw(pid).ok_or_else(|| std::io::Error::other("fork gave pid 0"))?;
    // The guard is an unreaped child here, so its pid cannot name anything else yet.
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok();
    Ok((ours, pidfd))
}

/// The guard's descriptor for its end of the socket, after it closed everything else.
const CONTROL: RawFd = 3;

/// A registered group: its id, and whether it is also a session id.
#[derive(Clone, Copy)]
struct Entry {
    pgid: i32,
    session: bool,
}

/// The guard's life, in the forked child: set up, collect registrations until end-of-file, kill,
/// exit.
#[allow(unsafe_code)]
fn guard_main(control: RawFd) -> ! {
    // Out of toolhost's session and process group: terminal signals and group kills aimed at
    // toolhost's job are not for the guard.
    let _ = rustix::process::setsid();
    // Holds no directory busy (a workspace on a mount that is to be unmounted).
    let _ = rustix::process::chdir(c"/");
    // SAFETY: plain system calls through the C library on descriptors this process owns and
    // static strings; none allocates or takes a lock.
    unsafe {
        for signal in [
            Signal::HUP,
            Signal::INT,
            Signal::QUIT,
            Signal::TERM,
            Signal::PIPE,
            Signal::USR1,
            Signal::USR2,
            Signal::ALARM,
        ] {
            sys::signal(signal.as_raw(), sys::SIG_IGN);
        }
        sys::prctl(sys::PR_SET_NAME, sys::name_ptr());
        if control != CONTROL && sys::dup2(control, CONTROL) < 0 {
            sys::_exit(1);
        }
        if let Ok(null) = rustix::fs::open(
            c"/dev/null",
            rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ) {
            // Not closed on drop: it may be one of the standard descriptors it is put on; when
            // above the control descriptor, `close_range` below closes it.
            let null = rustix::fd::IntoRawFd::into_raw_fd(null);
            for stdio in 0..3 {
                if null != stdio {
                    sys::dup2(null, stdio);
                }
            }
        }
        if sys::close_range(CONTROL as u32 + 1, u32::MAX, 0) != 0 {
            // Kernels before 5.9: one by one, as far as descriptors usually go.
            for fd in CONTROL + 1..65_536 {
                sys::close(fd);
            }
        }
    }
    // SAFETY: CONTROL was just made this process's end of the socket and stays open until exit.
    let control = unsafe { BorrowedFd::borrow_raw(CONTROL) };
    let mut entries = [Entry { pgid: 0, session: false }; CAPACITY];
    let mut len = 0;
    let mut message = [0u8; MESSAGE_LEN];
    loop {
        match rustix::net::recv(control, &mut message[..], rustix::net::RecvFlags::empty()) {
            Ok((0, _)) => break,
            Ok((MESSAGE_LEN, _)) => {
                let mut pid = [0u8; 4];
                pid.copy_from_slice(&message[4..]);
                let pgid = i32::from_ne_bytes(pid);
                match message[0] {
                    ADD_GROUP | ADD_SESSION => {
                        if len == CAPACITY {
                            len = compact(&mut entries, len);
                        }
                        if len < CAPACITY {
                            entries[len] = Entry { pgid, session: message[0] == ADD_SESSION };
                            len += 1;
                        }
                    }
                    REMOVE => {
                        if let Some(i) = entries[..len].iter().position(|e| e.pgid == pgid) {
                            entries[i] = entries[len - 1];
                            len -= 1;
                        }
                    }
                    _ => {}
                }
            }
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    kill_everything(&entries[..len]);
    // SAFETY: ends this process without running anything of the parent's (no destructors, no
    // exit handlers).
    unsafe { sys::_exit(0) }
}

/// Drops the entries of groups that no longer exist (a missed unregistration); sessions stay (their
/// leader's group may be gone while jobs in other groups live on). Returns the new length.
fn compact(entries: &mut [Entry], mut len: usize) -> usize {
    let mut i = 0;
    while i < len {
        let e = entries[i];
        let gone = !e.session
            && Pid::from_raw(e.pgid).is_none_or(|pgid| {
                rustix::process::test_kill_process_group(pgid) == Err(rustix::io::Errno::SRCH)
            });
        if gone {
            entries[i] = entries[len - 1];
            len -= 1;
        } else {
            i += 1;
        }
    }
    len
}

/// SIGKILL to every registered group — one kill reaches every member atomically, the kernel does
/// not let a fork escape it — then to every live process of a registered session, scanning
/// `/proc` until none is left (bounded: a process that cannot die is not waited for forever).
fn kill_everything(entries: &[Entry]) {
    for e in entries {
        if let Some(pgid) = Pid::from_raw(e.pgid) {
            let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
        }
    }
    if !entries.iter().any(|e| e.session) {
        return;
    }
    for _ in 0..200 {
        if !kill_session_members(entries) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// One pass over `/proc`: SIGKILL to each live process (and its group) whose session is a
/// registered one. Whether any was found. Stack buffers only.
fn kill_session_members(entries: &[Entry]) -> bool {
    use rustix::fs::{Mode, OFlags, RawDir, open, openat};
    let Ok(proc_dir) =
        open(c"/proc", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
    else {
        return false;
    };
    let mut found = false;
    let mut listing = [MaybeUninit::<u8>::uninit(); 8192];
    let mut dir = RawDir::new(&proc_dir, &mut listing);
    while let Some(entry) = dir.next() {
        let Ok(entry) = entry else { break };
        let name = entry.file_name().to_bytes();
        if name.is_empty() || !name.iter().all(u8::is_ascii_digit) || name.len() > 10 {
            continue;
        }
        // "<pid>/stat" with its terminating NUL, on the stack.
        let mut path = [0u8; 24];
        path[..name.len()].copy_from_slice(name);
        path[name.len()..name.len() + 6].copy_from_slice(b"/stat\0");
        let Ok(path) = CStr::from_bytes_with_nul(&path[..name.len() + 6]) else { continue };
        let Ok(file) = openat(&proc_dir, path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
        else {
            continue;
        };
        let mut stat = [0u8; 1024];
        let Ok(n) = rustix::io::read(&file, &mut stat[..]) else { continue };
        let Some(fields) = StatFields::parse(&stat[..n]) else { continue };
        if fields.state == b'Z' || !entries.iter().any(|e| e.session && e.pgid == fields.session) {
            continue;
        }
        found = true;
        if let Some(pgid) = Pid::from_raw(fields.pgrp) {
            let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
        }
        if let Some(pid) = parse_i32(name).and_then(Pid::from_raw) {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
    }
    found
}

/// The fields of `/proc/<pid>/stat` the guard needs: `pid (comm) state ppid pgrp session …`
/// (comm may hold spaces and parentheses, so fields are counted after the last `)`).
struct StatFields {
    state: u8,
    pgrp: i32,
    session: i32,
}

impl StatFields {
    fn parse(stat: &[u8]) -> Option<StatFields> {
        let close = stat.iter().rposition(|&b| b == b')')?;
        let mut fields = stat[close + 1..].split(|&b| b == b' ').filter(|f| !f.is_empty());
        let state = *fields.next()?.first()?;
        let _ppid = fields.next()?;
        let pgrp = parse_i32(fields.next()?)?;
        let session = parse_i32(fields.next()?)?;
        Some(StatFields { state, pgrp, session })
    }
}

/// A non-negative decimal number, without allocating.
fn parse_i32(digits: &[u8]) -> Option<i32> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0i32, |n, &d| {
        if d.is_ascii_digit() { n.checked_mul(10)?.checked_add(i32::from(d - b'0')) } else { None }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        let stat = b"4242 (a (b) c) S 1 4240 4200 0 -1 4194560 ...\n";
        let fields = StatFields::parse(stat).unwrap_or_else(|| panic!("unparsed"));
        assert_eq!((fields.state, fields.pgrp, fields.session), (b'S', 4240, 4200));
        assert_eq!(parse_i32(b"123"), Some(123));
        assert_eq!(parse_i32(b"12a"), None);
        assert_eq!(parse_i32(b""), None);
        assert_eq!(parse_i32(b"99999999999"), None);
    }
}
