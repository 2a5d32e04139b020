//! The Anthropic Messages wire format: `ChatRequest` -> JSON body, and the
//! SSE events of `POST /v1/messages` -> `StreamEvent`s.
//!
//! Encoding places prompt-cache breakpoints (opencode-spec 5.4): the first two
//! system blocks and the last block of the last two messages, four at most.
//! Decoding never panics on odd input: unknown events are skipped, bad JSON
//! is a `Malformed` error, an `error` event is classified like an HTTP error.

use serde::Deserialize;
use serde_json::{Value, json};

use super::error::Error;
use super::sse::SseEvent;
use super::{ChatMessage, ChatRequest, ChatRole, Content, StreamEvent, Usage, WireDecoder};
use crate::message::FinishReason;

/// The API version header every request carries.
pub const API_VERSION: &str = "2023-06-01";

/// Anthropic accepts at most four cache breakpoints per request.
const SYSTEM_BREAKPOINTS: usize = 2;
const MESSAGE_BREAKPOINTS: usize = 2;

/// Options of the Anthropic encoder that are not part of `ChatRequest`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnthropicOptions {
    /// Extended thinking budget; `None` leaves thinking off.
    pub thinking_budget: Option<u32>,
}

/// Builds the JSON body of `POST {base}/v1/messages`.
pub fn encode_request(request: &ChatRequest, options: AnthropicOptions) -> Value {
    let system: Vec<Value> = request
        .system
        .iter()
        .filter(|text| !text.is_empty())
        .enumerate()
        .map(|(position, text)| {
            let mut block = json!({"type": "text", "text": text});
            if position < SYSTEM_BREAKPOINTS {
                block["cache_control"] = json!({"type": "ephemeral"});
            }
            block
        })
        .collect();
    let mut messages: Vec<Value> = request.messages.iter().filter_map(encode_message).collect();
    let first_marked = messages.len().saturating_sub(MESSAGE_BREAKPOINTS);
    for message in &mut messages[first_marked..] {
        mark_last_cacheable_block(message);
    }
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_output_tokens,
        "stream": true,
        "messages": messages,
    });
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters}))
            .collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(budget) = options.thinking_budget {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    } else if let Some(temperature) = request.temperature {
        // Anthropic rejects a temperature other than 1 together with thinking.
        body["temperature"] = super::temperature_json(temperature);
    }
    body
}

