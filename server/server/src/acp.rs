//! `toolhost acp`: toolhost's own agent as an Agent Client Protocol agent over stdio, for Zed,
//! JetBrains, Neovim and Emacs clients (docs/acp.md).
//!
//! One ACP session is one toolhost session: its own host, session log and chat. A prompt runs the
//! agent as `toolhost agent` does — every call through the whole pipeline, recorded in the log —
//! and streams what happens as `session/update`s: the model's text and reasoning, each call as a
//! tool call built from its cards (updates.rs), the todo list as the plan, context use. `ask`
//! mode asks the client (`session/request_permission`, showing the call's diff); when the client
//! offers its file system, reads see its unsaved buffers and writes go through it (client.rs).
//! `session/load` replays a session's log: the cards and the conversation as updates, and the
//! chat continues where it stopped.
//!
//! The SDK runs each incoming message's handler inside its dispatch loop, so a handler that
//! waited for the client would wait on itself: handlers only start tasks (opening a session,
//! running a prompt) and those answer through their responder. stdout belongs to the protocol;
//! the server's log goes to stderr or `TOOLHOST_LOG_FILE`.

use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, CurrentModeUpdate, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, McpServer, NewSessionRequest, NewSessionResponse,
    PromptRequest, PromptResponse, SessionUpdate, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{self as acp, Agent, Client, Stdio};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use toolhost_acp::client::{AcpAsker, AcpFiles, ClientLine};
use toolhost_acp::follow::CallFollower;
use toolhost_acp::replies::{self, error, internal, invalid_params, mode_state, unknown_session};
use toolhost_acp::session_inputs::{add_client_mcp_servers, prompt_text};
use toolhost_acp::updates;
use toolhost_agent::agent::AgentEvent;
use toolhost_agent::model::{Message, StreamEvent};
use toolhost_agent::settings::{CALLER, DEFAULT_CONTEXT_LIMIT};
use toolhost_agent::{AgentSettings, PermissionMode};
use toolhost_contract::CancellationToken;
use toolhost_host::agent::{self as own_agent, RunRequest, RunUpdate, SharedMode};
use toolhost_host::session::{self, OpenedSession};
use toolhost_host::{Host, open_host};

/// What `toolhost acp` is started with.
#[derive(Debug, Default)]
pub struct AcpOptions {
    /// Where session logs live (default: the state directory).
    pub session_dir: Option<PathBuf>,
}

/// The chat a session continues: the conversation so far and the run that last added to it.
#[derive(Default)]
struct Chat {
    last_run: Option<String>,
    messages: Vec<Message>,
}

/// One ACP session.
struct AcpSession {
    host: Arc<Host>,
    opened: OpenedSession,
    settings: AgentSettings,
    mode: SharedMode,
    /// The mode the client was last told.
    announced: Mutex<PermissionMode>,
    line: Arc<ClientLine>,
    chat: Mutex<Chat>,
    /// The running prompt's cancellation (one prompt at a time).
    running: Mutex<Option<CancellationToken>>,
    /// Summed over the session, when `[agent.price]` is set.
    cost: Mutex<Option<f64>>,
    /// The run's calls as tool calls.
    calls: CallFollower,
}

/// What the client said it offers in `initialize`.
#[derive(Clone, Copy, Default)]
struct ClientOffers {
    /// Both `fs/read_text_file` and `fs/write_text_file`.
    files: bool,
    /// Form elicitations (`elicitation/create` with `mode: form`).
    forms: bool,
}

/// The agent: the client's capabilities and the open sessions.
#[derive(Default)]
struct AcpAgent {
    options: AcpOptions,
    /// What the client offers beyond the basics.
    offers: Mutex<ClientOffers>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
}

