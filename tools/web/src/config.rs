//! `[web]` settings as the host hands them over at registration (docs/configuration.md).

use crate::guard::AllowEntry;

/// Which search service a provider entry talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderKind {
    Searxng,
    Brave,
    Tavily,
}

impl ProviderKind {
    pub fn parse(text: &str) -> Option<ProviderKind> {
        match text {
            "searxng" => Some(ProviderKind::Searxng),
            "brave" => Some(ProviderKind::Brave),
            "tavily" => Some(ProviderKind::Tavily),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Searxng => "searxng",
            ProviderKind::Brave => "brave",
            ProviderKind::Tavily => "tavily",
        }
    }

    /// The service's own endpoint (SearXNG has none: it is always self-hosted).
    pub fn default_endpoint(self) -> Option<&'static str> {
        match self {
            ProviderKind::Searxng => None,
            ProviderKind::Brave => Some("https://api.search.brave.com/res/v1/web/search"),
            ProviderKind::Tavily => Some("https://api.tavily.com/search"),
        }
    }
}

/// One `[[web.providers]]` entry, its key already read from the environment variable the
/// configuration names. `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// The endpoint (required for SearXNG: the instance's base URL).
    pub url: Option<String>,
    /// The name of the environment variable that holds the key (kept for messages).
    pub api_key_env: Option<String>,
    /// The key itself (`None`: the variable was not set).
    pub api_key: Option<String>,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("url", &self.url)
            .field("api_key_env", &self.api_key_env)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Settings of the web tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebConfig {
    /// Whether `web_fetch` is registered.
    pub fetch: bool,
    /// Whether `web_search` is registered.
    pub search: bool,
    /// Targets opened past the SSRF guard's default denials (trusted configuration only).
    pub allow: Vec<AllowEntry>,
    /// An explicit proxy URL; the environment's proxies are never used.
    pub proxy: Option<String>,
    pub providers: Vec<ProviderConfig>,
    pub search_max_results: usize,
    pub search_max_queries: usize,
    pub search_timeout_ms: u64,
    pub fetch_timeout_ms: u64,
    /// The Native text's cap, in UTF-16 units.
    pub fetch_max_output_chars: usize,
    /// The most body bytes read (after decompression); the rest is never read. A declared
    /// `Content-Length` over it refuses the response unread.
    pub fetch_max_bytes: usize,
    /// The longest URL `web_fetch` takes (UTF-16 units, as given).
    pub fetch_max_url_length: usize,
    /// The decoded body is cut to this many UTF-16 units before it is converted.
    pub fetch_max_body_chars: usize,
    /// How long a fetched page is served from the session's cache.
    pub cache_ttl_ms: u64,
    pub user_agent: String,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            fetch: true,
            search: true,
            allow: Vec::new(),
            proxy: None,
            providers: Vec::new(),
            search_max_results: 8,
            search_max_queries: 4,
            search_timeout_ms: 30_000,
            fetch_timeout_ms: 30_000,
            fetch_max_output_chars: 200_000,
            fetch_max_bytes: 5_000_000,
            fetch_max_url_length: 2048,
            fetch_max_body_chars: 100_000,
            cache_ttl_ms: 15 * 60 * 1000,
            user_agent: concat!("toolhost/", env!("CARGO_PKG_VERSION"), " (web_fetch)").to_owned(),
        }
    }
}
