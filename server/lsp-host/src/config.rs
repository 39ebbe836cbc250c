//! `[lsp.servers.<id>]`: the language servers the `lsp` tool starts, beside the ones it finds on
//! PATH. Everything of an entry that starts a program or steers what a server runs — `command`,
//! `args`, `env`, and what is handed to the server (`initialization_options`, `settings`: a
//! setting can name an interpreter the server executes) — comes only from the user or a trusted
//! workspace.

use crate::pool::LspHostConfig;
use crate::servers::ServerSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use toolhost_contract::config::{Layer, Section};

/// One configured language server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LspServerConfig {
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// `".c" = "c"`: file extension → language id.
    pub extensions: BTreeMap<String, String>,
    pub initialization_options: Option<serde_json::Value>,
    /// The server's settings: `workspace/configuration` is answered from them by section.
    pub settings: Option<serde_json::Value>,
}

/// The pool's configuration: only entries with a command become stdio servers.
pub fn pool_config(servers: &BTreeMap<String, LspServerConfig>) -> LspHostConfig {
    let servers = servers
        .iter()
        .filter_map(|(id, server)| {
            let command = server.command.clone()?;
            let mut spec = ServerSpec::new(id.clone(), command).with_args(server.args.clone());
            spec.env = server.env.clone();
            for (ext, language) in &server.extensions {
                spec = spec.with_extension(ext, language);
            }
            spec.initialization_options = server.initialization_options.clone();
            spec.settings = server.settings.clone();
            Some(spec)
        })
        .collect();
    LspHostConfig { servers, ..LspHostConfig::default() }
}

/// `[lsp]` as one source gives it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LspSection {
    servers: BTreeMap<String, LspServerConfig>,
}

impl Section for LspSection {
    type Settings = BTreeMap<String, LspServerConfig>;

    fn apply(self, servers: &mut Self::Settings, _layer: &mut Layer<'_>) {
        for (id, server) in self.servers {
            let entry = servers.entry(id).or_default();
            if server.command.is_some() {
                entry.command = server.command;
            }
            if !server.args.is_empty() {
                entry.args = server.args;
            }
            entry.env.extend(server.env);
            entry.extensions.extend(server.extensions);
            if server.initialization_options.is_some() {
                entry.initialization_options = server.initialization_options;
            }
            if server.settings.is_some() {
                entry.settings = server.settings;
            }
        }
    }

    /// `command`, `args` and `env` start a program; `initialization_options` and `settings` steer
    /// what a server runs (a setting may name an interpreter): all dropped. `extensions` only
    /// routes the workspace's files to servers the user configured, so it stays.
    fn restrict_untrusted(&mut self, _applied: &Self::Settings) -> Vec<String> {
        let mut dropped = Vec::new();
        for (id, server) in &mut self.servers {
            let mut keys = Vec::new();
            if server.command.take().is_some() {
                keys.push("command");
            }
            if !std::mem::take(&mut server.args).is_empty() {
                keys.push("args");
            }
            if !std::mem::take(&mut server.env).is_empty() {
                keys.push("env");
            }
            if server.initialization_options.take().is_some() {
                keys.push("initialization_options");
            }
            if server.settings.take().is_some() {
                keys.push("settings");
            }
            if !keys.is_empty() {
                dropped.push(format!("lsp.servers.{id}.{}", keys.join("/")));
            }
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untrusted_source_starts_and_steers_no_language_server() {
        let server = LspServerConfig {
            command: Some("/bin/sh".into()),
            args: vec!["-c".into()],
            env: [("LD_PRELOAD".to_owned(), "x".to_owned())].into(),
            extensions: [(".c".to_owned(), "c".to_owned())].into(),
            initialization_options: Some(serde_json::json!({"x": 1})),
            settings: Some(serde_json::json!({"python": {"pythonPath": "./evil"}})),
        };
        let mut section = LspSection { servers: [("evil".to_owned(), server)].into() };
        assert_eq!(
            section.restrict_untrusted(&BTreeMap::new()),
            ["lsp.servers.evil.command/args/env/initialization_options/settings"]
        );
        let kept = &section.servers["evil"];
        assert_eq!(
            kept,
            &LspServerConfig {
                extensions: [(".c".to_owned(), "c".to_owned())].into(),
                ..Default::default()
            }
        );
    }
}
