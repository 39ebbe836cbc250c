//! Agents hosted over ACP (docs/acp.md, "Hosting ACP agents"): toolhost as the ACP *client* of
//! another agent — Claude Code through `claude-agent-acp`, Codex through `codex-acp`, Gemini
//! CLI, or any program `[acp.agents.<name>]` names — so a person runs it from the editor and
//! every change it makes is a toolhost card, recorded with its bytes and revertible.
//!
//! A chat is one agent process and one ACP session in it, started on the first prompt (a child
//! like every other, reaped with the rest). What the agent streams becomes the same updates the
//! own agent's chat shows (`text`, `reasoning`, `toolCall`, `toolResult`, `plan`, `usage`); each
//! of its tool calls is an `agent_step` call on the host (`hosted/steps.rs`), which looks at
//! the files the step names before and after it, since these agents write to disk with their
//! own tools. Its permission requests become the person's questions — an edit's proposed diff
//! reviewed hunk by hunk — answered `cancelled` when nobody answers in time; its
//! `fs/read_text_file` sees the editor's unsaved text and its `fs/write_text_file` goes through
//! the host's `write` (`hosted/link.rs`). An agent that died is started again on the next prompt:
//! its session loaded when it can load sessions, else a new session told the conversation so far.

mod link;
mod spec;
mod steps;
mod terminals;

pub use spec::{AgentSpec, KnownAgent, known_agents, resolve};

use link::Link;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use steps::Steps;
use toolhost_contract::CancellationToken;
use toolhost_host::Host;
use toolhost_host::acp_config::AcpSettings;

/// Where a prompt's updates go, in order (`{type: "text", text}`, …; docs/protocol.md,
/// `toolhost/agentUpdate`).
pub type UpdateSink = Arc<dyn Fn(Value) + Send + Sync>;

/// Why a hosted agent could not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostedError {
    /// A stable code: `AGENT_UNKNOWN`, `AGENT_NOT_INSTALLED`, `AGENT_START_FAILED`,
    /// `AGENT_EXITED`, `AGENT_ERROR`, `CHAT_BUSY`.
    pub code: &'static str,
    pub message: String,
}

impl HostedError {
    pub(crate) fn new(code: &'static str, message: impl Into<String>) -> Self {
        HostedError { code, message: message.into() }
    }
}

impl std::fmt::Display for HostedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for HostedError {}

/// One prompt for a hosted agent.
#[derive(Clone, Debug, Default)]
pub struct HostedPrompt {
    /// The agent's name (`claude`, `codex`, `gemini` or a `[acp.agents.<name>]`).
    pub agent: String,
    /// The chat to continue (a new one when unknown or absent).
    pub chat_id: Option<String>,
    pub prompt: String,
    /// The id the turn is recorded under (`agent/run`; a fresh one when absent).
    pub run_id: Option<String>,
}

/// How a prompt ended.
#[derive(Clone, Debug, PartialEq)]
pub struct HostedOutcome {
    pub chat_id: String,
    /// `answered`, `cancelled`, `token-budget`, `turn-limit` or `failed` (a refusal).
    pub stop: &'static str,
    /// What the agent said.
    pub answer: Option<String>,
    /// The agent's token counts for the turn, when it reported them.
    pub usage: Option<Value>,
    /// The agent process had ended and was started again for this prompt.
    pub restarted: bool,
}

/// The agents of one host, by chat.
pub struct HostedAgents {
    host: Arc<Host>,
    settings: AcpSettings,
    chats: Mutex<HashMap<String, Arc<Chat>>>,
}

/// One chat: its agent, its process (when running) and what the next start needs.
pub(crate) struct Chat {
    id: String,
    spec: AgentSpec,
    host: Arc<Host>,
    permission_timeout_ms: u64,
    /// The agent gets toolhost's tools as an MCP server.
    offer_toolhost: bool,
    steps: Arc<Steps>,
    link: tokio::sync::Mutex<Option<Arc<Link>>>,
    /// The agent's session id, for `session/load` after a restart.
    session: Mutex<Option<String>>,
    /// The conversation as text, told to a new session when the old one cannot be loaded.
    transcript: Mutex<Vec<(String, String)>>,
    /// What the agent is told with the next prompt (hunks the person rejected after it wrote).
    notes: Mutex<Vec<String>>,
    /// The running prompt's sink, answer and cancellation.
    turn: Mutex<Option<Turn>>,
    /// A restarted agent is replaying its loaded session: nothing it says now is new.
    replaying: std::sync::atomic::AtomicBool,
    /// The run id of the chat's last turn (the next one continues it).
    last_run: Mutex<Option<String>>,
    /// Told when a turn ended (a prompt after a Stop waits for the stopped turn).
    turn_ended: tokio::sync::Notify,
    /// The agent's terminals (each a `bash` call).
    terminals: terminals::Terminals,
}

