//! The long-running subcommands, each a front end over stdio: `toolhost serve` (LSP, what
//! editors start), `toolhost mcp` (MCP, what agents start) and `toolhost acp` (ACP, what ACP
//! editors start).

use super::{Common, Failure, load_config, sessions_dir, workspace_root};
use std::os::fd::AsFd;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Accepted for compatibility with clients that pass it; stdio is the only transport.
    #[arg(long)]
    stdio: bool,
    /// Session directory override.
    #[arg(long, value_name = "DIR")]
    session_dir: Option<PathBuf>,
    /// Cap on one incoming message body (bytes).
    #[arg(long, value_name = "BYTES", default_value_t = toolhost_jsonrpc::content_length::DEFAULT_SERVER_MAX_BODY, hide = true)]
    max_message_bytes: usize,
}

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    #[command(flatten)]
    common: Common,
    /// Never attach to the editor: run the tools in this process.
    #[arg(long)]
    standalone: bool,
    /// Serve MCP over Streamable HTTP at this address (`127.0.0.1:0`: a free port) instead of
    /// stdio, until interrupted.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
}

#[derive(Debug, clap::Args)]
pub struct AcpArgs {
    /// Where session logs live (default: $XDG_STATE_HOME/toolhost/sessions).
    #[arg(long, value_name = "DIR")]
    session_dir: Option<PathBuf>,
}

pub async fn serve(args: ServeArgs) -> Result<u8, Failure> {
    super::log::init("info");
    let options = crate::serve::ServeOptions {
        session_dir: args.session_dir,
        max_message_bytes: args.max_message_bytes,
    };
    Ok(crate::serve::serve(options).await)
}

pub async fn mcp(args: McpArgs) -> Result<u8, Failure> {
    // Started by another toolhost's MCP bridge: serve here, never through the editor's toolhost
    // (whose registry holds this server's own tools).
    let standalone = args.standalone || toolhost_host::started_by_bridge();
    // rmcp's per-message info lines would drown the agent's stderr log.
    super::log::init("info,rmcp=warn");
    let root = workspace_root(&args.common)?;
    let config = load_config(&root)?;
    let sessions = sessions_dir(&config, &args.common)?;
    if let Some(addr) = args.http {
        let session = super::session_or_worktree(&config, &args.common, &root);
        let mcp = config.mcp.clone();
        let backend = crate::mcp::McpBackend::new(config, root, sessions, session, standalone);
        let backend = backend.await;
        let served = toolhost_mcp::http::serve_until_signal(backend.clone(), mcp, addr).await;
        backend.shutdown().await;
        return served.map(|()| 0).map_err(|e| Failure::env(e.to_string()));
    }
    let (stdin, stdout) = (
        crate::serve::stdio_file(std::io::stdin().as_fd()),
        crate::serve::stdio_file(std::io::stdout().as_fd()),
    );
    let (stdin, stdout) = match (stdin, stdout) {
        (Ok(stdin), Ok(stdout)) => (stdin, stdout),
        (Err(err), _) | (_, Err(err)) => {
            return Err(Failure::env(format!("cannot use stdio: {err}")));
        }
    };
    let mcp_config = config.mcp.clone();
    let session = super::session_or_worktree(&config, &args.common, &root);
    let backend = crate::mcp::McpBackend::new(config, root, sessions, session, standalone).await;
    let served = toolhost_mcp::serve(backend.clone(), mcp_config, stdin, stdout).await;
    backend.shutdown().await;
    served.map_err(|e| Failure::env(e.to_string()))?;
    Ok(0)
}

pub async fn acp(args: AcpArgs) -> Result<u8, Failure> {
    super::log::init("info");
    crate::acp::serve(crate::acp::AcpOptions { session_dir: args.session_dir })
        .await
        .map_err(Failure::env)?;
    Ok(0)
}
