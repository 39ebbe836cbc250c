//! `toolhost trust`: marks this workspace trusted in the user config, so its `toolhost.toml` may
//! configure what starts programs (language servers, MCP servers, the shell's environment).

use super::{Common, Failure, workspace_root};
use toolhost_host::config;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    common: Common,
}

pub fn run(args: Args) -> Result<u8, Failure> {
    let root = workspace_root(&args.common)?;
    let user = config::user_config_path().ok_or_else(|| {
        Failure::env("cannot locate the user config (set HOME or XDG_CONFIG_HOME)")
    })?;
    let added = config::trust_workspace(&user, &root).map_err(|e| Failure::env(e.to_string()))?;
    let verb = if added { "trusted" } else { "already trusted" };
    println!("{} is {verb} (recorded in {})", root.display(), user.display());
    Ok(0)
}
