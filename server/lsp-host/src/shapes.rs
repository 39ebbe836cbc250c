//! The protocol shapes the host exchanges with a server, as `gen-lsp-types` structs: what we send
//! (`initialize` with our client capabilities, documents, position requests, file events) and
//! the server capabilities a query consults.
//!
//! Reading is lenient where servers are sloppy: each consulted capability is read on its own, so
//! a capability in a shape the crate rejects counts as absent (as an unsupported operation)
//! instead of failing the start — servers announce many capabilities we never use, in all sorts
//! of shapes. Lists the server sends (registrations, watchers, configuration items) are read item
//! by item for the same reason ([`each`]).

use crate::watch::FileChange;
use gen_lsp_types::{
    ClientCapabilities, ClientInfo, DefinitionClientCapabilities, DefinitionParams,
    DefinitionProvider, DidChangeWatchedFilesClientCapabilities, FileChangeType, FileEvent,
    GeneralClientCapabilities, HoverClientCapabilities, HoverParams, HoverProvider,
    ImplementationClientCapabilities, ImplementationParams, ImplementationProvider,
    InitializeParams, MarkupKind, PartialResultParams, Position, PositionEncodingKind,
    ReferenceClientCapabilities, ReferenceContext, ReferenceParams, ReferencesProvider, RootPath,
    TextDocumentClientCapabilities, TextDocumentIdentifier, TextDocumentPositionParams,
    TextDocumentSync, TextDocumentSyncClientCapabilities, TextDocumentSyncKind, Uri,
    WorkDoneProgressParams, WorkspaceClientCapabilities, WorkspaceFolder,
    WorkspaceFoldersInitializeParams,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::path::Path;
use toolhost_contract::lsp::{LspOperation, LspPosition, file_uri};

/// The items of a server's list that have the expected shape; the others are skipped.
pub fn each<T: DeserializeOwned>(items: &[Value]) -> impl Iterator<Item = T> + '_ {
    items.iter().filter_map(|item| T::deserialize(item).ok())
}

/// The `file:` URI of a path as the protocol's `Uri`. Our own URIs always parse; `None` is for
/// a path no URI can name.
pub fn uri_of(path: &Path) -> Option<Uri> {
    Uri::parse(&file_uri(path)).ok()
}

/// The one workspace folder a server is started on.
pub fn workspace_folder(uri: Uri) -> WorkspaceFolder {
    WorkspaceFolder { uri, name: "workspace".to_owned() }
}

/// What we can do: the position encodings we convert (UTF-16 preferred), workspace folders,
/// configuration, watched files (registered dynamically, relative patterns), hover in markdown
/// or plain text, links for definition and implementation.
pub fn client_capabilities() -> ClientCapabilities {
    ClientCapabilities {
        general: Some(GeneralClientCapabilities {
            position_encodings: Some(vec![
                PositionEncodingKind::UTF16,
                PositionEncodingKind::UTF8,
                PositionEncodingKind::UTF32,
            ]),
            ..GeneralClientCapabilities::default()
        }),
        workspace: Some(WorkspaceClientCapabilities {
            workspace_folders: Some(true),
            configuration: Some(true),
            did_change_watched_files: Some(DidChangeWatchedFilesClientCapabilities {
                dynamic_registration: Some(true),
                relative_pattern_support: Some(true),
            }),
            ..WorkspaceClientCapabilities::default()
        }),
        text_document: Some(TextDocumentClientCapabilities {
            synchronization: Some(TextDocumentSyncClientCapabilities {
                dynamic_registration: Some(false),
                ..TextDocumentSyncClientCapabilities::default()
            }),
            hover: Some(HoverClientCapabilities {
                content_format: Some(vec![MarkupKind::Markdown, MarkupKind::PlainText]),
                ..HoverClientCapabilities::default()
            }),
            definition: Some(DefinitionClientCapabilities {
                link_support: Some(true),
                ..DefinitionClientCapabilities::default()
            }),
            implementation: Some(ImplementationClientCapabilities {
                link_support: Some(true),
                ..ImplementationClientCapabilities::default()
            }),
            references: Some(ReferenceClientCapabilities::default()),
            ..TextDocumentClientCapabilities::default()
        }),
        ..ClientCapabilities::default()
    }
}

