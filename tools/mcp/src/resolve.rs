//! Servers started on first use: a call that names a tool of a server not started yet (a lazy
//! one, or a one-shot `toolhost call`) starts that server and waits for its tools before the
//! call runs — the registry asks the bridge as the resolver of names it does not know.

use crate::bridge::McpBridge;
use toolhost_contract::{BoxFuture, UnknownToolResolver};

impl UnknownToolResolver for McpBridge {
    fn resolve<'a>(&'a self, name: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            if self.launch_for_tool(name).is_none() {
                return false;
            }
            // A server that fails to start leaves the name unknown; the call then fails
            // `UNKNOWN_TOOL` with the server's state in `toolhost mcp-servers`.
            let _ = self.ready().await;
            true
        })
    }
}
