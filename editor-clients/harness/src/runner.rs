//! Runs conformance scenarios over the wire: one `toolhost serve` per scenario (one session),
//! each tool step a `toolhost/callTool`, comparing value, content, meta, card and workspace-after.

use crate::client::{Client, ClientError, NO_REPLY, RequestHandler};
use crate::scenario::{
    ReviewScript, Scenario, Step, apply_external, bless_requested, bless_step, check_step,
    substitute,
};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The session id every runner gives a scenario's session.
pub const SESSION_ID: &str = "conformance";

/// A fresh scratch folder named like `tempfile`'s (`<tmp>/.tmpXXXXXX`), so paths inside it have
/// the same length in every runner.
pub fn scratch_dir() -> std::path::PathBuf {
    use std::time::{SystemTime, UNIX_EPOCH};
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    loop {
        let seed = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
            ^ u128::from(std::process::id());
        let mut n = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
        let name: String = (0..6)
            .map(|_| {
                let c = ALPHABET[(n % ALPHABET.len() as u128) as usize] as char;
                n /= ALPHABET.len() as u128;
                c
            })
            .collect();
        let dir = std::env::temp_dir().join(format!(".tmp{name}"));
        if std::fs::create_dir(&dir).is_ok() {
            return dir;
        }
    }
}

