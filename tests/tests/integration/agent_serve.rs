//! toolhost's own agent from the editor: `toolhost/agentPrompt` on `toolhost serve` against a
//! scripted chat completions server on 127.0.0.1. A prompt streams its answer and its calls'
//! cards (`toolhost/agentUpdate`, `toolhost/card` naming the agent as the caller) and answers with
//! the run's end; the next prompt of the chat continues the conversation; `$/cancelRequest` (the
//! editor's Stop) ends the run `cancelled` and recorded; `ask` mode asks the editor before a
//! write; a chat answers one prompt at a time.
#![allow(clippy::unwrap_used)]

use crate::server;
use crate::sse;

use serde_json::{Value, json};
use server::{Env, raw_request, wait_response};
use sse::{Answer, first_prompt, has_tool_answer, server as model_server};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost_harness::client::Client;

fn calling(calls: &[(&str, &str)]) -> Answer {
    Answer::calling(calls, None, 120)
}

/// An answer streamed in pieces.
fn answering(pieces: &[&str]) -> Answer {
    Answer::answering(pieces, 200, 7)
}

/// `[agent]` in the user's configuration; the editor's initializationOptions stay empty.
fn agent_options(env: &Env, base: &str, mode: &str) -> Value {
    env.write_agent_config(base, mode);
    json!({})
}

/// An editor that answers every `toolhost/askUser` with `answer`, keeping what it was asked.
fn editor(env: &Env, options: Value, answer: Option<Value>) -> (Client, Arc<Mutex<Vec<Value>>>) {
    server::asking_editor(env, options, answer)
}

fn updates(client: &Client, run_id: &str) -> Vec<Value> {
    client
        .seen
        .iter()
        .filter(|n| n["method"] == "toolhost/agentUpdate" && n["params"]["runId"] == run_id)
        .map(|n| n["params"]["update"].clone())
        .collect()
}

/// Sends `toolhost/agentPrompt` as request `id` without waiting for its answer.
fn send_prompt(client: &mut Client, id: &Value, prompt: &str) {
    let request = raw_request(id.clone(), "toolhost/agentPrompt", json!({"prompt": prompt}));
    client.write_raw(&request).unwrap();
}

