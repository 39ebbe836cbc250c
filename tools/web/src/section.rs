//! `[web]` as one source gives it. What widens the web tools' reach comes only from the user or a
//! trusted workspace: `allow` (what the SSRF guard lets through), `proxy` (sees every fetch) and
//! `providers` (an endpoint and the name of a key variable could send a credential anywhere).

use crate::config::{ProviderConfig, ProviderKind, WebConfig};
use crate::guard::AllowEntry;
use serde::Deserialize;
use toolhost_contract::config::{Dropped, Layer, Section};

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

    /// `allow` (past the SSRF guard), `proxy` (sees every fetch) and `providers` (an endpoint and
    /// a key variable) reach further: dropped. The tools may be switched off, not on; every cap
    /// and timeout, and how long a page is served from the cache, may be lowered, not raised.
    fn restrict_untrusted(&mut self, applied: &WebConfig) -> Vec<String> {
        let mut dropped = Dropped::new();
        dropped.only_off("web.fetch", &mut self.fetch, applied.fetch);
        dropped.only_off("web.search", &mut self.search, applied.search);
        dropped.always("web.allow", &mut self.allow);
        dropped.always("web.proxy", &mut self.proxy);
        dropped.always("web.providers", &mut self.providers);
        macro_rules! cap {
            ($($field:ident),*) => {
                $(dropped.cap(concat!("web.", stringify!($field)), &mut self.$field, applied.$field);)*
            };
        }
        cap!(
            search_max_results,
            search_max_queries,
            search_timeout_ms,
            fetch_timeout_ms,
            fetch_max_output_chars,
            fetch_max_bytes,
            cache_ttl_ms
        );
        dropped.group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untrusted_source_cannot_widen_the_web_tools() {
        let applied = WebConfig { fetch: false, ..WebConfig::default() };
        let mut section = WebSection {
            fetch: Some(true),
            search: Some(true),
            allow: Some(vec!["169.254.169.254:80".into()]),
            proxy: Some("http://evil:3128".into()),
            providers: Some(Vec::new()),
            search_max_results: Some(1000),
            search_max_queries: Some(1000),
            search_timeout_ms: Some(u64::MAX),
            fetch_timeout_ms: Some(u64::MAX),
            fetch_max_output_chars: Some(usize::MAX),
            fetch_max_bytes: Some(usize::MAX),
            cache_ttl_ms: Some(u64::MAX),
        };
        assert_eq!(
            section.restrict_untrusted(&applied),
            ["web.fetch/web.allow/web.proxy/web.providers/web.search_max_results/\
              web.search_max_queries/web.search_timeout_ms/web.fetch_timeout_ms/\
              web.fetch_max_output_chars/web.fetch_max_bytes/web.cache_ttl_ms"]
        );
        assert_eq!(section.search, Some(true), "already on: unchanged");
        assert!(section.fetch.is_none() && section.allow.is_none() && section.proxy.is_none());
        assert!(section.fetch_max_bytes.is_none() && section.cache_ttl_ms.is_none());
    }

    #[test]
    fn an_untrusted_source_may_narrow_the_web_tools() {
        let mut section = WebSection {
            fetch: Some(false),
            search: Some(false),
            search_max_results: Some(1),
            search_max_queries: Some(1),
            search_timeout_ms: Some(100),
            fetch_timeout_ms: Some(100),
            fetch_max_output_chars: Some(100),
            fetch_max_bytes: Some(100),
            cache_ttl_ms: Some(0),
            ..WebSection::default()
        };
        assert!(section.restrict_untrusted(&WebConfig::default()).is_empty());
        assert_eq!((section.fetch, section.fetch_max_bytes), (Some(false), Some(100)));
    }
}
