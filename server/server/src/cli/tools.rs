//! `toolhost tools`: every tool with its schemas, the configured MCP servers' tools included
//! (each server started for the listing, then stopped); with `--typescript`, the declarations
//! `run_code` programs are written against.

use super::{Common, Failure, load_config, open_host, workspace_root};
use std::io::Write;
use toolhost_protocol::lsp_ext::ListToolsResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Print `{tools: [{name, description, inputSchema, outputSchema}]}`.
    #[arg(long)]
    json: bool,
    /// Print the TypeScript declarations `run_code` programs are written against.
    #[arg(long, conflicts_with = "json")]
    typescript: bool,
}

pub async fn run(args: Args) -> Result<u8, Failure> {
    let root = workspace_root(&args.common)?;
    let config = load_config(&root)?;
    let host = open_host(&config, &root, None)?;
    host.start_all_mcp_servers();
    let strict = host.mcp_ready().await;
    let tools = host.registry().descriptors();
    let declarations = args.typescript.then(|| host.program_declarations());
    host.shutdown().await;
    strict.map_err(Failure::env)?;
    let mut stdout = std::io::stdout().lock();
    if let Some(declarations) = declarations {
        let _ = write!(stdout, "{declarations}");
    } else if args.json {
        let text = serde_json::to_string_pretty(&ListToolsResult { tools })
            .map_err(|e| Failure::env(e.to_string()))?;
        let _ = writeln!(stdout, "{text}");
    } else {
        for tool in tools {
            let summary: String = tool.description.chars().take(100).collect();
            let _ = writeln!(stdout, "{:<8} {summary}", tool.name);
        }
    }
    Ok(0)
}
