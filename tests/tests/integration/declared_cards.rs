//! Cards come from each tool's own declaration, never from a table in the protocol crate:
//! - a tool registered only here, with a card kind the protocol has never heard of, gets its own
//!   kind and title on the live pending and final cards, and the same cards on replay;
//! - a raw tool without a declaration gets the generic card;
//! - a session log written before tools declared their cards (a fixture from that time, with the
//!   cards that code replayed it to) replays to the same cards today.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use toolhost_contract::RawTool;
use toolhost_host::config::Config;
use toolhost_host::session::{OpenedSession, open_session, replay};
use toolhost_host::{CallRequest, Host, open_host};
use toolhost_protocol::card::{CallPresentation, CardKind, CardStatus};
use toolhost_protocol::content::ContentBlock;
use toolhost_registry::Registry;

fn host_with_session(root: &Path, opened: &OpenedSession) -> Arc<Host> {
    open_host(&Config::default(), root, Some(opened)).unwrap()
}

/// A tool the protocol crate knows nothing about: a "gauge" card titled from its arguments.
fn gauge_tool() -> RawTool {
    RawTool::new("gauge")
        .with_description("Test only: reports a level as a gauge card.")
        .with_input_schema(json!({
            "type": "object",
            "properties": {"label": {"type": "string"}, "level": {"type": "number"}},
            "required": ["label", "level"]
        }))
        .with_output_schema(json!({"type": "object"}))
        .with_execute(|args, _cx| async move { Ok(json!({"level": args["level"]})) })
        .with_render(|_args, value| vec![ContentBlock::text(format!("level {}", value["level"]))])
        .with_presentation_meta(|_args, value| Some(json!({"percent": value["level"]})))
        .with_present_call(|args| {
            let label = args.get("label").and_then(Value::as_str).unwrap_or("?");
            CallPresentation::new(CardKind::parse("gauge"), format!("Gauge of {label}"))
                .with_location("gauges/levels.txt", 7)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_registered_only_here_gets_its_own_card_live_and_on_replay() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let opened = open_session(&dir.path().join("sessions"), &root, "declared").unwrap();
    let host = host_with_session(&root, &opened);
    let _gauge = host.registry().register_raw(gauge_tool()).unwrap();
    let _plain = host
        .registry()
        .register_raw(
            RawTool::new("plain")
                .with_output_schema(json!({"type": "object"}))
                .with_execute(|_args, _cx| async move { Ok(json!({})) })
                .with_render(|_args, _value| vec![ContentBlock::text("done")]),
        )
        .unwrap();

    let mut call = host
        .call(CallRequest::new("gauge", json!({"label": "disk", "level": 40})).id("c1"))
        .unwrap();
    let pending = call.started().await.unwrap();
    assert_eq!(pending.kind.as_str(), "gauge");
    assert_eq!(pending.title, "Gauge of disk");
    assert_eq!(pending.status, CardStatus::Pending);
    assert_eq!(pending.locations[0].path, format!("{}/gauges/levels.txt", root.display()));
    assert_eq!(pending.locations[0].line, 7);
    let done = call.finish().await.unwrap().card();
    assert_eq!(done.kind, CardKind::Other("gauge".into()));
    assert_eq!(done.title, "Gauge of disk");
    assert_eq!(done.data, Some(json!({"percent": 40})));
    assert_eq!(done.rendered, "gauge Gauge of disk · completed\nlevel 40");

    let plain = host.run(CallRequest::new("plain", json!({})).id("c2")).await.unwrap().card();
    assert_eq!((&plain.kind, plain.title.as_str()), (&CardKind::Generic, "plain"));
    assert_eq!(plain.rendered, "plain plain · completed\ndone");

    // Replay needs no registry entry for the tool: the log holds its declaration.
    let replayed = replay(host.registry(), opened.log.log_path()).unwrap();
    assert_eq!(replayed.len(), 2);
    assert_eq!(replayed[0].card, done);
    assert_eq!(replayed[1].card, plain);
    let other = Registry::default();
    let without_tools = replay(&other, opened.log.log_path()).unwrap();
    assert_eq!(without_tools[0].card, done, "replay must not depend on the registry");
}

/// Strips what the card gained since the fixture was recorded (each hunk's `header`, derived
/// from its numbers), so the comparison is about the cards the clients drew.
fn without_headers(mut card: Value) -> Value {
    if let Some(hunks) = card.get_mut("hunks").and_then(Value::as_array_mut) {
        for hunk in hunks {
            if let Some(map) = hunk.as_object_mut() {
                map.remove("header");
            }
        }
    }
    card
}

#[test]
fn a_log_written_before_declared_cards_replays_to_the_same_cards() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/wave1-session");
    let expected: Vec<Value> = std::fs::read_to_string(fixture.join("cards.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Replay reads the log in place and never writes; copy it anyway so a bug cannot touch the
    // fixture.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    std::fs::copy(fixture.join("session.jsonl"), &log).unwrap();
    let replayed = replay(&Registry::default(), &log).unwrap();
    assert_eq!(replayed.len(), expected.len());
    assert!(expected.len() >= 10, "the fixture covers every first-party tool");
    for (got, want) in replayed.iter().zip(&expected) {
        let got = without_headers(serde_json::to_value(&got.card).unwrap());
        assert_eq!(&got, want, "card {} differs", want["callId"]);
    }
}
