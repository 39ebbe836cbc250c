//! Agents hosted over ACP from the editor: `toolhost/agentPrompt` with `agent: "claude"` runs the
//! real `claude-agent-acp` from npm (Claude Code inside) against a scripted Anthropic Messages
//! server on 127.0.0.1. Its steps — its own Edit and Bash tools, which write to disk themselves —
//! become `agent_step` cards: the edit reviewed hunk by hunk before it lands (one hunk rejected:
//! the file holds only the accepted one, and the agent is told with its next prompt), the shell's
//! `sed -i` a diff card that `revert` undoes. A permission request nobody answers ends
//! `cancelled` at the timeout; the agent killed mid-turn is started again by the next prompt,
//! its session loaded, and the conversation goes on; no agent process is left once the editor
//! closes.
#![allow(clippy::unwrap_used)]

use crate::model_server::{
    self, ModelServer, Recorded, Reply, anthropic_turn, codex_outputs, responses_stream,
};
use crate::server::{self, Env, git, workspace_root};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_harness::client::{Client, NO_REPLY, RequestHandler};

/// The adapter's program, installed by the test command (never skipped when missing).
fn adapter(bin: &str) -> PathBuf {
    let path = workspace_root().join(".client-tools/npm/node_modules/.bin").join(bin);
    assert!(path.exists(), "{} is missing: run `cargo xtask install-deps`", path.display());
    path
}

const A_TXT: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n";
/// The agent's edit changes line 1 and line 12: two hunks.
const A_EDITED: &str =
    "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\nTWELVE\n";
/// Only the second hunk accepted.
const A_REVIEWED: &str =
    "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\nTWELVE\n";
const B_TXT: &str = "alpha\nbeta\ngamma\n";

/// `[acp.agents.claude]` in the user's configuration: the adapter, the scripted model, a home
/// of its own, Claude Code's mode that asks before each edit and command, and a mark in its
/// environment to find its processes by.
fn configure(env: &Env, base: &str, home: &Path, mark: &str, timeout_ms: u64) {
    env.write_user_config(&format!(
        "[acp]\noffer_toolhost = false\npermission_timeout_ms = {timeout_ms}\n\n\
         [acp.agents.claude]\ncommand = \"{}\"\nmode = \"default\"\n\n\
         [acp.agents.claude.env]\nIS_SANDBOX = \"1\"\nANTHROPIC_BASE_URL = \"{base}\"\n\
         ANTHROPIC_API_KEY = \"test-key\"\nHOME = \"{}\"\n\
         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\"\nDISABLE_AUTOUPDATER = \"1\"\n\
         DISABLE_TELEMETRY = \"1\"\nDISABLE_ERROR_REPORTING = \"1\"\n\
         CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION = \"false\"\nTOOLHOST_TEST_MARK = \"{mark}\"\n",
        adapter("claude-agent-acp").display(),
        home.display(),
    ));
}

/// Whether a model request is the agent's main loop (it offers tools), not a side request.
fn main_loop(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|tools| tools.iter().any(|t| t["name"] == "Bash"))
}

/// The text of the conversation's last user message.
fn last_user_text(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let Some(last) = messages.iter().rev().find(|m| m["role"] == "user") else {
        return String::new();
    };
    match &last["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => {
            blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    }
}

fn main_requests(model: &ModelServer) -> Vec<Value> {
    model.recorded().iter().filter_map(Recorded::json).filter(main_loop).collect()
}

/// What the editor was asked: (method, params).
type Asked = Arc<Mutex<Vec<(String, Value)>>>;

/// An editor that reviews (`answer_review`) and answers questions (`answer_question`, or never);
/// every request it gets is kept.
fn editor(
    env: &Env,
    answer_review: Option<Value>,
    answer_question: Option<Value>,
) -> (Client, Asked) {
    editor_on(env, json!({}), answer_review, answer_question)
}

