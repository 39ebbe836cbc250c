//! The connection to one hosted agent's process: started as a child of toolhost's (its own
//! group, reaped like every child), spoken to as an ACP client over its stdio, and what it asks
//! of toolhost answered — its session updates drawn, its permission requests put to the person
//! (an edit's proposed diff reviewed hunk by hunk, `cancelled` once nobody answered in time),
//! its file reads given the editor's text and its file writes made through the host's `write`.
//!
//! Handlers run inside the connection's dispatch loop: anything that waits (the person, the
//! host) runs on a task of its own and answers through its responder.

use super::options::Setting;
use super::{Chat, HostedError};
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, CreateTerminalRequest,
    CreateTerminalResponse, EnvVariable, FileSystemCapabilities, Implementation, InitializeRequest,
    KillTerminalRequest, KillTerminalResponse, LoadSessionRequest, McpServer, McpServerStdio,
    NewSessionRequest, PermissionOption, PermissionOptionKind, PromptRequest, PromptResponse,
    ReadTextFileRequest, ReadTextFileResponse, ReleaseTerminalRequest, ReleaseTerminalResponse,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionModeRequest, TerminalOutputRequest, TerminalOutputResponse, TextContent,
    ToolCallContent, WaitForTerminalExitRequest, WaitForTerminalExitResponse, WriteTextFileRequest,
    WriteTextFileResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{self as acp, Agent, Client, Lines};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;
use toolhost_contract::{
    CancellationToken, ReviewGate, ReviewRequest, ReviewVerdict, UserQuestions,
};
use toolhost_host::CallRequest;
use toolhost_host::agent_steps::{Change, StepEvent};
use toolhost_protocol::card::parse_patch;
use toolhost_protocol::lsp_ext::{Question, QuestionIntent, QuestionOption};

/// How long a cancelled turn may take to end before the agent is taken for dead.
const CANCEL_GRACE: Duration = Duration::from_secs(10);
/// How long the agent has to start and answer `initialize` and `session/new`.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A running agent process and the ACP connection to it.
pub(crate) struct Link {
    cx: ConnectionTo<Agent>,
    group: toolhost_process::GroupHandle,
    pid: u32,
    /// Cancelled when the connection ended (the agent exited or broke the protocol).
    ended: CancellationToken,
    /// Ends the connection's foreground (closing the agent's stdin).
    stop: std::sync::Mutex<Option<oneshot::Sender<()>>>,
    load_session: bool,
    root: std::path::PathBuf,
    mcp_servers: Vec<McpServer>,
    mode: Option<String>,
}

fn failed(code: &'static str, what: &str, err: impl std::fmt::Display) -> HostedError {
    HostedError::new(code, format!("{what}: {err}"))
}

