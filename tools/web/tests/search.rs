//! `web_search` against local fakes of SearXNG's, Brave Search's and Tavily's documented JSON:
//! the request each provider gets (query, key header, body), the round-robin merge with
//! deduplication and the cap, the exact Native text, the documented validation messages and the
//! unavailable error.

#[path = "support/server.rs"]
mod support;

use serde_json::{Value, json};
use std::sync::Arc;
use support::{Request, Response, Server, TableLookup, config, context};
use toolhost_contract::{Capabilities, Tool, ToolError};
use toolhost_tools_web::{
    ProviderConfig, ProviderKind, WebConfig, WebSearchArgs, WebSearchOutput, search::render_text,
    search_tool,
};

fn query_of(req: &Request) -> String {
    let url = url::Url::parse(&format!("http://x{}", req.path)).expect("path");
    url.query_pairs().find(|(k, _)| k == "q").map(|(_, v)| v.into_owned()).unwrap_or_default()
}

/// SearXNG's `format=json` answer.
fn searxng(req: &Request) -> Response {
    let q = query_of(req);
    let results: Vec<Value> = (1..=5)
        .map(|i| {
            json!({
                "url": format!("https://{q}.example/{i}"),
                "title": format!("{q} result {i}"),
                "content": format!("About {q}, part {i}."),
                "engine": "duckduckgo",
                "score": 1.0 / f64::from(i),
                "publishedDate": if i == 1 { Value::from("2026-11-02T00:00:00") } else { Value::Null },
            })
        })
        .chain([json!({"url": "https://shared.example/", "title": "Shared", "content": ""})])
        .collect();
    let body = json!({
        "query": q,
        "number_of_results": 6,
        "results": results,
        "answers": if q == "rust" { json!(["Rust is a language."]) } else { json!([]) },
        "suggestions": [],
        "unresponsive_engines": [],
    });
    Response::new(200, "application/json", body.to_string())
}

async fn run(config: &WebConfig, queries: &[&str]) -> Result<WebSearchOutput, ToolError> {
    let tool = search_tool(config, Arc::new(TableLookup::default()));
    let args = WebSearchArgs { queries: queries.iter().map(|q| (*q).to_owned()).collect() };
    tool.call(args, context(Capabilities::new())).await
}

fn provider(kind: ProviderKind, url: String, key: Option<&str>) -> ProviderConfig {
    ProviderConfig {
        kind,
        url: Some(url),
        api_key_env: Some("TEST_SEARCH_KEY".into()),
        api_key: key.map(str::to_owned),
    }
}

#[tokio::test]
async fn searxng_results_merge_round_robin_deduplicated_and_capped() {
    let server = Server::start(searxng).await;
    let cfg = WebConfig {
        providers: vec![provider(ProviderKind::Searxng, server.url("/"), None)],
        ..config(&[])
    };
    // One query: the answer, five sources + the shared one, within the cap of 8.
    let out = run(&cfg, &["rust"]).await.expect("search");
    assert_eq!(out.content.as_deref(), Some("Rust is a language."));
    assert_eq!(out.sources.len(), 6);
    assert!(!out.truncated);
    assert_eq!(
        render_text(&out),
        "Rust is a language.\n\n\
         Sources:\n\
         - [rust result 1](https://rust.example/1) — About rust, part 1. (2026-11-02T00:00:00)\n\
         - [rust result 2](https://rust.example/2) — About rust, part 2.\n\
         - [rust result 3](https://rust.example/3) — About rust, part 3.\n\
         - [rust result 4](https://rust.example/4) — About rust, part 4.\n\
         - [rust result 5](https://rust.example/5) — About rust, part 5.\n\
         - [Shared](https://shared.example/)\n\n\
         Cite the relevant URLs above as markdown links in your answer."
    );
    // Two queries (one duplicated): run once each, merged by rank, the shared URL once, capped.
    let out = run(&cfg, &["rust", "go", "rust"]).await.expect("search");
    let urls: Vec<&str> = out.sources.iter().map(|s| s.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "https://rust.example/1",
            "https://go.example/1",
            "https://rust.example/2",
            "https://go.example/2",
            "https://rust.example/3",
            "https://go.example/3",
            "https://rust.example/4",
            "https://go.example/4",
        ]
    );
    assert!(out.truncated);
    assert_eq!(out.content.as_deref(), Some("## rust\n\nRust is a language."));
    let text = render_text(&out);
    assert!(text.ends_with(
        "\n\n(Showing the first 8 sources. Refine the query for more.)\n\nCite the relevant URLs above as markdown links in your answer."
    ));
    let requests = server.requests.lock().expect("log").clone();
    assert_eq!(requests.len(), 3, "the duplicate query ran once");
    assert!(requests.iter().all(|r| r.path.contains("format=json")));
}

