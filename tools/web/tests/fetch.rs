//! `web_fetch` against real pages served on 127.0.0.1 (opened through `[web] allow`): an article
//! with nav, sidebar, code and a table, a huge page, wrong and missing charsets, a slow-loris
//! body, redirect chains, gzip and brotli, non-2xx, binary, the byte cap and the cache — with the
//! exact Native texts and truncation notices.

#[path = "support/server.rs"]
mod support;

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Response, Server, TableLookup, config, context};
use toolhost_contract::{BlobCacheHandle, Capabilities, MemoryBlobCache, Tool, ToolError};
use toolhost_tools_web::convert::utf16_len;
use toolhost_tools_web::{
    TRUNCATION_NOTICE, WebConfig, WebFetchArgs, WebFetchOutput, WebFetchTool, clients,
};

const ARTICLE: &str = r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Borrowing in Rust | Example Blog</title>
<style>body { color: red }</style><script>var tracking = "SCRIPT-TEXT";</script></head>
<body>
<nav class="site-nav"><a href="/">Home</a> <a href="/about">NAV-LINK-ABOUT</a></nav>
<aside class="sidebar"><h3>Related</h3><ul><li><a href="/x">SIDEBAR-ITEM</a></li></ul></aside>
<main><article>
<h1>Borrowing in Rust</h1>
<p>Ownership is the core idea of Rust. Every value has exactly one owner, and when the owner goes
out of scope the value is dropped. Borrowing lets code use a value without taking ownership of
it, which is how most functions receive their arguments in idiomatic Rust programs.</p>
<p>A shared borrow allows reading through many references at the same time, while a mutable
borrow is exclusive. The borrow checker enforces these rules at compile time, so data races are
impossible in safe code. This paragraph is long enough for a readability scorer to like it.</p>
<pre><code class="language-rust">fn longest&lt;'a&gt;(a: &amp;'a str, b: &amp;'a str) -&gt; &amp;'a str {
    if a.len() &gt; b.len() { a } else { b }
}</code></pre>
<p>The table below compares the two kinds of borrows and what each one permits in practice, a
summary worth keeping around while learning the language and its many rules about lifetimes.</p>
<table><thead><tr><th>Borrow</th><th>Readers</th><th>Writers</th></tr></thead>
<tbody><tr><td>shared</td><td>many</td><td>none</td></tr>
<tr><td>mutable</td><td>one</td><td>one</td></tr></tbody></table>
<p>With these rules in mind, most compiler errors about borrowing become easy to read and fix.</p>
</article></main>
<footer>FOOTER-COPYRIGHT 2026</footer>
</body></html>"#;

fn tool(config: WebConfig) -> WebFetchTool {
    let clients = Arc::new(clients(&config, Arc::new(TableLookup::default())));
    WebFetchTool::new(config, clients)
}

async fn fetch(tool: &WebFetchTool, url: &str) -> Result<WebFetchOutput, ToolError> {
    let args = WebFetchArgs { url: url.to_owned(), whole_page: false };
    tool.call(args, context(Capabilities::new())).await
}

fn text(tool: &WebFetchTool, output: &WebFetchOutput) -> String {
    let args = WebFetchArgs { url: output.url.clone(), whole_page: false };
    match tool.render(&args, output).as_slice() {
        [toolhost_contract::protocol::ContentBlock::Text { text }] => text.clone(),
        other => panic!("unexpected content {other:?}"),
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).expect("gzip");
    encoder.finish().expect("gzip")
}

fn brotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut writer = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
        writer.write_all(bytes).expect("brotli");
    }
    out
}

#[tokio::test]
async fn plain_text_has_the_exact_native_text() {
    let server =
        Server::start(|_| Response::new(200, "text/plain; charset=utf-8", "hello\nworld")).await;
    let tool = tool(config(&[server.allow()]));
    let out = fetch(&tool, &server.url("/hello.txt")).await.expect("fetch");
    assert_eq!(
        text(&tool, &out),
        format!("Fetched {} (HTTP 200)\n\nhello\nworld", server.url("/hello.txt"))
    );
    assert!(!out.truncated);
    assert_eq!(out.bytes, 11);
}

