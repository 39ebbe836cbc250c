//! Configuration (docs/configuration.md): user config → workspace `toolhost.toml` →
//! `initializationOptions` → CLI flags, later sources winning key by key.
//!
//! Each section belongs to the crate it configures, which owns its settings type and its keys
//! (`toolhost_contract::config::Section`); this module composes them: `[limits]` (file tools),
//! `[spill]` (registry), `[session]`, `[fs]` (workspace), `[lsp]` (language servers), `[mcp]`
//! (the MCP server's own keys, and `[mcp.servers]` of the bridge), `[shell]`, `[review]`,
//! `[interact]`, `[plan]`, `[skills]`, `[web]` and `[agent]`.
//!
//! Trust rule: a workspace's `toolhost.toml` (and editor settings that may come from it) is
//! untrusted unless the user listed the workspace in `trusted_workspaces` (`toolhost trust`).
//! An untrusted source can only tighten: just before it is applied, every section holds its keys
//! to what narrows the settings the sources before it left (a cap no higher, a switch one way, a
//! list only added to) and drops whatever starts a program, reaches further or loosens a check;
//! the front end shows a warning per group of dropped keys (docs/configuration.md, "Trust", lists
//! every key). A cloned repository can never make toolhost run a program.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost_agent::AgentSettings;
use toolhost_agent::settings::AgentSection;
use toolhost_contract::config::{Layer, Section};
use toolhost_contract::regular_file::{RegularFileError, read_regular_text};
use toolhost_lsp_host::config::{LspSection, LspServerConfig};
use toolhost_mcp::config::McpSection;
use toolhost_protocol::lsp_ext::ReviewSettings;
use toolhost_registry::SpillSection;
use toolhost_tools_code::{CodeConfig, CodeSection};
use toolhost_tools_fs::{FsLimits, LimitsSection};
use toolhost_tools_interact::{InteractConfig, InteractSection};
use toolhost_tools_mcp::section::{ServerEntries, ServersSection, server_configs};
use toolhost_tools_shell::{ShellConfig, ShellSection};
use toolhost_tools_web::{WebConfig, WebSection};
use toolhost_workspace::config::{FsSection, FsSettings};

/// The effective configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `[limits]`: the file tools' caps, the documented defaults unless configured.
    pub limits: FsLimits,
    /// `[spill] max_inline_bytes`: the generic spill's cap (0: off).
    pub spill_max_inline_bytes: u64,
    /// `[session] dir`: where sessions live (default: the state directory).
    pub session_dir: Option<PathBuf>,
    /// `[session] durability`: when a read-only call's record is synced.
    pub session_durability: toolhost_session::Durability,
    /// `[fs]`: extra roots and protected paths.
    pub fs: FsSettings,
    /// `[lsp.servers.<id>]`.
    pub lsp_servers: BTreeMap<String, LspServerConfig>,
    pub trusted_workspaces: Vec<PathBuf>,
    /// Whether the workspace is trusted (so its program-starting settings were honoured).
    pub workspace_trusted: bool,
    /// `[mcp]`: how `toolhost mcp` presents tools and results.
    pub mcp: toolhost_mcp::McpConfig,
    /// `[mcp.servers.<name>]`: the MCP servers whose tools the bridge brings in, valid entries
    /// only (the others are in `warnings`).
    pub mcp_servers: Vec<toolhost_tools_mcp::McpServerConfig>,
    /// `[shell]`: whether `bash`, jobs and terminals exist, their limits and environment.
    pub shell: ShellConfig,
    /// `[review]`: whether writes and edits wait for the person's review, how long, and what
    /// happens when nobody answers (a session may change them with `toolhost/setReview`).
    pub review: ReviewSettings,
    /// `[interact]`: the interaction tools' settings.
    pub interact: InteractConfig,
    /// `[plan] active`: sessions start in plan mode.
    pub plan_active: bool,
    /// `[skills] dirs`: more folders to find skills in (each holds `<name>/SKILL.md`).
    pub skill_dirs: Vec<PathBuf>,
    /// `[web]`: the web tools, their SSRF allow list, proxy, search providers and caps.
    pub web: WebConfig,
    /// `[agent]`: toolhost's own agent — the model, the permission mode, the run's bounds.
    pub agent: AgentSettings,
    /// `[code]`: how models are offered the tools (`mode`) and the limits of one `run_code`
    /// program.
    pub code: CodeConfig,
    /// `[workflow]`: the `workflow` and `ralph` tools (the completion check, the round ceiling).
    pub workflow: crate::workflow_config::WorkflowSettings,
    /// `[acp]`: the ACP agents `toolhost serve` hosts, and how long their permission requests
    /// wait.
    pub acp: crate::acp_config::AcpSettings,
    /// `[world]`: where the tools' files and processes are.
    pub world: crate::world_config::WorldSettings,
    /// Settings that were ignored, with why (shown by `toolhost` and logged by the server).
    pub warnings: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            limits: FsLimits::default(),
            spill_max_inline_bytes: toolhost_registry::spill::DEFAULT_MAX_INLINE_BYTES,
            session_dir: None,
            session_durability: toolhost_session::Durability::default(),
            fs: FsSettings::default(),
            lsp_servers: BTreeMap::new(),
            trusted_workspaces: Vec::new(),
            workspace_trusted: false,
            mcp: toolhost_mcp::McpConfig::default(),
            mcp_servers: Vec::new(),
            shell: ShellConfig::default(),
            review: crate::review::default_settings(),
            interact: InteractConfig::default(),
            plan_active: false,
            skill_dirs: Vec::new(),
            web: WebConfig::default(),
            agent: AgentSettings::default(),
            code: CodeConfig::default(),
            workflow: crate::workflow_config::WorkflowSettings::default(),
            acp: crate::acp_config::AcpSettings::default(),
            world: crate::world_config::WorldSettings::default(),
            warnings: Vec::new(),
        }
    }
}

