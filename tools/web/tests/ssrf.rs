//! The SSRF matrix: every way to name a denied address — literals in every encoding `url`
//! accepts, IPv6 forms embedding IPv4, names whose DNS answer mixes public and private addresses
//! (a table resolver) — is refused with the rule it broke; a redirect from an allowed server to a
//! denied one is refused before it is followed (it crosses origins); and the denied server (a real
//! one on 127.0.0.1, not in `[web] allow`) accepts zero connections.

#[path = "support/server.rs"]
mod support;

use std::sync::Arc;
use support::{Response, Server, TableLookup, config, context};
use toolhost_contract::{Capabilities, Tool, ToolError};
use toolhost_tools_web::{AllowEntry, WebConfig, WebFetchArgs, WebFetchTool, clients};

fn lookup() -> TableLookup {
    TableLookup::default()
        .with("localhost", &["127.0.0.1"])
        .with("mixed.test", &["93.184.216.34", "127.0.0.1"])
        .with("mixed-first.test", &["127.0.0.1", "93.184.216.34"])
        .with("mixed6.test", &["2606:4700::1111", "::1"])
        .with("private.test", &["10.1.2.3"])
        .with("metadata.test", &["169.254.169.254"])
        .with("mapped.test", &["::ffff:127.0.0.1"])
        .with("cgnat.test", &["100.64.1.1"])
        .with("linklocal6.test", &["fe80::1"])
        .with("unique-local.test", &["fd12:3456::1"])
        .with("zero.test", &["0.0.0.0"])
        .with("front.test", &["127.0.0.1"])
}

async fn fetch(tool: &WebFetchTool, url: &str) -> Result<(), ToolError> {
    let args = WebFetchArgs { url: url.to_owned(), whole_page: false };
    tool.call(args, context(Capabilities::new())).await.map(|_| ())
}

