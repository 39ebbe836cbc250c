//! `toolhost world check` and `toolhost world run -- <command>`: reach the execution world
//! `[world]` configures (ssh or a container) — check that it answers and how fast, or run a
//! command there with its output streamed here and its exit code returned.

use super::{Common, Failure, workspace_root};
use std::io::Write as _;
use std::time::Instant;
use tokio_util::sync::CancellationToken;
use toolhost_host::world_config::{WorldKind, WorldSettings};
use toolhost_protocol::world::{OutputStream, RunParams, SpawnParams};
use toolhost_world::{ProcessEvent, WorldClient, WorldError};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Connect, and print the world's root, its toolhost and the round trip of a request.
    Check,
    /// Run a command in the world's root there; its output streams here, its exit code is ours.
    Run {
        /// The program and its arguments (after `--`).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
}

fn failure(err: &WorldError) -> Failure {
    Failure::env(format!("{} ({})", err, err.code()))
}

pub async fn run(args: Args) -> Result<u8, Failure> {
    let root = workspace_root(&args.common)?;
    let config = toolhost_host::load_config(&root).map_err(|e| Failure::env(e.to_string()))?;
    for warning in config.warnings.iter().filter(|w| !w.starts_with("[world]:")) {
        eprintln!("toolhost: warning: {warning}");
    }
    let launch = config.world.launch(&root).map_err(Failure::usage)?;
    let client = WorldClient::new(launch);
    let code = match args.action {
        Action::Check => check(&client, &config.world).await,
        Action::Run { command } => run_command(&client, command).await,
    };
    client.disconnect().await;
    code
}

async fn check(client: &WorldClient, world: &WorldSettings) -> Result<u8, Failure> {
    let started = Instant::now();
    let hello = client.hello().await.map_err(|e| failure(&e))?;
    let connected = started.elapsed();
    let mut trips = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        client.resolve(".").await.map_err(|e| failure(&e))?;
        trips.push(started.elapsed());
    }
    trips.sort();
    let uname = RunParams {
        argv: ["uname", "-srm"].map(str::to_owned).to_vec(),
        cwd: None,
        stdin: None,
        timeout_ms: Some(10_000),
    };
    let system = client.run(&uname, &CancellationToken::new()).await.map_err(|e| failure(&e))?;
    let system = toolhost_world::bytes_of(&system.stdout).map_err(|e| failure(&e))?;
    let system = String::from_utf8_lossy(&system).trim().to_owned();
    let kind = match world.kind {
        WorldKind::Local => "local",
        WorldKind::Ssh => "ssh",
        WorldKind::Container => "container",
        WorldKind::Websocket => "websocket",
    };
    println!("world: {kind}");
    println!("root: {}", hello.root);
    println!("toolhost there: {} (protocol {})", hello.toolhost, hello.version);
    println!("system: {system}");
    println!(
        "connected in {:.0} ms; a request takes {:.2} ms (median of 20)",
        connected.as_secs_f64() * 1e3,
        trips[10].as_secs_f64() * 1e3
    );
    if client.copies() > 0 {
        println!("this toolhost was copied to the host");
    }
    Ok(0)
}

async fn run_command(client: &WorldClient, command: Vec<String>) -> Result<u8, Failure> {
    let process = client.spawn(&SpawnParams { argv: command, ..SpawnParams::default() }).await;
    let mut process = process.map_err(|e| failure(&e))?;
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    let mut signalled = false;
    loop {
        let event = tokio::select! {
            event = process.next() => event,
            _ = &mut interrupted, if !signalled => {
                signalled = true;
                let _ = client.signal(process.id, "INT").await;
                continue;
            }
        };
        match event {
            Some(ProcessEvent::Output(OutputStream::Stdout, bytes)) => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(&bytes).and_then(|()| out.flush());
            }
            Some(ProcessEvent::Output(OutputStream::Stderr, bytes)) => {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(&bytes).and_then(|()| err.flush());
            }
            Some(ProcessEvent::Exited { exit_code, signal }) => {
                // As a shell reports it: the code, or 128 + the signal.
                let code = exit_code.or(signal.map(|s| 128 + s)).unwrap_or(1);
                return Ok(u8::try_from(code).unwrap_or(1));
            }
            None => {
                return Err(Failure::env(
                    "the connection to the execution world was lost while the command ran (WORLD_DISCONNECTED)",
                ));
            }
        }
    }
}
