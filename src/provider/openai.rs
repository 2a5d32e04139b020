//! The OpenAI Chat Completions wire format, spoken by OpenAI and by most other
//! servers (OpenRouter, DeepSeek, Groq, llama-server, vLLM, Ollama, LM Studio).
//!
//! Encoding splits our user-role tool results into `tool` messages and drops
//! reasoning (Chat Completions has no field to echo it). Decoding assembles
//! tool calls by index across chunks and emits `Finish` once, at `[DONE]`,
//! because the usage chunk arrives after the chunk carrying `finish_reason`.

use serde::Deserialize;
use serde_json::{Value, json};

use super::anthropic::parse_arguments;
use super::error::Error;
use super::sse::SseEvent;
use super::{ChatMessage, ChatRequest, ChatRole, Content, StreamEvent, Usage, WireDecoder};
use crate::message::FinishReason;

/// Options of the OpenAI encoder that depend on the provider, not the request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenAiOptions {
    /// Send `prompt_cache_key` (OpenAI, OpenRouter); other servers reject or ignore it.
    pub sends_prompt_cache_key: bool,
    /// OpenAI's reasoning models refuse `max_tokens` and want `max_completion_tokens`.
    pub uses_max_completion_tokens: bool,
}

/// Builds the JSON body of `POST {base_url}/chat/completions`.
pub fn encode_request(request: &ChatRequest, options: OpenAiOptions) -> Value {
    let mut messages = Vec::new();
    let system: Vec<&str> = request
        .system
        .iter()
        .map(String::as_str)
        .filter(|text| !text.is_empty())
        .collect();
    if !system.is_empty() {
        // One system message: several confuse the chat templates of local servers.
        messages.push(json!({"role": "system", "content": system.join("\n\n")}));
    }
    for message in &request.messages {
        match message.role {
            ChatRole::User => encode_user(message, &mut messages),
            ChatRole::Assistant => encode_assistant(message, &mut messages),
        }
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let limit_field = if options.uses_max_completion_tokens {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[limit_field] = json!(request.max_output_tokens);
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name, "description": tool.description, "parameters": tool.parameters,
                }})
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
    if is_claude(&request.model) {
        place_cache_breakpoints(&mut body["messages"]);
    }
    body
}

/// A Claude model behind an OpenAI-compatible gateway (OpenRouter's
/// `anthropic/claude-sonnet-4.5`, LiteLLM's `claude-...`). Anthropic caches
/// only what `cache_control` marks, and the gateways pass the marks on; any
/// other model ignores them or caches on its own, so they go to Claude only.
fn is_claude(model: &str) -> bool {
    model.to_ascii_lowercase().contains("claude")
}

/// Anthropic's placement rule (see `anthropic`): the system prompt, and the
/// last part of the last two messages that can carry a mark (an assistant
/// turn of tool calls only cannot), so the next request reads the prefix
/// this one writes. Three marks; Anthropic allows four.
fn place_cache_breakpoints(messages: &mut Value) {
    let Some(messages) = messages.as_array_mut() else {
        return;
    };
    if let Some(system) = messages.first_mut().filter(|m| m["role"] == "system") {
        mark_last_part(system);
    }
    let mut marked = 0;
    for message in messages.iter_mut().rev() {
        if marked == MESSAGE_BREAKPOINTS {
            break;
        }
        if message["role"] != "system" && mark_last_part(message) {
            marked += 1;
        }
    }
}

/// Marks a message's last content part, turning text content into a part
/// list first (a mark needs a part to sit on); false when it has no content.
fn mark_last_part(message: &mut Value) -> bool {
    let content = &mut message["content"];
    if let Some(text) = content.as_str().filter(|text| !text.is_empty()) {
        *content = json!([{"type": "text", "text": text}]);
    }
    match content.as_array_mut().and_then(|parts| parts.last_mut()) {
        Some(part) => {
            part["cache_control"] = json!({"type": "ephemeral"});
            true
        }
        None => false,
    }
}

/// Messages after the system prompt that get a cache mark.
const MESSAGE_BREAKPOINTS: usize = 2;

