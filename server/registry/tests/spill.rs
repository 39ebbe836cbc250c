//! The generic spill policy (docs/tools.md, Spill): registered outermost, it bounds
//! the finally accepted text content of a direct call to `max_inline_bytes`, stores the full text
//! through the `SpillHandle` capability and leaves a locator notice — and never turns a success
//! into a failure.
#![allow(clippy::unwrap_used)]

#[path = "support/common.rs"]
mod common;

use common::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use toolhost_contract::protocol::ContentBlock;
use toolhost_contract::spill::{
    RETRIEVAL_HINT, SpillError, SpillHandle, SpillReceipt, SpillRequest, SpillStore,
};
use toolhost_contract::{BoxFuture, Capabilities, RawTool, ToolError};
use toolhost_registry::{CallInput, Finalized, PostDecision, Registry};
use toolhost_registry::{SpillPolicy, TempDirSpillStore};

const SESSION: &str = "session-1";

/// A store that records requests and answers with a fixed locator (or fails).
#[derive(Default)]
struct RecordingStore {
    requests: Mutex<Vec<SpillRequest>>,
    fail: bool,
}

impl RecordingStore {
    fn failing() -> Self {
        RecordingStore { requests: Mutex::default(), fail: true }
    }

    fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl SpillStore for RecordingStore {
    fn save_text(&self, request: SpillRequest) -> BoxFuture<'_, Result<SpillReceipt, SpillError>> {
        let locator = format!("/spill/{}", request.suggested_name);
        let bytes = request.content.len() as u64;
        self.requests.lock().unwrap().push(request);
        let fail = self.fail;
        Box::pin(async move {
            if fail {
                return Err(SpillError("disk full".to_owned()));
            }
            Ok(SpillReceipt { locator, bytes, retrieval_hint: RETRIEVAL_HINT.to_owned() })
        })
    }
}

/// A tool returning its `text` argument; renders it verbatim; projects `{len}` as meta.
fn text_tool(name: &str) -> RawTool {
    RawTool::new(name)
        .with_output_schema(json!({"type": "string"}))
        .with_render(|_args, value| vec![ContentBlock::text(value.as_str().unwrap_or_default())])
        .with_presentation_meta(|_args, value| {
            Some(json!({"len": value.as_str().map_or(0, str::len)}))
        })
        .with_execute(|args, _cx| async move { Ok(args["text"].clone()) })
}

/// A registry with `text_tool(name)` for each name and the generic spill policy (prepended).
fn spill_registry(cap: usize, names: &[&str]) -> Registry {
    let registry = Registry::default();
    for name in names {
        let _ = registry.register_raw(text_tool(name)).unwrap();
    }
    registry.add_post_execute(Arc::new(SpillPolicy::new(cap)), true);
    registry
}

fn with_store(store: SpillHandle) -> Arc<Capabilities> {
    Arc::new(Capabilities::new().with::<SpillHandle>(store))
}

fn session_call(name: &str, args: Value, caps: &Arc<Capabilities>) -> CallInput {
    let mut input = CallInput::direct(&format!("call-{name}"), name, args, Arc::clone(caps));
    input.session_id = Some(SESSION.to_owned());
    input
}

/// Numbered lines, `lines` of them (about 30 bytes each).
fn big_text(lines: usize) -> String {
    (1..=lines).map(|n| format!("{n:>5}: the quick brown fox\n")).collect()
}

/// Splits a spilled replacement of `full` into (head, tail, omitted, locator), checking the notice
/// format. The preview is a head of `full` and a tail of `full`, optionally separated by `…`.
fn parse_replacement<'a>(full: &str, replacement: &'a str) -> (&'a str, &'a str, usize, &'a str) {
    let (preview, notice) = match replacement.rsplit_once("\n\n(Omitted ") {
        Some((preview, rest)) => (preview, rest),
        None => ("", replacement.strip_prefix("(Omitted ").unwrap()),
    };
    let notice = notice.strip_suffix(&format!(". {RETRIEVAL_HINT})")).unwrap();
    let (omitted, locator) =
        notice.split_once(" bytes. Full formatted result stored at: ").unwrap();
    let (head, tail) = split_preview(full, preview);
    (head, tail, omitted.parse().unwrap(), locator)
}