/// `initialize` for a server on `root`: no process id (a server must not exit when we pause),
/// the folder as `workspaceFolders` and, for servers older than folders, `rootUri` / `rootPath`.
pub fn initialize_params(
    root: &Path,
    root_uri: &Uri,
    initialization_options: Option<Value>,
) -> InitializeParams {
    #[allow(deprecated)] // rootUri and rootPath: what servers without workspace folders read.
    InitializeParams {
        process_id: None,
        client_info: Some(ClientInfo {
            name: "toolhost".to_owned(),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        }),
        root_uri: Some(root_uri.clone()),
        root_path: Some(RootPath::String(root.display().to_string())),
        capabilities: client_capabilities(),
        initialization_options,
        workspace_folders_initialize_params: WorkspaceFoldersInitializeParams {
            workspace_folders: Some(vec![workspace_folder(root_uri.clone())].into()),
        },
        ..InitializeParams::default()
    }
}

/// A capability read on its own: absent, `null` or in a shape the crate rejects ⇒ `None`.
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    Ok(T::deserialize(&value).ok())
}

/// The server capabilities a query consults (the `initialize` result's `capabilities`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    #[serde(default, deserialize_with = "lenient")]
    pub position_encoding: Option<PositionEncodingKind>,
    #[serde(default, deserialize_with = "lenient")]
    text_document_sync: Option<TextDocumentSync>,
    #[serde(default, deserialize_with = "lenient")]
    definition_provider: Option<DefinitionProvider>,
    #[serde(default, deserialize_with = "lenient")]
    references_provider: Option<ReferencesProvider>,
    #[serde(default, deserialize_with = "lenient")]
    implementation_provider: Option<ImplementationProvider>,
    #[serde(default, deserialize_with = "lenient")]
    hover_provider: Option<HoverProvider>,
}

impl ServerCapabilities {
    /// Reads the capabilities object; `None` when it is not an object.
    pub fn read(value: &Value) -> Option<ServerCapabilities> {
        if !value.is_object() {
            return None;
        }
        ServerCapabilities::deserialize(value).ok()
    }

    /// Whether the server announced `op` (`true` or an options object).
    pub fn supports(&self, op: LspOperation) -> bool {
        match op {
            LspOperation::GoToDefinition => matches!(
                self.definition_provider,
                Some(DefinitionProvider::Bool(true) | DefinitionProvider::DefinitionOptions(_))
            ),
            LspOperation::FindReferences => matches!(
                self.references_provider,
                Some(ReferencesProvider::Bool(true) | ReferencesProvider::ReferenceOptions(_))
            ),
            LspOperation::GoToImplementation => matches!(
                self.implementation_provider,
                Some(
                    ImplementationProvider::Bool(true)
                        | ImplementationProvider::ImplementationOptions(_)
                        | ImplementationProvider::ImplementationRegistrationOptions(_)
                )
            ),
            LspOperation::Hover => matches!(
                self.hover_provider,
                Some(HoverProvider::Bool(true) | HoverProvider::HoverOptions(_))
            ),
        }
    }

    /// Transient opening needs full or incremental sync, or `openClose: true`.
    pub fn opens_documents(&self) -> bool {
        match &self.text_document_sync {
            Some(TextDocumentSync::Kind(kind)) => {
                matches!(kind, TextDocumentSyncKind::Full | TextDocumentSyncKind::Incremental)
            }
            Some(TextDocumentSync::Options(options)) => options.open_close == Some(true),
            None => false,
        }
    }
}

