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
mod options;
mod spec;
mod steps;
mod terminals;

pub use spec::{AgentSpec, KnownAgent, known_agents, resolve};

use link::Link;
use options::Offered;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use steps::Steps;
use toolhost_contract::CancellationToken;
use toolhost_host::Host;
use toolhost_host::acp_config::AcpSettings;
use toolhost_protocol::lsp_ext::AgentOption;
use toolhost_protocol::session_log::{
    AgentEndEvent, AgentMessageEvent, AgentRunEvent, AgentTokens,
};

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
    /// The chat to continue (a new one when unknown).
    pub chat_id: String,
    /// The editor named the chat (it may be one an earlier server ran, found in the log); a
    /// chat the server just named is new, and the log is not read for it.
    pub named_by_editor: bool,
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
    pub usage: Option<AgentTokens>,
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
    /// The settings the agent offers for its session and what the person chose.
    offered: Mutex<Offered>,
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
        let chat = self.chat(&prompt.agent, &prompt.chat_id, prompt.named_by_editor).await?;
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
        chat.steps.begin_turn().await;
        let run_id = prompt.run_id.clone().unwrap_or_else(toolhost_host::agent::new_run_id);
        let record = Record { host: &self.host, run_id: &run_id };
        let continues =
            chat.last_run.lock().unwrap_or_else(PoisonError::into_inner).replace(run_id.clone());
        // Connected first, so the turn's record names the agent's session (a later server
        // loads it to continue this chat).
        let connected = chat.connect().await;
        let session = connected.as_ref().ok().map(|(_, _, session)| session.clone());
        record.start(&chat, continues, &prompt.prompt, session);
        let outcome = match connected {
            Ok(connected) => chat.run_turn(connected, &prompt.prompt, &cancel).await,
            Err(err) => Err(err),
        };
        chat.steps.end_all();
        chat.steps.finished(STEPS_FINISHING).await;
        record.end(&outcome);
        chat.steps.set_sink(None);
        chat.turn.lock().unwrap_or_else(PoisonError::into_inner).take();
        chat.turn_ended.notify_waiters();
        outcome
    }

    /// Chat `id`, or a new chat of `agent` under that id — continuing what the session's log
    /// knows of it (an earlier server ran it): its agent's session, loaded when the agent
    /// starts, and the conversation, told to a new session when it cannot be loaded.
    async fn chat(&self, agent: &str, id: &str, named: bool) -> Result<Arc<Chat>, HostedError> {
        if let Some(chat) = self.chats.lock().unwrap_or_else(PoisonError::into_inner).get(id) {
            return Ok(Arc::clone(chat));
        }
        let log = self.host.session().filter(|_| named);
        let earlier = match log {
            Some(log) => {
                let path = log.log_path().to_path_buf();
                let id = id.to_owned();
                tokio::task::spawn_blocking(move || earlier_chat(&path, &id)).await.ok().flatten()
            }
            None => None,
        };
        let mut chats = self.chats.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(chat) = chats.get(id) {
            return Ok(Arc::clone(chat));
        }
        let agent = earlier.as_ref().map_or(agent, |e| e.agent.as_str());
        let spec = resolve(&self.settings, agent)?;
        let id = id.to_owned();
        let steps = Arc::new(Steps::new(Arc::clone(&self.host), spec.title.clone(), id.clone()));
        let chat = Arc::new(Chat {
            id: id.clone(),
            spec,
            host: Arc::clone(&self.host),
            permission_timeout_ms: self.settings.permission_timeout_ms,
            offer_toolhost: self.settings.offer_toolhost,
            steps,
            link: tokio::sync::Mutex::new(None),
            session: Mutex::new(earlier.as_ref().and_then(|e| e.session.clone())),
            offered: Mutex::new(Offered::default()),
            transcript: Mutex::new(
                earlier.as_ref().map(|e| e.transcript.clone()).unwrap_or_default(),
            ),
            notes: Mutex::new(Vec::new()),
            turn: Mutex::new(None),
            replaying: std::sync::atomic::AtomicBool::new(false),
            last_run: Mutex::new(earlier.and_then(|e| e.last_run)),
            turn_ended: tokio::sync::Notify::new(),
            terminals: terminals::Terminals::default(),
        });
        chats.insert(id, Arc::clone(&chat));
        Ok(chat)
    }

    /// The settings chat `chat_id` offers (a new chat of `agent` is started for it: its agent
    /// running, its session open); `named`: the editor named the chat (see [`HostedPrompt`]).
    pub async fn options(
        &self,
        agent: &str,
        chat_id: &str,
        named: bool,
    ) -> Result<Vec<AgentOption>, HostedError> {
        let chat = self.chat(agent, chat_id, named).await?;
        chat.connect().await?;
        Ok(chat.offered().list())
    }

    /// Sets `option` of chat `chat_id` to `value` (kept for the chat's next agent, should this
    /// one end) and answers every setting as it is now.
    pub async fn set_option(
        &self,
        chat_id: &str,
        option: &str,
        value: Value,
    ) -> Result<Vec<AgentOption>, HostedError> {
        let chat = self.chats.lock().unwrap_or_else(PoisonError::into_inner).get(chat_id).cloned();
        let chat = chat.ok_or_else(|| {
            HostedError::new("CHAT_UNKNOWN", format!("no hosted agent's chat {chat_id} is open"))
        })?;
        let (link, _, session) = chat.connect().await?;
        let setting = chat.offered().setting(option, &value)?;
        link.set(&chat, &session, setting).await?;
        chat.offered().chose(option, value);
        Ok(chat.offered().list())
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
            self.host.agent_steps().end_chat(&chat.id);
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
        (link, restarted, session): (Arc<Link>, Restart, String),
        prompt: &str,
        cancel: &CancellationToken,
    ) -> Result<HostedOutcome, HostedError> {
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
        // The turn's totals (an unstable part of ACP that Claude Code sends); the context's
        // size came as the agent's `usage_update`s (`context` updates).
        let usage = response.usage.as_ref().map(|usage| AgentTokens {
            prompt_tokens: usage.input_tokens,
            completion_tokens: usage.output_tokens,
            total_tokens: usage.total_tokens,
            cached_tokens: usage.cached_read_tokens.unwrap_or(0),
        });
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
            None => (link.new_session(self).await?, Restart::No),
            Some(id) if link.can_load() => match self.load(&link, &id).await {
                Ok(()) => (id, Restart::Loaded),
                Err(err) => {
                    tracing::warn!(%err, "the agent could not load its session; a new one is told the conversation");
                    (link.new_session(self).await?, Restart::Told)
                }
            },
            Some(_) => (link.new_session(self).await?, Restart::Told),
        };
        // What the person chose before the agent was started again.
        let chosen = self.offered().chosen();
        for (id, value) in chosen {
            let setting = self.offered().setting(&id, &value);
            let set = match setting {
                Ok(setting) => link.set(self, &session, setting).await,
                Err(err) => Err(err),
            };
            if let Err(err) = set {
                tracing::warn!(%err, option = id, "a chosen setting was not taken again");
            }
        }
        *self.session.lock().unwrap_or_else(PoisonError::into_inner) = Some(session.clone());
        *slot = Some(Arc::clone(&link));
        Ok((link, restart, session))
    }

    /// Loads session `id`; what the agent replays of it is not drawn again.
    async fn load(&self, link: &Link, id: &str) -> Result<(), HostedError> {
        use std::sync::atomic::Ordering;
        self.replaying.store(true, Ordering::SeqCst);
        let loaded = link.load_session(self, id).await;
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

    /// The settings the agent offers.
    pub(crate) fn offered(&self) -> std::sync::MutexGuard<'_, Offered> {
        self.offered.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells the running turn the agent's settings changed.
    pub(crate) fn send_options(&self) {
        let options = self.offered().list();
        self.send(serde_json::json!({"type": "options", "options": options}));
    }

    /// Told to the agent with its next prompt.
    pub(crate) fn note(&self, note: String) {
        self.notes.lock().unwrap_or_else(PoisonError::into_inner).push(note);
    }
}

