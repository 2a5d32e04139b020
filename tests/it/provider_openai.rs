//! The OpenAI-compatible provider against a scripted local server: recorded
//! llama-server streams byte for byte, split chunks, parallel tool calls,
//! usage, errors, retries, drops and stalls, and the exact request sent.

use crate::support;

use std::time::Duration;

use cairn::message::FinishReason;
use cairn::provider::{
    ChatMessage, ChatRequest, ChatRole, Content, Endpoint, ErrorKind, Provider, RetryPolicy,
    StreamEvent, ToolSpec, Usage, Wire,
};
use serde_json::json;
use support::{ScriptedResponse, ScriptedServer, collect_events, fixture, text_of, within};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(20);

fn provider(server: &ScriptedServer) -> Provider {
    let mut config = Endpoint::new("llamacpp", Wire::OpenAi, format!("{}/v1", server.url()));
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
        model: "smollm2".into(),
        system: vec![],
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

fn chunk(delta: serde_json::Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    )
}

fn finish_chunk(reason: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    )
}

fn usage_chunk(usage: serde_json::Value) -> String {
    format!("data: {}\n\n", json!({"choices": [], "usage": usage}))
}

async fn run(provider: &Provider) -> (Vec<StreamEvent>, Option<cairn::provider::Error>) {
    within(LIMIT, async {
        let stream = provider.stream(&hello(), CancellationToken::new()).await;
        match stream {
            Ok(stream) => collect_events(stream).await,
            Err(error) => (Vec::new(), Some(error)),
        }
    })
    .await
}

/// Text and finish computed from the fixture with plain serde_json, line by
/// line, independently of the decoder under test.
fn fixture_text(sse: &str) -> String {
    sse.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .filter_map(|chunk| {
            chunk
                .pointer("/choices/0/delta/content")
                .and_then(|text| text.as_str())
                .map(str::to_owned)
        })
        .collect()
}

#[tokio::test]
async fn llama_server_plain_stream_replays_byte_for_byte() {
    let body = fixture("smollm2-stream.sse.txt");
    let head = String::from_utf8(fixture("smollm2-stream.headers.txt")).unwrap();
    let expected_text = fixture_text(&String::from_utf8(body.clone()).unwrap());
    for piece in [body.len(), 97, 7] {
        let pieces: Vec<Vec<u8>> = body.chunks(piece).map(<[u8]>::to_vec).collect();
        let mut response = ScriptedResponse::recorded(&head, b"");
        response = response.chunks(pieces);
        let server = ScriptedServer::start([response]).await;
        let (events, error) = run(&provider(&server)).await;
        assert!(error.is_none(), "{error:?}");
        assert_eq!(text_of(&events), expected_text);
        assert!(expected_text.starts_with("1. 1\n2"), "{expected_text:?}");
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Finish {
                reason: FinishReason::Length,
                usage: Usage {
                    input: 35,
                    output: 40,
                    reasoning: 0,
                    cache_read: 7,
                    cache_write: 0
                },
            })
        );
        assert_eq!(
            events
                .iter()
                .filter(|event| matches!(event, StreamEvent::Finish { .. }))
                .count(),
            1
        );
    }
}