/// The params of one position request (references include the declaration), as JSON.
pub fn position_params(
    op: LspOperation,
    uri: Uri,
    position: LspPosition,
) -> Result<Value, serde_json::Error> {
    let at = TextDocumentPositionParams {
        text_document: TextDocumentIdentifier { uri },
        position: Position { line: position.line, character: position.character },
    };
    let work_done_progress_params = WorkDoneProgressParams::default();
    let partial_result_params = PartialResultParams::default();
    match op {
        LspOperation::Hover => serde_json::to_value(HoverParams {
            work_done_progress_params,
            text_document_position_params: at,
        }),
        LspOperation::GoToDefinition => serde_json::to_value(DefinitionParams {
            work_done_progress_params,
            partial_result_params,
            text_document_position_params: at,
        }),
        LspOperation::GoToImplementation => serde_json::to_value(ImplementationParams {
            work_done_progress_params,
            partial_result_params,
            text_document_position_params: at,
        }),
        LspOperation::FindReferences => serde_json::to_value(ReferenceParams {
            context: ReferenceContext { include_declaration: true },
            work_done_progress_params,
            partial_result_params,
            text_document_position_params: at,
        }),
    }
}

/// A changed file as a `FileEvent` (`None` for a path no URI can name).
pub fn file_event(change: &FileChange) -> Option<FileEvent> {
    Some(FileEvent {
        uri: uri_of(&change.path)?,
        kind: FileChangeType::from(u32::from(change.kind.wire())),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn caps(value: Value) -> ServerCapabilities {
        ServerCapabilities::read(&value).unwrap()
    }

    #[test]
    fn capability_checks() {
        use LspOperation::*;
        assert!(caps(json!({"hoverProvider": true})).supports(Hover));
        assert!(caps(json!({"hoverProvider": {"workDoneProgress": true}})).supports(Hover));
        assert!(!caps(json!({"hoverProvider": false})).supports(Hover));
        assert!(!caps(json!({})).supports(Hover));
        assert!(caps(json!({"implementationProvider": {"id": "x"}})).supports(GoToImplementation));
        assert!(caps(json!({"textDocumentSync": 1})).opens_documents());
        assert!(caps(json!({"textDocumentSync": 2})).opens_documents());
        assert!(!caps(json!({"textDocumentSync": 0})).opens_documents());
        assert!(
            caps(json!({"textDocumentSync": {"openClose": true, "change": 2}})).opens_documents()
        );
        assert!(!caps(json!({"textDocumentSync": {"change": 2}})).opens_documents());
        assert!(ServerCapabilities::read(&Value::Null).is_none());
    }

    #[test]
    fn a_capability_in_an_odd_shape_counts_as_absent() {
        // Unused capabilities in shapes the crate rejects do not matter; a consulted one in
        // such a shape is simply not supported.
        let odd = caps(json!({
            "definitionProvider": true,
            "hoverProvider": "yes",
            "signatureHelpProvider": true,
            "positionEncoding": 8,
            "completionProvider": {"triggerCharacters": 3},
        }));
        assert!(odd.supports(LspOperation::GoToDefinition));
        assert!(!odd.supports(LspOperation::Hover));
        assert_eq!(odd.position_encoding, None);
        let custom = caps(json!({"positionEncoding": "utf-7"}));
        assert_eq!(custom.position_encoding.map(String::from).as_deref(), Some("utf-7"));
    }

    #[test]
    fn what_we_send() {
        let root = Path::new("/w s");
        let uri = uri_of(root).unwrap();
        let params = serde_json::to_value(initialize_params(root, &uri, None)).unwrap();
        assert_eq!(params["processId"], Value::Null);
        assert_eq!(params["rootUri"], json!("file:///w%20s"));
        assert_eq!(params["rootPath"], json!("/w s"));
        assert_eq!(
            params["workspaceFolders"],
            json!([{"uri": "file:///w%20s", "name": "workspace"}])
        );
        assert_eq!(
            params["capabilities"]["general"],
            json!({"positionEncodings": ["utf-16", "utf-8", "utf-32"]})
        );
        assert_eq!(
            params["capabilities"]["textDocument"]["hover"]["contentFormat"],
            json!(["markdown", "plaintext"])
        );
        assert!(params.get("initializationOptions").is_none());
        let position = LspPosition { line: 1, character: 2 };
        let refs = position_params(LspOperation::FindReferences, uri.clone(), position).unwrap();
        assert_eq!(
            refs,
            json!({"textDocument": {"uri": "file:///w%20s"}, "position": {"line": 1, "character": 2},
                   "context": {"includeDeclaration": true}})
        );
        let hover = position_params(LspOperation::Hover, uri, position).unwrap();
        assert!(hover.get("context").is_none());
    }
}
