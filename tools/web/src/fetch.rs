//! `web_fetch`: one URL, checked before any connection (length, syntax, scheme, credentials), then
//! through the SSRF guard, same-origin redirects only; its body read under a byte cap, HTML turned
//! into markdown, text passed through, other types refused; the Native text (headed by the URL the
//! content came from) and truncation notice as docs/tools.md documents them; a 15-minute cache
//! keyed by URL in the session's blob store.

use crate::config::WebConfig;
use crate::convert::{self, Kind};
use crate::error::WebError;
use crate::http::{Clients, check_url, read_capped};
use crate::{TRUNCATION_NOTICE, WEB_READ};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use toolhost_contract::protocol::lsp_ext::ToolAnnotations;
use toolhost_contract::protocol::{CallPresentation, CardKind, ContentBlock};
use toolhost_contract::{BlobCacheHandle, Tool, ToolContext, ToolError};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebFetchArgs {
    /// The http(s) URL to fetch.
    pub url: String,
    /// Convert the whole page instead of its main article (HTML only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_page: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BodyKind {
    Html,
    Text,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FetchBody {
    pub kind: BodyKind,
    /// Markdown for HTML, the decoded text otherwise; already cut to the Native text's cap.
    pub content: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebFetchOutput {
    /// The URL as asked.
    pub url: String,
    /// Where the content came from, when redirects led elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_url: Option<String>,
    pub status_code: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub body: FetchBody,
    /// Body bytes read (after decompression).
    pub bytes: u64,
    /// Something was left out: the byte cap, the source cap or the Native text's cap.
    pub truncated: bool,
    /// Served from the session's cache.
    #[serde(default)]
    pub cached: bool,
}

/// A cache entry: when it was fetched and what.
#[derive(Serialize, Deserialize)]
struct CacheEntry {
    fetched_at_ms: u64,
    value: WebFetchOutput,
}

pub struct WebFetchTool {
    config: WebConfig,
    clients: Arc<Clients>,
}

impl WebFetchTool {
    pub fn new(config: WebConfig, clients: Arc<Clients>) -> Self {
        WebFetchTool { config, clients }
    }

    async fn fetch(&self, args: &WebFetchArgs) -> Result<WebFetchOutput, WebError> {
        // The URL as given (not trimmed): its length, then the parser's verdict, are checked.
        let asked = args.url.as_str();
        let max_url = self.config.fetch_max_url_length;
        let url = check_url(asked, max_url)?;
        let accept = (
            "accept".to_owned(),
            "text/html,application/xhtml+xml,text/*;q=0.9,application/json;q=0.8".to_owned(),
        );
        let reply =
            self.clients.get_same_origin(url, &[accept], max_url).await.map_err(transport)?;
        let status = reply.response.status().as_u16();
        let headers = reply.response.headers();
        let content_type = headers.get(reqwest::header::CONTENT_TYPE).map(|v| latin1(v.as_bytes()));
        // Refuse a type that is not text before reading a byte of it.
        let kind = convert::kind_of(content_type.as_deref());
        if kind == Kind::Binary {
            let shown = content_type.unwrap_or_else(|| "unknown".to_owned());
            return Err(WebError::UnsupportedType(shown));
        }
        let max_bytes = self.config.fetch_max_bytes;
        let declared = headers.get(reqwest::header::CONTENT_LENGTH).map(|v| latin1(v.as_bytes()));
        if declared.is_some_and(|d| declared_over(&d, max_bytes)) {
            return Err(WebError::TooLarge(max_bytes));
        }
        let final_url = reply.final_url.clone();
        let body = read_capped(reply.response, max_bytes, &final_url).await.map_err(transport)?;
        let decoded = convert::decode(&body.bytes, content_type.as_deref(), kind);
        let read = body.bytes.len() as u64;
        drop(body.bytes);
        let text = convert::cut_utf16(&decoded, self.config.fetch_max_body_chars);
        let body_cut = body.cut || text.len() < decoded.len();
        // At most the cap's worth of source text is converted (docs/tools.md, web_fetch).
        let cap = self.config.fetch_max_output_chars;
        let source = convert::cut_utf16(text, cap);
        let source_cut = source.len() < text.len();
        let shown = final_url.to_string();
        let (body_kind, title, content) = match kind {
            Kind::Html => {
                let html = source.to_owned();
                let page = final_url.to_string();
                let whole = args.whole_page;
                let converted = tokio::task::spawn_blocking(move || {
                    convert::html_to_markdown(&html, Some(&page), whole)
                })
                .await
                .map_err(|e| WebError::FetchFailed(e.to_string()))?;
                (BodyKind::Html, converted.title, converted.markdown)
            }
            _ => (BodyKind::Text, None, source.to_owned()),
        };
        let (content, fitted) = fit(&shown, status, &content, cap, body_cut || source_cut);
        Ok(WebFetchOutput {
            url: asked.to_owned(),
            final_url: (shown != asked).then_some(shown),
            status_code: status,
            content_type,
            title,
            body: FetchBody { kind: body_kind, content },
            bytes: read,
            truncated: fitted,
            cached: false,
        })
    }

    fn cache_key(url: &str) -> String {
        format!("web_fetch:{}", url.trim())
    }

    fn cached(&self, cache: &BlobCacheHandle, args: &WebFetchArgs) -> Option<WebFetchOutput> {
        let bytes = cache.get(&Self::cache_key(&args.url))?;
        let entry: CacheEntry = serde_json::from_slice(&bytes).ok()?;
        let age = now_ms().saturating_sub(entry.fetched_at_ms);
        (age < self.config.cache_ttl_ms).then_some(WebFetchOutput { cached: true, ..entry.value })
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A transport failure of `web_fetch` in its own words; the guard's denials keep theirs.
fn transport(error: WebError) -> WebError {
    match error {
        WebError::Request { detail, .. } => WebError::FetchFailed(detail),
        other => other,
    }
}

/// A header value's bytes as Latin-1 text (how an HTTP client's header API reads them).
fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// Whether a declared `Content-Length` is a number over `max` (a value that is not a number
/// says nothing, and the streamed cap still holds).
fn declared_over(declared: &str, max: usize) -> bool {
    let declared = declared.trim();
    let length = if declared.is_empty() { Some(0.0) } else { declared.parse::<f64>().ok() };
    length.is_some_and(|n| n.is_finite() && n > max as f64)
}

fn header(url: &str, status: u16) -> String {
    format!("Fetched {url} (HTTP {status})\n\n")
}

/// Cuts `content` so the Native text (header + content + notice when truncated) stays within
/// `cap` UTF-16 units. Returns the content and whether anything is missing.
pub fn fit(url: &str, status: u16, content: &str, cap: usize, truncated: bool) -> (String, bool) {
    let head = convert::utf16_len(&header(url, status));
    if !truncated && head + convert::utf16_len(content) <= cap {
        return (content.to_owned(), false);
    }
    let room = cap.saturating_sub(head + convert::utf16_len(TRUNCATION_NOTICE));
    (convert::cut_utf16(content, room).to_owned(), true)
}

/// The Native text.
pub fn render_text(output: &WebFetchOutput) -> String {
    // The URL the content came from: after redirects, and as the URL parser writes it.
    let mut text = header(output.final_url.as_deref().unwrap_or(&output.url), output.status_code);
    text.push_str(&output.body.content);
    if output.truncated {
        text.push_str(TRUNCATION_NOTICE);
    }
    text
}

impl Tool for WebFetchTool {
    type Args = WebFetchArgs;
    type Output = WebFetchOutput;

    fn name(&self) -> &str {
        "web_fetch"
    }

    fn description(&self) -> String {
        format!(
            "Fetch a public http(s) URL and return its content: HTML as GitHub-flavoured markdown \
             of the main article (wholePage: the whole page), text, JSON and markdown as they \
             are. Binary content is refused. At most {} characters come back; non-2xx statuses \
             are returned, not failed. Private, loopback and metadata addresses are blocked.",
            self.config.fetch_max_output_chars
        )
    }

    fn annotations(&self) -> ToolAnnotations {
        WEB_READ
    }

    fn concurrency_safe(&self, _args: &WebFetchArgs) -> bool {
        true
    }

    /// The call's deadline (`[web] fetch_timeout_ms`), enforced by the registry like any
    /// declared timeout; the fetch's own timer of the same length only backs it up for callers
    /// outside the registry.
    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_millis(self.config.fetch_timeout_ms))
    }

    /// 2: the header names the URL the content came from (after redirects, as parsed).
    fn renderer_version(&self) -> u32 {
        2
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let url = args.get("url").and_then(Value::as_str).unwrap_or("").trim();
        CallPresentation::new(CardKind::Fetch, format!("Fetch {}", crate::short(url, 80)))
            .with_data(json!({ "url": url }))
    }

    async fn call(&self, args: WebFetchArgs, cx: ToolContext) -> Result<WebFetchOutput, ToolError> {
        // Blank as a script's `trim()` sees it (Unicode white space and the BOM).
        if args.url.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}').is_empty() {
            return Err(WebError::InvalidArgs("url must be a non-empty string".to_owned()).into());
        }
        let cache = cx.capability::<BlobCacheHandle>();
        if let Some(hit) = cache.as_ref().and_then(|c| self.cached(c, &args)) {
            return Ok(hit);
        }
        let ms = self.config.fetch_timeout_ms;
        let output = tokio::select! {
            () = cx.signal().cancelled() => return Err(ToolError::aborted()),
            done = tokio::time::timeout(Duration::from_millis(ms), self.fetch(&args)) => match done {
                Ok(result) => result?,
                Err(_) => return Err(WebError::FetchTimeout.into()),
            },
        };
        if let Some(cache) = cache
            && (200..300).contains(&output.status_code)
        {
            let entry = CacheEntry { fetched_at_ms: now_ms(), value: output.clone() };
            if let Ok(bytes) = serde_json::to_vec(&entry) {
                cache.put(&Self::cache_key(&args.url), &bytes);
            }
        }
        Ok(output)
    }

    fn render(&self, _args: &WebFetchArgs, output: &WebFetchOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text(render_text(output))]
    }

    fn presentation_meta(&self, _args: &WebFetchArgs, output: &WebFetchOutput) -> Option<Value> {
        Some(json!({
            "url": output.url,
            "finalUrl": output.final_url,
            "status": output.status_code,
            "statusCode": output.status_code,
            "title": output.title,
            "contentType": output.content_type,
            "size": output.bytes,
            "truncated": output.truncated,
            "cached": output.cached,
        }))
    }
}
