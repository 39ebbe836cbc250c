//! What a terminal's foreground program is doing, read from `/proc`: whether it waits for input
//! on the terminal, and how often its processes gave up the CPU (so a wait can tell whether the
//! program ran since input was sent). The terminal tools use it here; an execution world's
//! server uses it for the terminals it runs.

use std::os::fd::BorrowedFd;

/// The state of a terminal's foreground process group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TerminalState {
    /// The foreground process group.
    pub pgid: i32,
    /// A member is blocked reading the terminal.
    pub waits_for_input: bool,
    /// How often its members have blocked so far.
    pub switches: u64,
}

/// The foreground group of the terminal whose master side is `master`, and what it does.
pub fn terminal_state(master: BorrowedFd<'_>) -> Option<TerminalState> {
    let pgid = foreground_group(master)?;
    let members = crate::group_members(pgid);
    Some(TerminalState {
        pgid,
        waits_for_input: members.iter().any(|pid| waits_on_terminal(*pid)),
        switches: context_switches(&members),
    })
}

/// Sends `signal` to the process group `pgid` (a terminal's foreground group, say).
pub fn signal_group(pgid: i32, signal: rustix::process::Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

/// The process group in the terminal's foreground, if it can be read.
pub fn foreground_group(master: BorrowedFd<'_>) -> Option<i32> {
    rustix::termios::tcgetpgrp(master).ok().map(|p| p.as_raw_nonzero().get())
}

/// How often these processes have given up the CPU, in total (`/proc/<pid>/status`).
pub fn context_switches(pids: &[i32]) -> u64 {
    pids.iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

/// Reads `/proc/<pid>/syscall`: the process is in `read` on a terminal, or in `select`/`poll`
/// (readline, a REPL) with its stdin a terminal.
pub fn waits_on_terminal(pid: i32) -> bool {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/syscall")) else { return false };
    let mut fields = text.split_whitespace();
    let Some(nr) = fields.next().and_then(|n| n.parse::<i64>().ok()) else { return false };
    let arg0 = fields
        .next()
        .and_then(|a| i64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
        .unwrap_or(-1);
    let is_tty = |fd: i64| {
        std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
            .is_ok_and(|p| p.starts_with("/dev/pts") || p.starts_with("/dev/tty"))
    };
    #[cfg(target_arch = "x86_64")]
    let (read, waiters): (i64, &[i64]) = (0, &[7, 23, 270, 271]);
    #[cfg(target_arch = "aarch64")]
    let (read, waiters): (i64, &[i64]) = (63, &[72, 73]);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let (read, waiters): (i64, &[i64]) = (-1, &[]);
    (nr == read && is_tty(arg0)) || (waiters.contains(&nr) && is_tty(0))
}
