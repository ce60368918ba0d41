//! The result of a tool whose manifest says `returns: content`: content blocks as MCP carries
//! them (text, images, audio, embedded resources). The generated `Output` of such a tool is
//! [`ToolContent`]; it serializes to exactly the JSON the tool's result schema
//! (`toolc_core::content::schema`) describes, so the registry checks it like any result, and
//! `McpServer` answers with the blocks themselves.

use serde::{Deserialize, Serialize};

/// A content tool's result: its blocks, in order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolContent {
    /// The blocks, in the order the tool produced them.
    pub content: Vec<ContentBlock>,
}

/// One block of a [`ToolContent`]. `data` and `blob` are base64.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text itself.
        text: String,
    },
    /// An image.
    Image {
        /// The image's bytes, base64.
        data: String,
        /// The image's MIME type, e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A sound.
    Audio {
        /// The sound's bytes, base64.
        data: String,
        /// The sound's MIME type, e.g. `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource embedded in the result.
    Resource {
        /// The resource, with its URI and content.
        resource: EmbeddedResource,
    },
}

/// A resource carried inside a result: its URI and its text or (base64) bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// The resource's MIME type, when known.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The resource's content as text; `None` when it is binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The resource's content as base64 bytes; `None` when it is text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl ToolContent {
    /// No blocks yet; add them with [`ToolContent::text`], [`ToolContent::image`], ...
    pub fn new() -> ToolContent {
        ToolContent::default()
    }

    /// Adds a text block.
    pub fn text(mut self, text: impl Into<String>) -> ToolContent {
        self.content.push(ContentBlock::Text { text: text.into() });
        self
    }

    /// Adds an image: `data` is the base64 of its bytes, `mime_type` e.g. `image/png`.
    pub fn image(mut self, data: impl Into<String>, mime_type: impl Into<String>) -> ToolContent {
        self.content.push(ContentBlock::Image {
            data: data.into(),
            mime_type: mime_type.into(),
        });
        self
    }

    /// Adds a sound: `data` is the base64 of its bytes, `mime_type` e.g. `audio/wav`.
    pub fn audio(mut self, data: impl Into<String>, mime_type: impl Into<String>) -> ToolContent {
        self.content.push(ContentBlock::Audio {
            data: data.into(),
            mime_type: mime_type.into(),
        });
        self
    }

    /// Adds a resource with text content.
    pub fn resource_text(
        mut self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> ToolContent {
        self.content.push(ContentBlock::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: Some(text.into()),
                blob: None,
            },
        });
        self
    }

    /// Adds a resource with binary content (`blob` is base64).
    pub fn resource_blob(
        mut self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        blob: impl Into<String>,
    ) -> ToolContent {
        self.content.push(ContentBlock::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: None,
                blob: Some(blob.into()),
            },
        });
        self
    }
}
