//! Two processes, one file, no lost update: two writers in different processes and sessions read
//! the same file, then change different lines of it at the same moment. Both read the same
//! version, so exactly one change can land; the other call must fail with the typed stale error
//! (`FS_STALE_VERSION`, "re-read the file") — never report success for a change that is gone.
//!
//! Three pairs of processes, 200 rounds each: two `toolhost call edit` processes in two sessions;
//! two `toolhost mcp` servers (edits, then whole-file writes); a `toolhost mcp` server and an
//! editor's `toolhost serve`. After every round the file on disk must hold every change a call
//! reported as made; at the end the workspace holds nothing but the file (no lock or temp files).
#![allow(clippy::unwrap_used)]

use crate::server;

use crate::mcp;

use mcp::Mcp;
use serde_json::{Value, json};
use server::Env;
use std::process::{Command, Stdio};
use toolhost_harness::client::Client;

const ROUNDS: usize = 200;
const FILE: &str = "shared.txt";
const STALE: &str = "FS_STALE_VERSION";

/// One writer: a process that runs tool calls in its own session.
trait Writer: Send {
    /// Runs `tool`; `Ok` when it succeeded, else the error code (`"?"` when there is none).
    fn call(&mut self, tool: &str, arguments: Value) -> Result<(), String>;
}

/// `toolhost call` processes continuing one session.
struct Cli<'a> {
    env: &'a Env,
    session: &'static str,
}

impl Writer for Cli<'_> {
    fn call(&mut self, tool: &str, arguments: Value) -> Result<(), String> {
        let mut command = Command::new(server::binary());
        command
            .args(["call", tool, &arguments.to_string(), "--session", self.session, "--json"])
            .current_dir(&self.env.root)
            .stdin(Stdio::null());
        for (key, value) in self.env.env() {
            command.env(key, value);
        }
        let out = command.output().unwrap();
        let body: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!("toolhost call {tool} printed no JSON: {}", String::from_utf8_lossy(&out.stderr))
        });
        outcome(&body["result"], body.pointer("/result/error/info/code"))
    }
}

/// A `toolhost mcp` server on its own (not attached to an editor).
impl Writer for Mcp {
    fn call(&mut self, tool: &str, arguments: Value) -> Result<(), String> {
        let result = Mcp::call(self, tool, arguments);
        let code = result.pointer("/_meta/toolhost~1error/code").cloned();
        outcome(&result, code.as_ref())
    }
}

/// An editor's `toolhost serve`, calling tools as the editor's panel does.
impl Writer for Client {
    fn call(&mut self, tool: &str, arguments: Value) -> Result<(), String> {
        let body = self.call_tool(tool, arguments).unwrap();
        outcome(&body["result"], body.pointer("/result/error/info/code"))
    }
}

fn outcome(result: &Value, code: Option<&Value>) -> Result<(), String> {
    match result["isError"].as_bool() {
        Some(false) => Ok(()),
        _ => Err(code.and_then(Value::as_str).unwrap_or("?").to_owned()),
    }
}

#[derive(Debug, Clone, Copy)]
enum Change {
    /// `edit` of the writer's own line.
    Edit,
    /// `write` of the whole file as read, with the writer's own line changed.
    Write,
}

/// The file: one line per writer, each a counter only that writer advances.
fn text(counters: [usize; 2]) -> String {
    format!("left {}\nright {}\n", counters[0], counters[1])
}

fn line(side: usize, n: usize) -> String {
    format!("{} {n}", ["left", "right"][side])
}

/// What the rounds saw.
#[derive(Debug, Default)]
struct Tally {
    /// Rounds after which a change some call reported as made was not in the file.
    lost: Vec<usize>,
    /// Failures other than the stale error: `(round, writer, code)`.
    unexpected: Vec<(usize, usize, String)>,
    stale: usize,
    applied: usize,
}

