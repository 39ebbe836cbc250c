//! `web_search`: the query rules of docs/tools.md (1..=max queries, each non-empty, exact
//! duplicates run once), every query run concurrently through the configured provider (one
//! failure fails the call), sources merged round-robin by rank, deduplicated by URL and capped; the answer and the
//! `Sources:` list as Native text. Providers (SearXNG, Brave Search, Tavily) sit behind
//! [`SearchProvider`] and speak their documented JSON.

use crate::WEB_READ;
use crate::config::{ProviderConfig, ProviderKind, WebConfig};
use crate::error::WebError;
use crate::http::{Clients, Outgoing, read_capped};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use toolhost_contract::protocol::lsp_ext::ToolAnnotations;
use toolhost_contract::protocol::{CallPresentation, CardKind, ContentBlock};
use toolhost_contract::{BoxFuture, Tool, ToolContext, ToolError};

/// The most bytes of a provider's answer read.
const PROVIDER_MAX_BYTES: usize = 4 * 1024 * 1024;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSearchArgs {
    /// One to four search queries, run in parallel.
    pub queries: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_at: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WebSearchOutput {
    /// The providers' answer, when they gave one (labelled by query for several queries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    pub sources: Vec<Source>,
    pub truncated: bool,
}

/// What one provider returned for one query, best first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderAnswer {
    pub answer: Option<String>,
    pub sources: Vec<Source>,
}

/// A search service.
pub trait SearchProvider: Send + Sync {
    fn name(&self) -> &str;
    fn search<'a>(
        &'a self,
        clients: &'a Clients,
        query: &'a str,
        max_results: usize,
    ) -> BoxFuture<'a, Result<ProviderAnswer, WebError>>;
}

/// A provider speaking one of the three supported APIs.
pub struct HttpProvider {
    kind: ProviderKind,
    endpoint: url::Url,
    api_key: Option<String>,
}

impl HttpProvider {
    /// The provider of a config entry, or why it cannot be used.
    pub fn from_config(config: &ProviderConfig) -> Result<HttpProvider, WebError> {
        let unusable =
            |detail: String| WebError::Provider { provider: config.kind.name().to_owned(), detail };
        let endpoint = match (&config.url, config.kind) {
            (Some(url), ProviderKind::Searxng) => format!("{}/search", url.trim_end_matches('/')),
            (Some(url), _) => url.clone(),
            (None, kind) => kind
                .default_endpoint()
                .ok_or_else(|| unusable("set url to the instance's base URL".to_owned()))?
                .to_owned(),
        };
        let endpoint =
            url::Url::parse(&endpoint).map_err(|_| unusable(format!("invalid url {endpoint}")))?;
        if config.kind != ProviderKind::Searxng && config.api_key.is_none() {
            let var = config.api_key_env.as_deref().unwrap_or("api_key_env");
            return Err(unusable(format!("no API key: set the environment variable {var}")));
        }
        Ok(HttpProvider { kind: config.kind, endpoint, api_key: config.api_key.clone() })
    }

    /// The host:port of the endpoint (opened past the guard for this provider only).
    pub fn endpoint(&self) -> &url::Url {
        &self.endpoint
    }

    fn request(&self, query: &str, max_results: usize) -> Outgoing {
        let key = self.api_key.clone().unwrap_or_default();
        let mut url = self.endpoint.clone();
        match self.kind {
            ProviderKind::Searxng => {
                url.query_pairs_mut().append_pair("q", query).append_pair("format", "json");
                Outgoing {
                    method: reqwest::Method::GET,
                    url,
                    headers: vec![("accept".into(), "application/json".into())],
                    json: None,
                }
            }
            ProviderKind::Brave => {
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("count", &max_results.min(20).to_string());
                Outgoing {
                    method: reqwest::Method::GET,
                    url,
                    headers: vec![
                        ("accept".into(), "application/json".into()),
                        ("x-subscription-token".into(), key),
                    ],
                    json: None,
                }
            }
            ProviderKind::Tavily => Outgoing {
                method: reqwest::Method::POST,
                url,
                headers: vec![("authorization".into(), format!("Bearer {key}"))],
                json: Some(json!({
                    "query": query,
                    "max_results": max_results,
                    "include_answer": true,
                })),
            },
        }
    }
}

