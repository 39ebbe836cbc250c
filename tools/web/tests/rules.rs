//! `web_fetch`'s URL and redirect rules with their exact texts and codes, against servers on
//! 127.0.0.1 (opened through `[web] allow`): the checks made before any connection and their
//! order, the header naming the URL the content came from, same-origin redirects only (a
//! cross-origin one is refused and never reached), the redirect budget, broken redirects, and the
//! content-type, length and body-size rules.

#[path = "support/server.rs"]
mod support;

use std::sync::Arc;
use support::{Response, Server, TableLookup, config, context};
use toolhost_contract::{Capabilities, Tool, ToolError};
use toolhost_tools_web::{
    TRUNCATION_NOTICE, WebConfig, WebFetchArgs, WebFetchOutput, WebFetchTool, clients,
};

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

/// The failure's code and message.
async fn refused(tool: &WebFetchTool, url: &str) -> (String, String) {
    let err = fetch(tool, url).await.expect_err(url);
    (err.code().unwrap_or("").to_owned(), err.message)
}

fn pair(code: &str, message: &str) -> (String, String) {
    (code.to_owned(), message.to_owned())
}

#[tokio::test]
async fn url_checks_come_before_any_connection_in_their_order() {
    let server = Server::start(|_| Response::new(200, "text/plain", "reached")).await;
    let p = server.port();
    let tool = tool(config(&[server.allow()]));
    // 2048 units pass, 2049 do not; the length is counted before anything else (even a URL that
    // would not parse or has credentials).
    let base = format!("http://127.0.0.1:{p}/");
    let exact = format!("{base}{}", "a".repeat(2048 - base.len()));
    assert_eq!(fetch(&tool, &exact).await.expect("2048 units").status_code, 200);
    let long = format!("{exact}a");
    let too_long = pair("WEB_INVALID_URL", "URL exceeds the maximum length of 2048");
    assert_eq!(refused(&tool, &long).await, too_long);
    assert_eq!(refused(&tool, &format!("ftp://u:p@x/{}", "é".repeat(2040))).await, too_long);
    // Counted in UTF-16 units: 1,100 two-unit characters are 2,200 units.
    assert_eq!(refused(&tool, &format!("{base}{}", "😀".repeat(1100))).await, too_long);
    // Unparsable: the input as given, untrimmed.
    for junk in ["not a url", " http://", "http://exa mple.com/", "//127.0.0.1/x"] {
        assert_eq!(
            refused(&tool, junk).await,
            pair("WEB_INVALID_URL", &format!("invalid URL: {junk}")),
            "{junk:?}"
        );
    }
    // Not http(s): the scheme with its colon, lower-cased by the parser.
    for (url, scheme) in [
        ("ftp://127.0.0.1/", "ftp:"),
        ("FILE:///etc/passwd", "file:"),
        ("data:text/plain,x", "data:"),
        ("javascript:alert(1)", "javascript:"),
        ("ftp://user:pw@127.0.0.1/", "ftp:"),
    ] {
        let message =
            format!("unsupported URL scheme \"{scheme}\" (only http and https are allowed)");
        assert_eq!(refused(&tool, url).await, pair("WEB_INVALID_URL", &message), "{url}");
    }
    // Credentials: a user name, a password, or both.
    let blocked = pair("WEB_BLOCKED_URL", "credentials in URLs are not allowed");
    for url in [
        format!("http://user:pw@127.0.0.1:{p}/"),
        format!("http://user@127.0.0.1:{p}/"),
        format!("http://:pw@127.0.0.1:{p}/"),
        format!("https://user:@127.0.0.1:{p}/"),
    ] {
        assert_eq!(refused(&tool, &url).await, blocked, "{url}");
    }
    // An empty `@` carries no credentials.
    assert_eq!(
        fetch(&tool, &format!("http://@127.0.0.1:{p}/")).await.expect("no creds").status_code,
        200
    );
    assert_eq!(server.connections(), 2, "only the two accepted URLs connected");
}

#[tokio::test]
async fn the_header_names_the_url_as_parsed_and_after_redirects() {
    let server = Server::start(|req| match req.path.as_str() {
        "/old" => Response::redirect(301, "/new?x=1"),
        _ => Response::new(200, "text/plain", "here"),
    })
    .await;
    let p = server.port();
    let tool = tool(config(&[server.allow()]));
    // No path: the parser's form has one.
    let out = fetch(&tool, &format!("  http://127.0.0.1:{p}")).await.expect("fetch");
    assert_eq!(text(&tool, &out), format!("Fetched http://127.0.0.1:{p}/ (HTTP 200)\n\nhere"));
    let out = fetch(&tool, &server.url("/old")).await.expect("redirected");
    assert_eq!(text(&tool, &out), format!("Fetched {} (HTTP 200)\n\nhere", server.url("/new?x=1")));
    assert_eq!(out.url, server.url("/old"));
    // A URL given in the parser's form records no separate final URL.
    let out = fetch(&tool, &server.url("/plain")).await.expect("plain");
    assert_eq!(out.final_url, None);
}