/// Finds `preview = head [+ "…"] + tail` with `head` a prefix and `tail` a suffix of `full`.
fn split_preview<'a>(full: &str, preview: &'a str) -> (&'a str, &'a str) {
    for (i, _) in preview.char_indices().chain([(preview.len(), ' ')]) {
        let (head, rest) = preview.split_at(i);
        if !full.starts_with(head) {
            break;
        }
        for tail in [rest.strip_prefix('\u{2026}'), Some(rest)].into_iter().flatten() {
            if full.ends_with(tail) && head.len() + tail.len() <= full.len() {
                return (head, tail);
            }
        }
    }
    panic!("preview is not a head + tail of the original: {preview:?}");
}

fn only_text(res: &Finalized) -> &str {
    match res.result.content() {
        [block] => block.as_text().unwrap(),
        other => panic!("expected one text block, got {other:?}"),
    }
}

#[tokio::test]
async fn oversized_text_is_bounded_and_stored_privately() {
    let cap = 400;
    let registry = spill_registry(cap, &["fetch"]);
    let caps = with_store(Arc::new(TempDirSpillStore::new()));
    let full = big_text(400);
    let res = registry.dispatch(session_call("fetch", json!({"text": full}), &caps)).await;

    assert!(!res.result.is_error());
    let replacement = only_text(&res);
    assert!(replacement.len() <= cap, "{} > {cap}", replacement.len());
    assert!(replacement.len() < full.len());
    let (head, tail, omitted, locator) = parse_replacement(&full, replacement);
    assert!(full.starts_with(head) && full.ends_with(tail));
    assert!(!head.is_empty() && !tail.is_empty(), "a preview is kept: {replacement}");
    assert_eq!(omitted, full.len() - head.len() - tail.len(), "N = bytes actually dropped");
    assert!(replacement.ends_with(&format!(
        "(Omitted {omitted} bytes. Full formatted result stored at: {locator}. Use read with offset/limit, or grep this path to search within it.)"
    )));

    // A content replacement: value and meta survive.
    assert_eq!(res.result.value(), Some(&json!(full)));
    assert_eq!(res.result.meta(), Some(&json!({"len": full.len()})));

    // The stored file holds the full text, privately.
    let path = Path::new(locator);
    assert!(path.is_absolute());
    assert_eq!(std::fs::read_to_string(path).unwrap(), full);
    assert_eq!(std::fs::metadata(path).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(path.file_name().unwrap().to_str().unwrap().ends_with("-fetch.txt"));
    let session_dir = path.parent().unwrap();
    assert_eq!(std::fs::metadata(session_dir).unwrap().permissions().mode() & 0o777, 0o700);
    let root = session_dir.parent().unwrap();
    assert_eq!(std::fs::metadata(root).unwrap().permissions().mode() & 0o777, 0o700);
    assert!(root.file_name().unwrap().to_str().unwrap().starts_with("toolhost-spill-"));
    std::fs::remove_dir_all(root).unwrap();
}

#[tokio::test]
async fn notice_and_request_follow_the_documented_format() {
    let registry = spill_registry(300, &["web_fetch"]);
    let store = Arc::new(RecordingStore::default());
    let caps = with_store(store.clone());
    let full = big_text(200);
    let res = registry.dispatch(session_call("web_fetch", json!({"text": full}), &caps)).await;
    let replacement = only_text(&res);
    let (_, _, omitted, locator) = parse_replacement(&full, replacement);
    assert_eq!(locator, "/spill/web_fetch.txt");
    assert!(replacement.ends_with(&format!(
        "\n\n(Omitted {omitted} bytes. Full formatted result stored at: /spill/web_fetch.txt. Use read with offset/limit, or grep this path to search within it.)"
    )));
    let requests = store.requests.lock().unwrap();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.session_id, SESSION);
    assert_eq!(request.tool_name, "web_fetch");
    assert_eq!(request.call_id, "call-web_fetch");
    assert_eq!(request.label, "result");
    assert_eq!(request.suggested_name, "web_fetch.txt");
    assert_eq!(request.content, full);
}

#[tokio::test]
async fn multi_byte_text_is_cut_at_char_boundaries() {
    let cap = 300;
    let registry = spill_registry(cap, &["fetch"]);
    let caps = with_store(Arc::new(RecordingStore::default()));
    let full = "aé€😀".repeat(400);
    let res = registry.dispatch(session_call("fetch", json!({"text": full}), &caps)).await;
    let replacement = only_text(&res);
    assert!(replacement.len() <= cap);
    let (head, tail, omitted, _) = parse_replacement(&full, replacement);
    assert!(full.starts_with(head) && full.ends_with(tail));
    assert_eq!(omitted, full.len() - head.len() - tail.len());
}

