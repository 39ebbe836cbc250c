//! What a client hands over with a session and its prompts, turned into toolhost's terms: its MCP
//! servers as `[mcp.servers]` entries, and a prompt's content blocks as one text.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource, McpServer};

/// The MCP servers the client passes with a session join the configured ones (they are the
/// person's own editor settings, so no trust rule applies). Names are made valid tool-name parts;
/// a name the configuration already uses keeps the configured server. SSE servers are not
/// supported (the capability says so) and are skipped.
pub fn add_client_mcp_servers(
    servers: &mut Vec<toolhost_tools_mcp::McpServerConfig>,
    from_client: &[McpServer],
) {
    use toolhost_tools_mcp::{McpServerConfig, McpTransport};
    for server in from_client {
        let (name, transport) = match server {
            McpServer::Stdio(stdio) => (
                &stdio.name,
                McpTransport::Stdio {
                    command: stdio.command.to_string_lossy().into_owned(),
                    args: stdio.args.clone(),
                    env: stdio.env.iter().map(|v| (v.name.clone(), v.value.clone())).collect(),
                    cwd: None,
                },
            ),
            McpServer::Http(http) => (
                &http.name,
                McpTransport::Http {
                    url: http.url.clone(),
                    headers: http
                        .headers
                        .iter()
                        .map(|h| (h.name.clone(), h.value.clone()))
                        .collect(),
                },
            ),
            other => {
                tracing::warn!(
                    ?other,
                    "an MCP server of a kind toolhost does not support is skipped"
                );
                continue;
            }
        };
        let valid = Some(toolhost_tools_mcp::naming::server_name(name))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "client".to_owned());
        if servers.iter().any(|s| s.name == valid) {
            tracing::warn!(name = %valid, "the client's MCP server has the name of a configured one; the configured one is kept");
            continue;
        }
        servers.push(McpServerConfig::new(valid, transport));
    }
}

/// The text of a prompt's blocks: text as is, a linked resource by its URI, an embedded one as
/// a context block the model can read.
pub fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => parts.push(format!("@{}", link.uri)),
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(r) => {
                    parts.push(format!("<context uri=\"{}\">\n{}\n</context>", r.uri, r.text))
                }
                EmbeddedResourceResource::BlobResourceContents(r) => {
                    parts.push(format!("@{}", r.uri))
                }
                _ => {}
            },
            _ => {}
        }
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, McpServerHttp, McpServerStdio, ResourceLink, TextContent,
        TextResourceContents,
    };

    #[test]
    fn prompt_blocks_become_one_text_with_links_and_context() {
        let blocks = vec![
            ContentBlock::Text(TextContent::new("fix the bug in")),
            ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///w/main.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/lib.rs",
                )),
            )),
        ];
        assert_eq!(
            prompt_text(&blocks),
            "fix the bug in\n@file:///w/main.rs\n<context uri=\"file:///w/lib.rs\">\nfn main() {}\n</context>"
        );
    }

    #[test]
    fn the_clients_mcp_servers_get_valid_names_and_never_replace_configured_ones() {
        use toolhost_tools_mcp::{McpServerConfig, McpTransport};
        let configured = McpTransport::Http {
            url: "http://127.0.0.1:1/mcp".into(),
            headers: Default::default(),
        };
        let mut servers = vec![McpServerConfig::new("docs", configured.clone())];
        let from_client = vec![
            McpServer::Stdio(
                McpServerStdio::new("py tools", "/usr/bin/python3").args(vec!["s.py".into()]),
            ),
            McpServer::Http(McpServerHttp::new("docs", "http://127.0.0.1:2/mcp")),
        ];
        add_client_mcp_servers(&mut servers, &from_client);
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["docs", "py_tools"]);
        assert_eq!(servers[0].transport, configured);
        assert!(matches!(&servers[1].transport, McpTransport::Stdio { command, args, .. }
            if command == "/usr/bin/python3" && args == &["s.py".to_owned()]));
    }
}
