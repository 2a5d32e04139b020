//! What every wire must do, one test body over a table of the three wires
//! (Chat Completions, Anthropic Messages, Responses): each row writes the
//! same answer in its own recorded wire format, and the decoded events must
//! be the same. Wire-specific behaviour (request shapes, cache marks,
//! recorded llama-server streams) stays in the per-wire suites.

use crate::support;

use std::time::Duration;

use cairn::message::FinishReason;
use cairn::provider::{
    ChatMessage, ChatRequest, ChatRole, Content, Endpoint, ErrorKind, Provider, RetryPolicy,
    StreamEvent, Usage, Wire,
};
use serde_json::{Value, json};
use support::{ScriptedResponse, ScriptedServer, collect_events, text_of, within};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(20);

/// A streamed tool call: `(id, name, argument pieces)`.
type Call<'a> = (&'a str, &'a str, &'a [&'a str]);

/// One wire: how to reach it and how it writes each answer the table needs.
struct WireCase {
    wire: Wire,
    /// The base URL's suffix after the server's address.
    base_suffix: &'static str,
    /// Text pieces, then the end with `USAGE`.
    text: fn(&[&str]) -> String,
    /// Calls `(id, name, argument pieces)`, then the end.
    tool_calls: fn(&[Call]) -> String,
    /// A reasoning piece, then text, then the end.
    reasoning: fn(&str, &str) -> String,
    /// An overflow error event inside a 200 response.
    overflow_event: fn() -> String,
}

const WIRES: [WireCase; 3] = [
    WireCase {
        wire: Wire::OpenAi,
        base_suffix: "/v1",
        text: chat::text,
        tool_calls: chat::tool_calls,
        reasoning: chat::reasoning,
        overflow_event: chat::overflow_event,
    },
    WireCase {
        wire: Wire::Anthropic,
        base_suffix: "",
        text: messages::text,
        tool_calls: messages::tool_calls,
        reasoning: messages::reasoning,
        overflow_event: messages::overflow_event,
    },
    WireCase {
        wire: Wire::Responses,
        base_suffix: "/v1",
        text: responses::text,
        tool_calls: responses::tool_calls,
        reasoning: responses::reasoning,
        overflow_event: responses::overflow_event,
    },
];

/// 1,000 prompt tokens of which 200 were cache reads, 50 output tokens.
const USAGE: Usage = Usage {
    input: 800,
    output: 50,
    reasoning: 0,
    cache_read: 200,
    cache_write: 0,
};

fn provider(case: &WireCase, server: &ScriptedServer) -> Provider {
    let url = format!("{}{}", server.url(), case.base_suffix);
    let mut config = Endpoint::new(format!("{:?}", case.wire), case.wire, url);
    config.api_key = Some("sk-test-wires-0123456789".into());
    config.stall_timeout = Duration::from_millis(500);
    Provider::new(config).unwrap()
}

fn hello() -> ChatRequest {
    ChatRequest {
        model: "test-model".into(),
        system: vec!["Be brief.".into()],
        messages: vec![ChatMessage {
            role: ChatRole::User,
            content: vec![Content::Text { text: "hi".into() }],
        }],
        tools: vec![],
        max_output_tokens: 64,
        temperature: None,
        cache_key: None,
    }
}

async fn run(
    case: &WireCase,
    response: ScriptedResponse,
) -> (Vec<StreamEvent>, Option<cairn::provider::Error>) {
    let server = ScriptedServer::start([response]).await;
    let provider = provider(case, &server);
    within(LIMIT, async {
        match provider.stream(&hello(), CancellationToken::new()).await {
            Ok(stream) => collect_events(stream).await,
            Err(error) => (Vec::new(), Some(error)),
        }
    })
    .await
}

#[tokio::test]
async fn every_wire_streams_text_split_inside_characters_with_normalized_usage() {
    for case in &WIRES {
        let body = (case.text)(&["héllo ", "世界 ", "🦀 done"]);
        let (events, error) = run(case, ScriptedResponse::sse().chunked_every(body, 3)).await;
        assert!(error.is_none(), "{:?}: {error:?}", case.wire);
        assert_eq!(text_of(&events), "héllo 世界 🦀 done", "{:?}", case.wire);
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Finish {
                reason: FinishReason::Stop,
                usage: USAGE
            }),
            "{:?}",
            case.wire
        );
    }
}