#[tokio::test]
async fn a_cross_origin_redirect_is_refused_and_never_followed() {
    let other = Server::start(|_| Response::new(200, "text/plain", "elsewhere")).await;
    let target = other.url("/page");
    let front = Server::start(move |req| match req.path.as_str() {
        "/away" => Response::redirect(302, &target),
        "/scheme" => Response::redirect(302, "https://127.0.0.1/secure"),
        "/name" => Response::redirect(307, "http://example.com/"),
        _ => Response::new(200, "text/plain", "front"),
    })
    .await;
    let tool = tool(config(&[front.allow(), other.allow()]));
    let expected = |origin: &str| {
        pair(
            "WEB_REDIRECT_BLOCKED",
            &format!(
                "cross-origin redirect to {origin} is not followed automatically; retry against that URL directly"
            ),
        )
    };
    assert_eq!(
        refused(&tool, &front.url("/away")).await,
        expected(&format!("http://127.0.0.1:{}", other.port()))
    );
    assert_eq!(refused(&tool, &front.url("/scheme")).await, expected("https://127.0.0.1"));
    assert_eq!(refused(&tool, &front.url("/name")).await, expected("http://example.com"));
    assert_eq!(other.connections(), 0, "the other origin was reached");
    // Fetched directly, as the text says, it works.
    let out = fetch(&tool, &other.url("/page")).await.expect("direct");
    assert_eq!(out.body.content, "elsewhere");
}

#[tokio::test]
async fn broken_redirects_have_their_texts() {
    let server = Server::start(|req| match req.path.as_str() {
        "/bare" => Response { headers: Vec::new(), ..Response::redirect(303, "") },
        "/bad" => Response::redirect(302, "http://[oops/"),
        "/creds" => Response::redirect(302, "http://u:p@127.0.0.1/"),
        "/ftp" => Response::redirect(301, "ftp://127.0.0.1/"),
        // Not one of the followed statuses: the answer itself.
        "/multiple" => Response::redirect(300, "/elsewhere"),
        "/proxy" => Response::redirect(305, "/elsewhere"),
        _ => Response::new(200, "text/plain", "ok"),
    })
    .await;
    let tool = tool(config(&[server.allow()]));
    assert_eq!(
        refused(&tool, &server.url("/bare")).await,
        pair("WEB_PROVIDER_ERROR", "redirect response (HTTP 303) without a Location header")
    );
    assert_eq!(
        refused(&tool, &server.url("/bad")).await,
        pair("WEB_PROVIDER_ERROR", "invalid redirect Location \"http://[oops/\"")
    );
    assert_eq!(
        refused(&tool, &server.url("/creds")).await,
        pair("WEB_BLOCKED_URL", "credentials in URLs are not allowed")
    );
    assert_eq!(
        refused(&tool, &server.url("/ftp")).await,
        pair(
            "WEB_INVALID_URL",
            "unsupported URL scheme \"ftp:\" (only http and https are allowed)"
        )
    );
    for path in ["/multiple", "/proxy"] {
        let out = fetch(&tool, &server.url(path)).await.expect_err(path);
        // No content type on these: refused as such, not followed.
        assert_eq!(out.code(), Some("WEB_UNSUPPORTED_CONTENT_TYPE"));
        assert_eq!(out.message, "unsupported content type \"unknown\"");
    }
    assert_eq!(
        server.requests.lock().expect("log").iter().filter(|r| r.path == "/elsewhere").count(),
        0
    );
}

#[tokio::test]
async fn only_text_content_types_are_read() {
    let server = Server::start(|req| {
        let ct = match req.path.as_str() {
            "/js" => "application/javascript",
            "/params" => "image/svg; charset=utf-8",
            "/xml" => "application/atom+xml",
            _ => "TEXT/CSV ; charset=utf-8",
        };
        Response::new(200, ct, "a,b")
    })
    .await;
    let tool = tool(config(&[server.allow()]));
    assert_eq!(
        refused(&tool, &server.url("/js")).await,
        pair("WEB_UNSUPPORTED_CONTENT_TYPE", "unsupported content type \"application/javascript\"")
    );
    assert_eq!(
        refused(&tool, &server.url("/params")).await,
        pair(
            "WEB_UNSUPPORTED_CONTENT_TYPE",
            "unsupported content type \"image/svg; charset=utf-8\""
        )
    );
    assert_eq!(fetch(&tool, &server.url("/xml")).await.expect("xml").body.content, "a,b");
    assert_eq!(fetch(&tool, &server.url("/csv")).await.expect("csv").body.content, "a,b");
}

#[tokio::test]
async fn the_decoded_body_is_cut_to_the_body_cap() {
    let server = Server::start(|_| Response::new(200, "text/plain", "y".repeat(150_000))).await;
    let tool = tool(config(&[server.allow()]));
    let out = fetch(&tool, &server.url("/long")).await.expect("fetch");
    assert!(out.truncated);
    assert_eq!(out.body.content, "y".repeat(100_000));
    assert!(text(&tool, &out).ends_with(&format!("y{TRUNCATION_NOTICE}")));
}
