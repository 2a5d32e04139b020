//! LLM providers: one internal request and one stream of events, three wire formats.
//!
//! `ChatRequest` is what the session layer wants to send, provider-neutral;
//! each backend (anthropic.rs, openai.rs) encodes it to its wire format and
//! decodes the SSE reply into `StreamEvent`s. Tool results travel in user
//! messages (Anthropic's shape); the OpenAI encoder splits them into `tool`
//! role messages. This layer never touches the store or the bus; retries report
//! their countdown through a callback the caller supplies.
//!
//! - `client`    `Provider`: HTTP, stall timeout, cancellation, `stream_with_retry`
//! - `sse`       bytes -> SSE events (which events each provider sends)
//! - `anthropic`, `openai`, `responses`  encode `ChatRequest`, decode events
//!   into `StreamEvent`s (Messages, Chat Completions, Responses)
//! - `error`, `classify`    `Error` + `ErrorKind`; status/body -> kind
//! - `retry`     backoff, `retry-after`, `RetryNotice` for the countdown
//! - `presets`   built-in providers and `resolve_provider`
//! - `catalog`   model limits and prices, `cost`, `probe_context` for local servers
//! - `server_kind`  which local server a base URL is (llama-server, vLLM), remembered
//! - `tokenize`  exact prompt counts from a local llama-server's tokenizer

use serde::Serialize;
use serde_json::Value;

use crate::message::FinishReason;

pub mod anthropic;
pub mod catalog;
pub mod classify;
pub mod client;
pub mod discover;
pub mod error;
pub mod openai;
pub mod presets;
pub mod responses;
pub mod retry;
pub mod server_kind;
pub mod sse;
pub mod tokenize;

pub use client::{DEFAULT_STALL_TIMEOUT, Endpoint, EventStream, Provider, Wire};
pub use error::{Error, ErrorKind};
pub use presets::{ProviderOverrides, resolve_provider};
pub use retry::{RetryNotice, RetryPolicy};

/// A temperature as JSON without f32 noise (`0.2`, not `0.20000000298023224`).
pub(crate) fn temperature_json(temperature: f32) -> Value {
    let shortest = temperature.to_string();
    shortest
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// Decodes one wire format's SSE events into `StreamEvent`s; one per response.
pub trait WireDecoder: Send {
    /// Handles one event, appending what it completes to `out`.
    ///
    /// # Errors
    /// A malformed event, or an error the server reported inside the stream.
    fn decode(&mut self, event: &sse::SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), Error>;

    /// The body ended. Emits what was waiting for the end, or fails when the
    /// format's end marker never came (a dropped connection).
    ///
    /// # Errors
    /// `Network` when the stream was cut before its end marker.
    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), Error>;

    /// `Finish` was emitted; nothing after it matters.
    fn is_done(&self) -> bool;
}

/// One piece of message content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    Text {
        text: String,
    },
    /// Base64 image data.
    Image {
        mime: String,
        data: String,
    },
    /// Model reasoning; `signature` must be echoed back for Anthropic thinking.
    Reasoning {
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    RedactedReasoning {
        data: String,
    },
    ToolCall {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        call_id: String,
        /// Text output, plus images for providers that take media in tool results.
        content: Vec<Content>,
        is_error: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: Vec<Content>,
}

/// A tool the model may call, with a JSON schema for its arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// Everything needed for one model call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest {
    /// The provider's own model id (`claude-sonnet-4-5`, `gpt-5`).
    pub model: String,
    /// System blocks, in order; caching marks at most the first two.
    pub system: Vec<String>,
    pub messages: Vec<ChatMessage>,
    /// Sorted by name so the request prefix stays byte-stable for caching.
    pub tools: Vec<ToolSpec>,
    pub max_output_tokens: u32,
    pub temperature: Option<f32>,
    /// Sent as `prompt_cache_key` where the provider supports it.
    pub cache_key: Option<String>,
}

/// Token usage as the provider reported it, normalized so the fields do not
/// overlap: `input` excludes cache reads and writes, `output` excludes reasoning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub reasoning: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Usage {
    pub fn to_tokens(self) -> crate::message::Tokens {
        crate::message::Tokens {
            total: None,
            input: self.input,
            output: self.output,
            reasoning: self.reasoning,
            cache: crate::message::CacheTokens {
                read: self.cache_read,
                write: self.cache_write,
            },
        }
    }
}

/// What a streaming response says, in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    TextDelta {
        text: String,
    },
    ReasoningDelta {
        text: String,
    },
    /// Signature closing the current reasoning block (Anthropic).
    ReasoningSignature {
        signature: String,
    },
    RedactedReasoning {
        data: String,
    },
    /// A tool call begins; arguments follow as deltas.
    ToolCallStart {
        id: String,
        name: String,
    },
    ToolCallDelta {
        id: String,
        arguments: String,
    },
    /// The call's arguments are complete. `input` is the parsed JSON, or the
    /// raw text as a JSON string when it was not valid JSON (the tool layer
    /// answers that with an invalid-arguments error the model can read).
    ToolCallEnd {
        id: String,
        name: String,
        input: Value,
    },
    /// The step ended.
    Finish {
        reason: FinishReason,
        usage: Usage,
    },
}
