//! toolhost's side of one MCP connection (rmcp `ClientHandler`): what it tells the server it
//! can do, and what it does with the server's requests and notifications — roots are the
//! workspace roots, sampling is refused with a clear error, elicitation is declined (the
//! default), `tools/list_changed` queues a re-sync, progress reaches the running call's card.
// Roots and sampling are deprecated in MCP's newest revision, but servers on the revisions in
// use today ask for roots, and refusing sampling needs its types.
#![allow(deprecated)]

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult, ErrorCode,
    ErrorData, Implementation, ListRootsResult, ProgressNotificationParam, ProgressToken, Root,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use toolhost_contract::EventsHandle;

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