#[tokio::test]
async fn an_article_becomes_markdown_without_the_page_chrome() {
    let server = Server::start(|_| Response::new(200, "text/html; charset=utf-8", ARTICLE)).await;
    let tool = tool(config(&[server.allow()]));
    let out = fetch(&tool, &server.url("/post")).await.expect("fetch");
    let md = &out.body.content;
    assert_eq!(out.title.as_deref(), Some("Borrowing in Rust | Example Blog"));
    assert!(md.contains("Every value has exactly one owner"), "{md}");
    assert!(md.contains("fn longest<'a>(a: &'a str, b: &'a str) -> &'a str {"), "{md}");
    assert!(md.contains("```"), "code is fenced: {md}");
    assert!(md.contains("| shared | many | none |"), "table is GFM: {md}");
    for chrome in
        ["NAV-LINK-ABOUT", "SIDEBAR-ITEM", "FOOTER-COPYRIGHT", "SCRIPT-TEXT", "color: red"]
    {
        assert!(!md.contains(chrome), "{chrome} leaked: {md}");
    }
    // The whole page (htmd) keeps the sidebar but still skips script, style, nav and footer.
    let args = WebFetchArgs { url: server.url("/post"), whole_page: true };
    let whole = tool.call(args, context(Capabilities::new())).await.expect("fetch");
    let md = &whole.body.content;
    assert!(md.contains("SIDEBAR-ITEM") && md.contains("```rust"), "{md}");
    for chrome in ["NAV-LINK-ABOUT", "FOOTER-COPYRIGHT", "SCRIPT-TEXT", "color: red"] {
        assert!(!md.contains(chrome), "{chrome} leaked: {md}");
    }
}

#[tokio::test]
async fn a_huge_page_is_cut_to_the_cap_with_the_notice() {
    let paragraph =
        "<p>".to_owned() + &"Lorem ipsum dolor sit amet, consectetur. ".repeat(40) + "</p>\n";
    let page = format!("<html><body><article>{}</article></body></html>", paragraph.repeat(3000));
    assert!(page.len() > 4_000_000);
    let server = Server::start(move |_| Response::new(200, "text/html", page.clone())).await;
    let tool = tool(config(&[server.allow()]));
    let out = fetch(&tool, &server.url("/huge")).await.expect("fetch");
    let native = text(&tool, &out);
    assert!(out.truncated);
    assert!(native.ends_with(TRUNCATION_NOTICE));
    assert!(
        native.starts_with(&format!("Fetched {} (HTTP 200)\n\nLorem ipsum", server.url("/huge")))
    );
    // The decoded body is cut to 100,000 units before it is converted (markup drops out, the
    // header and the notice come in).
    assert!(utf16_len(&native) <= 100_200, "{}", utf16_len(&native));
    assert!(utf16_len(&native) > 90_000, "{}", utf16_len(&native));
}

#[tokio::test]
async fn the_char_cap_counts_utf16_units_and_keeps_the_notice_inside() {
    let body = "😀".repeat(1000); // 2000 UTF-16 units
    let server = Server::start(move |_| Response::new(200, "text/plain", body.clone())).await;
    let cfg = WebConfig { fetch_max_output_chars: 500, ..config(&[server.allow()]) };
    let tool = tool(cfg);
    let url = server.url("/emoji");
    let out = fetch(&tool, &url).await.expect("fetch");
    let native = text(&tool, &out);
    let head = format!("Fetched {url} (HTTP 200)\n\n");
    let room = 500 - utf16_len(&head) - utf16_len(TRUNCATION_NOTICE);
    let expected = format!("{head}{}{TRUNCATION_NOTICE}", "😀".repeat(room / 2));
    assert_eq!(native, expected);
}

#[tokio::test]
async fn a_declared_length_over_the_byte_cap_is_refused_unread() {
    let body = "x".repeat(5_000_001);
    let server = Server::start(move |_| Response::new(200, "text/plain", body.clone())).await;
    let tool = tool(config(&[server.allow()]));
    let err = fetch(&tool, &server.url("/big")).await.expect_err("too large");
    assert_eq!(err.code(), Some("WEB_FETCH_TOO_LARGE"));
    assert_eq!(err.message, "response exceeds the maximum of 5000000 bytes");
}

#[tokio::test]
async fn the_byte_cap_stops_reading() {
    let body = "x".repeat(1_000_000);
    let server = Server::start(move |_| Response {
        omit_length: true,
        ..Response::new(200, "text/plain", body.clone())
    })
    .await;
    let cfg = WebConfig { fetch_max_bytes: 1000, ..config(&[server.allow()]) };
    let tool = tool(cfg);
    let out = fetch(&tool, &server.url("/big")).await.expect("fetch");
    assert_eq!(out.bytes, 1000);
    assert_eq!(out.body.content, "x".repeat(1000));
    assert!(out.truncated);
    assert!(text(&tool, &out).ends_with(&format!("{}{TRUNCATION_NOTICE}", "x".repeat(10))));
}