#[tokio::test]
async fn text_within_the_cap_is_untouched() {
    let registry = spill_registry(100, &["echo"]);
    let store = Arc::new(RecordingStore::default());
    let caps = with_store(store.clone());
    for text in ["short", &"x".repeat(100)] {
        let res = registry.dispatch(session_call("echo", json!({"text": text}), &caps)).await;
        assert_eq!(only_text(&res), text);
    }
    assert_eq!(store.count(), 0);
}

#[tokio::test]
async fn notice_larger_than_a_tiny_cap_keeps_the_original() {
    let registry = spill_registry(10, &["fetch"]);
    let caps = with_store(Arc::new(RecordingStore::default()));
    let full = big_text(50);
    let res = registry.dispatch(session_call("fetch", json!({"text": full}), &caps)).await;
    assert!(!res.result.is_error());
    assert_eq!(only_text(&res), full);
}

#[tokio::test]
async fn non_text_content_is_untouched() {
    let registry = Registry::default();
    let full = big_text(100);
    let rendered = full.clone();
    let _ = registry
        .register_raw(
            RawTool::new("screenshot")
                .with_output_schema(json!({}))
                .with_render(move |_args, _value| {
                    vec![
                        ContentBlock::text(rendered.clone()),
                        ContentBlock::Image {
                            data: "AAA=".to_owned(),
                            mime_type: "image/png".to_owned(),
                        },
                    ]
                })
                .with_execute(|_args, _cx| async { Ok(json!(null)) }),
        )
        .unwrap();
    registry.add_post_execute(Arc::new(SpillPolicy::new(100)), true);
    let store = Arc::new(RecordingStore::default());
    let res =
        registry.dispatch(session_call("screenshot", json!({}), &with_store(store.clone()))).await;
    assert_eq!(res.result.content().len(), 2);
    assert_eq!(res.result.content()[0].as_text(), Some(full.as_str()));
    assert_eq!(store.count(), 0);
}

#[tokio::test]
async fn a_tool_that_bounds_its_own_output_is_never_spilled() {
    // What `read` declares: it pages a file itself. The name means nothing to the policy.
    let registry = spill_registry(100, &[]);
    let pager = text_tool("pager").with_spill_mode(toolhost_contract::spill::SpillMode::Never);
    let _ = registry.register_raw(pager).unwrap();
    let store = Arc::new(RecordingStore::default());
    let full = big_text(100);
    let res = registry
        .dispatch(session_call("pager", json!({"text": full}), &with_store(store.clone())))
        .await;
    assert_eq!(only_text(&res), full);
    assert_eq!(store.count(), 0);
}

#[tokio::test]
async fn save_failure_keeps_the_original() {
    let registry = spill_registry(100, &["fetch"]);
    let store = Arc::new(RecordingStore::failing());
    let full = big_text(100);
    let res = registry
        .dispatch(session_call("fetch", json!({"text": full}), &with_store(store.clone())))
        .await;
    assert!(!res.result.is_error(), "spill never turns a success into a failure");
    assert_eq!(only_text(&res), full);
    assert_eq!(store.count(), 1);
}

#[tokio::test]
async fn no_store_keeps_the_original() {
    let registry = spill_registry(100, &["fetch"]);
    let full = big_text(100);
    let res = registry.dispatch(session_call("fetch", json!({"text": full}), &caps())).await;
    assert!(!res.result.is_error());
    assert_eq!(only_text(&res), full);
}

#[tokio::test]
async fn no_session_keeps_the_original() {
    let registry = spill_registry(100, &["fetch"]);
    let store = Arc::new(RecordingStore::default());
    let full = big_text(100);
    let mut input = session_call("fetch", json!({"text": full}), &with_store(store.clone()));
    input.session_id = None;
    let res = registry.dispatch(input).await;
    assert_eq!(only_text(&res), full);
    assert_eq!(store.count(), 0);
}