impl Link {
    /// Starts the chat's agent and initializes it.
    pub(crate) async fn start(chat: &Arc<Chat>) -> Result<Link, HostedError> {
        let spec = &chat.spec;
        let root = chat.host.root().to_path_buf();
        let mut command = tokio::process::Command::new(&spec.program);
        command
            .args(&spec.args)
            .envs(&spec.env)
            .current_dir(&root)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut group = toolhost_process::spawn(command, toolhost_process::SpawnOptions::default())
            .map_err(|e| {
                failed("AGENT_START_FAILED", &format!("cannot start {}", spec.program.display()), e)
            })?;
        let (Some(stdin), Some(stdout)) = (group.take_stdin(), group.take_stdout()) else {
            return Err(HostedError::new("AGENT_START_FAILED", "the agent's pipes are missing"));
        };
        if let Some(mut stderr) = group.take_stderr() {
            let name = spec.name.clone();
            // Drained so a chatty agent never blocks on a full pipe; kept in the server's log.
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    tracing::debug!(agent = %name, "stderr: {}", String::from_utf8_lossy(&buf[..n]));
                }
            });
        }
        let pid = group.id();
        let handle = group.handle();
        let incoming =
            futures::stream::unfold(BufReader::new(stdout).lines(), |mut lines| async move {
                match lines.next_line().await {
                    Ok(Some(line)) => Some((Ok(line), lines)),
                    Ok(None) => None,
                    Err(err) => Some((Err(err), lines)),
                }
            });
        let outgoing = futures::sink::unfold(stdin, |mut stdin, line: String| async move {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await?;
            Ok::<_, std::io::Error>(stdin)
        });
        let transport = Lines::new(Box::pin(outgoing), Box::pin(incoming));
        let (cx_tx, cx_rx) = oneshot::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let ended = CancellationToken::new();
        let weak = Arc::downgrade(chat);
        let (w1, w2, w3, w4) = (weak.clone(), weak.clone(), weak.clone(), weak.clone());
        let (w5, w6, w7, w8, w9) = (weak.clone(), weak.clone(), weak.clone(), weak.clone(), weak);
        let ended_by = ended.clone();
        let name = spec.name.clone();
        tokio::spawn(async move {
            let _group = group;
            let served = Client
                .v1()
                .name("toolhost")
                .on_receive_notification(
                    async move |note: SessionNotification, _cx| {
                        if let Some(chat) = w1.upgrade() {
                            chat.on_update(note.update);
                        }
                        Ok(())
                    },
                    acp::on_receive_notification!(),
                )
                .on_receive_request(
                    async move |req: RequestPermissionRequest,
                                r: Responder<RequestPermissionResponse>,
                                _cx| {
                        let Some(chat) = w2.upgrade() else {
                            return r.respond(RequestPermissionResponse::new(
                                RequestPermissionOutcome::Cancelled,
                            ));
                        };
                        tokio::spawn(async move {
                            let outcome = chat.permission(req).await;
                            if let Err(err) = r.respond(RequestPermissionResponse::new(outcome)) {
                                tracing::warn!(%err, "the permission answer was lost");
                            }
                        });
                        Ok(())
                    },
                    acp::on_receive_request!(),
                )
                .on_receive_request(
                    async move |req: ReadTextFileRequest,
                                r: Responder<ReadTextFileResponse>,
                                _cx| {
                        let Some(chat) = w3.upgrade() else {
                            return r.respond_with_error(acp::Error::internal_error());
                        };
                        tokio::spawn(async move {
                            let _ = r.respond_with_result(chat.read_file(req).await);
                        });
                        Ok(())
                    },
                    acp::on_receive_request!(),
                )
                .on_receive_request(
                    async move |req: WriteTextFileRequest,
                                r: Responder<WriteTextFileResponse>,
                                _cx| {
                        let Some(chat) = w4.upgrade() else {
                            return r.respond_with_error(acp::Error::internal_error());
                        };
                        tokio::spawn(async move {
                            let _ = r.respond_with_result(chat.write_file(req).await);
                        });
                        Ok(())
                    },
                    acp::on_receive_request!(),
                )
                .on_receive_request(
                    async move |req: CreateTerminalRequest,
                                r: Responder<CreateTerminalResponse>,
                                _cx| {
                        let Some(chat) = w5.upgrade() else {
                            return r.respond_with_error(acp::Error::internal_error());
                        };
                        let created = chat.create_terminal(&req).map(CreateTerminalResponse::new);
                        r.respond_with_result(created.map_err(hosted_error))
                    },
                    acp::on_receive_request!(),
                )
                .on_receive_request(
                    async move |req: TerminalOutputRequest,
                                r: Responder<TerminalOutputResponse>,
                                _cx| {
                        let Some(chat) = w6.upgrade() else {
                            return r.respond_with_error(acp::Error::internal_error());
                        };
                        let output =
                            chat.terminal_output(&req.terminal_id.0).map(|(text, cut, exit)| {
                                TerminalOutputResponse::new(text, cut).exit_status(exit)
                            });
                        r.respond_with_result(output.map_err(hosted_error))
                    },
                    acp::on_receive_request!(),
                )
                .on_receive_request(
                    async move |req: WaitForTerminalExitRequest,
                                r: Responder<WaitForTerminalExitResponse>,
                                _cx| {
                        let Some(chat) = w7.upgrade() else {
                            return r.respond_with_error(acp::Error::internal_error());
                        };
                        tokio::spawn(async move {
                            let exit = chat.terminal_exit(&req.terminal_id.0).await;
                            let answer =
                                exit.map(WaitForTerminalExitResponse::new).map_err(hosted_error);
                            let _ = r.respond_with_result(answer);
                        });
                        Ok(())
                    },
                    acp::on_receive_request!(),
                )
                .on_receive_request(
                    async move |req: KillTerminalRequest,
                                r: Responder<KillTerminalResponse>,
                                _cx| {
                        let Some(chat) = w8.upgrade() else {
                            return r.respond_with_error(acp::Error::internal_error());
                        };
                        let killed = chat
                            .kill_terminal(&req.terminal_id.0)
                            .map(|()| KillTerminalResponse::new());
                        r.respond_with_result(killed.map_err(hosted_error))
                    },
                    acp::on_receive_request!(),
                )
                .on_receive_request(
                    async move |req: ReleaseTerminalRequest,
                                r: Responder<ReleaseTerminalResponse>,
                                _cx| {
                        let Some(chat) = w9.upgrade() else {
                            return r.respond_with_error(acp::Error::internal_error());
                        };
                        let released = chat
                            .release_terminal(&req.terminal_id.0)
                            .map(|()| ReleaseTerminalResponse::new());
                        r.respond_with_result(released.map_err(hosted_error))
                    },
                    acp::on_receive_request!(),
                )
                .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
                    let _ = cx_tx.send(cx);
                    let _ = stop_rx.await;
                    Ok(())
                })
                .await;
            if let Err(err) = served {
                tracing::info!(agent = %name, %err, "the agent's connection ended");
            }
            ended_by.cancel();
        });
        let cx = tokio::select! {
            cx = cx_rx => cx.map_err(|_| HostedError::new("AGENT_START_FAILED", "the agent's connection closed at once"))?,
            () = ended.cancelled() => return Err(HostedError::new("AGENT_START_FAILED", "the agent exited at once")),
        };
        let mut mcp_servers = Vec::new();
        if chat.offer_toolhost
            && let Ok(exe) = std::env::current_exe()
        {
            // toolhost's own tools, over `toolhost mcp` attached to this host (started in the
            // workspace, it finds this host's attach socket).
            let server = McpServerStdio::new("toolhost", exe)
                .args(vec!["mcp".to_owned()])
                .env(Vec::<EnvVariable>::new());
            mcp_servers.push(McpServer::Stdio(server));
        }
        let mut link = Link {
            cx,
            group: handle,
            pid,
            ended,
            stop: std::sync::Mutex::new(Some(stop_tx)),
            load_session: false,
            root,
            mcp_servers,
            mode: spec.mode.clone(),
        };
        let capabilities = ClientCapabilities::new()
            .fs(FileSystemCapabilities::new().read_text_file(true).write_text_file(true))
            .terminal(true);
        let request = InitializeRequest::new(acp::schema::ProtocolVersion::V1)
            .client_capabilities(capabilities)
            .client_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")));
        let initialized = link.request(request, START_TIMEOUT, "initialize").await;
        match initialized {
            Ok(response) => link.load_session = response.agent_capabilities.load_session,
            Err(err) => {
                link.stop().await;
                return Err(err);
            }
        }
        Ok(link)
    }

    /// Sends a request and waits for its answer, the connection's end or `timeout`.
    async fn request<Req>(
        &self,
        request: Req,
        timeout: Duration,
        what: &str,
    ) -> Result<Req::Response, HostedError>
    where
        Req: acp::JsonRpcRequest + Send + 'static,
        Req::Response: Send + 'static,
    {
        let sent = self.cx.send_request(request).block_task();
        tokio::select! {
            answer = tokio::time::timeout(timeout, sent) => match answer {
                Ok(Ok(response)) => Ok(response),
                Ok(Err(err)) => Err(self.request_failed(what, &err)),
                Err(_) => Err(HostedError::new("AGENT_ERROR", format!("the agent did not answer {what} within {} s", timeout.as_secs()))),
            },
            () = self.ended.cancelled() => Err(HostedError::new("AGENT_EXITED", format!("the agent exited during {what}"))),
        }
    }

    pub(crate) fn gone(&self) -> bool {
        self.ended.is_cancelled()
            || !matches!(self.group.state(), toolhost_process::GroupState::Running)
    }

    /// A request's failure: the agent went away (`AGENT_EXITED`: the link is over, the next
    /// prompt starts the agent again), or it answered with an error.
    fn request_failed(&self, what: &str, err: &acp::Error) -> HostedError {
        if acp::is_incoming_transport_closed(err) || acp::is_connection_terminated(err) {
            self.ended.cancel();
            return HostedError::new(
                "AGENT_EXITED",
                format!("the agent exited during {what} (the next prompt starts it again)"),
            );
        }
        failed("AGENT_ERROR", &format!("the agent refused {what}"), err)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    pub(crate) fn can_load(&self) -> bool {
        self.load_session
    }

    /// Opens a session in the workspace (in the configured mode); what it offers is kept.
    pub(crate) async fn new_session(&self, chat: &Chat) -> Result<String, HostedError> {
        let request =
            NewSessionRequest::new(self.root.clone()).mcp_servers(self.mcp_servers.clone());
        let opened = self.request(request, START_TIMEOUT, "session/new").await?;
        let session = opened.session_id.0.to_string();
        chat.offered().opened(opened.modes, opened.config_options);
        self.set_configured_mode(chat, &session).await;
        Ok(session)
    }

    /// Loads an earlier session (what it replays is not drawn again: no turn is running).
    pub(crate) async fn load_session(&self, chat: &Chat, id: &str) -> Result<(), HostedError> {
        let request = LoadSessionRequest::new(id.to_owned(), self.root.clone())
            .mcp_servers(self.mcp_servers.clone());
        let loaded = self.request(request, START_TIMEOUT, "session/load").await?;
        chat.offered().opened(loaded.modes, loaded.config_options);
        self.set_configured_mode(chat, id).await;
        Ok(())
    }

    /// The mode the agent's entry names (`[acp.agents.<name>] mode`).
    async fn set_configured_mode(&self, chat: &Chat, session: &str) {
        let Some(mode) = self.mode.clone() else { return };
        if let Err(err) = self.set(chat, session, Setting::Mode(mode.clone())).await {
            tracing::warn!(%err, mode, "the agent did not switch modes");
        }
    }

    /// Switches one of the session's settings; what the agent answers is kept.
    pub(crate) async fn set(
        &self,
        chat: &Chat,
        session: &str,
        setting: Setting,
    ) -> Result<(), HostedError> {
        match setting {
            Setting::Mode(mode) => {
                let request = SetSessionModeRequest::new(session.to_owned(), mode.clone());
                self.request(request, START_TIMEOUT, "session/set_mode").await?;
                chat.offered().mode_changed(&mode);
            }
            Setting::Config { id, value } => {
                let request = SetSessionConfigOptionRequest::new(session.to_owned(), id, value);
                let answer =
                    self.request(request, START_TIMEOUT, "session/set_config_option").await?;
                chat.offered().config_changed(answer.config_options);
            }
        }
        Ok(())
    }

    /// Runs one turn; `cancel` asks the agent to stop (`session/cancel`), which it answers by
    /// ending the turn `cancelled`.
    pub(crate) async fn prompt(
        &self,
        session: &str,
        text: String,
        cancel: &CancellationToken,
    ) -> Result<PromptResponse, HostedError> {
        let request = PromptRequest::new(
            session.to_owned(),
            vec![ContentBlock::Text(TextContent::new(text))],
        );
        let sent = self.cx.send_request(request).block_task();
        tokio::pin!(sent);
        let answer = tokio::select! {
            answer = &mut sent => Some(answer),
            () = cancel.cancelled() => None,
            () = self.ended.cancelled() => return Err(HostedError::new("AGENT_EXITED", "the agent exited during the turn (the next prompt starts it again)")),
        };
        let answer = match answer {
            Some(answer) => answer,
            None => {
                let _ = self.cx.send_notification(CancelNotification::new(session.to_owned()));
                tokio::select! {
                    answer = tokio::time::timeout(CANCEL_GRACE, &mut sent) => match answer {
                        Ok(answer) => answer,
                        Err(_) => {
                            self.stop().await;
                            return Err(HostedError::new("AGENT_EXITED", "the agent did not stop when asked and was ended"));
                        }
                    },
                    () = self.ended.cancelled() => return Err(HostedError::new("AGENT_EXITED", "the agent exited while stopping")),
                }
            }
        };
        answer.map_err(|err| self.request_failed("the turn", &err))
    }

    /// Ends the agent: its stdin closed, then its group terminated, and waits until reaped.
    pub(crate) async fn stop(&self) {
        if let Some(stop) =
            self.stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
        {
            let _ = stop.send(());
        }
        self.group.terminate(Duration::from_secs(3)).await;
        self.ended.cancel();
    }
}

