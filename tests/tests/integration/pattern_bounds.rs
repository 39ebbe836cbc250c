//! Compiling a caller's pattern is bounded, through `toolhost mcp --standalone`: a 10 MiB grep
//! pattern, glob pattern or grep `include`, and a short regex whose compiled program explodes,
//! are each answered with `SEARCH_PATTERN_TOO_LARGE` naming the limit; the server's peak resident
//! memory (VmHWM) stays under 100 MiB through all of them, and a normal grep still works after.
#![allow(clippy::unwrap_used)]

use crate::mcp;
use crate::server;
use crate::server::proc_number;

use mcp::{Mcp, error_code_of, text_of};
use serde_json::{Value, json};
use server::Env;
use std::time::Duration;

/// The pattern size of the issue: 10 MiB.
const HUGE: usize = 10 * 1024 * 1024;
/// The peak resident memory the server must stay under.
const PEAK_LIMIT_KIB: u64 = 100 * 1024;

/// A call that must fail with `SEARCH_PATTERN_TOO_LARGE`; its message. The answer can leave
/// before the request's buffers are dropped (the call's task ends after it answered): waits until
/// the server's resident memory is back near `settled_kib`, so the bound is one request's, not
/// two requests' that a loaded machine happened to overlap.
fn refused(mcp: &mut Mcp, tool: &str, arguments: Value) -> String {
    let pid = mcp.child.id();
    let settled_kib = proc_number(pid, "status", "VmRSS:") + 8 * 1024;
    let result = mcp.call(tool, arguments);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while proc_number(pid, "status", "VmRSS:") > settled_kib && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(result["isError"], true, "{tool}: {}", text_of(&result));
    assert_eq!(
        error_code_of(&result).as_deref(),
        Some("SEARCH_PATTERN_TOO_LARGE"),
        "{tool}: {}",
        text_of(&result)
    );
    text_of(&result)
}

#[test]
fn huge_and_exploding_patterns_are_refused_within_100_mib() {
    let env = Env::new();
    env.write("src/a.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.timeout = Duration::from_secs(120);
    mcp.initialize("pattern-bounds");
    let warm = mcp.call("grep", json!({"pattern": "hello"}));
    assert_eq!(warm["isError"], false, "{warm}");
    let pid = mcp.child.id();
    let baseline = proc_number(pid, "status", "VmHWM:");

    let huge = "a".repeat(HUGE);
    let text = refused(&mut mcp, "grep", json!({"pattern": huge}));
    assert!(
        text.contains(&format!("grep pattern is {HUGE} bytes, over the limit of 65536")),
        "{text}"
    );
    let after_grep = proc_number(pid, "status", "VmHWM:");

    let text = refused(&mut mcp, "glob", json!({"pattern": format!("**/{huge}")}));
    assert!(text.contains("glob pattern is 10485763 bytes, over the limit of 65536"), "{text}");
    let text = refused(&mut mcp, "grep", json!({"pattern": "x", "include": huge}));
    assert!(text.contains("grep include is 10485760 bytes, over the limit of 65536"), "{text}");
    drop(huge);

    // Short, but its compiled program would be gigabytes: the engine's size limit refuses it.
    let text = refused(&mut mcp, "grep", json!({"pattern": r"\w{1000}{1000}"}));
    assert!(text.contains("compiles to more than the regex engine's limit of 16777216"), "{text}");

    let peak = proc_number(pid, "status", "VmHWM:");
    let rss = proc_number(pid, "status", "VmRSS:");
    println!(
        "pattern bounds: VmHWM {baseline} KiB after warm-up, {after_grep} KiB after the 10 MiB \
         grep pattern, {peak} KiB at the end (VmRSS {rss} KiB)"
    );
    assert!(peak < PEAK_LIMIT_KIB, "peak {peak} KiB, over {PEAK_LIMIT_KIB} KiB");

    // Still serving.
    let found = mcp.call("grep", json!({"pattern": "print(ln)?!", "include": "*.rs"}));
    assert_eq!(found["isError"], false, "{found}");
    assert!(text_of(&found).contains("src/a.rs\nLine 2:"), "{}", text_of(&found));
}
