//! The editor as a capability of tool bodies and providers: server→client requests and
//! notifications over the LSP connection (`toolhost_jsonrpc::peer`; replies are routed by the
//! reader, a cancelled request is withdrawn with `$/cancelRequest`).

pub use toolhost_jsonrpc::peer::Peer as EditorBridge;