/// Runs the agent on stdio until the client closes it; then every session is closed properly.
pub async fn serve(options: AcpOptions) -> Result<(), String> {
    let agent = Arc::new(AcpAgent { options, ..AcpAgent::default() });
    let (a1, a2, a3, a4, a5, a6) =
        (agent.clone(), agent.clone(), agent.clone(), agent.clone(), agent.clone(), agent.clone());
    let served = Agent
        .v1()
        .name("toolhost")
        .on_receive_request(
            async move |req: InitializeRequest, r: Responder<InitializeResponse>, _cx| {
                let caps = &req.client_capabilities;
                *a1.offers.lock().unwrap_or_else(PoisonError::into_inner) = ClientOffers {
                    files: caps.fs.read_text_file && caps.fs.write_text_file,
                    forms: caps.elicitation.as_ref().is_some_and(|e| e.supports_form()),
                };
                r.respond(replies::initialize(env!("CARGO_PKG_VERSION")))
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest,
                        r: Responder<NewSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let agent = a2.clone();
                tokio::spawn(async move {
                    let result =
                        agent.open(&req.cwd, None, &req.mcp_servers, cx).await.map(|(id, s)| {
                            NewSessionResponse::new(id).modes(mode_state(s.current_mode()))
                        });
                    if let Err(err) = r.respond_with_result(result) {
                        tracing::warn!(%err, "session/new: the answer was lost");
                    }
                });
                Ok(())
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest,
                        r: Responder<LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let agent = a3.clone();
                tokio::spawn(async move {
                    let result = agent.load(req, cx).await;
                    if let Err(err) = r.respond_with_result(result) {
                        tracing::warn!(%err, "session/load: the answer was lost");
                    }
                });
                Ok(())
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, r: Responder<PromptResponse>, _cx| {
                let Some(session) = a4.session(&req.session_id.0) else {
                    return r.respond_with_error(unknown_session(&req.session_id.0));
                };
                tokio::spawn(async move {
                    let result = session.prompt(req.prompt).await;
                    if let Err(err) = r.respond_with_result(result) {
                        tracing::warn!(%err, "session/prompt: the answer was lost");
                    }
                });
                Ok(())
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest, r: Responder<SetSessionModeResponse>, _cx| {
                let Some(session) = a5.session(&req.session_id.0) else {
                    return r.respond_with_error(unknown_session(&req.session_id.0));
                };
                let Some(mode) = PermissionMode::parse(&req.mode_id.0) else {
                    return r.respond_with_error(invalid_params(format!(
                        "unknown mode {:?} (ask, accept-edits, plan or auto)",
                        req.mode_id.0
                    )));
                };
                tokio::spawn(async move {
                    session.set_mode(mode).await;
                    if let Err(err) = r.respond(SetSessionModeResponse::new()) {
                        tracing::warn!(%err, "session/set_mode: the answer was lost");
                    }
                });
                Ok(())
            },
            acp::on_receive_request!(),
        )
        .on_receive_notification(
            async move |note: CancelNotification, _cx: ConnectionTo<Client>| {
                if let Some(session) = a6.session(&note.session_id.0) {
                    session.cancel();
                }
                Ok(())
            },
            acp::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await;
    agent.close().await;
    served.map_err(|e| format!("the ACP connection failed: {e}"))
}

impl AcpAgent {
    fn session(&self, id: &str) -> Option<Arc<AcpSession>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    /// Opens session `id` of the workspace at `cwd` (a new one when `None`) with its host.
    async fn open(
        &self,
        cwd: &Path,
        id: Option<&str>,
        mcp_servers: &[McpServer],
        cx: ConnectionTo<Client>,
    ) -> Result<(String, Arc<AcpSession>), acp::Error> {
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(invalid_params(format!(
                "cwd must be an absolute path to a folder: {}",
                cwd.display()
            )));
        }
        let mut config = toolhost_host::load_config(cwd).map_err(|e| internal(e.to_string()))?;
        for warning in &config.warnings {
            tracing::warn!("{warning}");
        }
        add_client_mcp_servers(&mut config.mcp_servers, mcp_servers);
        let sessions = config
            .sessions_dir(self.options.session_dir.as_deref())
            .map_err(|e| internal(e.to_string()))?;
        if let Some(id) = id
            && !session::list(&sessions, cwd, false).sessions.iter().any(|row| row.id == id)
        {
            return Err(invalid_params(format!(
                "no session {id} for the workspace {}",
                cwd.display()
            )));
        }
        let (sessions_dir, root, which) =
            (sessions.clone(), cwd.to_path_buf(), id.map(str::to_owned));
        let (id, opened) = tokio::task::spawn_blocking(move || {
            session::open_named(&sessions_dir, &root, which.as_deref())
        })
        .await
        .map_err(|e| internal(e.to_string()))?
        .map_err(|e| internal(e.to_string()))?;
        let host = open_host(&config, cwd, Some(&opened)).map_err(|e| internal(e.to_string()))?;
        #[cfg(feature = "test-tools")]
        crate::test_tools::install(&host);
        let offers = *self.offers.lock().unwrap_or_else(PoisonError::into_inner);
        let line = Arc::new(ClientLine {
            cx,
            session_id: id.clone().into(),
            root: host.root_display().to_owned(),
            pending: Mutex::new(HashMap::new()),
            announced: Mutex::new(HashMap::new()),
            always: Mutex::new(HashSet::new()),
            forms: offers.forms,
        });
        host.questions().set_asker(Some(Arc::new(AcpAsker(Arc::clone(&line)))));
        if offers.files {
            host.workspace().set_text_backend(Some(Arc::new(AcpFiles(Arc::clone(&line)))));
        }
        host.start_mcp_servers();
        // The first prompt offers every server's tools (and the list stays the same afterwards,
        // which prompt caching depends on).
        if let Err(err) = host.mcp_ready().await {
            tracing::warn!(%err, "an MCP server did not start");
        }
        let settings = config.agent.clone();
        let mode =
            if host.interaction().plan_active() { PermissionMode::Plan } else { settings.mode };
        let calls = CallFollower::new(Arc::clone(&host), Arc::clone(&line));
        let session = Arc::new(AcpSession {
            calls,
            opened,
            settings,
            mode: Arc::new(Mutex::new(mode)),
            announced: Mutex::new(mode),
            line,
            chat: Mutex::new(Chat::default()),
            running: Mutex::new(None),
            cost: Mutex::new(None),
            host,
        });
        let replaced = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), Arc::clone(&session));
        if let Some(old) = replaced {
            old.close().await;
        }
        Ok((id, session))
    }

    /// `session/load`: opens the session, replays its log to the client and continues its chat.
    async fn load(
        &self,
        req: LoadSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<LoadSessionResponse, acp::Error> {
        // A session this connection has open is closed first: its log is held while open.
        let open =
            self.sessions.lock().unwrap_or_else(PoisonError::into_inner).remove(&*req.session_id.0);
        if let Some(open) = open {
            open.close().await;
        }
        let (_, session) =
            self.open(&req.cwd, Some(&req.session_id.0), &req.mcp_servers, cx).await?;
        let log = session.opened.log.log_path().to_path_buf();
        let host = Arc::clone(&session.host);
        let size = session.context_size();
        let root = session.line.root.clone();
        let (updates, last_run) = tokio::task::spawn_blocking(move || {
            let (calls, records) = session::replay_with_conversation(host.registry(), &log)?;
            let cards: Vec<_> = calls.into_iter().map(|c| c.card).collect();
            let last_run = records
                .iter()
                .filter(|r| r.kind == "agent/run")
                .filter(|r| r.data.get("parentCallId").is_none_or(serde_json::Value::is_null))
                .rev()
                .find_map(|r| r.data.get("runId").and_then(|v| v.as_str()).map(str::to_owned));
            let updates = updates::replay(&root, &cards, &records, size);
            let logged: Vec<(&str, &serde_json::Value)> =
                records.iter().map(|r| (r.kind.as_str(), &r.data)).collect();
            let chat = last_run
                .and_then(|run| own_agent::conversation_in(&logged, &run).map(|m| (run, m)));
            Ok::<_, toolhost_session::SessionError>((updates, chat))
        })
        .await
        .map_err(|e| internal(e.to_string()))?
        .map_err(|e| internal(format!("cannot replay the session: {e}")))?;
        for update in updates {
            session.line.send(update);
        }
        if let Some((run, messages)) = last_run {
            let mut chat = session.chat.lock().unwrap_or_else(PoisonError::into_inner);
            chat.last_run = Some(run);
            chat.messages = messages;
        }
        Ok(LoadSessionResponse::new().modes(mode_state(session.current_mode())))
    }

    /// The client went away: stop what runs, then close every session (its log flushed).
    async fn close(&self) {
        let sessions: Vec<_> = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, s)| s)
            .collect();
        for session in sessions {
            session.close().await;
        }
    }
}

