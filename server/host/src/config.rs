//! Configuration (docs/configuration.md): user config → workspace `toolhost.toml` →
//! `initializationOptions` → CLI flags, later sources winning key by key.
//!
//! Trust rule: settings that start a program or steer what a language server runs
//! (`lsp.servers.*.command`, `args`, `env`, `initialization_options`, `settings`) are taken only
//! from the user config or from a workspace the user marked trusted (`trusted_workspaces` in the
//! user config, written by `toolhost trust`). A cloned repository's `toolhost.toml` — or editor
//! settings that may come from it — can never make toolhost run a program. The same holds for
//! what widens the web tools' reach: `[web] allow`, `proxy` and `providers` (an endpoint and the
//! name of a key variable could send a credential anywhere), and for MCP servers
//! (`[mcp.servers.<name>]`): an untrusted source can neither start a server (`command`, `args`,
//! `env`, `cwd`) nor point toolhost at one (`url`, `headers`, whose `${VAR}` would send a
//! credential there); it may only tune servers the user configured.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost_protocol::lsp_ext::{ReviewFallback, ReviewMode, ReviewSettings};
use toolhost_tools_fs::FsLimits;

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

/// The effective configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The file tools' caps (`[limits]`), the documented defaults unless configured.
    pub limits: FsLimits,
    pub spill_max_inline_bytes: u64,
    pub session_dir: Option<PathBuf>,
    pub extra_roots: Vec<PathBuf>,
    pub protected: Vec<String>,
    pub lsp_servers: BTreeMap<String, LspServerConfig>,
    pub trusted_workspaces: Vec<PathBuf>,
    /// Whether the workspace is trusted (so its program-starting settings were honoured).
    pub workspace_trusted: bool,
    /// `[mcp]`: how `toolhost mcp` presents tools and results.
    pub mcp: toolhost_mcp::McpConfig,
    /// `[mcp.servers.<name>]`: the MCP servers whose tools the bridge brings in, valid entries
    /// only (the others are in `warnings`).
    pub mcp_servers: Vec<toolhost_tools_mcp::McpServerConfig>,
    /// `[shell]`: whether `bash` and the job tools are registered.
    pub shell_enabled: bool,
    /// `[shell]`: their limits and environment.
    pub shell: toolhost_tools_shell::ShellConfig,
    /// `[review]`: whether writes and edits wait for the person's review, how long, and what
    /// happens when nobody answers (a session may change them with `toolhost/setReview`).
    pub review: ReviewSettings,
    /// `[interact]`: the interaction tools' settings.
    pub interact: toolhost_tools_interact::InteractConfig,
    /// `[plan] active`: sessions start in plan mode.
    pub plan_active: bool,
    /// `[skills] dirs`: more folders to find skills in (each holds `<name>/SKILL.md`).
    pub skill_dirs: Vec<PathBuf>,
    /// `[web]`: the web tools, their SSRF allow list, proxy, search providers and caps.
    pub web: toolhost_tools_web::WebConfig,
    /// `[agent]`: toolhost's own agent — the model, the permission mode, the run's bounds.
    pub agent: toolhost_agent::AgentSettings,
    /// Settings that were ignored, with why (shown by `toolhost` and logged by the server).
    pub warnings: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            limits: FsLimits::default(),
            spill_max_inline_bytes: 51_200,
            session_dir: None,
            extra_roots: Vec::new(),
            protected: default_protected(),
            lsp_servers: BTreeMap::new(),
            trusted_workspaces: Vec::new(),
            workspace_trusted: false,
            mcp: toolhost_mcp::McpConfig::default(),
            mcp_servers: Vec::new(),
            shell_enabled: true,
            shell: toolhost_tools_shell::ShellConfig::default(),
            review: ReviewSettings {
                mode: ReviewMode::Off,
                timeout_ms: crate::review::DEFAULT_TIMEOUT_MS,
                fallback: ReviewFallback::Deny,
            },
            interact: toolhost_tools_interact::InteractConfig::default(),
            plan_active: false,
            skill_dirs: Vec::new(),
            web: toolhost_tools_web::WebConfig::default(),
            agent: toolhost_agent::AgentSettings::default(),
            warnings: Vec::new(),
        }
    }
}

