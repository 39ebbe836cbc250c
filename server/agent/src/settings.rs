//! `[agent]`: the model, the permission mode and the bounds of a run, with the built-in defaults
//! (DeepSeek's OpenAI-compatible API) and the system prompt.

use crate::agent::{AgentOptions, CompactionOptions, CostBudget};
use crate::model::{ModelConfig, Price};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// How much the agent may do without asking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Every call that changes something asks first.
    #[default]
    Ask,
    /// File edits in the workspace run; commands and other outside effects ask.
    AcceptEdits,
    /// Read-only tools only until the plan is approved (`exit_plan_mode`), then `accept-edits`.
    Plan,
    /// Nothing asks.
    Auto,
}

impl PermissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Ask => "ask",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Plan => "plan",
            PermissionMode::Auto => "auto",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "ask" => Some(PermissionMode::Ask),
            "accept-edits" => Some(PermissionMode::AcceptEdits),
            "plan" => Some(PermissionMode::Plan),
            "auto" => Some(PermissionMode::Auto),
            _ => None,
        }
    }
}

/// Who the cards of the own agent's calls name as the caller.
pub const CALLER: &str = "toolhost agent";

/// The default provider: DeepSeek's OpenAI-compatible API.
pub const DEFAULT_BASE_URL: &str = "https://api.deepseek.com";
pub const DEFAULT_MODEL: &str = "deepseek-v4-flash";
pub const DEFAULT_API_KEY_ENV: &str = "DEEPSEEK_API_KEY";
/// DeepSeek's context window.
pub const DEFAULT_CONTEXT_LIMIT: u64 = 128_000;

/// `[agent]`: the model, the permission mode and the run's bounds.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentSettings {
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the API key; `None` sends no key (a local server).
    pub api_key_env: Option<String>,
    /// Fields merged into every request (e.g. `thinking = {type = "enabled"}`).
    pub request: BTreeMap<String, Value>,
    pub mode: PermissionMode,
    pub max_turns: u32,
    pub token_budget: Option<u64>,
    /// US dollars after which no new request is made (counted at `price`; without one, none).
    pub cost_budget: Option<f64>,
    /// The model's context window in tokens (compaction starts at `compact_threshold` of it).
    pub context_limit: Option<u64>,
    pub compact_threshold: f64,
    /// Replaces the built-in system prompt.
    pub system_prompt: Option<String>,
    pub price: Option<Price>,
}

impl Default for AgentSettings {
    fn default() -> Self {
        AgentSettings {
            base_url: DEFAULT_BASE_URL.to_owned(),
            model: DEFAULT_MODEL.to_owned(),
            api_key_env: Some(DEFAULT_API_KEY_ENV.to_owned()),
            request: BTreeMap::new(),
            mode: PermissionMode::Ask,
            max_turns: 50,
            token_budget: None,
            cost_budget: None,
            context_limit: Some(DEFAULT_CONTEXT_LIMIT),
            compact_threshold: 0.8,
            system_prompt: None,
            price: None,
        }
    }
}

impl AgentSettings {
    /// The model client's configuration; the key is read from its variable now.
    pub fn model_config(&self) -> ModelConfig {
        let mut config = ModelConfig::new(self.base_url.clone(), self.model.clone());
        config.api_key = self
            .api_key_env
            .as_deref()
            .filter(|name| !name.is_empty())
            .and_then(|name| std::env::var(name).ok())
            .filter(|key| !key.is_empty());
        config.extra = self.request.clone();
        config
    }

    /// Whether the key variable is named but not set (worth a warning: the server will refuse).
    pub fn missing_key(&self) -> Option<&str> {
        let name = self.api_key_env.as_deref().filter(|n| !n.is_empty())?;
        std::env::var(name).map_or(true, |v| v.is_empty()).then_some(name)
    }

    pub fn options(&self, root: &str) -> AgentOptions {
        AgentOptions {
            system_prompt: self.system_prompt.clone().unwrap_or_else(|| system_prompt(root)),
            max_turns: self.max_turns.max(1),
            token_budget: self.token_budget,
            cost_budget: self
                .cost_budget
                .zip(self.price)
                .map(|(usd, price)| CostBudget { usd, price }),
            max_parallel: 10,
            compaction: CompactionOptions {
                context_limit: self.context_limit,
                threshold: self.compact_threshold.clamp(0.1, 1.0),
                keep_recent_turns: 2,
            },
        }
    }
}

/// The built-in system prompt.
pub fn system_prompt(root: &str) -> String {
    format!(
        "You are toolhost's coding agent, working in the workspace at {root}. Use the tools to \
         look before you change anything: read a file before you edit it, search with grep and \
         glob, and ask the user with ask_user_question when a choice is theirs. Keep changes \
         small and focused on the task; say what you changed and why when you are done. Tool \
         results are the tools' own text; a result starting with \"Error:\" failed, and you may \
         correct the call and try again."
    )
}

/// `[agent]` as one source gives it. Where the conversation and the key go (`base_url`,
/// `api_key_env`) and acting without asking (`mode = "auto"`) come only from the user or a
/// trusted workspace.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSection {
    base_url: Option<String>,
    model: Option<String>,
    api_key_env: Option<String>,
    /// Fields merged into every request (e.g. `thinking = {type = "enabled"}`).
    request: Option<BTreeMap<String, Value>>,
    mode: Option<PermissionMode>,
    max_turns: Option<u32>,
    token_budget: Option<u64>,
    /// US dollars (needs `price`); `0` means none.
    cost_budget: Option<f64>,
    /// `0` never compacts.
    context_limit: Option<u64>,
    compact_threshold: Option<f64>,
    system_prompt: Option<String>,
    price: Option<Price>,
}

impl toolhost_contract::config::Section for AgentSection {
    type Settings = AgentSettings;

    fn apply(self, agent: &mut AgentSettings, _layer: &mut toolhost_contract::config::Layer<'_>) {
        if let Some(url) = self.base_url {
            agent.base_url = url;
        }
        if let Some(model) = self.model {
            agent.model = model;
        }
        if let Some(name) = self.api_key_env {
            agent.api_key_env = Some(name).filter(|n| !n.is_empty());
        }
        if let Some(request) = self.request {
            agent.request.extend(request);
        }
        if let Some(mode) = self.mode {
            agent.mode = mode;
        }
        if let Some(turns) = self.max_turns {
            agent.max_turns = turns.max(1);
        }
        if let Some(budget) = self.token_budget {
            agent.token_budget = Some(budget).filter(|b| *b > 0);
        }
        if let Some(budget) = self.cost_budget {
            agent.cost_budget = Some(budget).filter(|b| *b > 0.0);
        }
        if let Some(limit) = self.context_limit {
            agent.context_limit = Some(limit).filter(|l| *l > 0);
        }
        if let Some(threshold) = self.compact_threshold {
            agent.compact_threshold = threshold;
        }
        if let Some(prompt) = self.system_prompt {
            agent.system_prompt = Some(prompt).filter(|p| !p.trim().is_empty());
        }
        if let Some(price) = self.price {
            agent.price = Some(price);
        }
    }

    fn restrict_untrusted(&mut self) -> Vec<String> {
        let mut dropped = Vec::new();
        if self.base_url.take().is_some() {
            dropped.push("agent.base_url");
        }
        if self.api_key_env.take().is_some() {
            dropped.push("agent.api_key_env");
        }
        if self.mode == Some(PermissionMode::Auto) {
            self.mode = None;
            dropped.push("agent.mode");
        }
        if dropped.is_empty() { Vec::new() } else { vec![dropped.join("/")] }
    }
}