#[tokio::test]
async fn nested_call_is_never_spilled() {
    let registry = spill_registry(100, &["fetch", "outer"]);
    let store = Arc::new(RecordingStore::default());
    let caps = with_store(store.clone());
    let token: Arc<Mutex<Option<toolhost_registry::ExecToken>>> = Arc::default();
    let sink = Arc::clone(&token);
    registry.add_pre_execute(pre(move |exec, next| {
        if exec.name == "outer" {
            *sink.lock().unwrap() = Some(exec.token);
        }
        Box::pin(next.run())
    }));
    let _ = registry.dispatch(session_call("outer", json!({"text": "x"}), &caps)).await;
    let full = big_text(100);
    let mut input = session_call("fetch", json!({"text": full}), &caps);
    input.parent = *token.lock().unwrap();
    assert!(input.parent.is_some());
    let res = registry.dispatch(input).await;
    assert_eq!(only_text(&res), full);
    assert_eq!(res.result.meta(), None);
    assert_eq!(store.count(), 0);
}

#[tokio::test]
async fn downstream_content_replacement_is_what_gets_bounded() {
    let registry = Registry::default();
    let _ = registry.register_raw(text_tool("fetch")).unwrap();
    let downstream = big_text(200);
    // Registered before the spill policy, but spill is prepended and therefore outermost.
    registry.add_post_execute(
        post_fixed(PostDecision::Accept {
            content: Some(vec![ContentBlock::text(downstream.clone())]),
            value: None,
            additional_contexts: vec![ctx("downstream")],
        }),
        false,
    );
    registry.add_post_execute(Arc::new(SpillPolicy::new(300)), true);
    let store = Arc::new(RecordingStore::default());
    let res = registry
        .dispatch(session_call("fetch", json!({"text": "small"}), &with_store(store.clone())))
        .await;
    let replacement = only_text(&res);
    assert!(replacement.len() <= 300);
    let (head, tail, _, _) = parse_replacement(&downstream, replacement);
    assert!(!head.is_empty() && !tail.is_empty());
    assert_eq!(store.requests.lock().unwrap()[0].content, downstream);
    // The value is the body's, untouched; the downstream contexts survive.
    assert_eq!(res.result.value(), Some(&json!("small")));
    assert_eq!(sources(&res), ["downstream"]);
}

#[tokio::test]
async fn downstream_contexts_are_preserved_when_spilling_the_body_content() {
    let registry = spill_registry(200, &["fetch"]);
    registry.add_post_execute(
        post_fixed(PostDecision::Accept {
            content: None,
            value: None,
            additional_contexts: vec![ctx("inner")],
        }),
        false,
    );
    let store = Arc::new(RecordingStore::default());
    let res = registry
        .dispatch(session_call("fetch", json!({"text": big_text(100)}), &with_store(store.clone())))
        .await;
    assert!(only_text(&res).len() <= 200);
    assert_eq!(store.count(), 1);
    assert_eq!(sources(&res), ["inner"]);
}

#[tokio::test]
async fn downstream_value_replacement_passes_through_unspilled() {
    let registry = spill_registry(100, &["fetch"]);
    let replaced = big_text(100);
    registry.add_post_execute(
        post_fixed(PostDecision::Accept {
            content: None,
            value: Some(json!(replaced)),
            additional_contexts: vec![],
        }),
        false,
    );
    let store = Arc::new(RecordingStore::default());
    let res = registry
        .dispatch(session_call("fetch", json!({"text": "small"}), &with_store(store.clone())))
        .await;
    assert_eq!(res.result.value(), Some(&json!(replaced)));
    assert_eq!(only_text(&res), replaced, "re-rendered from the replacement value, not bounded");
    assert_eq!(store.count(), 0);
}

#[tokio::test]
async fn downstream_block_passes_through_unspilled() {
    let registry = spill_registry(100, &["fetch"]);
    let feedback = big_text(100);
    registry.add_post_execute(
        post_fixed(PostDecision::Block {
            feedback: vec![ContentBlock::text(feedback.clone())],
            additional_contexts: vec![],
        }),
        false,
    );
    let store = Arc::new(RecordingStore::default());
    let res = registry
        .dispatch(session_call("fetch", json!({"text": "x"}), &with_store(store.clone())))
        .await;
    assert!(res.result.is_error());
    assert_eq!(only_text(&res), feedback);
    assert_eq!(store.count(), 0);
}

