//! `toolhost exec-server`: serves the folder `--root` as an execution world over JSON-RPC on
//! stdio — what a host starts over `ssh` or in a container so its tools run where the files are —
//! or, with `--listen 127.0.0.1:<port>`, on a loopback websocket that requires the token it
//! writes to `--token-file`. `--connect <url>` is the other end: a stdio bridge to such a
//! websocket, which is how a host reaches one. Everything a client sends is confined here,
//! beneath the root, whatever the client checked.

use super::Failure;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The folder the world serves (default: the current directory).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Serve on a websocket at this loopback address (`127.0.0.1:0` picks a port) instead of
    /// stdio; the address is printed once listening.
    #[arg(long, value_name = "ADDR", conflicts_with = "connect", requires = "token_file")]
    listen: Option<std::net::SocketAddr>,
    /// Bridge stdio to the exec-server listening at this websocket URL.
    #[arg(long, value_name = "URL", conflicts_with = "root", requires = "token_file")]
    connect: Option<String>,
    /// With --listen: where the fresh token is written (owner-only). With --connect: where it
    /// is read.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
}

pub async fn run(args: Args) -> Result<u8, Failure> {
    if let (Some(url), Some(token_file)) = (&args.connect, &args.token_file) {
        let token = std::fs::read_to_string(token_file)
            .map_err(|e| Failure::env(format!("cannot read {}: {e}", token_file.display())))?;
        toolhost_world::bridge(url, token.trim())
            .await
            .map_err(|e| Failure::env(format!("{e} ({})", e.code())))?;
        return Ok(0);
    }
    let root = match args.root {
        Some(root) => root,
        None => {
            std::env::current_dir().map_err(|e| Failure::env(format!("no current folder: {e}")))?
        }
    };
    let world = toolhost_world::World::open(&root)
        .map_err(|e| Failure::env(format!("cannot serve {}: {e}", root.display())))?;
    let stop = tokio_util::sync::CancellationToken::new();
    if let (Some(addr), Some(token_file)) = (args.listen, &args.token_file) {
        drop(world);
        let bound = |at: std::net::SocketAddr| {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "listening on ws://{at}").and_then(|()| out.flush());
        };
        toolhost_world::listen(root, addr, token_file, bound, stop)
            .await
            .map_err(|e| Failure::env(format!("{e} ({})", e.code())))?;
        return Ok(0);
    }
    toolhost_world::serve(world, tokio::io::stdin(), tokio::io::stdout(), stop).await;
    Ok(0)
}
