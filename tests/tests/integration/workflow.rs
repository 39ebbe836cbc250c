//! `workflow` and `ralph` through `toolhost agent` against a scripted model server that counts
//! its requests: a three-phase workflow (`parallel`, `pipeline`, a schema'd `agent()`) whose
//! children are `subagent` cards under the workflow's card, grouped by phase and label; ralph
//! completing in three rounds, and continuing when its completion check disagrees; a run killed
//! (SIGKILL) in the middle and resumed in the same session without asking the finished children
//! again; a run stopped at its token budget with its partial result and per-agent usage; a
//! background run read with `job_output`, and a resume of it while it still runs refused
//! (`RUN_ACTIVE`).
#![allow(clippy::unwrap_used)]

use crate::server;
use crate::sse;

use serde_json::{Value, json};
use server::{Env, binary};
use sse::{Answer, first_prompt, has_tool_answer, last_tool_result, server as model_server};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn calling(name: &str, args: &Value) -> Answer {
    Answer::calling(&[(name, &args.to_string())], None, 100)
}

/// A child's answer: one request, 300 prompt and 5 completion tokens.
fn answering(text: &str) -> Answer {
    Answer::answering(&[text], 300, 5)
}

/// `toolhost agent <task> --json` in the workspace, in session `session` when given.
fn agent_command(
    env: &Env,
    base: &str,
    task: &str,
    session: Option<&str>,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(binary());
    command
        .args(["agent", task, "--json", "--base-url", base, "--api-key-env", "", "--mode", "auto"])
        .current_dir(&env.root)
        .envs(env.env())
        .kill_on_drop(true);
    if let Some(session) = session {
        command.args(["--session", session]);
    }
    command
}

