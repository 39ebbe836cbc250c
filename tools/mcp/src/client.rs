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
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use toolhost_contract::EventsHandle;

/// Where progress of an outstanding call goes: the call's id, the host's events sink and the
/// highest progress shown so far (notifications are handled concurrently and may arrive out of
/// order; an older one is dropped rather than shown after a newer one).
pub(crate) type ProgressRoutes = Arc<Mutex<HashMap<ProgressToken, (String, EventsHandle, f64)>>>;

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
        let route = self.progress.lock().ok().and_then(|mut routes| {
            let (call_id, events, shown) = routes.get_mut(&params.progress_token)?;
            if params.progress <= *shown {
                return None;
            }
            *shown = params.progress;
            Some((call_id.clone(), Arc::clone(events)))
        });
        if let Some((call_id, events)) = route {
            events.call_output(&call_id, &progress_line(&params));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_file_uris() {
        assert_eq!(file_uri(std::path::Path::new("/tmp/a b/ü")), "file:///tmp/a%20b/%C3%BC");
    }
}
