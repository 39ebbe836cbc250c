//! The settings a hosted agent offers for its session — its modes, its models, its thought
//! levels — as one list of options the editors draw as pickers (`toolhost/agentOptions`).
//!
//! ACP has two ways to offer them: the older session modes (`modes`, switched with
//! `session/set_mode`) and config options (`configOptions`, switched with
//! `session/set_config_option`), which carry a category (`mode`, `model`, `thought_level`, …).
//! An agent offering both (Claude Code) lists its modes among its config options, so the modes
//! become an option of their own (`mode`) only when no config option is a mode. What the person
//! chose is kept per chat and chosen again in a restarted agent's session.

use super::HostedError;
use agent_client_protocol::v1::schema::{
    SessionConfigKind, SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOptions, SessionModeState,
};
use serde_json::Value;
use toolhost_protocol::lsp_ext::{AgentOption, AgentOptionValue};

/// The id the session modes get as an option when the agent's config options have no mode.
pub(crate) const MODE_OPTION: &str = "mode";

/// How one option is switched.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Setting {
    /// `session/set_config_option`.
    Config { id: String, value: SessionConfigOptionValue },
    /// `session/set_mode`.
    Mode(String),
}

/// What the agent offers for its session, and what the person chose.
#[derive(Default)]
pub(crate) struct Offered {
    config: Vec<SessionConfigOption>,
    modes: Option<SessionModeState>,
    /// In the order chosen; each option once (the last choice).
    chosen: Vec<(String, Value)>,
}

impl Offered {
    /// A session was opened (or loaded) offering `modes` and `config`.
    pub(crate) fn opened(
        &mut self,
        modes: Option<SessionModeState>,
        config: Option<Vec<SessionConfigOption>>,
    ) {
        self.modes = modes;
        self.config = config.unwrap_or_default();
    }

    /// The agent changed its config options (`config_option_update`, or the answer to a set).
    pub(crate) fn config_changed(&mut self, config: Vec<SessionConfigOption>) {
        self.config = config;
    }

    /// The agent switched modes (`current_mode_update`, or a set that was answered).
    pub(crate) fn mode_changed(&mut self, mode: &str) {
        if let Some(modes) = &mut self.modes {
            modes.current_mode_id = mode.to_owned().into();
        }
        for option in &mut self.config {
            if matches!(option.category, Some(SessionConfigOptionCategory::Mode))
                && let SessionConfigKind::Select(select) = &mut option.kind
                && select_values(&select.options).iter().any(|v| v.value == mode)
            {
                select.current_value = mode.to_owned().into();
            }
        }
    }

    /// Whether the session modes are an option of their own.
    fn modes_apart(&self) -> bool {
        self.modes.is_some()
            && !self
                .config
                .iter()
                .any(|o| matches!(o.category, Some(SessionConfigOptionCategory::Mode)))
    }

    /// Every option, the modes first when they stand apart.
    pub(crate) fn list(&self) -> Vec<AgentOption> {
        let mut list = Vec::new();
        if let Some(modes) = self.modes.as_ref().filter(|_| self.modes_apart()) {
            list.push(AgentOption {
                id: MODE_OPTION.to_owned(),
                name: "Mode".to_owned(),
                description: None,
                category: Some("mode".to_owned()),
                current: Value::String(modes.current_mode_id.0.to_string()),
                values: modes
                    .available_modes
                    .iter()
                    .map(|mode| AgentOptionValue {
                        value: mode.id.0.to_string(),
                        name: mode.name.clone(),
                        description: mode.description.clone(),
                        group: None,
                    })
                    .collect(),
            });
        }
        list.extend(self.config.iter().map(option_of));
        list
    }

    /// How to set option `id` to `value`, or why it cannot be.
    pub(crate) fn setting(&self, id: &str, value: &Value) -> Result<Setting, HostedError> {
        let unknown_value = |what: &str| {
            HostedError::new(
                "OPTION_VALUE_UNKNOWN",
                format!("{value} is not a value of the agent's option `{id}`{what}"),
            )
        };
        if id == MODE_OPTION
            && self.modes_apart()
            && let Some(modes) = &self.modes
        {
            let wanted = value.as_str().ok_or_else(|| unknown_value(""))?;
            if !modes.available_modes.iter().any(|m| &*m.id.0 == wanted) {
                return Err(unknown_value(&format!(" (its modes: {})", mode_names(modes))));
            }
            return Ok(Setting::Mode(wanted.to_owned()));
        }
        let Some(option) = self.config.iter().find(|o| &*o.id.0 == id) else {
            let known: Vec<String> = self.list().into_iter().map(|o| o.id).collect();
            return Err(HostedError::new(
                "OPTION_UNKNOWN",
                format!("the agent offers no option `{id}` (it offers: {})", known.join(", ")),
            ));
        };
        match &option.kind {
            SessionConfigKind::Select(select) => {
                let wanted = value.as_str().ok_or_else(|| unknown_value(""))?;
                if !select_values(&select.options).iter().any(|v| v.value == wanted) {
                    return Err(unknown_value(""));
                }
                Ok(Setting::Config {
                    id: id.to_owned(),
                    value: SessionConfigOptionValue::value_id(wanted.to_owned()),
                })
            }
            SessionConfigKind::Boolean(_) => {
                let wanted = value.as_bool().ok_or_else(|| unknown_value(" (true or false)"))?;
                Ok(Setting::Config {
                    id: id.to_owned(),
                    value: SessionConfigOptionValue::boolean(wanted),
                })
            }
            _ => Err(unknown_value(" (an option of a kind toolhost does not know)")),
        }
    }