/// Clears a session's running prompt however the prompt ends.
struct Running<'a>(&'a Mutex<Option<CancellationToken>>);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl AcpSession {
    fn current_mode(&self) -> PermissionMode {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn context_size(&self) -> u64 {
        self.settings.context_limit.unwrap_or(DEFAULT_CONTEXT_LIMIT)
    }

    fn cancel(&self) {
        if let Some(token) = self.running.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            token.cancel();
        }
    }

    /// Tells the client when the mode changed without it asking (an approved plan).
    fn announce_mode(&self) {
        let current = self.current_mode();
        let mut announced = self.announced.lock().unwrap_or_else(PoisonError::into_inner);
        if *announced != current {
            *announced = current;
            self.line
                .send(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(current.as_str())));
        }
    }

    async fn set_mode(&self, mode: PermissionMode) {
        let before = {
            let mut current = self.mode.lock().unwrap_or_else(PoisonError::into_inner);
            std::mem::replace(&mut *current, mode)
        };
        *self.announced.lock().unwrap_or_else(PoisonError::into_inner) = mode;
        let interaction = self.host.interaction();
        if mode == PermissionMode::Plan && !interaction.plan_active() {
            interaction.set_plan_mode(Some(true)).await;
        } else if before == PermissionMode::Plan && mode != PermissionMode::Plan {
            interaction.set_plan_mode(Some(false)).await;
        }
    }

    /// `session/prompt`: one run of the agent, continuing the session's chat.
    async fn prompt(
        self: &Arc<Self>,
        blocks: Vec<ContentBlock>,
    ) -> Result<PromptResponse, acp::Error> {
        let text = prompt_text(&blocks);
        if text.trim().is_empty() {
            return Err(invalid_params("the prompt is empty"));
        }
        let cancel = CancellationToken::new();
        {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            if running.is_some() {
                return Err(error(
                    acp::ErrorCode::INVALID_REQUEST,
                    "Invalid request",
                    "the session is still answering a prompt",
                ));
            }
            *running = Some(cancel.clone());
        }
        let _running = Running(&self.running);
        let history = {
            let chat = self.chat.lock().unwrap_or_else(PoisonError::into_inner);
            chat.last_run.clone().map(|run| (run, chat.messages.clone()))
        };
        let mut settings = self.settings.clone();
        settings.mode = self.current_mode();
        let size = self.context_size();
        let price = settings.price;
        let events = Arc::clone(self);
        let mut on_event = move |event: &AgentEvent| match event {
            AgentEvent::Model(StreamEvent::Text(text)) => {
                events.line.send(updates::agent_text(text))
            }
            AgentEvent::Model(StreamEvent::Reasoning(text)) => {
                events.line.send(updates::agent_thought(text))
            }
            AgentEvent::Usage(usage) => {
                let cost = price.map(|p| {
                    let mut total = events.cost.lock().unwrap_or_else(PoisonError::into_inner);
                    let sum = total.unwrap_or(0.0) + p.cost(usage);
                    *total = Some(sum);
                    sum
                });
                events.line.send(updates::usage(
                    usage.prompt_tokens + usage.completion_tokens,
                    size,
                    cost,
                ));
            }
            AgentEvent::Compacted(compaction) => {
                let cost = *events.cost.lock().unwrap_or_else(PoisonError::into_inner);
                events.line.send(updates::usage(compaction.tokens_after, size, cost));
            }
            _ => {}
        };
        let calls = Arc::clone(self);
        let on_update = move |update: RunUpdate| {
            calls.calls.update(update);
            calls.announce_mode();
        };
        let request = RunRequest {
            settings,
            prompt: text,
            history,
            caller: CALLER.to_owned(),
            run_id: None,
            parent: None,
            mode: Some(Arc::clone(&self.mode)),
            presentation: None,
        };
        let report = own_agent::run(&self.host, request, &cancel, &mut on_event, on_update).await;
        let outcome = match report.outcome {
            Ok(outcome) => outcome,
            Err(err) => {
                return Err(internal(format!("{}: {err}", err.code())));
            }
        };
        {
            let mut chat = self.chat.lock().unwrap_or_else(PoisonError::into_inner);
            chat.messages = outcome.messages;
            chat.last_run = Some(report.run_id);
        }
        Ok(PromptResponse::new(replies::stop_reason(outcome.stop)))
    }

    /// Stops the running prompt, waits briefly for it, and closes the host and the log.
    async fn close(&self) {
        self.cancel();
        for _ in 0..30 {
            if self.running.lock().unwrap_or_else(PoisonError::into_inner).is_none() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        self.host.shutdown().await;
        if let Err(err) = self.opened.log.flush().await {
            tracing::warn!(%err, "cannot flush the session log");
        }
    }
}