impl Config {
    /// Where sessions live: `flag` (`--session-dir`), else `[session] dir`, else the state
    /// directory.
    pub fn sessions_dir(
        &self,
        flag: Option<&Path>,
    ) -> Result<PathBuf, toolhost_session::SessionError> {
        crate::session::sessions_dir(flag.or(self.session_dir.as_deref()))
    }

    /// `[session]` as its section sees it.
    fn session_settings(&self) -> crate::session::SessionSettings {
        crate::session::SessionSettings {
            dir: self.session_dir.clone(),
            durability: self.session_durability,
        }
    }
}

/// `[mcp]`: the MCP server's own keys and, under `servers`, the bridge's entries (two crates'
/// sections in one table, each checked by its owner).
#[derive(Clone, Debug, Default)]
struct McpTable {
    own: McpSection,
    servers: ServersSection,
}

impl<'de> Deserialize<'de> for McpTable {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        use serde_json::{Map, Value};
        let mut table = Map::<String, Value>::deserialize(deserializer)?;
        let servers = match table.remove("servers") {
            Some(servers) => ServersSection::deserialize(servers)
                .map_err(|e| D::Error::custom(format!("mcp.servers: {e}")))?,
            None => ServersSection::default(),
        };
        // Key by key first, so an error names the key it is about.
        for (key, value) in &table {
            let one = Value::Object(Map::from_iter([(key.clone(), value.clone())]));
            McpSection::deserialize(one)
                .map_err(|e| D::Error::custom(format!("mcp.{key}: {e}")))?;
        }
        let own = McpSection::deserialize(Value::Object(table)).map_err(D::Error::custom)?;
        Ok(McpTable { own, servers })
    }
}

/// One source's settings, every key optional.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PartialConfig {
    limits: LimitsSection,
    spill: SpillSection,
    session: crate::session::SessionSection,
    fs: FsSection,
    lsp: LspSection,
    mcp: McpTable,
    shell: ShellSection,
    review: crate::review::ReviewSection,
    interact: InteractSection,
    plan: crate::interaction::PlanSection,
    skills: crate::skills::SkillsSection,
    web: WebSection,
    agent: AgentSection,
    code: CodeSection,
    workflow: crate::workflow_config::WorkflowSection,
    acp: crate::acp_config::AcpSection,
    world: crate::world_config::WorldSection,
    trusted_workspaces: Option<Vec<PathBuf>>,
    /// `initializationOptions.session_id`.
    session_id: Option<String>,
}

/// A configuration error naming the source and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: {detail}")]
    Invalid { file: String, detail: String },
    #[error("cannot read {file}: {detail}")]
    Unreadable { file: String, detail: String },
}