#[tokio::test]
async fn sixty_ways_to_a_denied_address_reach_nothing() {
    // The victim: a live server on 127.0.0.1 that is NOT allowed.
    let victim = Server::start(|_| Response::new(200, "text/plain", "SECRET")).await;
    let v = victim.port();
    // The front: an allowed server that redirects wherever it is asked to.
    let front = Server::start(|req| {
        let to = req.path.strip_prefix("/to/").unwrap_or("/");
        Response::redirect(302, &to.replace("%7C", "/"))
    })
    .await;
    let cfg = WebConfig {
        allow: vec![front.allow(), AllowEntry::Name("front.test".into(), front.port())],
        ..config(&[])
    };
    let tool = WebFetchTool::new(cfg.clone(), Arc::new(clients(&cfg, Arc::new(lookup()))));

    // (URL, rule the denial must name)
    let cases: Vec<(String, &str)> = vec![
        // 127.0.0.1 in every spelling `url` normalizes.
        (format!("http://127.0.0.1:{v}/"), "loopback"),
        (format!("http://2130706433:{v}/"), "loopback"),
        (format!("http://0x7f000001:{v}/"), "loopback"),
        (format!("http://017700000001:{v}/"), "loopback"),
        (format!("http://0177.0.0.1:{v}/"), "loopback"),
        (format!("http://0x7f.0.0.1:{v}/"), "loopback"),
        (format!("http://0x7F.0x0.0x0.0x1:{v}/"), "loopback"),
        (format!("http://127.1:{v}/"), "loopback"),
        (format!("http://127.0.1:{v}/"), "loopback"),
        (format!("http://127.000.000.001:{v}/"), "loopback"),
        (format!("http://127.255.255.254:{v}/"), "loopback"),
        (format!("http://%31%32%37.0.0.1:{v}/"), "loopback"),
        (format!("https://127.0.0.1:{v}/"), "loopback"),
        // IPv6 literals, including the IPv4-embedding forms.
        (format!("http://[::1]:{v}/"), "loopback"),
        (format!("http://[0:0:0:0:0:0:0:1]:{v}/"), "loopback"),
        (format!("http://[::ffff:127.0.0.1]:{v}/"), "loopback"),
        (format!("http://[::ffff:7f00:1]:{v}/"), "loopback"),
        (format!("http://[0:0:0:0:0:ffff:127.0.0.1]:{v}/"), "loopback"),
        (format!("http://[::127.0.0.1]:{v}/"), "loopback"),
        (format!("http://[64:ff9b::127.0.0.1]:{v}/"), "loopback"),
        (format!("http://[2002:7f00:1::1]:{v}/"), "loopback"),
        (format!("http://[::ffff:10.0.0.1]:{v}/"), "private"),
        ("http://[::ffff:169.254.169.254]/".into(), "cloud-metadata"),
        // Unspecified (0.0.0.0 reaches the local host on Linux).
        (format!("http://0.0.0.0:{v}/"), "unspecified"),
        (format!("http://0:{v}/"), "unspecified"),
        (format!("http://[::]:{v}/"), "unspecified"),
        // The other default-denied ranges.
        ("http://10.0.0.1/".into(), "private"),
        ("http://10.255.255.255/".into(), "private"),
        ("http://172.16.0.1/".into(), "private"),
        ("http://172.31.255.255/".into(), "private"),
        ("http://192.168.0.1/".into(), "private"),
        ("http://169.254.0.1/".into(), "link-local"),
        ("http://169.254.169.254/latest/meta-data/".into(), "cloud-metadata"),
        ("http://2852039166/".into(), "cloud-metadata"),
        ("http://100.100.100.200/".into(), "cloud-metadata"),
        ("http://[fd00:ec2::254]/".into(), "cloud-metadata"),
        ("http://100.64.0.1/".into(), "cgnat"),
        ("http://100.127.255.254/".into(), "cgnat"),
        ("http://224.0.0.1/".into(), "multicast"),
        ("http://239.255.255.250/".into(), "multicast"),
        ("http://255.255.255.255/".into(), "broadcast"),
        ("http://192.0.2.10/".into(), "documentation"),
        ("http://198.51.100.7/".into(), "documentation"),
        ("http://203.0.113.9/".into(), "documentation"),
        ("http://[2001:db8::1]/".into(), "documentation"),
        ("http://240.0.0.1/".into(), "reserved"),
        ("http://198.18.0.1/".into(), "reserved"),
        ("http://[fc00::1]/".into(), "private"),
        ("http://[fe80::1]/".into(), "link-local"),
        ("http://[ff02::1]/".into(), "multicast"),
        // Names: every address of the answer is vetted, so one private address denies the name.
        (format!("http://localhost:{v}/"), "loopback"),
        (format!("http://LOCALHOST.:{v}/"), "loopback"),
        (format!("http://mixed.test:{v}/"), "loopback"),
        (format!("http://mixed-first.test:{v}/"), "loopback"),
        (format!("http://mixed6.test:{v}/"), "loopback"),
        (format!("http://mapped.test:{v}/"), "loopback"),
        (format!("http://zero.test:{v}/"), "unspecified"),
        ("http://private.test/".into(), "private"),
        ("http://metadata.test/".into(), "cloud-metadata"),
        ("http://cgnat.test/".into(), "cgnat"),
        ("http://linklocal6.test/".into(), "link-local"),
        ("http://unique-local.test/".into(), "private"),
        // An allowed name on another port is not allowed.
        (format!("http://front.test:{v}/"), "loopback"),
    ];
    // Redirects from the allowed front to the victim, in several spellings: another origin, so
    // refused before the guard is even asked.
    let mut redirects = Vec::new();
    for target in [
        format!("http:%7C%7C127.0.0.1:{v}%7Csecret"),
        format!("http:%7C%7C2130706433:{v}%7C"),
        format!("http:%7C%7C[::ffff:127.0.0.1]:{v}%7C"),
        format!("http:%7C%7Clocalhost:{v}%7C"),
        format!("http:%7C%7Cmixed.test:{v}%7C"),
        format!("http:%7C%7C0.0.0.0:{v}%7C"),
        "http:%7C%7C169.254.169.254%7Clatest".to_owned(),
    ] {
        redirects.push(format!("{}/to/{target}", front.url("")));
        redirects.push(format!("http://front.test:{}/to/{target}", front.port()));
    }
    assert!(cases.len() + redirects.len() >= 60, "{} cases", cases.len() + redirects.len());

    for (url, rule) in &cases {
        let err = fetch(&tool, url).await.expect_err(url);
        assert_eq!(err.code(), Some("WEB_SSRF_DENIED"), "{url}: {}", err.message);
        assert!(
            err.message.starts_with(&format!("blocked by the SSRF guard (rule `{rule}`)")),
            "{url}: {}",
            err.message
        );
    }
    for url in &redirects {
        let err = fetch(&tool, url).await.expect_err(url);
        assert_eq!(err.code(), Some("WEB_REDIRECT_BLOCKED"), "{url}: {}", err.message);
        assert!(err.message.starts_with("cross-origin redirect to http://"), "{}", err.message);
    }
    assert_eq!(victim.connections(), 0, "a denied address was reached");
    // The front was reached once per redirect case, and nothing else went anywhere.
    assert_eq!(front.connections(), 14);

    // Other schemes and credentials never connect either.
    for url in [
        "file:///etc/passwd",
        "ftp://127.0.0.1/",
        "gopher://127.0.0.1:70/",
        "data:text/plain,x",
        &format!("http://user:pw@127.0.0.1:{v}/"),
    ] {
        let err = fetch(&tool, url).await.expect_err(url);
        assert!(matches!(err.code(), Some("WEB_INVALID_URL" | "WEB_BLOCKED_URL")), "{url}");
    }
    assert_eq!(victim.connections(), 0);
}

#[tokio::test]
async fn an_allow_entry_opens_exactly_its_host_and_port() {
    let server = Server::start(|_| Response::new(200, "text/plain", "ok")).await;
    let p = server.port();
    let by_name = WebConfig { allow: vec![AllowEntry::Name("localhost".into(), p)], ..config(&[]) };
    let tool = WebFetchTool::new(by_name.clone(), Arc::new(clients(&by_name, Arc::new(lookup()))));
    fetch(&tool, &format!("http://localhost:{p}/")).await.expect("allowed by name");
    let err = fetch(&tool, &server.url("/")).await.expect_err("the address itself is not allowed");
    assert_eq!(err.code(), Some("WEB_SSRF_DENIED"));
    assert_eq!(
        err.message,
        format!(
            "blocked by the SSRF guard (rule `loopback`): 127.0.0.1 is 127.0.0.1, a loopback address; add \"127.0.0.1:{p}\" to [web] allow in the user configuration to reach it"
        )
    );
    let by_addr = config(&[server.allow()]);
    let tool = WebFetchTool::new(by_addr.clone(), Arc::new(clients(&by_addr, Arc::new(lookup()))));
    fetch(&tool, &format!("http://2130706433:{p}/")).await.expect("any spelling of the address");
    // The mapped form is the same address (and reaches the IPv4 listener).
    fetch(&tool, &format!("http://[::ffff:127.0.0.1]:{p}/")).await.expect("mapped form");
    assert_eq!(server.connections(), 3);
}