#[tokio::test]
async fn oversized_failure_is_spilled_and_stays_a_failure() {
    let registry = Registry::default();
    let long = big_text(100);
    let message_text = long.clone();
    let _ = registry
        .register_raw(
            RawTool::new("run_program")
                .with_output_schema(json!({"type": "string"}))
                .with_render(|_args, _value| vec![])
                .with_execute(move |_args, _cx| {
                    let message_text = message_text.clone();
                    async move {
                        Err(ToolError::typed("CodeRunFailedError", "CODE_RUN_FAILED", message_text))
                    }
                }),
        )
        .unwrap();
    registry.add_post_execute(Arc::new(SpillPolicy::new(300)), true);
    let store = Arc::new(RecordingStore::default());
    let res =
        registry.dispatch(session_call("run_program", json!({}), &with_store(store.clone()))).await;
    assert!(res.result.is_error());
    assert_eq!(message(&res), long, "the error keeps the full message");
    assert_eq!(code(&res), Some("CODE_RUN_FAILED"));
    let replacement = only_text(&res);
    assert!(replacement.len() <= 300);
    assert!(replacement.starts_with("Error: "));
    let original = format!("Error: {long}");
    let (head, tail, omitted, _) = parse_replacement(&original, replacement);
    assert_eq!(omitted, original.len() - head.len() - tail.len());
    assert_eq!(store.requests.lock().unwrap()[0].content, format!("Error: {long}"));
}

#[tokio::test]
async fn typed_tool_content_is_spilled_too() {
    let registry = Registry::default();
    let _ = registry.register(Echo::new("echo").with_meta()).unwrap();
    registry.add_post_execute(Arc::new(SpillPolicy::new(150)), true);
    let store = Arc::new(RecordingStore::default());
    let full = big_text(50);
    let res = registry
        .dispatch(session_call("echo", json!({"text": full}), &with_store(store.clone())))
        .await;
    assert!(only_text(&res).len() <= 150);
    assert_eq!(res.result.value(), Some(&json!(full)));
    assert_eq!(res.result.meta(), Some(&json!({"card": "echo", "text": full})));
}

/// A store whose locator is a fixed string (its length decides the notice's arithmetic).
struct FixedLocator(String);

impl SpillStore for FixedLocator {
    fn save_text(&self, request: SpillRequest) -> BoxFuture<'_, Result<SpillReceipt, SpillError>> {
        let receipt = SpillReceipt {
            locator: self.0.clone(),
            bytes: request.content.len() as u64,
            retrieval_hint: RETRIEVAL_HINT.to_owned(),
        };
        Box::pin(async move { Ok(receipt) })
    }
}

#[test]
fn the_shipped_cap_is_fifty_thousand_bytes() {
    assert_eq!(toolhost_registry::spill::DEFAULT_MAX_INLINE_BYTES, 50_000);
}

/// A worked example: a 64,128-byte text and an 86-byte locator under the shipped
/// cap keep 24,894 bytes of head and 24,894 of tail, omit 14,340, and come to 50,000 bytes.
#[tokio::test]
async fn the_notice_and_its_arithmetic_under_the_shipped_cap() {
    let cap = toolhost_registry::spill::DEFAULT_MAX_INLINE_BYTES as usize;
    let registry = spill_registry(cap, &["bash"]);
    let locator = format!("/tmp/dsh-spill-Ab12Cd/session-3f9a0c1b2d4e/{}", "l".repeat(43));
    assert_eq!(locator.len(), 86);
    let caps = with_store(Arc::new(FixedLocator(locator.clone())));
    // The tail of `seq 1 40000`, cut to 64,128 bytes.
    let seq: String = (1..=40_000).map(|n| format!("{n}\n")).collect();
    let full = seq[seq.len() - 64_128..].to_owned();
    assert_eq!(full.len(), 64_128);
    let res = registry.dispatch(session_call("bash", json!({"text": full}), &caps)).await;
    let text = only_text(&res);
    let notice = format!(
        "(Omitted 14340 bytes. Full formatted result stored at: {locator}. Use read with offset/limit, or grep this path to search within it.)"
    );
    let expected = format!("{}{}\n\n{notice}", &full[..24_894], &full[full.len() - 24_894..]);
    assert_eq!(text, expected);
    assert_eq!(text.len(), 50_000);
    // One byte under the cap stays inline; one over is spilled.
    let inline = "a".repeat(cap);
    let res = registry.dispatch(session_call("bash", json!({"text": inline}), &caps)).await;
    assert_eq!(only_text(&res), inline);
    let over = "a".repeat(cap + 1);
    let res = registry.dispatch(session_call("bash", json!({"text": over}), &caps)).await;
    let notice = notice.replace("14340", "213");
    assert_eq!(only_text(&res), format!("{}\n\n{notice}", "a".repeat(49788)));
    assert!(only_text(&res).len() <= cap);
}