impl Chat {
    /// One `session/update` of the agent.
    fn on_update(self: &Arc<Self>, update: SessionUpdate) {
        if self.replaying() {
            return;
        }
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                if let ContentBlock::Text(text) = chunk.content {
                    self.send(json!({"type": "text", "text": text.text}));
                }
            }
            SessionUpdate::AgentThoughtChunk(chunk) => {
                if let ContentBlock::Text(text) = chunk.content {
                    self.send(json!({"type": "reasoning", "text": text.text}));
                }
            }
            // Only a running turn's steps are recorded: a loaded session replays its old ones.
            SessionUpdate::ToolCall(call) if self.turn().is_some() => {
                self.steps.announced(&call);
                self.steps.proposed(&call.tool_call_id.0, &call.content);
            }
            SessionUpdate::ToolCallUpdate(update) if self.turn().is_some() => {
                let id = update.tool_call_id.0.to_string();
                if let Some(content) = &update.fields.content {
                    self.steps.proposed(&id, content);
                }
                self.steps.updated(&id, &update.fields);
            }
            SessionUpdate::Plan(plan) => {
                let entries = serde_json::to_value(&plan.entries).unwrap_or_default();
                self.send(json!({"type": "plan", "entries": entries}));
            }
            SessionUpdate::ConfigOptionUpdate(update) => {
                self.offered().config_changed(update.config_options);
                self.send_options();
            }
            SessionUpdate::CurrentModeUpdate(update) => {
                self.offered().mode_changed(&update.current_mode_id.0);
                self.send_options();
            }
            SessionUpdate::UsageUpdate(usage) => {
                let mut update = json!({"type": "context", "used": usage.used, "size": usage.size});
                if let Some(cost) = &usage.cost {
                    update["cost"] = serde_json::to_value(cost).unwrap_or_default();
                }
                self.send(update);
            }
            _ => {}
        }
    }

    /// A permission request: an edit with a proposed diff is reviewed hunk by hunk when an
    /// editor reviews; anything else is a question with the agent's options. Nobody answering
    /// within `[acp] permission_timeout_ms` answers `cancelled`, never a hang.
    async fn permission(
        self: &Arc<Self>,
        request: RequestPermissionRequest,
    ) -> RequestPermissionOutcome {
        let Some(turn) = self.turn() else { return RequestPermissionOutcome::Cancelled };
        let id = request.tool_call.tool_call_id.0.to_string();
        // A request for a call announced without its input, or never announced: its step
        // starts now.
        self.steps.start_pending(&id);
        if self.steps.call_of(&id).is_none() {
            let fields = &request.tool_call.fields;
            let mut call = agent_client_protocol::v1::schema::ToolCall::new(
                request.tool_call.tool_call_id.clone(),
                fields.title.clone().unwrap_or_else(|| "Agent step".to_owned()),
            );
            if let Some(kind) = fields.kind {
                call = call.kind(kind);
            }
            if let Some(raw) = &fields.raw_input {
                call = call.raw_input(raw.clone());
            }
            if let Some(locations) = &fields.locations {
                call = call.locations(locations.clone());
            }
            self.steps.start(&call);
        }
        self.steps.updated(&id, &request.tool_call.fields);
        if let Some(content) = &request.tool_call.fields.content {
            self.steps.proposed(&id, content);
        }
        // The files are looked at before the agent may act.
        self.steps.settle(&id, None).await;
        let Some(call_id) = self.steps.call_of(&id) else {
            return RequestPermissionOutcome::Cancelled;
        };
        let timeout = Duration::from_millis(self.permission_timeout_ms);
        let cancel = turn.cancel.child_token();
        let decided =
            tokio::time::timeout(timeout, self.decide(&id, &call_id, &request, &cancel)).await;
        match decided {
            Ok(outcome) => outcome,
            Err(_) => {
                cancel.cancel();
                self.note(format!(
                    "Nobody answered your request to run \"{}\" within {} s; it was cancelled.",
                    request.tool_call.fields.title.clone().unwrap_or_default(),
                    timeout.as_secs()
                ));
                RequestPermissionOutcome::Cancelled
            }
        }
    }

    async fn decide(
        self: &Arc<Self>,
        id: &str,
        call_id: &str,
        request: &RequestPermissionRequest,
        cancel: &CancellationToken,
    ) -> RequestPermissionOutcome {
        let allow = pick(
            &request.options,
            &[PermissionOptionKind::AllowOnce, PermissionOptionKind::AllowAlways],
        );
        let reject = pick(
            &request.options,
            &[PermissionOptionKind::RejectOnce, PermissionOptionKind::RejectAlways],
        );
        if let (Some(allow), Some(reject)) = (&allow, &reject)
            && let Some(reviewed) = self.review(id, call_id, cancel).await
        {
            return match reviewed {
                Reviewed::All => selected(allow),
                Reviewed::None => selected(reject),
                Reviewed::Part(files) => {
                    for (path, content, rejected) in files {
                        self.steps
                            .settle(id, Some(StepEvent::Reviewed { path: path.clone(), content }))
                            .await;
                        self.note(format!(
                            "The user rejected {rejected} hunk(s) of your edit of {path}; they were undone, so the file holds only the hunks the user accepted. Read it again before editing it."
                        ));
                    }
                    selected(allow)
                }
            };
        }
        self.ask(call_id, request, cancel).await
    }

    /// The person's review of the step's proposed edits, hunk by hunk; `None` when there is
    /// none to review (no diff, no reviewing editor, or the texts do not fit the file).
    async fn review(
        &self,
        id: &str,
        call_id: &str,
        cancel: &CancellationToken,
    ) -> Option<Reviewed> {
        let review = self.host.review();
        if !review.has_reviewer() {
            return None;
        }
        let proposals = self.steps.proposals(id);
        if proposals.is_empty() {
            return None;
        }
        review.force_review(call_id);
        let mut partial = Vec::new();
        let (mut accepted_any, mut rejected_any) = (false, false);
        // An agent may show one file's edit in several pieces (one per hunk): applied in turn.
        let mut files: Vec<(String, Vec<Piece>)> = Vec::new();
        for (path, old_text, new_text) in proposals {
            match files.iter_mut().find(|(p, _)| *p == path) {
                Some((_, pieces)) => pieces.push((old_text, new_text)),
                None => files.push((path, vec![(old_text, new_text)])),
            }
        }
        for (path, pieces) in files {
            let current = self.host.workspace().disk_bytes(&path).await.ok()?;
            let current = current.map(|b| String::from_utf8_lossy(&b).replace("\r\n", "\n"));
            let before = current.clone().unwrap_or_default();
            let mut after = before.clone();
            for (old_text, new_text) in pieces {
                after = match old_text {
                    None => new_text,
                    Some(old) if after == old => new_text,
                    Some(old) if !old.is_empty() && after.contains(old.as_str()) => {
                        after.replacen(old.as_str(), &new_text, 1)
                    }
                    // The pieces do not fit the file: nothing to review hunk by hunk.
                    Some(_) => return None,
                };
            }
            let change = Change::new(&before, &after);
            if change.hunk_count() == 0 {
                continue;
            }
            let display =
                self.host.workspace().display_path(&path).unwrap_or_else(|_| path.clone());
            let hunks = change
                .meta(&display)
                .patch
                .and_then(|p| parse_patch(&display, &p))
                .unwrap_or_default();
            let request = ReviewRequest {
                call_id: call_id.to_owned(),
                tool: toolhost_host::agent_steps::AGENT_STEP.to_owned(),
                path: path.clone(),
                before: before.clone(),
                after: after.clone(),
                hunks,
                required: false,
            };
            match ReviewGate::review(review.as_ref(), request, cancel.clone()).await {
                ReviewVerdict::Decided { accepted, comment } => {
                    if let Some(comment) = comment.filter(|c| !c.trim().is_empty()) {
                        self.note(format!(
                            "The user commented on your edit of {display}: {comment}"
                        ));
                    }
                    let count = change.hunk_count();
                    if accepted.is_empty() {
                        rejected_any = true;
                    } else if accepted.len() >= count {
                        accepted_any = true;
                    } else {
                        accepted_any = true;
                        rejected_any = true;
                        let content = change.apply(&accepted, &before, &after);
                        partial.push((path.clone(), content, count - accepted.len()));
                    }
                }
                ReviewVerdict::Cancelled => return Some(Reviewed::None),
                _ => return None,
            }
        }
        Some(match (accepted_any, rejected_any, partial.is_empty()) {
            (_, _, false) => Reviewed::Part(partial),
            (true, _, true) => Reviewed::All,
            (false, true, true) => Reviewed::None,
            (false, false, true) => return None,
        })
    }

    /// The agent's options as a question to the person.
    async fn ask(
        &self,
        call_id: &str,
        request: &RequestPermissionRequest,
        cancel: &CancellationToken,
    ) -> RequestPermissionOutcome {
        let title = request.tool_call.fields.title.clone().unwrap_or_else(|| "a step".to_owned());
        let options: Vec<QuestionOption> = request
            .options
            .iter()
            .map(|o| QuestionOption { label: o.name.clone(), description: None })
            .collect();
        let question = toolhost_contract::QuestionRequest::new(
            call_id.to_owned(),
            toolhost_host::agent_steps::AGENT_STEP,
            QuestionIntent::Permission,
            vec![Question {
                id: "permission".to_owned(),
                question: format!("Allow {} to run {title}?", self.spec.title),
                header: Some("Permission".to_owned()),
                options,
                multi_select: false,
            }],
        );
        let answers = self.host.questions().ask(question, cancel.clone()).await;
        let Ok(answers) = answers else { return RequestPermissionOutcome::Cancelled };
        let chosen = answers.iter().flat_map(|a| a.selected.iter()).next();
        let option = chosen.and_then(|label| request.options.iter().find(|o| &o.name == label));
        match option {
            Some(option) => selected(option),
            None => RequestPermissionOutcome::Cancelled,
        }
    }

    /// `fs/read_text_file`: the editor's unsaved text when it has the file open, else the disk's.
    async fn read_file(
        &self,
        request: ReadTextFileRequest,
    ) -> Result<ReadTextFileResponse, acp::Error> {
        let path = request.path.to_string_lossy().into_owned();
        let bytes = self
            .host
            .workspace()
            .peek(&path)
            .await
            .map_err(|e| acp::Error::invalid_params().data(json!(e.to_string())))?
            .ok_or_else(|| acp::Error::invalid_params().data(json!(format!("no file {path}"))))?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let start = request.line.map_or(0, |l| l.saturating_sub(1) as usize);
        let content = match (start, request.limit) {
            (0, None) => text,
            (start, limit) => {
                let lines = text.split_inclusive('\n').skip(start);
                match limit {
                    Some(limit) => lines.take(limit as usize).collect(),
                    None => lines.collect(),
                }
            }
        };
        Ok(ReadTextFileResponse::new(content))
    }

    /// `fs/write_text_file`: the host's `write`, by this agent — reviewed when the session
    /// reviews, recorded, revertible — the file taken as read (the agent read it itself).
    async fn write_file(
        &self,
        request: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, acp::Error> {
        let path = request.path.to_string_lossy().into_owned();
        let workspace = self.host.workspace();
        if workspace.peek(&path).await.ok().flatten().is_some() {
            let _ = workspace.read_file(&path).await;
        }
        let call =
            CallRequest::new("write", json!({"file_path": path, "content": request.content}))
                .by(Some(self.spec.title.clone()))
                .in_lane(toolhost_host::Lane::new());
        let outcome = self
            .host
            .run(call)
            .await
            .map_err(|e| acp::Error::internal_error().data(json!(e.to_string())))?;
        let result = &outcome.finalized.result;
        if result.is_error() {
            let message =
                result.error().map_or_else(|| "the write failed".to_owned(), |e| e.message.clone());
            return Err(acp::Error::internal_error().data(json!(message)));
        }
        Ok(WriteTextFileResponse::new())
    }
}