fn text_of(value: Option<&Value>) -> Option<String> {
    let text = value?.as_str()?.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn source_of(item: &Value, snippet: &str, published: &[&str]) -> Option<Source> {
    let url = text_of(item.get("url"))?;
    Some(Source {
        url,
        title: text_of(item.get("title")),
        snippet: text_of(item.get(snippet)),
        published_at: published.iter().find_map(|k| text_of(item.get(*k))),
    })
}

/// Reads one provider's JSON into an answer and ranked sources.
pub fn parse_answer(kind: ProviderKind, body: &Value) -> ProviderAnswer {
    let list = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
    match kind {
        ProviderKind::Searxng => {
            // `answers` holds strings in older instances and {answer, url} objects in newer ones.
            let answers: Vec<String> = list(body.get("answers"))
                .iter()
                .filter_map(|a| text_of(Some(a)).or_else(|| text_of(a.get("answer"))))
                .collect();
            ProviderAnswer {
                answer: Some(answers.join("\n\n")).filter(|a| !a.is_empty()),
                sources: list(body.get("results"))
                    .iter()
                    .filter_map(|r| source_of(r, "content", &["publishedDate"]))
                    .collect(),
            }
        }
        ProviderKind::Brave => ProviderAnswer {
            answer: None,
            sources: list(body.get("web").and_then(|w| w.get("results")))
                .iter()
                .filter_map(|r| source_of(r, "description", &["page_age", "age"]))
                .collect(),
        },
        ProviderKind::Tavily => ProviderAnswer {
            answer: text_of(body.get("answer")),
            sources: list(body.get("results"))
                .iter()
                .filter_map(|r| source_of(r, "content", &["published_date"]))
                .collect(),
        },
    }
}

impl SearchProvider for HttpProvider {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn search<'a>(
        &'a self,
        clients: &'a Clients,
        query: &'a str,
        max_results: usize,
    ) -> BoxFuture<'a, Result<ProviderAnswer, WebError>> {
        Box::pin(async move {
            let failed = |detail: String| WebError::Provider {
                provider: self.kind.name().to_owned(),
                detail,
            };
            let reply = clients.send(self.request(query, max_results)).await?;
            let status = reply.response.status();
            let body = read_capped(reply.response, PROVIDER_MAX_BYTES, &reply.final_url).await?;
            if !status.is_success() {
                let text = String::from_utf8_lossy(&body.bytes);
                return Err(failed(format!(
                    "HTTP {}: {}",
                    status.as_u16(),
                    crate::short(&text, 200)
                )));
            }
            let value: Value = serde_json::from_slice(&body.bytes)
                .map_err(|e| failed(format!("invalid JSON answer: {e}")))?;
            Ok(parse_answer(self.kind, &value))
        })
    }
}

/// The queries to run (trimmed, exact duplicates once), or the documented validation message.
pub fn checked_queries(queries: &[String], max: usize) -> Result<Vec<String>, WebError> {
    if queries.is_empty() {
        return Err(WebError::InvalidArgs("queries must contain at least one query".into()));
    }
    if queries.len() > max {
        let noun = if max == 1 { "query" } else { "queries" };
        return Err(WebError::InvalidArgs(format!("queries must contain at most {max} {noun}")));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for query in queries {
        let query = query.trim();
        if query.is_empty() {
            return Err(WebError::InvalidArgs("each query must be a non-empty string".into()));
        }
        if seen.insert(query.to_owned()) {
            out.push(query.to_owned());
        }
    }
    Ok(out)
}

/// Merges per-query answers: round-robin by rank, first occurrence of a URL wins, at most `cap`.
pub fn merge(queries: &[String], answers: Vec<ProviderAnswer>, cap: usize) -> WebSearchOutput {
    let labelled = queries.len() > 1;
    let content: Vec<String> = queries
        .iter()
        .zip(&answers)
        .filter_map(|(q, a)| {
            let text = a.answer.as_deref()?.trim();
            (!text.is_empty())
                .then(|| if labelled { format!("## {q}\n\n{text}") } else { text.to_owned() })
        })
        .collect();
    let mut seen = HashSet::new();
    let mut sources = Vec::new();
    let mut truncated = false;
    let depth = answers.iter().map(|a| a.sources.len()).max().unwrap_or(0);
    'ranks: for rank in 0..depth {
        for answer in &answers {
            let Some(source) = answer.sources.get(rank) else { continue };
            if !seen.insert(source.url.clone()) {
                continue;
            }
            if sources.len() == cap {
                truncated = true;
                break 'ranks;
            }
            sources.push(source.clone());
        }
    }
    WebSearchOutput {
        content: Some(content.join("\n\n")).filter(|c| !c.is_empty()),
        sources,
        truncated,
    }
}