/// [`editor`] with the server's initialization options (`session_id`: a session to continue).
fn editor_on(
    env: &Env,
    options: Value,
    answer_review: Option<Value>,
    answer_question: Option<Value>,
) -> (Client, Asked) {
    let asked: Asked = Arc::default();
    let reviews = answer_review.is_some();
    let handler: RequestHandler = {
        let asked = Arc::clone(&asked);
        Arc::new(move |method, params| {
            asked.lock().unwrap().push((method.to_owned(), params.clone()));
            let answer = match method {
                "toolhost/review" => answer_review.clone(),
                // `"first"`: the first option of the question, whatever it is called.
                "toolhost/askUser" if answer_question == Some(json!("first")) => {
                    let question = &params["questions"][0];
                    let label = question["options"][0]["label"].clone();
                    Some(json!({"answers": [{"id": question["id"], "selected": [label]}]}))
                }
                "toolhost/askUser" => answer_question.clone(),
                _ => return Err((-32601, format!("unhandled {method}"))),
            };
            answer.ok_or((NO_REPLY, String::new()))
        })
    };
    let mut client = env.spawn_with(&[], handler);
    client.timeout = Duration::from_secs(120);
    let mut toolhost = json!({"askUser": true});
    if reviews {
        toolhost["review"] = json!(true);
    }
    let capabilities = json!({"experimental": {"toolhost": toolhost}});
    client.initialize(&env.root, options, capabilities).unwrap();
    (client, asked)
}

fn step_cards(client: &Client) -> Vec<Value> {
    let mut latest: Vec<Value> = Vec::new();
    for note in client.seen.iter().filter(|n| n["method"] == "toolhost/card") {
        let card = &note["params"];
        if card["tool"] != "agent_step" {
            continue;
        }
        match latest.iter_mut().find(|c| c["callId"] == card["callId"]) {
            Some(seen) => *seen = card.clone(),
            None => latest.push(card.clone()),
        }
    }
    latest
}