#[tokio::test]
async fn charsets_are_decoded_and_a_wrong_one_does_not_fail() {
    let server = Server::start(|req| match req.path.as_str() {
        // Declared only in the page: windows-1251 bytes for "Привет, мир".
        "/cp1251" => Response::new(
            200,
            "text/html",
            [
                b"<html><head><meta charset=\"windows-1251\"></head><body><p>".as_slice(),
                b"\xcf\xf0\xe8\xe2\xe5\xf2, \xec\xe8\xf0</p></body></html>",
            ]
            .concat(),
        ),
        "/latin1" => {
            Response::new(200, "text/plain; charset=ISO-8859-1", b"caf\xe9 cr\xe8me".to_vec())
        }
        // Declared UTF-8, sent Latin-1: the bad bytes become U+FFFD.
        _ => Response::new(200, "text/plain; charset=utf-8", b"caf\xe9".to_vec()),
    })
    .await;
    let tool = tool(config(&[server.allow()]));
    let out = fetch(&tool, &server.url("/cp1251")).await.expect("fetch");
    assert!(out.body.content.contains("Привет, мир"), "{}", out.body.content);
    let out = fetch(&tool, &server.url("/latin1")).await.expect("fetch");
    assert_eq!(out.body.content, "café crème");
    let out = fetch(&tool, &server.url("/wrong")).await.expect("fetch");
    assert_eq!(out.body.content, "caf\u{fffd}");
}