#[tokio::test]
async fn brave_gets_its_key_header_and_its_json_is_read() {
    let server = Server::start(|req| {
        if req.headers.get("x-subscription-token").map(String::as_str) != Some("brave-key") {
            return Response::new(401, "application/json", r#"{"error":"unauthorized"}"#);
        }
        let body = json!({
            "type": "search",
            "query": {"original": query_of(req)},
            "web": {"type": "search", "results": [
                {"title": "Brave One", "url": "https://one.example/", "description": "First hit.", "page_age": "2026-10-01T00:00:00"},
                {"title": "Brave Two", "url": "https://two.example/", "description": "Second hit."},
            ]},
        });
        Response::new(200, "application/json", body.to_string())
    })
    .await;
    let cfg = WebConfig {
        providers: vec![provider(
            ProviderKind::Brave,
            server.url("/res/v1/web/search"),
            Some("brave-key"),
        )],
        ..config(&[])
    };
    let out = run(&cfg, &["hello"]).await.expect("search");
    assert_eq!(
        render_text(&out),
        "Sources:\n\
         - [Brave One](https://one.example/) — First hit. (2026-10-01T00:00:00)\n\
         - [Brave Two](https://two.example/) — Second hit.\n\n\
         Cite the relevant URLs above as markdown links in your answer."
    );
    let requests = server.requests.lock().expect("log").clone();
    assert!(
        requests[0].path.starts_with("/res/v1/web/search?q=hello&count=8"),
        "{}",
        requests[0].path
    );
    // A wrong key is the provider's failure, with its status.
    let cfg = WebConfig {
        providers: vec![provider(
            ProviderKind::Brave,
            server.url("/res/v1/web/search"),
            Some("nope"),
        )],
        ..config(&[])
    };
    let err = run(&cfg, &["hello"]).await.expect_err("401");
    assert_eq!(err.code(), Some("WEB_PROVIDER_FAILED"));
    assert_eq!(err.message, "brave: HTTP 401: {\"error\":\"unauthorized\"}");
}

#[tokio::test]
async fn tavily_gets_a_posted_query_and_answers() {
    let server = Server::start(|req| {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let authorized = req.headers.get("authorization").map(String::as_str) == Some("Bearer tvly-key");
        if req.method != "POST" || !authorized || body["include_answer"] != true {
            return Response::new(400, "application/json", "{}");
        }
        let q = body["query"].as_str().unwrap_or("");
        let answer = json!({
            "query": q,
            "answer": if q == "empty" { Value::Null } else { Value::from(format!("Answer about {q}.")) },
            "results": if q == "empty" { json!([]) } else { json!([
                {"title": format!("T {q}"), "url": format!("https://t.example/{q}"), "content": "Snippet.", "score": 0.9, "published_date": "Mon, 02 Nov 2026"},
                {"url": "https://untitled.example/", "content": "", "score": 0.5},
            ]) },
            "response_time": 0.5,
        });
        Response::new(200, "application/json", answer.to_string())
    })
    .await;
    let cfg = WebConfig {
        providers: vec![provider(ProviderKind::Tavily, server.url("/search"), Some("tvly-key"))],
        ..config(&[])
    };
    let out = run(&cfg, &["a", "b"]).await.expect("search");
    assert_eq!(
        render_text(&out),
        "## a\n\nAnswer about a.\n\n## b\n\nAnswer about b.\n\n\
         Sources:\n\
         - [T a](https://t.example/a) — Snippet. (Mon, 02 Nov 2026)\n\
         - [T b](https://t.example/b) — Snippet. (Mon, 02 Nov 2026)\n\
         - [https://untitled.example/](https://untitled.example/)\n\n\
         Cite the relevant URLs above as markdown links in your answer."
    );
    let out = run(&cfg, &["empty"]).await.expect("search");
    assert_eq!(
        render_text(&out),
        "No results found.\n\nCite the relevant URLs above as markdown links in your answer."
    );
}

#[tokio::test]
async fn validation_and_no_provider() {
    let cfg = WebConfig::default();
    let err = run(&cfg, &[]).await.expect_err("none");
    assert_eq!(err.message, "queries must contain at least one query");
    let err = run(&cfg, &["a", "b", "c", "d", "e"]).await.expect_err("five");
    assert_eq!(err.message, "queries must contain at most 4 queries");
    let one = WebConfig { search_max_queries: 1, ..WebConfig::default() };
    let err = run(&one, &["a", "b"]).await.expect_err("two");
    assert_eq!(err.message, "queries must contain at most 1 query");
    let err = run(&cfg, &["a", "  "]).await.expect_err("blank");
    assert_eq!(err.message, "each query must be a non-empty string");
    let err = run(&cfg, &["a"]).await.expect_err("no provider");
    assert_eq!(err.code(), Some("WEB_PROVIDER_UNAVAILABLE"));
    assert_eq!(
        err.message,
        "web_search has no provider: configure one with [[web.providers]] (kind = \"searxng\", \"brave\" or \"tavily\") in toolhost.toml"
    );
    // A keyed provider whose variable is unset says which variable.
    let cfg = WebConfig {
        providers: vec![provider(ProviderKind::Brave, "http://127.0.0.1:9/".into(), None)],
        ..WebConfig::default()
    };
    let err = run(&cfg, &["a"]).await.expect_err("no key");
    assert_eq!(err.message, "brave: no API key: set the environment variable TEST_SEARCH_KEY");
}

#[tokio::test]
async fn one_failing_query_fails_the_call() {
    let server = Server::start(|req| {
        if query_of(req) == "bad" {
            Response::new(500, "text/plain", "engine exploded")
        } else {
            searxng(req)
        }
    })
    .await;
    let cfg = WebConfig {
        providers: vec![provider(ProviderKind::Searxng, server.url(""), None)],
        ..config(&[])
    };
    let err = run(&cfg, &["good", "bad"]).await.expect_err("fails");
    assert_eq!(err.code(), Some("WEB_PROVIDER_FAILED"));
    assert_eq!(err.message, "searxng: HTTP 500: engine exploded");
}
