//! The editor-backed `LspProvider` (docs/protocol.md, `toolhost/lspQuery`): the `lsp` tool asks the
//! editor's own language servers through the server→client request `toolhost/lspQuery` `{operation,
//! uri, position: {line, character}}` (zero-based UTF-16), offered by clients that set
//! `capabilities.experimental.toolhost.lspProvider = true`. Answers `{kind: "locations", locations:
//! [{uri, range}]}` / `{kind: "hover", hover: {contents, range?} | null}` are normalized like a
//! stdio server's. An error whose `data.code` is an `LSP_*` code keeps it; `-32601` (the editor
//! cannot) is `LSP_UNAVAILABLE`, so the host falls back to a well-known server. A cancelled or
//! timed-out call sends the editor `$/cancelRequest` for its query.

use crate::editor::EditorBridge;
use serde_json::Value;
use std::sync::Arc;
use toolhost_contract::lsp::{
    LspAnswer, LspHandle, LspProvider, LspRequest, aborted, codes, lsp_error,
};
use toolhost_contract::{BoxFuture, CancellationToken, ToolError};
use toolhost_jsonrpc::codes as rpc_codes;
use toolhost_lsp_host::normalize;
use toolhost_protocol::lsp_ext::{LspQueryParams, methods};

/// Asks the editor.
pub struct EditorLspProvider {
    bridge: EditorBridge,
}

impl EditorLspProvider {
    pub fn handle(bridge: EditorBridge) -> LspHandle {
        Arc::new(EditorLspProvider { bridge })
    }
}

fn malformed(detail: &str) -> ToolError {
    lsp_error(codes::MALFORMED_RESPONSE, format!("malformed toolhost/lspQuery answer: {detail}"))
}

/// Normalizes the editor's answer for `request`.
pub fn normalize_answer(request: &LspRequest, answer: &Value) -> Result<LspAnswer, ToolError> {
    let kind = answer.get("kind").and_then(Value::as_str);
    let op = request.operation;
    let to_tool = |e: toolhost_lsp_host::LspHostError| ToolError::from(e);
    match (kind, op) {
        (Some("hover"), toolhost_contract::lsp::LspOperation::Hover) => {
            let hover = answer.get("hover").ok_or_else(|| malformed("no hover"))?;
            normalize::hover(Some(hover)).map(LspAnswer::Hover).map_err(to_tool)
        }
        (Some("locations"), op) if op != toolhost_contract::lsp::LspOperation::Hover => {
            let locations = answer.get("locations").ok_or_else(|| malformed("no locations"))?;
            normalize::locations(op.as_str(), Some(locations))
                .map(LspAnswer::Locations)
                .map_err(to_tool)
        }
        _ => Err(malformed("the kind does not match the operation")),
    }
}

impl LspProvider for EditorLspProvider {
    fn query<'a>(
        &'a self,
        request: &'a LspRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<LspAnswer, ToolError>> {
        Box::pin(async move {
            let params = LspQueryParams {
                operation: request.operation.as_str().to_owned(),
                uri: request.uri.clone(),
                position: request.position,
            };
            let reply = self.bridge.request(methods::LSP_QUERY, &params, cancel).await;
            if cancel.is_cancelled() {
                return Err(aborted());
            }
            match reply {
                Ok(answer) => normalize_answer(request, &answer),
                Err(err) => {
                    let code = err
                        .data
                        .as_ref()
                        .and_then(|d| d.get("code"))
                        .and_then(Value::as_str)
                        .filter(|c| c.starts_with("LSP_"))
                        .map(str::to_owned);
                    let message = format!("the editor could not answer: {}", err.message);
                    match code {
                        Some(code) => Err(lsp_error(&code, message)),
                        None if err.code == rpc_codes::METHOD_NOT_FOUND => {
                            Err(lsp_error(codes::UNAVAILABLE, message))
                        }
                        None => Err(ToolError::plain(message)),
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;
    use toolhost_contract::lsp::{LspOperation, LspPosition};

    fn request(op: LspOperation) -> LspRequest {
        LspRequest {
            operation: op,
            workspace_root: "/w".into(),
            path: "/w/a.c".into(),
            uri: "file:///w/a.c".into(),
            display: "/w/a.c".into(),
            position: LspPosition { line: 0, character: 0 },
            text: Arc::from(""),
        }
    }

    #[test]
    fn answers_normalize() {
        let range =
            json!({"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 5}});
        let locations =
            json!({"kind": "locations", "locations": [{"uri": "file:///w/b.c", "range": range}]});
        let got = normalize_answer(&request(LspOperation::GoToDefinition), &locations).unwrap();
        assert!(matches!(got, LspAnswer::Locations(ref l) if l[0].range.start.character == 2));
        let hover = json!({"kind": "hover", "hover": {"contents": "int x"}});
        let got = normalize_answer(&request(LspOperation::Hover), &hover).unwrap();
        assert!(matches!(got, LspAnswer::Hover(Some(ref h)) if h.contents == "int x"));
        let none = json!({"kind": "hover", "hover": null});
        assert_eq!(
            normalize_answer(&request(LspOperation::Hover), &none).unwrap(),
            LspAnswer::Hover(None)
        );
        let wrong = normalize_answer(&request(LspOperation::Hover), &locations).unwrap_err();
        assert_eq!(wrong.code(), Some("LSP_MALFORMED_RESPONSE"));
        let bad = json!({"kind": "locations", "locations": [{"uri": 1}]});
        let err = normalize_answer(&request(LspOperation::FindReferences), &bad).unwrap_err();
        assert_eq!(err.code(), Some("LSP_MALFORMED_RESPONSE"));
    }
}