#[tokio::test]
async fn every_wire_assembles_two_tool_calls_from_split_arguments() {
    for case in &WIRES {
        let body = (case.tool_calls)(&[
            ("call_a", "read", &["{\"pa", "th\":\"a.rs\"}"]),
            ("call_b", "grep", &["{\"pattern\":", "\"fn \"}"]),
        ]);
        let (events, error) = run(case, ScriptedResponse::sse().chunk(body)).await;
        assert!(error.is_none(), "{:?}: {error:?}", case.wire);
        let starts: Vec<&StreamEvent> = events
            .iter()
            .filter(|event| matches!(event, StreamEvent::ToolCallStart { .. }))
            .collect();
        assert_eq!(starts.len(), 2, "{:?}: {events:?}", case.wire);
        let ends: Vec<&StreamEvent> = events
            .iter()
            .filter(|event| matches!(event, StreamEvent::ToolCallEnd { .. }))
            .collect();
        assert_eq!(
            ends,
            [
                &StreamEvent::ToolCallEnd {
                    id: "call_a".into(),
                    name: "read".into(),
                    input: json!({"path": "a.rs"})
                },
                &StreamEvent::ToolCallEnd {
                    id: "call_b".into(),
                    name: "grep".into(),
                    input: json!({"pattern": "fn "})
                },
            ],
            "{:?}",
            case.wire
        );
        assert!(
            matches!(
                events.last(),
                Some(StreamEvent::Finish {
                    reason: FinishReason::ToolCalls,
                    ..
                })
            ),
            "{:?}: {events:?}",
            case.wire
        );
    }
}

