//! Opening a host the way every front end does: the configuration of a workspace (user config,
//! then its `toolhost.toml`, with the trust rule), and a shared host on a session (or on none),
//! with the tools that need the shared host.

use crate::config::{self, Config, ConfigError, Sources};
use crate::host::{Host, HostError, HostOptions};
use crate::session::OpenedSession;
use std::path::Path;
use std::sync::Arc;
use toolhost_workspace::Ledger;

/// The configuration of the workspace at `root`: the user's config, then the workspace's
/// `toolhost.toml` (its program-starting settings only when the workspace is trusted).
/// Ignored settings are in `warnings` for the front end to show.
pub fn load_config(root: &Path) -> Result<Config, ConfigError> {
    let user = config::user_config_path();
    Ok(Sources::load(root, user.as_deref())?.resolve(root))
}

/// A shared host for the workspace at `root`: on session `opened` (its ledger, blobs and log,
/// and the plan mode and structured run it left) or, without one, on a private spill folder and
/// no log.
pub fn open_host(
    config: &Config,
    root: &Path,
    opened: Option<&OpenedSession>,
) -> Result<Arc<Host>, HostError> {
    let options = match opened {
        Some(opened) => HostOptions {
            roots: vec![root.to_path_buf()],
            read_only_roots: vec![opened.blob_dir()],
            session_id: Some(opened.log.id().to_owned()),
            ledger: Arc::clone(&opened.ledger),
            spill: Some(opened.spill()),
            session: Some(Arc::clone(&opened.log)),
        },
        None => HostOptions {
            roots: vec![root.to_path_buf()],
            read_only_roots: Vec::new(),
            session_id: None,
            ledger: Arc::new(Ledger::new()),
            spill: None,
            session: None,
        },
    };
    let host = Host::new(config, options)?;
    if let Some(opened) = opened {
        host.restore_session_state(&opened.report);
    }
    share(host, config)
}

/// The host behind an `Arc`, as every front end keeps it (calls run as tasks of their own), with
/// the tools that need the shared host: `run_code`, whose programs' nested calls run on it, and
/// `subagent`, which runs the own agent on it again (so it exists only when `[agent]` can reach
/// a model), `workflow` and `ralph`, whose children are `subagent` calls, and `tool_define`
/// and `tool_undefine`, whose session tools call other tools as `run_code`'s programs do.
pub fn share(mut host: Host, config: &Config) -> Result<Arc<Host>, HostError> {
    let nested = crate::code::install(&mut host, &config.code)?;
    let host = Arc::new(host);
    nested.attach(&host);
    crate::subagent::install(&host, &config.agent)?;
    crate::workflow::install(&host, &config.agent, config)?;
    crate::ralph::install(&host, &config.agent, &config.workflow)?;
    crate::session_tools::install(&host, &config.code)?;
    Ok(host)
}