/// How long a turn's answer waits for its steps' calls to end.
const STEPS_FINISHING: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a prompt waits for the chat's stopped turn to end.
const STOPPING_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

#[derive(Clone)]
pub(crate) struct Turn {
    sink: UpdateSink,
    answer: Arc<Mutex<String>>,
    cancel: CancellationToken,
}

fn new_chat_id() -> String {
    format!("chat_{:012x}", rand_u48())
}

fn rand_u48() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let counter = {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    };
    (nanos ^ counter.rotate_left(32) ^ u64::from(std::process::id())) & 0xffff_ffff_ffff
}

impl HostedAgents {
    pub fn new(host: Arc<Host>, settings: AcpSettings) -> Arc<Self> {
        Arc::new(HostedAgents { host, settings, chats: Mutex::new(HashMap::new()) })
    }

    /// The agents this host can run: the configured ones and the built-in ones.
    pub fn agents(&self) -> Vec<KnownAgent> {
        known_agents(&self.settings)
    }

    /// Runs `prompt` to the end of the agent's turn; `cancel` is the person's Stop (the agent
    /// is asked to cancel, and the turn ends `cancelled`).
    pub async fn prompt(
        &self,
        prompt: HostedPrompt,
        sink: UpdateSink,
        cancel: CancellationToken,
    ) -> Result<HostedOutcome, HostedError> {
        let chat = self.chat(&prompt)?;
        let deadline = tokio::time::Instant::now() + STOPPING_WAIT;
        loop {
            // Registered before looking, so an end in between is not missed.
            let ended = chat.turn_ended.notified();
            {
                let mut turn = chat.turn.lock().unwrap_or_else(PoisonError::into_inner);
                match turn.as_ref() {
                    None => {
                        *turn = Some(Turn {
                            sink: Arc::clone(&sink),
                            answer: Arc::default(),
                            cancel: cancel.clone(),
                        });
                        break;
                    }
                    // A stopped turn is ending: the next prompt waits for it.
                    Some(running) if running.cancel.is_cancelled() => {}
                    Some(_) => {
                        return Err(HostedError::new(
                            "CHAT_BUSY",
                            format!("chat {} is still answering a prompt", chat.id),
                        ));
                    }
                }
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return Err(HostedError::new(
                    "CHAT_BUSY",
                    format!("chat {} is still stopping its last prompt", chat.id),
                ));
            }
        }
        chat.steps.set_sink(Some(Arc::clone(&sink)));
        let run_id = prompt.run_id.clone().unwrap_or_else(toolhost_host::agent::new_run_id);
        let record = Record { host: &self.host, run_id: &run_id };
        let continues =
            chat.last_run.lock().unwrap_or_else(PoisonError::into_inner).replace(run_id.clone());
        record.start(&chat.spec, continues, &prompt.prompt);
        let outcome = chat.run_turn(&prompt.prompt, &cancel).await;
        chat.steps.end_all();
        chat.steps.finished(STEPS_FINISHING).await;
        record.end(&outcome);
        chat.steps.set_sink(None);
        chat.turn.lock().unwrap_or_else(PoisonError::into_inner).take();
        chat.turn_ended.notify_waiters();
        outcome
    }