/// Tool results become `tool` messages first (they must follow the assistant
/// turn that called them); the rest stays a user message. Images a tool
/// returned go into that user message, as `tool` messages take only text.
fn encode_user(message: &ChatMessage, messages: &mut Vec<Value>) {
    let mut parts = Vec::new();
    let mut tool_images = Vec::new();
    for content in &message.content {
        match content {
            Content::ToolResult {
                call_id, content, ..
            } => {
                let mut text = String::new();
                for part in content {
                    match part {
                        Content::Text { text: piece } => {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(piece);
                        }
                        Content::Image { mime, data } => tool_images.push(image_part(mime, data)),
                        _ => {}
                    }
                }
                messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": text}));
            }
            Content::Text { text } if !text.is_empty() => {
                parts.push(json!({"type": "text", "text": text}))
            }
            Content::Image { mime, data } => parts.push(image_part(mime, data)),
            _ => {}
        }
    }
    if !tool_images.is_empty() {
        parts.insert(
            0,
            json!({"type": "text", "text": "Images returned by the tool calls above:"}),
        );
        parts.splice(1..1, tool_images);
    }
    match parts.as_slice() {
        [] => {}
        [only] if only["type"] == "text" => {
            messages.push(json!({"role": "user", "content": only["text"]}))
        }
        _ => messages.push(json!({"role": "user", "content": parts})),
    }
}

fn image_part(mime: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}})
}

fn encode_assistant(message: &ChatMessage, messages: &mut Vec<Value>) {
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for content in &message.content {
        match content {
            Content::Text { text: piece } => text.push_str(piece),
            Content::ToolCall { id, name, input } => {
                let arguments = match input {
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                tool_calls.push(json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}));
            }
            _ => {}
        }
    }
    if text.is_empty() && tool_calls.is_empty() {
        return;
    }
    let mut encoded = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !tool_calls.is_empty() {
        encoded["tool_calls"] = Value::Array(tool_calls);
    }
    messages.push(encoded);
}

const PROVIDER: &str = "openai-compatible server";

/// More parallel calls than any model makes in one step; a larger index is a
/// broken stream.
const MAX_TOOL_CALLS: usize = 1024;

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    index: Option<usize>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    prompt_tokens_details: Option<PromptDetails>,
    completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek's name for cached prompt tokens.
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
    /// OpenRouter's count of tokens written to an Anthropic cache.
    cache_write_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// OpenAI counts cached tokens (and OpenRouter cache writes) inside
    /// `prompt_tokens` and reasoning inside `completion_tokens`; `Usage`
    /// keeps them apart.
    fn normalize(&self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|details| details.cached_tokens)
            .or(self.prompt_cache_hit_tokens)
            .unwrap_or(0);
        let written = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|details| details.cache_write_tokens)
            .unwrap_or(0);
        let reasoning = self
            .completion_tokens_details
            .as_ref()
            .and_then(|details| details.reasoning_tokens)
            .unwrap_or(0);
        Usage {
            input: self.prompt_tokens.saturating_sub(cached + written),
            output: self.completion_tokens.saturating_sub(reasoning),
            reasoning,
            cache_read: cached,
            cache_write: written,
        }
    }
}

/// A tool call being assembled from pieces keyed by `index`.
#[derive(Debug, Default)]
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
    started: bool,
}

/// Turns Chat Completions chunks into `StreamEvent`s.
#[derive(Debug, Default)]
pub struct OpenAiDecoder {
    calls: Vec<PendingCall>,
    finish: Option<FinishReason>,
    usage: Usage,
    done: bool,
}

