//! Runs every scenario of `editor-clients/conformance` in-process through the real pipeline (the
//! same host the server uses), comparing value, content, meta, card and workspace-after. The
//! harness, Neovim and VS Code runners replay the same folders over the wire. The same scenarios
//! run once more with the workspace in an ssh execution world (`[world] kind = "ssh"`): every
//! file operation, search and command goes through `ssh` to `toolhost exec-server` and must give
//! the same value, content, card and workspace.
#![allow(clippy::unwrap_used)]

#[path = "support/server.rs"]
mod server;

#[path = "support/ssh_host.rs"]
mod ssh_host;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use toolhost_contract::{
    BoxFuture, CancellationToken, QuestionError, QuestionRequest, UserQuestions, answers_of,
};
use toolhost_harness::runner::{SESSION_ID, program_exists};
use toolhost_harness::scenario::{
    ReviewScript, Scenario, Step, apply_external, bless_requested, bless_step, check_step,
    substitute,
};
use toolhost_host::CallRequest;
use toolhost_host::config::{Config, PartialConfig, Sources};
use toolhost_host::review::Reviewer;
use toolhost_host::session::open_session;
use toolhost_protocol::lsp_ext::{Answer, ReviewParams, ReviewResult, SetPlanModeParams};

fn conformance_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../editor-clients/conformance")
}

/// `[world]` for an ssh world serving `root` (the host sees this machine's folders, so the
/// scenario's workspace is the world's root under the same path).
fn ssh_world(host: &ssh_host::SshHost, root: &Path) -> toolhost_host::world_config::WorldSettings {
    toolhost_host::world_config::WorldSettings {
        kind: toolhost_host::world_config::WorldKind::Ssh,
        host: Some(host.target.clone()),
        root: Some(root.to_string_lossy().into_owned()),
        ssh_options: host.ssh_options.clone(),
        program: Some(server::binary().to_string_lossy().into_owned()),
        ..Default::default()
    }
}

async fn run_scenario(scenario: &Scenario, world: Option<&ssh_host::SshHost>) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("workspace");
    std::fs::create_dir(&root).unwrap();
    let root = root.canonicalize().unwrap();
    scenario.prepare(&root).unwrap();
    // A real session, as the server opens one: spills go to its blob store (a read-only root).
    let opened = open_session(&dir.path().join("sessions"), &root, SESSION_ID).unwrap();
    let mut config = Config::default();
    if let Some(overrides) = scenario_config(scenario) {
        config = overrides;
    }
    if let Some(host) = world {
        config.world = ssh_world(host, &root);
    }
    let host = toolhost_host::open_host(&config, &root, Some(&opened)).unwrap();
    if world.is_some() {
        let world = host.workspace().world().expect("the host opened the configured world");
        assert!(world.describe().starts_with("ssh "), "{}", world.describe());
    }
    let workspace = host.root_display().to_owned();
    // The scripted person: answers each step's review question as its script says.
    let reviewer = Arc::new(Scripted {
        root: root.clone(),
        script: Mutex::default(),
        asked: AtomicBool::new(false),
    });
    host.review().set_reviewer(Some(reviewer.clone()));
    let asker =
        Arc::new(ScriptedAnswers { answer: Mutex::default(), asked: AtomicBool::new(false) });
    host.questions().set_asker(Some(asker.clone()));
    // Bless mode (UPDATE_EXPECT=1): expectations are rewritten, not checked.
    let mut raw = bless_requested().then(|| scenario.raw_steps().unwrap());
    let mut problems = Vec::new();
    for (idx, step) in scenario.steps.iter().enumerate() {
        match step {
            Step::External { external } => apply_external(&root, external).unwrap(),
            Step::SetReview { set_review } => {
                let params = serde_json::from_value(set_review.clone()).unwrap();
                host.review().update(&params);
            }
            Step::SetPlanMode { set_plan_mode } => {
                let params: SetPlanModeParams =
                    serde_json::from_value(set_plan_mode.clone()).unwrap();
                host.interaction().set_plan_mode(params.active).await;
            }
            Step::StructuredOutput { structured_output } => {
                let params = serde_json::from_value(structured_output.clone()).unwrap();
                host.interaction().structured(params).await.unwrap();
            }
            Step::Tool { tool, args, expect, review, ask_user } => {
                *reviewer.script.lock().unwrap() = review.as_deref().cloned();
                reviewer.asked.store(false, Ordering::SeqCst);
                asker.answer.lock().unwrap().clone_from(ask_user);
                asker.asked.store(false, Ordering::SeqCst);
                let request = CallRequest::new(tool, substitute(args, &workspace, None))
                    .id(format!("call_{idx}"));
                let outcome = host.run(request).await.unwrap();
                let result = serde_json::to_value(&outcome.finalized.result).unwrap();
                let card = serde_json::to_value(outcome.card()).unwrap();
                if review.as_ref().is_some_and(|r| !r.ignore)
                    && !reviewer.asked.load(Ordering::SeqCst)
                {
                    problems
                        .push(format!("step {idx} ({tool}): the scripted review was never asked"));
                }
                let ignored = ask_user.as_ref().and_then(|a| a.get("ignore")).is_some();
                if ask_user.is_some() && !ignored && !asker.asked.load(Ordering::SeqCst) {
                    problems.push(format!(
                        "step {idx} ({tool}): the scripted question was never asked"
                    ));
                }
                if let Some(step) = raw.as_mut().and_then(|r| r.get_mut(idx)) {
                    bless_step(step, &result, &card, &workspace);
                    continue;
                }
                for p in check_step(expect, &result, &card, &workspace) {
                    problems.push(format!("step {idx} ({tool}): {p}"));
                }
                if let Some(p) = patch_round_trip(tool, &result) {
                    problems.push(format!("step {idx} ({tool}): {p}"));
                }
            }
        }
    }
    host.shutdown().await;
    if let Some(raw) = raw {
        scenario.write_raw_steps(&raw).unwrap();
        scenario.bless_after(&root).unwrap();
        return problems;
    }
    problems.extend(scenario.check_after(&root).unwrap());
    problems
}