#[tokio::test]
async fn llama_server_tool_call_is_assembled_from_many_chunks() {
    let head = String::from_utf8(fixture("smollm2-qwentpl-toolcall-stream.headers.txt")).unwrap();
    let body = fixture("smollm2-qwentpl-toolcall-stream.sse.txt");
    let server = ScriptedServer::start([ScriptedResponse::recorded(&head, &body)]).await;
    let (events, error) = run(&provider(&server)).await;
    assert!(error.is_none(), "{error:?}");
    let id = "yp7urEiqhtvOEZxVUJkp9oxp8cb9U6aU".to_owned();
    assert_eq!(
        events[0],
        StreamEvent::ToolCallStart {
            id: id.clone(),
            name: "read_file".into()
        }
    );
    let arguments: String = events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::ToolCallDelta { arguments, .. } => Some(arguments.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(arguments, r#"{"path": "src/main.rs"}"#);
    let tail = &events[events.len() - 2..];
    assert_eq!(
        tail,
        [
            StreamEvent::ToolCallEnd {
                id,
                name: "read_file".into(),
                input: json!({"path": "src/main.rs"})
            },
            StreamEvent::Finish {
                reason: FinishReason::ToolCalls,
                usage: Usage {
                    input: 1,
                    output: 29,
                    reasoning: 0,
                    cache_read: 411,
                    cache_write: 0
                },
            },
        ]
    );
}

#[tokio::test]
async fn llama_server_tools_required_stream_ends_with_length() {
    let head = String::from_utf8(fixture("smollm2-stream.headers.txt")).unwrap();
    let body = fixture("smollm2-qwentpl-tools-required-stream.sse.txt");
    let expected_text = fixture_text(&String::from_utf8(body.clone()).unwrap());
    let server = ScriptedServer::start([ScriptedResponse::recorded(&head, &body)]).await;
    let (events, error) = run(&provider(&server)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&events), expected_text);
    assert!(
        matches!(events.last(), Some(StreamEvent::Finish { reason: FinishReason::Length, usage }) if usage.output == 128)
    );
}

#[tokio::test]
async fn llama_server_parse_failure_is_a_classified_error_and_is_retried() {
    let head = String::from_utf8(fixture("smollm2-qwentpl-parsefail-stream.headers.txt")).unwrap();
    let body = fixture("smollm2-qwentpl-parsefail-stream.sse.txt");
    let server = ScriptedServer::start([ScriptedResponse::recorded(&head, &body)]).await;
    let (events, error) = run(&provider(&server)).await;
    assert!(events.is_empty(), "{events:?}");
    let error = error.expect("the stream fails");
    assert_eq!(error.kind(), ErrorKind::Server { status: 500 });
    assert!(
        error
            .to_string()
            .contains("does not match the expected peg-native format"),
        "{error}"
    );

    let success = ScriptedResponse::sse()
        .chunk(chunk(json!({"content": "ok"})))
        .chunk(finish_chunk("stop"))
        .chunk("data: [DONE]\n\n");
    let server = ScriptedServer::start([ScriptedResponse::recorded(&head, &body), success]).await;
    let mut notices = Vec::new();
    let provider = provider(&server);
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
    assert_eq!(text_of(&events), "ok");
    assert_eq!(notices.len(), 1);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn context_overflow_bodies_are_classified_and_never_retried() {
    let head = String::from_utf8(fixture("smollm2-overflow.headers.txt")).unwrap();
    let llama = ScriptedResponse::recorded(&head, &fixture("smollm2-overflow-stream.sse.txt"));
    let openai = ScriptedResponse::json(
        400,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 140000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    );
    for response in [llama, openai] {
        let server = ScriptedServer::start([response, ScriptedResponse::sse()]).await;
        let provider = provider(&server);
        let result = within(
            LIMIT,
            provider.stream_with_retry(
                &hello(),
                CancellationToken::new(),
                &quick_retries(),
                &mut 0,
                |_| {},
            ),
        )
        .await;
        let error = result.err().expect("overflow is an error");
        assert_eq!(error.kind(), ErrorKind::ContextOverflow, "{error}");
        // What happened; the loop adds what happens next (it compacts by
        // itself, or says to when automatic compaction is off).
        assert!(
            error
                .to_string()
                .contains("does not fit the model's context window"),
            "{error}"
        );
        assert_eq!(server.requests().len(), 1, "overflow must not be retried");
    }
}

#[tokio::test]
async fn reasoning_deltas_and_a_usage_only_final_chunk() {
    let body = [
        chunk(json!({"role": "assistant", "content": null})),
        chunk(json!({"reasoning_content": "think "})),
        chunk(json!({"reasoning": "more"})),
        chunk(json!({"content": "answer"})),
        finish_chunk("stop"),
        usage_chunk(json!({
            "prompt_tokens": 1000, "completion_tokens": 300,
            "prompt_tokens_details": {"cached_tokens": 800},
            "completion_tokens_details": {"reasoning_tokens": 250},
        })),
        "data: [DONE]\n\n".to_owned(),
    ];
    let server = ScriptedServer::start([ScriptedResponse::sse().chunks(body)]).await;
    let (events, error) = run(&provider(&server)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        events,
        vec![
            StreamEvent::ReasoningDelta {
                text: "think ".into()
            },
            StreamEvent::ReasoningDelta {
                text: "more".into()
            },
            StreamEvent::TextDelta {
                text: "answer".into()
            },
            StreamEvent::Finish {
                reason: FinishReason::Stop,
                usage: Usage {
                    input: 200,
                    output: 50,
                    reasoning: 250,
                    cache_read: 800,
                    cache_write: 0
                },
            },
        ]
    );
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let limited = ScriptedResponse::json(429, r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#)
        .header("retry-after-ms", "150");
    let unavailable = ScriptedResponse::json(503, "upstream unavailable");
    let success = ScriptedResponse::sse()
        .chunk(chunk(json!({"content": "fine"})))
        .chunk(finish_chunk("stop"))
        .chunk("data: [DONE]\n\n");
    let server = ScriptedServer::start([limited, unavailable, success]).await;
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
    assert_eq!(text_of(&events), "fine");
    assert!(
        started.elapsed() >= Duration::from_millis(150 + 40),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        notices
            .iter()
            .map(|notice| notice.attempt)
            .collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert!(
        notices[0].message.contains("rate limiting"),
        "{}",
        notices[0].message
    );
    assert!(
        notices[1].message.contains("HTTP 503"),
        "{}",
        notices[1].message
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn stream_closed_cleanly_without_finish_or_done_is_an_error() {
    let response = ScriptedResponse::sse().chunk(chunk(json!({"content": "cut"})));
    let server = ScriptedServer::start([response]).await;
    let (events, error) = run(&provider(&server)).await;
    assert_eq!(text_of(&events), "cut");
    let error = error.expect("a cut stream fails");
    assert_eq!(error.kind(), ErrorKind::Network);
    assert!(error.to_string().contains("ended early"), "{error}");
}

#[tokio::test]
async fn a_stalled_stream_ends_with_stalled_not_a_hang() {
    let response = ScriptedResponse::sse()
        .chunk(chunk(json!({"content": "then silence"})))
        .then_stall();
    let server = ScriptedServer::start([response]).await;
    let started = std::time::Instant::now();
    let (events, error) = run(&provider(&server)).await;
    assert_eq!(text_of(&events), "then silence");
    assert_eq!(error.unwrap().kind(), ErrorKind::Stalled);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn invalid_json_in_a_chunk_is_malformed() {
    let response = ScriptedResponse::sse()
        .chunk(chunk(json!({"content": "a"})))
        .chunk("data: {\"choices\": [\n\n");
    let server = ScriptedServer::start([response]).await;
    let (events, error) = run(&provider(&server)).await;
    assert_eq!(text_of(&events), "a");
    assert_eq!(error.unwrap().kind(), ErrorKind::Malformed);
}

#[tokio::test]
async fn cancelling_ends_the_stream_with_cancelled() {
    let response = ScriptedResponse::sse()
        .chunk(chunk(json!({"content": "a"})))
        .then_stall();
    let server = ScriptedServer::start([response]).await;
    let mut config = provider(&server).config().clone();
    config.stall_timeout = Duration::from_secs(60);
    let provider = Provider::new(config).unwrap();
    let cancel = CancellationToken::new();
    let stream = within(LIMIT, provider.stream(&hello(), cancel.clone()))
        .await
        .unwrap();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let (events, error) = within(LIMIT, collect_events(stream)).await;
    assert_eq!(text_of(&events), "a");
    assert_eq!(error.unwrap().kind(), ErrorKind::Cancelled);
}

#[tokio::test]
async fn the_api_key_never_appears_in_errors() {
    let key = "sk-test-0123456789abcdef";
    let server = ScriptedServer::start([ScriptedResponse::json(
        401,
        &format!(r#"{{"error":{{"message":"Incorrect API key provided: {key}","type":"invalid_request_error","code":"invalid_api_key"}}}}"#),
    )])
    .await;
    let mut config = Endpoint::new("openai", Wire::OpenAi, format!("{}/v1", server.url()));
    config.api_key = Some(key.into());
    let provider = Provider::new(config).unwrap();
    let error = within(LIMIT, provider.stream(&hello(), CancellationToken::new()))
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind(), ErrorKind::Auth);
    assert!(!error.to_string().contains(key), "{error}");
    assert!(!format!("{error:?}").contains(key));
    assert!(!format!("{provider:?}").contains(key));
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
}

/// A turn with an image, reasoning, two calls (one with broken arguments), their
/// results and a follow-up: the request-shape tests of the OpenAI wires encode it.
pub(crate) fn conversation() -> ChatRequest {
    ChatRequest {
        model: "gpt-5".into(),
        system: vec!["You are cairn.".into(), "Project rules: be terse.".into()],
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
                    Content::Text {
                        text: "Reading.".into(),
                    },
                    Content::ToolCall {
                        id: "call_1".into(),
                        name: "read".into(),
                        input: json!({"path": "src/main.rs"}),
                    },
                    Content::ToolCall {
                        id: "call_2".into(),
                        name: "read".into(),
                        input: json!("{\"path\": broken"),
                    },
                ],
            },
            ChatMessage {
                role: ChatRole::User,
                content: vec![
                    Content::ToolResult {
                        call_id: "call_1".into(),
                        content: vec![Content::Text {
                            text: "fn main() {}".into(),
                        }],
                        is_error: false,
                    },
                    Content::ToolResult {
                        call_id: "call_2".into(),
                        content: vec![Content::Text {
                            text: "invalid arguments".into(),
                        }],
                        is_error: true,
                    },
                    Content::Text {
                        text: "Now explain.".into(),
                    },
                ],
            },
        ],
        tools: vec![ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }],
        max_output_tokens: 4096,
        temperature: Some(0.2),
        cache_key: Some("ses_1".into()),
    }
}

#[tokio::test]
async fn the_request_sent_has_the_exact_openai_shape() {
    let success = ScriptedResponse::sse()
        .chunk(finish_chunk("stop"))
        .chunk("data: [DONE]\n\n");
    let server = ScriptedServer::start([success]).await;
    let mut config = Endpoint::new("openai", Wire::OpenAi, format!("{}/v1/", server.url()));
    config.api_key = Some("sk-shape".into());
    config.sends_prompt_cache_key = true;
    config.uses_max_completion_tokens = true;
    config.headers = vec![("x-session-affinity".into(), "ses_1".into())];
    let provider = Provider::new(config).unwrap();
    let stream = within(
        LIMIT,
        provider.stream(&conversation(), CancellationToken::new()),
    )
    .await
    .unwrap();
    let (_, error) = within(LIMIT, collect_events(stream)).await;
    assert!(error.is_none());
    let request = &server.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("x-session-affinity"), Some("ses_1"));
    assert_eq!(
        request.json(),
        json!({
            "model": "gpt-5",
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_completion_tokens": 4096,
            "temperature": 0.2,
            "prompt_cache_key": "ses_1",
            "messages": [
                {"role": "system", "content": "You are cairn.\n\nProject rules: be terse."},
                {"role": "user", "content": [
                    {"type": "text", "text": "Read main.rs"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
                ]},
                {"role": "assistant", "content": "Reading.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"src/main.rs\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{\"path\": broken"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}"},
                {"role": "tool", "tool_call_id": "call_2", "content": "invalid arguments"},
                {"role": "user", "content": "Now explain."},
            ],
            "tools": [{"type": "function", "function": {
                "name": "read", "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            }}],
        })
    );
}

/// Claude behind an OpenAI-compatible gateway (OpenRouter) is cached only
/// where `cache_control` marks the parts: the system prompt and the last part
/// of the last two messages, as on the Anthropic wire; other models get none.
#[tokio::test]
async fn a_claude_model_behind_a_gateway_gets_cache_marks_and_reports_cache_use() {
    let usage = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [], "usage": {"prompt_tokens": 5000, "completion_tokens": 20,
        "prompt_tokens_details": {"cached_tokens": 3000, "cache_write_tokens": 1500}}});
    let answer = ScriptedResponse::sse()
        .chunk(finish_chunk("stop"))
        .chunk(format!("data: {usage}\n\ndata: [DONE]\n\n"));
    let server = ScriptedServer::start([answer]).await;
    let config = Endpoint::new("openrouter", Wire::OpenAi, format!("{}/v1", server.url()));
    let provider = Provider::new(config).unwrap();
    let mut request = conversation();
    request.model = "anthropic/claude-sonnet-4.5".into();
    let stream = within(LIMIT, provider.stream(&request, CancellationToken::new()))
        .await
        .unwrap();
    let (events, error) = within(LIMIT, collect_events(stream)).await;
    assert!(error.is_none(), "{error:?}");
    let mark = json!({"type": "ephemeral"});
    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": [
                {"type": "text", "text": "You are cairn.\n\nProject rules: be terse.", "cache_control": mark},
            ]},
            {"role": "user", "content": [
                {"type": "text", "text": "Read main.rs"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
            ]},
            {"role": "assistant", "content": "Reading.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"src/main.rs\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{\"path\": broken"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}"},
            {"role": "tool", "tool_call_id": "call_2", "content": [
                {"type": "text", "text": "invalid arguments", "cache_control": mark},
            ]},
            {"role": "user", "content": [
                {"type": "text", "text": "Now explain.", "cache_control": mark},
            ]},
        ])
    );
    let usage = events
        .iter()
        .find_map(|event| match event {
            StreamEvent::Finish { usage, .. } => Some(*usage),
            _ => None,
        })
        .expect("a finish event");
    assert_eq!(
        (usage.input, usage.cache_read, usage.cache_write),
        (500, 3000, 1500),
        "prompt_tokens holds the cache reads and writes"
    );
    // Any other model is sent without marks.
    let plain = provider.request_body(&conversation());
    assert!(!plain.to_string().contains("cache_control"), "{plain}");
}

#[test]
fn local_servers_get_max_tokens_and_no_cache_key() {
    let provider = Provider::new(Endpoint::new(
        "llamacpp",
        Wire::OpenAi,
        "http://127.0.0.1:8080/v1",
    ))
    .unwrap();
    let body = provider.request_body(&conversation());
    assert_eq!(body["max_tokens"], json!(4096));
    assert!(body.get("max_completion_tokens").is_none());
    assert!(body.get("prompt_cache_key").is_none());
}

#[tokio::test]
async fn probe_context_asks_llama_server_then_ollama_then_falls_back() {
    use cairn::provider::catalog::probe_context;
    let props = ScriptedResponse::json(
        200,
        r#"{"default_generation_settings":{"n_ctx":2048},"total_slots":1}"#,
    );
    let server = ScriptedServer::start_asked_what_it_is([props]).await;
    let probe = within(
        LIMIT,
        probe_context(&format!("{}/v1", server.url()), "smollm2", 8192),
    )
    .await;
    assert_eq!((probe.context, probe.warning), (2048, None));
    assert_eq!(server.requests()[0].path, "/props");

    let not_llama = ScriptedResponse::json(404, "404 page not found");
    let show = ScriptedResponse::json(
        200,
        r#"{"parameters":"num_ctx 16384","model_info":{"llama.context_length":131072}}"#,
    );
    let server = ScriptedServer::start_asked_what_it_is([not_llama, show]).await;
    let probe = within(
        LIMIT,
        probe_context(&format!("{}/v1/", server.url()), "qwen3:8b", 8192),
    )
    .await;
    assert_eq!(probe.context, 16384);
    let requests = server.requests();
    assert_eq!(
        (requests[1].method.as_str(), requests[1].path.as_str()),
        ("POST", "/api/show")
    );
    assert_eq!(requests[1].json(), json!({"model": "qwen3:8b"}));

    let server = ScriptedServer::start_asked_what_it_is([
        ScriptedResponse::json(404, ""),
        ScriptedResponse::json(404, ""),
    ])
    .await;
    let probe = within(LIMIT, probe_context(&server.url(), "x", 8192)).await;
    assert_eq!(probe.context, 8192);
    assert!(probe.warning.unwrap().contains("assuming 8192 tokens"));
}