impl PartialConfig {
    /// Parses a TOML file's text; errors name the file and the key.
    pub fn from_toml(file: &str, text: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Invalid {
            file: file.to_owned(),
            detail: e.to_string().trim().to_owned(),
        })
    }

    /// Parses `initializationOptions` (same keys and nesting as the TOML).
    pub fn from_json(source: &str, value: &serde_json::Value) -> Result<Self, ConfigError> {
        if value.is_null() {
            return Ok(PartialConfig::default());
        }
        PartialConfig::deserialize(value)
            .map_err(|e| ConfigError::Invalid { file: source.to_owned(), detail: e.to_string() })
    }

    /// The session id requested by this source (`session_id` or `[session] id`).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref().or(self.session.id.as_deref())
    }

    /// Drops what an untrusted source may not set, each section deciding for its keys against
    /// the settings the sources before it left (`config`, `servers`), and warns once per group
    /// of dropped keys. `trusted_workspaces` is read only from the user config; a workspace
    /// naming it is told so.
    fn restrict_untrusted(
        &mut self,
        source: &str,
        config: &Config,
        servers: &ServerEntries,
        warnings: &mut Vec<String>,
    ) {
        let trust = self.trusted_workspaces.take().map(|_| "trusted_workspaces".to_owned());
        let dropped = [
            self.limits.restrict_untrusted(&config.limits),
            self.spill.restrict_untrusted(&config.spill_max_inline_bytes),
            self.session.restrict_untrusted(&config.session_settings()),
            self.fs.restrict_untrusted(&config.fs),
            self.lsp.restrict_untrusted(&config.lsp_servers),
            self.mcp.own.restrict_untrusted(&config.mcp),
            self.mcp.servers.restrict_untrusted(servers),
            self.shell.restrict_untrusted(&config.shell),
            self.review.restrict_untrusted(&config.review),
            self.interact.restrict_untrusted(&config.interact),
            self.plan.restrict_untrusted(&config.plan_active),
            self.skills.restrict_untrusted(&config.skill_dirs),
            self.web.restrict_untrusted(&config.web),
            self.agent.restrict_untrusted(&config.agent),
            self.code.restrict_untrusted(&config.code),
            self.workflow.restrict_untrusted(&config.workflow),
            self.acp.restrict_untrusted(&config.acp),
            self.world.restrict_untrusted(&config.world),
            trust.into_iter().collect(),
        ];
        for group in dropped.into_iter().flatten() {
            warnings.push(format!(
                "{source}: ignored {group}: the workspace is not trusted (run `toolhost trust` to allow it)"
            ));
        }
    }

    /// Applies every section of this source over `config` (the MCP servers' entries merge into
    /// `servers`, turned into configurations once every source is applied).
    fn apply(self, config: &mut Config, servers: &mut ServerEntries, layer: &mut Layer<'_>) {
        self.limits.apply(&mut config.limits, layer);
        self.spill.apply(&mut config.spill_max_inline_bytes, layer);
        let mut session = config.session_settings();
        self.session.apply(&mut session, layer);
        (config.session_dir, config.session_durability) = (session.dir, session.durability);
        self.fs.apply(&mut config.fs, layer);
        self.lsp.apply(&mut config.lsp_servers, layer);
        self.mcp.own.apply(&mut config.mcp, layer);
        self.mcp.servers.apply(servers, layer);
        self.shell.apply(&mut config.shell, layer);
        self.review.apply(&mut config.review, layer);
        self.interact.apply(&mut config.interact, layer);
        self.plan.apply(&mut config.plan_active, layer);
        self.skills.apply(&mut config.skill_dirs, layer);
        self.web.apply(&mut config.web, layer);
        self.agent.apply(&mut config.agent, layer);
        self.code.apply(&mut config.code, layer);
        self.workflow.apply(&mut config.workflow, layer);
        self.acp.apply(&mut config.acp, layer);
        self.world.apply(&mut config.world, layer);
    }
}

/// Where the user config lives.
pub fn user_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("toolhost").join("config.toml"));
    }
    std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".config").join("toolhost").join("config.toml"))
}

fn read_optional(path: &Path) -> Result<Option<String>, ConfigError> {
    // Never blocks: a cloned repository may ship a FIFO named `toolhost.toml`.
    match read_regular_text(path, MAX_CONFIG_BYTES) {
        Ok(text) => Ok(Some(text)),
        Err(RegularFileError::NotFound) => Ok(None),
        Err(e) => {
            Err(ConfigError::Unreadable { file: path.display().to_string(), detail: e.to_string() })
        }
    }
}

