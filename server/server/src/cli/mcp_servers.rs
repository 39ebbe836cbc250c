//! `toolhost mcp-servers`: starts the MCP servers configured here, waits for each to answer or
//! fail, shows their state, protocol version, tools and errors, then stops them (exit 1 when
//! one failed).

use super::{Common, Failure, load_config, open_host, workspace_root};
use serde_json::json;
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Print `{servers: [{name, transport, state, tools, protocolVersion?, error?, attempts}]}`.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: Args) -> Result<u8, Failure> {
    let root = workspace_root(&args.common)?;
    let config = load_config(&root)?;
    let host = open_host(&config, &root, None)?;
    host.start_all_mcp_servers();
    let _ = host.mcp_ready().await;
    let servers = host.mcp_status();
    host.shutdown().await;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let _ = writeln!(stdout, "{}", json!({ "servers": servers }));
    } else if servers.is_empty() {
        let _ = writeln!(
            stdout,
            "no MCP servers: add [mcp.servers.<name>] with command (stdio) or url \
             (streamable HTTP) to the user config or a trusted toolhost.toml"
        );
    } else {
        for server in &servers {
            let _ = writeln!(stdout, "{}", server_line(server));
            for tool in &server.tools {
                let _ = writeln!(stdout, "    {tool}");
            }
        }
    }
    let failed = servers.iter().any(|s| s.state == "failed");
    Ok(if failed { 1 } else { 0 })
}

/// One server: `name  state  transport  N tools  [protocol]  error`.
fn server_line(server: &toolhost_tools_mcp::ServerStatus) -> String {
    let tools = match server.tools.len() {
        1 => "1 tool".to_owned(),
        n => format!("{n} tools"),
    };
    let mut line =
        format!("{:<16} {:<12} {:<15} {tools}", server.name, server.state, server.transport);
    if let Some(version) = &server.protocol_version {
        line.push_str(&format!("  (MCP {version})"));
    }
    if server.attempts > 0 {
        line.push_str(&format!("  after {} reconnect attempts", server.attempts));
    }
    if let Some(error) = &server.error {
        line.push_str(&format!("\n    error: {error}"));
    }
    line
}
