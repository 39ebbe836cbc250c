//! `[web]` as one source gives it. What widens the web tools' reach comes only from the user or a
//! trusted workspace: `allow` (what the SSRF guard lets through), `proxy` (sees every fetch) and
//! `providers` (an endpoint and the name of a key variable could send a credential anywhere).

use crate::config::{ProviderConfig, ProviderKind, WebConfig};
use crate::guard::AllowEntry;
use serde::Deserialize;
use toolhost_contract::config::{Layer, Section};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSection {
    fetch: Option<bool>,
    search: Option<bool>,
    allow: Option<Vec<String>>,
    proxy: Option<String>,
    providers: Option<Vec<ProviderEntry>>,
    search_max_results: Option<usize>,
    search_max_queries: Option<usize>,
    search_timeout_ms: Option<u64>,
    fetch_timeout_ms: Option<u64>,
    fetch_max_output_chars: Option<usize>,
    fetch_max_bytes: Option<usize>,
    cache_ttl_ms: Option<u64>,
}

/// One `[[web.providers]]` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderEntry {
    /// `searxng`, `brave` or `tavily`.
    kind: String,
    url: Option<String>,
    /// The environment variable that holds the API key (Brave, Tavily).
    api_key_env: Option<String>,
}

impl Section for WebSection {
    type Settings = WebConfig;

    fn apply(self, web: &mut WebConfig, layer: &mut Layer<'_>) {
        if let Some(v) = self.fetch {
            web.fetch = v;
        }
        if let Some(v) = self.search {
            web.search = v;
        }
        if let Some(entries) = self.allow {
            web.allow.clear();
            for entry in entries {
                match AllowEntry::parse(&entry) {
                    Ok(entry) => web.allow.push(entry),
                    Err(e) => layer.warnings.push(format!("ignored {e}")),
                }
            }
        }
        if let Some(proxy) = self.proxy {
            web.proxy = Some(proxy).filter(|p| !p.is_empty());
        }
        if let Some(providers) = self.providers {
            web.providers.clear();
            for provider in providers {
                let Some(kind) = ProviderKind::parse(&provider.kind) else {
                    layer.warnings.push(format!(
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
                web.providers.push(ProviderConfig {
                    kind,
                    url: provider.url,
                    api_key_env: provider.api_key_env,
                    api_key,
                });
            }
        }
        macro_rules! positive {
            ($($field:ident),*) => {
                $(if let Some(v) = self.$field.filter(|v| *v > 0) {
                    web.$field = v;
                })*
            };
        }
        positive!(
            search_max_results,
            search_max_queries,
            search_timeout_ms,
            fetch_timeout_ms,
            fetch_max_output_chars,
            fetch_max_bytes
        );
        if let Some(v) = self.cache_ttl_ms {
            web.cache_ttl_ms = v;
        }
    }

    fn restrict_untrusted(&mut self) -> Vec<String> {
        let mut dropped = Vec::new();
        if self.allow.take().is_some() {
            dropped.push("web.allow");
        }
        if self.proxy.take().is_some() {
            dropped.push("web.proxy");
        }
        if self.providers.take().is_some() {
            dropped.push("web.providers");
        }
        if dropped.is_empty() { Vec::new() } else { vec![dropped.join("/")] }
    }
}
