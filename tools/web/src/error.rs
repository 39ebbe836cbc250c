//! `WebError`: every way a web call fails, each with a stable code (docs/tools.md lists them).

use crate::guard::Denial;
use toolhost_contract::ToolError;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WebError {
    /// Argument checks the schema cannot express (worded as docs/tools.md documents); a plain
    /// failure, so its code never reaches the model.
    #[error("{0}")]
    InvalidArgs(String),
    /// The URL as given is longer than the most `web_fetch` accepts (UTF-16 units).
    #[error("URL exceeds the maximum length of {0}")]
    UrlTooLong(usize),
    /// The URL as given does not parse.
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    /// Not http or https; the scheme is quoted with its colon (`ftp:`).
    #[error("unsupported URL scheme \"{0}\" (only http and https are allowed)")]
    Scheme(String),
    /// A user name or password in the URL.
    #[error("credentials in URLs are not allowed")]
    Credentials,
    #[error(transparent)]
    Denied(#[from] Denial),
    #[error("cannot resolve {host}: {detail}")]
    Resolve { host: String, detail: String },
    /// `web_fetch` follows at most this many (same-origin) redirects.
    #[error("exceeded the maximum of {0} redirects")]
    TooManyRedirects(usize),
    /// A redirect to another origin (scheme, host or port): the model fetches it itself.
    #[error(
        "cross-origin redirect to {0} is not followed automatically; retry against that URL directly"
    )]
    CrossOrigin(String),
    #[error("redirect response (HTTP {0}) without a Location header")]
    NoLocation(u16),
    #[error("invalid redirect Location \"{0}\"")]
    BadLocation(String),
    /// A declared `Content-Length` over `web_fetch`'s byte cap.
    #[error("response exceeds the maximum of {0} bytes")]
    TooLarge(usize),
    /// `web_fetch`'s own deadline.
    #[error("web fetch timed out")]
    FetchTimeout,
    /// `web_fetch`'s transport failures.
    #[error("web fetch failed: {0}")]
    FetchFailed(String),
    /// A content type `web_fetch` does not decode (the header as sent, or `unknown`).
    #[error("unsupported content type \"{0}\"")]
    UnsupportedType(String),
    #[error("{what} timed out after {ms}ms")]
    Timeout { what: &'static str, ms: u64 },
    #[error("request to {url} failed: {detail}")]
    Request { url: String, detail: String },
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
            WebError::UrlTooLong(_) | WebError::InvalidUrl(_) | WebError::Scheme(_) => {
                "WEB_INVALID_URL"
            }
            WebError::Credentials => "WEB_BLOCKED_URL",
            WebError::Denied(_) => "WEB_SSRF_DENIED",
            WebError::Resolve { .. } => "WEB_DNS_FAILED",
            WebError::TooManyRedirects(_) | WebError::CrossOrigin(_) => "WEB_REDIRECT_BLOCKED",
            WebError::NoLocation(_) | WebError::BadLocation(_) | WebError::FetchFailed(_) => {
                "WEB_PROVIDER_ERROR"
            }
            WebError::TooLarge(_) => "WEB_FETCH_TOO_LARGE",
            WebError::FetchTimeout => "WEB_FETCH_TIMEOUT",
            WebError::UnsupportedType(_) => "WEB_UNSUPPORTED_CONTENT_TYPE",
            WebError::Timeout { .. } => "WEB_TIMEOUT",
            WebError::Request { .. } => "WEB_REQUEST_FAILED",
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