impl OpenAiDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn tool_call_delta(
        &mut self,
        position: usize,
        delta: ToolCallDelta,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), Error> {
        let index = delta.index.unwrap_or(position);
        if index >= MAX_TOOL_CALLS {
            // The index sizes a vector: a hostile one would allocate without bound.
            return Err(Error::malformed(
                PROVIDER,
                format!("tool call index {index} (at most {MAX_TOOL_CALLS} calls are read)"),
            ));
        }
        if self.calls.len() <= index {
            self.calls.resize_with(index + 1, PendingCall::default);
        }
        let call = &mut self.calls[index];
        if let Some(id) = delta.id.filter(|id| !id.is_empty())
            && call.id.is_empty()
        {
            call.id = id;
        }
        let (name, arguments) = match delta.function {
            Some(function) => (function.name, function.arguments.unwrap_or_default()),
            None => (None, String::new()),
        };
        if let Some(name) = name.filter(|name| !name.is_empty())
            && call.name.is_empty()
        {
            call.name = name;
        }
        call.arguments.push_str(&arguments);
        if !call.started && !call.name.is_empty() {
            // Servers that omit the id still need one for the result to refer to.
            if call.id.is_empty() {
                call.id = format!("call_{index}");
            }
            call.started = true;
            out.push(StreamEvent::ToolCallStart {
                id: call.id.clone(),
                name: call.name.clone(),
            });
            if !call.arguments.is_empty() {
                out.push(StreamEvent::ToolCallDelta {
                    id: call.id.clone(),
                    arguments: call.arguments.clone(),
                });
            }
        } else if call.started && !arguments.is_empty() {
            out.push(StreamEvent::ToolCallDelta {
                id: call.id.clone(),
                arguments,
            });
        }
        Ok(())
    }

    fn end_tool_calls(&mut self, out: &mut Vec<StreamEvent>) {
        for call in self.calls.drain(..).filter(|call| call.started) {
            out.push(StreamEvent::ToolCallEnd {
                input: parse_arguments(&call.arguments),
                id: call.id,
                name: call.name,
            });
        }
    }

    fn emit_finish(&mut self, out: &mut Vec<StreamEvent>) {
        self.end_tool_calls(out);
        self.done = true;
        out.push(StreamEvent::Finish {
            reason: self.finish.unwrap_or(FinishReason::Unknown),
            usage: self.usage,
        });
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" | "eos" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        "error" => FinishReason::Error,
        _ => FinishReason::Unknown,
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

impl WireDecoder for OpenAiDecoder {
    fn decode(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        if self.done {
            return Ok(());
        }
        if event.data == "[DONE]" {
            self.emit_finish(out);
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(&event.data)
            .map_err(|error| Error::malformed_event(PROVIDER, error, &event.data))?;
        if let Some(error) = chunk.error {
            return Err(Error::from_stream_error(
                PROVIDER,
                &json!({ "error": error }),
            ));
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                push_text(
                    out,
                    delta
                        .reasoning_content
                        .filter(|text| !text.is_empty())
                        .or(delta.reasoning),
                    |text| StreamEvent::ReasoningDelta { text },
                );
                push_text(out, delta.content, |text| StreamEvent::TextDelta { text });
                for (call_position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
                    self.tool_call_delta(call_position, call, out)?;
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(finish_reason(&reason));
                self.end_tool_calls(out);
            }
        }
        if let Some(usage) = chunk.usage {
            self.usage = usage.normalize();
        }
        Ok(())
    }

    /// A stream that closes after `finish_reason` but without `[DONE]` is
    /// complete (some servers skip it); one that closes before is cut off.
    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        if self.done {
            return Ok(());
        }
        if self.finish.is_some() {
            self.emit_finish(out);
            return Ok(());
        }
        Err(Error::truncated(PROVIDER, "no finish_reason and no [DONE]"))
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[Value]) -> (Vec<StreamEvent>, Result<(), Error>) {
        let mut decoder = OpenAiDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            let event = SseEvent {
                event: String::new(),
                data: chunk.to_string(),
            };
            if let Err(error) = decoder.decode(&event, &mut out) {
                return (out, Err(error));
            }
        }
        let end = decoder.finish(&mut out);
        (out, end)
    }

    #[test]
    fn whole_tool_call_without_id_and_stream_without_done() {
        let chunks = [
            json!({"choices": [{"delta": {"reasoning_content": "", "reasoning": "hm", "tool_calls": [
                {"function": {"name": "read", "arguments": json!({"path": "a"}).to_string()}}]}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
        ];
        let (events, end) = decode_all(&chunks);
        assert_eq!(end, Ok(()));
        assert_eq!(
            events,
            vec![
                StreamEvent::ReasoningDelta { text: "hm".into() },
                StreamEvent::ToolCallStart {
                    id: "call_0".into(),
                    name: "read".into()
                },
                StreamEvent::ToolCallDelta {
                    id: "call_0".into(),
                    arguments: r#"{"path":"a"}"#.into()
                },
                StreamEvent::ToolCallEnd {
                    id: "call_0".into(),
                    name: "read".into(),
                    input: json!({"path": "a"})
                },
                StreamEvent::Finish {
                    reason: FinishReason::ToolCalls,
                    usage: Usage::default()
                },
            ]
        );
    }

    #[test]
    fn cut_stream_and_error_object_are_errors() {
        let (events, end) = decode_all(&[json!({"choices": [{"delta": {"content": "a"}}]})]);
        assert_eq!(events, vec![StreamEvent::TextDelta { text: "a".into() }]);
        assert_eq!(end.unwrap_err().kind(), crate::provider::ErrorKind::Network);
        let (_, end) =
            decode_all(&[json!({"error": {"message": "Rate limit exceeded", "code": 429}})]);
        assert!(matches!(
            end.unwrap_err().kind(),
            crate::provider::ErrorKind::RateLimited { .. }
        ));
    }
}