/// Thinking blocks cannot carry `cache_control`, so the mark goes on the last
/// block that can.
fn mark_last_cacheable_block(message: &mut Value) {
    let Some(blocks) = message.get_mut("content").and_then(Value::as_array_mut) else {
        return;
    };
    let cacheable = blocks.iter_mut().rev().find(|block| {
        !matches!(
            block["type"].as_str(),
            Some("thinking" | "redacted_thinking")
        )
    });
    if let Some(block) = cacheable {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
}

/// One message; `None` when nothing in it can be sent (Anthropic rejects
/// empty text blocks and empty messages).
fn encode_message(message: &ChatMessage) -> Option<Value> {
    let mut blocks: Vec<Value> = message.content.iter().filter_map(encode_block).collect();
    if message.role == ChatRole::User {
        // Tool results must open the user turn that follows the tool calls.
        blocks.sort_by_key(|block| block["type"] != "tool_result");
    }
    if blocks.is_empty() {
        return None;
    }
    Some(json!({"role": message.role, "content": blocks}))
}

fn encode_block(content: &Content) -> Option<Value> {
    Some(match content {
        Content::Text { text } if text.is_empty() => return None,
        Content::Text { text } => json!({"type": "text", "text": text}),
        Content::Image { mime, data } => image_block(mime, data),
        // Unsigned reasoning came from another provider: Anthropic would reject it.
        Content::Reasoning {
            signature: None, ..
        } => return None,
        Content::Reasoning {
            text,
            signature: Some(signature),
        } => json!({"type": "thinking", "thinking": text, "signature": signature}),
        Content::RedactedReasoning { data } => json!({"type": "redacted_thinking", "data": data}),
        Content::ToolCall { id, name, input } => {
            // Unparseable arguments are kept as a JSON string; the API wants an object.
            let input = if input.is_object() {
                input.clone()
            } else {
                json!({})
            };
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        Content::ToolResult {
            call_id,
            content,
            is_error,
        } => {
            let parts: Vec<Value> = content.iter().filter_map(encode_block).collect();
            let mut block =
                json!({"type": "tool_result", "tool_use_id": call_id, "content": parts});
            if *is_error {
                block["is_error"] = json!(true);
            }
            block
        }
    })
}

fn image_block(mime: &str, data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
}

/// The block being streamed at each `index`.
#[derive(Debug)]
enum OpenBlock {
    Text,
    Thinking {
        signature: String,
    },
    Other,
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
}

/// Turns Anthropic SSE events into `StreamEvent`s.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    blocks: Vec<Option<OpenBlock>>,
    usage: Usage,
    stop: Option<FinishReason>,
    done: bool,
}

#[derive(Deserialize)]
struct TypeOnly<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct MessageStart {
    message: MessageStartBody,
}

#[derive(Deserialize)]
struct MessageStartBody {
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
struct BlockStart {
    index: usize,
    content_block: BlockStartBody,
}

#[derive(Deserialize)]
struct BlockStartBody {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    thinking: Option<String>,
    data: Option<String>,
    id: Option<String>,
    name: Option<String>,
}

#[derive(Deserialize)]
struct BlockDelta {
    index: usize,
    delta: BlockDeltaBody,
}

#[derive(Deserialize)]
struct BlockDeltaBody {
    text: Option<String>,
    thinking: Option<String>,
    signature: Option<String>,
    partial_json: Option<String>,
}

#[derive(Deserialize)]
struct BlockStop {
    index: usize,
}

#[derive(Deserialize)]
struct MessageDelta {
    delta: MessageDeltaBody,
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    stop_reason: Option<String>,
}

const PROVIDER: &str = "anthropic";

/// More content blocks than any real message has (one per text, thinking
/// and tool call); a larger index is a broken stream.
const MAX_BLOCKS: usize = 4096;

fn parse<'a, T: Deserialize<'a>>(data: &'a str) -> Result<T, Error> {
    serde_json::from_str(data).map_err(|error| Error::malformed_event(PROVIDER, error, data))
}

impl AnthropicDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn apply_usage(&mut self, usage: &WireUsage) {
        // input_tokens already excludes cache reads and writes.
        if let Some(input) = usage.input_tokens {
            self.usage.input = input;
        }
        if let Some(output) = usage.output_tokens {
            self.usage.output = output;
        }
        if let Some(write) = usage.cache_creation_input_tokens {
            self.usage.cache_write = write;
        }
        if let Some(read) = usage.cache_read_input_tokens {
            self.usage.cache_read = read;
        }
    }

    fn block_start(&mut self, start: BlockStart, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        if start.index >= MAX_BLOCKS {
            // The index sizes a vector: a hostile one would allocate without bound.
            return Err(Error::malformed(
                PROVIDER,
                format!(
                    "content block index {} (at most {MAX_BLOCKS} blocks are read)",
                    start.index
                ),
            ));
        }
        let body = start.content_block;
        let block = match body.kind.as_str() {
            "text" => {
                push_text(out, body.text, |text| StreamEvent::TextDelta { text });
                OpenBlock::Text
            }
            "thinking" => {
                push_text(out, body.thinking, |text| StreamEvent::ReasoningDelta {
                    text,
                });
                OpenBlock::Thinking {
                    signature: String::new(),
                }
            }
            "redacted_thinking" => {
                out.push(StreamEvent::RedactedReasoning {
                    data: body.data.unwrap_or_default(),
                });
                OpenBlock::Other
            }
            "tool_use" => {
                let id = body.id.unwrap_or_default();
                let name = body.name.unwrap_or_default();
                out.push(StreamEvent::ToolCallStart {
                    id: id.clone(),
                    name: name.clone(),
                });
                OpenBlock::ToolUse {
                    id,
                    name,
                    json: String::new(),
                }
            }
            // server_tool_use, web_search results...: not requested, not shown.
            _ => OpenBlock::Other,
        };
        if self.blocks.len() <= start.index {
            self.blocks.resize_with(start.index + 1, || None);
        }
        self.blocks[start.index] = Some(block);
        Ok(())
    }

    fn block_delta(&mut self, delta: BlockDelta, out: &mut Vec<StreamEvent>) {
        let Some(Some(block)) = self.blocks.get_mut(delta.index) else {
            return;
        };
        let body = delta.delta;
        match block {
            OpenBlock::Text => push_text(out, body.text, |text| StreamEvent::TextDelta { text }),
            OpenBlock::Thinking { signature } => {
                push_text(out, body.thinking, |text| StreamEvent::ReasoningDelta {
                    text,
                });
                if let Some(piece) = body.signature {
                    signature.push_str(&piece);
                }
            }
            OpenBlock::ToolUse { id, json, .. } => {
                if let Some(arguments) = body.partial_json.filter(|piece| !piece.is_empty()) {
                    json.push_str(&arguments);
                    out.push(StreamEvent::ToolCallDelta {
                        id: id.clone(),
                        arguments,
                    });
                }
            }
            OpenBlock::Other => {}
        }
    }

    fn block_stop(&mut self, index: usize, out: &mut Vec<StreamEvent>) {
        let Some(block) = self.blocks.get_mut(index).and_then(Option::take) else {
            return;
        };
        match block {
            OpenBlock::Thinking { signature } if !signature.is_empty() => {
                out.push(StreamEvent::ReasoningSignature { signature });
            }
            OpenBlock::ToolUse { id, name, json } => {
                out.push(StreamEvent::ToolCallEnd {
                    id,
                    name,
                    input: parse_arguments(&json),
                });
            }
            _ => {}
        }
    }
}

fn push_text(
    out: &mut Vec<StreamEvent>,
    text: Option<String>,
    event: impl FnOnce(String) -> StreamEvent,
) {
    if let Some(text) = text.filter(|text| !text.is_empty()) {
        out.push(event(text));
    }
}

/// Tool arguments as JSON; empty means no arguments; invalid JSON is kept as
/// a string so the tool layer can tell the model what it sent.
pub(crate) fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

fn finish_reason(stop_reason: &str) -> FinishReason {
    match stop_reason {
        "end_turn" | "stop_sequence" | "pause_turn" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        _ => FinishReason::Unknown,
    }
}

impl WireDecoder for AnthropicDecoder {
    fn decode(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        if self.done {
            return Ok(());
        }
        let kind = if event.event.is_empty() {
            parse::<TypeOnly>(&event.data)?.kind
        } else {
            event.event.as_str()
        };
        match kind {
            "message_start" => {
                let start: MessageStart = parse(&event.data)?;
                self.apply_usage(&start.message.usage);
            }
            "content_block_start" => self.block_start(parse(&event.data)?, out)?,
            "content_block_delta" => self.block_delta(parse(&event.data)?, out),
            "content_block_stop" => self.block_stop(parse::<BlockStop>(&event.data)?.index, out),
            "message_delta" => {
                let delta: MessageDelta = parse(&event.data)?;
                if let Some(reason) = delta.delta.stop_reason {
                    self.stop = Some(finish_reason(&reason));
                }
                self.apply_usage(&delta.usage);
            }
            "message_stop" => {
                self.done = true;
                out.push(StreamEvent::Finish {
                    reason: self.stop.unwrap_or(FinishReason::Unknown),
                    usage: self.usage,
                });
            }
            "error" => {
                let value: Value = parse(&event.data)?;
                return Err(Error::from_stream_error(PROVIDER, &value));
            }
            // ping, and event types added after this code was written.
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        if self.done {
            Ok(())
        } else {
            Err(Error::truncated(PROVIDER, "no message_stop"))
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
