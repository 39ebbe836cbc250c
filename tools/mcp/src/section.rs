//! `[mcp.servers.<name>]`: the MCP servers whose tools the bridge brings in. Sources merge key by
//! key per server; once every source is applied, [`server_configs`] turns each entry into a
//! server configuration, dropping (with a warning naming it) an entry that cannot work. An
//! untrusted source can neither start a server (`command`, `args`, `env`, `cwd`) nor point
//! toolhost at one (`url`, `headers`, whose `${VAR}` would send a credential there); it may only
//! tune servers the user configured.

use crate::config::{McpServerConfig, McpTransport, ReconnectPolicy};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use toolhost_contract::config::{Layer, Section};

/// One `[mcp.servers.<name>]` entry; sources merge key by key.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerEntry {
    /// Starts a program: user config or a trusted workspace only (so do `args`, `env`, `cwd`).
    command: Option<String>,
    args: Option<Vec<String>>,
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    /// Where toolhost connects and what it sends: user config or a trusted workspace only.
    url: Option<String>,
    headers: BTreeMap<String, String>,
    tool_call_timeout_ms: Option<u64>,
    fail_on_startup_error: Option<bool>,
    /// `eager` (with the host, the default) or `lazy` (on first use).
    startup: Option<Startup>,
    /// `false` switches a server of an earlier source off.
    enabled: Option<bool>,
    reconnect: ReconnectEntry,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Startup {
    Eager,
    Lazy,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ReconnectEntry {
    enabled: Option<bool>,
    initial_delay_ms: Option<u64>,
    max_delay_ms: Option<u64>,
    max_attempts: Option<u32>,
}

/// The entries of every source applied so far, by server name.
pub type ServerEntries = BTreeMap<String, ServerEntry>;

/// `[mcp.servers]` as one source gives it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(transparent)]
pub struct ServersSection(ServerEntries);

impl ServerEntry {
    /// `layer`'s keys over this entry's.
    fn merge(&mut self, layer: ServerEntry, source: &Layer<'_>) {
        macro_rules! take {
            ($($field:ident).+) => {
                if layer.$($field).+.is_some() {
                    self.$($field).+ = layer.$($field).+;
                }
            };
        }
        take!(command);
        take!(args);
        take!(url);
        take!(tool_call_timeout_ms);
        take!(fail_on_startup_error);
        take!(startup);
        take!(enabled);
        take!(reconnect.enabled);
        take!(reconnect.initial_delay_ms);
        take!(reconnect.max_delay_ms);
        take!(reconnect.max_attempts);
        if let Some(cwd) = layer.cwd {
            self.cwd = Some(source.resolve(cwd));
        }
        self.env.extend(layer.env);
        self.headers.extend(layer.headers);
    }
}

impl Section for ServersSection {
    type Settings = ServerEntries;

    fn apply(self, entries: &mut ServerEntries, layer: &mut Layer<'_>) {
        for (name, entry) in self.0 {
            entries.entry(name).or_default().merge(entry, layer);
        }
    }

    fn restrict_untrusted(&mut self) -> Vec<String> {
        let mut dropped = Vec::new();
        for (name, server) in &mut self.0 {
            let mut keys = Vec::new();
            if server.command.take().is_some() {
                keys.push("command");
            }
            if server.args.take().is_some() {
                keys.push("args");
            }
            if !std::mem::take(&mut server.env).is_empty() {
                keys.push("env");
            }
            if server.cwd.take().is_some() {
                keys.push("cwd");
            }
            if server.url.take().is_some() {
                keys.push("url");
            }
            if !std::mem::take(&mut server.headers).is_empty() {
                keys.push("headers");
            }
            if !keys.is_empty() {
                dropped.push(format!("mcp.servers.{name}.{}", keys.join("/")));
            }
        }
        dropped
    }
}

/// The merged entries as bridge configurations; an entry that cannot work is dropped with a
/// warning naming it (a bad name, neither or both of `command` and `url`, a bad URL).
pub fn server_configs(entries: ServerEntries, warnings: &mut Vec<String>) -> Vec<McpServerConfig> {
    let mut servers = Vec::new();
    for (name, entry) in entries {
        if entry.enabled == Some(false) {
            continue;
        }
        if !crate::naming::valid_server_name(&name) {
            warnings.push(format!(
                "ignored mcp.servers.{name}: a server name is 1 to 32 letters, digits, _ or -"
            ));
            continue;
        }
        let transport = match (entry.command, entry.url) {
            (Some(command), None) if !command.is_empty() => McpTransport::Stdio {
                command,
                args: entry.args.unwrap_or_default(),
                env: entry.env,
                cwd: entry.cwd,
            },
            (None, Some(url)) => {
                let scheme_ok = ["http://", "https://"].iter().any(|scheme| {
                    url.get(..scheme.len()).is_some_and(|s| s.eq_ignore_ascii_case(scheme))
                        && url.len() > scheme.len()
                });
                if !scheme_ok {
                    warnings.push(format!(
                        "ignored mcp.servers.{name}: url \"{url}\" is not an http(s) URL"
                    ));
                    continue;
                }
                McpTransport::Http { url, headers: entry.headers }
            }
            (Some(_), Some(_)) => {
                warnings.push(format!(
                    "ignored mcp.servers.{name}: give either command (stdio) or url (streamable HTTP), not both"
                ));
                continue;
            }
            _ => {
                warnings.push(format!(
                    "ignored mcp.servers.{name}: it has neither command (stdio) nor url (streamable HTTP)"
                ));
                continue;
            }
        };
        let mut server = McpServerConfig::new(name, transport);
        if let Some(ms) = entry.tool_call_timeout_ms.filter(|ms| *ms > 0) {
            server.tool_call_timeout = Duration::from_millis(ms);
        }
        server.fail_on_startup_error = entry.fail_on_startup_error.unwrap_or(false);
        server.lazy = entry.startup == Some(Startup::Lazy);
        let defaults = ReconnectPolicy::default();
        let r = entry.reconnect;
        server.reconnect = ReconnectPolicy {
            enabled: r.enabled.unwrap_or(defaults.enabled),
            initial_delay: r.initial_delay_ms.map_or(defaults.initial_delay, Duration::from_millis),
            max_delay: r.max_delay_ms.map_or(defaults.max_delay, Duration::from_millis),
            max_attempts: r.max_attempts.unwrap_or(defaults.max_attempts),
        };
        servers.push(server);
    }
    servers
}
