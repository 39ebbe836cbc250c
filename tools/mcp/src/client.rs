//! toolhost's side of one MCP connection (rmcp `ClientHandler`): what it tells the server it
//! can do, and what it does with the server's requests and notifications — roots are the
//! workspace roots, sampling is refused with a clear error, a form elicitation becomes
//! questions on the question channel of the call that is running (the person answers in the
//! editor, or the MCP client that made the call does), `tools/list_changed` queues a re-sync,
//! progress reaches the running call's card.
// Roots and sampling are deprecated in MCP's newest revision, but servers on the revisions in
// use today ask for roots, and refusing sampling needs its types.
#![allow(deprecated)]

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, ErrorCode,
    ErrorData, FormElicitationCapability, Implementation, ListRootsResult,
    ProgressNotificationParam, ProgressToken, Root,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolhost_contract::{EventsHandle, QuestionError, QuestionRequest, QuestionsHandle};
use toolhost_protocol::lsp_ext::QuestionIntent;

/// Who answers a server's elicitation: the question channel of a call in flight on this
/// server (the latest one: a server asks while it works on a call), else the host's own.
#[derive(Default)]
pub(crate) struct ElicitRoutes {
    pub(crate) in_flight: Vec<InFlight>,
    pub(crate) fallback: Option<QuestionsHandle>,
}

pub(crate) struct InFlight {
    pub(crate) call_id: String,
    pub(crate) tool: String,
    pub(crate) questions: QuestionsHandle,
    pub(crate) signal: CancellationToken,
}

/// Where progress of outstanding calls goes. A route holds the call's id, the host's events
/// sink and the highest progress shown so far: notifications are handled concurrently and may
/// arrive out of order, and an older one is dropped rather than shown after a newer one.
///
/// The request is on the wire before its route can be registered (the token is assigned while
/// sending), so a fast server's first notifications may arrive first; a few unrouted ones are
/// kept and delivered when their route appears.
#[derive(Default)]
pub(crate) struct ProgressRouter {
    routes: HashMap<ProgressToken, (String, EventsHandle, f64)>,
    early: VecDeque<ProgressNotificationParam>,
}

/// How many unrouted notifications are kept for a route that has not been registered yet.
const EARLY_PROGRESS: usize = 64;

pub(crate) type ProgressRoutes = Arc<Mutex<ProgressRouter>>;

impl ProgressRouter {
    /// Registers a call's route and delivers what arrived for it before.
    pub(crate) fn route(&mut self, token: ProgressToken, call_id: String, events: EventsHandle) {
        let mut route = (call_id, events, f64::MIN);
        let (early, rest): (Vec<_>, Vec<_>) =
            self.early.drain(..).partition(|p| p.progress_token == token);
        self.early = rest.into();
        for params in early {
            deliver(&mut route, &params);
        }
        self.routes.insert(token, route);
    }

    pub(crate) fn unroute(&mut self, token: &ProgressToken) {
        self.routes.remove(token);
        self.early.retain(|p| &p.progress_token != token);
    }

    fn notify(&mut self, params: ProgressNotificationParam) {
        match self.routes.get_mut(&params.progress_token) {
            Some(route) => deliver(route, &params),
            None => {
                if self.early.len() == EARLY_PROGRESS {
                    self.early.pop_front();
                }
                self.early.push_back(params);
            }
        }
    }
}

fn deliver(route: &mut (String, EventsHandle, f64), params: &ProgressNotificationParam) {
    let (call_id, events, shown) = route;
    if params.progress > *shown {
        *shown = params.progress;
        events.call_output(call_id, &progress_line(params));
    }
}

pub(crate) struct BridgeClient {
    pub(crate) roots: Arc<Vec<PathBuf>>,
    pub(crate) resync: mpsc::UnboundedSender<()>,
    pub(crate) progress: ProgressRoutes,
    pub(crate) elicit: Arc<Mutex<ElicitRoutes>>,
    /// The server's name, for questions asked outside any call.
    pub(crate) server: String,
}

/// The line a progress notification adds to the call's live output.
pub(crate) fn progress_line(params: &ProgressNotificationParam) -> String {
    let amount = match params.total {
        Some(total) => format!("{}/{}", params.progress, total),
        None => params.progress.to_string(),
    };
    match &params.message {
        Some(message) if !message.is_empty() => format!("{message} ({amount})\n"),
        _ => format!("progress {amount}\n"),
    }
}

