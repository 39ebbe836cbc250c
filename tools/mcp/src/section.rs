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
use toolhost_contract::config::{Dropped, Layer, Section};

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

    /// Starting a server (`command`, `args`, `env`, `cwd`) or pointing toolhost at one (`url`,
    /// `headers`) is dropped. What tunes a server the user configured is held to the direction
    /// that narrows: switching it (or its reconnecting) off but not on, lazy but not eager
    /// again, failing on a startup error but not ignoring one the user fails on, a shorter call
    /// timeout, fewer reconnect attempts, longer reconnect delays.
    fn restrict_untrusted(&mut self, applied: &ServerEntries) -> Vec<String> {
        let mut groups = Vec::new();
        let unset = ServerEntry::default();
        for (name, server) in &mut self.0 {
            let before = applied.get(name).unwrap_or(&unset);
            let defaults = ReconnectPolicy::default();
            let mut dropped = Dropped::new();
            dropped.always("command", &mut server.command);
            dropped.always("args", &mut server.args);
            if !std::mem::take(&mut server.env).is_empty() {
                dropped.push("env");
            }
            dropped.always("cwd", &mut server.cwd);
            dropped.always("url", &mut server.url);
            if !std::mem::take(&mut server.headers).is_empty() {
                dropped.push("headers");
            }
            let timeout = before.tool_call_timeout_ms.filter(|ms| *ms > 0);
            let timeout = timeout.unwrap_or(DEFAULT_TOOL_CALL_TIMEOUT_MS);
            dropped.unless("tool_call_timeout_ms", &mut server.tool_call_timeout_ms, |ms| {
                *ms > 0 && *ms <= timeout
            });
            let fails = before.fail_on_startup_error.unwrap_or(false);
            dropped.only_on("fail_on_startup_error", &mut server.fail_on_startup_error, fails);
            let lazy = before.startup == Some(Startup::Lazy);
            dropped.unless("startup", &mut server.startup, |s| *s == Startup::Lazy || !lazy);
            dropped.only_off("enabled", &mut server.enabled, before.enabled.unwrap_or(true));
            let (r, was) = (&mut server.reconnect, &before.reconnect);
            let reconnects = was.enabled.unwrap_or(defaults.enabled);
            dropped.only_off("reconnect.enabled", &mut r.enabled, reconnects);
            let initial = was.initial_delay_ms.unwrap_or(millis(defaults.initial_delay));
            dropped
                .unless("reconnect.initial_delay_ms", &mut r.initial_delay_ms, |ms| *ms >= initial);
            let max_delay = was.max_delay_ms.unwrap_or(millis(defaults.max_delay));
            dropped.unless("reconnect.max_delay_ms", &mut r.max_delay_ms, |ms| *ms >= max_delay);
            let attempts = was.max_attempts.unwrap_or(defaults.max_attempts);
            dropped.cap("reconnect.max_attempts", &mut r.max_attempts, attempts);
            groups.extend(dropped.group_under(&format!("mcp.servers.{name}")));
        }
        groups
    }
}

/// A call's timeout when the configuration names none.
const DEFAULT_TOOL_CALL_TIMEOUT_MS: u64 = 60_000;

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> ServerEntries {
        serde_json::from_str::<ServersSection>(text).unwrap().0
    }

    #[test]
    fn an_untrusted_source_neither_starts_nor_reaches_a_server() {
        let mut section = ServersSection(entries(
            r#"{"x": {"command": "sh", "args": ["-c"], "env": {"A": "1"}, "cwd": "/",
                      "url": "http://evil/", "headers": {"H": "${HOME}"}}}"#,
        ));
        assert_eq!(
            section.restrict_untrusted(&ServerEntries::new()),
            ["mcp.servers.x.command/args/env/cwd/url/headers"]
        );
        let x = &section.0["x"];
        assert!(x.command.is_none() && x.args.is_none() && x.env.is_empty() && x.cwd.is_none());
        assert!(x.url.is_none() && x.headers.is_empty());
    }

    #[test]
    fn an_untrusted_source_only_tunes_a_server_towards_less() {
        let applied = entries(
            r#"{"fs": {"command": "npx", "enabled": false, "startup": "lazy",
                       "fail_on_startup_error": true, "tool_call_timeout_ms": 1000,
                       "reconnect": {"enabled": false}}}"#,
        );
        let mut looser = ServersSection(entries(
            r#"{"fs": {"enabled": true, "startup": "eager", "fail_on_startup_error": false,
                       "tool_call_timeout_ms": 99999,
                       "reconnect": {"enabled": true, "initial_delay_ms": 1, "max_delay_ms": 2,
                                     "max_attempts": 1000}}}"#,
        ));
        assert_eq!(
            looser.restrict_untrusted(&applied),
            ["mcp.servers.fs.tool_call_timeout_ms/fail_on_startup_error/startup/enabled/\
              reconnect.enabled/reconnect.initial_delay_ms/reconnect.max_delay_ms/\
              reconnect.max_attempts"]
        );
        let fs = &looser.0["fs"];
        assert!(fs.enabled.is_none() && fs.startup.is_none() && fs.tool_call_timeout_ms.is_none());
        assert!(fs.fail_on_startup_error.is_none() && fs.reconnect.enabled.is_none());
        assert!(fs.reconnect.initial_delay_ms.is_none() && fs.reconnect.max_attempts.is_none());
        let mut tighter = ServersSection(entries(
            r#"{"fs": {"enabled": false, "startup": "lazy", "fail_on_startup_error": true,
                       "tool_call_timeout_ms": 500,
                       "reconnect": {"enabled": false, "initial_delay_ms": 5000,
                                     "max_delay_ms": 60000, "max_attempts": 1}}}"#,
        ));
        assert!(tighter.restrict_untrusted(&applied).is_empty());
        let fs = &tighter.0["fs"];
        assert_eq!(
            (fs.enabled, fs.startup, fs.tool_call_timeout_ms),
            (Some(false), Some(Startup::Lazy), Some(500))
        );
        assert_eq!(
            (fs.reconnect.initial_delay_ms, fs.reconnect.max_attempts),
            (Some(5000), Some(1))
        );
        // A timeout of 0 means the default, longer than the user's: dropped too.
        let mut zero = ServersSection(entries(r#"{"fs": {"tool_call_timeout_ms": 0}}"#));
        assert_eq!(zero.restrict_untrusted(&applied), ["mcp.servers.fs.tool_call_timeout_ms"]);
    }
}