/// The default protected paths (readable, never written by tools).
pub fn default_protected() -> Vec<String> {
    vec![".git/".to_owned(), "toolhost.toml".to_owned(), ".toolhost/".to_owned()]
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialLimits {
    read_limit: Option<u64>,
    read_max_bytes: Option<u64>,
    read_max_line_length: Option<u64>,
    glob_max_results: Option<u64>,
    grep_max_matches: Option<u64>,
    grep_max_line_bytes: Option<u64>,
    search_meta_max_bytes: Option<u64>,
    glob_sample_over_cap: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialSpill {
    max_inline_bytes: Option<u64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialSession {
    dir: Option<PathBuf>,
    /// Accepted in `initializationOptions` (the session to resume); ignored in files.
    id: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialFs {
    extra_roots: Option<Vec<PathBuf>>,
    protected: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialLsp {
    servers: BTreeMap<String, LspServerConfig>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialMcp {
    results: Option<toolhost_mcp::ResultsMode>,
    /// `_meta` per listed tool (`"*"`: every tool); tables merge key by key across sources.
    meta: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
    max_line_bytes: Option<usize>,
    servers: BTreeMap<String, PartialMcpServer>,
}

/// One `[mcp.servers.<name>]` entry; sources merge key by key.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialMcpServer {
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
    startup: Option<McpStartup>,
    /// `false` switches a server of an earlier source off.
    enabled: Option<bool>,
    reconnect: PartialReconnect,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum McpStartup {
    Eager,
    Lazy,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialReconnect {
    enabled: Option<bool>,
    initial_delay_ms: Option<u64>,
    max_delay_ms: Option<u64>,
    max_attempts: Option<u32>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialShell {
    enabled: Option<bool>,
    default_timeout_ms: Option<u64>,
    max_timeout_ms: Option<u64>,
    max_output_bytes: Option<usize>,
    max_spill_bytes: Option<u64>,
    background: Option<bool>,
    max_jobs: Option<usize>,
    kill_grace_ms: Option<u64>,
    sandbox: Option<toolhost_tools_shell::sandbox::SandboxMode>,
    /// Program-starting or credential-exposing: user config or a trusted workspace only.
    shell: Option<String>,
    scrub: Option<Vec<String>>,
    env: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialReview {
    mode: Option<ReviewMode>,
    timeout_ms: Option<u64>,
    /// Writing unreviewed changes weakens review: user config or a trusted workspace only.
    fallback: Option<ReviewFallback>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialInteract {
    allow_parallel_in_progress: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialPlan {
    active: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialSkills {
    dirs: Option<Vec<PathBuf>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialWeb {
    fetch: Option<bool>,
    search: Option<bool>,
    /// Widens what the agent can reach: user config or a trusted workspace only.
    allow: Option<Vec<String>>,
    /// Sees every fetch: user config or a trusted workspace only.
    proxy: Option<String>,
    /// Endpoints and the names of key variables (a key could be sent anywhere): user config or
    /// a trusted workspace only.
    providers: Option<Vec<PartialProvider>>,
    search_max_results: Option<usize>,
    search_max_queries: Option<usize>,
    search_timeout_ms: Option<u64>,
    fetch_timeout_ms: Option<u64>,
    fetch_max_output_chars: Option<usize>,
    fetch_max_bytes: Option<usize>,
    cache_ttl_ms: Option<u64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PartialAgent {
    /// Where the conversation (and the key) goes: user config or a trusted workspace only.
    base_url: Option<String>,
    model: Option<String>,
    /// Which variable's value is sent as the key: user config or a trusted workspace only.
    api_key_env: Option<String>,
    /// Fields merged into every request (e.g. `thinking = {type = "enabled"}`).
    request: Option<BTreeMap<String, serde_json::Value>>,
    /// `auto` lets the agent act without asking: user config or a trusted workspace only.
    mode: Option<toolhost_agent::PermissionMode>,
    max_turns: Option<u32>,
    token_budget: Option<u64>,
    /// US dollars (needs `price`); `0` means none.
    cost_budget: Option<f64>,
    /// `0` never compacts.
    context_limit: Option<u64>,
    compact_threshold: Option<f64>,
    system_prompt: Option<String>,
    price: Option<toolhost_agent::Price>,
}

/// One `[[web.providers]]` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartialProvider {
    /// `searxng`, `brave` or `tavily`.
    kind: String,
    url: Option<String>,
    /// The environment variable that holds the API key (Brave, Tavily).
    api_key_env: Option<String>,
}

/// One source's settings, every key optional.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PartialConfig {
    limits: PartialLimits,
    spill: PartialSpill,
    session: PartialSession,
    fs: PartialFs,
    lsp: PartialLsp,
    mcp: PartialMcp,
    shell: PartialShell,
    review: PartialReview,
    interact: PartialInteract,
    plan: PartialPlan,
    skills: PartialSkills,
    web: PartialWeb,
    agent: PartialAgent,
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

    /// Drops everything of `[lsp.servers.*]` that starts a program or steers what a language
    /// server runs: the command, its arguments and environment, and the options and settings
    /// handed to the server (pyright's `python.pythonPath` names an interpreter it executes).
    fn strip_program_settings(&mut self, source: &str, warnings: &mut Vec<String>) {
        let mut ignored = Vec::new();
        // Only the user may turn confinement off; a workspace may only turn it on.
        if self.shell.sandbox == Some(toolhost_tools_shell::sandbox::SandboxMode::Off) {
            self.shell.sandbox = None;
            ignored.push("shell.sandbox");
        }
        if self.shell.shell.take().is_some() {
            ignored.push("shell.shell");
        }
        if self.shell.scrub.take().is_some() {
            ignored.push("shell.scrub");
        }
        if !std::mem::take(&mut self.shell.env).is_empty() {
            ignored.push("shell.env");
        }
        // What the web tools may reach, through what, and where keys go: never a workspace's say.
        if self.web.allow.take().is_some() {
            ignored.push("web.allow");
        }
        if self.web.proxy.take().is_some() {
            ignored.push("web.proxy");
        }
        if self.web.providers.take().is_some() {
            ignored.push("web.providers");
        }
        // The agent's endpoint and key, and acting without asking: never a workspace's say.
        if self.agent.base_url.take().is_some() {
            ignored.push("agent.base_url");
        }
        if self.agent.api_key_env.take().is_some() {
            ignored.push("agent.api_key_env");
        }
        if self.agent.mode == Some(toolhost_agent::PermissionMode::Auto) {
            self.agent.mode = None;
            ignored.push("agent.mode");
        }
        // MCP servers: a workspace may tune the user's servers, never start or reach one.
        for (name, server) in &mut self.mcp.servers {
            let mut ignored = Vec::new();
            if server.command.take().is_some() {
                ignored.push("command");
            }
            if server.args.take().is_some() {
                ignored.push("args");
            }
            if !std::mem::take(&mut server.env).is_empty() {
                ignored.push("env");
            }
            if server.cwd.take().is_some() {
                ignored.push("cwd");
            }
            if server.url.take().is_some() {
                ignored.push("url");
            }
            if !std::mem::take(&mut server.headers).is_empty() {
                ignored.push("headers");
            }
            if !ignored.is_empty() {
                warnings.push(format!(
                    "{source}: ignored mcp.servers.{name}.{}: the workspace is not trusted (run `toolhost trust` to allow it)",
                    ignored.join("/")
                ));
            }
        }
        // A workspace may ask for review, never let unreviewed changes through.
        if self.review.fallback == Some(ReviewFallback::Accept) {
            self.review.fallback = None;
            ignored.push("review.fallback");
        }
        if !ignored.is_empty() {
            warnings.push(format!(
                "{source}: ignored {}: the workspace is not trusted (run `toolhost trust` to allow it)",
                ignored.join("/")
            ));
        }
        for (id, server) in &mut self.lsp.servers {
            let mut ignored = Vec::new();
            if server.command.take().is_some() {
                ignored.push("command");
            }
            if !std::mem::take(&mut server.args).is_empty() {
                ignored.push("args");
            }
            if !std::mem::take(&mut server.env).is_empty() {
                ignored.push("env");
            }
            if server.initialization_options.take().is_some() {
                ignored.push("initialization_options");
            }
            if server.settings.take().is_some() {
                ignored.push("settings");
            }
            if !ignored.is_empty() {
                warnings.push(format!(
                    "{source}: ignored lsp.servers.{id}.{}: the workspace is not trusted (run `toolhost trust` to allow it)",
                    ignored.join("/")
                ));
            }
        }
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
        if !trusted {
            let mut warnings = Vec::new();
            if let Some(ws) = self.workspace.as_mut() {
                ws.strip_program_settings("toolhost.toml", &mut warnings);
            }
            if let Some(init) = self.init_options.as_mut() {
                init.strip_program_settings("initializationOptions", &mut warnings);
            }
            config.warnings = warnings;
        }
        let layers = [self.user, self.workspace, self.init_options, self.flags];
        let mut mcp_servers: BTreeMap<String, PartialMcpServer> = BTreeMap::new();
        for layer in layers.into_iter().flatten() {
            for (name, server) in &layer.mcp.servers {
                merge_mcp_server(mcp_servers.entry(name.clone()).or_default(), server.clone());
            }
            apply(&mut config, layer, root);
        }
        config.mcp_servers = mcp_server_configs(mcp_servers, root, &mut config.warnings);
        if config.agent.cost_budget.is_some() && config.agent.price.is_none() {
            config.warnings.push(
                "[agent] cost_budget is ignored: without [agent] price there is no cost to count"
                    .to_owned(),
            );
        }
        config
    }
}

fn apply(config: &mut Config, layer: PartialConfig, root: &Path) {
    let l = layer.limits;
    let limits = &mut config.limits;
    macro_rules! set {
        ($field:ident) => {
            if let Some(v) = l.$field {
                limits.$field = v;
            }
        };
    }
    set!(read_limit);
    set!(read_max_bytes);
    set!(read_max_line_length);
    set!(glob_max_results);
    set!(grep_max_matches);
    set!(grep_max_line_bytes);
    set!(search_meta_max_bytes);
    set!(glob_sample_over_cap);
    if let Some(v) = layer.spill.max_inline_bytes {
        config.spill_max_inline_bytes = v;
    }
    if let Some(dir) = layer.session.dir {
        config.session_dir = Some(dir);
    }
    if let Some(roots) = layer.fs.extra_roots {
        config.extra_roots =
            roots.into_iter().map(|r| if r.is_absolute() { r } else { root.join(r) }).collect();
    }
    if let Some(protected) = layer.fs.protected {
        config.protected = protected;
    }
    if let Some(results) = layer.mcp.results {
        config.mcp.results = results;
    }
    if let Some(mode) = layer.review.mode {
        config.review.mode = mode;
    }
    if let Some(timeout) = layer.review.timeout_ms {
        config.review.timeout_ms = timeout.max(1);
    }
    if let Some(fallback) = layer.review.fallback {
        config.review.fallback = fallback;
    }
    if let Some(parallel) = layer.interact.allow_parallel_in_progress {
        config.interact.allow_parallel_in_progress = parallel;
    }
    if let Some(active) = layer.plan.active {
        config.plan_active = active;
    }
    if let Some(dirs) = layer.skills.dirs {
        config.skill_dirs =
            dirs.into_iter().map(|d| if d.is_absolute() { d } else { root.join(d) }).collect();
    }
    if let Some(max) = layer.mcp.max_line_bytes {
        config.mcp.max_line_bytes = max;
    }
    for (tool, entries) in layer.mcp.meta {
        config.mcp.tool_meta.entry(tool).or_default().extend(entries);
    }
    apply_shell(config, layer.shell);
    apply_web(config, layer.web);
    apply_agent(config, layer.agent);
    for (id, server) in layer.lsp.servers {
        let entry = config.lsp_servers.entry(id).or_default();
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

fn merge_mcp_server(entry: &mut PartialMcpServer, layer: PartialMcpServer) {
    macro_rules! take {
        ($($field:ident).+) => {
            if layer.$($field).+.is_some() {
                entry.$($field).+ = layer.$($field).+;
            }
        };
    }
    take!(command);
    take!(args);
    take!(cwd);
    take!(url);
    take!(tool_call_timeout_ms);
    take!(fail_on_startup_error);
    take!(startup);
    take!(enabled);
    take!(reconnect.enabled);
    take!(reconnect.initial_delay_ms);
    take!(reconnect.max_delay_ms);
    take!(reconnect.max_attempts);
    entry.env.extend(layer.env);
    entry.headers.extend(layer.headers);
}

/// The merged entries as bridge configurations; an entry that cannot work is dropped with a
/// warning naming it (a bad name, neither or both of `command` and `url`, a bad URL).
fn mcp_server_configs(
    entries: BTreeMap<String, PartialMcpServer>,
    root: &Path,
    warnings: &mut Vec<String>,
) -> Vec<toolhost_tools_mcp::McpServerConfig> {
    use toolhost_tools_mcp::{McpServerConfig, McpTransport, ReconnectPolicy};
    let mut servers = Vec::new();
    for (name, entry) in entries {
        if entry.enabled == Some(false) {
            continue;
        }
        if !toolhost_tools_mcp::naming::valid_server_name(&name) {
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
                cwd: entry.cwd.map(|c| if c.is_absolute() { c } else { root.join(c) }),
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
            server.tool_call_timeout = std::time::Duration::from_millis(ms);
        }
        server.fail_on_startup_error = entry.fail_on_startup_error.unwrap_or(false);
        server.lazy = entry.startup == Some(McpStartup::Lazy);
        let defaults = ReconnectPolicy::default();
        let r = entry.reconnect;
        server.reconnect = ReconnectPolicy {
            enabled: r.enabled.unwrap_or(defaults.enabled),
            initial_delay: r
                .initial_delay_ms
                .map_or(defaults.initial_delay, std::time::Duration::from_millis),
            max_delay: r.max_delay_ms.map_or(defaults.max_delay, std::time::Duration::from_millis),
            max_attempts: r.max_attempts.unwrap_or(defaults.max_attempts),
        };
        servers.push(server);
    }
    servers
}

fn apply_shell(config: &mut Config, layer: PartialShell) {
    let shell = &mut config.shell;
    if let Some(enabled) = layer.enabled {
        config.shell_enabled = enabled;
    }
    if let Some(v) = layer.default_timeout_ms.filter(|v| *v > 0) {
        shell.default_timeout_ms = v;
    }
    if let Some(v) = layer.max_timeout_ms.filter(|v| *v > 0) {
        shell.max_timeout_ms = v;
    }
    if let Some(v) = layer.max_output_bytes.filter(|v| *v > 0) {
        shell.max_output_bytes = v;
    }
    if let Some(v) = layer.max_spill_bytes {
        shell.max_spill_bytes = v;
    }
    if let Some(v) = layer.background {
        shell.background = v;
    }
    if let Some(v) = layer.max_jobs {
        shell.max_jobs_per_owner = v;
    }
    if let Some(mode) = layer.sandbox {
        shell.sandbox = mode;
    }
    if let Some(ms) = layer.kill_grace_ms {
        shell.kill_grace = std::time::Duration::from_millis(ms);
    }
    if let Some(program) = layer.shell.filter(|p| !p.is_empty()) {
        shell.shell = program;
    }
    if let Some(scrub) = layer.scrub {
        shell.scrub = scrub;
    }
    for (name, value) in layer.env {
        shell.env.retain(|(n, _)| *n != name);
        shell.env.push((name, value));
    }
}

fn apply_agent(config: &mut Config, layer: PartialAgent) {
    let agent = &mut config.agent;
    if let Some(url) = layer.base_url {
        agent.base_url = url;
    }
    if let Some(model) = layer.model {
        agent.model = model;
    }
    if let Some(name) = layer.api_key_env {
        agent.api_key_env = Some(name).filter(|n| !n.is_empty());
    }
    if let Some(request) = layer.request {
        agent.request.extend(request);
    }
    if let Some(mode) = layer.mode {
        agent.mode = mode;
    }
    if let Some(turns) = layer.max_turns {
        agent.max_turns = turns.max(1);
    }
    if let Some(budget) = layer.token_budget {
        agent.token_budget = Some(budget).filter(|b| *b > 0);
    }
    if let Some(budget) = layer.cost_budget {
        agent.cost_budget = Some(budget).filter(|b| *b > 0.0);
    }
    if let Some(limit) = layer.context_limit {
        agent.context_limit = Some(limit).filter(|l| *l > 0);
    }
    if let Some(threshold) = layer.compact_threshold {
        agent.compact_threshold = threshold;
    }
    if let Some(prompt) = layer.system_prompt {
        agent.system_prompt = Some(prompt).filter(|p| !p.trim().is_empty());
    }
    if let Some(price) = layer.price {
        agent.price = Some(price);
    }
}

fn apply_web(config: &mut Config, layer: PartialWeb) {
    let web = &mut config.web;
    if let Some(v) = layer.fetch {
        web.fetch = v;
    }
    if let Some(v) = layer.search {
        web.search = v;
    }
    if let Some(entries) = layer.allow {
        web.allow.clear();
        for entry in entries {
            match toolhost_tools_web::AllowEntry::parse(&entry) {
                Ok(entry) => web.allow.push(entry),
                Err(e) => config.warnings.push(format!("ignored {e}")),
            }
        }
    }
    if let Some(proxy) = layer.proxy {
        web.proxy = Some(proxy).filter(|p| !p.is_empty());
    }
    if let Some(providers) = layer.providers {
        web.providers.clear();
        for provider in providers {
            let Some(kind) = toolhost_tools_web::ProviderKind::parse(&provider.kind) else {
                config.warnings.push(format!(
                    "ignored [[web.providers]] kind \"{}\": expected searxng, brave or tavily",
                    provider.kind
                ));
                continue;
            };
            // The key is read now, from the variable the trusted configuration names.
            let api_key = provider
                .api_key_env
                .as_deref()
                .and_then(|name| std::env::var(name).ok())
                .filter(|key| !key.is_empty());
            web.providers.push(toolhost_tools_web::ProviderConfig {
                kind,
                url: provider.url,
                api_key_env: provider.api_key_env,
                api_key,
            });
        }
    }
    macro_rules! positive {
        ($field:ident) => {
            if let Some(v) = layer.$field.filter(|v| *v > 0) {
                web.$field = v;
            }
        };
    }
    positive!(search_max_results);
    positive!(search_max_queries);
    positive!(search_timeout_ms);
    positive!(fetch_timeout_ms);
    positive!(fetch_max_output_chars);
    positive!(fetch_max_bytes);
    if let Some(v) = layer.cache_ttl_ms {
        web.cache_ttl_ms = v;
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