/// Whether `program` is on PATH.
pub fn program_exists(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// Runs one scenario against the server binary `bin`; returns the mismatches.
pub fn run_scenario(
    bin: &Path,
    scenario: &Scenario,
    scratch: &Path,
) -> Result<Vec<String>, ClientError> {
    let root = scratch.join("workspace");
    let sessions = scratch.join("sessions");
    std::fs::create_dir_all(&root)?;
    std::fs::create_dir_all(&sessions)?;
    let root = root.canonicalize()?;
    scenario.prepare(&root).map_err(|e| ClientError::Io(std::io::Error::other(e.to_string())))?;
    let mut init = match std::fs::read_to_string(scenario.dir.join("config.json")) {
        Ok(text) => serde_json::from_str(&text).unwrap_or_else(|_| json!({})),
        Err(_) => json!({}),
    };
    // Every runner uses the same session id and scratch layout, so spill locators (and the
    // previews sized around them) are byte-identical across runners.
    if let Some(map) = init.as_object_mut() {
        map.insert("session_id".to_owned(), json!(SESSION_ID));
    }
    let sessions_arg = sessions.display().to_string();
    // The current step's review script, and whether its question came.
    let script: Arc<Mutex<Option<ReviewScript>>> = Arc::default();
    let asked = Arc::new(AtomicBool::new(false));
    // The current step's answer to a question, and whether the question came.
    let answer: Arc<Mutex<Option<Value>>> = Arc::default();
    let questioned = Arc::new(AtomicBool::new(false));
    let handler: RequestHandler = {
        let (script, asked, root) = (Arc::clone(&script), Arc::clone(&asked), root.clone());
        let (answer, questioned) = (Arc::clone(&answer), Arc::clone(&questioned));
        Arc::new(move |method, _params| {
            if method == "toolhost/askUser" {
                questioned.store(true, Ordering::SeqCst);
                let Some(answer) = answer.lock().ok().and_then(|a| a.clone()) else {
                    return Err((-32603, "no answer was scripted for this step".to_owned()));
                };
                if answer.get("ignore").and_then(Value::as_bool) == Some(true) {
                    return Err((NO_REPLY, String::new()));
                }
                return Ok(answer);
            }
            if method != "toolhost/review" {
                return Err((-32601, format!("unhandled method {method}")));
            }
            asked.store(true, Ordering::SeqCst);
            let Some(script) = script.lock().ok().and_then(|s| s.clone()) else {
                return Err((-32603, "no review was scripted for this step".to_owned()));
            };
            if script.ignore {
                return Err((NO_REPLY, String::new()));
            }
            if let Some(external) = &script.external {
                apply_external(&root, external).map_err(|e| (-32603, e.to_string()))?;
            }
            Ok(script.answer())
        })
    };
    let mut client = Client::spawn(bin, &root, &["--session-dir", &sessions_arg], &[], handler)?;
    client.initialize(
        &root,
        init,
        json!({"experimental": {"toolhost": {"review": true, "askUser": true}}}),
    )?;
    let workspace = root.display().to_string();
    let io =
        |e: crate::scenario::ScenarioError| ClientError::Io(std::io::Error::other(e.to_string()));
    let bless = bless_requested();
    let mut raw = if bless { Some(scenario.raw_steps().map_err(io)?) } else { None };
    let mut problems = Vec::new();
    for (idx, step) in scenario.steps.iter().enumerate() {
        match step {
            Step::External { external } => apply_external(&root, external).map_err(io)?,
            Step::SetReview { set_review } => {
                client.request("toolhost/setReview", set_review.clone())?;
            }
            Step::SetPlanMode { set_plan_mode } => {
                client.request("toolhost/setPlanMode", set_plan_mode.clone())?;
            }
            Step::StructuredOutput { structured_output } => {
                client.request("toolhost/structuredOutput", structured_output.clone())?;
            }
            Step::Tool { tool, args, expect, review, ask_user } => {
                if let Ok(mut slot) = script.lock() {
                    *slot = review.as_deref().cloned();
                }
                if let Ok(mut slot) = answer.lock() {
                    slot.clone_from(ask_user);
                }
                asked.store(false, Ordering::SeqCst);
                questioned.store(false, Ordering::SeqCst);
                let response = client.call_tool(tool, substitute(args, &workspace, None))?;
                if review.as_ref().is_some_and(|r| !r.ignore) && !asked.load(Ordering::SeqCst) {
                    problems
                        .push(format!("step {idx} ({tool}): the scripted review was never asked"));
                }
                let ignored = ask_user.as_ref().and_then(|a| a.get("ignore")).is_some();
                if ask_user.is_some() && !ignored && !questioned.load(Ordering::SeqCst) {
                    problems.push(format!(
                        "step {idx} ({tool}): the scripted question was never asked"
                    ));
                }
                let (result, card) = (&response["result"], &response["card"]);
                if let Some(step) = raw.as_mut().and_then(|r| r.get_mut(idx)) {
                    bless_step(step, result, card, &workspace);
                    continue;
                }
                for p in check_step(expect, result, card, &workspace) {
                    problems.push(format!("step {idx} ({tool}): {p}"));
                }
            }
        }
    }
    let _ = client.shutdown();
    if let Some(raw) = raw {
        scenario.write_raw_steps(&raw).map_err(io)?;
        scenario.bless_after(&root).map_err(io)?;
        return Ok(problems);
    }
    problems.extend(scenario.check_after(&root).map_err(io)?);
    Ok(problems)
}

/// Summary of a run.
pub struct RunSummary {
    pub passed: usize,
    pub failed: Vec<String>,
}

/// Runs every scenario under `dir`. A scenario whose required program is missing fails.
pub fn run_all(bin: &Path, dir: &Path, filter: Option<&str>) -> Result<RunSummary, ClientError> {
    let scenarios = Scenario::load_all(dir)
        .map_err(|e| ClientError::Io(std::io::Error::other(e.to_string())))?;
    let mut summary = RunSummary { passed: 0, failed: Vec::new() };
    for scenario in scenarios.iter().filter(|s| filter.is_none_or(|f| s.name.contains(f))) {
        if let Some(missing) = scenario.requires.iter().find(|p| !program_exists(p)) {
            summary
                .failed
                .push(format!("{}: required program `{missing}` is not installed", scenario.name));
            continue;
        }
        let scratch = scratch_dir();
        let problems = run_scenario(bin, scenario, &scratch);
        let _ = std::fs::remove_dir_all(&scratch);
        match problems {
            Ok(p) if p.is_empty() => summary.passed += 1,
            Ok(p) => summary.failed.push(format!("{}:\n  {}", scenario.name, p.join("\n  "))),
            Err(e) => summary.failed.push(format!("{}: {e}", scenario.name)),
        }
    }
    Ok(summary)
}
