//! The OpenAI Responses wire format (`POST /responses`), which OpenAI's newest
//! coding models (`*-codex`, `*-pro`) are served through.
//!
//! Stateless: every request carries the whole input with `store: false`,
//! because cairn's store is the source of truth and a server-side
//! conversation would drift from it after a prune or a compaction. Reasoning
//! summaries stream in as reasoning; the reasoning itself is not echoed back
//! (as on the Chat Completions wire), so no encrypted state is kept.
//!
//! Decoding follows the semantic events: text and reasoning-summary deltas,
//! function calls keyed by their output item, and one terminal event
//! (`response.completed`, `.incomplete` or `.failed`); there is no `[DONE]`.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::anthropic::parse_arguments;
use super::error::Error;
use super::sse::SseEvent;
use super::{ChatMessage, ChatRequest, ChatRole, Content, StreamEvent, Usage, WireDecoder};
use crate::message::FinishReason;

/// Options of the Responses encoder that depend on the provider or model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponsesOptions {
    /// Send `prompt_cache_key` (OpenAI does; other servers may reject it).
    pub sends_prompt_cache_key: bool,
    /// Ask for reasoning summaries: only reasoning models accept `reasoning`.
    pub reasoning_summaries: bool,
}

/// Builds the JSON body of `POST {base_url}/responses`.
pub fn encode_request(request: &ChatRequest, options: ResponsesOptions) -> Value {
    let mut input = Vec::new();
    for message in &request.messages {
        match message.role {
            ChatRole::User => encode_user(message, &mut input),
            ChatRole::Assistant => encode_assistant(message, &mut input),
        }
    }
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
        "max_output_tokens": request.max_output_tokens,
    });
    let system: Vec<&str> = request
        .system
        .iter()
        .map(String::as_str)
        .filter(|text| !text.is_empty())
        .collect();
    if !system.is_empty() {
        body["instructions"] = json!(system.join("\n\n"));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "name": tool.name, "description": tool.description,
                    "parameters": tool.parameters, "strict": false})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = super::temperature_json(temperature);
    }
    if let (true, Some(key)) = (options.sends_prompt_cache_key, &request.cache_key) {
        body["prompt_cache_key"] = json!(key);
    }
    if options.reasoning_summaries {
        body["reasoning"] = json!({"summary": "auto"});
    }
    body
}

/// Tool results become `function_call_output` items (they answer the calls
/// just before them); the rest stays a user message. Images a tool returned
/// follow in that user message, as a call's output here is text.
fn encode_user(message: &ChatMessage, input: &mut Vec<Value>) {
    let mut parts = Vec::new();
    let mut tool_images = Vec::new();
    for content in &message.content {
        match content {
            Content::ToolResult {
                call_id, content, ..
            } => {
                let mut output = Vec::new();
                for part in content {
                    match part {
                        Content::Text { text } => output.push(text.as_str()),
                        Content::Image { mime, data } => tool_images.push(image_part(mime, data)),
                        _ => {}
                    }
                }
                input.push(json!({"type": "function_call_output", "call_id": call_id,
                    "output": output.join("\n")}));
            }
            Content::Text { text } if !text.is_empty() => {
                parts.push(json!({"type": "input_text", "text": text}));
            }
            Content::Image { mime, data } => parts.push(image_part(mime, data)),
            _ => {}
        }
    }
    if !tool_images.is_empty() {
        parts.insert(
            0,
            json!({"type": "input_text", "text": "Images returned by the tool calls above:"}),
        );
        parts.splice(1..1, tool_images);
    }
    if !parts.is_empty() {
        input.push(json!({"type": "message", "role": "user", "content": parts}));
    }
}

fn image_part(mime: &str, data: &str) -> Value {
    json!({"type": "input_image", "image_url": format!("data:{mime};base64,{data}")})
}

/// The assistant's text as one message, then its calls as `function_call`
/// items, in the order the model produced them within a step.
fn encode_assistant(message: &ChatMessage, input: &mut Vec<Value>) {
    let text: String = message
        .content
        .iter()
        .filter_map(|content| match content {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if !text.is_empty() {
        input.push(json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text}]}));
    }
    for content in &message.content {
        if let Content::ToolCall {
            id,
            name,
            input: arguments,
        } = content
        {
            let arguments = match arguments {
                Value::String(raw) => raw.clone(),
                other => other.to_string(),
            };
            input.push(json!({"type": "function_call", "call_id": id, "name": name,
                "arguments": arguments}));
        }
    }
}

const PROVIDER: &str = "OpenAI Responses API";

/// More calls than any model makes in one step; more is a broken stream.
const MAX_TOOL_CALLS: usize = 1024;

/// One event; `type` names it (the SSE `event:` line repeats it).
#[derive(Deserialize)]
struct WireEvent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    item_id: Option<String>,
    #[serde(default)]
    summary_index: Option<u64>,
    #[serde(default)]
    item: Option<Item>,
    #[serde(default)]
    response: Option<WireResponse>,
    /// The `error` event's own fields.
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    input_tokens_details: Option<InputDetails>,
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct OutputDetails {
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// Cached tokens are counted inside `input_tokens` and reasoning inside
    /// `output_tokens`; `Usage` keeps them apart.
    fn normalize(&self) -> Usage {
        let cached = self
            .input_tokens_details
            .as_ref()
            .and_then(|details| details.cached_tokens)
            .unwrap_or(0);
        let reasoning = self
            .output_tokens_details
            .as_ref()
            .and_then(|details| details.reasoning_tokens)
            .unwrap_or(0);
        Usage {
            input: self.input_tokens.saturating_sub(cached),
            output: self.output_tokens.saturating_sub(reasoning),
            reasoning,
            cache_read: cached,
            cache_write: 0,
        }
    }
}