fn log_events(env: &Env) -> Vec<Value> {
    let logs = env.session_logs();
    assert_eq!(logs.len(), 1, "one session");
    std::fs::read_to_string(&logs[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_streams_its_answer_and_cards_and_the_next_prompt_continues_the_chat() {
    let env = Env::new();
    env.write("a.txt", "hello world\n");
    let model = model_server(|n, _| match n {
        0 => calling(&[("read", r#"{"file_path":"a.txt"}"#)]),
        1 => {
            calling(&[("edit", r#"{"file_path":"a.txt","old_string":"hello","new_string":"hi"}"#)])
        }
        2 => answering(&["Done: ", "a.txt says hi."]),
        _ => answering(&["It said hello before."]),
    })
    .await;
    let (env, bodies) = (Arc::new(env), Arc::clone(&model.bodies));
    let options = agent_options(&env, &model.base, "auto");
    let task_env = Arc::clone(&env);
    tokio::task::spawn_blocking(move || {
        let env = task_env;
        let (mut client, _) = editor(&env, options, None);
        let first =
            client.request("toolhost/agentPrompt", json!({"prompt": "say hi in a.txt"})).unwrap();
        assert_eq!(first["stop"], "answered", "{first}");
        assert_eq!(first["answer"], "Done: a.txt says hi.");
        assert_eq!(first["turns"], 3);
        assert_eq!(first["usage"]["promptTokens"], 120 + 120 + 200);
        assert!(first["cost"].as_f64().unwrap() > 0.0, "{first}");
        assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "hi world\n");

        // What streamed: each turn's usage once its stream ended, the calls (started, finished,
        // with their cards), then the answer's pieces.
        let run_id = first["runId"].as_str().unwrap();
        let streamed = updates(&client, run_id);
        let kinds: Vec<&str> = streamed.iter().map(|u| u["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "usage",
                "toolCall",
                "toolResult",
                "usage",
                "toolCall",
                "toolResult",
                "text",
                "text",
                "usage"
            ],
            "{streamed:#?}"
        );
        assert_eq!(streamed[2]["name"], "read");
        assert_eq!(streamed[5]["card"]["kind"], "diff");
        assert_eq!(streamed[5]["card"]["caller"], "toolhost agent");
        let texts: String = streamed
            .iter()
            .filter(|u| u["type"] == "text")
            .map(|u| u["text"].as_str().unwrap())
            .collect();
        assert_eq!(texts, "Done: a.txt says hi.");
        // The cards also went out as `toolhost/card`, like any call's.
        let edit_card = client
            .seen
            .iter()
            .find(|n| {
                n["method"] == "toolhost/card"
                    && n["params"]["tool"] == "edit"
                    && n["params"]["status"] == "completed"
            })
            .expect("the edit's final card");
        assert_eq!(edit_card["params"]["caller"], "toolhost agent");

        // The turn is a checkpoint: restoring it gives back the file as it was before the prompt,
        // and reverting that restore gives back the turn's edit.
        let listed =
            client.call_tool("checkpoint", json!({"action": "list"})).unwrap()["result"]["value"]
                .clone();
        let turn = &listed["checkpoints"][0];
        assert_eq!(turn["name"], run_id, "{listed}");
        assert_eq!(turn["kind"], "turn", "{listed}");
        assert_eq!(turn["prompt"], "say hi in a.txt", "{listed}");
        let restored =
            client.call_tool("checkpoint", json!({"action": "restore", "name": run_id})).unwrap();
        assert_eq!(restored["result"]["isError"], false, "{restored}");
        assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "hello world\n");
        let undone = client.call_tool("revert", json!({"call_id": restored["callId"]})).unwrap();
        assert_eq!(undone["result"]["isError"], false, "{undone}");
        assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "hi world\n");

        // The chat goes on: the next request carries the first exchange.
        let second = client
            .request(
                "toolhost/agentPrompt",
                json!({"prompt": "what did it say before?", "chatId": first["chatId"]}),
            )
            .unwrap();
        assert_eq!(second["chatId"], first["chatId"]);
        assert_ne!(second["runId"], first["runId"]);
        assert_eq!(second["answer"], "It said hello before.");
        client.shutdown().unwrap();
    })
    .await
    .unwrap();
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 4);
    let messages = bodies[3]["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "user"],
        "{messages:#?}"
    );
    assert_eq!(messages[1]["content"], "say hi in a.txt");
    assert_eq!(messages[6]["content"], "Done: a.txt says hi.");
    assert_eq!(messages[7]["content"], "what did it say before?");

    // Both runs are in the log, the second continuing the first.
    let events = log_events(&env);
    let runs: Vec<&Value> = events.iter().filter(|e| e["type"] == "agent/run").collect();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["data"]["continues"], runs[0]["data"]["runId"]);
    let ends: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "agent/end")
        .map(|e| e["data"]["stop"].as_str().unwrap())
        .collect();
    assert_eq!(ends, ["answered", "answered"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_cancels_the_run_which_ends_recorded_and_the_chat_goes_on() {
    let env = Env::new();
    let model = model_server(|n, _| match n {
        0 => {
            // A first piece, then a long silence: the editor stops the run meanwhile.
            let mut slow = answering(&["Thinking about it"]);
            let first = slow.pieces.remove(0);
            slow.pieces.insert(0, (Duration::from_secs(30), String::new()));
            slow.pieces.insert(0, first);
            slow
        }
        _ => answering(&["Fine."]),
    })
    .await;
    let env = Arc::new(env);
    let options = agent_options(&env, &model.base, "auto");
    let task_env = Arc::clone(&env);
    tokio::task::spawn_blocking(move || {
        let env = task_env;
        let (mut client, _) = editor(&env, options, None);
        let id = json!(9001);
        send_prompt(&mut client, &id, "think");
        let first_text = client
            .wait_for(Duration::from_secs(10), |n| {
                n["method"] == "toolhost/agentUpdate" && n["params"]["update"]["type"] == "text"
            })
            .expect("the first piece of the answer");
        assert_eq!(first_text["params"]["update"]["text"], "Thinking about it");
        let chat_id = first_text["params"]["chatId"].clone();
        client.notify("$/cancelRequest", json!({"id": id})).unwrap();
        let response = wait_response(&mut client, &id, Duration::from_secs(10)).unwrap();
        assert_eq!(response["error"]["code"], -32800, "{response}");
        // The run winds down on its own; then the chat takes the next prompt.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let second = loop {
            let answer = client
                .request_raw("toolhost/agentPrompt", json!({"prompt": "go on", "chatId": chat_id}))
                .unwrap();
            if answer.get("error").is_none() || std::time::Instant::now() > deadline {
                break answer;
            }
            assert_eq!(answer["error"]["code"], -32600, "{answer}");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(second["result"]["answer"], "Fine.", "{second}");
        client.shutdown().unwrap();
    })
    .await
    .unwrap();
    let events = log_events(&env);
    let ends: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "agent/end")
        .map(|e| e["data"]["stop"].as_str().unwrap())
        .collect();
    assert_eq!(ends, ["cancelled", "answered"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_mode_asks_the_editor_before_a_write_and_a_refusal_reaches_the_model() {
    let env = Env::new();
    let model = model_server(|n, _| match n {
        0 => calling(&[("write", r#"{"file_path":"new.txt","content":"x\n"}"#)]),
        _ => answering(&["Understood."]),
    })
    .await;
    let (env, bodies) = (Arc::new(env), Arc::clone(&model.bodies));
    let options = agent_options(&env, &model.base, "auto");
    let task_env = Arc::clone(&env);
    let asked = tokio::task::spawn_blocking(move || {
        let env = task_env;
        let deny = json!({"answers": [{"id": "permission", "selected": ["Deny"]}]});
        let (mut client, asked) = editor(&env, options, Some(deny));
        let result = client
            .request("toolhost/agentPrompt", json!({"prompt": "make new.txt", "mode": "ask"}))
            .unwrap();
        assert_eq!(result["stop"], "answered", "{result}");
        let bad = client
            .request_raw("toolhost/agentPrompt", json!({"prompt": "x", "mode": "yolo"}))
            .unwrap();
        assert_eq!(bad["error"]["code"], -32602, "{bad}");
        client.shutdown().unwrap();
        asked.lock().unwrap().clone()
    })
    .await
    .unwrap();
    assert!(!env.root.join("new.txt").exists(), "a refused write ran");
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0]["intent"], "permission");
    assert_eq!(asked[0]["tool"], "write");
    let bodies = bodies.lock().unwrap().clone();
    let tool = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert!(tool["content"].as_str().unwrap().starts_with("Error:"), "{tool}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_of_the_session_log_continues_after_the_server_restarted() {
    let env = Env::new();
    let model = model_server(|n, _| match n {
        0 => answering(&["The answer is 42."]),
        _ => answering(&["You asked about the answer."]),
    })
    .await;
    let (env, bodies) = (Arc::new(env), Arc::clone(&model.bodies));
    agent_options(&env, &model.base, "auto");
    let task_env = Arc::clone(&env);
    tokio::task::spawn_blocking(move || {
        let env = task_env;
        let (mut client, _) = editor(&env, json!({}), None);
        let first =
            client.request("toolhost/agentPrompt", json!({"prompt": "the answer?"})).unwrap();
        client.shutdown().unwrap();
        let logs = env.session_logs();
        let header: Value = serde_json::from_str(
            std::fs::read_to_string(&logs[0]).unwrap().lines().next().unwrap(),
        )
        .unwrap();
        let session_id =
            header["id"].as_str().expect("the session id in the log header").to_owned();
        // The editor starts the server again on the same session and goes on with the run.
        let (mut client, _) = editor(&env, json!({"session_id": session_id}), None);
        let second = client
            .request(
                "toolhost/agentPrompt",
                json!({"prompt": "what did I ask?", "chatId": first["runId"]}),
            )
            .unwrap();
        assert_eq!(second["answer"], "You asked about the answer.", "{second}");
        client.shutdown().unwrap();
    })
    .await
    .unwrap();
    let bodies = bodies.lock().unwrap().clone();
    let messages = bodies[1]["messages"].as_array().unwrap();
    let said: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(said.len(), 4, "{said:?}");
    assert_eq!(said[0].0, "system");
    assert_eq!(
        &said[1..],
        [("user", "the answer?"), ("assistant", "The answer is 42."), ("user", "what did I ask?")]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subagents_call_is_listed_so_its_cards_stop_cancels_it() {
    let env = Env::new();
    let model = model_server(|_, body| {
        let child = first_prompt(body) == "run the slow command";
        match (child, has_tool_answer(body)) {
            (false, false) => calling(&[(
                "subagent",
                r#"{"description":"slow command","prompt":"run the slow command"}"#,
            )]),
            (true, false) => {
                calling(&[("bash", r#"{"command":"sleep 60","description":"wait a minute"}"#)])
            }
            (true, true) => answering(&["The command was stopped."]),
            (false, true) => answering(&["The subagent's command was stopped."]),
        }
    })
    .await;
    let env = Arc::new(env);
    let options = agent_options(&env, &model.base, "auto");
    let task_env = Arc::clone(&env);
    tokio::task::spawn_blocking(move || {
        let env = task_env;
        let (mut client, _) = editor(&env, options, None);
        let id = json!(9002);
        send_prompt(&mut client, &id, "go");
        let running = client
            .wait_for(Duration::from_secs(20), |n| {
                n["method"] == "toolhost/card"
                    && n["params"]["tool"] == "bash"
                    && n["params"]["status"] == "pending"
            })
            .expect("the subagent's command card");
        assert_eq!(running["params"]["caller"], "subagent", "{running}");
        let call_id = running["params"]["callId"].clone();
        // The card's Stop, as the editors send it.
        let stopped = client.request("toolhost/cancelCall", json!({"callId": call_id})).unwrap();
        assert_eq!(stopped["cancelled"], true, "the child's call is listed: {stopped}");
        let response = wait_response(&mut client, &id, Duration::from_secs(20)).unwrap();
        assert_eq!(
            response["result"]["answer"], "The subagent's command was stopped.",
            "{response}"
        );
        let finished = client
            .seen
            .iter()
            .find(|n| {
                n["method"] == "toolhost/card"
                    && n["params"]["callId"] == call_id
                    && n["params"]["status"] != "pending"
            })
            .expect("the command's final card")
            .clone();
        assert_eq!(finished["params"]["status"], "failed", "{finished}");
        client.shutdown().unwrap();
    })
    .await
    .unwrap();
}
