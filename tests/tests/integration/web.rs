//! The web tools in the binary's host: configured through the real configuration layers (the
//! user's `[web] allow` honoured, an untrusted `toolhost.toml`'s dropped with a warning), a fetch
//! card carrying url/status/title/size/truncated/cached, the second fetch served from the
//! session's blob store (also after the session is resumed), a denied target never connected to, and the cards replayed from the log.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolhost_host::CallRequest;
use toolhost_host::config::{PartialConfig, Sources};
use toolhost_host::open_host;
use toolhost_host::session::open_session;
use toolhost_protocol::{CardKind, CardStatus};

/// A server on 127.0.0.1 answering every request with one HTML page; counts connections.
async fn page_server(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    (port, count)
}

const PAGE: &str = "<html><head><title>Release notes</title></head><body><article>\
    <h1>Release notes</h1><p>This release makes the greeting shorter and adds a test for it, \
    so that the output stays the same from one version to the next.</p></article></body></html>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_cards_cache_and_the_trust_rule_in_the_host() {
    let (open_port, open_hits) = page_server(PAGE).await;
    let (ws_port, ws_hits) = page_server("<p>internal</p>").await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("w");
    std::fs::create_dir(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let user =
        PartialConfig::from_toml("user", &format!("[web]\nallow = [\"127.0.0.1:{open_port}\"]\n"))
            .unwrap();
    // A cloned repository asking to open a local service: ignored (the workspace is untrusted).
    let workspace = PartialConfig::from_toml(
        "toolhost.toml",
        &format!("[web]\nallow = [\"127.0.0.1:{ws_port}\"]\n"),
    )
    .unwrap();
    let config = Sources { user: Some(user), workspace: Some(workspace), ..Sources::default() }
        .resolve(&root);
    assert!(
        config.warnings.iter().any(|w| w.contains("ignored web.allow")),
        "{:?}",
        config.warnings
    );

    let opened = open_session(&dir.path().join("sessions"), &root, "web").unwrap();
    let host = open_host(&config, &root, Some(&opened)).unwrap();
    let url = format!("http://127.0.0.1:{open_port}/notes");
    let args = serde_json::json!({ "url": url });
    let mut cards = Vec::new();
    for i in 0..2 {
        let outcome =
            host.run(CallRequest::new("web_fetch", args.clone()).id(format!("f{i}"))).await;
        cards.push(outcome.unwrap().card());
    }
    for (card, cached) in cards.iter().zip([false, true]) {
        assert_eq!(card.kind, CardKind::Fetch);
        assert_eq!(card.status, CardStatus::Completed);
        assert_eq!(card.title, format!("Fetch {url}"));
        let data = card.data.clone().unwrap();
        assert_eq!(data["url"], Value::from(url.clone()));
        assert_eq!(data["status"], 200);
        assert_eq!(data["title"], "Release notes");
        assert_eq!(data["size"], PAGE.len());
        assert_eq!(data["truncated"], false);
        assert_eq!(data["cached"], cached, "call {}", card.call_id);
    }
    assert_eq!(open_hits.load(Ordering::SeqCst), 1, "the second fetch came from the cache");
    // The cached page is a blob of the session.
    let blobs = std::fs::read_dir(opened.blob_dir()).unwrap().count();
    assert!(blobs >= 1);

    let denied = format!("http://127.0.0.1:{ws_port}/");
    let outcome = host
        .run(CallRequest::new("web_fetch", serde_json::json!({ "url": denied })).id("f2"))
        .await
        .unwrap();
    assert_eq!(outcome.card().status, CardStatus::Failed);
    let error = outcome.finalized.result.error().unwrap();
    assert_eq!(error.info.as_ref().unwrap().code, "WEB_SSRF_DENIED");
    assert_eq!(ws_hits.load(Ordering::SeqCst), 0, "the untrusted allow entry opened nothing");
    cards.push(outcome.card());

    opened.log.flush().await.unwrap();
    let replayed = toolhost_host::session::replay(host.registry(), opened.log.log_path()).unwrap();
    assert_eq!(replayed.len(), cards.len());
    for (card, again) in cards.iter().zip(&replayed) {
        assert_eq!(&again.card, card, "card of {} differs on replay", card.call_id);
    }
    host.shutdown().await;
    drop(host);
    drop(opened);

    // The session resumed by another process: the page cache is still there.
    let reopened = open_session(&dir.path().join("sessions"), &root, "web").unwrap();
    let host = open_host(&config, &root, Some(&reopened)).unwrap();
    let outcome = host.run(CallRequest::new("web_fetch", args).id("f3")).await.unwrap();
    assert_eq!(outcome.card().data.unwrap()["cached"], true);
    assert_eq!(open_hits.load(Ordering::SeqCst), 1, "the resumed session fetched nothing");
    host.shutdown().await;
}
