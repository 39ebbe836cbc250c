//! A workflow's child cards: grouped by phase and label, each with its usage, the run's card with the sum;
//! live and replayed from the session log.
//!
//! The editor calls `workflow` (and `ralph`) on `toolhost serve` with `[agent]` pointing at a
//! scripted model server: every child answers in one request of 300 prompt and 5 completion
//! tokens, priced by the test configuration, so each child's card says 305 tokens and the run's
//! card their sum. The live `toolhost/card`s and `toolhost/replaySession`'s cards must agree.
#![allow(clippy::unwrap_used)]

use crate::server;
use crate::sse;

use serde_json::{Value, json};
use server::{Env, call_ok};
use sse::{Answer, first_prompt, server as model_server};
use std::collections::HashMap;
use std::sync::Arc;
use toolhost_harness::client::Client;

/// One child's answer: 300 prompt and 5 completion tokens.
fn answering(text: &str) -> Answer {
    Answer::answering(&[text], 300, 5)
}

const THREE_PHASES: &str = r#"
phase("survey");
const found = await parallel([
  () => agent("survey a", { label: "a" }),
  () => agent("survey b", { label: "b" }),
]);
phase("draft");
const drafts = await pipeline(
  found,
  (prev, item, i) => agent("draft " + prev, { label: "draft " + i }),
  (prev, item, i) => agent("polish " + prev, { label: "polish " + i }),
);
phase("verdict");
const verdict = await agent("judge " + drafts.join(","), {
  label: "judge",
  schema: { type: "object", required: ["score"], properties: { score: { type: "number" } } },
});
return { found, drafts, verdict };
"#;

fn three_phase_child(prompt: &str) -> Answer {
    if let Some(what) = prompt.strip_prefix("survey ") {
        return answering(&what.to_uppercase());
    }
    if let Some(what) = prompt.strip_prefix("draft ") {
        return answering(&format!("d{what}"));
    }
    if let Some(what) = prompt.strip_prefix("polish ") {
        return answering(&format!("p{what}"));
    }
    if prompt.starts_with("judge ") {
        return answering("{\"score\": 7}");
    }
    if prompt.contains("This is round 1 of at most 3") {
        return answering(&report("continue", &[]));
    }
    if prompt.contains("This is round 2 of at most 3") {
        return answering(&report("complete", &["it is so"]));
    }
    if prompt.starts_with("Check a claim") {
        return answering(r#"{"agree": true, "reason": "verified"}"#);
    }
    answering("unexpected")
}

/// A ralph worker's report; a `complete` one lists no next steps (the round contract).
fn report(status: &str, evidence: &[&str]) -> String {
    let next: &[&str] = if status == "complete" { &[] } else { &["more"] };
    json!({"status": status, "summary": format!("{status} now"), "evidence": evidence,
           "nextSteps": next, "blocker": null})
    .to_string()
}

/// The cards the editor was sent, in order.
fn live_cards(editor: &Client) -> Vec<Value> {
    editor
        .seen
        .iter()
        .filter(|n| n["method"] == "toolhost/card")
        .map(|n| n["params"].clone())
        .collect()
}

/// The last card of each call.
fn last_by_id(cards: &[Value]) -> HashMap<String, Value> {
    cards.iter().map(|c| (c["callId"].as_str().unwrap().to_owned(), c.clone())).collect()
}

/// Dollars of one child: 300 prompt tokens at $1 and 5 completion tokens at $2 per million.
const CHILD_COST: f64 = (300.0 * 1.0 + 5.0 * 2.0) / 1_000_000.0;

fn assert_cost(usage: &Value, children: f64) {
    let cost = usage["cost"].as_f64().unwrap_or_else(|| panic!("no cost in {usage}"));
    assert!((cost - children * CHILD_COST).abs() < 1e-9, "{usage}");
}

/// Checks a workflow's cards (live or replayed): the run's card with the sum, its children
/// grouped by phase with their labels and usage. Returns the children's `(phase, label)`s in
/// the order their final cards came.
fn check_workflow_cards(cards: &HashMap<String, Value>, run_id: &str) -> Vec<(String, String)> {
    let run = &cards[run_id];
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["usage"]["tokens"], 7 * 305, "{run}");
    assert_cost(&run["usage"], 7.0);
    let mut children: Vec<&Value> =
        cards.values().filter(|c| c["parentCallId"] == run_id).collect();
    children.sort_by_key(|c| c["callId"].as_str().unwrap().to_owned());
    assert_eq!(children.len(), 7, "{children:#?}");
    let mut groups = Vec::new();
    for child in children {
        assert_eq!(child["tool"], "subagent", "{child}");
        assert_eq!(child["status"], "completed", "{child}");
        assert_eq!(child["usage"]["tokens"], 305, "{child}");
        assert_cost(&child["usage"], 1.0);
        let group = &child["group"];
        groups.push((
            group["phase"].as_str().unwrap().to_owned(),
            group["label"].as_str().unwrap().to_owned(),
        ));
    }
    groups.sort();
    let expected = [
        ("draft", "draft 0"),
        ("draft", "draft 1"),
        ("draft", "polish 0"),
        ("draft", "polish 1"),
        ("survey", "a"),
        ("survey", "b"),
        ("verdict", "judge"),
    ];
    let expected: Vec<(String, String)> =
        expected.iter().map(|(p, l)| ((*p).to_owned(), (*l).to_owned())).collect();
    assert_eq!(groups, expected);
    groups
}