    fn chat(&self, prompt: &HostedPrompt) -> Result<Arc<Chat>, HostedError> {
        let mut chats = self.chats.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(id) = prompt.chat_id.as_deref()
            && let Some(chat) = chats.get(id)
        {
            return Ok(Arc::clone(chat));
        }
        let spec = resolve(&self.settings, &prompt.agent)?;
        let id = prompt.chat_id.clone().filter(|c| !c.is_empty()).unwrap_or_else(new_chat_id);
        let steps = Arc::new(Steps::new(Arc::clone(&self.host), spec.title.clone(), id.clone()));
        let chat = Arc::new(Chat {
            id: id.clone(),
            spec,
            host: Arc::clone(&self.host),
            permission_timeout_ms: self.settings.permission_timeout_ms,
            offer_toolhost: self.settings.offer_toolhost,
            steps,
            link: tokio::sync::Mutex::new(None),
            session: Mutex::new(None),
            transcript: Mutex::new(Vec::new()),
            notes: Mutex::new(Vec::new()),
            turn: Mutex::new(None),
            replaying: std::sync::atomic::AtomicBool::new(false),
            last_run: Mutex::new(None),
            turn_ended: tokio::sync::Notify::new(),
            terminals: terminals::Terminals::default(),
        });
        chats.insert(id, Arc::clone(&chat));
        Ok(chat)
    }

    /// Stops every agent process (the editor went away): each gets its stdin closed, then a
    /// signal, and is reaped.
    pub async fn shutdown(&self) {
        let chats: Vec<Arc<Chat>> = self
            .chats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, c)| c)
            .collect();
        for chat in chats {
            if let Some(turn) = chat.turn.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
                turn.cancel.cancel();
            }
            if let Some(link) = chat.link.lock().await.take() {
                link.stop().await;
            }
            chat.release_all_terminals();
        }
    }

    /// The process id of a chat's agent, while it runs (for tests and diagnostics).
    pub async fn agent_pid(&self, chat_id: &str) -> Option<u32> {
        let chat =
            self.chats.lock().unwrap_or_else(PoisonError::into_inner).get(chat_id).cloned()?;
        let link = chat.link.lock().await;
        link.as_ref().filter(|l| !l.gone()).map(|l| l.pid())
    }
}

impl Chat {
    async fn run_turn(
        self: &Arc<Self>,
        prompt: &str,
        cancel: &CancellationToken,
    ) -> Result<HostedOutcome, HostedError> {
        let (link, restarted, session) = self.connect().await?;
        let mut text = String::new();
        let notes: Vec<String> =
            std::mem::take(&mut *self.notes.lock().unwrap_or_else(PoisonError::into_inner));
        if restarted == Restart::Told {
            text.push_str(&self.transcript_text());
        }
        for note in notes {
            text.push_str(&format!("[toolhost] {note}\n\n"));
        }
        text.push_str(prompt);
        self.transcript
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(("User".to_owned(), prompt.to_owned()));
        let response = link.prompt(&session, text, cancel).await;
        let answer = self
            .turn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|t| t.answer.lock().unwrap_or_else(PoisonError::into_inner).clone())
            .unwrap_or_default();
        if !answer.is_empty() {
            self.transcript
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(("Assistant".to_owned(), answer.clone()));
        }
        let response = response?;
        // Token counts come as the agent's `usage_update`s (`context` updates); the turn's own
        // totals are an unstable part of ACP that toolhost does not read yet.
        let usage = None;
        use agent_client_protocol::v1::schema::StopReason;
        let stop = match response.stop_reason {
            StopReason::EndTurn => "answered",
            StopReason::Cancelled => "cancelled",
            StopReason::MaxTokens => "token-budget",
            StopReason::MaxTurnRequests => "turn-limit",
            _ => "failed",
        };
        Ok(HostedOutcome {
            chat_id: self.id.clone(),
            stop,
            answer: (!answer.is_empty()).then_some(answer),
            usage,
            restarted: restarted != Restart::No,
        })
    }

    /// The running link, or a new one: a first start opens a session; a restart loads the
    /// chat's session when the agent can, else opens one that is told the conversation.
    async fn connect(self: &Arc<Self>) -> Result<(Arc<Link>, Restart, String), HostedError> {
        let mut slot = self.link.lock().await;
        if let Some(link) = slot.as_ref()
            && !link.gone()
            && let Some(session) =
                self.session.lock().unwrap_or_else(PoisonError::into_inner).clone()
        {
            return Ok((Arc::clone(link), Restart::No, session));
        }
        if let Some(old) = slot.take() {
            old.stop().await;
            self.release_all_terminals();
        }
        let link = Arc::new(Link::start(self).await?);
        let earlier = self.session.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let (session, restart) = match earlier {
            None => (link.new_session().await?, Restart::No),
            Some(id) if link.can_load() => match self.load(&link, &id).await {
                Ok(()) => (id, Restart::Loaded),
                Err(err) => {
                    tracing::warn!(%err, "the agent could not load its session; a new one is told the conversation");
                    (link.new_session().await?, Restart::Told)
                }
            },
            Some(_) => (link.new_session().await?, Restart::Told),
        };
        *self.session.lock().unwrap_or_else(PoisonError::into_inner) = Some(session.clone());
        *slot = Some(Arc::clone(&link));
        Ok((link, restart, session))
    }

    /// Loads session `id`; what the agent replays of it is not drawn again.
    async fn load(&self, link: &Link, id: &str) -> Result<(), HostedError> {
        use std::sync::atomic::Ordering;
        self.replaying.store(true, Ordering::SeqCst);
        let loaded = link.load_session(id).await;
        self.replaying.store(false, Ordering::SeqCst);
        loaded
    }

    /// Whether the agent is replaying a loaded session.
    pub(crate) fn replaying(&self) -> bool {
        self.replaying.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn transcript_text(&self) -> String {
        let transcript = self.transcript.lock().unwrap_or_else(PoisonError::into_inner);
        if transcript.is_empty() {
            return String::new();
        }
        let mut text =
            String::from("[toolhost] You were restarted; this is the conversation so far:\n");
        for (who, said) in transcript.iter() {
            text.push_str(&format!("{who}: {said}\n"));
        }
        text.push('\n');
        text
    }

    /// The running turn, if any.
    pub(crate) fn turn(&self) -> Option<Turn> {
        self.turn.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Sends an update of the running turn, keeping the answer's text.
    pub(crate) fn send(&self, update: Value) {
        let Some(turn) = self.turn() else { return };
        if update["type"] == "text"
            && let Some(text) = update["text"].as_str()
        {
            turn.answer.lock().unwrap_or_else(PoisonError::into_inner).push_str(text);
        }
        (turn.sink)(update);
    }

    /// Told to the agent with its next prompt.
    pub(crate) fn note(&self, note: String) {
        self.notes.lock().unwrap_or_else(PoisonError::into_inner).push(note);
    }
}

/// A hosted turn's conversation in the session log, in the own agent's records (`agent/run`,
/// the user's and the agent's `agent/message`, `agent/end`), so a replay shows the prompts and
/// answers between the steps' cards.
struct Record<'a> {
    host: &'a Host,
    run_id: &'a str,
}

