//! Hostile streams: random chunkings of valid streams, random garbage, huge
//! lines, endless and stalled bodies, invalid UTF-8, deep JSON, huge indexes,
//! broken tool arguments and unknown tools, fed to `SseDecoder`, to a real
//! `Provider` of each wire format over a local socket, and through the loop.
//! Every bad input must end in a classified `provider::Error`, never a panic
//! or a hang.

use crate::scenario;
use crate::support;

use std::time::Duration;

use cairn::message::{PartKind, ToolState};
use cairn::permission::Mode;
use cairn::provider::sse::{SseDecoder, SseError, SseEvent};
use cairn::provider::{
    ChatMessage, ChatRequest, ChatRole, Content, Endpoint, Error, ErrorKind, Provider, StreamEvent,
    Wire,
};
use proptest::prelude::*;
use serde_json::{Value, json};
use support::{ScriptedResponse, ScriptedServer, collect_events, within};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(20);

fn request() -> ChatRequest {
    ChatRequest {
        model: "test-model".into(),
        system: vec![],
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

fn provider(server: &ScriptedServer, wire: Wire) -> Provider {
    let base = match wire {
        Wire::OpenAi | Wire::Responses => format!("{}/v1", server.url()),
        Wire::Anthropic => server.url(),
    };
    let mut config = Endpoint::new("hostile", wire, base);
    config.stall_timeout = Duration::from_millis(400);
    Provider::new(config).expect("provider")
}

/// Streams `response` through a fresh provider; bounded by `LIMIT`.
async fn stream(wire: Wire, response: ScriptedResponse) -> (Vec<StreamEvent>, Option<Error>) {
    let server = ScriptedServer::start([response]).await;
    let provider = provider(&server, wire);
    within(LIMIT, async {
        match provider.stream(&request(), CancellationToken::new()).await {
            Ok(events) => collect_events(events).await,
            Err(error) => (Vec::new(), Some(error)),
        }
    })
    .await
}

fn openai_chunk(delta: Value, finish: Option<&str>) -> String {
    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

fn anthropic_event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn responses_event(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap_or_default()
    )
}

/// Every wire, for the hostile inputs that mean the same on each.
const WIRES: [Wire; 3] = [Wire::OpenAi, Wire::Anthropic, Wire::Responses];

/// Text "héllo wörld 世界" then a tool call with `arguments` (raw text).
fn valid_stream(wire: Wire, arguments: &str) -> String {
    match wire {
        Wire::OpenAi => [
            openai_chunk(json!({"role": "assistant", "content": "héllo "}), None),
            openai_chunk(json!({"content": "wörld 世界"}), None),
            openai_chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "read", "arguments": arguments}}]}),
                None,
            ),
            openai_chunk(json!({}), Some("tool_calls")),
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\n"
                .into(),
            "data: [DONE]\n\n".into(),
        ]
        .concat(),
        Wire::Anthropic => [
            anthropic_event(
                "message_start",
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 9, "output_tokens": 1}}}),
            ),
            anthropic_event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            anthropic_event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "héllo wörld 世界"}}),
            ),
            anthropic_event("ping", json!({"type": "ping"})),
            anthropic_event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            anthropic_event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "call_1", "name": "read", "input": {}}}),
            ),
            anthropic_event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": arguments}}),
            ),
            anthropic_event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 1}),
            ),
            anthropic_event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}),
            ),
            anthropic_event("message_stop", json!({"type": "message_stop"})),
        ]
        .concat(),
        Wire::Responses => [
            responses_event(
                json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": "héllo "}),
            ),
            responses_event(
                json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": "wörld 世界"}),
            ),
            responses_event(json!({"type": "response.output_item.added", "output_index": 1,
                "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "read", "arguments": ""}})),
            responses_event(json!({"type": "response.function_call_arguments.delta",
                "item_id": "fc_1", "delta": arguments})),
            responses_event(json!({"type": "response.output_item.done", "output_index": 1,
                "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "read", "arguments": arguments}})),
            responses_event(json!({"type": "response.completed",
                "response": {"status": "completed", "usage": {"input_tokens": 9, "output_tokens": 3}}})),
        ]
        .concat(),
    }
}

fn split_at_cuts(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([bytes.len()]) {
        pieces.push(bytes[start..cut].to_vec());
        start = cut;
    }
    pieces
}

fn decode_pieces(pieces: &[Vec<u8>], limit: usize) -> Result<Vec<SseEvent>, SseError> {
    let mut decoder = SseDecoder::with_limit(limit);
    let mut out = Vec::new();
    for piece in pieces {
        decoder.feed(piece, &mut out)?;
    }
    decoder.finish(&mut out)?;
    Ok(out)
}

fn wire_strategy() -> impl Strategy<Value = Wire> {
    prop_oneof![
        Just(Wire::OpenAi),
        Just(Wire::Anthropic),
        Just(Wire::Responses)
    ]
}

/// Bytes that look like SSE often enough to reach the JSON decoders.
fn hostile_bytes() -> impl Strategy<Value = Vec<u8>> {
    let fragment = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"event: content_block_delta\n".to_vec()),
        Just(b"event: error\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"{\"choices\":[{\"delta\":{\"content\":\"x\"".to_vec()),
        Just(b"{\"type\":\"content_block_start\",\"index\":0,".to_vec()),
        Just(b"{\"error\":{\"message\":\"boom\"}}".to_vec()),
        Just(b"}]}".to_vec()),
        Just(vec![0xff, 0xfe, 0xc3]),
        proptest::collection::vec(any::<u8>(), 0..40),
    ];
    proptest::collection::vec(fragment, 0..40).prop_map(|pieces| pieces.concat())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn assert_classified(error: &Error) {
    assert!(
        !matches!(
            error.kind(),
            ErrorKind::Cancelled | ErrorKind::Config | ErrorKind::Stalled
        ),
        "a bad stream from a live server is {:?}: {error}",
        error.kind()
    );
    assert!(
        error.to_string().len() < 4096,
        "the message stays short: {} bytes",
        error.to_string().len()
    );
}

/// The case count: `PROPTEST_CASES` when set (a long run on demand, e.g.
/// `PROPTEST_CASES=20000 cargo test --release --test it hardening_streams`),
/// else the quick default CI can afford.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(64), ..ProptestConfig::default() })]

    #[test]
    fn sse_decoder_gives_the_same_events_for_any_chunking(
        wire in wire_strategy(),
        cuts in proptest::collection::vec(any::<usize>(), 0..30),
    ) {
        let bytes = valid_stream(wire, r#"{"file_path":"a"}"#).into_bytes();
        let whole = decode_pieces(std::slice::from_ref(&bytes), 1 << 20).expect("valid");
        let pieces = split_at_cuts(&bytes, &cuts);
        prop_assert_eq!(decode_pieces(&pieces, 1 << 20).expect("valid"), whole);
    }

    #[test]
    fn sse_decoder_survives_garbage_and_bounds_every_event(
        bytes in hostile_bytes(),
        cuts in proptest::collection::vec(any::<usize>(), 0..30),
    ) {
        let limit = 64;
        match decode_pieces(&split_at_cuts(&bytes, &cuts), limit) {
            Ok(events) => {
                for event in events {
                    prop_assert!(event.data.len() <= limit, "{} bytes", event.data.len());
                }
            }
            Err(SseError::TooLarge { limit: reported }) => prop_assert_eq!(reported, limit),
            Err(SseError::InvalidUtf8 { .. }) => {}
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(24), ..ProptestConfig::default() })]

    #[test]
    fn provider_decodes_any_chunking_of_a_valid_stream(
        wire in wire_strategy(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let bytes = valid_stream(wire, r#"{"file_path":"a"}"#).into_bytes();
        let response = ScriptedResponse::sse().chunks(split_at_cuts(&bytes, &cuts));
        let (events, error) = runtime().block_on(stream(wire, response));
        prop_assert!(error.is_none(), "{:?}", error);
        prop_assert_eq!(support::text_of(&events), "héllo wörld 世界");
        let input = events.iter().find_map(|event| match event {
            StreamEvent::ToolCallEnd { input, .. } => Some(input.clone()),
            _ => None,
        });
        prop_assert_eq!(input, Some(json!({"file_path": "a"})));
        let finished = matches!(events.last(), Some(StreamEvent::Finish { .. }));
        prop_assert!(finished, "the last event is Finish");
    }

    #[test]
    fn provider_ends_garbage_with_a_classified_error(
        wire in wire_strategy(),
        bytes in hostile_bytes(),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let response = ScriptedResponse::sse().chunks(split_at_cuts(&bytes, &cuts));
        let (events, error) = runtime().block_on(stream(wire, response));
        let finished = matches!(events.last(), Some(StreamEvent::Finish { .. }));
        match error {
            Some(error) => assert_classified(&error),
            None => prop_assert!(finished, "the stream ended without Finish or error: {:?}", events),
        }
    }
}

fn expect_error(outcome: (Vec<StreamEvent>, Option<Error>), kind: ErrorKind) -> Error {
    let (events, error) = outcome;
    let error = error.unwrap_or_else(|| panic!("expected {kind:?}, got events {events:?}"));
    assert_eq!(error.kind(), kind, "{error}");
    assert!(error.to_string().len() < 4096, "a short message: {error}");
    error
}

#[tokio::test]
async fn a_line_over_the_event_cap_is_malformed() {
    let cap = cairn::provider::sse::MAX_EVENT_BYTES;
    let mut line = b"data: ".to_vec();
    line.resize(cap + 1024, b'a');
    for wire in WIRES {
        let response = ScriptedResponse::sse().chunked_every(&line, 1 << 20);
        let error = expect_error(stream(wire, response).await, ErrorKind::Malformed);
        assert!(error.to_string().contains("larger than"), "{error}");
    }
}

#[tokio::test]
async fn a_large_unreadable_event_is_quoted_short() {
    let blob = "x".repeat(1 << 20);
    for (wire, body) in [
        (Wire::OpenAi, format!("data: {{\"choices\": \"{blob}\n\n")),
        (
            Wire::Anthropic,
            format!("event: content_block_delta\ndata: {{\"index\": \"{blob}\"}}\n\n"),
        ),
        (
            Wire::Responses,
            format!("event: response.output_text.delta\ndata: {{\"delta\": \"{blob}\n\n"),
        ),
    ] {
        let response = ScriptedResponse::sse().chunked_every(body, 64 * 1024);
        let error = expect_error(stream(wire, response).await, ErrorKind::Malformed);
        assert!(error.to_string().contains("bytes)"), "{error}");
    }
}

#[tokio::test]
async fn a_stream_that_never_finishes_stalls_out() {
    for wire in WIRES {
        let valid = valid_stream(wire, "{}");
        // Everything but the end marker, then silence with the socket open.
        let cut = valid
            .rfind(match wire {
                Wire::OpenAi => "data: {\"choices\":[]",
                Wire::Anthropic => "event: message_delta",
                Wire::Responses => "event: response.completed",
            })
            .expect("marker");
        let response = ScriptedResponse::sse().chunk(&valid[..cut]).then_stall();
        let started = std::time::Instant::now();
        let (events, error) = stream(wire, response).await;
        assert!(!support::text_of(&events).is_empty(), "text came first");
        assert_eq!(error.as_ref().map(Error::kind), Some(ErrorKind::Stalled));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

#[tokio::test]
async fn an_endless_valid_stream_hits_the_response_cap() {
    let server = ScriptedServer::start([]).await;
    let piece = openai_chunk(json!({"content": "more and more text "}), None);
    // 4 MiB of valid text events against a 1 MiB cap, never finishing.
    let response = ScriptedResponse::sse()
        .chunks(std::iter::repeat_n(
            piece.repeat(100),
            4 * 1024 * 1024 / (piece.len() * 100),
        ))
        .then_stall();
    server.push(response);
    let mut config = Endpoint::new("hostile", Wire::OpenAi, format!("{}/v1", server.url()));
    config.max_response_bytes = 1024 * 1024;
    let provider = Provider::new(config).expect("provider");
    let (events, error) = within(LIMIT, async {
        let events = provider
            .stream(&request(), CancellationToken::new())
            .await
            .expect("stream starts");
        collect_events(events).await
    })
    .await;
    let error = error.expect("the cap ends the stream");
    assert_eq!(error.kind(), ErrorKind::Malformed, "{error}");
    assert!(error.to_string().contains("1 MiB"), "{error}");
    let text = support::text_of(&events);
    assert!(
        text.len() > 100_000 && text.len() < 1024 * 1024,
        "{}",
        text.len()
    );
}

#[tokio::test]
async fn keep_alive_comments_forever_stall_out() {
    for wire in WIRES {
        let mut response = ScriptedResponse::sse();
        for _ in 0..100 {
            response = response
                .chunk(": keep-alive\n\n")
                .delay(Duration::from_millis(50));
        }
        let started = std::time::Instant::now();
        let error = expect_error(
            stream(wire, response.then_stall()).await,
            ErrorKind::Stalled,
        );
        // The stall timeout is 400 ms; the comments alone would last 5 s.
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}: {error}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_body_that_closes_without_finish_is_a_network_error() {
    for wire in WIRES {
        let valid = valid_stream(wire, "{}");
        let response = ScriptedResponse::sse().chunk(&valid[..valid.len() / 2]);
        expect_error(stream(wire, response).await, ErrorKind::Network);
    }
}

#[tokio::test]
async fn invalid_utf8_is_malformed() {
    for wire in WIRES {
        let mut body = b"data: {\"choices\":[{\"delta\":{\"content\":\"".to_vec();
        body.extend_from_slice(&[0xc3, 0x28, 0xff]);
        body.extend_from_slice(b"\"}}]}\n\n");
        let response = ScriptedResponse::sse().chunk(body);
        expect_error(stream(wire, response).await, ErrorKind::Malformed);
    }
}

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[tokio::test]
async fn json_nested_ten_thousand_deep_is_malformed_not_a_stack_overflow() {
    let deep = nested(10_000);
    for (wire, body) in [
        (Wire::OpenAi, format!("data: {deep}\n\n")),
        (Wire::Anthropic, format!("event: error\ndata: {deep}\n\n")),
        (Wire::Anthropic, format!("data: {deep}\n\n")),
        (Wire::Responses, format!("event: error\ndata: {deep}\n\n")),
    ] {
        let response = ScriptedResponse::sse().chunk(body);
        expect_error(stream(wire, response).await, ErrorKind::Malformed);
    }
}

#[tokio::test]
async fn deep_or_broken_tool_arguments_arrive_as_a_string_input() {
    for arguments in [nested(10_000), "{\"file_path\": \"a\"".to_owned()] {
        for wire in WIRES {
            let response = ScriptedResponse::sse().chunk(valid_stream(wire, &arguments));
            let (events, error) = stream(wire, response).await;
            assert!(error.is_none(), "{error:?}");
            let input = events.iter().find_map(|event| match event {
                StreamEvent::ToolCallEnd { input, .. } => Some(input.clone()),
                _ => None,
            });
            assert_eq!(input, Some(Value::String(arguments.clone())), "{wire:?}");
        }
    }
}

#[tokio::test]
async fn a_huge_block_or_call_index_is_malformed_not_an_allocation() {
    let openai = openai_chunk(
        json!({"tool_calls": [{"index": 1_000_000_000_000u64, "id": "c", "type": "function",
            "function": {"name": "read", "arguments": "{}"}}]}),
        None,
    );
    let anthropic = anthropic_event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 1_000_000_000_000u64,
            "content_block": {"type": "text", "text": ""}}),
    );
    for (wire, body) in [(Wire::OpenAi, openai), (Wire::Anthropic, anthropic)] {
        let response = ScriptedResponse::sse().chunk(body);
        let error = expect_error(stream(wire, response).await, ErrorKind::Malformed);
        assert!(error.to_string().contains("index"), "{error}");
    }
}

fn tool_error_text(history: &[cairn::message::MessageWithParts]) -> Vec<String> {
    history
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match &p.kind {
            PartKind::Tool(tool) => match &tool.state {
                ToolState::Error { error, .. } => Some(error.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The `tool` message the model got back for `call_id` in the second request.
fn tool_result_sent(scenario: &scenario::Scenario, call_id: &str) -> String {
    let requests = scenario.requests();
    assert_eq!(requests.len(), 2, "the call, then the answer to its result");
    requests[1]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .expect("a result for the call")
        .to_owned()
}

#[tokio::test]
async fn arguments_that_are_not_json_get_an_invalid_arguments_result() {
    let response = ScriptedResponse::sse()
        .chunk(openai_chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_bad", "type": "function",
                "function": {"name": "read", "arguments": "{file_path: nope"}}]}),
            None,
        ))
        .chunk(openai_chunk(json!({}), Some("tool_calls")))
        .chunk("data: [DONE]\n\n");
    let scenario =
        scenario::Scenario::start(vec![response, scenario::text("Sorry, fixed.", 100)]).await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let (code, _, err) = scenario.run(&handle, "read it").await;
    assert_eq!(code, 0, "{err}");
    let errors = tool_error_text(&scenario.history(&session.id).await);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("invalid arguments"), "{}", errors[0]);
    let sent = tool_result_sent(&scenario, "call_bad");
    assert!(sent.contains("invalid arguments"), "{sent}");
}

#[tokio::test]
async fn an_unknown_tool_gets_an_error_naming_the_real_tools() {
    let scenario = scenario::Scenario::start(vec![
        scenario::tool_call("call_x", "teleport", json!({"to": "mars"}), 100),
        scenario::text("I will use a real tool.", 120),
    ])
    .await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let (code, _, err) = scenario.run(&handle, "go").await;
    assert_eq!(code, 0, "{err}");
    let errors = tool_error_text(&scenario.history(&session.id).await);
    assert_eq!(errors.len(), 1, "{errors:?}");
    for expected in ["teleport", "bash", "read", "edit"] {
        assert!(errors[0].contains(expected), "{expected}: {}", errors[0]);
    }
    let sent = tool_result_sent(&scenario, "call_x");
    assert!(sent.contains("bash"), "{sent}");
}
