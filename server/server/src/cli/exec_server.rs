//! `toolhost exec-server`: serves the folder `--root` as an execution world over JSON-RPC on
//! stdio — what a host starts over `ssh` or in a container so its tools run where the files are.
//! Everything the client sends is confined here, beneath the root, whatever the client checked.

use super::Failure;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The folder the world serves (default: the current directory).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
}

pub async fn run(args: Args) -> Result<u8, Failure> {
    let root = match args.root {
        Some(root) => root,
        None => {
            std::env::current_dir().map_err(|e| Failure::env(format!("no current folder: {e}")))?
        }
    };
    let world = toolhost_world::World::open(&root)
        .map_err(|e| Failure::env(format!("cannot serve {}: {e}", root.display())))?;
    let stop = tokio_util::sync::CancellationToken::new();
    toolhost_world::serve(world, tokio::io::stdin(), tokio::io::stdout(), stop).await;
    Ok(0)
}