/// What the session's log knows of a hosted chat an earlier server ran.
struct EarlierChat {
    agent: String,
    /// The agent's last session.
    session: Option<String>,
    /// Who said what, in order.
    transcript: Vec<(String, String)>,
    last_run: Option<String>,
}

/// Chat `id` in the log at `path`: its turns' `agent/run` records (`chatId`) and their messages.
fn earlier_chat(path: &std::path::Path, id: &str) -> Option<EarlierChat> {
    use toolhost_agent::log as records;
    let records = match toolhost_host::agent::records_from_log(path) {
        Ok(records) => records,
        Err(err) => {
            tracing::warn!(%err, "cannot read the session log to continue chat {id}");
            return None;
        }
    };
    let mut found: Option<EarlierChat> = None;
    let mut runs: Vec<String> = Vec::new();
    for (kind, data) in &records {
        if kind == records::AGENT_RUN
            && let Ok(run) = serde_json::from_value::<AgentRunEvent>(data.clone())
            && run.chat_id.as_deref() == Some(id)
            && let Some(agent) = run.model.strip_prefix("acp:")
        {
            let chat = found.get_or_insert_with(|| EarlierChat {
                agent: agent.to_owned(),
                session: None,
                transcript: Vec::new(),
                last_run: None,
            });
            if run.agent_session.is_some() {
                chat.session = run.agent_session;
            }
            chat.last_run = Some(run.run_id.clone());
            runs.push(run.run_id);
        } else if kind == records::AGENT_MESSAGE
            && let Ok(message) = serde_json::from_value::<AgentMessageEvent>(data.clone())
            && runs.contains(&message.run_id)
            && let (Some(chat), Some(content)) = (found.as_mut(), message.content)
        {
            let who = if message.role == "user" { "User" } else { "Assistant" };
            chat.transcript.push((who.to_owned(), content));
        }
    }
    found
}