/// A person who answers `toolhost/askUser` from the scenario's script.
struct ScriptedAnswers {
    answer: Mutex<Option<Value>>,
    asked: AtomicBool,
}

impl UserQuestions for ScriptedAnswers {
    fn ask(
        &self,
        _request: QuestionRequest,
        stop: CancellationToken,
    ) -> BoxFuture<'_, Result<Vec<Answer>, QuestionError>> {
        Box::pin(async move {
            self.asked.store(true, Ordering::SeqCst);
            let answer = self.answer.lock().unwrap().clone();
            let Some(answer) = answer else {
                return Err(QuestionError::Cancelled("no answer was scripted".to_owned()));
            };
            if answer.get("ignore").is_some() {
                stop.cancelled().await;
                return Err(QuestionError::Cancelled("withdrawn".to_owned()));
            }
            answers_of(serde_json::from_value(answer).unwrap())
        })
    }
}

/// A person who answers review questions from the scenario's script.
struct Scripted {
    root: PathBuf,
    script: Mutex<Option<ReviewScript>>,
    asked: AtomicBool,
}

impl Reviewer for Scripted {
    fn review(
        &self,
        _params: ReviewParams,
        stop: CancellationToken,
    ) -> BoxFuture<'_, Result<ReviewResult, String>> {
        Box::pin(async move {
            self.asked.store(true, Ordering::SeqCst);
            let script = self.script.lock().unwrap().clone();
            let Some(script) = script else { return Err("no review was scripted".to_owned()) };
            if script.ignore {
                stop.cancelled().await;
                return Err("withdrawn".to_owned());
            }
            if let Some(external) = &script.external {
                apply_external(&self.root, external).unwrap();
            }
            Ok(serde_json::from_value(script.answer()).unwrap())
        })
    }
}

/// For write/edit successes with a diff basis: applying `meta.patch` to `value.before` with diffy
/// must give `value.after` byte for byte.
fn patch_round_trip(tool: &str, result: &Value) -> Option<String> {
    if !(tool == "write" || tool == "edit") || result["isError"] != Value::Bool(false) {
        return None;
    }
    let before = result["value"]["before"].as_str()?;
    let after = result["value"]["after"].as_str().unwrap_or_default();
    let Some(patch_text) = result["meta"]["patch"].as_str() else {
        return (before != after)
            .then(|| "meta.patch is missing although before != after".to_owned());
    };
    let patch = match diffy::Patch::from_str(patch_text) {
        Ok(patch) => patch,
        Err(e) => return Some(format!("meta.patch does not parse: {e}")),
    };
    match diffy::apply(before, &patch) {
        Ok(applied) if applied == after => None,
        Ok(applied) => {
            Some(format!("meta.patch applied to before gives {applied:?}, expected {after:?}"))
        }
        Err(e) => Some(format!("meta.patch does not apply to before: {e}")),
    }
}

/// Optional `config.json` beside `steps.json`: limit overrides (snake_case TOML keys) for
/// scenarios that exercise caps.
fn scenario_config(scenario: &Scenario) -> Option<Config> {
    let text = std::fs::read_to_string(scenario.dir.join("config.json")).ok()?;
    let value: Value = serde_json::from_str(&text).unwrap();
    let partial = PartialConfig::from_json("config.json", &value).unwrap();
    Some(Sources { flags: Some(partial), ..Default::default() }.resolve(Path::new("/")))
}

/// Runs every scenario (in `world` when given) and fails listing those that did not pass;
/// `label` names the run in its summary line.
async fn every_scenario_passes(world: Option<&ssh_host::SshHost>, label: &str) {
    let scenarios = Scenario::load_all(&conformance_dir()).unwrap();
    assert!(!scenarios.is_empty(), "no scenarios found");
    let (mut passed, mut failed) = (0, Vec::new());
    for scenario in &scenarios {
        if let Some(missing) = scenario.requires.iter().find(|p| !program_exists(p)) {
            failed
                .push(format!("{}: required program `{missing}` is not installed", scenario.name));
            continue;
        }
        let problems = run_scenario(scenario, world).await;
        if problems.is_empty() {
            passed += 1;
        } else {
            failed.push(format!("{}:\n  {}", scenario.name, problems.join("\n  ")));
        }
    }
    println!("conformance ({label}): {passed} passed, {} failed", failed.len());
    assert!(failed.is_empty(), "failing scenarios ({label}):\n{}", failed.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_conformance_scenario_passes_in_process() {
    every_scenario_passes(None, "in-process").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_conformance_scenario_passes_in_an_ssh_world() {
    let empty = tempfile::tempdir().unwrap();
    let host = ssh_host::SshHost::start(empty.path());
    every_scenario_passes(Some(&host), "ssh world").await;
}