/// Processes whose environment carries `mark`.
fn marked_processes(mark: &str) -> Vec<u32> {
    let needle = format!("TOOLHOST_TEST_MARK={mark}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if environ.split(|b| *b == 0).any(|var| var == needle.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < timeout, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Claude Code's requests to the scripted model: token counts and side requests (titles) are
/// answered here, the main loop (the requests offering tools) by `main`.
fn claude_script(
    main: impl Fn(&Value) -> Reply + Send + Sync + 'static,
) -> Box<model_server::Script> {
    Box::new(move |request: &Recorded| {
        if !request.path.starts_with("/v1/messages") || request.path.contains("count_tokens") {
            return Reply::json(&json!({"input_tokens": 10}));
        }
        let Some(body) = request.json() else { return Reply::not_found() };
        if !main_loop(&body) {
            return anthropic_turn(json!({"type": "text", "text": "Title"}), "end_turn");
        }
        main(&body)
    })
}

fn claude_edit_script(root: PathBuf) -> Box<model_server::Script> {
    let a = root.join("a.txt").display().to_string();
    claude_script(move |body: &Value| {
        let last = last_user_text(body);
        if last.contains("anything else?") {
            return anthropic_turn(json!({"type": "text", "text": "Noted."}), "end_turn");
        }
        match model_server::anthropic_tool_results(body) {
            0 => anthropic_turn(
                json!({"type": "tool_use", "id": "toolu_read", "name": "Read",
                       "input": {"file_path": a}}),
                "tool_use",
            ),
            1 => anthropic_turn(
                json!({"type": "tool_use", "id": "toolu_edit", "name": "Edit",
                       "input": {"file_path": a, "old_string": A_TXT, "new_string": A_EDITED}}),
                "tool_use",
            ),
            2 => anthropic_turn(
                json!({"type": "tool_use", "id": "toolu_bash", "name": "Bash",
                       "input": {"command": "sed -i 's/beta/BETA/' b.txt",
                                 "description": "Uppercase beta"}}),
                "tool_use",
            ),
            _ => anthropic_turn(json!({"type": "text", "text": "Done."}), "end_turn"),
        }
    })
}

#[test]
fn claude_edits_arrive_as_reviewed_cards_and_its_shell_change_reverts() {
    let env = Env::new();
    env.write("a.txt", A_TXT);
    env.write("b.txt", B_TXT);
    let home = tempfile::tempdir().unwrap();
    let model = ModelServer::start(claude_edit_script(env.root.clone()));
    let mark = format!("edit-{}", std::process::id());
    configure(&env, &model.base_url(), home.path(), &mark, 60_000);
    // The edit's review: the first hunk rejected. The shell command's question: "Yes".
    let review = json!({"accepted": [1]});
    let yes = json!({"answers": [{"id": "permission", "selected": ["Yes"]}]});
    let (mut client, asked) = editor(&env, Some(review), Some(yes));

    let agents = client.request("toolhost/listAgents", json!({})).unwrap();
    let claude = agents["agents"].as_array().unwrap().iter().find(|a| a["name"] == "claude");
    assert_eq!(claude.unwrap()["installed"], true, "{agents}");

    // The chat opened first: the agent's modes and models, one of its models chosen.
    let opened = client.request("toolhost/agentOptions", json!({"agent": "claude"})).unwrap();
    let chat = opened["chatId"].as_str().unwrap().to_owned();
    let options = opened["options"].as_array().unwrap().clone();
    let of = |category: &str| {
        options.iter().find(|o| o["category"] == category).cloned().unwrap_or_else(|| {
            panic!("no {category} option: {opened:#}");
        })
    };
    assert_eq!(of("mode")["current"], "default", "the configured mode: {opened:#}");
    let model_option = of("model");
    let other_model = model_option["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["value"].clone())
        .find(|v| *v != model_option["current"])
        .unwrap_or_else(|| panic!("one model only: {model_option}"));
    let set = client
        .request(
            "toolhost/agentSetOption",
            json!({"chatId": chat, "option": model_option["id"], "value": other_model}),
        )
        .unwrap();
    let now = set["options"].as_array().unwrap().iter().find(|o| o["id"] == model_option["id"]);
    assert_eq!(now.unwrap()["current"], other_model, "{set:#}");
    let refused = client.request(
        "toolhost/agentSetOption",
        json!({"chatId": chat, "option": model_option["id"], "value": "no-such-model"}),
    );
    assert!(format!("{refused:?}").contains("OPTION_VALUE_UNKNOWN"), "{refused:?}");

    // toolhost's own plan mode holds back toolhost's agent, not the record of what a hosted
    // agent does (its steps were refused, and its changes went unrecorded).
    client.request("toolhost/setPlanMode", json!({"active": true})).unwrap();

    let first = client
        .request(
            "toolhost/agentPrompt",
            json!({"agent": "claude", "chatId": chat, "prompt": "edit a.txt and b.txt"}),
        )
        .unwrap();
    assert_eq!(first["stop"], "answered", "{first}");
    assert_eq!(first["answer"], "Done.", "{first}");
    assert_eq!(first["chatId"], chat.as_str());
    // The turn's token counts, as the agent reported them.
    assert!(first["usage"]["promptTokens"].as_u64().unwrap() > 0, "{first}");
    assert!(first["usage"]["completionTokens"].as_u64().unwrap() > 0, "{first}");
    // The chosen model is the one the agent asked for.
    let chosen = other_model.as_str().unwrap().to_owned();
    for body in main_requests(&model) {
        assert!(
            body["model"].as_str().unwrap().contains(&chosen),
            "{} for {chosen}",
            body["model"]
        );
    }
    client.request("toolhost/setPlanMode", json!({"active": false})).unwrap();

    // The edit: reviewed before it landed, hunk by hunk; only the accepted hunk is in the file.
    let reviews: Vec<Value> = asked
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "toolhost/review")
        .map(|(_, p)| p.clone())
        .collect();
    assert_eq!(reviews.len(), 1, "{reviews:#?}");
    assert_eq!(reviews[0]["hunks"].as_array().map(Vec::len), Some(2), "{}", reviews[0]);
    assert_eq!(reviews[0]["caller"], "Claude Code", "{}", reviews[0]);
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), A_REVIEWED);
    // The shell command: asked as a question with the agent's options, and run.
    let questions: Vec<Value> = asked
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "toolhost/askUser")
        .map(|(_, p)| p.clone())
        .collect();
    assert_eq!(questions.len(), 1, "{questions:#?}");
    assert_eq!(questions[0]["intent"], "permission");
    assert_eq!(std::fs::read_to_string(env.root.join("b.txt")).unwrap(), "alpha\nBETA\ngamma\n");

    // Their cards: diffs by the agent, drawn from the steps' recorded changes.
    let cards = step_cards(&client);
    let edit =
        cards.iter().find(|c| c["title"] == "Edit a.txt").unwrap_or_else(|| panic!("{cards:#?}"));
    assert_eq!(edit["status"], "completed", "{edit}");
    assert_eq!(edit["kind"], "diff", "{edit}");
    assert_eq!(edit["caller"], "Claude Code");
    assert_eq!(edit["hunks"].as_array().unwrap().len(), 1, "only the accepted hunk: {edit}");
    let sed = cards
        .iter()
        .find(|c| c["title"].as_str().is_some_and(|t| t.contains("sed -i")))
        .unwrap_or_else(|| panic!("{cards:#?}"));
    assert_eq!(sed["kind"], "diff", "{sed}");
    assert!(sed["rendered"].as_str().unwrap().contains("+BETA"), "{sed}");

    // The agent is told about the rejected hunk with its next prompt.
    let second = client
        .request(
            "toolhost/agentPrompt",
            json!({"agent": "claude", "chatId": chat, "prompt": "anything else?"}),
        )
        .unwrap();
    assert_eq!(second["answer"], "Noted.", "{second}");
    let told = main_requests(&model)
        .iter()
        .any(|body| last_user_text(body).contains("rejected 1 hunk(s) of your edit"));
    assert!(told, "the agent was not told of the rejected hunk");

    // Revert from the shell step's card.
    let call_id = sed["callId"].as_str().unwrap();
    let reverted = client.call_tool("revert", json!({"call_id": call_id})).unwrap();
    assert_ne!(reverted["isError"], true, "{reverted}");
    assert_eq!(std::fs::read_to_string(env.root.join("b.txt")).unwrap(), B_TXT);

    // Replay shows the same steps.
    let replay = client.request("toolhost/listSessions", json!({})).unwrap();
    let session = replay["sessions"][0]["id"].as_str().unwrap().to_owned();
    let replayed = client.request("toolhost/replaySession", json!({"sessionId": session})).unwrap();
    let replayed_sed = replayed["cards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["callId"] == sed["callId"])
        .cloned()
        .unwrap();
    assert_eq!(replayed_sed["rendered"], sed["rendered"]);
    // And the conversation between them: the prompts and the agent's answers.
    let said: Vec<(String, String)> = replayed["conversation"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "agent/message")
        .map(|r| {
            let data = &r["data"];
            (
                data["role"].as_str().unwrap().to_owned(),
                data["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("user", "edit a.txt and b.txt"),
        ("assistant", "Done."),
        ("user", "anything else?"),
        ("assistant", "Noted."),
    ]
    .map(|(who, text)| (who.to_owned(), text.to_owned()));
    assert_eq!(said, expected, "{replayed:#}");

    assert!(!marked_processes(&mark).is_empty(), "the agent runs while the editor is open");
    client.shutdown().unwrap();
    wait_until("no agent process is left", Duration::from_secs(20), || {
        marked_processes(&mark).is_empty()
    });
}

fn claude_wait_script(root: PathBuf, hang: Arc<Mutex<bool>>) -> Box<model_server::Script> {
    let c = root.join("c.txt").display().to_string();
    claude_script(move |body: &Value| {
        let last = last_user_text(body);
        if last.contains("take your time") && *hang.lock().unwrap() {
            // The agent is killed while it waits for this answer.
            std::thread::sleep(Duration::from_secs(20));
            return Reply::not_found();
        }
        // A stopped prompt got no answer, so the next one shares its user message: the later
        // prompt is looked for first.
        if last.contains("go on") {
            return anthropic_turn(json!({"type": "text", "text": "Going on."}), "end_turn");
        }
        if last.contains("stop me") {
            // Stopped from the editor while it waits for this answer.
            std::thread::sleep(Duration::from_secs(20));
            return Reply::not_found();
        }
        match model_server::anthropic_tool_results(body) {
            0 => anthropic_turn(
                json!({"type": "tool_use", "id": "toolu_touch", "name": "Bash",
                       "input": {"command": format!("touch {c}"), "description": "Create c.txt"}}),
                "tool_use",
            ),
            _ => anthropic_turn(json!({"type": "text", "text": "It was not allowed."}), "end_turn"),
        }
    })
}

#[test]
fn an_unanswered_permission_is_cancelled_and_a_killed_agent_is_started_again() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let hang = Arc::new(Mutex::new(true));
    let model = ModelServer::start(claude_wait_script(env.root.clone(), Arc::clone(&hang)));
    let mark = format!("wait-{}", std::process::id());
    configure(&env, &model.base_url(), home.path(), &mark, 1_500);
    // Nobody answers questions.
    let (mut client, asked) = editor(&env, None, None);

    let started = Instant::now();
    let first = client
        .request("toolhost/agentPrompt", json!({"agent": "claude", "prompt": "create c.txt"}))
        .unwrap();
    assert_eq!(first["stop"], "answered", "{first}");
    assert_eq!(first["answer"], "It was not allowed.", "{first}");
    assert!(started.elapsed() >= Duration::from_millis(1_500));
    assert!(!env.root.join("c.txt").exists(), "the command did not run");
    let asked_once = asked.lock().unwrap().iter().filter(|(m, _)| m == "toolhost/askUser").count();
    assert_eq!(asked_once, 1);
    let cards = step_cards(&client);
    assert_eq!(cards.len(), 1, "{cards:#?}");
    assert_eq!(cards[0]["status"], "failed", "{}", cards[0]);
    let chat = first["chatId"].as_str().unwrap().to_owned();

    // Killed mid-turn: the prompt fails, saying so.
    let request = server::raw_request(
        json!("slow"),
        "toolhost/agentPrompt",
        json!({"agent": "claude", "chatId": chat, "prompt": "take your time"}),
    );
    client.write_raw(&request).unwrap();
    wait_until("the agent asks the model", Duration::from_secs(60), || {
        main_requests(&model).iter().any(|b| last_user_text(b).contains("take your time"))
    });
    let agent_pids = marked_processes(&mark);
    assert!(!agent_pids.is_empty());
    for pid in &agent_pids {
        let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    *hang.lock().unwrap() = false;
    let failed = server::wait_response(&mut client, &json!("slow"), Duration::from_secs(60))
        .expect("the prompt answers");
    assert_eq!(failed["result"]["stop"], "failed", "{failed}");
    assert!(failed["result"]["error"].as_str().unwrap().starts_with("AGENT_EXITED"), "{failed}");

    // The next prompt starts it again: its session loaded, the conversation goes on.
    let next = client
        .request(
            "toolhost/agentPrompt",
            json!({"agent": "claude", "chatId": chat, "prompt": "go on"}),
        )
        .unwrap();
    assert_eq!(next["answer"], "Going on.", "{next}");
    let last = main_requests(&model).into_iter().last().unwrap();
    let history = last["messages"].to_string();
    assert!(
        history.contains("create c.txt"),
        "the restarted agent has the conversation: {history}"
    );

    // Stop: the request is answered cancelled at once, the agent stops its turn and stays.
    let running = marked_processes(&mark);
    let request = server::raw_request(
        json!("stopped"),
        "toolhost/agentPrompt",
        json!({"agent": "claude", "chatId": chat, "prompt": "stop me"}),
    );
    client.write_raw(&request).unwrap();
    wait_until("the agent asks the model", Duration::from_secs(60), || {
        main_requests(&model).iter().any(|b| last_user_text(b).contains("stop me"))
    });
    client.notify("$/cancelRequest", json!({"id": "stopped"})).unwrap();
    let stopped = server::wait_response(&mut client, &json!("stopped"), Duration::from_secs(30))
        .expect("the prompt answers");
    assert_eq!(stopped["error"]["code"], -32800, "{stopped}");
    let after = client
        .request(
            "toolhost/agentPrompt",
            json!({"agent": "claude", "chatId": chat, "prompt": "go on"}),
        )
        .unwrap();
    assert_eq!(after["answer"], "Going on.", "{after}");
    // The adapter (the first process with the mark) still runs: it was not started again.
    let adapter = running.iter().min().copied().unwrap();
    assert!(marked_processes(&mark).contains(&adapter), "the same agent answered");

    client.shutdown().unwrap();
    wait_until("no agent process is left", Duration::from_secs(20), || {
        marked_processes(&mark).is_empty()
    });
}

/// A shell command whose files are a glob: no word of it names one.
const GLOB_SED: &str = "for f in c*.txt; do sed -i 's/one/ONE/' \"$f\"; done";

fn claude_glob_script() -> Box<model_server::Script> {
    claude_script(move |body: &Value| match model_server::anthropic_tool_results(body) {
        0 => anthropic_turn(
            json!({"type": "tool_use", "id": "toolu_glob", "name": "Bash",
                       "input": {"command": GLOB_SED, "description": "Uppercase one"}}),
            "tool_use",
        ),
        _ => anthropic_turn(json!({"type": "text", "text": "Done."}), "end_turn"),
    })
}

#[test]
fn changes_a_step_never_names_are_found_through_git_in_a_mode_that_does_not_ask() {
    let env = Env::new();
    env.write("c1.txt", "one\n");
    env.write("c2.txt", "one two\n");
    env.write("c3.txt", "x\n");
    git(&env.root, &["init", "-q"]);
    git(&env.root, &["add", "."]);
    git(&env.root, &["commit", "-q", "-m", "base"]);
    // Changed before the turn: its before side is this, not what git committed.
    env.write("c3.txt", "one\n");
    let home = tempfile::tempdir().unwrap();
    let model = ModelServer::start(claude_glob_script());
    let mark = format!("glob-{}", std::process::id());
    configure(&env, &model.base_url(), home.path(), &mark, 60_000);
    let (mut client, asked) = editor(&env, None, None);

    // A mode that runs commands without asking, chosen from the agent's own modes.
    let opened = client.request("toolhost/agentOptions", json!({"agent": "claude"})).unwrap();
    let chat = opened["chatId"].as_str().unwrap().to_owned();
    let mode = opened["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["category"] == "mode")
        .cloned()
        .unwrap_or_else(|| panic!("{opened:#}"));
    assert!(
        mode["values"].as_array().unwrap().iter().any(|v| v["value"] == "bypassPermissions"),
        "{mode}"
    );
    client
        .request(
            "toolhost/agentSetOption",
            json!({"chatId": chat, "option": mode["id"], "value": "bypassPermissions"}),
        )
        .unwrap();

    let done = client
        .request(
            "toolhost/agentPrompt",
            json!({"agent": "claude", "chatId": chat, "prompt": "uppercase one"}),
        )
        .unwrap();
    assert_eq!(done["answer"], "Done.", "{done}");
    assert!(asked.lock().unwrap().is_empty(), "nobody was asked: {:?}", asked.lock().unwrap());
    let read = |name: &str| std::fs::read_to_string(env.root.join(name)).unwrap();
    assert_eq!(
        (read("c1.txt"), read("c2.txt"), read("c3.txt")),
        ("ONE\n".into(), "ONE two\n".into(), "ONE\n".into())
    );

    // The step's card shows the three files it changed, each against what it held before.
    let cards = step_cards(&client);
    let step = cards
        .iter()
        .find(|c| c["title"].as_str().is_some_and(|t| t.contains("sed -i")))
        .unwrap_or_else(|| panic!("{cards:#?}"));
    assert_eq!(step["kind"], "diff", "{step}");
    let rendered = step["rendered"].as_str().unwrap();
    for expected in ["c1.txt", "c2.txt", "c3.txt", "-one two", "+ONE two"] {
        assert!(rendered.contains(expected), "{expected} in {rendered}");
    }
    assert!(!rendered.contains("-x"), "c3's before is its changed text: {rendered}");

    // One revert restores all three as they were when the turn began.
    let reverted = client.call_tool("revert", json!({"call_id": step["callId"]})).unwrap();
    assert_ne!(reverted["isError"], true, "{reverted}");
    assert_eq!(
        (read("c1.txt"), read("c2.txt"), read("c3.txt")),
        ("one\n".into(), "one two\n".into(), "one\n".into())
    );

    client.shutdown().unwrap();
    wait_until("no agent process is left", Duration::from_secs(20), || {
        marked_processes(&mark).is_empty()
    });
}

#[test]
fn a_chat_goes_on_in_the_agents_session_after_the_server_restarted() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let model = ModelServer::start(claude_script(|body: &Value| {
        let history = body["messages"].to_string();
        let text = if !last_user_text(body).contains("what did I ask") {
            "The answer is 42."
        } else if history.contains("the answer?") {
            "You asked for the answer."
        } else {
            "I do not know."
        };
        anthropic_turn(json!({"type": "text", "text": text}), "end_turn")
    }));
    let mark = format!("restart-{}", std::process::id());
    configure(&env, &model.base_url(), home.path(), &mark, 60_000);
    let (mut client, _) = editor(&env, None, None);
    let first = client
        .request("toolhost/agentPrompt", json!({"agent": "claude", "prompt": "the answer?"}))
        .unwrap();
    assert_eq!(first["answer"], "The answer is 42.", "{first}");
    let chat = first["chatId"].as_str().unwrap().to_owned();
    client.shutdown().unwrap();
    wait_until("no agent process is left", Duration::from_secs(20), || {
        marked_processes(&mark).is_empty()
    });

    // The editor starts the server again on the same session and goes on with the chat: the
    // agent's session is loaded (its conversation is the agent's own, kept in its home).
    let logs = env.session_logs();
    let header: Value =
        serde_json::from_str(std::fs::read_to_string(&logs[0]).unwrap().lines().next().unwrap())
            .unwrap();
    let session = header["id"].as_str().unwrap().to_owned();
    let (mut client, _) = editor_on(&env, json!({"session_id": session}), None, None);
    let second = client
        .request(
            "toolhost/agentPrompt",
            json!({"agent": "claude", "chatId": chat, "prompt": "what did I ask?"}),
        )
        .unwrap();
    assert_eq!(second["answer"], "You asked for the answer.", "{second}");
    assert_eq!(second["chatId"], chat.as_str());
    client.shutdown().unwrap();
    wait_until("no agent process is left", Duration::from_secs(20), || {
        marked_processes(&mark).is_empty()
    });
}

/// `[acp.agents.codex]`: the adapter with its own `CODEX_HOME` pointing Codex at the scripted
/// Responses server, in its `read-only` mode (it asks before each patch and each command that
/// leaves its sandbox).
fn configure_codex(env: &Env, base: &str, home: &Path, mark: &str) {
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model_provider = \"fake\"\nmodel = \"gpt-5\"\n\n[model_providers.fake]\nname = \"fake\"\n\
             base_url = \"{base}/v1\"\nwire_api = \"responses\"\nenv_key = \"FAKE_KEY\"\n"
        ),
    )
    .unwrap();
    env.write_user_config(&format!(
        "[acp]\noffer_toolhost = false\n\n\
         [acp.agents.codex]\ncommand = \"{}\"\nmode = \"read-only\"\n\n\
         [acp.agents.codex.env]\nCODEX_HOME = \"{}\"\nFAKE_KEY = \"test-key\"\nHOME = \"{}\"\n\
         NO_BROWSER = \"1\"\nTOOLHOST_TEST_MARK = \"{mark}\"\n",
        adapter("codex-acp").display(),
        codex_home.display(),
        home.display(),
    ));
}

/// Codex's patch of a.txt (lines 1 and 12: two hunks) through its `exec_command`, then a `sed`
/// of b.txt that asks to leave the sandbox.
fn codex_edit_script(root: PathBuf) -> Box<model_server::Script> {
    Box::new(move |request: &Recorded| {
        if !request.path.ends_with("/responses") {
            return Reply::json(&json!({"data": [], "models": []}));
        }
        let Some(body) = request.json() else { return Reply::not_found() };
        let offers_exec = body["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "exec_command"));
        let text = |text: &str| {
            responses_stream(json!({"type": "message", "role": "assistant", "id": "msg_scripted",
                "content": [{"type": "output_text", "text": text}]}))
        };
        if !offers_exec {
            return text("{\"title\": \"Edits\"}");
        }
        let exec = |id: &str, args: Value| {
            responses_stream(json!({"type": "function_call", "name": "exec_command",
                "arguments": args.to_string(), "call_id": id}))
        };
        let workdir = root.display().to_string();
        match codex_outputs(&body).len() {
            0 => exec(
                "call_patch",
                json!({"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n two\n@@\n eleven\n-twelve\n+TWELVE\n*** End Patch\nEOF",
                       "workdir": workdir}),
            ),
            1 => exec(
                "call_sed",
                json!({"cmd": "sed -i 's/beta/BETA/' b.txt", "workdir": workdir,
                       "sandbox_permissions": "require_escalated",
                       "justification": "Uppercase beta in b.txt"}),
            ),
            _ => text("Done."),
        }
    })
}

#[test]
fn codex_patches_arrive_as_reviewed_cards_and_its_shell_change_reverts() {
    let env = Env::new();
    env.write("a.txt", A_TXT);
    env.write("b.txt", B_TXT);
    let home = tempfile::tempdir().unwrap();
    let model = ModelServer::start(codex_edit_script(env.root.clone()));
    let mark = format!("codex-{}", std::process::id());
    configure_codex(&env, &model.base_url(), home.path(), &mark);
    let (mut client, asked) = editor(&env, Some(json!({"accepted": [1]})), Some(json!("first")));

    let first = client
        .request(
            "toolhost/agentPrompt",
            json!({"agent": "codex", "prompt": "edit a.txt and b.txt"}),
        )
        .unwrap();
    assert_eq!(first["stop"], "answered", "{first}");
    let reviews: Vec<Value> = asked
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "toolhost/review")
        .map(|(_, p)| p.clone())
        .collect();
    assert_eq!(reviews.len(), 1, "{:#?}", asked.lock().unwrap());
    assert_eq!(reviews[0]["hunks"].as_array().map(Vec::len), Some(2), "{}", reviews[0]);
    assert_eq!(reviews[0]["caller"], "Codex", "{}", reviews[0]);
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), A_REVIEWED);
    assert_eq!(std::fs::read_to_string(env.root.join("b.txt")).unwrap(), "alpha\nBETA\ngamma\n");

    let cards = step_cards(&client);
    let patch = cards
        .iter()
        .find(|c| c["locations"][0]["path"].as_str().is_some_and(|p| p.ends_with("a.txt")))
        .unwrap_or_else(|| panic!("{cards:#?}"));
    assert_eq!(patch["kind"], "diff", "{patch}");
    assert_eq!(patch["caller"], "Codex");
    assert_eq!(patch["hunks"].as_array().unwrap().len(), 1, "only the accepted hunk: {patch}");
    let sed = cards
        .iter()
        .find(|c| c["title"].as_str().is_some_and(|t| t.contains("sed -i")))
        .unwrap_or_else(|| panic!("{cards:#?}"));
    assert_eq!(sed["kind"], "diff", "{sed}");
    let call_id = sed["callId"].as_str().unwrap();
    let reverted = client.call_tool("revert", json!({"call_id": call_id})).unwrap();
    assert_ne!(reverted["isError"], true, "{reverted}");
    assert_eq!(std::fs::read_to_string(env.root.join("b.txt")).unwrap(), B_TXT);

    client.shutdown().unwrap();
    wait_until("no agent process is left", Duration::from_secs(20), || {
        marked_processes(&mark).is_empty()
    });
}

