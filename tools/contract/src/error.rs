//! Tool failures (message + optional typed info) and registration errors.

use toolhost_protocol::ErrorInfo;

/// A tool-level failure: the message the model reads (without the `Error: ` prefix) and, for typed
/// errors, their class name and stable code. Plain failures (value checks, denials) have no info.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    pub message: String,
    pub info: Option<ErrorInfo>,
}

impl ToolError {
    /// A failure without a code (a plain failure: no `info`).
    pub fn plain(message: impl Into<String>) -> Self {
        ToolError { message: message.into(), info: None }
    }

    /// A typed failure with a class name and code.
    pub fn typed(name: &str, code: &str, message: impl Into<String>) -> Self {
        ToolError { message: message.into(), info: Some(ErrorInfo::new(name, code)) }
    }

    /// The code, if typed.
    pub fn code(&self) -> Option<&str> {
        self.info.as_ref().map(|i| i.code.as_str())
    }

    pub fn unknown_tool(name: &str) -> Self {
        Self::typed("ToolNotFoundError", "UNKNOWN_TOOL", format!("unknown tool \"{name}\""))
    }

    pub fn invalid_args(violations: &[String]) -> Self {
        Self::typed(
            "ToolArgsError",
            "INVALID_ARGS",
            format!("invalid arguments: {}", violations.join("; ")),
        )
    }

    pub fn invalid_output(name: &str, detail: &str) -> Self {
        Self::typed(
            "ToolOutputError",
            "INVALID_TOOL_OUTPUT",
            format!("tool \"{name}\" returned invalid output: {detail}"),
        )
    }

    /// The caller cancelled the call (`ABORTED`): what a body returns once it has stopped its
    /// work because its signal fired.
    pub fn aborted() -> Self {
        Self::typed("AbortError", "ABORTED", "tool call aborted")
    }

    pub fn aborted_before_dispatch() -> Self {
        Self::typed("AbortError", "ABORTED_BEFORE_DISPATCH", "tool call aborted before dispatch")
    }

    pub fn timed_out(ms: u128) -> Self {
        Self::typed("ToolTimeoutError", "TOOL_TIMEOUT", format!("tool call timed out after {ms}ms"))
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

/// Why a registration was refused (nothing is registered then).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegistrationError {
    #[error("tool \"{0}\" must declare output {{ schema, render, presentationMeta? }}")]
    MissingOutput(String),
    #[error("unsupported JSON schema for tool \"{tool}\" at {path}: {detail}")]
    UnsupportedSchema { tool: String, path: String, detail: String },
    #[error("tool \"{0}\" timeoutMs must be a positive finite number")]
    InvalidTimeout(String),
    #[error("tool \"run_code\" is reserved and cannot be registered")]
    Reserved,
    #[error("tool \"{0}\" is already registered")]
    Duplicate(String),
    #[error("tool name must be a non-empty string")]
    EmptyName,
}

impl RegistrationError {
    /// Stable code (`UNSUPPORTED_SCHEMA` for schema problems).
    pub fn code(&self) -> &'static str {
        match self {
            RegistrationError::UnsupportedSchema { .. } => "UNSUPPORTED_SCHEMA",
            RegistrationError::MissingOutput(_) => "MISSING_OUTPUT",
            RegistrationError::InvalidTimeout(_) => "INVALID_TIMEOUT",
            RegistrationError::Reserved => "RESERVED_TOOL",
            RegistrationError::Duplicate(_) => "DUPLICATE_TOOL",
            RegistrationError::EmptyName => "INVALID_TOOL_NAME",
        }
    }
}
