//! The Anthropic provider against a scripted local server: Messages events
//! split anywhere, thinking with signatures, parallel tool_use blocks, usage
//! with cache tokens, error events, retries, drops, stalls, overflow, and the
//! exact request with its cache breakpoints.

use crate::support;

use std::time::Duration;

use cairn::message::FinishReason;
use cairn::provider::{
    ChatMessage, ChatRequest, ChatRole, Content, Endpoint, ErrorKind, Provider, RetryPolicy,
    StreamEvent, ToolSpec, Usage, Wire,
};
use serde_json::{Value, json};
use support::{ScriptedResponse, ScriptedServer, collect_events, text_of, within};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(20);
const KEY: &str = "sk-ant-test-key-42";

fn provider(server: &ScriptedServer) -> Provider {
    let mut config = Endpoint::new("anthropic", Wire::Anthropic, server.url());
    config.api_key = Some(KEY.into());
    config.stall_timeout = Duration::from_millis(500);
    Provider::new(config).unwrap()
}

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        initial_delay: Duration::from_millis(20),
        ..RetryPolicy::default()
    }
}

fn hello() -> ChatRequest {
    ChatRequest {
        model: "claude-sonnet-4-5".into(),
        system: vec!["Be brief.".into()],
        messages: vec![ChatMessage {
            role: ChatRole::User,
            content: vec![Content::Text { text: "hi".into() }],
        }],
        tools: vec![],
        max_output_tokens: 1024,
        temperature: None,
        cache_key: None,
    }
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn message_start() -> String {
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-sonnet-4-5", "stop_reason": null,
            "usage": {"input_tokens": 12, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 5000, "output_tokens": 1}}}),
    )
}

