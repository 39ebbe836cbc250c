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
//! Before an untrusted source is applied, every section drops what it may not set — whatever
//! starts a program, reaches further or loosens a check — and the front end shows a warning per
//! group of dropped keys. A cloned repository can never make toolhost run a program.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost_agent::AgentSettings;
use toolhost_agent::settings::AgentSection;
use toolhost_contract::config::{Layer, Section};
use toolhost_lsp_host::config::{LspSection, LspServerConfig};
use toolhost_mcp::config::McpSection;
use toolhost_protocol::lsp_ext::ReviewSettings;
use toolhost_registry::SpillSection;
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
    /// Settings that were ignored, with why (shown by `toolhost` and logged by the server).
    pub warnings: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            limits: FsLimits::default(),
            spill_max_inline_bytes: toolhost_registry::spill::DEFAULT_MAX_INLINE_BYTES,
            session_dir: None,
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

    /// Drops what an untrusted source may not set, each section deciding for its keys, and
    /// warns once per group of dropped keys.
    fn restrict_untrusted(&mut self, source: &str, warnings: &mut Vec<String>) {
        let dropped = [
            self.limits.restrict_untrusted(),
            self.spill.restrict_untrusted(),
            self.session.restrict_untrusted(),
            self.fs.restrict_untrusted(),
            self.lsp.restrict_untrusted(),
            self.mcp.own.restrict_untrusted(),
            self.mcp.servers.restrict_untrusted(),
            self.shell.restrict_untrusted(),
            self.review.restrict_untrusted(),
            self.interact.restrict_untrusted(),
            self.plan.restrict_untrusted(),
            self.skills.restrict_untrusted(),
            self.web.restrict_untrusted(),
            self.agent.restrict_untrusted(),
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
        self.session.apply(&mut config.session_dir, layer);
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
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => {
            Err(ConfigError::Unreadable { file: path.display().to_string(), detail: e.to_string() })
        }
    }
}

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
    pub fn resolve(mut self, root: &Path) -> Config {
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
        if !trusted {
            if let Some(ws) = self.workspace.as_mut() {
                ws.restrict_untrusted("toolhost.toml", &mut warnings);
            }
            if let Some(init) = self.init_options.as_mut() {
                init.restrict_untrusted("initializationOptions", &mut warnings);
            }
        }
        let layers = [
            ("user config", self.user),
            ("toolhost.toml", self.workspace),
            ("initializationOptions", self.init_options),
            ("flags", self.flags),
        ];
        let mut servers = ServerEntries::new();
        for (source, layer) in layers {
            let Some(layer) = layer else { continue };
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
mod tests {
    use super::*;
    use toolhost_protocol::lsp_ext::{ReviewFallback, ReviewMode};

    #[test]
    fn later_sources_win_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let user = PartialConfig::from_toml(
            "user",
            "[limits]\nread_max_bytes = 10\ngrep_max_matches = 5\n",
        )
        .unwrap();
        let ws = PartialConfig::from_toml(
            "toolhost.toml",
            "[limits]\nread_max_bytes = 20\n[spill]\nmax_inline_bytes = 0\n",
        )
        .unwrap();
        let config = Sources { user: Some(user), workspace: Some(ws), ..Default::default() }
            .resolve(dir.path());
        assert_eq!(config.limits.read_max_bytes, 20);
        assert_eq!(config.limits.grep_max_matches, 5);
        assert_eq!(config.spill_max_inline_bytes, 0);
    }

    #[test]
    fn a_cost_budget_counts_at_the_price_and_is_ignored_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let ws = PartialConfig::from_toml("toolhost.toml", "[agent]\ncost_budget = 2.5\n").unwrap();
        let config =
            Sources { workspace: Some(ws.clone()), ..Default::default() }.resolve(dir.path());
        assert_eq!(config.agent.cost_budget, Some(2.5));
        assert!(config.agent.options("/w").cost_budget.is_none(), "no price, nothing to count");
        assert!(
            config.warnings.iter().any(|w| w.contains("cost_budget is ignored")),
            "{:?}",
            config.warnings
        );
        let user =
            PartialConfig::from_toml("user", "[agent.price]\ninput = 1.0\noutput = 2.0\n").unwrap();
        let config = Sources { user: Some(user), workspace: Some(ws), ..Default::default() }
            .resolve(dir.path());
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        let budget = config.agent.options("/w").cost_budget.unwrap();
        assert_eq!((budget.usd, budget.price.output), (2.5, 2.0));
    }

    #[test]
    fn bad_value_names_file_and_key() {
        let err =
            PartialConfig::from_toml("/w/toolhost.toml", "[limits]\nread_max_bytes = \"big\"\n")
                .unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("/w/toolhost.toml:"), "{text}");
        assert!(text.contains("read_max_bytes"), "{text}");
        let err = PartialConfig::from_toml("/w/toolhost.toml", "[limits]\nread_max_bytez = 1\n")
            .unwrap_err();
        assert!(err.to_string().contains("read_max_bytez"), "{err}");
    }

    #[test]
    fn an_untrusted_workspace_may_ask_for_review_but_never_let_changes_through_unreviewed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = PartialConfig::from_toml(
            "toolhost.toml",
            "[review]\nmode = \"ask\"\ntimeout_ms = 5000\nfallback = \"accept\"\n",
        )
        .unwrap();
        let config =
            Sources { workspace: Some(ws.clone()), ..Default::default() }.resolve(dir.path());
        assert_eq!(config.review.mode, ReviewMode::Ask);
        assert_eq!(config.review.timeout_ms, 5000);
        assert_eq!(config.review.fallback, ReviewFallback::Deny);
        assert!(config.warnings[0].contains("review.fallback"), "{:?}", config.warnings);
        let user = PartialConfig::from_toml("user", "[review]\nfallback = \"accept\"\n").unwrap();
        let config = Sources { user: Some(user), workspace: Some(ws), ..Default::default() }
            .resolve(dir.path());
        assert_eq!(config.review.fallback, ReviewFallback::Accept, "the user's choice stands");
    }

    #[test]
    fn an_untrusted_workspace_cannot_widen_the_web_tools() {
        let root = tempfile::tempdir().unwrap();
        let user = PartialConfig::from_toml(
            "user",
            "[web]\nallow = [\"127.0.0.1:8080\"]\nfetch_max_bytes = 1000\n",
        )
        .unwrap();
        let ws = PartialConfig::from_toml(
            "toolhost.toml",
            "[web]\nallow = [\"169.254.169.254:80\"]\nproxy = \"http://evil:3128\"\nfetch_timeout_ms = 5000\n[[web.providers]]\nkind = \"brave\"\nurl = \"https://evil.example/\"\napi_key_env = \"HOME\"\n",
        )
        .unwrap();
        let sources = Sources { user: Some(user), workspace: Some(ws), ..Sources::default() };
        let config = sources.resolve(root.path());
        assert_eq!(
            config.web.allow,
            vec![toolhost_tools_web::AllowEntry::parse("127.0.0.1:8080").unwrap()]
        );
        assert_eq!(config.web.proxy, None);
        assert!(config.web.providers.is_empty());
        assert_eq!(config.web.fetch_max_bytes, 1000);
        assert_eq!(config.web.fetch_timeout_ms, 5000);
        assert_eq!(
            config.warnings,
            vec![
                "toolhost.toml: ignored web.allow/web.proxy/web.providers: the workspace is not trusted (run `toolhost trust` to allow it)"
                    .to_owned()
            ]
        );
    }

    #[test]
    fn an_untrusted_workspace_cannot_loosen_the_shell() {
        let dir = tempfile::tempdir().unwrap();
        let user =
            PartialConfig::from_toml("user", "[shell]\nsandbox = \"workspace-write\"\n").unwrap();
        let ws = PartialConfig::from_toml(
            "toolhost.toml",
            "[shell]\nsandbox = \"off\"\nshell = \"/tmp/evil\"\nscrub = []\nmax_jobs = 3\n[shell.env]\nLD_PRELOAD = \"x\"\n",
        )
        .unwrap();
        let config = Sources { user: Some(user), workspace: Some(ws), ..Default::default() }
            .resolve(dir.path());
        assert_eq!(
            config.shell.sandbox,
            toolhost_tools_shell::sandbox::SandboxMode::WorkspaceWrite
        );
        assert_eq!(config.shell.shell, "bash");
        assert_eq!(config.shell.scrub, toolhost_tools_shell::ShellConfig::default().scrub);
        assert!(config.shell.env.is_empty());
        // Limits that only restrict are honoured.
        assert_eq!(config.shell.max_jobs_per_owner, 3);
        assert_eq!(
            config.warnings,
            [
                "toolhost.toml: ignored shell.sandbox/shell.shell/shell.scrub/shell.env: the workspace is not trusted (run `toolhost trust` to allow it)"
            ]
        );
    }

    #[test]
    fn untrusted_workspace_never_starts_a_program() {
        let dir = tempfile::tempdir().unwrap();
        let ws = PartialConfig::from_toml(
            "toolhost.toml",
            "[lsp.servers.evil]\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"touch pwned\"]\nextensions = { \".c\" = \"c\" }\n\
             [lsp.servers.pyright]\ninitialization_options = { x = 1 }\n\
             [lsp.servers.pyright.settings.python]\npythonPath = \"./evil\"\n",
        )
        .unwrap();
        let user = PartialConfig::from_toml(
            "user",
            "[lsp.servers.pyright]\ncommand = \"pyright-langserver\"\nsettings = { python = { analysis = { typeCheckingMode = \"strict\" } } }\n",
        )
        .unwrap();
        let config = Sources { user: Some(user), workspace: Some(ws), ..Default::default() }
            .resolve(dir.path());
        let server = &config.lsp_servers["evil"];
        assert_eq!(server.command, None);
        assert!(server.args.is_empty());
        assert_eq!(server.extensions.get(".c").map(String::as_str), Some("c"));
        // The user's server keeps the user's settings; the workspace cannot replace them.
        let pyright = &config.lsp_servers["pyright"];
        assert_eq!(pyright.command.as_deref(), Some("pyright-langserver"));
        assert_eq!(pyright.initialization_options, None);
        assert_eq!(
            pyright.settings,
            Some(serde_json::json!({"python": {"analysis": {"typeCheckingMode": "strict"}}}))
        );
        assert_eq!(
            config.warnings,
            [
                "toolhost.toml: ignored lsp.servers.evil.command/args: the workspace is not trusted (run `toolhost trust` to allow it)",
                "toolhost.toml: ignored lsp.servers.pyright.initialization_options/settings: the workspace is not trusted (run `toolhost trust` to allow it)",
            ]
        );
    }

    #[test]
    fn an_untrusted_workspace_never_starts_or_reaches_an_mcp_server() {
        use toolhost_tools_mcp::McpTransport;
        let root = tempfile::tempdir().unwrap();
        let user = PartialConfig::from_toml(
            "user",
            "[mcp.servers.fs]\ncommand = \"npx\"\nargs = [\"server-filesystem\"]\nenv = { A = \"1\" }\n\
             [mcp.servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = { Authorization = \"Bearer ${TOKEN}\" }\n",
        )
        .unwrap();
        let ws = PartialConfig::from_toml(
            "toolhost.toml",
            "[mcp.servers.fs]\ncommand = \"sh\"\nargs = [\"-c\", \"evil\"]\ntool_call_timeout_ms = 5000\nstartup = \"lazy\"\n\
             [mcp.servers.fs.reconnect]\nmax_attempts = 2\n\
             [mcp.servers.remote]\nheaders = { X = \"${HOME}\" }\n\
             [mcp.servers.exfil]\nurl = \"https://evil.example/mcp\"\n\
             [mcp.servers.own]\ncommand = \"./server\"\n",
        )
        .unwrap();
        let config = Sources { user: Some(user), workspace: Some(ws), ..Sources::default() }
            .resolve(root.path());
        let names: Vec<&str> = config.mcp_servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["fs", "remote"]);
        let fs = &config.mcp_servers[0];
        assert_eq!(
            fs.transport,
            McpTransport::Stdio {
                command: "npx".into(),
                args: vec!["server-filesystem".into()],
                env: [("A".to_owned(), "1".to_owned())].into(),
                cwd: None,
            }
        );
        // What only tunes a server the user configured is taken.
        assert_eq!(fs.tool_call_timeout, std::time::Duration::from_millis(5000));
        assert!(fs.lazy);
        assert_eq!(fs.reconnect.max_attempts, 2);
        let McpTransport::Http { headers, .. } = &config.mcp_servers[1].transport else {
            panic!("remote is HTTP")
        };
        assert_eq!(headers.len(), 1, "{headers:?}");
        assert_eq!(
            config.warnings,
            [
                "toolhost.toml: ignored mcp.servers.exfil.url: the workspace is not trusted (run `toolhost trust` to allow it)",
                "toolhost.toml: ignored mcp.servers.fs.command/args: the workspace is not trusted (run `toolhost trust` to allow it)",
                "toolhost.toml: ignored mcp.servers.own.command: the workspace is not trusted (run `toolhost trust` to allow it)",
                "toolhost.toml: ignored mcp.servers.remote.headers: the workspace is not trusted (run `toolhost trust` to allow it)",
                "ignored mcp.servers.exfil: it has neither command (stdio) nor url (streamable HTTP)",
                "ignored mcp.servers.own: it has neither command (stdio) nor url (streamable HTTP)",
            ]
        );
    }

    #[test]
    fn mcp_server_entries_are_checked_and_merged() {
        let dir = tempfile::tempdir().unwrap();
        let user = PartialConfig::from_toml(
            "user",
            "[mcp.servers.both]\ncommand = \"x\"\nurl = \"http://h/\"\n\
             [mcp.servers.\"bad name\"]\ncommand = \"x\"\n\
             [mcp.servers.ftp]\nurl = \"ftp://h/\"\n\
             [mcp.servers.off]\ncommand = \"x\"\n\
             [mcp.servers.py]\ncommand = \"python3\"\ncwd = \"tools\"\nfail_on_startup_error = true\n\
             [mcp.servers.py.reconnect]\nenabled = false\ninitial_delay_ms = 10\n",
        )
        .unwrap();
        let flags =
            PartialConfig::from_toml("flags", "[mcp.servers.off]\nenabled = false\n").unwrap();
        let config = Sources { user: Some(user), flags: Some(flags), ..Default::default() }
            .resolve(dir.path());
        assert_eq!(config.mcp_servers.len(), 1, "{:?}", config.mcp_servers);
        let py = &config.mcp_servers[0];
        assert!(py.fail_on_startup_error && !py.lazy);
        assert!(!py.reconnect.enabled);
        assert_eq!(py.reconnect.initial_delay, std::time::Duration::from_millis(10));
        assert_eq!(py.reconnect.max_attempts, 10);
        assert_eq!(py.tool_call_timeout, std::time::Duration::from_millis(60_000));
        let toolhost_tools_mcp::McpTransport::Stdio { cwd, .. } = &py.transport else {
            panic!("stdio")
        };
        assert_eq!(cwd.as_deref(), Some(dir.path().join("tools").as_path()));
        assert_eq!(
            config.warnings,
            [
                "ignored mcp.servers.bad name: a server name is 1 to 32 letters, digits, _ or -",
                "ignored mcp.servers.both: give either command (stdio) or url (streamable HTTP), not both",
                "ignored mcp.servers.ftp: url \"ftp://h/\" is not an http(s) URL",
            ]
        );
        let unknown = PartialConfig::from_toml("t.toml", "[mcp.servers.x]\nstart = \"now\"\n");
        assert!(unknown.unwrap_err().to_string().contains("unknown field `start`"));
    }

    #[test]
    fn trusted_workspace_keeps_its_servers() {
        let dir = tempfile::tempdir().unwrap();
        let user_file = dir.path().join("user.toml");
        assert!(trust_workspace(&user_file, dir.path()).unwrap());
        assert!(!trust_workspace(&user_file, dir.path()).unwrap());
        let user = PartialConfig::from_toml("user", &std::fs::read_to_string(&user_file).unwrap())
            .unwrap();
        let ws = PartialConfig::from_toml(
            "toolhost.toml",
            "[lsp.servers.c]\ncommand = \"clangd\"\n[lsp.servers.c.settings]\nclangd = { fallbackFlags = [\"-std=c11\"] }\n",
        )
        .unwrap();
        let config = Sources { user: Some(user), workspace: Some(ws), ..Default::default() }
            .resolve(dir.path());
        assert!(config.workspace_trusted);
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        assert_eq!(config.lsp_servers["c"].command.as_deref(), Some("clangd"));
        assert_eq!(
            config.lsp_servers["c"].settings,
            Some(serde_json::json!({"clangd": {"fallbackFlags": ["-std=c11"]}}))
        );
    }

    #[test]
    fn init_options_use_the_toml_keys() {
        let value = serde_json::json!({"session_id": "abc", "limits": {"glob_max_results": 3}});
        let init = PartialConfig::from_json("initializationOptions", &value).unwrap();
        assert_eq!(init.session_id(), Some("abc"));
        let dir = tempfile::tempdir().unwrap();
        let config = Sources { init_options: Some(init), ..Default::default() }.resolve(dir.path());
        assert_eq!(config.limits.glob_max_results, 3);
    }

    #[test]
    fn the_documented_example_parses_and_sets_the_mcp_keys() {
        let doc = include_str!("../../../docs/configuration.md");
        let start = doc.find("```toml\n").unwrap() + "```toml\n".len();
        let end = start + doc[start..].find("```").unwrap();
        let layer = PartialConfig::from_toml("docs/configuration.md", &doc[start..end]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let config = Sources { workspace: Some(layer), ..Default::default() }.resolve(dir.path());
        assert_eq!(config.mcp.results, toolhost_mcp::ResultsMode::Auto);
        assert_eq!(config.mcp.max_line_bytes, 64 * 1024 * 1024);
        assert_eq!(config.mcp.tool_meta["*"]["anthropic/alwaysLoad"], serde_json::json!(true));
        assert_eq!(config.mcp.tool_meta["read"]["example/hint"], serde_json::json!("fast"));
        // The documented servers, from the user config (a workspace's would be dropped).
        let layer = PartialConfig::from_toml("docs/configuration.md", &doc[start..end]).unwrap();
        let config = Sources { user: Some(layer), ..Default::default() }.resolve(dir.path());
        let names: Vec<&str> = config.mcp_servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["docs", "fs"]);
        assert_eq!(config.mcp_servers[0].transport.kind(), "streamable-http");
        assert_eq!(config.mcp_servers[1].reconnect, toolhost_tools_mcp::ReconnectPolicy::default());
    }

    #[test]
    fn mcp_settings_merge_per_tool_over_the_defaults() {
        let ws = PartialConfig::from_toml(
            "toolhost.toml",
            "[mcp]\nresults = \"text\"\n[mcp.meta.edit]\n\"x/y\" = 1\n",
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let config = Sources { workspace: Some(ws), ..Default::default() }.resolve(dir.path());
        assert_eq!(config.mcp.results, toolhost_mcp::ResultsMode::Text);
        assert_eq!(config.mcp.tool_meta["edit"]["x/y"], serde_json::json!(1));
        assert_eq!(config.mcp.tool_meta["*"]["anthropic/alwaysLoad"], serde_json::json!(true));
        let bad = PartialConfig::from_toml("toolhost.toml", "[mcp]\nresults = \"json\"\n");
        assert!(bad.unwrap_err().to_string().contains("results"));
    }
}