/// The hosted agent's terminals run on toolhost's shell: an agent on the official Python ACP SDK
/// that works only through `terminal/*` gets each command's output and exit status, a killed
/// one's signal, and every terminal is a `bash` card by the agent.
#[test]
fn an_agents_terminals_run_on_toolhosts_shell() {
    let env = Env::new();
    let python = workspace_root().join(".client-tools/py/bin/python");
    assert!(python.exists(), "{} is missing: run `cargo xtask install-deps`", python.display());
    let agent = workspace_root().join("tests/acp-agents/terminal_agent.py");
    env.write_user_config(&format!(
        "[acp]\noffer_toolhost = false\n\n[acp.agents.terminals]\ncommand = \"{}\"\nargs = [\"{}\"]\n",
        python.display(),
        agent.display()
    ));
    let (mut client, _) = editor(&env, None, None);
    let mut ask = |prompt: &str, chat: Option<&str>| {
        let mut params = json!({"agent": "terminals", "prompt": prompt});
        if let Some(chat) = chat {
            params["chatId"] = json!(chat);
        }
        client.request("toolhost/agentPrompt", params).unwrap()
    };
    let ran = ask("run", None);
    assert_eq!(ran["answer"], "exit 0: hello from the terminal", "{ran}");
    let chat = ran["chatId"].as_str().unwrap().to_owned();
    let failed = ask("fail", Some(&chat));
    assert_eq!(failed["answer"], "exit 3: oops", "{failed}");
    let killed = ask("kill", Some(&chat));
    let answer = killed["answer"].as_str().unwrap_or_default();
    assert!(answer.starts_with("killed: exit None signal SIG"), "{killed}");

    let terminals: Vec<Value> = client
        .seen
        .iter()
        .filter(|n| n["method"] == "toolhost/card" && n["params"]["tool"] == "bash")
        .map(|n| n["params"].clone())
        .filter(|c| c["status"] != "pending")
        .collect();
    assert_eq!(terminals.len(), 3, "{terminals:#?}");
    for card in &terminals {
        assert_eq!(card["caller"], "terminals", "{card:#}");
    }
    // Each command's output on its terminal card; the killed one's call was stopped.
    assert_eq!(terminals[0]["kind"], "terminal", "{:#}", terminals[0]);
    assert_eq!(terminals[1]["terminal"]["exitCode"], 3, "{:#}", terminals[1]);
    assert_eq!(terminals[2]["status"], "failed", "{:#}", terminals[2]);
    client.shutdown().unwrap();
}