#[tokio::test]
async fn every_wire_streams_reasoning_before_the_text() {
    for case in &WIRES {
        let body = (case.reasoning)("think first", "answer");
        let (events, error) = run(case, ScriptedResponse::sse().chunk(body)).await;
        assert!(error.is_none(), "{:?}: {error:?}", case.wire);
        let reasoning: String = events
            .iter()
            .filter_map(|event| match event {
                StreamEvent::ReasoningDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(reasoning, "think first", "{:?}", case.wire);
        assert_eq!(text_of(&events), "answer", "{:?}", case.wire);
        let first_reasoning = events
            .iter()
            .position(|event| matches!(event, StreamEvent::ReasoningDelta { .. }));
        let first_text = events
            .iter()
            .position(|event| matches!(event, StreamEvent::TextDelta { .. }));
        assert!(first_reasoning < first_text, "{:?}", case.wire);
    }
}

#[tokio::test]
async fn every_wire_reports_a_cut_stream_as_network_after_the_text() {
    for case in &WIRES {
        let whole = (case.text)(&["partial text"]);
        // Everything up to the end of the event carrying the text: the text
        // arrived, the end marker did not.
        let text_at = whole.find("partial text").expect("text in stream");
        let event_end = text_at + whole[text_at..].find("\n\n").expect("a whole event") + 2;
        let cut = &whole[..event_end];
        let (events, error) = run(case, ScriptedResponse::sse().chunk(cut).then_drop()).await;
        assert_eq!(text_of(&events), "partial text", "{:?}", case.wire);
        assert_eq!(
            error.map(|error| error.kind()),
            Some(ErrorKind::Network),
            "{:?}",
            case.wire
        );
    }
}

#[tokio::test]
async fn every_wire_classifies_an_overflow_event_and_never_retries_it() {
    for case in &WIRES {
        let server =
            ScriptedServer::start([ScriptedResponse::sse().chunk((case.overflow_event)())]).await;
        let provider = provider(case, &server);
        let policy = RetryPolicy {
            initial_delay: Duration::from_millis(20),
            ..RetryPolicy::default()
        };
        let outcome = within(
            LIMIT,
            provider.stream_with_retry(&hello(), CancellationToken::new(), &policy, &mut 0, |_| {}),
        )
        .await;
        let error = match outcome {
            Ok(stream) => collect_events(stream).await.1.expect("an error"),
            Err(error) => error,
        };
        assert_eq!(
            error.kind(),
            ErrorKind::ContextOverflow,
            "{:?}: {error}",
            case.wire
        );
        assert_eq!(server.requests().len(), 1, "{:?}", case.wire);
    }
}

/// OpenAI Chat Completions chunks.
mod chat {
    use super::*;

    fn data(value: Value) -> String {
        format!("data: {value}\n\n")
    }

    fn delta(delta: Value) -> String {
        data(json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}))
    }

    fn end(reason: &str) -> String {
        data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}))
            + &data(
                json!({"choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 50,
                "prompt_tokens_details": {"cached_tokens": 200}}}),
            )
            + "data: [DONE]\n\n"
    }

    pub fn text(pieces: &[&str]) -> String {
        pieces
            .iter()
            .map(|piece| delta(json!({"content": piece})))
            .collect::<String>()
            + &end("stop")
    }

    /// Argument pieces interleaved across the calls, as parallel calls stream.
    pub fn tool_calls(calls: &[super::Call]) -> String {
        let mut body: String = calls
            .iter()
            .enumerate()
            .map(|(index, (id, name, _))| {
                delta(
                    json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                )
            })
            .collect();
        let longest = calls
            .iter()
            .map(|(_, _, pieces)| pieces.len())
            .max()
            .unwrap_or(0);
        for round in 0..longest {
            for (index, (_, _, pieces)) in calls.iter().enumerate() {
                if let Some(piece) = pieces.get(round) {
                    body += &delta(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    );
                }
            }
        }
        body + &end("tool_calls")
    }

    pub fn reasoning(thought: &str, answer: &str) -> String {
        delta(json!({"reasoning_content": thought}))
            + &delta(json!({"content": answer}))
            + &end("stop")
    }

    pub fn overflow_event() -> String {
        data(
            json!({"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            "type": "invalid_request_error", "code": "context_length_exceeded"}}),
        )
    }
}

/// Anthropic Messages events.
mod messages {
    use super::*;

    fn event(name: &str, data: Value) -> String {
        format!("event: {name}\ndata: {data}\n\n")
    }

    fn start() -> String {
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                "content": [], "model": "test-model", "stop_reason": null,
                "usage": {"input_tokens": 800, "cache_read_input_tokens": 200, "cache_creation_input_tokens": 0, "output_tokens": 1}}}),
        )
    }

    fn block(index: usize, block: Value, deltas: &[Value]) -> String {
        let mut body = event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        );
        for delta in deltas {
            body += &event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            );
        }
        body + &event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )
    }

    fn end(stop_reason: &str) -> String {
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": 50}}),
        ) + &event("message_stop", json!({"type": "message_stop"}))
    }

    pub fn text(pieces: &[&str]) -> String {
        let deltas: Vec<Value> = pieces
            .iter()
            .map(|piece| json!({"type": "text_delta", "text": piece}))
            .collect();
        start() + &block(0, json!({"type": "text", "text": ""}), &deltas) + &end("end_turn")
    }

    pub fn tool_calls(calls: &[super::Call]) -> String {
        let mut body = start();
        for (index, (id, name, pieces)) in calls.iter().enumerate() {
            let deltas: Vec<Value> = pieces
                .iter()
                .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                .collect();
            body += &block(
                index,
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                &deltas,
            );
        }
        body + &end("tool_use")
    }

    pub fn reasoning(thought: &str, answer: &str) -> String {
        start()
            + &block(
                0,
                json!({"type": "thinking", "thinking": ""}),
                &[
                    json!({"type": "thinking_delta", "thinking": thought}),
                    json!({"type": "signature_delta", "signature": "sig"}),
                ],
            )
            + &block(
                1,
                json!({"type": "text", "text": ""}),
                &[json!({"type": "text_delta", "text": answer})],
            )
            + &end("end_turn")
    }

    pub fn overflow_event() -> String {
        event(
            "error",
            json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": "prompt is too long: 208732 tokens > 200000 maximum"}}),
        )
    }
}