fn file_uri(path: &std::path::Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                uri.push(byte as char)
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

impl ClientHandler for BridgeClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.roots = Some(Default::default());
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::new());
        capabilities.elicitation = Some(elicitation);
        ClientConfig::new(capabilities, Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let roots = self
            .roots
            .iter()
            .map(|root| {
                let name = root.file_name().map(|n| n.to_string_lossy().into_owned());
                let entry = Root::new(file_uri(root));
                match name {
                    Some(name) => entry.with_name(name),
                    None => entry,
                }
            })
            .collect();
        Ok(ListRootsResult::new(roots))
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "toolhost does not offer sampling (sampling/createMessage) to MCP servers",
            None,
        ))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = request
        else {
            // Opening a URL for the person is not something toolhost does on a server's word.
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
        let (questions, fields) = crate::elicit::questions(&message, &schema);
        let route = self.elicit.lock().ok().and_then(|routes| {
            routes
                .in_flight
                .last()
                .map(|c| {
                    (c.call_id.clone(), c.tool.clone(), Arc::clone(&c.questions), c.signal.clone())
                })
                .or_else(|| {
                    routes.fallback.as_ref().map(|q| {
                        (
                            format!("mcp-{}", self.server),
                            format!("mcp__{}", self.server),
                            Arc::clone(q),
                            CancellationToken::new(),
                        )
                    })
                })
        });
        let Some((call_id, tool, asker, signal)) = route else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let request = QuestionRequest::new(call_id, tool, QuestionIntent::Question, questions);
        match asker.ask(request, signal).await {
            Ok(answers) => match crate::elicit::content(&fields, &answers) {
                Ok(content) => Ok(ElicitResult::new(ElicitationAction::Accept)
                    .with_content(serde_json::Value::Object(content))),
                Err(why) => {
                    tracing::warn!(server = %self.server, %why, "an elicitation answer did not fit the form; declined");
                    Ok(ElicitResult::new(ElicitationAction::Decline))
                }
            },
            Err(QuestionError::Cancelled(_) | QuestionError::Aborted) => {
                Ok(ElicitResult::new(ElicitationAction::Cancel))
            }
            Err(_) => Ok(ElicitResult::new(ElicitationAction::Decline)),
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.resync.send(());
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Ok(mut router) = self.progress.lock() {
            router.notify(params);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    #[derive(Default)]
    struct Lines(Mutex<Vec<String>>);

    impl toolhost_contract::HostEvents for Lines {
        fn call_output(&self, call_id: &str, text: &str) {
            self.0.lock().unwrap().push(format!("{call_id}: {text}"));
        }
        fn notice(&self, _session_id: Option<&str>, _notice: toolhost_contract::Notice) {}
    }

    fn progress(token: i64, progress: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), progress)
    }

    #[test]
    fn progress_that_overtakes_its_route_is_delivered_once_routed() {
        let lines = Arc::new(Lines::default());
        let mut router = ProgressRouter::default();
        router.notify(progress(7, 1.0));
        router.notify(progress(8, 1.0));
        assert!(lines.0.lock().unwrap().is_empty());
        router.route(ProgressToken(NumberOrString::Number(7)), "a".into(), lines.clone());
        router.notify(progress(7, 0.5)); // older than what was shown
        router.notify(progress(7, 2.0));
        assert_eq!(*lines.0.lock().unwrap(), ["a: progress 1\n", "a: progress 2\n"]);
        router.unroute(&ProgressToken(NumberOrString::Number(7)));
        router.notify(progress(7, 3.0));
        assert_eq!(lines.0.lock().unwrap().len(), 2, "a finished call shows nothing more");
        assert_eq!(router.early.len(), 2, "token 8 and the late 7");
        for i in 0..100 {
            router.notify(progress(100 + i, 1.0));
        }
        assert_eq!(router.early.len(), EARLY_PROGRESS, "unrouted notifications stay bounded");
    }

    #[test]
    fn roots_are_file_uris() {
        assert_eq!(file_uri(std::path::Path::new("/tmp/a b/ü")), "file:///tmp/a%20b/%C3%BC");
    }
}
