//! The web tools (docs/tools.md, "Web"): `web_fetch` (one URL as markdown or text) and
//! `web_search` (queries through a configured provider). They reach the network only through the
//! HTTP clients built here from the `[web]` configuration the host passes to [`register`] — the
//! deliberate exception to "no I/O except through the context", like the shell's processes —
//! and every connection goes through the SSRF guard ([`guard`]). Fetched pages are cached in the
//! session's blob store through the contract's `BlobCache` capability.

pub mod config;
pub mod convert;
mod error;
mod fetch;
pub mod guard;
mod http;
pub mod search;
mod section;

pub use config::{ProviderConfig, ProviderKind, WebConfig};
pub use error::WebError;
pub use fetch::{BodyKind, FetchBody, WebFetchArgs, WebFetchOutput, WebFetchTool};
pub use guard::{AllowEntry, DenyRule, Guard, Lookup, SystemLookup};
pub use http::{ClientSettings, Clients};
pub use search::{
    HttpProvider, ProviderAnswer, SearchProvider, Source, WebSearchArgs, WebSearchOutput,
    WebSearchTool,
};
pub use section::WebSection;

use std::sync::Arc;
use std::time::Duration;
use toolhost_contract::protocol::lsp_ext::ToolAnnotations;
use toolhost_contract::{Disposer, Registrar, RegistrationError};

/// Appended when `web_fetch` left something out (the wording docs/tools.md documents).
pub const TRUNCATION_NOTICE: &str =
    "\n\n(Content truncated. Fetch a more specific URL or section for the full text.)";

/// Reads the open world, changes nothing.
pub(crate) const WEB_READ: ToolAnnotations =
    ToolAnnotations { read_only: true, destructive: false, idempotent: true, open_world: true };

/// rustls needs a process-wide crypto provider; ring is the one this build carries. Installing
/// twice is harmless (the second attempt reports the first and is ignored).
pub(crate) fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The clients of `config` with names resolved by `lookup`.
pub fn clients(config: &WebConfig, lookup: Arc<dyn Lookup>) -> Clients {
    let guard = Guard::new(config.allow.iter().cloned(), lookup);
    Clients::new(
        guard,
        ClientSettings {
            proxy: config.proxy.clone(),
            connect_timeout: Duration::from_millis(config.fetch_timeout_ms.min(10_000)),
            user_agent: config.user_agent.clone(),
        },
    )
}

/// The search tool of `config`: the first provider entry that is usable, its endpoint opened
/// past the guard (the provider is trusted configuration, like the allow list).
pub fn search_tool(config: &WebConfig, lookup: Arc<dyn Lookup>) -> WebSearchTool {
    let base = clients(config, lookup);
    let mut first_error = None;
    for entry in &config.providers {
        match HttpProvider::from_config(entry) {
            Ok(provider) => {
                let endpoint = provider.endpoint();
                let extra = endpoint
                    .host_str()
                    .zip(endpoint.port_or_known_default())
                    .and_then(|(host, port)| AllowEntry::parse(&format!("{host}:{port}")).ok());
                let widened = Clients::new(base.guard().widened(extra), base.settings().clone());
                let provider: Arc<dyn SearchProvider> = Arc::new(provider);
                return WebSearchTool::new(config.clone(), Ok(provider), Arc::new(widened));
            }
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    let error = first_error.unwrap_or(WebError::ProviderUnavailable);
    WebSearchTool::new(config.clone(), Err(error), Arc::new(base))
}

/// Registers `web_fetch` and `web_search` as `config` enables them, with the system resolver.
pub fn register(
    registry: &dyn Registrar,
    config: WebConfig,
) -> Result<Vec<Disposer>, RegistrationError> {
    register_with(registry, config, Arc::new(SystemLookup))
}

/// [`register`] with names resolved by `lookup` (tests answer from a table).
pub fn register_with(
    registry: &dyn Registrar,
    config: WebConfig,
    lookup: Arc<dyn Lookup>,
) -> Result<Vec<Disposer>, RegistrationError> {
    let mut disposers = Vec::new();
    if config.fetch {
        let clients = Arc::new(clients(&config, Arc::clone(&lookup)));
        disposers.push(registry.register(WebFetchTool::new(config.clone(), clients))?);
    }
    if config.search {
        disposers.push(registry.register(search_tool(&config, lookup))?);
    }
    Ok(disposers)
}

/// A call-time title cut to a card's width.
pub(crate) fn short(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}
