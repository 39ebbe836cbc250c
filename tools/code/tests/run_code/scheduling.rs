//! The scheduler: submission order, up to `max_parallel_calls` read-only calls at once, an
//! exclusive call alone, many calls in one run.

use crate::fake::Fake;
use crate::support::run_with;
use serde_json::json;
use std::sync::atomic::Ordering;
use toolhost_tools_code::CodeConfig;

#[tokio::test]
async fn at_most_ten_read_only_calls_overlap() {
    let (fake, handle) = Fake::handle();
    let out = run_with(
        "const r = await Promise.all(Array.from({length: 30}, () => tools.slow({}))); return r.length",
        Some(handle),
        &CodeConfig::default(),
    )
    .await
    .unwrap();
    assert_eq!(out.result, Some(json!(30)));
    assert_eq!(fake.max_in_flight.load(Ordering::SeqCst), 10);
    let (fake, handle) = Fake::handle();
    let config = CodeConfig { max_parallel_calls: 1, ..CodeConfig::default() };
    run_with(
        "await Promise.all([tools.slow({}), tools.slow({}), tools.slow({})])",
        Some(handle),
        &config,
    )
    .await
    .unwrap();
    assert_eq!(fake.max_in_flight.load(Ordering::SeqCst), 1, "1 runs calls one by one");
}

#[tokio::test]
async fn an_exclusive_call_runs_alone_in_submission_order() {
    let (fake, handle) = Fake::handle();
    let out = run_with(
        "return await Promise.all([tools.slow({}), tools.slow({}), tools.edit({}), tools.slow({}), tools.echo({})])",
        Some(handle),
        &CodeConfig::default(),
    )
    .await
    .unwrap();
    assert_eq!(out.result, Some(json!([{}, {}, "edited", {}, {}])));
    assert!(!fake.exclusive_overlapped.load(Ordering::SeqCst), "the edit ran alone");
    assert_eq!(fake.started_names(), ["slow", "slow", "edit", "slow", "echo"]);
}

#[tokio::test]
async fn a_thousand_nested_calls_in_one_run() {
    let (fake, handle) = Fake::handle();
    let out = run_with(
        "let s = 0; for (let i = 0; i < 1000; i++) s += (await tools.echo({i})).i; return s",
        Some(handle),
        &CodeConfig::default(),
    )
    .await
    .unwrap();
    assert_eq!(out.result, Some(json!(499_500)));
    assert_eq!(fake.started.lock().unwrap().len(), 1000);
}

#[tokio::test]
async fn calls_left_queued_when_the_run_ends_never_start() {
    let (fake, handle) = Fake::handle();
    let out = run_with(
        "tools.edit({}); tools.edit({}); tools.edit({}); return 'early'",
        Some(handle),
        &CodeConfig::default(),
    )
    .await
    .unwrap();
    assert_eq!(out.result, Some(json!("early")));
    // The first edit may have started (and was then cancelled and awaited); the rest never.
    assert!(fake.started_names().len() <= 1, "{:?}", fake.started_names());
    assert_eq!(fake.in_flight.load(Ordering::SeqCst), 0);
}