/// The largest configuration file read (a real one is a few kilobytes).
const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// The sources of one configuration, in order.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    pub user: Option<PartialConfig>,
    pub workspace: Option<PartialConfig>,
    pub init_options: Option<PartialConfig>,
    pub flags: Option<PartialConfig>,
}

impl Sources {
    /// Reads the user config and `<root>/toolhost.toml` from disk.
    pub fn load(root: &Path, user_path: Option<&Path>) -> Result<Self, ConfigError> {
        let mut sources = Sources::default();
        if let Some(path) = user_path
            && let Some(text) = read_optional(path)?
        {
            sources.user = Some(PartialConfig::from_toml(&path.display().to_string(), &text)?);
        }
        let ws_path = root.join("toolhost.toml");
        if let Some(text) = read_optional(&ws_path)? {
            sources.workspace =
                Some(PartialConfig::from_toml(&ws_path.display().to_string(), &text)?);
        }
        Ok(sources)
    }

    /// Merges the sources, applying the trust rule for `root`.
    pub fn resolve(self, root: &Path) -> Config {
        let mut config = Config::default();
        let trusted_list =
            self.user.as_ref().and_then(|u| u.trusted_workspaces.clone()).unwrap_or_default();
        let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let trusted = trusted_list
            .iter()
            .any(|t| t.canonicalize().unwrap_or_else(|_| t.clone()) == canonical_root);
        config.workspace_trusted = trusted;
        config.trusted_workspaces = trusted_list;
        let mut warnings = Vec::new();
        // The workspace's file and the editor's settings (which may come from it) are held to
        // what the sources before them set, so each is restricted just before it is applied.
        let layers = [
            ("user config", self.user, false),
            ("toolhost.toml", self.workspace, !trusted),
            ("initializationOptions", self.init_options, !trusted),
            ("flags", self.flags, false),
        ];
        let mut servers = ServerEntries::new();
        for (source, layer, untrusted) in layers {
            let Some(mut layer) = layer else { continue };
            if untrusted {
                layer.restrict_untrusted(source, &config, &servers, &mut warnings);
            }
            let mut layer_cx = Layer { source, root, warnings: &mut warnings };
            layer.apply(&mut config, &mut servers, &mut layer_cx);
        }
        config.mcp_servers = server_configs(servers, &mut warnings);
        if config.agent.cost_budget.is_some() && config.agent.price.is_none() {
            warnings.push(
                "[agent] cost_budget is ignored: without [agent] price there is no cost to count"
                    .to_owned(),
            );
        }
        config.warnings = warnings;
        config
    }
}

/// Adds `root` to the user config's `trusted_workspaces` (creating the file if needed).
pub fn trust_workspace(user_path: &Path, root: &Path) -> Result<bool, ConfigError> {
    let canonical = root.canonicalize().map_err(|e| ConfigError::Unreadable {
        file: root.display().to_string(),
        detail: e.to_string(),
    })?;
    let text = read_optional(user_path)?.unwrap_or_default();
    let mut doc: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::Invalid {
        file: user_path.display().to_string(),
        detail: e.to_string(),
    })?;
    let list = doc.entry("trusted_workspaces").or_insert_with(|| toml::Value::Array(Vec::new()));
    let toml::Value::Array(items) = list else {
        return Err(ConfigError::Invalid {
            file: user_path.display().to_string(),
            detail: "trusted_workspaces must be an array of paths".to_owned(),
        });
    };
    let entry = canonical.display().to_string();
    if items.iter().any(|i| i.as_str() == Some(&entry)) {
        return Ok(false);
    }
    items.push(toml::Value::String(entry));
    let rendered = toml::to_string(&doc).map_err(|e| ConfigError::Invalid {
        file: user_path.display().to_string(),
        detail: e.to_string(),
    })?;
    if let Some(parent) = user_path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ConfigError::Unreadable {
            file: parent.display().to_string(),
            detail: e.to_string(),
        })?;
    }
    std::fs::write(user_path, rendered).map_err(|e| ConfigError::Unreadable {
        file: user_path.display().to_string(),
        detail: e.to_string(),
    })?;
    Ok(true)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod untrusted_tests;