/// A function call being assembled, keyed by its output item's id.
#[derive(Debug)]
struct PendingCall {
    call_id: String,
    name: String,
    arguments: String,
}

/// Turns Responses API events into `StreamEvent`s.
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    calls: HashMap<String, PendingCall>,
    /// Item ids in the order their calls began, to end them in that order.
    order: Vec<String>,
    made_calls: bool,
    done: bool,
}

impl ResponsesDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn item_added(&mut self, item: Item, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        if item.kind != "function_call" {
            return Ok(());
        }
        if self.calls.len() >= MAX_TOOL_CALLS {
            return Err(Error::malformed(
                PROVIDER,
                format!("more than {MAX_TOOL_CALLS} function calls in one response"),
            ));
        }
        let key = item.id.clone().unwrap_or_default();
        let call_id = item
            .call_id
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| format!("call_{}", self.order.len()));
        let name = item.name.unwrap_or_default();
        let arguments = item.arguments.unwrap_or_default();
        out.push(StreamEvent::ToolCallStart {
            id: call_id.clone(),
            name: name.clone(),
        });
        if !arguments.is_empty() {
            out.push(StreamEvent::ToolCallDelta {
                id: call_id.clone(),
                arguments: arguments.clone(),
            });
        }
        self.made_calls = true;
        self.order.push(key.clone());
        self.calls.insert(
            key,
            PendingCall {
                call_id,
                name,
                arguments,
            },
        );
        Ok(())
    }

    fn arguments_delta(
        &mut self,
        item_id: Option<String>,
        delta: String,
        out: &mut Vec<StreamEvent>,
    ) {
        let Some(call) = self.calls.get_mut(&item_id.unwrap_or_default()) else {
            return; // arguments of a call never announced: nothing can run them
        };
        call.arguments.push_str(&delta);
        out.push(StreamEvent::ToolCallDelta {
            id: call.call_id.clone(),
            arguments: delta,
        });
    }

    /// The item's final `arguments` win over the pieces: they are the whole.
    fn item_done(&mut self, item: Item, out: &mut Vec<StreamEvent>) {
        if item.kind != "function_call" {
            return;
        }
        let key = item.id.unwrap_or_default();
        let Some(mut call) = self.calls.remove(&key) else {
            return;
        };
        self.order.retain(|pending| *pending != key);
        if let Some(arguments) = item.arguments {
            call.arguments = arguments;
        }
        end_call(call, out);
    }

    fn end_pending_calls(&mut self, out: &mut Vec<StreamEvent>) {
        for key in std::mem::take(&mut self.order) {
            if let Some(call) = self.calls.remove(&key) {
                end_call(call, out);
            }
        }
    }

    fn terminal(&mut self, response: Option<WireResponse>, out: &mut Vec<StreamEvent>) {
        let (usage, incomplete) = match response {
            Some(response) => (
                response.usage.map(|usage| usage.normalize()),
                response
                    .incomplete_details
                    .and_then(|details| details.reason),
            ),
            None => (None, None),
        };
        let reason = match incomplete.as_deref() {
            Some("max_output_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(_) => FinishReason::Unknown,
            None if self.made_calls => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        };
        self.end_pending_calls(out);
        self.done = true;
        out.push(StreamEvent::Finish {
            reason,
            usage: usage.unwrap_or_default(),
        });
    }
}

fn end_call(call: PendingCall, out: &mut Vec<StreamEvent>) {
    out.push(StreamEvent::ToolCallEnd {
        input: parse_arguments(&call.arguments),
        id: call.call_id,
        name: call.name,
    });
}

/// The error of a `response.failed` or `error` event, in the shape the
/// classifier reads from HTTP bodies (`{"error": {"code", "message"}}`).
fn stream_error(error: Value) -> Error {
    Error::from_stream_error(PROVIDER, &json!({ "error": error }))
}

impl WireDecoder for ResponsesDecoder {
    fn decode(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        if self.done {
            return Ok(());
        }
        let event: WireEvent = serde_json::from_str(&event.data)
            .map_err(|error| Error::malformed_event(PROVIDER, error, &event.data))?;
        match event.kind.as_str() {
            "response.output_text.delta" | "response.refusal.delta" => {
                push_delta(out, event.delta, |text| StreamEvent::TextDelta { text });
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                push_delta(out, event.delta, |text| StreamEvent::ReasoningDelta {
                    text,
                });
            }
            "response.reasoning_summary_part.added" if event.summary_index.unwrap_or(0) > 0 => {
                out.push(StreamEvent::ReasoningDelta {
                    text: "\n\n".into(),
                });
            }
            "response.output_item.added" => {
                if let Some(item) = event.item {
                    self.item_added(item, out)?;
                }
            }
            "response.function_call_arguments.delta" => {
                self.arguments_delta(event.item_id, event.delta.unwrap_or_default(), out);
            }
            "response.output_item.done" => {
                if let Some(item) = event.item {
                    self.item_done(item, out);
                }
            }
            "response.completed" | "response.incomplete" => self.terminal(event.response, out),
            "response.failed" => {
                let error = event
                    .response
                    .and_then(|response| response.error)
                    .unwrap_or_else(|| json!({"message": "the response failed"}));
                return Err(stream_error(error));
            }
            "error" => {
                return Err(stream_error(json!({
                    "code": event.code,
                    "message": event.message.unwrap_or_else(|| "error event".into()),
                })));
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        if self.done {
            return Ok(());
        }
        Err(Error::truncated(PROVIDER, "no response.completed"))
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

fn push_delta(
    out: &mut Vec<StreamEvent>,
    delta: Option<String>,
    event: impl FnOnce(String) -> StreamEvent,
) {
    if let Some(text) = delta.filter(|text| !text.is_empty()) {
        out.push(event(text));
    }
}