fn block_start(index: u32, block: Value) -> String {
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn delta(index: u32, delta: Value) -> String {
    event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn block_stop(index: u32) -> String {
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

fn message_end(stop_reason: &str, output_tokens: u64) -> String {
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
    ) + &event("message_stop", json!({"type": "message_stop"}))
}

fn text_answer(text: &str) -> String {
    message_start()
        + &block_start(0, json!({"type": "text", "text": ""}))
        + &delta(0, json!({"type": "text_delta", "text": text}))
        + &block_stop(0)
        + &message_end("end_turn", 7)
}

async fn run(provider: &Provider) -> (Vec<StreamEvent>, Option<cairn::provider::Error>) {
    within(LIMIT, async {
        match provider.stream(&hello(), CancellationToken::new()).await {
            Ok(stream) => collect_events(stream).await,
            Err(error) => (Vec::new(), Some(error)),
        }
    })
    .await
}

#[tokio::test]
async fn text_split_mid_utf8_with_crlf_and_pings_gives_text_and_cache_usage() {
    let body = message_start()
        + &event("ping", json!({"type": "ping"}))
        + &block_start(0, json!({"type": "text", "text": ""}))
        + &delta(0, json!({"type": "text_delta", "text": "Grüße, "}))
        + &delta(0, json!({"type": "text_delta", "text": "世界 🦀"}))
        + &block_stop(0)
        + &message_end("end_turn", 42);
    let body = body.replace('\n', "\r\n");
    let server =
        ScriptedServer::start([ScriptedResponse::sse().chunked_every(body.as_bytes(), 5)]).await;
    let (events, error) = run(&provider(&server)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta {
                text: "Grüße, ".into()
            },
            StreamEvent::TextDelta {
                text: "世界 🦀".into()
            },
            StreamEvent::Finish {
                reason: FinishReason::Stop,
                usage: Usage {
                    input: 12,
                    output: 42,
                    reasoning: 0,
                    cache_read: 5000,
                    cache_write: 300
                },
            },
        ]
    );
}

#[tokio::test]
async fn thinking_with_signature_redacted_thinking_and_two_tool_calls() {
    let mut body = message_start()
        + &block_start(0, json!({"type": "thinking", "thinking": ""}))
        + &delta(
            0,
            json!({"type": "thinking_delta", "thinking": "Need two "}),
        )
        + &delta(0, json!({"type": "thinking_delta", "thinking": "files."}))
        + &delta(
            0,
            json!({"type": "signature_delta", "signature": "EqQBCgIYAhIM"}),
        )
        + &block_stop(0)
        + &block_start(1, json!({"type": "redacted_thinking", "data": "EmwKAhgB"}))
        + &block_stop(1)
        + &block_start(
            2,
            json!({"type": "tool_use", "id": "toolu_a", "name": "read", "input": {}}),
        )
        + &block_start(
            3,
            json!({"type": "tool_use", "id": "toolu_b", "name": "glob", "input": {}}),
        );
    for piece in ["{\"pa", "th\": \"sr", "c/ma", "in.rs\"}"] {
        body += &delta(
            2,
            json!({"type": "input_json_delta", "partial_json": piece}),
        );
    }
    body += &delta(3, json!({"type": "input_json_delta", "partial_json": ""}));
    body += &delta(
        3,
        json!({"type": "input_json_delta", "partial_json": "{\"pattern\": \"**/*.rs\""}),
    );
    body += &block_stop(2);
    body += &block_stop(3);
    body += &message_end("tool_use", 90);
    let server =
        ScriptedServer::start([ScriptedResponse::sse().chunked_every(body.as_bytes(), 11)]).await;
    let (events, error) = run(&provider(&server)).await;
    assert!(error.is_none(), "{error:?}");
    let summary: Vec<StreamEvent> = events
        .into_iter()
        .filter(|event| !matches!(event, StreamEvent::ToolCallDelta { .. }))
        .collect();
    assert_eq!(
        summary,
        vec![
            StreamEvent::ReasoningDelta {
                text: "Need two ".into()
            },
            StreamEvent::ReasoningDelta {
                text: "files.".into()
            },
            StreamEvent::ReasoningSignature {
                signature: "EqQBCgIYAhIM".into()
            },
            StreamEvent::RedactedReasoning {
                data: "EmwKAhgB".into()
            },
            StreamEvent::ToolCallStart {
                id: "toolu_a".into(),
                name: "read".into()
            },
            StreamEvent::ToolCallStart {
                id: "toolu_b".into(),
                name: "glob".into()
            },
            StreamEvent::ToolCallEnd {
                id: "toolu_a".into(),
                name: "read".into(),
                input: json!({"path": "src/main.rs"})
            },
            // Cut-off JSON is passed on as the raw string for the tool layer to reject.
            StreamEvent::ToolCallEnd {
                id: "toolu_b".into(),
                name: "glob".into(),
                input: json!("{\"pattern\": \"**/*.rs\"")
            },
            StreamEvent::Finish {
                reason: FinishReason::ToolCalls,
                usage: Usage {
                    input: 12,
                    output: 90,
                    reasoning: 0,
                    cache_read: 5000,
                    cache_write: 300
                },
            },
        ]
    );
}

#[tokio::test]
async fn overloaded_error_event_mid_stream_is_classified_and_retried_before_content() {
    let overloaded = event(
        "error",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    let server =
        ScriptedServer::start([ScriptedResponse::sse().chunk(message_start() + &overloaded)]).await;
    let (events, error) = run(&provider(&server)).await;
    assert!(events.is_empty());
    assert_eq!(error.unwrap().kind(), ErrorKind::Overloaded);

    let server = ScriptedServer::start([
        ScriptedResponse::sse().chunk(message_start() + &overloaded),
        ScriptedResponse::sse().chunk(text_answer("recovered")),
    ])
    .await;
    let provider = provider(&server);
    let mut notices = Vec::new();
    let stream = within(
        LIMIT,
        provider.stream_with_retry(
            &hello(),
            CancellationToken::new(),
            &quick_retries(),
            &mut 0,
            |notice| notices.push(notice),
        ),
    )
    .await
    .unwrap();
    let (events, error) = within(LIMIT, collect_events(stream)).await;
    assert!(error.is_none());
    assert_eq!(text_of(&events), "recovered");
    assert_eq!(notices.len(), 1);
    assert!(
        notices[0].message.contains("overloaded"),
        "{}",
        notices[0].message
    );
}

#[tokio::test]
async fn error_event_after_content_is_returned_not_retried() {
    let body = message_start()
        + &block_start(0, json!({"type": "text", "text": ""}))
        + &delta(0, json!({"type": "text_delta", "text": "half"}))
        + &event(
            "error",
            json!({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}),
        );
    let server = ScriptedServer::start([
        ScriptedResponse::sse().chunk(body),
        ScriptedResponse::sse().chunk(text_answer("x")),
    ])
    .await;
    let provider = provider(&server);
    let stream = within(
        LIMIT,
        provider.stream_with_retry(
            &hello(),
            CancellationToken::new(),
            &quick_retries(),
            &mut 0,
            |_| {},
        ),
    )
    .await
    .unwrap();
    let (events, error) = within(LIMIT, collect_events(stream)).await;
    assert_eq!(text_of(&events), "half");
    assert_eq!(error.unwrap().kind(), ErrorKind::Server { status: 500 });
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn rate_limit_with_retry_after_and_529_then_success() {
    let rate_limited = ScriptedResponse::json(
        429,
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
    )
    .header("retry-after", "1");
    let overloaded = ScriptedResponse::json(
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    let success = ScriptedResponse::sse().chunk(text_answer("done"));
    let server = ScriptedServer::start([rate_limited, overloaded, success]).await;
    let provider = provider(&server);
    let mut notices = Vec::new();
    let started = std::time::Instant::now();
    let stream = within(
        LIMIT,
        provider.stream_with_retry(
            &hello(),
            CancellationToken::new(),
            &quick_retries(),
            &mut 0,
            |notice| notices.push(notice),
        ),
    )
    .await
    .unwrap();
    let (events, _) = within(LIMIT, collect_events(stream)).await;
    assert_eq!(text_of(&events), "done");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "retry-after was not honoured: {:?}",
        started.elapsed()
    );
    assert_eq!(notices.len(), 2);
    assert!(
        notices[0].message.contains("rate limiting"),
        "{}",
        notices[0].message
    );
    assert!(
        notices[1].message.contains("overloaded"),
        "{}",
        notices[1].message
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn prompt_too_long_is_context_overflow_and_not_retried() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208732 tokens > 200000 maximum"}}"#;
    let server = ScriptedServer::start([
        ScriptedResponse::json(400, body),
        ScriptedResponse::sse().chunk(text_answer("x")),
    ])
    .await;
    let provider = provider(&server);
    let error = within(
        LIMIT,
        provider.stream_with_retry(
            &hello(),
            CancellationToken::new(),
            &quick_retries(),
            &mut 0,
            |_| {},
        ),
    )
    .await
    .err()
    .unwrap();
    assert_eq!(error.kind(), ErrorKind::ContextOverflow);
    assert!(error.to_string().contains("208732 tokens"), "{error}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn dropped_connection_and_missing_message_stop_are_network_errors() {
    let partial = message_start()
        + &block_start(0, json!({"type": "text", "text": ""}))
        + &delta(0, json!({"type": "text_delta", "text": "so far"}));
    let server = ScriptedServer::start([
        ScriptedResponse::sse().chunk(&partial).then_drop(),
        ScriptedResponse::sse().chunk(&partial),
    ])
    .await;
    let provider = provider(&server);
    for _ in 0..2 {
        let (events, error) = run(&provider).await;
        assert_eq!(text_of(&events), "so far");
        assert_eq!(error.unwrap().kind(), ErrorKind::Network);
    }
}

#[tokio::test]
async fn a_stalled_stream_ends_with_stalled() {
    let server =
        ScriptedServer::start([ScriptedResponse::sse().chunk(message_start()).then_stall()]).await;
    let (events, error) = run(&provider(&server)).await;
    assert!(events.is_empty());
    let error = error.unwrap();
    assert_eq!(error.kind(), ErrorKind::Stalled);
    assert!(error.is_retryable());
}

#[tokio::test]
async fn a_server_that_never_sends_headers_stalls_too() {
    let server = ScriptedServer::start([ScriptedResponse::no_answer()]).await;
    let (_, error) = run(&provider(&server)).await;
    assert_eq!(error.unwrap().kind(), ErrorKind::Stalled);
}

#[tokio::test]
async fn requests_beyond_the_script_get_a_server_error() {
    let server = ScriptedServer::start([]).await;
    let (_, error) = run(&provider(&server)).await;
    let error = error.unwrap();
    assert_eq!(error.kind(), ErrorKind::Server { status: 500 });
    assert!(
        error.to_string().contains("no scripted response left"),
        "{error}"
    );
}

#[tokio::test]
async fn invalid_json_in_an_event_is_malformed() {
    let body = message_start()
        + "event: content_block_start\ndata: {\"index\": 0, \"content_block\": \n\n";
    let server = ScriptedServer::start([ScriptedResponse::sse().chunk(body)]).await;
    let (_, error) = run(&provider(&server)).await;
    let error = error.unwrap();
    assert_eq!(error.kind(), ErrorKind::Malformed);
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn auth_failure_never_shows_the_key() {
    let body = format!(
        r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key {KEY}"}}}}"#
    );
    let server = ScriptedServer::start([ScriptedResponse::json(401, &body)]).await;
    let (_, error) = run(&provider(&server)).await;
    let error = error.unwrap();
    assert_eq!(error.kind(), ErrorKind::Auth);
    assert!(
        !error.to_string().contains(KEY) && !format!("{error:?}").contains(KEY),
        "{error}"
    );
}

fn conversation() -> ChatRequest {
    ChatRequest {
        model: "claude-sonnet-4-5".into(),
        system: vec![
            "You are cairn.".into(),
            "Project rules: be terse.".into(),
            "Environment: linux".into(),
        ],
        messages: vec![
            ChatMessage {
                role: ChatRole::User,
                content: vec![
                    Content::Text {
                        text: "Read main.rs".into(),
                    },
                    Content::Image {
                        mime: "image/png".into(),
                        data: "iVBOR".into(),
                    },
                ],
            },
            ChatMessage {
                role: ChatRole::Assistant,
                content: vec![
                    Content::Reasoning {
                        text: "I should read it".into(),
                        signature: Some("sig-1".into()),
                    },
                    Content::Reasoning {
                        text: "from another model".into(),
                        signature: None,
                    },
                    Content::RedactedReasoning {
                        data: "opaque".into(),
                    },
                    Content::Text { text: "".into() },
                    Content::ToolCall {
                        id: "toolu_1".into(),
                        name: "read".into(),
                        input: json!({"path": "src/main.rs"}),
                    },
                ],
            },
            ChatMessage {
                role: ChatRole::User,
                content: vec![
                    Content::Text {
                        text: "Now explain.".into(),
                    },
                    Content::ToolResult {
                        call_id: "toolu_1".into(),
                        content: vec![
                            Content::Text {
                                text: "fn main() {}".into(),
                            },
                            Content::Image {
                                mime: "image/jpeg".into(),
                                data: "/9j/".into(),
                            },
                        ],
                        is_error: false,
                    },
                ],
            },
        ],
        tools: vec![ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        max_output_tokens: 8192,
        temperature: Some(0.2),
        cache_key: Some("ses_1".into()),
    }
}

#[tokio::test]
async fn the_request_sent_has_the_exact_anthropic_shape_and_four_breakpoints() {
    let server = ScriptedServer::start([ScriptedResponse::sse().chunk(text_answer("ok"))]).await;
    let provider = provider(&server);
    let stream = within(
        LIMIT,
        provider.stream(&conversation(), CancellationToken::new()),
    )
    .await
    .unwrap();
    let (_, error) = within(LIMIT, collect_events(stream)).await;
    assert!(error.is_none());
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    let cache = json!({"type": "ephemeral"});
    assert_eq!(
        request.json(),
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 8192,
            "stream": true,
            "temperature": 0.2,
            "system": [
                {"type": "text", "text": "You are cairn.", "cache_control": cache},
                {"type": "text", "text": "Project rules: be terse.", "cache_control": cache},
                {"type": "text", "text": "Environment: linux"},
            ],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "Read main.rs"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
                ]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "I should read it", "signature": "sig-1"},
                    {"type": "redacted_thinking", "data": "opaque"},
                    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "src/main.rs"}, "cache_control": cache},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                        {"type": "text", "text": "fn main() {}"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}},
                    ]},
                    {"type": "text", "text": "Now explain.", "cache_control": cache},
                ]},
            ],
            "tools": [{"name": "read", "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
        })
    );
    let breakpoints = request
        .body
        .windows(b"cache_control".len())
        .filter(|window| *window == b"cache_control")
        .count();
    assert_eq!(breakpoints, 4);
}

#[test]
fn thinking_budget_replaces_temperature() {
    let mut config = Endpoint::new("anthropic", Wire::Anthropic, "http://127.0.0.1:1/v1");
    config.thinking_budget = Some(4000);
    let provider = Provider::new(config).unwrap();
    assert_eq!(provider.endpoint(), "http://127.0.0.1:1/v1/messages");
    let body = provider.request_body(&conversation());
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 4000})
    );
    assert!(body.get("temperature").is_none());
}