#[tokio::test(flavor = "multi_thread")]
async fn a_three_phase_workflows_cards_carry_groups_and_usage_live_and_replayed() {
    let env = Arc::new(Env::new());
    let model = model_server(|_, body| three_phase_child(&first_prompt(body))).await;
    env.write_agent_config(&model.base, "auto");
    let task_env = Arc::clone(&env);
    tokio::task::spawn_blocking(move || {
        let env = task_env;
        let mut editor = env.start(json!({}));
        editor.timeout = std::time::Duration::from_secs(60);
        let call = json!({
            "meta": {"name": "three phases", "description": "survey, draft, judge"},
            "script": THREE_PHASES,
        });
        let out = call_ok(&mut editor, "workflow", call);
        let run_id = out["callId"].as_str().unwrap().to_owned();
        assert_eq!(out["card"]["usage"]["tokens"], 7 * 305, "the answer's card: {out}");

        let live = live_cards(&editor);
        let last = last_by_id(&live);
        check_workflow_cards(&last, &run_id);
        // Each child's first card (pending) already has its group; every child's final card
        // came before the run's final card.
        let run_final = live
            .iter()
            .position(|c| c["callId"] == run_id.as_str() && c["status"] == "completed")
            .unwrap();
        for (index, card) in live.iter().enumerate() {
            if card["parentCallId"] != run_id.as_str() {
                continue;
            }
            assert!(card["group"]["phase"].is_string(), "{card}");
            if card["status"] == "pending" {
                assert!(card.get("usage").is_none(), "{card}");
            } else {
                assert!(index < run_final, "a child's final card after the run's: {card}");
            }
        }
        // The group is recorded in the child's `tool/call`, in its presentation.
        let session = out["sessionId"].as_str().unwrap().to_owned();
        let events = env.session_events(&session);
        let recorded: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "tool/call" && e["data"]["name"] == "subagent")
            .collect();
        assert_eq!(recorded.len(), 7);
        assert!(recorded.iter().all(|e| e["data"]["card"]["group"]["phase"].is_string()));

        // Replay: the same cards, from the log alone.
        let replay =
            editor.request("toolhost/replaySession", json!({"sessionId": session})).unwrap();
        let replayed: Vec<Value> = replay["cards"].as_array().unwrap().clone();
        let replayed = last_by_id(&replayed);
        check_workflow_cards(&replayed, &run_id);
        for (id, card) in &replayed {
            assert_eq!(card, &last[id], "replayed card {id} differs from the live one");
        }
        let status = editor.shutdown().unwrap();
        assert_eq!(status.and_then(|s| s.code()), Some(0));
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ralph_runs_rounds_and_check_are_labelled_and_summed() {
    let env = Arc::new(Env::new());
    let model = model_server(|_, body| three_phase_child(&first_prompt(body))).await;
    env.write_agent_config(&model.base, "auto");
    let task_env = Arc::clone(&env);
    tokio::task::spawn_blocking(move || {
        let env = task_env;
        let mut editor = env.start(json!({}));
        editor.timeout = std::time::Duration::from_secs(60);
        let out = call_ok(&mut editor, "ralph", json!({"objective": "make it so", "maxRounds": 3}));
        let run_id = out["callId"].as_str().unwrap().to_owned();
        let last = last_by_id(&live_cards(&editor));
        let run = &last[&run_id];
        assert_eq!(run["usage"]["tokens"], 3 * 305, "two rounds and a check: {run}");
        assert_cost(&run["usage"], 3.0);
        let mut labels: Vec<(String, Value)> = last
            .values()
            .filter(|c| c["parentCallId"] == run_id.as_str())
            .map(|c| (c["callId"].as_str().unwrap().to_owned(), c["group"].clone()))
            .collect();
        labels.sort_by(|a, b| a.0.cmp(&b.0));
        let groups: Vec<Value> = labels.into_iter().map(|(_, g)| g).collect();
        assert_eq!(
            groups,
            [json!({"label": "round 1"}), json!({"label": "round 2"}), json!({"label": "check 2"})]
        );
        let session = out["sessionId"].as_str().unwrap().to_owned();
        let replay =
            editor.request("toolhost/replaySession", json!({"sessionId": session})).unwrap();
        let replayed = last_by_id(replay["cards"].as_array().unwrap());
        assert_eq!(replayed[&run_id]["usage"], run["usage"]);
        for (id, card) in &replayed {
            assert_eq!(card, &last[id], "replayed card {id} differs from the live one");
        }
        let status = editor.shutdown().unwrap();
        assert_eq!(status.and_then(|s| s.code()), Some(0));
    })
    .await
    .unwrap();
}