#[tokio::test]
async fn a_slow_loris_body_times_out() {
    let server = Server::start(|_| Response {
        dribble: Some((1, Duration::from_millis(200))),
        ..Response::new(200, "text/plain", "x".repeat(100))
    })
    .await;
    let cfg = WebConfig { fetch_timeout_ms: 800, ..config(&[server.allow()]) };
    let tool = tool(cfg);
    let started = Instant::now();
    let err = fetch(&tool, &server.url("/slow")).await.expect_err("times out");
    assert_eq!(err.code(), Some("WEB_FETCH_TIMEOUT"));
    assert_eq!(err.message, "web fetch timed out");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn redirects_are_followed_up_to_five() {
    let server = Server::start(|req| {
        let path = req.path.as_str();
        match path.strip_prefix("/hop/").and_then(|n| n.parse::<u32>().ok()) {
            Some(0) => Response::new(200, "text/plain", "arrived"),
            Some(n) => {
                Response::redirect(if n % 2 == 0 { 302 } else { 301 }, &format!("/hop/{}", n - 1))
            }
            None => Response::new(404, "text/plain", "no"),
        }
    })
    .await;
    let tool = tool(config(&[server.allow()]));
    let out = fetch(&tool, &server.url("/hop/5")).await.expect("five redirects");
    assert_eq!(out.body.content, "arrived");
    assert_eq!(out.final_url.as_deref(), Some(server.url("/hop/0").as_str()));
    // The header names where the content came from.
    assert_eq!(
        text(&tool, &out),
        format!("Fetched {} (HTTP 200)\n\narrived", server.url("/hop/0"))
    );
    let err = fetch(&tool, &server.url("/hop/6")).await.expect_err("six redirects");
    assert_eq!(err.code(), Some("WEB_REDIRECT_BLOCKED"));
    assert_eq!(err.message, "exceeded the maximum of 5 redirects");
}

#[tokio::test]
async fn gzip_and_brotli_bodies_are_decoded() {
    let server = Server::start(|req| match req.path.as_str() {
        "/gz" => Response::new(200, "text/plain", gzip(b"squeezed with gzip"))
            .header("Content-Encoding", "gzip"),
        _ => Response::new(200, "text/plain", brotli(b"squeezed with brotli"))
            .header("Content-Encoding", "br"),
    })
    .await;
    let tool = tool(config(&[server.allow()]));
    assert_eq!(
        fetch(&tool, &server.url("/gz")).await.expect("gz").body.content,
        "squeezed with gzip"
    );
    assert_eq!(
        fetch(&tool, &server.url("/br")).await.expect("br").body.content,
        "squeezed with brotli"
    );
    let requests = server.requests.lock().expect("log").clone();
    let accepted = requests[0].headers.get("accept-encoding").cloned().unwrap_or_default();
    assert!(accepted.contains("gzip") && accepted.contains("br"), "{accepted}");
}

#[tokio::test]
async fn non_2xx_is_a_result_and_binary_is_refused() {
    let server = Server::start(|req| match req.path.as_str() {
        "/missing" => {
            Response::new(404, "text/html", "<html><body><h1>Not here</h1></body></html>")
        }
        "/json" => Response::new(200, "application/json", r#"{"a": [1, 2]}"#),
        _ => Response::new(200, "image/png", b"\x89PNG\r\n\x1a\n\0\0\0".to_vec()),
    })
    .await;
    let tool = tool(config(&[server.allow()]));
    let out = fetch(&tool, &server.url("/missing")).await.expect("404 is a result");
    assert_eq!(
        text(&tool, &out),
        format!("Fetched {} (HTTP 404)\n\n## Not here", server.url("/missing"))
    );
    let out = fetch(&tool, &server.url("/json")).await.expect("json");
    assert_eq!(
        text(&tool, &out),
        format!("Fetched {} (HTTP 200)\n\n{{\"a\": [1, 2]}}", server.url("/json"))
    );
    let err = fetch(&tool, &server.url("/logo.png")).await.expect_err("binary");
    assert_eq!(err.code(), Some("WEB_UNSUPPORTED_CONTENT_TYPE"));
    assert_eq!(err.message, "unsupported content type \"image/png\"");
}

#[tokio::test]
async fn validation_and_schemes() {
    let tool = tool(WebConfig::default());
    let err = fetch(&tool, "  ").await.expect_err("empty");
    assert_eq!(err.message, "url must be a non-empty string");
    let err = fetch(&tool, "file:///etc/passwd").await.expect_err("file");
    assert_eq!(err.code(), Some("WEB_INVALID_URL"));
    assert_eq!(err.message, "unsupported URL scheme \"file:\" (only http and https are allowed)");
    let err = fetch(&tool, "not a url").await.expect_err("junk");
    assert_eq!(err.code(), Some("WEB_INVALID_URL"));
    assert_eq!(err.message, "invalid URL: not a url");
}

#[tokio::test]
async fn a_second_fetch_within_fifteen_minutes_comes_from_the_cache() {
    let server = Server::start(|_| Response::new(200, "text/plain", "fresh")).await;
    let tool = tool(config(&[server.allow()]));
    let cache: BlobCacheHandle = Arc::new(MemoryBlobCache::new());
    let caps = || Capabilities::new().with::<BlobCacheHandle>(Arc::clone(&cache));
    let args = WebFetchArgs { url: server.url("/page"), whole_page: false };
    let first = tool.call(args.clone(), context(caps())).await.expect("first");
    let second = tool.call(args.clone(), context(caps())).await.expect("second");
    assert!(!first.cached && second.cached);
    assert_eq!(second.body, first.body);
    assert_eq!(server.connections(), 1);
    let meta = tool.presentation_meta(&args, &second).expect("meta");
    assert_eq!(meta["cached"], true);
    assert_eq!(meta["status"], 200);
    assert_eq!(meta["size"], 5);
    assert_eq!(meta["truncated"], false);
}

#[tokio::test]
async fn a_cancelled_fetch_stops_at_once() {
    let server = Server::start(|_| Response {
        dribble: Some((1, Duration::from_millis(200))),
        ..Response::new(200, "text/plain", "x".repeat(100))
    })
    .await;
    let tool = tool(config(&[server.allow()]));
    let cx = context(Capabilities::new());
    let signal = cx.signal().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        signal.cancel();
    });
    let started = Instant::now();
    let args = WebFetchArgs { url: server.url("/slow"), whole_page: false };
    let err = tool.call(args, cx).await.expect_err("cancelled");
    assert_eq!(err.code(), Some("ABORTED"));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_configured_proxy_gets_the_requests_and_literals_are_still_vetted() {
    let proxy =
        Server::start(|req| Response::new(200, "text/plain", format!("via proxy: {}", req.path)))
            .await;
    let cfg = WebConfig { proxy: Some(proxy.url("")), ..config(&[]) };
    let tool = tool(cfg);
    // The name is resolved by the proxy (the table resolver knows nothing).
    let out = fetch(&tool, "http://docs.example.test/page").await.expect("through the proxy");
    assert_eq!(out.body.content, "via proxy: http://docs.example.test/page");
    let err = fetch(&tool, "http://169.254.169.254/latest/").await.expect_err("metadata");
    assert_eq!(err.code(), Some("WEB_SSRF_DENIED"));
    assert_eq!(proxy.connections(), 1);
}

#[tokio::test]
async fn an_expired_entry_is_fetched_again() {
    let server = Server::start(|_| Response::new(200, "text/plain", "fresh")).await;
    let tool = tool(WebConfig { cache_ttl_ms: 0, ..config(&[server.allow()]) });
    let cache: BlobCacheHandle = Arc::new(MemoryBlobCache::new());
    let args = WebFetchArgs { url: server.url("/page"), whole_page: false };
    for _ in 0..2 {
        let caps = Capabilities::new().with::<BlobCacheHandle>(Arc::clone(&cache));
        let out = tool.call(args.clone(), context(caps)).await.expect("fetch");
        assert!(!out.cached);
    }
    assert_eq!(server.connections(), 2);
}