/// `rounds` rounds of: both writers read the file (at once), then both change their own line (at
/// once). Checks the file after every round.
fn run_rounds(env: &Env, writers: [&mut dyn Writer; 2], rounds: usize, change: Change) -> Tally {
    let path = env.root.join(FILE);
    let [left, right] = writers;
    let mut counters = parse(&std::fs::read_to_string(&path).unwrap());
    let mut tally = Tally::default();
    let read = json!({"file_path": FILE});
    for round in 0..rounds {
        let (a, b) = both(left, right, |_, w| w.call("read", read.clone()));
        assert!(a.is_ok() && b.is_ok(), "round {round}: a read failed: {a:?} {b:?}");
        let arguments = |side: usize| match change {
            Change::Edit => json!({
                "file_path": FILE,
                "old_string": line(side, counters[side]),
                "new_string": line(side, counters[side] + 1),
            }),
            Change::Write => {
                let mut mine = counters;
                mine[side] += 1;
                json!({"file_path": FILE, "content": text(mine)})
            }
        };
        let (args_left, args_right) = (arguments(0), arguments(1));
        let tool = match change {
            Change::Edit => "edit",
            Change::Write => "write",
        };
        let (a, b) = both(left, right, |side, w| {
            w.call(tool, if side == 0 { args_left.clone() } else { args_right.clone() })
        });
        for (side, result) in [a, b].into_iter().enumerate() {
            match result {
                Ok(()) => {
                    tally.applied += 1;
                    counters[side] += 1;
                }
                Err(code) if code == STALE => tally.stale += 1,
                Err(code) => tally.unexpected.push((round, side, code)),
            }
        }
        let now = std::fs::read_to_string(&path).unwrap();
        if now != text(counters) {
            tally.lost.push(round);
            // Go on from what the file says, so later rounds are counted on their own.
            counters = parse(&now);
        }
    }
    tally
}

/// Runs `call` for both writers on two threads at once.
fn both<T: Send>(
    left: &mut dyn Writer,
    right: &mut dyn Writer,
    call: impl Fn(usize, &mut dyn Writer) -> T + Sync,
) -> (T, T) {
    std::thread::scope(|scope| {
        let call = &call;
        let a = scope.spawn(move || call(0, left));
        let b = scope.spawn(move || call(1, right));
        (a.join().unwrap(), b.join().unwrap())
    })
}

fn parse(text: &str) -> [usize; 2] {
    let mut counters = [0; 2];
    for (side, row) in text.lines().enumerate().take(2) {
        counters[side] = row.rsplit(' ').next().unwrap().parse().unwrap();
    }
    counters
}

/// No update lost, every failure the stale one, and — since both writers read the same version
/// every round — exactly one change landed per round.
fn assert_no_lost_update(env: &Env, tally: &Tally, rounds: usize) {
    assert!(tally.lost.is_empty(), "lost updates in rounds {:?} ({tally:?})", tally.lost);
    assert!(tally.unexpected.is_empty(), "failures other than {STALE}: {:?}", tally.unexpected);
    assert_eq!(tally.applied, rounds, "one change per round lands: {tally:?}");
    assert_eq!(tally.stale, rounds, "the other is told to read again: {tally:?}");
    // Nothing left behind in the workspace: no lock files, no temp files.
    let mut names: Vec<String> = std::fs::read_dir(&env.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [FILE], "the workspace holds only the file");
}

fn env_with_file() -> Env {
    let env = Env::new();
    env.write(FILE, &text([0, 0]));
    env
}

#[test]
fn two_cli_processes_in_two_sessions_lose_no_edit() {
    let env = env_with_file();
    let mut left = Cli { env: &env, session: "20261206-100000-0000a1" };
    let mut right = Cli { env: &env, session: "20261206-100000-0000b2" };
    let tally = run_rounds(&env, [&mut left, &mut right], ROUNDS, Change::Edit);
    assert_no_lost_update(&env, &tally, ROUNDS);
}

#[test]
fn two_mcp_servers_lose_no_edit_and_no_write() {
    let env = env_with_file();
    let mut left = Mcp::spawn(&env, &["--standalone"]);
    let mut right = Mcp::spawn(&env, &["--standalone"]);
    left.initialize("agent-one");
    right.initialize("agent-two");
    let tally = run_rounds(&env, [&mut left, &mut right], ROUNDS, Change::Edit);
    assert_no_lost_update(&env, &tally, ROUNDS);
    let tally = run_rounds(&env, [&mut left, &mut right], ROUNDS, Change::Write);
    assert_no_lost_update(&env, &tally, ROUNDS);
}

#[test]
fn an_mcp_server_and_the_editors_server_lose_no_edit() {
    let env = env_with_file();
    let mut editor = env.start(json!({}));
    // On its own: attached, its calls would run in the editor's process.
    let mut agent = Mcp::spawn(&env, &["--standalone"]);
    agent.initialize("agent");
    let tally = run_rounds(&env, [&mut editor, &mut agent], ROUNDS, Change::Edit);
    assert_no_lost_update(&env, &tally, ROUNDS);
}