async fn agent(env: &Env, base: &str, task: &str, session: Option<&str>) -> Vec<Value> {
    let out = agent_command(env, base, task, session).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn session_events(env: &Env) -> Vec<Value> {
    let logs = env.session_logs();
    assert_eq!(logs.len(), 1, "one session");
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The prompts the model was asked, in order (first user message of each request).
fn prompts(bodies: &[Value]) -> Vec<String> {
    bodies.iter().map(first_prompt).collect()
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
log("judged");
return { found, drafts, verdict };
"#;

/// A child's answer to the three-phase script's prompts.
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
    if prompt.starts_with("judge pdA,pdB") {
        return answering("```json\n{\"score\": 7}\n```");
    }
    answering("unexpected")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_three_phase_workflow_runs_its_children_as_nested_subagent_cards() {
    let env = Env::new();
    let call = json!({
        "meta": {"name": "three phases", "description": "survey, draft, judge",
                 "phases": [{"title": "survey"}, {"title": "draft"}, {"title": "verdict"}]},
        "script": THREE_PHASES,
    });
    let model = model_server(move |_, body| {
        let prompt = first_prompt(body);
        match (prompt.as_str(), has_tool_answer(body)) {
            ("orchestrate", false) => calling("workflow", &call),
            ("orchestrate", true) => answering("done"),
            (child, _) => three_phase_child(child),
        }
    })
    .await;
    agent(&env, &model.base, "orchestrate", None).await;
    let bodies = model.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 9, "the parent twice and seven children once: {:?}", prompts(&bodies));
    let text = last_tool_result(bodies.iter().rfind(|b| first_prompt(b) == "orchestrate").unwrap());
    let expected = json!({"found": ["A", "B"], "drafts": ["pdA", "pdB"], "verdict": {"score": 7}});
    assert_eq!(
        text,
        format!(
            "workflow \"three phases\" completed (7 agents).\nReturn value:\n{}",
            serde_json::to_string_pretty(&expected).unwrap()
        )
    );
    // A schema'd child is told the schema.
    let judge = prompts(&bodies).into_iter().find(|p| p.starts_with("judge")).unwrap();
    assert!(judge.contains("\"score\""), "{judge}");

    let events = session_events(&env);
    let calls = of_type(&events, "tool/call");
    let workflow = calls.iter().find(|c| c["data"]["name"] == "workflow").unwrap();
    let workflow_id = workflow["data"]["callId"].as_str().unwrap();
    let children: Vec<&&Value> = calls.iter().filter(|c| c["data"]["name"] == "subagent").collect();
    assert_eq!(children.len(), 7);
    let mut titles: Vec<String> = Vec::new();
    for child in &children {
        assert_eq!(child["data"]["parentCallId"], workflow_id, "{child}");
        titles.push(child["data"]["card"]["title"].as_str().unwrap().to_owned());
    }
    titles.sort();
    assert_eq!(
        titles,
        [
            "Subagent: draft · draft 0",
            "Subagent: draft · draft 1",
            "Subagent: draft · polish 0",
            "Subagent: draft · polish 1",
            "Subagent: survey · a",
            "Subagent: survey · b",
            "Subagent: verdict · judge",
        ]
    );
    // Each child's own run is recorded under its subagent call; each answer is journaled.
    let runs = of_type(&events, "agent/run");
    assert_eq!(runs.len(), 8, "the parent's run and seven children's");
    let steps = of_type(&events, "agent/workflow-step");
    assert_eq!(steps.len(), 7);
    assert!(steps.iter().all(|s| s["data"]["usage"]["tokens"] == 305), "{steps:?}");
    // The run's card sums its children's usage; each child's card carries its own.
    let result_of = |id: &str| {
        of_type(&events, "tool/result")
            .into_iter()
            .find(|r| r["data"]["callId"] == id)
            .unwrap()
            .clone()
    };
    let meta = result_of(workflow_id)["data"]["meta"].clone();
    assert_eq!(meta["usage"]["tokens"], 7 * 305, "{meta}");
    assert_eq!(meta["agents"].as_array().unwrap().len(), 7, "{meta}");
    let judge = children
        .iter()
        .find(|c| c["data"]["card"]["title"] == "Subagent: verdict · judge")
        .unwrap();
    let judge_meta = result_of(judge["data"]["callId"].as_str().unwrap())["data"]["meta"].clone();
    assert_eq!(judge_meta["usage"]["totalTokens"], 305, "{judge_meta}");
}

/// A report as a ralph worker answers it.
fn report(status: &str, evidence: &[&str], next: &[&str], blocker: Option<&str>) -> String {
    json!({"status": status, "summary": format!("{status} now"), "evidence": evidence,
           "nextSteps": next, "blocker": blocker})
    .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn ralph_completes_in_three_rounds_once_the_check_agrees() {
    let env = Env::new();
    let model = model_server(|_, body| {
        let prompt = first_prompt(body);
        if prompt == "keep going" {
            return if has_tool_answer(body) {
                answering("done")
            } else {
                calling("ralph", &json!({"objective": "make it so", "maxRounds": 5}))
            };
        }
        if prompt.starts_with("Check a claim") {
            assert!(prompt.contains("it is so") && !prompt.contains("previous round"), "{prompt}");
            return answering(r#"{"agree": true, "reason": "verified"}"#);
        }
        if prompt.contains("This is round 1 of at most 5") {
            assert!(prompt.contains("first round"), "{prompt}");
            return answering(&report("continue", &[], &["step two"], None));
        }
        if prompt.contains("This is round 2 of at most 5") {
            assert!(prompt.contains("step two"), "the previous report is handed over: {prompt}");
            return answering(&report("continue", &[], &["step three"], None));
        }
        if prompt.contains("This is round 3 of at most 5") {
            return answering(&report("complete", &["it is so"], &[], None));
        }
        answering("unexpected")
    })
    .await;
    agent(&env, &model.base, "keep going", None).await;
    let bodies = model.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 6, "three rounds, one check, the parent twice");
    let text = last_tool_result(bodies.iter().rfind(|b| first_prompt(b) == "keep going").unwrap());
    let final_report: Value =
        serde_json::from_str(&report("complete", &["it is so"], &[], None)).unwrap();
    assert_eq!(
        text,
        format!(
            "Ralph worker reported completion after 3 round(s).\nFinal report:\n{}",
            serde_json::to_string_pretty(&final_report).unwrap()
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ralph_goes_on_when_the_check_rejects_a_completion() {
    let env = Env::new();
    let checks = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&checks);
    let model = model_server(move |_, body| {
        let prompt = first_prompt(body);
        if prompt == "finish it" {
            return if has_tool_answer(body) {
                answering("done")
            } else {
                calling("ralph", &json!({"objective": "write the file"}))
            };
        }
        if prompt.starts_with("Check a claim") {
            return if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                answering(r#"{"agree": false, "reason": "the file is missing"}"#)
            } else {
                answering(r#"{"agree": true, "reason": "the file is there"}"#)
            };
        }
        if prompt.contains("This is round 1 of at most 256") {
            return answering(&report("complete", &["wrote it"], &[], None));
        }
        if prompt.contains("This is round 2 of at most 256") {
            assert!(prompt.contains("disagreed: the file is missing"), "{prompt}");
            return answering(&report("complete", &["wrote it, really"], &[], None));
        }
        answering("unexpected")
    })
    .await;
    agent(&env, &model.base, "finish it", None).await;
    assert_eq!(checks.load(Ordering::SeqCst), 2);
    let bodies = model.bodies.lock().unwrap().clone();
    let text = last_tool_result(bodies.iter().rfind(|b| first_prompt(b) == "finish it").unwrap());
    assert!(text.starts_with("Ralph worker reported completion after 2 round(s)."), "{text}");
    assert!(text.contains("wrote it, really"), "{text}");
}

const SEQUENTIAL: &str = r#"
const out = [];
for (const step of args.steps) out.push(await agent("step " + step, { label: "step " + step }));
return out;
"#;

fn sequential_call(budget: Option<Value>) -> Value {
    let mut call = json!({
        "meta": {"name": "four steps", "description": "one after another"},
        "script": SEQUENTIAL,
        "args": {"steps": [1, 2, 3, 4]},
    });
    if let Some(budget) = budget {
        call["budget"] = budget;
    }
    call
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workflow_killed_in_the_middle_resumes_without_asking_finished_children_again() {
    let env = Env::new();
    let run_id: Arc<Mutex<String>> = Arc::default();
    let step3_asked = Arc::new(AtomicUsize::new(0));
    let (id, asked) = (Arc::clone(&run_id), Arc::clone(&step3_asked));
    let model = model_server(move |_, body| {
        let prompt = first_prompt(body);
        match (prompt.as_str(), has_tool_answer(body)) {
            ("start it", false) => calling("workflow", &sequential_call(None)),
            ("resume it", false) => {
                calling("workflow", &json!({"resume": id.lock().unwrap().clone()}))
            }
            ("start it" | "resume it", true) => answering("done"),
            ("step 3", _) if asked.fetch_add(1, Ordering::SeqCst) == 0 => {
                // The first time, step 3 takes long enough for the server to be killed.
                let mut slow = answering("S3");
                slow.pieces.insert(0, (Duration::from_secs(120), String::new()));
                slow
            }
            (child, _) => answering(&format!("S{}", child.trim_start_matches("step "))),
        }
    })
    .await;
    let mut child = agent_command(&env, &model.base, "start it", None)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while step3_asked.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "step 3 was never asked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // SIGKILL: nothing of the process gets to clean up.
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let events = session_events(&env);
    let run = of_type(&events, "agent/workflow")[0]["data"].clone();
    *run_id.lock().unwrap() = run["runId"].as_str().unwrap().to_owned();
    assert_eq!(of_type(&events, "agent/workflow-step").len(), 2, "steps 1 and 2 were journaled");
    let session = env.session_logs()[0].parent().unwrap().file_name().unwrap().to_owned();
    let before = prompts(&model.bodies.lock().unwrap());

    agent(&env, &model.base, "resume it", session.to_str()).await;
    let after = prompts(&model.bodies.lock().unwrap())[before.len()..].to_vec();
    assert_eq!(
        after,
        ["resume it", "step 3", "step 4", "resume it"],
        "steps 1 and 2 not asked again"
    );
    let bodies = model.bodies.lock().unwrap().clone();
    let text = last_tool_result(bodies.iter().rfind(|b| first_prompt(b) == "resume it").unwrap());
    let expected = serde_json::to_string_pretty(&json!(["S1", "S2", "S3", "S4"])).unwrap();
    assert_eq!(
        text,
        format!("workflow \"four steps\" completed (4 agents).\nReturn value:\n{expected}")
    );
    let events = session_events(&env);
    let starts = of_type(&events, "agent/workflow");
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[1]["data"]["resumed"], true);
    assert_eq!(of_type(&events, "agent/workflow-step").len(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workflow_stops_at_its_token_budget_with_its_partial_result_and_usage() {
    let env = Env::new();
    let model = model_server(move |_, body| {
        let prompt = first_prompt(body);
        match (prompt.as_str(), has_tool_answer(body)) {
            ("spend", false) => calling("workflow", &sequential_call(Some(json!({"tokens": 500})))),
            ("spend", true) => answering("done"),
            (child, _) => answering(&format!("S{}", child.trim_start_matches("step "))),
        }
    })
    .await;
    agent(&env, &model.base, "spend", None).await;
    let bodies = model.bodies.lock().unwrap().clone();
    assert_eq!(prompts(&bodies), ["spend", "step 1", "step 2", "spend"], "no third child");
    let text = last_tool_result(bodies.iter().rfind(|b| first_prompt(b) == "spend").unwrap());
    assert!(
        text.starts_with(
            "workflow \"four steps\" stopped at its budget (610 tokens used of 500) after 2 agents;"
        ),
        "{text}"
    );
    assert!(text.contains("\"result\": \"S1\"") && text.contains("\"result\": \"S2\""), "{text}");
    assert!(text.contains("\"tokens\": 305"), "per-agent usage: {text}");
    let events = session_events(&env);
    let end = of_type(&events, "agent/workflow-end")[0]["data"].clone();
    assert_eq!(end["status"], "budget-limited");
    let call = of_type(&events, "tool/call")
        .into_iter()
        .find(|c| c["data"]["name"] == "workflow")
        .unwrap();
    let result = of_type(&events, "tool/result")
        .into_iter()
        .find(|r| r["data"]["callId"] == call["data"]["callId"])
        .unwrap();
    assert_ne!(result["data"]["isError"], true, "stopping at the budget is not an error: {result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_background_workflow_is_a_job_whose_output_is_the_run() {
    let env = Env::new();
    let model = model_server(move |_, body| {
        let prompt = first_prompt(body);
        let tool_answers =
            body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").count();
        match (prompt.as_str(), tool_answers) {
            ("later", 0) => {
                let mut call = sequential_call(None);
                call["args"]["steps"] = json!([1, 2]);
                call["run_in_background"] = json!(true);
                calling("workflow", &call)
            }
            ("later", 1) => calling("job_output", &json!({"job_id": "workflow-1", "wait": true})),
            ("later", _) => answering("done"),
            (child, _) => answering(&format!("S{}", child.trim_start_matches("step "))),
        }
    })
    .await;
    agent(&env, &model.base, "later", None).await;
    let bodies = model.bodies.lock().unwrap().clone();
    let later: Vec<&Value> = bodies.iter().filter(|b| first_prompt(b) == "later").collect();
    let started = last_tool_result(later[1]);
    assert!(
        started.starts_with("started background workflow job workflow-1 (run wf_"),
        "{started}"
    );
    let output = last_tool_result(later[2]);
    assert!(output.contains("workflow \"four steps\" completed (2 agents)."), "{output}");
}

/// Blocks the model server's (synchronous) script until `flag` is set, handing the worker's
/// other tasks to the runtime meanwhile.
fn wait_for(flag: &std::sync::atomic::AtomicBool) {
    tokio::task::block_in_place(|| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !flag.load(Ordering::SeqCst) {
            assert!(Instant::now() < deadline, "the condition never came");
            std::thread::sleep(Duration::from_millis(5));
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn job_output_shows_a_background_workflows_phase_agents_and_tokens() {
    use std::sync::atomic::AtomicBool;
    let env = Env::new();
    let second_asked = Arc::new(AtomicBool::new(false));
    let progress_read = Arc::new(AtomicBool::new(false));
    let (asked, read) = (Arc::clone(&second_asked), Arc::clone(&progress_read));
    let model = model_server(move |_, body| {
        let prompt = first_prompt(body);
        let tool_answers =
            body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").count();
        match (prompt.as_str(), tool_answers) {
            ("watch", 0) => {
                let script = "phase(\"work\");\nconst a = await agent(\"step 1\");\nlog(\"first done\");\nreturn [a, await agent(\"step 2\")];";
                let call = json!({"meta": {"name": "watched", "description": "two steps"},
                                  "script": script, "run_in_background": true});
                calling("workflow", &call)
            }
            ("watch", 1) => {
                // Read the progress once step 1 has answered and step 2 is running.
                wait_for(&asked);
                calling("job_output", &json!({"job_id": "workflow-1"}))
            }
            ("watch", 2) => {
                read.store(true, Ordering::SeqCst);
                calling("job_output", &json!({"job_id": "workflow-1", "wait": true}))
            }
            ("watch", _) => answering("done"),
            ("step 2", _) => {
                asked.store(true, Ordering::SeqCst);
                wait_for(&read);
                answering("S2")
            }
            (child, _) => answering(&format!("S{}", child.trim_start_matches("step "))),
        }
    })
    .await;
    agent(&env, &model.base, "watch", None).await;
    let bodies = model.bodies.lock().unwrap().clone();
    let watch: Vec<&Value> = bodies.iter().filter(|b| first_prompt(b) == "watch").collect();
    let progress = last_tool_result(watch[2]);
    assert!(progress.contains("workflow \"watched\" · run wf_"), "{progress}");
    assert!(progress.contains("phase: work"), "{progress}");
    assert!(progress.contains("agents: 2 started, 1 finished, 1 running"), "{progress}");
    assert!(progress.contains("tokens: 305"), "{progress}");
    assert!(progress.contains("first done"), "the script's logs follow: {progress}");
    let end = last_tool_result(watch[3]);
    assert!(end.contains("workflow \"watched\" completed (2 agents)."), "{end}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resuming_a_run_that_still_runs_is_refused_naming_its_job() {
    use std::sync::atomic::AtomicBool;
    let env = Env::new();
    let release = Arc::new(AtomicBool::new(false));
    let held = Arc::clone(&release);
    let model = model_server(move |_, body| {
        let prompt = first_prompt(body);
        let tool_answers =
            body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").count();
        match (prompt.as_str(), tool_answers) {
            ("twice", 0) => {
                let mut call = sequential_call(None);
                call["args"]["steps"] = json!([1]);
                call["run_in_background"] = json!(true);
                calling("workflow", &call)
            }
            ("twice", 1) => {
                // "started background workflow job workflow-1 (run wf_…)"
                let started = last_tool_result(body);
                let run = started.split("(run ").nth(1).unwrap().trim_end_matches(')');
                calling("workflow", &json!({"resume": run}))
            }
            ("twice", 2) => {
                release.store(true, Ordering::SeqCst);
                calling("job_output", &json!({"job_id": "workflow-1", "wait": true}))
            }
            ("twice", _) => answering("done"),
            ("step 1", _) => {
                wait_for(&held);
                answering("S1")
            }
            (other, _) => answering(&format!("unexpected {other}")),
        }
    })
    .await;
    agent(&env, &model.base, "twice", None).await;
    let bodies = model.bodies.lock().unwrap().clone();
    let twice: Vec<&Value> = bodies.iter().filter(|b| first_prompt(b) == "twice").collect();
    let refused = last_tool_result(twice[2]);
    assert!(
        refused.contains(
            "is still running in this process as job workflow-1: read it with \
                          job_output {\"job_id\": \"workflow-1\"}"
        ),
        "{refused}"
    );
    let events = session_events(&env);
    let coded = of_type(&events, "tool/result")
        .into_iter()
        .filter(|e| e.to_string().contains("\"RUN_ACTIVE\""))
        .count();
    assert_eq!(coded, 1, "the refusal's code is RUN_ACTIVE");
    // One run over the journal: its child was asked once, and the job ended with its result.
    assert_eq!(bodies.iter().filter(|b| first_prompt(b) == "step 1").count(), 1);
    let end = last_tool_result(twice[3]);
    assert!(end.contains("workflow \"four steps\" completed (1 agent)."), "{end}");
    assert_eq!(of_type(&events, "agent/workflow").len(), 1, "no second run started");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ralph_round_that_breaks_the_contract_fails_the_call_with_the_last_good_report() {
    let env = Env::new();
    let model = model_server(|_, body| {
        let prompt = first_prompt(body);
        if prompt == "try" {
            return if has_tool_answer(body) {
                answering("done")
            } else {
                calling("ralph", &json!({"objective": "do it", "maxRounds": 3}))
            };
        }
        if prompt.contains("This is round 1 of at most 3") {
            return answering(&report("continue", &[], &["more"], None));
        }
        // `complete` without evidence.
        answering(&report("complete", &[], &[], None))
    })
    .await;
    agent(&env, &model.base, "try", None).await;
    let bodies = model.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 4, "two rounds, no check, the parent twice");
    let text = last_tool_result(bodies.iter().rfind(|b| first_prompt(b) == "try").unwrap());
    let good: Value = serde_json::from_str(&report("continue", &[], &["more"], None)).unwrap();
    assert_eq!(
        text,
        format!(
            "Error: ralph round 2 failed: a `complete` report needs evidence\nLast good report:\n{}",
            serde_json::to_string_pretty(&good).unwrap()
        )
    );
}