impl Record<'_> {
    fn put(&self, kind: &str, data: Value) {
        let Some(log) = self.host.session() else { return };
        if let Err(err) = log.enqueue(kind, data, true) {
            tracing::warn!(kind, %err, "cannot record the hosted agent's conversation");
        }
    }

    fn start(&self, spec: &AgentSpec, continues: Option<String>, prompt: &str) {
        use toolhost_agent::log as records;
        let mut run = serde_json::json!({
            "runId": self.run_id,
            "model": format!("acp:{}", spec.name),
            "mode": spec.mode.clone().unwrap_or_else(|| "agent".to_owned()),
        });
        if let Some(continues) = continues {
            run["continues"] = Value::String(continues);
        }
        self.put(records::AGENT_RUN, run);
        self.put(
            records::AGENT_MESSAGE,
            serde_json::json!({"runId": self.run_id, "role": "user", "content": prompt}),
        );
    }

    fn end(&self, outcome: &Result<HostedOutcome, HostedError>) {
        use toolhost_agent::log as records;
        let usage = serde_json::json!({"promptTokens": 0, "completionTokens": 0, "totalTokens": 0});
        let end = match outcome {
            Ok(done) => {
                if let Some(answer) = &done.answer {
                    self.put(
                        records::AGENT_MESSAGE,
                        serde_json::json!({"runId": self.run_id, "role": "assistant", "content": answer}),
                    );
                }
                let mut end = serde_json::json!({
                    "runId": self.run_id, "stop": done.stop, "turns": 1, "usage": usage,
                });
                if let Some(answer) = &done.answer {
                    end["answer"] = Value::String(answer.clone());
                }
                end
            }
            Err(err) => serde_json::json!({
                "runId": self.run_id, "stop": "failed", "turns": 0, "usage": usage,
                "error": err.to_string(),
            }),
        };
        self.put(records::AGENT_END, end);
    }
}

/// How a turn's link came to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Restart {
    /// The running agent (or its first start).
    No,
    /// Started again; its session loaded.
    Loaded,
    /// Started again in a new session, told the conversation.
    Told,
}
