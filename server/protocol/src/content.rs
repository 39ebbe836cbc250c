//! Model-facing content blocks: what a tool's Native rendering produces.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One block of model-facing content, tagged by `type` (MCP-style).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ContentBlock {
    /// Plain text.
    Text { text: String },
    /// An image, base64 in `data`. In the session log `data` is replaced by a blob reference.
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// The block's text, if it is a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text { text } => Some(text),
            ContentBlock::Image { .. } => None,
        }
    }

    /// The block's `type` tag.
    pub fn type_name(&self) -> &'static str {
        match self {
            ContentBlock::Text { .. } => "text",
            ContentBlock::Image { .. } => "image",
        }
    }
}

/// Concatenates the text of every text block; other blocks render as `[<type> content]`, joined by
/// a newline. This is how a blocked result's message and a card's `text` are derived.
pub fn joined_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .map(|block| match block.as_text() {
            Some(text) => text.to_owned(),
            None => format!("[{} content]", block.type_name()),
        })
        .collect::<Vec<_>>()
        .join("\n")
}
