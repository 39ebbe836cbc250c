//! HTML → markdown of a 1 MB article page, the two paths `web_fetch` takes: the readable article
//! (dom_smoothie) and the whole page (htmd).
//!
//! Run with `cargo bench -p toolhost-tools-web --bench html_to_markdown` (a plain `main`, no
//! harness). Each path reports the best and the median of `RUNS` runs in milliseconds.

// Cargo's auto-discovery builds this file with the libtest harness until the `[[bench]]`
// entry (harness = false) is present; `main` is unused in that build only.
#![cfg_attr(test, allow(dead_code))]

use std::time::{Duration, Instant};
use toolhost_tools_web::convert::html_to_markdown;

const RUNS: usize = 7;

/// A realistic article page of about `target` bytes: navigation, a sidebar, headings, long
/// paragraphs with links and emphasis, code blocks and tables, a footer.
fn page(target: usize) -> String {
    let mut body = String::new();
    let mut section = 0;
    while body.len() < target {
        section += 1;
        body.push_str(&format!(
            "<h2 id=\"s{section}\">Section {section}</h2>\n<p>Ownership is the core idea of Rust; \
             every value has one <em>owner</em>, and <a href=\"/borrow#{section}\">borrowing</a> \
             lets code use it without taking it. The borrow checker enforces the rules at compile \
             time, so <strong>data races</strong> cannot happen in safe code.</p>\n\
             <p>Lifetimes name how long a reference is valid. Most are inferred; the ones you \
             write connect the lifetimes of inputs and outputs, as in section {section}.</p>\n\
             <pre><code class=\"language-rust\">fn longest&lt;'a&gt;(a: &amp;'a str, b: &amp;'a str) \
             -&gt; &amp;'a str {{\n    if a.len() &gt; b.len() {{ a }} else {{ b }}\n}}</code></pre>\n\
             <table><thead><tr><th>Borrow</th><th>Readers</th><th>Writers</th></tr></thead><tbody>\
             <tr><td>shared</td><td>many</td><td>none</td></tr>\
             <tr><td>mutable</td><td>one</td><td>one</td></tr></tbody></table>\n\
             <ul><li>Item one of {section}</li><li>Item two with <code>code</code></li></ul>\n"
        ));
    }
    format!(
        "<!DOCTYPE html><html><head><title>A long article</title><style>p{{margin:0}}</style>\
         <script>var x = 1;</script></head><body><nav><a href=\"/\">Home</a><a href=\"/docs\">Docs</a>\
         </nav><aside class=\"sidebar\"><ul><li><a href=\"/a\">Related A</a></li><li>\
         <a href=\"/b\">Related B</a></li></ul></aside><main><article><h1>A long article</h1>\
         {body}</article></main><footer>© 2026</footer></body></html>"
    )
}

fn measure(name: &str, html: &str, whole_page: bool) {
    let mut times: Vec<Duration> = Vec::with_capacity(RUNS);
    let mut out_len = 0;
    for _ in 0..RUNS {
        let started = Instant::now();
        let converted = html_to_markdown(html, Some("https://example.com/article"), whole_page);
        times.push(started.elapsed());
        out_len = converted.markdown.len();
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name:<22} best {:>8.1} ms   median {:>8.1} ms   ({} KB of markdown)",
        ms(times[0]),
        ms(times[RUNS / 2]),
        out_len / 1024
    );
}

fn main() {
    let html = page(1024 * 1024);
    println!("HTML → markdown of a {} KB page, {RUNS} runs", html.len() / 1024);
    measure("readability (article)", &html, false);
    measure("htmd (whole page)", &html, true);
}