/// The Native text.
pub fn render_text(output: &WebSearchOutput) -> String {
    let mut parts = Vec::new();
    if let Some(answer) = output.content.as_deref().filter(|a| !a.trim().is_empty()) {
        parts.push(answer.to_owned());
    }
    if !output.sources.is_empty() {
        let mut list = String::from("Sources:");
        for s in &output.sources {
            list.push_str(&format!("\n- [{}]({})", s.title.as_deref().unwrap_or(&s.url), s.url));
            if let Some(snippet) = &s.snippet {
                list.push_str(&format!(" — {snippet}"));
            }
            if let Some(at) = &s.published_at {
                list.push_str(&format!(" ({at})"));
            }
        }
        parts.push(list);
    } else if parts.is_empty() {
        parts.push("No results found.".to_owned());
    }
    if output.truncated {
        parts.push(format!(
            "(Showing the first {} sources. Refine the query for more.)",
            output.sources.len()
        ));
    }
    parts.push("Cite the relevant URLs above as markdown links in your answer.".to_owned());
    parts.join("\n\n")
}

pub struct WebSearchTool {
    config: WebConfig,
    /// The first usable provider, or why none is.
    provider: Result<Arc<dyn SearchProvider>, WebError>,
    clients: Arc<Clients>,
}

impl WebSearchTool {
    pub fn new(
        config: WebConfig,
        provider: Result<Arc<dyn SearchProvider>, WebError>,
        clients: Arc<Clients>,
    ) -> Self {
        WebSearchTool { config, provider, clients }
    }

    async fn search(&self, queries: Vec<String>) -> Result<WebSearchOutput, WebError> {
        let provider = self.provider.as_ref().map_err(Clone::clone)?;
        let max = self.config.search_max_results;
        let runs = queries.iter().map(|q| provider.search(&self.clients, q, max));
        // `try_join_all` drops the other searches at the first failure.
        let answers = futures::future::try_join_all(runs).await?;
        Ok(merge(&queries, answers, max))
    }
}

impl Tool for WebSearchTool {
    type Args = WebSearchArgs;
    type Output = WebSearchOutput;

    fn name(&self) -> &str {
        "web_search"
    }

    fn description(&self) -> String {
        format!(
            "Search the web. Give 1 to {} queries (run in parallel); returns an answer when the \
             provider has one and up to {} sources as markdown links. Cite the sources you use.",
            self.config.search_max_queries, self.config.search_max_results
        )
    }

    fn annotations(&self) -> ToolAnnotations {
        WEB_READ
    }

    fn concurrency_safe(&self, _args: &WebSearchArgs) -> bool {
        true
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let queries: Vec<&str> = args
            .get("queries")
            .and_then(Value::as_array)
            .map(|q| q.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let title = format!("Search {}", crate::short(&queries.join(" · "), 80));
        CallPresentation::new(CardKind::Fetch, title).with_data(json!({ "queries": queries }))
    }

    async fn call(
        &self,
        args: WebSearchArgs,
        cx: ToolContext,
    ) -> Result<WebSearchOutput, ToolError> {
        let queries = checked_queries(&args.queries, self.config.search_max_queries)?;
        let ms = self.config.search_timeout_ms;
        tokio::select! {
            () = cx.signal().cancelled() => Err(ToolError::aborted()),
            done = tokio::time::timeout(Duration::from_millis(ms), self.search(queries)) => match done {
                Ok(result) => Ok(result?),
                Err(_) => Err(WebError::Timeout { what: "web_search", ms }.into()),
            },
        }
    }

    fn render(&self, _args: &WebSearchArgs, output: &WebSearchOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text(render_text(output))]
    }

    fn presentation_meta(&self, args: &WebSearchArgs, output: &WebSearchOutput) -> Option<Value> {
        Some(json!({
            "queries": args.queries,
            "sources": output.sources,
            "truncated": output.truncated,
            "answer": output.content,
        }))
    }
}