    /// The person chose `value` for option `id`: kept for a restarted agent's session.
    pub(crate) fn chose(&mut self, id: &str, value: Value) {
        self.chosen.retain(|(known, _)| known != id);
        self.chosen.push((id.to_owned(), value));
    }

    /// What the person chose, in order.
    pub(crate) fn chosen(&self) -> Vec<(String, Value)> {
        self.chosen.clone()
    }
}

fn mode_names(modes: &SessionModeState) -> String {
    modes.available_modes.iter().map(|m| m.id.0.to_string()).collect::<Vec<_>>().join(", ")
}

fn category_name(category: &SessionConfigOptionCategory) -> String {
    match category {
        SessionConfigOptionCategory::Mode => "mode".to_owned(),
        SessionConfigOptionCategory::Model => "model".to_owned(),
        SessionConfigOptionCategory::ModelConfig => "model_config".to_owned(),
        SessionConfigOptionCategory::ThoughtLevel => "thought_level".to_owned(),
        SessionConfigOptionCategory::Other(other) => other.clone(),
        _ => "other".to_owned(),
    }
}

fn select_values(options: &SessionConfigSelectOptions) -> Vec<AgentOptionValue> {
    let value = |o: &agent_client_protocol::v1::schema::SessionConfigSelectOption,
                 group: Option<&str>| AgentOptionValue {
        value: o.value.0.to_string(),
        name: o.name.clone(),
        description: o.description.clone(),
        group: group.map(str::to_owned),
    };
    match options {
        SessionConfigSelectOptions::Ungrouped(options) => {
            options.iter().map(|o| value(o, None)).collect()
        }
        SessionConfigSelectOptions::Grouped(groups) => {
            groups.iter().flat_map(|g| g.options.iter().map(|o| value(o, Some(&g.name)))).collect()
        }
        _ => Vec::new(),
    }
}

fn option_of(option: &SessionConfigOption) -> AgentOption {
    let (current, values) = match &option.kind {
        SessionConfigKind::Select(select) => {
            (Value::String(select.current_value.0.to_string()), select_values(&select.options))
        }
        SessionConfigKind::Boolean(boolean) => (Value::Bool(boolean.current_value), Vec::new()),
        _ => (Value::Null, Vec::new()),
    };
    AgentOption {
        id: option.id.0.to_string(),
        name: option.name.clone(),
        description: option.description.clone(),
        category: option.category.as_ref().map(category_name),
        current,
        values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        SessionConfigSelect, SessionConfigSelectOption, SessionMode,
    };
    use serde_json::json;

    fn modes() -> SessionModeState {
        SessionModeState::new(
            "default",
            vec![SessionMode::new("default", "Default"), SessionMode::new("plan", "Plan")],
        )
    }

    fn model_option() -> SessionConfigOption {
        let select = SessionConfigSelect::new(
            "sonnet",
            vec![
                SessionConfigSelectOption::new("sonnet", "Sonnet"),
                SessionConfigSelectOption::new("opus", "Opus"),
            ],
        );
        SessionConfigOption::new("model", "Model", SessionConfigKind::Select(select))
            .category(SessionConfigOptionCategory::Model)
    }

    #[test]
    fn modes_without_a_mode_config_option_are_an_option_of_their_own() {
        let mut offered = Offered::default();
        offered.opened(Some(modes()), Some(vec![model_option()]));
        let list = offered.list();
        assert_eq!(list.iter().map(|o| o.id.as_str()).collect::<Vec<_>>(), ["mode", "model"]);
        assert_eq!(list[0].current, json!("default"));
        assert_eq!(list[1].category.as_deref(), Some("model"));
        assert_eq!(
            offered.setting("mode", &json!("plan")).ok(),
            Some(Setting::Mode("plan".into()))
        );
        offered.mode_changed("plan");
        assert_eq!(offered.list()[0].current, json!("plan"));
    }

    #[test]
    fn a_mode_config_option_replaces_the_session_modes() {
        let select = SessionConfigSelect::new(
            "default",
            vec![
                SessionConfigSelectOption::new("default", "Default"),
                SessionConfigSelectOption::new("plan", "Plan"),
            ],
        );
        let mode = SessionConfigOption::new("mode", "Mode", SessionConfigKind::Select(select))
            .category(SessionConfigOptionCategory::Mode);
        let mut offered = Offered::default();
        offered.opened(Some(modes()), Some(vec![mode, model_option()]));
        assert_eq!(offered.list().len(), 2);
        assert!(matches!(offered.setting("mode", &json!("plan")), Ok(Setting::Config { .. })));
        offered.mode_changed("plan");
        assert_eq!(offered.list()[0].current, json!("plan"));
    }

    #[test]
    fn values_the_agent_does_not_offer_are_refused() {
        let mut offered = Offered::default();
        offered.opened(Some(modes()), Some(vec![model_option()]));
        let err = offered.setting("model", &json!("gpt")).err().map(|e| e.code);
        assert_eq!(err, Some("OPTION_VALUE_UNKNOWN"));
        let err = offered.setting("effort", &json!("high")).err().map(|e| e.code);
        assert_eq!(err, Some("OPTION_UNKNOWN"));
        let err = offered.setting("mode", &json!(true)).err().map(|e| e.code);
        assert_eq!(err, Some("OPTION_VALUE_UNKNOWN"));
    }

    #[test]
    fn a_choice_is_kept_once_in_the_order_made() {
        let mut offered = Offered::default();
        offered.chose("model", json!("opus"));
        offered.chose("mode", json!("plan"));
        offered.chose("model", json!("sonnet"));
        assert_eq!(
            offered.chosen(),
            vec![("mode".to_owned(), json!("plan")), ("model".to_owned(), json!("sonnet"))]
        );
    }
}