/// A hosted turn's conversation in the session log, in the own agent's records (`agent/run`,
/// the user's and the agent's `agent/message`, `agent/end`), so a replay shows the prompts and
/// answers between the steps' cards.
struct Record<'a> {
    host: &'a Host,
    run_id: &'a str,
}

impl Record<'_> {
    fn put(&self, kind: &str, event: &impl serde::Serialize) {
        let Some(log) = self.host.session() else { return };
        let data = match serde_json::to_value(event) {
            Ok(data) => data,
            Err(err) => {
                tracing::warn!(kind, %err, "cannot encode the hosted agent's record");
                return;
            }
        };
        if let Err(err) = log.enqueue(kind, data, true) {
            tracing::warn!(kind, %err, "cannot record the hosted agent's conversation");
        }
    }

    fn message(&self, role: &str, content: &str) -> AgentMessageEvent {
        AgentMessageEvent {
            run_id: self.run_id.to_owned(),
            role: role.to_owned(),
            content: Some(content.to_owned()),
            reasoning: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            call_id: None,
        }
    }

    fn start(&self, chat: &Chat, continues: Option<String>, prompt: &str, session: Option<String>) {
        use toolhost_agent::log as records;
        let spec = &chat.spec;
        let run = AgentRunEvent {
            run_id: self.run_id.to_owned(),
            model: format!("acp:{}", spec.name),
            mode: spec.mode.clone().unwrap_or_else(|| "agent".to_owned()),
            continues,
            parent_call_id: None,
            chat_id: Some(chat.id.clone()),
            agent_session: session,
        };
        self.put(records::AGENT_RUN, &run);
        self.put(records::AGENT_MESSAGE, &self.message("user", prompt));
    }

    fn end(&self, outcome: &Result<HostedOutcome, HostedError>) {
        use toolhost_agent::log as records;
        let end = match outcome {
            Ok(done) => {
                if let Some(answer) = &done.answer {
                    self.put(records::AGENT_MESSAGE, &self.message("assistant", answer));
                }
                AgentEndEvent {
                    run_id: self.run_id.to_owned(),
                    stop: done.stop.to_owned(),
                    turns: 1,
                    usage: done.usage.clone().unwrap_or_default(),
                    cost: None,
                    answer: done.answer.clone(),
                    structured: None,
                    error: None,
                }
            }
            Err(err) => AgentEndEvent {
                run_id: self.run_id.to_owned(),
                stop: "failed".to_owned(),
                turns: 0,
                usage: AgentTokens::default(),
                cost: None,
                answer: None,
                structured: None,
                error: Some(err.to_string()),
            },
        };
        self.put(records::AGENT_END, &end);
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