/// A hosted-side failure as the agent gets it.
fn hosted_error(err: HostedError) -> acp::Error {
    acp::Error::invalid_params().data(json!(err.to_string()))
}

/// One piece of a proposed edit: the text it replaces (none: the whole file) and its new text.
type Piece = (Option<String>, String);

/// How the person decided on a step's proposed edits.
enum Reviewed {
    All,
    None,
    /// Some hunks: each file to leave with its accepted hunks (path, text, hunks rejected).
    Part(Vec<(String, String, usize)>),
}

fn pick(options: &[PermissionOption], kinds: &[PermissionOptionKind]) -> Option<PermissionOption> {
    kinds.iter().find_map(|kind| options.iter().find(|o| o.kind == *kind).cloned())
}

fn selected(option: &PermissionOption) -> RequestPermissionOutcome {
    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option.option_id.clone()))
}

/// The diffs of tool call content: (path, old text, new text).
pub(crate) fn diffs_of(content: &[ToolCallContent]) -> Vec<(String, Option<String>, String)> {
    content
        .iter()
        .filter_map(|c| match c {
            ToolCallContent::Diff(diff) => Some((
                diff.path.to_string_lossy().into_owned(),
                diff.old_text.clone(),
                diff.new_text.clone(),
            )),
            _ => None,
        })
        .collect()
}
