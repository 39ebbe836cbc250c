//! `WebError`: every way a web call fails, each with a stable code (docs/tools.md lists them).

use crate::guard::Denial;
use toolhost_contract::ToolError;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WebError {
    /// Argument checks the schema cannot express (worded as docs/tools.md documents); a plain
    /// failure, so its code never reaches the model.
    #[error("{0}")]
    InvalidArgs(String),
    #[error("invalid URL \"{0}\"")]
    InvalidUrl(String),
    #[error("unsupported URL scheme \"{0}\": only http and https can be fetched")]
    Scheme(String),
    #[error(transparent)]
    Denied(#[from] Denial),
    #[error("cannot resolve {host}: {detail}")]
    Resolve { host: String, detail: String },
    #[error("too many redirects (more than {0})")]
    TooManyRedirects(usize),
    #[error("redirect without a usable Location from {0}")]
    BadRedirect(String),
    #[error("{what} timed out after {ms}ms")]
    Timeout { what: &'static str, ms: u64 },
    #[error("request to {url} failed: {detail}")]
    Request { url: String, detail: String },
    #[error(
        "{url} is binary content ({content_type}); web_fetch reads HTML, text, JSON and markdown only"
    )]
    Binary { url: String, content_type: String },
    #[error(
        "web_search has no provider: configure one with [[web.providers]] (kind = \"searxng\", \"brave\" or \"tavily\") in toolhost.toml"
    )]
    ProviderUnavailable,
    #[error("{provider}: {detail}")]
    Provider { provider: String, detail: String },
}

impl WebError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            WebError::InvalidArgs(_) => "WEB_INVALID_ARGS",
            WebError::InvalidUrl(_) => "WEB_INVALID_URL",
            WebError::Scheme(_) => "WEB_UNSUPPORTED_SCHEME",
            WebError::Denied(_) => "WEB_SSRF_DENIED",
            WebError::Resolve { .. } => "WEB_DNS_FAILED",
            WebError::TooManyRedirects(_) => "WEB_TOO_MANY_REDIRECTS",
            WebError::BadRedirect(_) => "WEB_BAD_REDIRECT",
            WebError::Timeout { .. } => "WEB_TIMEOUT",
            WebError::Request { .. } => "WEB_REQUEST_FAILED",
            WebError::Binary { .. } => "WEB_BINARY_CONTENT",
            WebError::ProviderUnavailable => "WEB_PROVIDER_UNAVAILABLE",
            WebError::Provider { .. } => "WEB_PROVIDER_FAILED",
        }
    }
}

impl From<WebError> for ToolError {
    fn from(error: WebError) -> ToolError {
        match error {
            // Value checks a tool makes itself are plain failures (docs/design.md §3).
            WebError::InvalidArgs(message) => ToolError::plain(message),
            other => ToolError::typed("WebError", other.code(), other.to_string()),
        }
    }
}