/// OpenAI Responses events, with `event:` lines and sequence numbers as
/// OpenAI sends them.
mod responses {
    use super::*;

    fn events(mut list: Vec<Value>) -> String {
        let mut body = String::new();
        for (sequence, event) in list.iter_mut().enumerate() {
            event["sequence_number"] = json!(sequence);
            let name = event["type"].as_str().unwrap_or_default().to_owned();
            body += &format!("event: {name}\ndata: {event}\n\n");
        }
        body
    }

    fn created() -> Value {
        json!({"type": "response.created", "response": {"id": "resp_1", "object": "response",
            "status": "in_progress", "model": "test-model", "output": []}})
    }

    fn completed() -> Value {
        json!({"type": "response.completed", "response": {"id": "resp_1", "object": "response",
            "status": "completed", "model": "test-model", "incomplete_details": null,
            "usage": {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 200},
                "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 1050}}})
    }

    fn message(output_index: usize, pieces: &[&str]) -> Vec<Value> {
        let mut list = vec![
            json!({"type": "response.output_item.added", "output_index": output_index,
                "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
            json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": output_index,
                "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
        ];
        for piece in pieces {
            list.push(
                json!({"type": "response.output_text.delta", "item_id": "msg_1",
                "output_index": output_index, "content_index": 0, "delta": piece, "logprobs": []}),
            );
        }
        list.push(
            json!({"type": "response.output_text.done", "item_id": "msg_1",
            "output_index": output_index, "content_index": 0, "text": pieces.concat()}),
        );
        list.push(
            json!({"type": "response.output_item.done", "output_index": output_index,
            "item": {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": pieces.concat(), "annotations": []}]}}),
        );
        list
    }

    pub fn text(pieces: &[&str]) -> String {
        let mut list = vec![created()];
        list.extend(message(0, pieces));
        list.push(completed());
        events(list)
    }

    pub fn tool_calls(calls: &[super::Call]) -> String {
        let mut list = vec![created()];
        for (index, (call_id, name, pieces)) in calls.iter().enumerate() {
            let item_id = format!("fc_{index}");
            list.push(
                json!({"type": "response.output_item.added", "output_index": index,
                "item": {"id": item_id, "type": "function_call", "status": "in_progress",
                    "call_id": call_id, "name": name, "arguments": ""}}),
            );
            for piece in *pieces {
                list.push(json!({"type": "response.function_call_arguments.delta",
                    "item_id": item_id, "output_index": index, "delta": piece}));
            }
            list.push(json!({"type": "response.function_call_arguments.done",
                "item_id": item_id, "output_index": index, "arguments": pieces.concat()}));
            list.push(
                json!({"type": "response.output_item.done", "output_index": index,
                "item": {"id": item_id, "type": "function_call", "status": "completed",
                    "call_id": call_id, "name": name, "arguments": pieces.concat()}}),
            );
        }
        list.push(completed());
        events(list)
    }

    pub fn reasoning(thought: &str, answer: &str) -> String {
        let mut list = vec![
            created(),
            json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
            json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0,
                "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0,
                "summary_index": 0, "delta": thought}),
            json!({"type": "response.reasoning_summary_text.done", "item_id": "rs_1", "output_index": 0,
                "summary_index": 0, "text": thought}),
            json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": thought}]}}),
        ];
        list.extend(message(1, &[answer]));
        list.push(completed());
        events(list)
    }

    pub fn overflow_event() -> String {
        events(vec![
            created(),
            json!({"type": "response.failed", "response": {"id": "resp_1", "object": "response", "status": "failed",
                "error": {"code": "context_length_exceeded",
                    "message": "Your input exceeds the context window of this model. Please adjust your input and try again."}}}),
        ])
    }
}
