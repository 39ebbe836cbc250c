//! The same task done by `toolhost agent` offered the tools natively and in code mode (`--tools
//! code`: only `run_code`), against a scripted model: find the TODOs in 40 files and fix three.
//! Both leave the same files; code mode takes fewer turns and sends the model fewer bytes, since
//! the grep's forty matches and the three files never enter the conversation. Prints both
//! figures (the issue note quotes them). In code mode a direct call of a hidden tool is an
//! unknown tool to the model.
#![allow(clippy::unwrap_used)]

use crate::server;
use crate::sse;

use serde_json::{Value, json};
use server::{Env, binary};
use sse::{Answer, server as model_server};

const FILES: usize = 40;

fn workspace() -> Env {
    let env = Env::new();
    for n in 0..FILES {
        let body: String =
            (0..30).map(|l| format!("let value_{l} = {l}; // filler line {l}\n")).collect();
        env.write(&format!("src/m{n:02}.ts"), &format!("{body}// TODO: fix m{n:02}\n{body}"));
    }
    env
}

fn fixed(env: &Env) -> Vec<usize> {
    (0..FILES)
        .filter(|n| {
            let text = std::fs::read_to_string(env.root.join(format!("src/m{n:02}.ts"))).unwrap();
            text.contains("// DONE: fixed")
        })
        .collect()
}

struct Outcome {
    turns: u64,
    bytes_sent: usize,
    end: Value,
}

async fn agent(env: &Env, base: &str, tools: &str) -> Outcome {
    let out = tokio::process::Command::new(binary())
        .args(["agent", "fix the first three TODOs", "--json", "--base-url", base])
        .args(["--api-key-env", "", "--mode", "auto", "--tools", tools])
        .current_dir(&env.root)
        .envs(env.env())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}\n{stdout}");
    let end: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["type"] == "end")
        .unwrap();
    Outcome { turns: end["turns"].as_u64().unwrap(), bytes_sent: 0, end }
}

fn calls_of(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_task_in_native_and_in_code_mode_costs_fewer_turns_and_bytes_in_code_mode() {
    let read = |n: usize| json!({"file_path": format!("src/m{n:02}.ts")}).to_string();
    let edit = |n: usize| {
        json!({"file_path": format!("src/m{n:02}.ts"), "old_string": "// TODO: fix", "new_string": "// DONE: fixed"})
            .to_string()
    };

    // Native: grep, then three reads, then three edits, then the answer.
    let native_env = workspace();
    let (r0, r1, r2) = (read(0), read(1), read(2));
    let (e0, e1, e2) = (edit(0), edit(1), edit(2));
    let native_model = model_server(move |n, _| match n {
        0 => Answer::calling(&[("grep", r#"{"pattern":"TODO"}"#)], None, 100),
        1 => Answer::calling(&[("read", &r0), ("read", &r1), ("read", &r2)], None, 100),
        2 => Answer::calling(&[("edit", &e0), ("edit", &e1), ("edit", &e2)], None, 100),
        _ => Answer::answering(&["Fixed three TODOs."], 100, 5),
    })
    .await;
    let mut native = agent(&native_env, &native_model.base, "native").await;
    assert_eq!(fixed(&native_env), [0, 1, 2]);
    let native_bodies = native_model.bodies.lock().unwrap().clone();
    native.bytes_sent = native_bodies.iter().map(|b| b.to_string().len()).sum();
    assert!(!calls_of(&native_bodies[0]).contains(&"run_code".to_owned()));

    // Code: one program does the same, then the answer.
    let code_env = workspace();
    let program = r#"
const hits = await tools.grep({ pattern: "TODO" });
const files = [...new Set(hits.matches.map((m) => m.path))].sort().slice(0, 3);
for (const file of files) {
  await tools.read({ file_path: file });
  await tools.edit({ file_path: file, old_string: "// TODO: fix", new_string: "// DONE: fixed" });
}
return { fixed: files.length, of: hits.matches.length };
"#;
    let call = json!({"code": program, "description": "Fix the first three TODOs"}).to_string();
    let code_model = model_server(move |n, _| match n {
        0 => Answer::calling(&[("run_code", &call)], None, 100),
        _ => Answer::answering(&["Fixed three TODOs."], 100, 5),
    })
    .await;
    let mut code = agent(&code_env, &code_model.base, "code").await;
    assert_eq!(fixed(&code_env), [0, 1, 2]);
    let code_bodies = code_model.bodies.lock().unwrap().clone();
    code.bytes_sent = code_bodies.iter().map(|b| b.to_string().len()).sum();
    assert_eq!(calls_of(&code_bodies[0]), ["run_code"], "code mode offers only run_code");
    let answer = sse::last_tool_result(&code_bodies[1]);
    assert!(answer.contains("\"fixed\": 3") && answer.contains("\"of\": 40"), "{answer}");

    println!(
        "native: {} turns, {} bytes sent (~{} tokens); code: {} turns, {} bytes sent (~{} tokens)",
        native.turns,
        native.bytes_sent,
        native.bytes_sent / 4,
        code.turns,
        code.bytes_sent,
        code.bytes_sent / 4,
    );
    assert_eq!((native.turns, code.turns), (4, 2), "{} / {}", native.end, code.end);
    // Each code-mode request carries every tool's declaration (arguments and values) in
    // run_code's description, about the size of the native tool list; what it saves is turns.
    assert!(
        code.bytes_sent * 3 < native.bytes_sent * 2,
        "{} vs {}",
        code.bytes_sent,
        native.bytes_sent
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn in_code_mode_a_direct_call_of_a_hidden_tool_is_an_unknown_tool() {
    let env = workspace();
    let model = model_server(|n, _| match n {
        0 => Answer::calling(&[("read", r#"{"file_path":"src/m00.ts"}"#)], None, 100),
        _ => Answer::answering(&["ok"], 100, 5),
    })
    .await;
    agent(&env, &model.base, "code").await;
    let bodies = model.bodies.lock().unwrap().clone();
    let result = sse::last_tool_result(&bodies[1]);
    assert!(result.contains("unknown tool \"read\""), "{result}");
}
