//! Which program a hosted agent is: `[acp.agents.<name>]` from the configuration, else one of
//! the built-in entries for the agents people use most, each the ACP adapter its maker
//! publishes on npm.

use super::HostedError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost_host::acp_config::{AcpAgentConfig, AcpSettings};

/// A built-in agent: its name, what it is, the program, its arguments, the npm package that
/// installs it, and the session mode that asks before each edit and command.
struct BuiltIn {
    name: &'static str,
    title: &'static str,
    command: &'static str,
    args: &'static [&'static str],
    package: &'static str,
    mode: Option<&'static str>,
}

const BUILT_IN: &[BuiltIn] = &[
    BuiltIn {
        name: "claude",
        title: "Claude Code",
        command: "claude-agent-acp",
        args: &[],
        package: "@agentclientprotocol/claude-agent-acp",
        mode: Some("default"),
    },
    BuiltIn {
        name: "codex",
        title: "Codex",
        command: "codex-acp",
        args: &[],
        package: "@agentclientprotocol/codex-acp",
        mode: Some("read-only"),
    },
    BuiltIn {
        name: "gemini",
        title: "Gemini CLI",
        command: "gemini",
        args: &["--acp"],
        package: "@google/gemini-cli",
        mode: None,
    },
];

/// A hosted agent, resolved to the program to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentSpec {
    pub name: String,
    /// How its cards name it.
    pub title: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub mode: Option<String>,
}

/// An agent the editor can offer.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KnownAgent {
    pub name: String,
    pub title: String,
    pub command: String,
    /// Found on `PATH` (or an existing path).
    pub installed: bool,
    /// The npm package that installs it, for a built-in agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    pub configured: bool,
}

/// `command` as a program path: itself when it names a path, else the first match on `PATH`.
fn find_program(command: &str, env: &BTreeMap<String, String>) -> Option<PathBuf> {
    if command.contains('/') {
        let path = PathBuf::from(command);
        return path.is_file().then_some(path);
    }
    let search = env.get("PATH").cloned().or_else(|| std::env::var("PATH").ok())?;
    std::env::split_paths(&search).map(|dir| dir.join(command)).find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn entry_of(
    settings: &AcpSettings,
    name: &str,
) -> Option<(AcpAgentConfig, String, Option<&'static str>)> {
    if let Some(config) = settings.agents.get(name) {
        let title = BUILT_IN.iter().find(|b| b.name == name).map_or(name, |b| b.title);
        return Some((config.clone(), title.to_owned(), None));
    }
    let built_in = BUILT_IN.iter().find(|b| b.name == name)?;
    let config = AcpAgentConfig {
        command: built_in.command.to_owned(),
        args: built_in.args.iter().map(|a| (*a).to_owned()).collect(),
        env: BTreeMap::new(),
        mode: built_in.mode.map(str::to_owned),
    };
    Some((config, built_in.title.to_owned(), Some(built_in.package)))
}

/// The agent `name` as a program to start, or why it cannot be.
pub fn resolve(settings: &AcpSettings, name: &str) -> Result<AgentSpec, HostedError> {
    let Some((config, title, package)) = entry_of(settings, name) else {
        let mut names: Vec<String> = known_agents(settings).into_iter().map(|a| a.name).collect();
        names.dedup();
        return Err(HostedError::new(
            "AGENT_UNKNOWN",
            format!(
                "no agent {name:?} (known: {}; add one under [acp.agents.<name>])",
                names.join(", ")
            ),
        ));
    };
    let Some(program) = find_program(&config.command, &config.env) else {
        let install =
            package.map(|p| format!(" (install it with `npm install -g {p}`)")).unwrap_or_default();
        return Err(HostedError::new(
            "AGENT_NOT_INSTALLED",
            format!("the {title} agent's program {:?} is not installed{install}", config.command),
        ));
    };
    Ok(AgentSpec {
        name: name.to_owned(),
        title,
        program,
        args: config.args,
        env: config.env,
        mode: config.mode,
    })
}

/// Every agent the settings name, then the built-in ones they do not.
pub fn known_agents(settings: &AcpSettings) -> Vec<KnownAgent> {
    let mut names: Vec<String> = settings.agents.keys().cloned().collect();
    for built_in in BUILT_IN {
        if !settings.agents.contains_key(built_in.name) {
            names.push(built_in.name.to_owned());
        }
    }
    names
        .into_iter()
        .filter_map(|name| {
            let (config, title, package) = entry_of(settings, &name)?;
            Some(KnownAgent {
                installed: find_program(&config.command, &config.env).is_some(),
                configured: settings.agents.contains_key(&name),
                name,
                title,
                command: config.command,
                package: package.map(str::to_owned),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_agent_overrides_the_built_in_one() {
        let mut settings = AcpSettings::default();
        settings.agents.insert(
            "claude".to_owned(),
            AcpAgentConfig { command: "/bin/sh".to_owned(), ..AcpAgentConfig::default() },
        );
        let spec = resolve(&settings, "claude").expect("resolves");
        assert_eq!(spec.program, PathBuf::from("/bin/sh"));
        assert_eq!(spec.title, "Claude Code");
        assert_eq!(spec.mode, None);
    }

    #[test]
    fn an_unknown_agent_is_named_with_the_known_ones() {
        let err = resolve(&AcpSettings::default(), "nope").expect_err("unknown");
        assert_eq!(err.code, "AGENT_UNKNOWN");
        assert!(err.message.contains("claude, codex, gemini"), "{}", err.message);
    }
}
